"""Slow, obviously-correct references of the recipes, composed from the seed references.

Each takes the random graph's rows (see ``tests/conftest.py``), the entity / chunk vectors by
row and one query vector, and computes what the source design's pipeline returns: anchors by
brute-force cosine within the tenant (ties by row), then the literal seed traversal and
scoring of ``graph_ref`` / ``scoring_ref`` / ``fusion_ref``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from . import fusion_ref, graph_ref, scoring_ref

Row = Mapping[str, Any]


def top_cosine(
    vectors: np.ndarray, tenants: Sequence[Hashable], tenant: Hashable, q: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """(row, cosine) of the k rows of ``tenant`` most similar to ``q``; ties by row."""
    scores = (vectors @ q).tolist()
    rows = [r for r in range(len(tenants)) if tenants[r] == tenant]
    rows.sort(key=lambda r: (-scores[r], r))
    return [(r, float(np.float32(scores[r]))) for r in rows[:k]]


def spreading_activation(
    entities: Sequence[Row],
    facts: Sequence[Row],
    ent_vec: np.ndarray,
    tenant: Hashable,
    q: np.ndarray,
    now: int,
) -> list[tuple[Hashable, float]]:
    """Seed 000: top-3 anchors, BFS (2 hops, 10 per entity, staged/confirmed, max 30),
    scoreFact ranking. Returns (fact id, score)."""
    anchors = [
        entities[r]["id"]
        for r, _ in top_cosine(ent_vec, [e["tenant"] for e in entities], tenant, q, 3)
    ]
    out = graph_ref.spread(
        facts,
        anchors,
        max_hops=2,
        per_entity_limit=10,
        max_facts=30,
        direction="out",
        statuses=["staged", "confirmed"],
    )
    return [(facts[r]["id"], s) for r, s in graph_ref.rank_facts(facts, out["rows"], now)]


def graph_recall(
    entities: Sequence[Row],
    facts: Sequence[Row],
    ent_vec: np.ndarray,
    tenant: Hashable,
    q: np.ndarray,
) -> list[tuple[Hashable, float]]:
    """Seed 004: top-5 entities with cosine match scores, BFS 2 hops both ways, composite,
    triple dedupe, top 10. Returns (fact id, score)."""
    top = top_cosine(ent_vec, [e["tenant"] for e in entities], tenant, q, 5)
    anchors = [entities[r]["id"] for r, _ in top]
    scores = [s for _, s in top]
    best = graph_ref.graph_recall(
        facts, anchors, scores, max_hops=2, direction="both", top_k=10, dedupe="triple"
    )
    return [(facts[r]["id"], s) for r, s in best]


def chunk_boost(
    entities: Sequence[Row],
    facts: Sequence[Row],
    chunks: Sequence[Row],
    mentions: Sequence[Row],
    ent_vec: np.ndarray,
    chunk_vec: np.ndarray,
    tenant: Hashable,
    q: np.ndarray,
    k: int = 5,
) -> list[tuple[Hashable, float]]:
    """Seed 001: k*2 chunks, top-3 query entities, 1-hop traversal both ways (min distance,
    strongest relation at it), boosts, stable re-rank, top k; expansion needs primary chunks,
    which random graphs lack. Returns (chunk id, adjusted)."""
    cands = top_cosine(chunk_vec, [c["tenant"] for c in chunks], tenant, q, 2 * k)
    anchors = [
        entities[r]["id"]
        for r, _ in top_cosine(ent_vec, [e["tenant"] for e in entities], tenant, q, 3)
    ]
    out = graph_ref.spread(facts, anchors, max_hops=1, direction="both")
    related = [
        (e, h, s)
        for e, h, s in zip(
            out["entities"], out["entity_hops"], out["entity_strengths"], strict=True
        )
        if h >= 1 and e not in anchors
    ]
    b = graph_ref.mention_boost(
        mentions,
        [chunks[r]["id"] for r, _ in cands],
        [s for _, s in cands],
        anchors,
        [e for e, _, _ in related],
        [h for _, h, _ in related],
        [s for _, _, s in related],
    )
    return [(chunks[cands[i][0]]["id"], b["adjusted"][i]) for i in b["order"][:k]]


def graph_chunk_scores(
    facts: Sequence[Row], mentions: Sequence[Row], recognized: Sequence[Hashable], max_hops: int = 1
) -> dict[Hashable, float]:
    """Seed 003 phase 3: chunks of the entities within ``max_hops`` of the recognised ones
    (not themselves), scored by computeGraphScore, best per chunk."""
    out = graph_ref.spread(facts, list(recognized), max_hops=max_hops, direction="both")
    best: dict[Hashable, float] = {}
    for e, h, s in zip(out["entities"], out["entity_hops"], out["entity_strengths"], strict=True):
        if h < 1 or e in recognized:
            continue
        for m in mentions:
            if m["entity"] == e:
                g = scoring_ref.compute_graph_score(s, h, m.get("count", 1))
                if g > best.get(m["chunk"], -1.0):
                    best[m["chunk"]] = g
    return best


def additive(
    base: list[tuple[int, float]], graph: Mapping[int, float]
) -> list[tuple[int, float, int]]:
    """Seed 003's final merge (0.7 / 0.3, at most 4 new)."""
    return fusion_ref.additive_merge(
        ([c for c, _ in base], [s for _, s in base]),
        (list(graph), list(graph.values())),
        alpha=0.7,
        beta=0.3,
        max_new=4,
    )
