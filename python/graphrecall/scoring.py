"""The scoring formulas of the five source designs, vectorised in the native core.

=====  ===================================================================  ======================
seed   formula                                                              here
=====  ===================================================================  ======================
000    ``confidence * sourceWeight * decay * usageBoost * statusWeight``    :func:`score_facts`
001    ``indirect * (1 / distance) * strength``                             :func:`indirect_boost`
002    ``0.5 sim + 0.3 recency + 0.15 confidence + 0.05 access``            :func:`rerank_memories`
003    ``weight / 10 * 1 / 2**(hop - 1) * (0.7 + 0.3 * mentionBoost)``     :func:`graph_proximity`
004    ``match * (1 / (1 + hop)) * confidence``                             :func:`composite_scores`
=====  ===================================================================  ======================

Each source's constants live in a frozen profile dataclass whose defaults are the source's
values. Times are integer seconds (``int64``; numpy ``datetime64`` arrays are converted) and
``now`` is always an argument. A null time (``None``, ``NaT`` or :data:`NULL_TIME`) means "age
unknown" and never decays. Every formula is evaluated in the order the source writes it, so
the results equal the straightforward Python of the source bit for bit; the one exception is
seed 003's mention part, computed as ``floor + (1 - floor) * boost`` so that one constant
sets both terms (``1 - 0.7`` differs from ``0.3`` in the last bit).

Example:
    >>> from graphrecall import scoring
    >>> round(scoring.score_fact(0.5, "user_edit", "confirmed", None, 9, now=0), 12)
    1.8
"""

from __future__ import annotations

import datetime as _dt
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from . import _core
from .arrays import (
    as_float_array,
    as_int_array,
    as_offsets,
    as_sequence,
    broadcast,
    code_column,
    column_length,
    offsets_of,
    optional_float_column,
    query_bounds,
    time_column,
    time_seconds,
)
from .errors import DataError, ParameterError
from .results import BatchForm
from .tables.constants import NULL_TIME, SOURCES, STATUSES

__all__ = [
    "NULL_TIME",
    "SOURCES",
    "STATUSES",
    "FactScoreProfile",
    "GraphProximityProfile",
    "MentionBoostProfile",
    "RerankProfile",
    "Reranked",
    "composite_scores",
    "graph_proximity",
    "indirect_boost",
    "rerank_memories",
    "rerank_memories_batch",
    "score_fact",
    "score_facts",
]


_Array: TypeAlias = npt.NDArray[Any]
TimeLike: TypeAlias = "int | np.integer[Any] | np.datetime64 | _dt.datetime"
#: A column of times: an int64 / datetime64 array or a sequence of times and ``None``.
TimesLike: TypeAlias = "npt.ArrayLike | Sequence[TimeLike | None]"
#: A column of codes: integers or names, e.g. ``["user_edit", 1]``.
CodesLike: TypeAlias = "npt.ArrayLike | Sequence[int | str]"
#: A column of floats where ``None`` takes the default.
OptionalFloatsLike: TypeAlias = "npt.ArrayLike | Sequence[float | None]"


# ------------------------------------------------------------------------------------------
# Profiles.


