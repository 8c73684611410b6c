"""Growing a :class:`~graphrecall.anchors.keyword.BM25Index` by appended rows (what an
index update after appends does), and the IDF arithmetic the build shares."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError
from .tokens import TOKEN, fold

if TYPE_CHECKING:
    from .keyword import BM25Index

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Rows an index holds at most (row positions are uint32).
MAX_ROWS = 2**32 - 1

#: FTS5's floor for a non-positive IDF (``if( idf<=0.0 ) idf = 1e-6;`` in fts5_aux.c).
IDF_FLOOR = 1e-6


def idf(n_rows: F64, hits: I64) -> F64:
    """IDF per group as fts5Bm25Function computes it: ``log((N - n + 0.5) / (n + 0.5))``
    with C's log() (math.log) of each distinct argument, floored at :data:`IDF_FLOOR`.

    Args:
        n_rows: The tenant's row count ``N`` per group, float64.
        hits: The group's posting count ``n(q)``.
    """
    hf = hits.astype(np.float64)
    arg, inv = np.unique((n_rows - hf + 0.5) / (hf + 0.5), return_inverse=True)
    out = np.array([math.log(x) for x in arg.tolist()], dtype=np.float64)[inv]
    out[out <= 0.0] = IDF_FLOOR
    return out


def appended(
    index: BM25Index, texts: Sequence[str | None], tenants: npt.ArrayLike | None = None
) -> BM25Index:
    """A new index over ``index``'s rows plus appended rows; ``index`` is left unchanged.

    It answers exactly as ``BM25Index(old_texts + texts, old_tenants + tenants)`` with
    ``index``'s ``k1``, ``b`` and tenants does: the same term ids (new terms numbered
    after the old ones in first-occurrence order, as a build numbers them), the same
    layout, and bit-identical contributions. Only the new texts are tokenised; the
    postings arrays are copied with the new postings put in, and the contributions of
    the tenants that got rows (their ``N``, ``avgdl`` and ``n(q)`` changed) are
    computed again with the build's arithmetic, operation for operation.

    Arguments, result and errors: as :meth:`BM25Index.appended`.
    """
    if isinstance(texts, (str, bytes)):
        raise ParameterError("invalid parameter texts: expected a sequence of texts, got a str")
    m = len(texts)
    n_old = index._n_rows
    n = n_old + m
    if n > MAX_ROWS:
        raise DataError(f"texts: {n} rows, more than the {MAX_ROWS} an index holds")
    known = index._tenants.known
    codes = (
        np.zeros(m, dtype=np.int64)
        if tenants is None
        else np.asarray(tenants).astype(np.int64).reshape(-1)
    )
    if len(codes) != m:
        raise DataError(f"tenants: expected {m} tenant codes (one per row), got {len(codes)}")
    rank_new = np.searchsorted(known, codes).astype(np.int64)
    bad = np.flatnonzero((rank_new >= len(known)) | (known.take(rank_new, mode="clip") != codes))
    if len(bad):
        raise DataError(
            f"tenants: row {n_old + int(bad[0])} has tenant code {int(codes[bad[0]])}, "
            "not a tenant of the index"
        )
    # Tokens of the new rows; new terms numbered in first-occurrence order.
    get = index._term_lookup()
    more = dict(index._vocab_more)
    n_terms = index.n_terms
    p_term_l: list[int] = []
    p_row_l: list[int] = []
    p_tf_l: list[int] = []
    lengths_new = np.zeros(m, dtype=np.int64)
    for j, text in enumerate(texts):
        if text is None:
            continue
        if not isinstance(text, str):
            raise DataError(
                f"texts: row {n_old + j} is a {type(text).__name__}, expected str or None"
            )
        toks = TOKEN.findall(fold(text))
        lengths_new[j] = len(toks)
        counts: dict[int, int] = {}
        for w in toks:
            t = get(w, -1)
            if t < 0:
                t = more.get(w, -1)
                if t < 0:
                    t = more[w] = n_terms
                    n_terms += 1
            counts[t] = counts.get(t, 0) + 1
        for t in sorted(counts):
            p_term_l.append(t)
            p_row_l.append(n_old + j)
            p_tf_l.append(counts[t])
    n_known = len(known)
    n_t_old = index._t_info[:, 3]
    added_t = np.bincount(rank_new, minlength=n_known).astype(np.int64)
    n_t = n_t_old + added_t
    # New postings by (tenant, term, row); their positions among their tenant's rows.
    a_term = np.asarray(p_term_l, dtype=np.int64)
    a_row = np.asarray(p_row_l, dtype=np.int64)
    a_tf = np.asarray(p_tf_l, dtype=np.int64)
    row_rank = rank_new[a_row - n_old] if len(a_row) else np.zeros(0, np.int64)
    order = np.lexsort((a_row, a_term, row_rank))
    a_term, a_row, a_tf, a_rank = a_term[order], a_row[order], a_tf[order], row_rank[order]
    # Local position of each new row: after its tenant's old rows, in row order.
    by_t = np.argsort(rank_new, kind="stable")
    local_new = np.empty(m, dtype=np.int64)
    first_new = np.zeros(n_known + 1, dtype=np.int64)
    np.cumsum(added_t, out=first_new[1:])
    local_new[by_t] = n_t_old[rank_new[by_t]] + (
        np.arange(m, dtype=np.int64) - first_new[rank_new[by_t]]
    )
    a_local = local_new[a_row - n_old]
    # Old groups as (tenant, term) keys; where each new posting and group goes.
    g_sizes = np.diff(index._g_off)
    g_rank = np.repeat(
        np.arange(n_known, dtype=np.int64), index._t_info[:, 1] - index._t_info[:, 0]
    )
    span = max(n_terms, 1)
    g_key = g_rank * span + index._g_term
    a_key = a_rank * span + a_term
    after = np.searchsorted(g_key, a_key, "right")
    ins = index._g_off[after]
    p_local = np.insert(index._p_local, ins, a_local.astype(np.uint32))
    p_tf = np.insert(index._p_tf, ins, a_tf.astype(np.uint32))
    p_score = np.insert(index._p_score, ins, 0.0)
    # Groups: sizes grown, new (tenant, term) groups put in at their place.
    uniq = np.unique(a_key, return_index=True, return_counts=True)
    u_key: I64 = np.asarray(uniq[0], dtype=np.int64)
    u_first: I64 = np.asarray(uniq[1], dtype=np.int64)
    u_count: I64 = np.asarray(uniq[2], dtype=np.int64)
    u_at = np.searchsorted(g_key, u_key, "left")
    have: npt.NDArray[np.bool_] = (
        np.asarray(g_key.take(u_at, mode="clip") == u_key)
        if len(g_key)
        else np.zeros(len(u_key), dtype=bool)
    )
    sizes = g_sizes.copy()
    np.add.at(sizes, u_at[have], u_count[have])
    fresh = ~have
    sizes = np.insert(sizes, u_at[fresh], u_count[fresh])
    g_term = np.insert(index._g_term, u_at[fresh], a_term[u_first[fresh]])
    g_rank = np.insert(g_rank, u_at[fresh], a_rank[u_first[fresh]])
    g_off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=g_off[1:])
    # Rows by tenant: the new rows after each tenant's old ones.
    t_off_old = index._t_info[:, 2]
    t_rows = np.insert(
        index._t_rows, (t_off_old + n_t_old)[rank_new[by_t]], n_old + by_t.astype(np.int64)
    )
    t_off = np.zeros(n_known + 1, dtype=np.int64)
    np.cumsum(n_t, out=t_off[1:])
    t_group = np.zeros(n_known + 1, dtype=np.int64)
    np.cumsum(np.bincount(g_rank, minlength=n_known), out=t_group[1:])
    lengths = np.concatenate([index.lengths, lengths_new])
    out = object.__new__(type(index))
    out.k1, out.b = index.k1, index.b
    out._tenants = index._tenants.extended(codes, rank_new)
    if len(more) > max(1024, len(index._vocab) // 8):
        out._vocab, out._vocab_more = {**index._vocab, **more}, {}
    else:
        out._vocab, out._vocab_more = index._vocab, more
    out._n_rows = n
    out.lengths = lengths
    out._p_tf = p_tf
    out._p_score = p_score
    out._p_local = p_local
    out._g_term = g_term
    out._g_off = g_off
    out._t_info = np.column_stack((t_group[:-1], t_group[1:], t_off[:-1], n_t))
    out._t_rows = t_rows
    out._t_views = [
        (t_rows[off : off + k], g_term[a:z], g_off[a : z + 1])
        for a, z, off, k in out._t_info.tolist()
    ]
    # Contributions of the tenants that got rows, as the build computes them.
    rescore(out, np.flatnonzero(added_t))
    return out


def rescore(index: BM25Index, ranks: I64) -> None:
    """Compute again, in place, the contributions of the postings of the tenants at
    ``ranks`` (whose ``N``, ``avgdl`` and ``n(q)`` changed) with the build's arithmetic,
    operation for operation; then whether every contribution is > 0."""
    sizes = np.diff(index._g_off)
    for r in np.asarray(ranks, dtype=np.int64).tolist():
        ga, gz, off, nt = (int(v) for v in index._t_info[r])
        if not nt:
            continue
        a, z = int(index._g_off[ga]), int(index._g_off[gz])
        t_rows_r = index._t_rows[off : off + nt]
        avg = float(index.lengths[t_rows_r].sum()) / float(nt)
        safe = avg if avg > 0 else 1.0
        hits = sizes[ga:gz]
        idfs = idf(np.full(len(hits), float(nt)), hits)
        p_len = index.lengths[t_rows_r[index._p_local[a:z].astype(np.int64)]].astype(np.float64)
        norm = index.k1 * ((1.0 - index.b) + (index.b * p_len) / safe)
        tf_f = index._p_tf[a:z].astype(np.float64)
        index._p_score[a:z] = np.repeat(idfs, hits) * ((tf_f * (index.k1 + 1.0)) / (tf_f + norm))
    index._positive = bool(np.all(index._p_score > 0))
