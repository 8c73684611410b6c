"""Regression oracles of ``hybrid_expand``'s native steps (``_core.graph_proximity_chunks``,
``_core.hybrid_merge``): the numpy / per-chunk-dict forms they must match bit for bit. The
graph stage calls ``scoring.graph_proximity`` and ``recipes.base.csr_ranges`` (code under
test); the design-level check of the recipe is ``test_recipes.py``'s seed 003 test."""

from __future__ import annotations

import numpy as np
from graphrecall import scoring
from graphrecall.recipes.base import csr_ranges


def graph_chunks(
    offsets: np.ndarray,
    chunks: np.ndarray,
    counts: np.ndarray,
    related: np.ndarray,
    strengths: np.ndarray,
    hops: np.ndarray,
    profile: scoring.GraphProximityProfile,
) -> tuple[dict[int, float], dict[int, int]]:
    """The graph_score stage in numpy form: every mention slot of a related entity scored by
    ``scoring.graph_proximity``, each chunk keeping its best (the first entity on ties)."""
    graph_scores: dict[int, float] = {}
    graph_from: dict[int, int] = {}
    owner, flat = csr_ranges(offsets, related)
    if len(flat):
        gs = scoring.graph_proximity(
            strengths[owner].astype(np.float64), hops[owner], counts[flat], profile=profile
        )
        for c, sc, e in zip(
            chunks[flat].tolist(), gs.tolist(), related[owner].tolist(), strict=True
        ):
            if sc > graph_scores.get(c, -1.0):
                graph_scores[c] = sc
                graph_from[c] = e
    return graph_scores, graph_from


def merge(
    vector: tuple[np.ndarray, np.ndarray] | None,
    keyword: tuple[np.ndarray, np.ndarray],
    openclaw: bool,
    vw: float,
    tw: float,
    k: int,
) -> tuple[list[int], list[float]]:
    """hybrid_expand's hybrid merge in Python form: the source's per-chunk dicts, then the k best by
    (-score, chunk) with one lexsort."""
    vec: dict[int, float] = (
        dict(zip(vector[0].tolist(), vector[1].tolist(), strict=True)) if vector else {}
    )
    rows, bm = keyword
    bm25 = dict(zip(rows.tolist(), bm.tolist(), strict=True))
    top = float(bm[0]) if len(bm) else 0.0
    if openclaw:
        text = dict.fromkeys(bm25, 1.0)
    elif top > 0:
        text = {c: s_ / top for c, s_ in bm25.items()}
    else:
        text = dict.fromkeys(bm25, 0.0)
    hybrid = {c: vw * v + tw * text.get(c, 0.0) for c, v in vec.items()}
    for c, ts in text.items():
        if c not in vec:
            hybrid[c] = vw * 0.0 + tw * ts
    h_ids = np.fromiter(hybrid, dtype=np.int64, count=len(hybrid))
    h_scores = np.fromiter(hybrid.values(), dtype=np.float64, count=len(hybrid))
    ids = h_ids[np.lexsort((h_ids, -h_scores))[:k]].tolist()
    return ids, [hybrid[c] for c in ids]
