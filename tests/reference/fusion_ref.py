"""Slow, obviously-correct pure-Python rank fusion, written straight from the definitions.

Every id's contributions are summed in ascending order starting from 0.0 (the order the native
core documents), so that the results can be compared exactly. Results are lists of
``(id, score)`` sorted by score descending, ties by id ascending.
"""

from __future__ import annotations

from collections.abc import Sequence


def _canonical_sum(values: list[float]) -> float:
    total = 0.0
    for value in sorted(values):
        total += value
    return total


def _rank(scores: dict[int, float], top_k: int | None = None) -> list[tuple[int, float]]:
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return ranked if top_k is None else ranked[:top_k]


def _max_per_id(ids: Sequence[int], scores: Sequence[float]) -> dict[int, float]:
    best: dict[int, float] = {}
    for d, s in zip(ids, scores, strict=True):
        if d not in best or s > best[d]:
            best[d] = s
    return best


def rrf(
    lists: Sequence[Sequence[int]],
    weights: Sequence[float] | None = None,
    k: float = 60.0,
    top_k: int | None = None,
) -> list[tuple[int, float]]:
    """score(d) = sum_i w_i / (k + rank_i(d)), 1-based rank, first occurrence per list."""
    contributions: dict[int, list[float]] = {}
    for i, ranked in enumerate(lists):
        w = 1.0 if weights is None else weights[i]
        seen: set[int] = set()
        for rank, d in enumerate(ranked, start=1):
            if d in seen:
                continue
            seen.add(d)
            contributions.setdefault(d, []).append(w / (k + rank))
    return _rank({d: _canonical_sum(c) for d, c in contributions.items()}, top_k)


def weighted(
    lists: Sequence[tuple[Sequence[int], Sequence[float]]],
    weights: Sequence[float] | None = None,
    normalize: bool = False,
    top_k: int | None = None,
) -> list[tuple[int, float]]:
    """score(d) = sum_i w_i * s_i(d); a list keeps each id's max; optional min-max per list."""
    contributions: dict[int, list[float]] = {}
    for i, (ids, scores) in enumerate(lists):
        best = _max_per_id(ids, scores)
        if normalize and best:
            lo, hi = min(best.values()), max(best.values())
            best = {d: ((s - lo) / (hi - lo) if hi > lo else 1.0) for d, s in best.items()}
        w = 1.0 if weights is None else weights[i]
        for d, s in best.items():
            contributions.setdefault(d, []).append(w * s)
    return _rank({d: _canonical_sum(c) for d, c in contributions.items()}, top_k)


def additive_merge(
    base: tuple[Sequence[int], Sequence[float]],
    graph: tuple[Sequence[int], Sequence[float]],
    alpha: float = 0.7,
    beta: float = 0.3,
    max_new: int = 4,
) -> list[tuple[int, float, int]]:
    """All base ids (0 = base only, 2 = both) plus the best max_new graph-only ids (1)."""
    b = _max_per_id(*base)
    g = _max_per_id(*graph)
    out = []
    for d, s in b.items():
        graph_score = g.get(d, 0.0)
        out.append((d, alpha * s + beta * graph_score, 2 if d in g else 0))
    new = [(d, alpha * 0.0 + beta * s, 1) for d, s in g.items() if d not in b]
    new.sort(key=lambda t: (-t[1], t[0]))
    out.extend(new[:max_new])
    out.sort(key=lambda t: (-t[1], t[0]))
    return out


def dedupe_max(ids: Sequence[int], scores: Sequence[float]) -> list[tuple[int, float]]:
    return _rank(_max_per_id(ids, scores))


def top_k(ids: Sequence[int], scores: Sequence[float], k: int) -> list[tuple[int, float]]:
    return sorted(zip(ids, scores, strict=True), key=lambda t: (-t[1], t[0]))[:k]
