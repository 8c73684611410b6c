"""The three per-tenant search backends: exact float32 scan, sign sketch with 4-bit and exact
rerank (both in Rust), and usearch HNSW, with the builders of the sketch arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ... import _core
from ..._threads import apply_openmp
from .common import _HNSW, _SKETCH, F32, I64, U8

if TYPE_CHECKING:
    from types import ModuleType

    from usearch.index import Index


_usearch_module: ModuleType | None = None


def _usearch() -> ModuleType:
    """usearch's index module, imported on first use (after the OpenMP thread count is set:
    see :func:`graphrecall.set_threads`)."""
    global _usearch_module
    if _usearch_module is None:
        apply_openmp()
        import usearch.index

        _usearch_module = usearch.index
    return _usearch_module


def _exact_search(matrix: F32, queries: F32, k: int, local: I64, rows: I64, scores: F32) -> int:
    """Exact top-k of every query over the rows of ``matrix``, written into the first
    ``min(k, m)`` columns of ``rows`` (as ``local[position]``) and ``scores``.

    Best first, ties by position (``local`` ascends, so by row too). Returns the width.
    One native call (``_core.exact_search``): float32 dot products in a fixed order, one
    thread per query, so that a query never waits on BLAS threads (numpy's threaded
    ``sgemv`` had a p99 of 12 ms with another process busy).
    """
    m, q = int(matrix.shape[0]), int(queries.shape[0])
    width = min(k, m)
    pos, val, _ = _core.exact_search(matrix, queries, width)
    rows[:, :width] = local[pos.reshape(q, width)]
    scores[:, :width] = val.reshape(q, width)
    return width


def _hnsw_search(
    index: Index,
    queries: F32,
    count: int,
    local: I64,
    rows: I64,
    scores: F32,
    counts: I64,
    threads: int,
) -> None:
    """usearch search of ``count`` neighbours, written into ``rows`` / ``scores`` /
    ``counts`` as global rows, best first, ties by row."""
    found = index.search(queries, count, threads=threads)
    usearch = _usearch()
    if isinstance(found, usearch.Matches):  # usearch unwraps a batch of one query: valid only
        c = min(len(found.keys), count)
        val1 = np.float32(1.0) - np.asarray(found.distances[:c], dtype=np.float32)
        found_rows = local[np.asarray(found.keys[:c], dtype=np.int64)]
        if c > 1 and (val1[1:] == val1[:-1]).any():
            order = np.lexsort((found_rows, -val1))
            found_rows, val1 = found_rows[order], val1[order]
        rows[0, :c] = found_rows
        scores[0, :c] = val1
        counts[0] = c
        return
    if isinstance(found, usearch.BatchMatches):
        keys = np.asarray(found.keys)
        dist = np.asarray(found.distances)
        cnt = np.asarray(found.counts, dtype=np.int64)
    else:  # pragma: no cover - usearch API change
        raise TypeError(f"usearch returned {type(found).__name__}")
    got = min(count, keys.shape[1])
    cnt = np.minimum(cnt, got)
    filled = np.arange(got) < cnt[:, None]
    # Keys are 0..size-1 (built so, checked at load); padding keys are masked out.
    pos = np.where(filled, keys[:, :got], 0).astype(np.int64)
    # usearch sorts by distance; 1 - distance keeps that order but may round distinct
    # distances to one score: re-sort those ties by row (positions ascend with rows).
    val = np.where(filled, np.float32(1.0) - dist[:, :got], np.float32(np.nan))
    rows[:, :got] = np.where(filled, local[pos], -1)
    scores[:, :got] = val
    counts[:] = cnt
    if got > 1 and (val[:, 1:] == val[:, :-1]).any():
        key_rows = np.where(filled, rows[:, :got], np.iinfo(np.int64).max)
        order = np.lexsort((key_rows, np.where(filled, -val, np.inf)), axis=1)
        rows[:, :got] = np.take_along_axis(rows[:, :got], order, axis=1)
        scores[:, :got] = np.take_along_axis(val, order, axis=1)


# ------------------------------------------------------------------ persistence


def _build_sketches(
    exact: F32, offsets: I64, kinds: U8, dim: int
) -> tuple[npt.NDArray[np.uint64], F32]:
    """Sign codes (n_sketch, words) of the sketch tenants' rows, each around its
    tenant's centre (the mean of its rows), and the centres (t_sketch, dim)."""
    sizes = np.diff(offsets)
    sketch = kinds == _SKETCH
    starts = np.concatenate(([0], np.cumsum(np.where(kinds != _HNSW, sizes, 0))))
    words = -(-dim // 64)
    codes = np.zeros((int(sizes[sketch].sum()), words), dtype=np.uint64)
    centres = np.zeros((int(sketch.sum()), dim), dtype=np.float32)
    at = 0
    for j, t in enumerate(np.flatnonzero(sketch).tolist()):
        m = int(sizes[t])
        part = exact[int(starts[t]) : int(starts[t]) + m]
        centres[j] = part.mean(axis=0, dtype=np.float64)
        codes[at : at + m] = _core.sketch_codes(part, centres[j]).reshape(m, words)
        at += m
    return codes, centres


def _build_int4(
    exact: F32, offsets: I64, kinds: U8, dim: int, centres: F32
) -> tuple[npt.NDArray[np.uint8], F32]:
    """The sketch tenants' rows minus their centre, quantised to 4 bits with one scale
    per dimension and tenant: (n_sketch, ceil(dim / 2)) uint8 and the scales
    (t_sketch, dim)."""
    sizes = np.diff(offsets)
    sketch = kinds == _SKETCH
    starts = np.concatenate(([0], np.cumsum(np.where(kinds != _HNSW, sizes, 0))))
    width = -(-dim // 2)
    int4 = np.zeros((int(sizes[sketch].sum()), width), dtype=np.uint8)
    scales = np.zeros((int(sketch.sum()), dim), dtype=np.float32)
    at = 0
    for j, t in enumerate(np.flatnonzero(sketch).tolist()):
        m = int(sizes[t])
        part = exact[int(starts[t]) : int(starts[t]) + m]
        q, scales[j] = _core.sketch_int4(part, np.ascontiguousarray(centres[j]))
        int4[at : at + m] = q.reshape(m, width)
        at += m
    return int4, scales