@dataclass(frozen=True)
class FactScoreProfile:
    """Constants of seed 000's ``scoreFact``; the defaults are the source's.

    Attributes:
        source_weights: By source code (user_edit, file, system, conversation).
        default_source_weight: For a source code past the end of ``source_weights``.
        status_weights: By status code (staged, confirmed, rejected, archived).
        default_status_weight: For a status code past the end of ``status_weights``.
        decay_base: Decay per week after the grace period, in (0, 1].
        grace_weeks: Weeks without decay.
        usage_log_factor: ``usageBoost = 1 + log10(accessCount + 1) * usage_log_factor``.
    """

    source_weights: tuple[float, ...] = (2.0, 1.5, 1.2, 1.0)
    default_source_weight: float = 1.0
    status_weights: tuple[float, ...] = (1.0, 1.2, 1.0, 1.0)
    default_status_weight: float = 1.0
    decay_base: float = 0.95
    grace_weeks: float = 1.0
    usage_log_factor: float = 0.5

    @classmethod
    def for_words(
        cls,
        statuses: Sequence[str],
        sources: Sequence[str],
        *,
        status_weights: Mapping[str, float] | None = None,
        source_weights: Mapping[str, float] | None = None,
        **constants: float,
    ) -> FactScoreProfile:
        """A profile whose weights follow a graph's vocabularies (``graph.statuses``,
        ``graph.sources``), given by word: what ``status_weights`` / ``source_weights`` say,
        else the design's weight for the word (``confirmed`` 1.2, ``user_edit`` 2.0, ...),
        else the neutral default (1.0). A weight for a word the vocabulary lacks (a typo)
        is a ``ParameterError``."""
        base = cls(**constants)  # type: ignore[arg-type]
        statuses = tuple(getattr(statuses, "names", statuses))  # a graph's Vocab or words
        sources = tuple(getattr(sources, "names", sources))

        def weights(
            words: Sequence[str],
            given: Mapping[str, float] | None,
            design: Mapping[str, float],
            neutral: float,
            what: str,
        ) -> tuple[float, ...]:
            given = dict(given or {})
            unknown = sorted(set(given) - set(words))
            if unknown:
                raise ParameterError(
                    f"invalid parameter {what}_weights: {unknown!r} not in the {what} "
                    f"vocabulary {list(words)!r}",
                    parameter=f"{what}_weights",
                    input=unknown,
                )
            return tuple(float(given.get(w, design.get(w, neutral))) for w in words)

        design_status = dict(zip(STATUSES, cls.status_weights, strict=True))
        design_source = dict(zip(SOURCES, cls.source_weights, strict=True))
        return replace(
            base,
            status_weights=weights(
                statuses, status_weights, design_status, base.default_status_weight, "status"
            ),
            source_weights=weights(
                sources, source_weights, design_source, base.default_source_weight, "source"
            ),
        )


@dataclass(frozen=True)
class MentionBoostProfile:
    """Constants of seed 001's relevance boosts; the defaults are the source's.

    Attributes:
        direct: ``entity_boost_direct``, added per mentioned query entity.
        indirect: ``entity_boost_indirect``, per mentioned related entity before distance and
            strength weighting.
        use_strength: ``use_relationship_strength``; when false strength counts as 1.0.
    """

    direct: float = 0.3
    indirect: float = 0.1
    use_strength: bool = True


@dataclass(frozen=True)
class GraphProximityProfile:
    """Constants of seed 003's ``computeGraphScore``; the defaults are the source's.

    Attributes:
        weight_scale: Relationship weights (1..10 in the source) are divided by this.
        hop_base: Hop decay ``1 / hop_base ** (hop - 1)``.
        mention_floor: Mention part ``floor + (1 - floor) * mentionBoost``, in [0, 1].
        mention_log_divisor: ``mentionBoost = min(log2(mentionCount + 1) / divisor, 1)``.
    """

    weight_scale: float = 10.0
    hop_base: float = 2.0
    mention_floor: float = 0.7
    mention_log_divisor: float = 5.0


@dataclass(frozen=True)
class RerankProfile:
    """Constants of seed 002's ``rerank_memories``; the defaults are the source's.

    Attributes:
        w_similarity: Weight of the rank similarity ``1 / (position + 1)``.
        w_recency: Weight of ``recency_base ** days_old``.
        w_confidence: Weight of the memory's confidence.
        w_access: Weight of the access score.
        recency_base: Decay per day.
        day_seconds: Length of a day in seconds.
    """

    w_similarity: float = 0.5
    w_recency: float = 0.3
    w_confidence: float = 0.15
    w_access: float = 0.05
    recency_base: float = 0.95
    day_seconds: int = 86_400


# ------------------------------------------------------------------------------------------
# Seed 000.


