"""Growing a :class:`~graphrecall.anchors.names.NameIndex` by appended rows and aliases
(what an index update after appends does), and the entry helpers the build shares."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError
from .fuzzy import FuzzyTenant
from .tokens import tokenize

if TYPE_CHECKING:
    from .names import NameIndex

I64 = npt.NDArray[np.int64]


def extended(
    index: NameIndex,
    names: Sequence[str | None],
    tenants: npt.ArrayLike | None = None,
    *,
    aliases: Iterable[tuple[int, str]] = (),
) -> NameIndex:
    """A new index over ``index``'s rows plus appended rows and aliases; ``index`` is
    left unchanged (readers of it see no change).

    It matches exactly as ``NameIndex(old_names + names, old_tenants + tenants,
    aliases=old_aliases + aliases)`` with ``index``'s settings does (same matches,
    order and ties), in time linear in the appended entries: the entry lists are shared
    (appended to; each generation reads its own prefix), new and changed lookup keys go
    to a small table beside the shared one (merged into it once it grows past an
    eighth of it), and the fuzzy and keyword tables, when built, are copied per
    tenant touched and extended. Entries are numbered as that index numbers them up to
    the order within a row, which is all a tie-break reads (a row's name, then its
    aliases in order).

    Arguments, result and errors: as :meth:`NameIndex.extended`.
    """
    if isinstance(names, (str, bytes)):
        raise ParameterError("invalid parameter names: expected a sequence of names, got a str")
    n_old = index._n_rows
    n = n_old + len(names)
    known = index._tenants.known
    codes = (
        np.zeros(len(names), dtype=np.int64)
        if tenants is None
        else np.asarray(tenants).astype(np.int64).reshape(-1)
    )
    if len(codes) != len(names):
        raise DataError(
            f"tenants: expected {len(names)} tenant codes (one per row), got {len(codes)}"
        )
    new_rank = np.searchsorted(known, codes).astype(np.int64)
    bad = np.flatnonzero((new_rank >= len(known)) | (known.take(new_rank, mode="clip") != codes))
    if len(bad):
        raise DataError(
            f"tenants: row {n_old + int(bad[0])} has tenant code {int(codes[bad[0]])}, "
            "not a tenant of the index"
        )
    e_row, e_text, e_alias = entries(names, aliases, n_old, n)
    out = object.__new__(type(index))
    out.max_ngram = index.max_ngram
    out.stopwords = index.stopwords
    out._n_rows = n
    out._tenants = index._tenants.extended(codes, new_rank)
    rank = out._tenants.rank
    e0 = index._n_entries
    toks_new = [tuple(tokenize(t)) for t in e_text]
    rank_new = rank[e_row].tolist() if e_row else []
    lists = (index._e_row, index._e_text, index._e_alias, index._e_toks, index._e_rank)
    with index._lock:
        # The entry lists are shared and appended to while no other generation has
        # appended to them (then each generation reads only its own prefix); else copied.
        if len(index._e_row) != e0:
            lists = tuple(v[:e0] for v in lists)  # type: ignore[assignment]
        for v, more in zip(lists, (e_row, e_text, e_alias, toks_new, rank_new), strict=True):
            v.extend(more)  # type: ignore[attr-defined]
    out._e_row, out._e_text, out._e_alias, out._e_toks, out._e_rank = lists
    out._n_entries = e0 + len(e_row)
    out.n_aliases = index.n_aliases + sum(e_alias)
    added: dict[tuple[int, str], list[tuple[int, bool, int]]] = {}
    for i, toks in enumerate(toks_new):
        if 1 <= len(toks) <= index.max_ngram:
            added.setdefault((rank_new[i], " ".join(toks)), []).append(
                (e_row[i], e_alias[i], e0 + i)
            )
    more = dict(index._exact_more)
    for key, items in added.items():
        had = more.get(key) or index._exact.get(key, ())
        more[key] = by_row([(r, out._e_alias[e], e) for r, e in had] + items)
    new_words = {w for _, key in added for w in key.split(" ")}
    new_words -= index._words
    words_more = index._words_more | new_words if new_words else index._words_more
    if len(more) > max(4096, len(index._exact) // 8):  # merge: amortised O(1) per key
        out._exact, out._exact_more = {**index._exact, **more}, {}
        out._words, out._words_more = index._words | words_more, frozenset()
    else:
        out._exact, out._exact_more = index._exact, more
        out._words, out._words_more = index._words, words_more
    out._lock = threading.Lock()
    out._shared = threading.local()
    out._fuzzy = None
    out._kw = None
    out._dead = index._dead
    fuzzy, kw = index._fuzzy, index._kw
    if fuzzy is not None:
        out._fuzzy = fuzzy_extended(fuzzy, toks_new, rank_new, e_row, out._e_alias, e0)
    if kw is not None:
        out._kw = keyword_extended(kw, toks_new, rank_new, e_row, e0, index.stopwords)
    return out


def by_row(items: list[tuple[int, bool, int]]) -> tuple[tuple[int, int], ...]:
    """``(row, is_alias, entry)`` items as ``(row, entry)`` pairs by row, one per row (the
    entity's own name first, then the earliest alias)."""
    out: list[tuple[int, int]] = []
    last = -1
    for row, _, e in sorted(items):
        if row != last:
            out.append((row, e))
            last = row
    return tuple(out)


def entries(
    names: Sequence[str | None], aliases: Iterable[tuple[int, str]], first: int, n: int
) -> tuple[list[int], list[str], list[bool]]:
    """Checked ``(row, text, is_alias)`` entries: the names of rows ``first..`` (None
    skipped), then the aliases in the given order (rows within ``0..n-1``)."""
    e_row: list[int] = []
    e_text: list[str] = []
    e_alias: list[bool] = []
    for row, name in enumerate(names, first):
        if name is None:
            continue
        if not isinstance(name, str):
            raise DataError(f"names: row {row} is a {type(name).__name__}, expected str or None")
        e_row.append(row)
        e_text.append(name)
        e_alias.append(False)
    for i, pair in enumerate(aliases):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or isinstance(pair[0], bool)
            or not isinstance(pair[0], (int, np.integer))
        ):
            raise DataError(f"aliases: item {i} is {pair!r}, expected a (row, alias) pair")
        row, alias = int(pair[0]), pair[1]
        if not 0 <= row < n:
            raise DataError(f"aliases: item {i} names row {row}, outside 0..{n - 1}")
        if not isinstance(alias, str):
            raise DataError(
                f"aliases: item {i} (row {row}) has a {type(alias).__name__} alias, expected str"
            )
        e_row.append(row)
        e_text.append(alias)
        e_alias.append(True)
    return e_row, e_text, e_alias


