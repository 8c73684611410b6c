"""BM25 keyword search over texts (chunks), as SQLite FTS5's ``bm25()`` computes it.

Seed 003's hybrid retriever merges vector search with "BM25 keyword search (FTS5)", and its
source (OpenClaw's memory search) runs ``MATCH '"a" AND "b"'`` on one FTS5 table per user.
:class:`BM25Index` gives the same scores without a database: an inverted index in numpy
(postings grouped by tenant and term, each holding its row's precomputed contribution),
queried by one native call per query (``_core.bm25_top_k``).

Scoring (``ext/fts5/fts5_aux.c``, ``fts5Bm25Function``), for the query's tokens
``q_1 .. q_m`` (one FTS5 phrase each, repeats included, so a repeated token counts twice
exactly as ``"x" OR "x"`` does in FTS5)::

    score(D) = sum_i IDF(q_i) * (f(q_i, D) * (k1 + 1)) / (f(q_i, D) + norm(D))
    norm(D)  = k1 * (1 - b + b * |D| / avgdl)
    IDF(q)   = log((N - n(q) + 0.5) / (n(q) + 0.5)), replaced by 1e-6 where it is <= 0

with ``f`` the term frequency, ``|D|`` the row's token count, ``N`` the number of rows,
``avgdl`` their mean token count and ``n(q)`` the rows holding ``q``. The arithmetic follows
the C code operation by operation, so scores equal ``-bm25(fts)`` of a real FTS5 table with
the same tokens (the tests check this against the stdlib ``sqlite3``). FTS5 returns the
negated score; this module returns it positive: higher is better.

Per-tenant statistics: ``N``, ``avgdl`` and ``n(q)`` are computed over the rows of the
queried tenant only, as if each tenant had its own FTS5 table (the source keeps one database
per user). A tenant's scores therefore never depend on another tenant's texts, and a
tenant's results are exactly those of an index holding only its rows.

A ``None`` text is an empty row: it counts in ``N`` (as an FTS5 row with a NULL column does)
and never matches.

Query speed against SQLite FTS5 is measured by ``benches/bench_text.py``
(``benches/results/text.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import DataError, ParameterError
from .keyword_grow import IDF_FLOOR as IDF_FLOOR
from .keyword_grow import MAX_ROWS, appended, idf
from .keyword_tokens import tokenize_corpus
from .tenants import Tenants, check_int
from .tokens import TOKEN, fold, tokenize

__all__ = ["BM25Index", "tokenize"]

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
F64 = npt.NDArray[np.float64]

#: :meth:`BM25Index.holds` searches posting lists up to this long together (one
#: concatenation and one binary search), longer ones one by one.
_HOLDS_SHORT = 2048

# --------------------------------------------------------------------------- BM25

#: :meth:`BM25Index.scores` accumulates densely (one slot per row of the tenant) when
#: ``postings * this >= rows``; below, by a sparse grouping of the postings' rows. Both add
#: in the same order.
_DENSE_FACTOR = 32
#: ``np.add.at`` got a fast path in numpy 1.25.
_FAST_ADD_AT = np.lib.NumpyVersion(np.__version__) >= "1.25.0"

#: :meth:`BM25Index.term_view` of a tenant without rows (shared, read-only).
_NO_ROWS: I64 = np.zeros(0, dtype=np.int64)
_NO_OFFSETS: I64 = np.zeros(1, dtype=np.int64)
_NO_ROWS.flags.writeable = False
_NO_OFFSETS.flags.writeable = False


class BM25Index:
    """BM25 over a fixed list of texts, per tenant, with FTS5's formula and defaults.

    Build once; it never changes (an update builds a new index). Rows are the positions of
    ``texts`` (a graph's dense chunk indices).

    Layout: the postings are ordered by (tenant, term, row), so a term's postings in one
    tenant are one contiguous slice, and each posting stores the row's position within its
    tenant and its whole contribution ``IDF * (f * (k1 + 1)) / (f + norm)`` (every factor
    depends on the tenant and the term only, so it is computed once, at build). A query
    is one native call (``_core.bm25_top_k``, the GIL released): it looks the query's term
    ids up in the tenant's sorted term ids, adds the contributions of their slices row by
    row (into one slot per row of the tenant, or by sorting the postings when few rows
    match, or by intersecting the slices for ``"and"``; always in phrase order as FTS5's
    loop, so sums are bit-identical) and keeps the best ``k`` in a heap without sorting the
    rest. An index whose contributions are not all > 0 (a ``k1`` so large that
    ``f * (k1 + 1)`` overflows) is queried in numpy instead.

    Args:
        texts: One text per row (``None``: an empty row).
        tenants: Tenant code of each row (integers; None: one tenant, code 0).
        k1: Term-frequency saturation (FTS5's 1.2).
        b: Length normalisation (FTS5's 0.75).
        n_tenants: The number of tenants (codes ``0..n_tenants-1``) when some may hold no
            row, so that querying them gives empty results instead of
            :class:`UnknownTenantError`.

    Raises:
        DataError: A text that is neither str nor None, more than ``2**32 - 1`` texts, or
            tenant codes that are not integers, of the wrong length or outside
            ``0..n_tenants-1``.
        ParameterError: ``k1`` or ``b`` is not finite, ``k1 < 0`` or ``b`` outside [0, 1].
    """

    def __init__(
        self,
        texts: Sequence[str | None],
        tenants: npt.ArrayLike | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        n_tenants: int | None = None,
    ):
        if isinstance(texts, (str, bytes)):
            raise ParameterError("invalid parameter texts: expected a sequence of texts, got a str")
        for name, v, lo, hi in (("k1", k1, 0.0, math.inf), ("b", b, 0.0, 1.0)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise ParameterError(f"invalid parameter {name}: expected a number, got {v!r}")
            if not (math.isfinite(float(v)) and lo <= float(v) <= hi):
                raise ParameterError(
                    f"invalid parameter {name}: {name} = {v!r} must be finite and in [{lo}, {hi}]"
                )
        self.k1 = float(k1)
        self.b = float(b)
        n = len(texts)
        if n > MAX_ROWS:
            raise DataError(f"texts: {n} rows, more than the {MAX_ROWS} an index holds")
        self._tenants = Tenants(tenants, n, n_tenants)
        vocab, terms, lengths = tokenize_corpus(texts)
        #: Term ids: ``_vocab`` (shared by the generations :meth:`appended` makes) and
        #: ``_vocab_more`` (terms first seen in appended rows).
        self._vocab = vocab
        self._vocab_more: dict[str, int] = {}
        self._n_rows = n
        self.lengths: I64 = lengths
        n_known = len(self._tenants.known)
        rank = self._tenants.rank
        # Per-tenant statistics: N_t rows, avgdl_t tokens per row.
        n_t = np.bincount(rank, minlength=n_known).astype(np.int64)
        tok_t = np.bincount(rank, weights=lengths.astype(np.float64), minlength=n_known)
        with np.errstate(invalid="ignore", divide="ignore"):
            avgdl = tok_t / n_t.astype(np.float64)
        # FTS5: k1 * (1 - b + b * D / avgdl), evaluated as ((1 - b) + (b * D) / avgdl).
        avg_row = avgdl[rank] if n else np.zeros(0)
        safe = np.where(avg_row > 0, avg_row, 1.0)  # a tenant of empty rows never matches
        norm = self.k1 * ((1.0 - self.b) + (self.b * lengths.astype(np.float64)) / safe)
        # Rows by tenant: tenant r's rows, ascending, are _t_rows[_t_off[r]:_t_off[r + 1]].
        t_off = np.zeros(n_known + 1, dtype=np.int64)
        np.cumsum(n_t, out=t_off[1:])
        t_rows = np.argsort(rank, kind="stable") if n_known > 1 else np.arange(n)
        local = np.empty(n, dtype=np.int64)
        local[t_rows] = np.arange(n, dtype=np.int64) - t_off[rank[t_rows]]
        # Postings: unique (term, row) pairs with counts, ordered by tenant, term, row.
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        if len(terms):
            if len(vocab) * n < 2**62:
                key, tf = np.unique(terms * n + rows, return_counts=True)
                p_term, p_row = np.divmod(key, n)
            else:  # a key would overflow int64: sort the pairs instead
                o = np.lexsort((rows, terms))
                t_s, r_s = terms[o], rows[o]
                first = np.flatnonzero(
                    np.concatenate(([True], (t_s[1:] != t_s[:-1]) | (r_s[1:] != r_s[:-1])))
                )
                p_term, p_row = t_s[first], r_s[first]
                tf = np.diff(np.append(first, len(t_s)))
            if n_known > 1:
                order = np.argsort(rank[p_row], kind="stable")
                p_term, p_row, tf = p_term[order], p_row[order], tf[order]
        else:
            p_term = p_row = tf = np.zeros(0, dtype=np.int64)
        p_rank = rank[p_row]
        # Groups: the postings of one term in one tenant (FTS5's n(q) is a group's size).
        n_post = len(p_row)
        new = np.ones(n_post, dtype=bool)
        new[1:] = (p_term[1:] != p_term[:-1]) | (p_rank[1:] != p_rank[:-1])
        first = np.flatnonzero(new)
        hits = np.diff(np.append(first, n_post))
        # IDF as fts5Bm25Function computes it: C's log() (math.log) of each distinct argument.
        idfs = idf(n_t[p_rank[first]].astype(np.float64), hits)
        tf_f = tf.astype(np.float64)
        #: Each posting's term frequency (what :meth:`appended` scores again).
        self._p_tf: U32 = tf.astype(np.uint32)
        #: Each posting's score contribution, the operations of the C code in its order.
        self._p_score: F64 = np.repeat(idfs, hits) * (
            (tf_f * (self.k1 + 1.0)) / (tf_f + norm[p_row])
        )
        #: Each posting's row as its position among its tenant's rows.
        self._p_local: U32 = local[p_row].astype(np.uint32)
        #: Group g: term _g_term[g], postings _g_off[g]:_g_off[g + 1].
        self._g_term: I64 = p_term[first].astype(np.int64)
        self._g_off: I64 = np.append(first, n_post).astype(np.int64)
        #: Tenant r: groups _t_info[r, 0]:_t_info[r, 1] (by term), rows
        #: _t_rows[_t_info[r, 2]:][:_t_info[r, 3]] (ascending).
        t_group = np.searchsorted(p_rank[first], np.arange(n_known + 1))
        self._t_info: I64 = np.column_stack((t_group[:-1], t_group[1:], t_off[:-1], n_t))
        self._t_rows: I64 = t_rows.astype(np.int64)
        #: Tenant r's (rows, group terms, group offsets) as views, what the kernel takes.
        self._t_views: list[tuple[I64, I64, I64]] = [
            (self._t_rows[off : off + n], self._g_term[a:z], self._g_off[a : z + 1])
            for a, z, off, n in self._t_info.tolist()
        ]
        #: Every contribution > 0 (always, unless k1 is so large that f * (k1 + 1)
        #: overflows): a row then matches exactly when its sum is > 0.
        self._positive = bool(np.all(self._p_score > 0))

    # ------------------------------------------------------------------ properties

    @property
    def n_rows(self) -> int:
        """Number of rows (texts) indexed."""
        return self._n_rows

    @property
    def n_terms(self) -> int:
        """Number of distinct tokens over all rows."""
        return len(self._vocab) + len(self._vocab_more)

    def _term_lookup(self) -> Callable[[str, int], int]:
        """``get(token, -1)``: a token's term id, -1 for a token no row holds."""
        more = self._vocab_more
        if not more:
            return self._vocab.get
        base = self._vocab.get

        def get(w: str, default: int) -> int:
            got = base(w)
            return more.get(w, default) if got is None else got

        return get

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        return (
            f"BM25Index(rows={self._n_rows}, terms={self.n_terms}, "
            f"tenants={len(self._tenants.known)}, k1={self.k1}, b={self.b})"
        )

    def appended(
        self, texts: Sequence[str | None], tenants: npt.ArrayLike | None = None
    ) -> BM25Index:
        """A new index over this one's rows plus appended rows; this one is left unchanged.

        It answers exactly as ``BM25Index(old_texts + texts, old_tenants + tenants)`` with
        this index's ``k1``, ``b`` and tenants does, in time linear in the new rows' tokens
        plus one copy of the postings (see :func:`~graphrecall.anchors.keyword_grow.appended`).

        Args:
            texts: The appended rows' texts (``None``: an empty row).
            tenants: Their tenant codes (None: code 0), among the index's known tenants.

        Returns:
            The extended index.

        Raises:
            DataError: A text that is neither str nor None, too many rows, or a tenant
                code the index does not know.
        """
        return appended(self, texts, tenants)

    # ------------------------------------------------------------------ queries

    def _check(self, query: object, tenant: object, mode: str) -> int:
        """Validates one query's arguments; returns the tenant's rank (-1: no tenant)."""
        if not isinstance(query, str):
            raise ParameterError(
                f"invalid parameter query: expected a str, got {type(query).__name__}"
            )
        if mode not in ("or", "and"):
            raise ParameterError(f"invalid parameter mode: {mode!r} (use 'or' or 'and')")
        return self._tenants.resolve(tenant)

    def _slices(self, query: str, rank: int, mode: str) -> tuple[list[list[int]], int, int]:
        """``(slices, first row, rows)``: the posting slices ``[start, end]`` of the query's
        phrases in the tenant, in query order (a repeated token twice; none when nothing
        can match), and where the tenant's rows lie in ``_t_rows``."""
        if rank < 0:
            return [], 0, 0
        a, z, off, n_t = self._t_info[rank].tolist()
        toks = TOKEN.findall(query.lower() if query.isascii() else fold(query))
        if not toks or a == z:
            return [], off, n_t
        get = self._term_lookup()
        tids = [get(w, -1) for w in toks]
        if mode == "and" and -1 in tids:
            return [], off, n_t
        terms = self._g_term[a:z]
        pos = terms.searchsorted(tids)
        # A position past the end is clipped onto a smaller term: no match.
        hit = terms.take(pos, mode="clip").tolist()
        starts = self._g_off.take(pos + a, mode="clip").tolist()
        ends = self._g_off.take(pos + a + 1, mode="clip").tolist()
        slices = [[s, e] for h, t, s, e in zip(hit, tids, starts, ends, strict=True) if h == t]
        if mode == "and" and len(slices) < len(tids):
            return [], off, n_t
        return slices, off, n_t

    def _sums(self, slices: list[list[int]], n_t: int, mode: str) -> tuple[I64, F64]:
        """Every matching row (tenant positions, ascending) and its score.

        Sums add each row's contributions in phrase order, as FTS5's loop does (both
        :func:`_add_up` and ``np.bincount`` add in input order), so they are bit-identical
        to FTS5's.
        """
        if not slices:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        loc, sc = self._p_local, self._p_score
        if len(slices) == 1:
            a, z = slices[0]
            return loc[a:z].astype(np.int64), sc[a:z].copy()
        cat = np.concatenate([loc[a:z] for a, z in slices]).astype(np.int64)
        weights = np.concatenate([sc[a:z] for a, z in slices])
        need = len(slices) if mode == "and" else 1
        if len(cat) * _DENSE_FACTOR >= n_t:
            summed = _add_up(cat, weights, n_t)
            hit = np.flatnonzero(np.bincount(cat, minlength=n_t) >= need)
            return hit, summed[hit]
        uniq, inv = np.unique(cat, return_inverse=True)
        summed = np.bincount(inv, weights=weights, minlength=len(uniq)).astype(
            np.float64, copy=False
        )
        if need > 1:
            keep = np.bincount(inv, minlength=len(uniq)) >= need
            return uniq[keep], summed[keep]
        return uniq, summed

    def _search(self, query: str, k: int, rank: int, mode: str) -> tuple[I64, F64]:
        """:meth:`search` on checked arguments: one native call (``_core.bm25_top_k``)
        looks the query's terms up among the tenant's groups, adds each row's
        contributions in phrase order and selects the best ``k``."""
        if rank < 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if not self._positive:  # degenerate k1: matches by counts, full sort
            slices, off, n_t = self._slices(query, rank, mode)
            if not slices:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            loc, summed = self._sums(slices, n_t, mode)
            loc, summed = _top_k(loc, summed, k)
            return self._t_rows[off + loc], summed
        get = self._term_lookup()
        tids = [
            get(w, -1) for w in TOKEN.findall(query.lower() if query.isascii() else fold(query))
        ]
        every = mode == "and"
        if every and -1 in tids:  # a token no row holds
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        rows, terms, offsets = self._t_views[rank]
        return _core.bm25_top_k(
            self._p_local, self._p_score, terms, offsets, rows, tids, k, all_terms=every
        )

    def search(
        self,
        query: str,
        k: int,
        *,
        tenant: int | None = None,
        mode: Literal["or", "and"] = "or",
    ) -> tuple[I64, F64]:
        """The ``k`` best rows of ``tenant`` for ``query``.

        Args:
            query: Free text, tokenised with :func:`tokenize`; no query syntax.
            k: Results wanted (>= 1).
            tenant: Tenant code (None: the index's only tenant).
            mode: ``"or"``: rows holding any query token (FTS5 ``"a" OR "b"``);
                ``"and"``: rows holding every query token (FTS5 ``"a" AND "b"``, what the
                source's FTS query does).

        Returns:
            ``(rows, scores)``: int64 rows and float64 BM25 scores (> 0), best first, ties
            by row; at most ``k`` (fewer when fewer rows match; empty for a query without
            tokens).

        Raises:
            ParameterError: ``k`` is not a positive integer, ``query`` is not a str,
                ``mode`` is unknown, or ``tenant`` is None with several tenants.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        kk = check_int("k", k, 1)
        rank = self._check(query, tenant, mode)
        return self._search(query, kk, rank, mode)

    def search_many(
        self,
        queries: Sequence[str],
        k: int,
        *,
        tenant: int | None = None,
        mode: Literal["or", "and"] = "or",
    ) -> list[tuple[I64, F64]]:
        """:meth:`search` for each query.

        Args:
            queries: The queries.
            k: Results wanted per query (>= 1).
            tenant: Tenant code (None: the index's only tenant).
            mode: ``"or"`` or ``"and"`` (see :meth:`search`).

        Returns:
            One ``(rows, scores)`` pair per query, in order.

        Raises:
            ParameterError: As :meth:`search`, or ``queries`` is a single str.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        if isinstance(queries, (str, bytes)):
            raise ParameterError(
                "invalid parameter queries: expected a sequence of str, got a single str"
            )
        kk = check_int("k", k, 1)
        rank = self._tenants.resolve(tenant)
        out = []
        for q in queries:
            if not isinstance(q, str) or mode not in ("or", "and"):
                self._check(q, tenant, mode)  # raises the error search() would
            out.append(self._search(q, kk, rank, mode))
        return out

    def scores(self, query: str, *, tenant: int | None = None) -> F64:
        """The BM25 score of every row for ``query`` (``"or"`` semantics).

        Args:
            query: Free text.
            tenant: Tenant code (None: the index's only tenant).

        Returns:
            float64 array of length :attr:`n_rows`: the score of each matching row of the
            tenant, 0 for every other row (no match or another tenant).

        Raises:
            ParameterError: ``query`` is not a str, or ``tenant`` is None with several
                tenants.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        rank = self._check(query, tenant, "or")
        out = np.zeros(self._n_rows, dtype=np.float64)
        slices, off, n_t = self._slices(query, rank, "or")
        if slices:
            loc, s = self._sums(slices, n_t, "or")
            out[self._t_rows[off + loc]] = s
        return out

    def term_ids(self, tokens: Sequence[str]) -> list[int]:
        """Each token's term id, -1 for a token no row holds (what :meth:`term_view`'s
        terms are)."""
        get = self._term_lookup()
        return [get(w, -1) for w in tokens]

    def term_view(self, tenant: int | None = None) -> tuple[I64, I64, I64, U32]:
        """One tenant's postings as read-only views, for native kernels that look up which
        terms a row holds (``graphrecall.recipes.ppr_rerank``).

        Args:
            tenant: Tenant code (None: the index's only tenant).

        Returns:
            ``(rows, terms, offsets, postings)``: the tenant's rows ascending; its term ids
            ascending; term ``terms[g]``'s postings are ``postings[offsets[g]:offsets[g +
            1]]``, each a position in ``rows`` (ascending). Empty for a tenant without rows.

        Raises:
            ParameterError: ``tenant`` is None with several tenants, or not an integer.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        rank = self._tenants.resolve(tenant)
        if rank < 0:
            return _NO_ROWS, _NO_ROWS, _NO_OFFSETS, self._p_local
        rows, terms, offsets = self._t_views[rank]
        return rows, terms, offsets, self._p_local

    def holds(
        self, tokens: Sequence[str], rows: npt.ArrayLike, *, tenant: int | None = None
    ) -> npt.NDArray[np.bool_]:
        """Which of ``tokens`` each of ``rows`` contains, read from the postings (no text is
        tokenised again): binary searches over the tokens' postings in the tenant, the
        short posting lists searched together.

        Args:
            tokens: Tokens as :func:`tokenize` gives them (folded, lower case).
            rows: Row positions (int); a row outside the tenant or the index holds nothing.
            tenant: Tenant code (None: the index's only tenant).

        Returns:
            bool array of shape ``(len(rows), len(tokens))``.

        Raises:
            ParameterError: ``tenant`` is None with several tenants, or not an integer.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        rank = self._tenants.resolve(tenant)
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        out = np.zeros((len(r), len(tokens)), dtype=np.bool_)
        if rank < 0 or not len(r) or not len(tokens):
            return out
        a, z, off, n_t = self._t_info[rank].tolist()
        if a == z:  # the tenant holds no token
            return out
        t_rows = self._t_rows[off : off + n_t]
        loc = t_rows.searchsorted(r)
        inside = t_rows.take(loc, mode="clip") == r
        terms = self._g_term[a:z]
        get = self._term_lookup()
        tids = np.array([get(w, -1) for w in tokens], dtype=np.int64)
        g = terms.searchsorted(tids)
        found = np.flatnonzero(terms.take(g, mode="clip") == tids)  # never -1: ids are >= 0
        if not len(found):
            return out
        starts = self._g_off.take(g[found] + a).tolist()
        ends = self._g_off.take(g[found] + a + 1).tolist()
        short: list[int] = []  # positions in ``found`` of the short posting lists
        for i, (j, s0, e0) in enumerate(zip(found.tolist(), starts, ends, strict=True)):
            if e0 - s0 > _HOLDS_SHORT:  # a long posting list: its own binary search
                post = self._p_local[s0:e0]
                out[:, j] = inside & (post.take(post.searchsorted(loc), mode="clip") == loc)
            else:
                short.append(i)
        if short:
            # The short lists searched at once: each list's local rows offset by its slot
            # x n_t, so that the concatenation stays sorted.
            keys = np.concatenate([self._p_local[starts[i] : ends[i]] for i in short])
            keys = keys.astype(np.int64) + np.repeat(
                np.arange(len(short), dtype=np.int64) * n_t, [ends[i] - starts[i] for i in short]
            )
            want = (np.arange(len(short), dtype=np.int64)[:, None] * n_t + loc).ravel()
            hit = keys.take(keys.searchsorted(want), mode="clip") == want
            out[:, found[short]] = hit.reshape(len(short), len(r)).T & inside[:, None]
        return out


def _add_up(rows: I64, weights: F64, n: int) -> F64:
    """``out[r] = sum of weights[rows == r]``, added in input order from 0.0, for r < n.

    ``np.add.at`` (unbuffered, in order; faster than ``np.bincount`` since numpy 1.25) or
    ``np.bincount`` (also in order): the same sums, bit for bit.
    """
    if _FAST_ADD_AT:
        out = np.zeros(n, dtype=np.float64)
        np.add.at(out, rows, weights)
        return out
    return np.bincount(rows, weights=weights, minlength=n).astype(np.float64, copy=False)


def _top_k(rows: I64, scores: F64, k: int) -> tuple[I64, F64]:
    """The ``k`` highest scores, best first, ties by row (``rows`` ascending on input)."""
    if len(rows) > k:
        # Keep every row scoring at least the k-th best (ties included), then sort those.
        kth = -np.partition(-scores, k - 1)[k - 1]
        keep = scores >= kth
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]