def score_facts(
    confidence: npt.ArrayLike,
    source: CodesLike,
    status: CodesLike,
    last_accessed: TimesLike | None,
    access_count: npt.ArrayLike,
    *,
    now: TimeLike,
    profile: FactScoreProfile | None = None,
) -> npt.NDArray[np.float64]:
    """Seed 000's ``scoreFact`` over columns of facts.

    ``ageWeeks = (now - last_accessed) / 604800``; ``decay = 0.95 ** (ageWeeks - 1)`` past the
    one-week grace period (1.0 before it and for a null time); ``usageBoost = 1 +
    log10(access_count + 1) * 0.5``; the score is ``confidence * sourceWeight * decay *
    usageBoost * statusWeight``, left to right in float64 (confidence is float32, as stored).
    A scalar in any column is repeated for every fact.

    Args:
        confidence: Fact confidences, converted to float32.
        source: Source codes (0..3) or names (``"user_edit"``, ``"file"``, ``"system"``,
            ``"conversation"``); other codes take ``default_source_weight``.
        status: Status codes (0..3) or names (``"staged"``, ``"confirmed"``, ``"rejected"``,
            ``"archived"``); other codes take ``default_status_weight``.
        last_accessed: Last access times in seconds (``None`` entries, ``NaT`` or
            :data:`NULL_TIME` for unknown), or ``None`` when no time is known.
        access_count: Access counts, ``0 <= n < 2**32``.
        now: The current time in seconds.
        profile: Constants; the source's by default.

    Returns:
        float64 scores, shape ``(n_facts,)``.

    Raises:
        DataError: Columns of different lengths, NaN confidence, unknown names, negative or
            fractional counts.
        ParameterError: A bad profile (negative weights, ``decay_base`` outside (0, 1], ...).
    """
    p = profile or FactScoreProfile()
    n = column_length(confidence, source, status, last_accessed, access_count)
    return _core.score_fact_arrays(
        as_float_array(broadcast(confidence, n), np.float32, "confidence"),
        code_column(source, SOURCES, "source", n),
        code_column(status, STATUSES, "status", n),
        time_column(last_accessed, "last_accessed", n),
        as_int_array(broadcast(access_count, n), np.uint32, "access_count"),
        time_seconds(now),
        source_weights=[float(w) for w in p.source_weights],
        default_source_weight=float(p.default_source_weight),
        status_weights=[float(w) for w in p.status_weights],
        default_status_weight=float(p.default_status_weight),
        decay_base=float(p.decay_base),
        grace_weeks=float(p.grace_weeks),
        usage_log_factor=float(p.usage_log_factor),
    )


def score_fact(
    confidence: float,
    source: int | str,
    status: int | str,
    last_accessed: TimeLike | None,
    access_count: int,
    *,
    now: TimeLike,
    profile: FactScoreProfile | None = None,
) -> float:
    """:func:`score_facts` for one fact.

    Returns:
        The score as a Python float.

    Raises:
        DataError: NaN confidence, an unknown name, a negative count.
        ParameterError: A bad profile.
    """
    times = None if last_accessed is None else [last_accessed]
    return float(
        score_facts(
            [confidence], [source], [status], times, [access_count], now=now, profile=profile
        )[0]
    )


# ------------------------------------------------------------------------------------------
# Seed 001.


def indirect_boost(
    distance: int, strength: float, *, profile: MentionBoostProfile | None = None
) -> float:
    """Seed 001's boost for one mention of a related entity ``distance`` hops away.

    ``indirect * (1.0 / distance) * strength`` (strength taken as 1.0 when the profile's
    ``use_strength`` is false). Example from the source: distance 2, strength 0.9 gives
    ``0.1 * (1/2) * 0.9 = 0.045``.

    Args:
        distance: Hops from the query entity, ``>= 1``.
        strength: Relationship strength (0..1 in the source).
        profile: Constants; the source's by default.

    Returns:
        The boost.

    Raises:
        ParameterError: ``distance < 1`` or a non-finite strength.
    """
    p = profile or MentionBoostProfile()
    hops = operator.index(distance)
    if hops < 1:
        raise ParameterError(f"invalid parameter distance: distance = {hops} must be >= 1")
    value = float(strength) if p.use_strength else 1.0
    if not np.isfinite(value):
        raise ParameterError(f"invalid parameter strength: strength = {value} is not finite")
    return float(p.indirect) * (1.0 / hops) * value


# ------------------------------------------------------------------------------------------
# Seed 003.


def graph_proximity(
    weight: npt.ArrayLike,
    hop: npt.ArrayLike,
    mention_count: npt.ArrayLike,
    *,
    profile: GraphProximityProfile | None = None,
) -> npt.NDArray[np.float64]:
    """Seed 003's ``computeGraphScore`` over graph-sourced chunks.

    ``weight / 10 * (1 / 2 ** (hop - 1)) * (0.7 + 0.3 * min(log2(mention_count + 1) / 5, 1))``
    (the mention part is ``floor + (1 - floor) * boost``). A scalar column is repeated.

    Args:
        weight: Relationship weights (1..10 in the source), float64.
        hop: Hop distances, ``>= 1``.
        mention_count: Entity mention counts.
        profile: Constants; the source's by default.

    Returns:
        float64 scores, shape ``(n,)``.

    Raises:
        DataError: Columns of different lengths, a non-finite weight, a hop of 0.
        ParameterError: A bad profile.
    """
    p = profile or GraphProximityProfile()
    n = column_length(weight, hop, mention_count)
    return _core.graph_proximity_score(
        as_float_array(broadcast(weight, n), np.float64, "weight"),
        as_int_array(broadcast(hop, n), np.uint32, "hop"),
        as_int_array(broadcast(mention_count, n), np.uint32, "mention_count"),
        weight_scale=float(p.weight_scale),
        hop_base=float(p.hop_base),
        mention_floor=float(p.mention_floor),
        mention_log_divisor=float(p.mention_log_divisor),
    )


