"""Dropping rows from a :class:`~graphrecall.anchors.keyword.BM25Index` (what an index
update after chunk deletes does): the rows keep their numbers, no query finds them, and
every score is the one a build without them gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .keyword_grow import rescore

if TYPE_CHECKING:
    from .keyword import BM25Index

I64 = npt.NDArray[np.int64]


def without_rows(index: BM25Index, rows: npt.ArrayLike) -> BM25Index:
    """A new index that answers exactly as ``index`` built without the rows ``rows``
    (rows numbered as before; rows it already dropped are ignored); ``index`` is left
    unchanged.

    The rows' postings are removed, the later rows of their tenants move down one
    position, a (tenant, term) group left empty goes, and the contributions of the
    tenants that lost rows (their ``N``, ``avgdl`` and ``n(q)`` changed) are computed
    again with the build's arithmetic: time linear in those tenants' postings plus one
    copy of the postings arrays, as :meth:`BM25Index.appended`. Term ids stay (a term
    only the dropped rows held keeps its id and matches nothing, as an unknown term).

    Args:
        index: The index.
        rows: Row numbers of ``index`` (any order, repeats allowed).
    """
    want = np.unique(np.asarray(rows, dtype=np.int64).reshape(-1))
    want = want[(want >= 0) & (want < index._n_rows)]
    rank = index._tenants.rank[want] if len(want) else np.zeros(0, dtype=np.int64)
    info = index._t_info
    n_known = len(info)
    drop_pos: list[int] = []  # positions in _t_rows of the live rows dropped
    locs: dict[int, list[int]] = {}
    for row, r in zip(want.tolist(), np.asarray(rank, dtype=np.int64).tolist(), strict=True):
        if r < 0:
            continue
        off, nt = int(info[r, 2]), int(info[r, 3])
        t_rows = index._t_rows[off : off + nt]
        loc = int(t_rows.searchsorted(row))
        if loc < nt and int(t_rows[loc]) == row:
            drop_pos.append(off + loc)
            locs.setdefault(r, []).append(loc)
    if not drop_pos:
        return index
    p_local = index._p_local.copy()
    gone = np.zeros(len(p_local), dtype=bool)
    for r, ls in locs.items():
        dead = np.asarray(sorted(ls), dtype=np.int64)
        a, z = int(index._g_off[int(info[r, 0])]), int(index._g_off[int(info[r, 1])])
        seg = p_local[a:z].astype(np.int64)
        gone[a:z] = np.isin(seg, dead)
        p_local[a:z] = (seg - dead.searchsorted(seg)).astype(np.uint32)
    # Groups: sizes shrunk, empty ones dropped.
    sizes = np.diff(index._g_off)
    g_of = np.searchsorted(index._g_off, np.flatnonzero(gone), "right") - 1
    np.subtract.at(sizes, g_of, 1)
    g_rank = np.repeat(np.arange(n_known, dtype=np.int64), info[:, 1] - info[:, 0])
    kept_g = sizes > 0
    sizes, g_rank = sizes[kept_g], g_rank[kept_g]
    g_off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=g_off[1:])
    t_group = np.zeros(n_known + 1, dtype=np.int64)
    np.cumsum(np.bincount(g_rank, minlength=n_known), out=t_group[1:])
    n_t = info[:, 3] - np.bincount(
        np.asarray(list(locs), dtype=np.int64),
        weights=[len(v) for v in locs.values()],
        minlength=n_known,
    ).astype(np.int64)
    t_off = np.zeros(n_known + 1, dtype=np.int64)
    np.cumsum(n_t, out=t_off[1:])
    t_rows = np.delete(index._t_rows, drop_pos)
    out = object.__new__(type(index))
    out.__dict__.update(index.__dict__)
    out._p_local = p_local[~gone]
    out._p_tf = index._p_tf[~gone]
    out._p_score = index._p_score[~gone]
    out._g_term = index._g_term[kept_g]
    out._g_off = g_off
    out._t_info = np.column_stack((t_group[:-1], t_group[1:], t_off[:-1], n_t))
    out._t_rows = t_rows
    out._t_views = [
        (t_rows[off : off + k], out._g_term[a:z], g_off[a : z + 1])
        for a, z, off, k in out._t_info.tolist()
    ]
    rescore(out, np.asarray(sorted(locs), dtype=np.int64))
    return out
