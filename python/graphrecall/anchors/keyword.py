"""BM25 keyword search over texts (chunks), as SQLite FTS5's ``bm25()`` computes it.

Seed 003's hybrid retriever merges vector search with "BM25 keyword search (FTS5)", and its
source (OpenClaw's memory search) runs ``MATCH '"a" AND "b"'`` on one FTS5 table per user.
:class:`BM25Index` gives the same scores without a database: an inverted index in numpy
(CSR postings ``term -> (tenant, row, term frequency)``), queried in a few vector operations.

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
"""

from __future__ import annotations

import math
import operator
import re
import threading
import unicodedata
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError, UnknownTenantError

__all__ = ["BM25Index", "tokenize"]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: FTS5's floor for a non-positive IDF (``if( idf<=0.0 ) idf = 1e-6;`` in fts5_aux.c).
IDF_FLOOR = 1e-6

_TOKEN = re.compile(r"[^\W_]+")
_marks_re: re.Pattern[str] | None = None
_marks_lock = threading.Lock()


def _marks() -> re.Pattern[str]:
    """A regex matching every combining mark (Unicode category M*), built on first use.

    Marks live in planes 0, 1 and 14 only (checked against ``unicodedata``); scanning those
    takes ~20 ms, once.
    """
    global _marks_re
    if _marks_re is None:
        with _marks_lock:
            if _marks_re is None:
                cps = [
                    c
                    for rng in (range(0x300, 0x20000), range(0xE0000, 0xE1000))
                    for c in rng
                    if unicodedata.category(chr(c))[0] == "M"
                ]
                parts: list[str] = []
                i = 0
                while i < len(cps):
                    j = i
                    while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
                        j += 1
                    parts.append(f"\\U{cps[i]:08x}-\\U{cps[j]:08x}")
                    i = j + 1
                _marks_re = re.compile("[" + "".join(parts) + "]+")
    return _marks_re


