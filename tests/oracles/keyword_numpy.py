"""Regression oracle: the numpy form of ``BM25Index``'s query path, which the native kernel
(``_core.bm25_top_k``) must match bit for bit. It reads the index's private posting arrays, so
it checks the kernel against the numpy arithmetic, not against the BM25 definition (that is
``exact_scores`` in ``tests/test_keyword.py``).

A query's posting slices (``BM25Index._slices``) are summed row by row in phrase order, by
``np.add.at`` into one slot per row of the tenant (dense), by ``np.unique`` + ``np.bincount``
(sparse) or, for ``"and"``, by looking the rarest phrase's rows up in the others'
(intersection); the best ``k`` are selected by :func:`top_positive` without sorting the rest.
The module constants choose the path, as they did in ``graphrecall.anchors.keyword``; tests
patch them to force each one.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from graphrecall.anchors.keyword import BM25Index

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Dense accumulation when ``postings * this >= rows``.
DENSE_FACTOR = 32
#: ``"and"`` by intersection when ``rarest * (distinct phrases - 1) * this <= postings + rows``.
INTERSECT_FACTOR = 16
#: :func:`top_positive` sorts at most this many candidates per wanted result outright.
SORT_FACTOR = 8


def search(idx: BM25Index, query: str, k: int, tenant: int | None, mode: str) -> tuple[I64, F64]:
    """``idx.search(query, k, tenant=tenant, mode=mode)`` by the numpy form (every posting
    contribution > 0, as in any index with a finite ``k1 + 1``)."""
    rank = idx._tenants.resolve(tenant)
    slices, off, n_t = idx._slices(query, rank, mode)
    if not slices:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    p_loc, p_sc = idx._p_local, idx._p_score
    n_post = sum(z - a for a, z in slices)
    if len(slices) == 1:
        a, z = slices[0]
        loc, summed = p_loc[a:z], p_sc[a:z]
    elif mode == "and":
        sizes = [z - a for a, z in {(a, z) for a, z in slices}]
        if min(sizes) * (len(sizes) - 1) * INTERSECT_FACTOR <= n_post + n_t:
            loc, summed = intersect(idx, slices)
        else:
            loc, summed = sums(idx, slices, n_t, mode)
    elif n_post * DENSE_FACTOR >= n_t:  # dense: positions are the tenant's rows
        summed = add_up(
            np.concatenate([p_loc[a:z] for a, z in slices]),
            np.concatenate([p_sc[a:z] for a, z in slices]),
            n_t,
        )
        best = top_positive(summed, k)
        return idx._t_rows[off + best], summed[best]
    else:
        loc, summed = sums(idx, slices, n_t, mode)
    best = top_positive(summed, k)
    return idx._t_rows[off + loc[best]], summed[best]


def sums(idx: BM25Index, slices: list[list[int]], n_t: int, mode: str) -> tuple[I64, F64]:
    """Every matching row (tenant positions, ascending) and its sum, in phrase order."""
    loc, sc = idx._p_local, idx._p_score
    cat = np.concatenate([loc[a:z] for a, z in slices])
    weights = np.concatenate([sc[a:z] for a, z in slices])
    need = len(slices) if mode == "and" else 1
    if len(cat) * DENSE_FACTOR >= n_t:
        summed = add_up(cat, weights, n_t)
        hit = np.flatnonzero(np.bincount(cat, minlength=n_t) >= need)
        return hit, summed[hit]
    uniq, inv = np.unique(cat, return_inverse=True)
    total = np.bincount(inv, weights=weights, minlength=len(uniq)).astype(np.float64)
    if need > 1:
        keep = np.bincount(inv, minlength=len(uniq)) >= need
        return uniq[keep], total[keep]
    return uniq, total


def intersect(idx: BM25Index, slices: list[list[int]]) -> tuple[I64, F64]:
    """``"and"``: the rows of the rarest phrase found in every other phrase's slice, and
    their sums, added in phrase order."""
    loc, sc = idx._p_local, idx._p_score
    distinct = sorted({(a, z) for a, z in slices}, key=lambda s: s[1] - s[0])
    a, z = distinct[0]
    cand = loc[a:z]
    for a, z in distinct[1:]:
        pos = np.minimum(loc[a:z].searchsorted(cand), z - a - 1)
        cand = cand[loc[a:z][pos] == cand]
        if not len(cand):
            return cand, np.zeros(0, dtype=np.float64)
    total = np.zeros(len(cand), dtype=np.float64)
    for a, z in slices:
        total += sc[a + loc[a:z].searchsorted(cand)]
    return cand, total


def add_up(rows: I64, weights: F64, n: int) -> F64:
    """``out[r] = sum of weights[rows == r]``, added in input order from 0.0."""
    out = np.zeros(n, dtype=np.float64)
    np.add.at(out, rows, weights)
    return out


def top_positive(scores: F64, k: int) -> I64:
    """Positions of the ``k`` highest entries > 0 of ``scores``, best first, ties by position,
    without sorting all of them: the ``k``-th largest of the maxima of ``cols >= 4 k``
    interleaved blocks is a lower bound ``low`` of the ``k``-th largest of all, so the answer
    lies among the entries ``>= low``; those are narrowed the same way until at most
    ``SORT_FACTOR * k`` are left to sort."""
    pos: I64 | None = None  # positions of `vals` in `scores` (None: all)
    vals = scores
    positive = False  # every entry of `vals` is known to be > 0
    while len(vals) > SORT_FACTOR * k:
        cols = min(max(4 * k, 256 if len(vals) >= 1024 else 0), len(vals))
        n_full = len(vals) - len(vals) % cols
        col_max = vals[:n_full].reshape(-1, cols).max(axis=0)
        low = np.partition(col_max, cols - k)[cols - k]
        if not low > 0.0:  # fewer than k blocks hold a positive entry: keep those
            keep = np.flatnonzero(vals > 0.0)
            if len(keep) == len(vals):  # only with NaN scores: just sort
                break
        else:
            keep = np.flatnonzero(vals >= low)  # >= k entries: k blocks reach low
            if len(keep) > SORT_FACTOR * k:
                above = vals[keep] > low
                n_above = int(np.count_nonzero(above))
                if n_above < k:  # the best are those above low, then ties by position
                    top = keep[above]
                    top = top[np.argsort(-vals[top], kind="stable")]
                    best = np.concatenate((top, keep[~above][: k - n_above]))
                    return best if pos is None else pos[best]
                keep = keep[above]
        vals = vals[keep]
        pos = keep if pos is None else pos[keep]
        positive = True
    if positive:
        best = np.argsort(-vals, kind="stable")[:k]
    else:
        cand = np.flatnonzero(vals > 0.0)
        best = cand[np.argsort(-vals[cand], kind="stable")[:k]]
    return best if pos is None else pos[best]
