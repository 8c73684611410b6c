"""Slow, obviously-correct references of the recipes, composed from the seed references.

Each takes the random graph's rows (see ``tests/conftest.py``), the entity / chunk vectors by
row and one query vector, and computes what the source design's pipeline returns: anchors by
brute-force cosine within the tenant (ties by row), then the literal seed traversal and
scoring of ``graph_ref`` / ``scoring_ref`` / ``fusion_ref``.
"""

from __future__ import annotations

import math
import re
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


def clear_cut(
    vectors: np.ndarray,
    tenants: Sequence[Hashable],
    tenant: Hashable,
    q: np.ndarray,
    k: int,
    tol: float = 1e-6,
) -> bool:
    """Whether :func:`top_cosine`'s k rows are certain: the k-th and the next cosine (in
    float64) differ by more than ``tol``. Kernels sum float32 products in another order than
    numpy, so two rows with (nearly) equal cosines can fall on either side of the cut."""
    scores = (vectors.astype(np.float64) @ q.astype(np.float64)).tolist()
    ranked = sorted((scores[r] for r in range(len(tenants)) if tenants[r] == tenant), reverse=True)
    return k <= 0 or len(ranked) <= k or ranked[k - 1] - ranked[k] > tol


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


def tokens(text: str) -> list[str]:
    """FTS5's ``unicode61`` tokens of ASCII text: the lowercased runs of letters and digits."""
    return re.findall(r"[a-z0-9]+", text.lower())


def bm25(
    texts: Sequence[str],
    tenants: Sequence[Hashable],
    tenant: Hashable,
    query: str,
    limit: int,
    *,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[tuple[int, float]]:
    """Seed 003 phase 1's keyword search: FTS5's ``bm25()`` with its sign flipped, over the
    tenant's rows, the query's terms OR-ed (one phrase per term, repeats included).

    ``score = sum over terms t in the row of idf(t) * f (k1 + 1) / (f + k1 (1 - b + b |D| /
    avgdl))`` with ``idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5))``, 1e-6 where that is <= 0
    (SQLite's FTS5 documentation). Returns (row, score) of the best ``limit``, ties by row.
    """
    docs = {r: tokens(t) for r, t in enumerate(texts) if tenants[r] == tenant}
    terms = tokens(query)
    if not docs or not terms:
        return []
    n_rows = float(len(docs))
    avgdl = float(sum(len(d) for d in docs.values())) / n_rows
    scores: dict[int, float] = {}
    for r, d in docs.items():
        if not any(t in d for t in terms):
            continue
        norm = k1 * ((1.0 - b) + (b * float(len(d))) / avgdl)
        score = 0.0
        for t in terms:
            f = float(d.count(t))
            if f:
                n_t = float(sum(1 for other in docs.values() if t in other))
                idf = math.log((n_rows - n_t + 0.5) / (n_t + 0.5))
                score += (idf if idf > 0.0 else 1e-6) * ((f * (k1 + 1.0)) / (f + norm))
        scores[r] = score
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def recognize_names(
    names: Sequence[str],
    tenants: Sequence[Hashable],
    tenant: Hashable,
    query: str,
    *,
    limit: int = 5,
    max_n: int = 3,
) -> list[int]:
    """Seed 003 phase 2, strategy 1: the query's 1..``max_n``-word n-grams looked up against
    the tenant's entity names (tokens compared exactly, case-insensitively).

    The seed leaves the order of ``findEntities(..., {limit: 5})`` open; this takes longer
    n-grams first, then left to right, entities of one name in row order, each entity once,
    and skips an n-gram inside a span already matched. Stopwords are not modelled (names of
    one stopword never match in the library). Returns the rows of the first ``limit``.
    """
    by_name: dict[tuple[str, ...], list[int]] = {}
    for r, name in enumerate(names):
        if tenants[r] == tenant:
            by_name.setdefault(tuple(tokens(name)), []).append(r)
    words = tokens(query)
    found: list[int] = []
    spans: list[tuple[int, int]] = []
    for n in range(max_n, 0, -1):
        for i in range(len(words) - n + 1):
            if any(a <= i and i + n <= z for a, z in spans):
                continue
            rows = by_name.get(tuple(words[i : i + n]), [])
            if rows:
                spans.append((i, i + n))
            found.extend(r for r in rows if r not in found)
    return found[:limit]


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