def fuzzy_extended(
    tables: dict[int, FuzzyTenant],
    toks: list[tuple[str, ...]],
    ranks: list[int],
    rows: list[int],
    alias: list[bool],
    e0: int,
) -> dict[int, FuzzyTenant]:
    """The fuzzy tables with entries ``e0..`` added (copies of the tenants they touch;
    ``alias`` covers every entry).

    A new key goes in after the keys of its length; a key a tenant already holds keeps
    its hits and the new entries are merged in by row, so every key's hits are those a
    fresh build gives (the order of keys of one length is not read: every candidate is
    sorted before use)."""
    per: dict[int, dict[str, list[tuple[int, bool, int]]]] = {}
    for i, tk in enumerate(toks):
        if tk:
            per.setdefault(ranks[i], {}).setdefault(" ".join(tk), []).append(
                (rows[i], alias[e0 + i], e0 + i)
            )
    out = dict(tables)
    for t, d in per.items():
        old = out.get(t)
        keys = [] if old is None else list(old.keys)
        hits = [] if old is None else list(old.hits)
        lengths = np.zeros(0, np.int64) if old is None else old.lengths
        where = {k: j for j, k in enumerate(keys) if k in d} if keys else {}
        fresh: list[str] = []
        for k, items in d.items():
            j = where.get(k)
            if j is None:
                fresh.append(k)
            else:
                hits[j] = by_row([(r, alias[e], e) for r, e in hits[j]] + items)
        for k in sorted(fresh, key=len):
            at = int(np.searchsorted(lengths, len(k), "right"))
            keys.insert(at, k)
            hits.insert(at, by_row(d[k]))
            lengths = np.insert(lengths, at, len(k))
        out[t] = FuzzyTenant(keys, lengths, hits)
    return out


