"""New generations of a :class:`~graphrecall.anchors.vectors.VectorIndex` from the previous
one: the ``reuse`` arguments of the constructor and :meth:`VectorIndex.appended`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...errors import DataError, ParameterError
from .backends import _build_int4, _build_sketches
from .common import (
    _EXACT,
    _HNSW,
    _MAX_THREADS,
    _SKETCH,
    F32,
    I64,
    MAX_N_TENANTS,
    U8,
    _int_param,
    _normalised_vectors,
    _tenant_codes,
)

if TYPE_CHECKING:
    from usearch.index import Index

    from .index import VectorIndex


def kinds_of(mode: str, below: int, sketch_below: int, sizes: I64) -> U8:
    """The backend kind of each tenant from its row count (see :class:`VectorIndex`)."""
    if mode == "exact":
        return np.zeros(len(sizes), dtype=np.uint8)
    if mode == "hnsw":
        return np.where(sizes > 0, _HNSW, _EXACT).astype(np.uint8)
    if mode == "sketch":
        return np.where(sizes > 0, _SKETCH, _EXACT).astype(np.uint8)
    kinds = np.where(sizes >= max(below, 1), _SKETCH, _EXACT).astype(np.uint8)
    kinds[sizes >= max(below, sketch_below, 1)] = _HNSW
    return kinds


def reuse_args(
    index: VectorIndex, reuse: tuple[VectorIndex, npt.ArrayLike] | None, n: int
) -> tuple[VectorIndex | None, I64 | None]:
    if reuse is None:
        return None, None
    if not isinstance(reuse, tuple) or len(reuse) != 2:
        raise ParameterError("invalid parameter reuse: expected (previous index, old rows)")
    previous, old = reuse
    if not isinstance(previous, type(index)):
        raise ParameterError(
            f"invalid parameter reuse: {type(previous).__name__} is not a VectorIndex"
        )
    old_rows = np.asarray(old)
    if old_rows.shape != (n,) or old_rows.dtype.kind not in "iu":
        raise ParameterError(
            f"invalid parameter reuse: old rows must be {n} integers, got shape "
            f"{old_rows.shape} of {old_rows.dtype}"
        )
    old_rows = old_rows.astype(np.int64)
    if len(old_rows) and (old_rows.min() < -1 or old_rows.max() >= len(previous)):
        raise ParameterError(
            f"invalid parameter reuse: old rows must be in -1..{len(previous) - 1}"
        )
    same = (
        previous._dim == index._dim
        and previous._dtype == index._dtype
        and previous._connectivity == index._connectivity
        and previous._expansion_add == index._expansion_add
        and previous._expansion_search == index._expansion_search
    )
    return (previous, old_rows) if same else (None, None)


def from_previous(
    previous: VectorIndex, code: int, old: I64, vectors: F32, threads: int
) -> tuple[Index | None, str]:
    """The previous HNSW sub-index of tenant ``code``, as it is or extended with the
    new rows, when its rows are exactly the first rows of this tenant (``old``: each
    row's old row, -1 for a new or changed vector)."""
    pos = previous._position.get(code)
    if pos is None:
        return None, "built"
    part = previous._parts[pos]
    if part.hnsw is None:
        return None, "built"
    m = len(part.rows)
    if len(old) < m or not np.array_equal(old[:m], part.rows) or (old[m:] != -1).any():
        return None, "built"
    if len(old) == m:
        return part.hnsw, "reused"  # never mutated: sharing it is safe
    try:
        index = part.hnsw.copy()
    except (RuntimeError, ValueError):  # pragma: no cover - usearch refuses to copy
        return None, "built"
    index.add(np.arange(m, len(old), dtype=np.uint64), vectors[m:], threads=threads)
    return index, "extended"


def appended_fast(
    index: VectorIndex,
    arr: npt.NDArray[Any],
    tenants: npt.ArrayLike | None,
    n_tenants: int | None,
    build_threads: int,
) -> VectorIndex | None:
    """:meth:`appended` without the constructor, or None where it must be used (bad
    input, a new tenant, a tenant changing backend, usearch refusing a copy)."""
    n_old = index._n
    if arr.ndim != 2 or arr.shape[0] < n_old or arr.shape[1] != index._dim:
        return None
    build = _int_param("build_threads", build_threads, 0, _MAX_THREADS)
    n = int(arr.shape[0])
    codes = _tenant_codes(tenants, n)[n_old:]
    if n_tenants is None:  # the known tenants are those with rows
        known_ok = bool((np.diff(index._offsets) > 0).all())
    else:
        n_known = _int_param("n_tenants", n_tenants, 1, MAX_N_TENANTS)
        known_ok = n_known == len(index._codes) and bool(
            np.array_equal(index._codes, np.arange(n_known))
        )
    if not known_ok:
        return None
    pos = np.searchsorted(index._codes, codes)
    if len(codes) and (
        pos.max() >= len(index._codes) or not np.array_equal(index._codes[pos], codes)
    ):
        return None  # a tenant code this index does not know
    try:
        tail = _normalised_vectors(arr[n_old:]) if n > n_old else None
    except DataError:
        return None  # the constructor names the row
    add = np.bincount(pos, minlength=len(index._codes)).astype(np.int64)
    old_sizes = np.diff(index._offsets)
    sizes = old_sizes + add
    kinds = kinds_of(index._mode, index._exact_below, index._sketch_below, sizes)
    if not np.array_equal(kinds, index._kinds):
        return None
    out: VectorIndex = object.__new__(type(index))
    out.__dict__.update(index.__dict__)
    out._n = n
    out.hnsw_origin = {int(index._codes[t]): "reused" for t in index._hnsw}
    if tail is None:
        out._index_parts()
        return out
    order = np.argsort(pos, kind="stable")  # new rows grouped by tenant, ascending
    grouped = pos[order]
    offsets = index._offsets.copy()
    offsets[1:] += np.cumsum(add)
    out._offsets = offsets
    out._rows = np.insert(index._rows, index._offsets[1:][grouped], n_old + order)
    flat = kinds[grouped] != _HNSW
    old_ends = np.cumsum(np.where(kinds != _HNSW, old_sizes, 0))
    if flat.any():
        out._exact = np.ascontiguousarray(
            np.insert(index._exact, old_ends[grouped[flat]], tail[order[flat]], axis=0)
        )
    sketch_ts = np.flatnonzero(kinds == _SKETCH)
    if (add[sketch_ts] > 0).any():
        sketch_appended(index, out, sketch_ts, add, old_sizes, sizes, kinds)
    hnsw: dict[int, Index] = dict(index._hnsw)
    for t in np.flatnonzero((kinds == _HNSW) & (add > 0)).tolist():
        try:
            graph = hnsw[t].copy()
        except (RuntimeError, ValueError):  # pragma: no cover - usearch refuses to copy
            return None
        m = int(old_sizes[t])
        graph.add(
            np.arange(m, m + int(add[t]), dtype=np.uint64),
            tail[order[grouped == t]],
            threads=build,
        )
        hnsw[t] = graph
        out.hnsw_origin[int(index._codes[t])] = "extended"
    out._hnsw = hnsw
    out._index_parts()
    return out


def sketch_appended(
    index: VectorIndex,
    out: VectorIndex,
    sketch_ts: I64,
    add: I64,
    old_sizes: I64,
    sizes: I64,
    kinds: U8,
) -> None:
    """``out``'s sketch arrays: a sketch tenant that got rows computed again from its
    rows of ``out._exact`` (what a fresh build computes), the others kept."""
    starts = np.concatenate(([0], np.cumsum(np.where(kinds != _HNSW, sizes, 0))))
    old_cs = np.concatenate(([0], np.cumsum(np.where(kinds == _SKETCH, old_sizes, 0))))
    codes, int4 = [], []
    centres, scales = index._centres.copy(), index._scales.copy()
    one_off = np.zeros(2, dtype=np.int64)
    one_kind = np.array([_SKETCH], dtype=np.uint8)
    for j, t in enumerate(sketch_ts.tolist()):
        if add[t]:
            m = int(sizes[t])
            part = out._exact[int(starts[t]) : int(starts[t]) + m]
            one_off[1] = m
            c, centre = _build_sketches(part, one_off, one_kind, index._dim)
            q, scale = _build_int4(part, one_off, one_kind, index._dim, centre)
            codes.append(c)
            int4.append(q)
            centres[j], scales[j] = centre[0], scale[0]
        else:
            lo, hi = int(old_cs[t]), int(old_cs[t]) + int(old_sizes[t])
            codes.append(index._sketch[lo:hi])
            int4.append(index._int4[lo:hi])
    out._sketch = np.concatenate(codes)
    out._int4 = np.concatenate(int4)
    out._centres, out._scales = centres, scales