# ------------------------------------------------------------------------------------------
# Seed 004.


def composite_scores(
    match_score: npt.ArrayLike, hop: npt.ArrayLike, confidence: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """Seed 004's ``GraphFact.composite_score()``: ``match * (1.0 / (1 + hop)) * confidence``.

    Args:
        match_score: Entity match scores, float64.
        hop: Hop distances (0 for facts of the matched entity itself).
        confidence: Fact confidences, float64.

    Returns:
        float64 scores, shape ``(n,)``.

    Raises:
        DataError: Columns of different lengths, a non-finite score or confidence.
    """
    n = column_length(match_score, hop, confidence)
    return _core.composite_score(
        as_float_array(broadcast(match_score, n), np.float64, "match_score"),
        as_int_array(broadcast(hop, n), np.uint32, "hop"),
        as_float_array(broadcast(confidence, n), np.float64, "confidence"),
    )


# ------------------------------------------------------------------------------------------
# Seed 002.


@dataclass(frozen=True, eq=False)
class Reranked(BatchForm):
    """Result of :func:`rerank_memories`, of the result family (:mod:`graphrecall.results`).

    Attributes:
        scores: float64 final scores in input order, shape ``(n_memories,)``.
        order: uintp row indices; ``order[offsets[q]:offsets[q + 1]]`` are query ``q``'s rows
            (indices into ``scores``, which holds every query's memories) sorted by score
            descending, equal scores kept in input (vector-rank) order.
        offsets: int64, shape ``(n_queries + 1,)``: query ``q``'s memories are
            ``scores[offsets[q]:offsets[q + 1]]``.
    """

    scores: npt.NDArray[np.float64]
    order: npt.NDArray[np.uintp]
    offsets: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", as_offsets(self.offsets))

    def __len__(self) -> int:
        """Number of queries."""
        return int(self.offsets.shape[0]) - 1

    def __getitem__(self, query: int) -> Reranked:
        """One query as a batch of one (its rows numbered from 0, as its ``scores``)."""
        a, b = query_bounds(self.offsets, query)
        local = (self.order[a:b] - np.uintp(a)).astype(np.uintp)
        return Reranked(self.scores[a:b], local, np.array([0, b - a], dtype=np.int64))

    def __iter__(self) -> Iterator[Reranked]:
        return (self[q] for q in range(len(self)))

    def to_list(self) -> list[list[tuple[int, float]]]:
        """Per query, ``(row, score)`` in ranked order, rows numbered within the query."""
        return [
            list(zip(one.order.tolist(), one.ranked_scores.tolist(), strict=True)) for one in self
        ]

    def _records(self, q: int) -> list[dict[str, Any]]:
        (pairs,) = self[q].to_list()
        return [{"query": q, "rank": r, "row": row, "score": s} for r, (row, s) in enumerate(pairs)]

    @property
    def ranked_scores(self) -> npt.NDArray[np.float64]:
        """Scores in ranked order (``scores[order]``)."""
        return self.scores[self.order]


def rerank_memories(
    created_at: TimesLike,
    *,
    now: TimeLike,
    confidence: OptionalFloatsLike | None = None,
    access_score: npt.ArrayLike | None = None,
    profile: RerankProfile | None = None,
) -> Reranked:
    """Seed 002's ``rerank_memories`` for one query's memories, given in vector-rank order.

    For the memory at position ``i``: ``similarity = 1.0 / (i + 1)``; ``days_old`` is the age
    floored to whole days (Python's ``timedelta.days``: a future time gives a negative age and
    a recency above 1); ``recency = 0.95 ** days_old`` (1.0 for a null time); the final score
    is ``0.5 * similarity + 0.3 * recency + 0.15 * confidence + 0.05 * access_score``, summed
    left to right. Memories are then ordered by score descending, ties kept in input order.

    Args:
        created_at: Creation times in seconds (``None`` / ``NaT`` / :data:`NULL_TIME` for
            unknown), one per memory.
        now: The current time in seconds.
        confidence: Per memory; ``None`` (or a ``None`` entry) means 1.0, the source's
            ``getattr(memory, 'confidence', 1.0)``.
        access_score: Per memory; ``None`` means 1.0, the source's constant.
        profile: Constants; the source's by default.

    Returns:
        A batch of one query.

    Raises:
        DataError: Columns of different lengths, a NaN confidence or access score.
        ParameterError: A bad profile.
    """
    return _rerank([created_at], [confidence], [access_score], now, profile, single=True)


def rerank_memories_batch(
    created_at: Sequence[TimesLike],
    *,
    now: TimeLike,
    confidence: Sequence[OptionalFloatsLike | None] | None = None,
    access_score: Sequence[npt.ArrayLike | None] | None = None,
    profile: RerankProfile | None = None,
) -> Reranked:
    """:func:`rerank_memories` for a batch of queries in one native call.

    Args:
        created_at: Per query, its memories' creation times (in vector-rank order).
        now: The current time in seconds.
        confidence: Per query, confidences or ``None``; ``None`` altogether means 1.0.
        access_score: Per query, access scores or ``None``; ``None`` altogether means 1.0.
        profile: Constants; the source's by default.

    Returns:
        One query per entry of ``created_at``.

    Raises:
        DataError: Columns of different lengths, a NaN confidence or access score.
        ParameterError: A bad profile, or ``confidence``/``access_score`` not holding one
            entry per query.
    """
    created = as_sequence(created_at, "created_at")
    n = len(created)
    conf = [None] * n if confidence is None else list(as_sequence(confidence, "confidence"))
    acc = [None] * n if access_score is None else list(as_sequence(access_score, "access_score"))
    for label, column in (("confidence", conf), ("access_score", acc)):
        if len(column) != n:
            raise ParameterError(
                f"invalid parameter {label}: {len(column)} entries but created_at holds {n} queries"
            )
    return _rerank(created, conf, acc, now, profile, single=False)


def _rerank(
    created_at: Sequence[object],
    confidence: Sequence[object],
    access_score: Sequence[object],
    now: object,
    profile: RerankProfile | None,
    *,
    single: bool,
) -> Reranked:
    p = profile or RerankProfile()

    def label(column: str, q: int) -> str:
        return column if single else f"{column}[{q}]"

    times: list[_Array] = []
    confs: list[_Array | None] = []
    accs: list[_Array | None] = []
    for q, created in enumerate(created_at):
        if created is None or np.ndim(created) == 0:  # type: ignore[arg-type]
            raise DataError(
                f"{label('created_at', q)} must be a sequence of times, one per memory "
                "(None entries for unknown)"
            )
        t = time_column(created, label("created_at", q), 0)
        if t is None:  # pragma: no cover - excluded above
            raise DataError(f"{label('created_at', q)} is None")
        times.append(t)
        confs.append(optional_float_column(confidence[q], label("confidence", q), 1.0, len(t)))
        accs.append(optional_float_column(access_score[q], label("access_score", q), 1.0, len(t)))
        for column, values in (("confidence", confs[-1]), ("access_score", accs[-1])):
            if values is not None and values.shape[0] != t.shape[0]:
                raise DataError(
                    f"{label(column, q)} has {values.shape[0]} entries but "
                    f"{label('created_at', q)} has {t.shape[0]}"
                )
    lengths = [t.shape[0] for t in times]

    def flat(parts: list[_Array | None]) -> _Array | None:
        if all(part is None for part in parts):
            return None
        filled = [
            np.ones(n, dtype=np.float64) if part is None else part
            for part, n in zip(parts, lengths, strict=True)
        ]
        return np.ascontiguousarray(np.concatenate(filled), dtype=np.float64)

    created_flat = (
        np.ascontiguousarray(np.concatenate(times), dtype=np.int64)
        if times
        else np.empty(0, dtype=np.int64)
    )
    offsets = offsets_of(lengths)
    scores, order = _core.rerank_memories(
        offsets,
        created_flat,
        flat(confs),
        flat(accs),
        time_seconds(now),
        w_similarity=float(p.w_similarity),
        w_recency=float(p.w_recency),
        w_confidence=float(p.w_confidence),
        w_access=float(p.w_access),
        recency_base=float(p.recency_base),
        day_seconds=operator.index(p.day_seconds),
    )
    return Reranked(scores, order, as_offsets(offsets))
