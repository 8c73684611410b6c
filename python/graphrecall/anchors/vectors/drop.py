"""Dropping rows from a :class:`~graphrecall.anchors.vectors.VectorIndex` (what an index
update after entity or chunk deletes does): the rows keep their numbers and no search
finds them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .common import _EXACT, _HNSW
from .grow import kinds_of

if TYPE_CHECKING:
    from .index import VectorIndex


def without_rows(index: VectorIndex, rows: npt.ArrayLike) -> VectorIndex | None:
    """A new index that answers exactly as ``index`` built over the same vectors without
    the rows ``rows`` (rows numbered as before; rows it no longer holds are ignored), or
    None where that takes a build: a dropped row in a sketch or HNSW tenant (a sketch's
    centre moves; HNSW would need its graph rebuilt to answer as a fresh one), or no row
    left. ``index`` is left unchanged.

    An exact tenant stays exact when it shrinks, and its search reads only its rows: the
    grouped rows and exact vectors are copied without the dropped ones (one numpy pass
    over the row list to find them, no arithmetic).

    Args:
        index: The index.
        rows: Row numbers of ``index`` (any order, repeats allowed).
    """
    want = np.unique(np.asarray(rows, dtype=np.int64).reshape(-1))
    pos = np.flatnonzero(np.isin(index._rows, want))
    if not len(pos):
        return index
    offsets = index._offsets
    t_of = np.searchsorted(offsets, pos, "right") - 1
    if (index._kinds[t_of] != _EXACT).any():
        return None
    old_sizes = np.diff(offsets)
    removed = np.bincount(t_of, minlength=len(old_sizes)).astype(np.int64)
    sizes = old_sizes - removed
    kinds = kinds_of(index._mode, index._exact_below, index._sketch_below, sizes)
    if not np.array_equal(kinds, index._kinds) or not sizes.any():
        return None  # another backend, or no vector left (a fresh build has no index)
    starts = np.zeros(len(old_sizes), dtype=np.int64)
    starts[1:] = np.cumsum(np.where(index._kinds != _HNSW, old_sizes, 0))[:-1]
    out: VectorIndex = object.__new__(type(index))
    out.__dict__.update(index.__dict__)
    out._rows = np.delete(index._rows, pos)
    new_offsets = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(sizes, out=new_offsets[1:])
    out._offsets = new_offsets
    out._exact = np.ascontiguousarray(
        np.delete(index._exact, starts[t_of] + (pos - offsets[t_of]), axis=0)
    )
    out.hnsw_origin = {int(index._codes[t]): "reused" for t in index._hnsw}
    out._index_parts()
    return out