def fold(text: str) -> str:
    """Case- and accent-fold ``text``: NFKD, casefold, NFKD, combining marks removed.

    ASCII text takes a fast path (``str.lower``, which equals the full fold there).

    Args:
        text: Any string.

    Returns:
        The folded string (it may be longer or shorter than ``text``: ``"ß"`` folds to
        ``"ss"``, ``"ﬁ"`` to ``"fi"``, ``"é"`` to ``"e"``).
    """
    if text.isascii():
        return text.lower()
    s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return _marks().sub("", s)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into search tokens, like FTS5's default ``unicode61`` tokenizer.

    The text is folded (:func:`fold`: NFKD compatibility decomposition, casefold, combining
    marks removed) and split on every character that is not a letter or a number (Unicode
    categories L* and N*, Python's ``str.isalnum``); the underscore and all punctuation
    separate tokens. ``"Ned Stark's sword_fight"`` gives ``["ned", "stark", "s", "sword",
    "fight"]``.

    Where it differs from ``unicode61`` (``remove_diacritics=1``): compatibility
    characters are decomposed (``"ﬁ"`` -> ``"fi"``, ``"²"`` -> ``"2"``, full-width letters
    -> ASCII), ``casefold`` is full case folding (``"ß"`` -> ``"ss"``), all combining marks
    are removed rather than only Latin diacritics (so a Devanagari word stays one token
    where ``unicode61`` splits it at every vowel sign), and private-use characters
    (category Co) separate tokens. On text without such characters both give the same
    tokens.

    Args:
        text: The text.

    Returns:
        The tokens, in order, repeats kept.

    Raises:
        ParameterError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ParameterError(f"invalid parameter text: expected a str, got {type(text).__name__}")
    return _TOKEN.findall(fold(text))


#: Separator candidates for :func:`_tokenize_corpus`: ASCII controls, then private-use
#: characters (neither is a token character, so none can be part of a token).
_SEPARATORS = [chr(c) for c in range(1, 9)] + [chr(c) for c in range(0xE000, 0xE100)]
_ASCII_SPLIT = {c: " " for c in range(128) if not chr(c).isalnum()}


def _tokenize_corpus(texts: Sequence[str | None]) -> tuple[dict[str, int], I64, I64]:
    """Tokenise every text at once: ``(vocab, term id per token, tokens per row)``.

    Equivalent to :func:`tokenize` on each text, ~3x faster on many short texts: the texts
    are joined by a separator character that occurs in none of them, folded and split in
    one call (``str.translate`` + ``str.split`` when the folded corpus is ASCII, one regex
    pass otherwise), and the separators mark the row boundaries in the id array. Folding
    is per character, so it commutes with the join.
    """
    n = len(texts)
    parts: list[str] = []
    for row, text in enumerate(texts):
        if text is None:
            parts.append("")
        elif isinstance(text, str):
            parts.append(text)
        else:
            raise DataError(f"texts: row {row} is a {type(text).__name__}, expected str or None")
    sep = next((c for c in _SEPARATORS if not any(c in t for t in parts)), None)
    if sep is None:  # every candidate occurs somewhere: tokenise row by row
        per_row = [_TOKEN.findall(fold(t)) for t in parts]
        flat = [w for toks in per_row for w in toks]
        lengths = np.fromiter(map(len, per_row), dtype=np.int64, count=n)
        vocab = {w: i for i, w in enumerate(dict.fromkeys(flat))}
        terms = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        return vocab, terms, lengths
    folded = fold(f" {sep} ".join(parts))
    if folded.isascii() and sep.isascii():
        table = dict(_ASCII_SPLIT)
        del table[ord(sep)]
        flat = folded.translate(table).split()
    else:
        flat = re.findall(r"[^\W_]+|" + re.escape(sep), folded)
    keys = dict.fromkeys(flat)
    keys.pop(sep, None)
    vocab = {w: i for i, w in enumerate(keys)}
    vocab[sep] = -1
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    del vocab[sep]
    is_sep = ids < 0
    row_of = np.cumsum(is_sep)[~is_sep]
    lengths = np.bincount(row_of, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    return vocab, ids[~is_sep], lengths


# --------------------------------------------------------------------------- shared helpers


def _check_int(name: str, value: object, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(
            f"invalid parameter {name}: expected an integer >= {minimum}, got {value!r}"
        )
    v = operator.index(value)
    if v < minimum:
        raise ParameterError(f"invalid parameter {name}: {name} = {v} must be >= {minimum}")
    return v


class _Tenants:
    """Tenant codes of the rows of an index, and resolution of the ``tenant`` argument.

    Known tenants are the codes in ``range(n_tenants)`` when ``n_tenants`` is given (a
    tenant without rows is then known and gets empty results), else the codes that occur.
    ``tenant=None`` names the only known tenant; it is an error when there are several.
    """

    def __init__(self, tenants: npt.ArrayLike | None, n_rows: int, n_tenants: int | None):
        if tenants is None:
            codes = np.zeros(n_rows, dtype=np.int64)
        else:
            arr = np.asarray(tenants)
            if arr.ndim != 1 or len(arr) != n_rows:
                raise DataError(
                    f"tenants: expected a 1-D array of {n_rows} tenant codes (one per row), "
                    f"got shape {arr.shape}"
                )
            if arr.dtype.kind not in "iu":
                if (
                    arr.dtype.kind == "O"
                    and n_rows
                    and all(
                        isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                        for v in arr.tolist()
                    )
                ):
                    arr = arr.astype(np.int64)
                elif n_rows:
                    raise DataError(
                        f"tenants: expected integer tenant codes, got dtype {arr.dtype}"
                    )
                else:
                    arr = np.zeros(0, dtype=np.int64)
            if arr.dtype == np.uint64 and n_rows and int(arr.max()) > np.iinfo(np.int64).max:
                raise DataError(f"tenants: code {int(arr.max())} does not fit in int64")
            codes = arr.astype(np.int64)
        self.codes: I64 = codes
        uniq = np.unique(codes)
        if n_tenants is not None:
            n_t = _check_int("n_tenants", n_tenants, 0)
            bad = np.flatnonzero((codes < 0) | (codes >= n_t))
            if len(bad):
                r = int(bad[0])
                raise DataError(
                    f"tenants: row {r} has tenant code {int(codes[r])}, outside "
                    f"0..{n_t - 1} (n_tenants = {n_t})"
                )
            self.known: I64 = np.arange(n_t, dtype=np.int64)
        elif tenants is None:
            self.known = np.zeros(1, dtype=np.int64)
        else:
            self.known = uniq
        #: Dense rank of each row's tenant among ``known`` (sorted codes).
        self.rank: I64 = np.searchsorted(self.known, codes).astype(np.int64)

    def resolve(self, tenant: object) -> int:
        """The rank (index into ``known``) of the tenant argument, or -1 for an index that
        knows no tenant at all (empty, given no ``n_tenants``: every query is empty)."""
        if tenant is None:
            if len(self.known) > 1:
                shown = self.known[:10].tolist()
                more = ", ..." if len(self.known) > 10 else ""
                raise ParameterError(
                    f"invalid parameter tenant: the index holds {len(self.known)} tenants "
                    f"({', '.join(map(str, shown))}{more}); name one"
                )
            return 0 if len(self.known) else -1
        if isinstance(tenant, bool) or not isinstance(tenant, (int, np.integer)):
            raise ParameterError(
                f"invalid parameter tenant: expected an integer tenant code or None, got {tenant!r}"
            )
        t = int(tenant)
        i = int(np.searchsorted(self.known, t))
        if i >= len(self.known) or int(self.known[i]) != t:
            raise UnknownTenantError(f"unknown tenant {t}: the index holds no such tenant code")
        return i


# --------------------------------------------------------------------------- BM25


class BM25Index:
    """BM25 over a fixed list of texts, per tenant, with FTS5's formula and defaults.

    Build once; it never changes (an update builds a new index). Rows are the positions of
    ``texts`` (a graph's dense chunk indices).

    Args:
        texts: One text per row (``None``: an empty row).
        tenants: Tenant code of each row (integers; None: one tenant, code 0).
        k1: Term-frequency saturation (FTS5's 1.2).
        b: Length normalisation (FTS5's 0.75).
        n_tenants: The number of tenants (codes ``0..n_tenants-1``) when some may hold no
            row, so that querying them gives empty results instead of
            :class:`UnknownTenantError`.

    Raises:
        DataError: A text that is neither str nor None, or tenant codes that are not
            integers, of the wrong length or outside ``0..n_tenants-1``.
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
        self._tenants = _Tenants(tenants, n, n_tenants)
        vocab, terms, lengths = _tokenize_corpus(texts)
        self._vocab = vocab
        self._n_rows = n
        self.lengths: I64 = lengths
        n_known = len(self._tenants.known)
        rank = self._tenants.rank
        # Per-tenant statistics: N_t rows, avgdl_t tokens per row.
        self._n_t: I64 = np.bincount(rank, minlength=n_known).astype(np.int64)
        tok_t = np.bincount(rank, weights=lengths.astype(np.float64), minlength=n_known)
        with np.errstate(invalid="ignore", divide="ignore"):
            avgdl = tok_t / self._n_t.astype(np.float64)
        # FTS5: k1 * (1 - b + b * D / avgdl), evaluated as ((1 - b) + (b * D) / avgdl).
        avg_row = avgdl[rank] if n else np.zeros(0)
        safe = np.where(avg_row > 0, avg_row, 1.0)  # a tenant of empty rows never matches
        self._norm: F64 = self.k1 * ((1.0 - self.b) + (self.b * lengths.astype(np.float64)) / safe)
        # Postings: unique (term, row) pairs with counts, ordered by term, tenant, row.
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        n_terms = len(vocab)
        if len(terms):
            if n_terms * n < 2**62:
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
                order = np.lexsort((p_row, rank[p_row], p_term))
                p_term, p_row, tf = p_term[order], p_row[order], tf[order]
        else:
            p_term = p_row = tf = np.zeros(0, dtype=np.int64)
        self._offsets: I64 = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(p_term, minlength=n_terms), out=self._offsets[1:])
        self._p_row: I64 = p_row.astype(np.int64)
        self._p_tf: F64 = tf.astype(np.float64)
        self._p_rank: npt.NDArray[np.int32] | None = (
            rank[p_row].astype(np.int32) if n_known > 1 else None
        )

    # ------------------------------------------------------------------ properties

    @property
    def n_rows(self) -> int:
        """Number of rows (texts) indexed."""
        return self._n_rows

    @property
    def n_terms(self) -> int:
        """Number of distinct tokens over all rows."""
        return len(self._vocab)

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        return (
            f"BM25Index(rows={self._n_rows}, terms={self.n_terms}, "
            f"tenants={len(self._tenants.known)}, k1={self.k1}, b={self.b})"
        )

    # ------------------------------------------------------------------ queries

    def _postings(self, term: int, rank: int) -> tuple[I64, F64]:
        a, z = int(self._offsets[term]), int(self._offsets[term + 1])
        if self._p_rank is not None:
            sub = self._p_rank[a:z]
            a, z = (
                a + int(np.searchsorted(sub, rank, "left")),
                a + int(np.searchsorted(sub, rank, "right")),
            )
        return self._p_row[a:z], self._p_tf[a:z]

    def _match(self, query: object, tenant: object, mode: str) -> tuple[I64, F64]:
        """Matching rows (ascending) and their scores, unordered by score."""
        if not isinstance(query, str):
            raise ParameterError(
                f"invalid parameter query: expected a str, got {type(query).__name__}"
            )
        if mode not in ("or", "and"):
            raise ParameterError(f"invalid parameter mode: {mode!r} (use 'or' or 'and')")
        rank = self._tenants.resolve(tenant)
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        toks = tokenize(query)
        if rank < 0 or not toks:
            return empty
        n_t = float(self._n_t[rank])
        k1p1 = self.k1 + 1.0
        all_rows: list[I64] = []
        all_scores: list[F64] = []
        for w in toks:
            tid = self._vocab.get(w)
            if tid is None:
                if mode == "and":
                    return empty
                continue
            rows, tf = self._postings(tid, rank)
            if not len(rows):
                if mode == "and":
                    return empty
                continue
            hits = float(len(rows))
            idf = math.log((n_t - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            all_rows.append(rows)
            all_scores.append(idf * ((tf * k1p1) / (tf + self._norm[rows])))
        if not all_rows:
            return empty
        if len(all_rows) == 1:
            return all_rows[0], all_scores[0]
        cat: I64 = np.concatenate(all_rows)
        weights: F64 = np.concatenate(all_scores)
        # np.bincount adds in input order, phrase by phrase as FTS5's loop does, so sums
        # are bit-identical to FTS5's. Many postings: dense accumulators over all rows;
        # few: a stable merge of the (sorted) posting lists.
        if 4 * len(cat) > self._n_rows:
            summed: F64 = np.bincount(cat, weights=weights, minlength=self._n_rows).astype(
                np.float64, copy=False
            )
            count = np.bincount(cat, minlength=self._n_rows)
            need = len(all_rows) if mode == "and" else 1
            hit: I64 = np.flatnonzero(count >= need).astype(np.int64)
            return hit, summed[hit]
        order = np.argsort(cat, kind="stable")
        srt = cat[order]
        new_group = np.empty(len(srt), dtype=bool)
        new_group[0] = True
        np.not_equal(srt[1:], srt[:-1], out=new_group[1:])
        gid = np.cumsum(new_group) - 1
        uniq: I64 = srt[new_group]
        summed = np.bincount(gid, weights=weights[order], minlength=len(uniq)).astype(
            np.float64, copy=False
        )
        if mode == "and":
            keep = np.bincount(gid, minlength=len(uniq)) == len(all_rows)
            return uniq[keep], summed[keep]
        return uniq, summed

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
        kk = _check_int("k", k, 1)
        rows, scores = self._match(query, tenant, mode)
        return _top_k(rows, scores, kk)

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
        kk = _check_int("k", k, 1)
        self._tenants.resolve(tenant)
        return [self.search(q, kk, tenant=tenant, mode=mode) for q in queries]

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
        rows, s = self._match(query, tenant, "or")
        out = np.zeros(self._n_rows, dtype=np.float64)
        out[rows] = s
        return out


def _top_k(rows: I64, scores: F64, k: int) -> tuple[I64, F64]:
    """The ``k`` highest scores, best first, ties by row (``rows`` ascending on input)."""
    if len(rows) > k:
        # Keep every row scoring at least the k-th best (ties included), then sort those.
        kth = -np.partition(-scores, k - 1)[k - 1]
        keep = scores >= kth
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]
