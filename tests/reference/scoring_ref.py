"""Slow, obviously-correct pure-Python scoring formulas, written straight from the sources.

One function per formula, plain loops and the ``math`` module, no numpy. The native kernels
must agree with these bit for bit where the source fixes the order of operations.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence

NULL_TIME = -(2**63)
WEEK_SECONDS = 604800.0


def score_fact(
    confidence: float,
    source: int,
    status: int,
    last_accessed: int | None,
    access_count: int,
    now: int,
    *,
    source_weights: Sequence[float] = (2.0, 1.5, 1.2, 1.0),
    default_source_weight: float = 1.0,
    status_weights: Sequence[float] = (1.0, 1.2, 1.0, 1.0),
    default_status_weight: float = 1.0,
    decay_base: float = 0.95,
    grace_weeks: float = 1.0,
    usage_log_factor: float = 0.5,
) -> float:
    """Seed 000 ``scoreFact`` (times in seconds instead of milliseconds).

    ``confidence`` must already be the float32 value widened to a Python float.
    """
    conf = float(confidence)
    sw = source_weights[source] if source < len(source_weights) else default_source_weight
    if last_accessed is None or last_accessed == NULL_TIME:
        decay = 1.0  # age unknown: no decay
    else:
        age_weeks = (now - last_accessed) / WEEK_SECONDS
        decay = decay_base ** (age_weeks - grace_weeks) if age_weeks > grace_weeks else 1.0
    stw = status_weights[status] if status < len(status_weights) else default_status_weight
    return conf * sw * decay * (1 + math.log10(access_count + 1) * usage_log_factor) * stw


def indirect_boost(indirect: float, distance: int, strength: float) -> float:
    """Seed 001: ``entity_boost_indirect * distance_penalty * strength_weight``."""
    distance_penalty = 1.0 / distance
    return indirect * distance_penalty * strength


def compute_graph_score(relationship_weight: float, hop_distance: int, mention_count: int) -> float:
    """Seed 003 ``computeGraphScore``, literally."""
    hop_decay = 1 / math.pow(2, hop_distance - 1)
    normalized_weight = relationship_weight / 10
    mention_boost = min(math.log2(mention_count + 1) / 5, 1)
    return normalized_weight * hop_decay * (0.7 + 0.3 * mention_boost)


def graph_proximity(
    weight: float,
    hop: int,
    mention_count: int,
    *,
    weight_scale: float = 10.0,
    hop_base: float = 2.0,
    mention_floor: float = 0.7,
    mention_log_divisor: float = 5.0,
) -> float:
    """Seed 003 with its constants as parameters (mention part ``floor + (1 - floor) * b``)."""
    hop_decay = 1 / hop_base ** (hop - 1)
    normalized_weight = weight / weight_scale
    mention_boost = min(math.log2(mention_count + 1) / mention_log_divisor, 1)
    return normalized_weight * hop_decay * (mention_floor + (1 - mention_floor) * mention_boost)


def composite_score(entity_match_score: float, hop_distance: int, confidence: float) -> float:
    """Seed 004 ``GraphFact.composite_score()``."""
    return entity_match_score * (1.0 / (1 + hop_distance)) * confidence


def rerank_memories(
    created_at: Sequence[int | None],
    now: int,
    confidence: Sequence[float | None] | None = None,
    access_score: Sequence[float] | None = None,
    *,
    w_similarity: float = 0.5,
    w_recency: float = 0.3,
    w_confidence: float = 0.15,
    w_access: float = 0.05,
    recency_base: float = 0.95,
    day_seconds: int = 86400,
) -> tuple[list[float], list[int]]:
    """Seed 002 ``rerank_memories``: the scores in input order and the ranked positions."""
    scored = []
    for i, created in enumerate(created_at):
        similarity_score = 1.0 / (i + 1)
        if created is None or created == NULL_TIME:
            recency_score = 1.0  # age unknown
        else:
            if day_seconds == 86400:
                days_old = datetime.timedelta(seconds=now - created).days
            else:
                days_old = (now - created) // day_seconds
            recency_score = recency_base**days_old
        conf = confidence[i] if confidence is not None else None
        confidence_score = 1.0 if conf is None else conf
        access = 1.0 if access_score is None else access_score[i]
        final_score = (
            w_similarity * similarity_score
            + w_recency * recency_score
            + w_confidence * confidence_score
            + w_access * access
        )
        scored.append((i, final_score))
    ranked = sorted(scored, key=lambda x: x[1], reverse=True)
    return [s for _, s in scored], [i for i, _ in ranked]