def keyword_extended(
    kw: tuple[dict[tuple[int, str], I64], I64, I64],
    toks: list[tuple[str, ...]],
    ranks: list[int],
    rows: list[int],
    e0: int,
    stopwords: frozenset[str],
) -> tuple[dict[tuple[int, str], I64], I64, I64]:
    """The keyword tables with entries ``e0..`` added (their postings appended: entries
    ascend within each posting list, as a fresh build's)."""
    post_old, size_old, row_old = kw
    add: dict[tuple[int, str], list[int]] = {}
    size = np.zeros(len(toks), dtype=np.int64)
    for i, tk in enumerate(toks):
        words = {w for w in tk if w not in stopwords}
        size[i] = len(words)
        for w in words:
            add.setdefault((ranks[i], w), []).append(e0 + i)
    post = dict(post_old)
    for key, es in add.items():
        got = np.asarray(es, dtype=np.int64)
        had = post.get(key)
        post[key] = got if had is None else np.concatenate([had, got])
    return (
        post,
        np.concatenate([size_old, size]),
        np.concatenate([row_old, np.asarray(rows, dtype=np.int64)]),
    )


def without_rows(index: NameIndex, rows: Iterable[int]) -> NameIndex:
    """A new index that matches as ``index`` built without the entity rows ``rows`` (what
    a fresh build of the graph without those entities finds, rows numbered as before);
    ``index`` is left unchanged. No match score reads another entry, so dropping a row's
    entries from every answer is exactly that build's answer: the rows join a set each
    lookup skips, in time linear in ``rows``."""
    dead = index._dead.union(int(r) for r in rows)
    if dead == index._dead:
        return index
    out = object.__new__(type(index))
    out.__dict__.update(index.__dict__)
    out._lock = threading.Lock()
    out._shared = threading.local()
    out._dead = frozenset(dead)
    return out


def alive(entries: I64, counts: I64, e_row: I64, dead: frozenset[int]) -> tuple[I64, I64]:
    """The keyword candidates (``entries`` with their ``counts``) whose rows are not in
    ``dead``."""
    keep = np.fromiter((r not in dead for r in e_row[entries].tolist()), bool, len(entries))
    return entries[keep], counts[keep]


def fuzzy_tables(index: NameIndex) -> dict[int, FuzzyTenant]:
    """``index``'s fuzzy lookup tables per tenant rank (normalised names and aliases by
    length, with their hits by row), built on first use and kept."""
    if index._fuzzy is None:
        with index._lock:
            if index._fuzzy is None:
                per: dict[int, dict[str, list[tuple[int, bool, int]]]] = {}
                for e, toks in enumerate(index._e_toks[: index._n_entries]):
                    if toks:
                        per.setdefault(index._e_rank[e], {}).setdefault(" ".join(toks), []).append(
                            (index._e_row[e], index._e_alias[e], e)
                        )
                tables: dict[int, FuzzyTenant] = {}
                for t, d in per.items():
                    keys = sorted(d, key=len)
                    tables[t] = FuzzyTenant(
                        keys,
                        np.fromiter(map(len, keys), dtype=np.int64, count=len(keys)),
                        [by_row(d[k]) for k in keys],
                    )
                index._fuzzy = tables
    return index._fuzzy
