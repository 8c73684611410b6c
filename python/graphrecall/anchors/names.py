"""Query entity recognition: entity names and aliases found in the query text.

Three ways in, each from a source design:

* :meth:`NameIndex.recognize`: seed 003's strategy 1, "tokenize the query, generate n-grams
  (1-3 words), look up each n-gram against ``kg_entities.name``" (limit 5). Exact lookup of
  every word n-gram of the normalised query in a hash table of normalised names and
  aliases; linear in the query length.
* :meth:`NameIndex.fuzzy`: seed 004's "SQLite fuzzy match as fallback" for misspelt
  names, with rapidfuzz's ``fuzz.ratio`` between the query's n-grams and the names.
* :meth:`NameIndex.keyword`: seed 000's fallback "keyword search on entity names" when
  embedding fails: names sharing words with the query, by the share of their words found.

Seed 003's second strategy (embedding similarity >= 0.75) is the vector index's job
(:mod:`graphrecall.anchors.vectors`).

Names and queries are compared after :func:`normalise` (accents, case and punctuation
folded). Every method answers for one tenant: rows of other tenants are never returned.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from .fuzzy import FuzzyTenant, fuzzy_groups
from .names_grow import alive, by_row, entries, extended, fuzzy_tables
from .tenants import Tenants, check_int
from .tokens import token_spans, tokenize

__all__ = ["DEFAULT_STOPWORDS", "MAX_NGRAM", "NameIndex", "NameMatch", "normalise"]

I64 = npt.NDArray[np.int64]

#: The largest ``max_ngram`` accepted.
MAX_NGRAM = 8

#: Words that never match alone (a 1-word n-gram that is one of these is skipped, and
#: :meth:`NameIndex.keyword` ignores them): English articles, pronouns, auxiliaries,
#: prepositions, conjunctions, question words, and ``"s"`` (what a possessive ``'s``
#: leaves after :func:`normalise`). Words that are also common names (``may``, ``will``,
#: ``us``, ``june``) are left out on purpose. Inside a longer n-gram they match
#: as any word does ("The Who", "Bank of America").
DEFAULT_STOPWORDS: frozenset[str] = frozenset(
    """
    a an the and or but nor if then than so as of to in on at by for with from into onto
    about over under after before between through during without within upon
    is are was were be been being am do does did done has have had having
    i me my mine we our ours you your yours he him his she her hers it its they them their
    theirs this that these those there here what which who whom whose when where why how
    not no yes all any some each every other such own same too very just also only
    can could would should shall must might s t
    """.split()
)


def normalise(text: str) -> str:
    """The form names and queries are compared in: :func:`~graphrecall.anchors.tokens.tokenize`'s
    tokens joined by single spaces.

    NFKD decomposition, combining marks removed, casefold; every run of characters that
    are not letters or digits (punctuation, underscores, whitespace) becomes one space;
    no leading or trailing space. ``"Ned Stark's"`` -> ``"ned stark s"``, ``"Élodie_Roux"``
    -> ``"elodie roux"``.

    Possessives: the apostrophe splits ``'s`` off as a token ``"s"``, which is a default
    stopword, so ``"Ned Stark's sword"`` contains the n-gram ``"ned stark"`` and recognises
    *Ned Stark* with the span ``"Ned Stark"`` (the ``'s`` outside it). A name written with
    its ``'s`` (``"Ned's Bar"``) is ``"ned s bar"`` and matches the same way.

    Args:
        text: Any string.

    Returns:
        The normalised text (``""`` when it holds no letter or digit).

    Raises:
        ParameterError: ``text`` is not a string.
    """
    return " ".join(tokenize(text))


@dataclass(frozen=True)
class NameMatch:
    """An entity found in a query.

    Attributes:
        row: The entity's row (a graph's dense entity index).
        name: The entity name or alias text that matched, as given to the index.
        text: The query span that matched (``query[start:end]``).
        start: Character offset of the span in the query.
        end: End offset (exclusive).
        score: 1.0 for ``exact`` / ``alias`` matches; ``fuzz.ratio / 100`` for ``fuzzy``;
            the share of the name's words found in the query for ``keyword``.
        kind: ``"exact"`` (the entity's name), ``"alias"``, ``"fuzzy"`` or ``"keyword"``.
    """

    row: int
    name: str
    text: str
    start: int
    end: int
    score: float
    kind: Literal["exact", "alias", "fuzzy", "keyword"]


class NameIndex:
    """Entity names and aliases, normalised, for query entity recognition.

    Build once from the entity names (rows are the positions of ``names``: a graph's
    dense entity indices), their tenants and any aliases; it never changes.

    Several entities may share a name (or alias): every one is returned, in row order.
    Names longer than ``max_ngram`` words can never be recognised (seed 003 looks up
    n-grams of at most 3 words) nor fuzzily matched; :meth:`keyword` still finds them.
    ``None`` names, and names with no letter or digit, match nothing.

    Args:
        names: One name per entity row (None: no name).
        tenants: Tenant code of each row (integers; None: one tenant, code 0).
        aliases: ``(row, alias)`` pairs: other names of an entity (seed 001's aliases).
        max_ngram: Longest n-gram looked up, in words (1..8; seed 003 uses 3).
        stopwords: Words never matched alone (normalised before use); see
            :data:`DEFAULT_STOPWORDS`. Pass ``()`` to match every word.
        n_tenants: The number of tenants (codes ``0..n_tenants-1``) when some may hold no
            entity, so that querying them gives empty results instead of
            :class:`~graphrecall.errors.UnknownTenantError`.

    Raises:
        DataError: A name or alias that is not a str, an alias that is not a
            ``(row, str)`` pair or names a row outside ``names``, or bad tenant codes.
        ParameterError: ``max_ngram`` outside 1..8, or a stopword that is not a str.
    """

    def __init__(
        self,
        names: Sequence[str | None],
        tenants: npt.ArrayLike | None = None,
        *,
        aliases: Iterable[tuple[int, str]] = (),
        max_ngram: int = 3,
        stopwords: Collection[str] = DEFAULT_STOPWORDS,
        n_tenants: int | None = None,
    ):
        if isinstance(names, (str, bytes)):
            raise ParameterError("invalid parameter names: expected a sequence of names, got a str")
        self.max_ngram = check_int("max_ngram", max_ngram, 1)
        if self.max_ngram > MAX_NGRAM:
            raise ParameterError(
                f"invalid parameter max_ngram: max_ngram = {self.max_ngram} must be <= {MAX_NGRAM}"
            )
        if isinstance(stopwords, (str, bytes)):
            raise ParameterError("invalid parameter stopwords: expected a collection of words")
        stop: set[str] = set()
        for w in stopwords:
            if not isinstance(w, str):
                raise ParameterError(f"invalid parameter stopwords: {w!r} is not a str")
            stop.add(normalise(w))
        self.stopwords: frozenset[str] = frozenset(stop)
        n = len(names)
        self._n_rows = n
        self._tenants = Tenants(tenants, n, n_tenants)
        # Entries: every name (row order), then every alias (given order).
        e_row, e_text, e_alias = entries(names, aliases, 0, n)
        self._e_row = e_row
        self._e_text = e_text
        self._e_alias = e_alias
        self._e_toks: list[tuple[str, ...]] = [tuple(tokenize(t)) for t in e_text]
        rank = self._tenants.rank.tolist()
        self._e_rank: list[int] = [rank[r] for r in e_row]
        self.n_aliases = sum(e_alias)
        # Exact lookup: (tenant rank, normalised name) -> ((row, entry), ...) by row, the
        # entity's own name before an alias of the same row, one entry per row.
        table: dict[tuple[int, str], list[tuple[int, bool, int]]] = {}
        for e, toks in enumerate(self._e_toks):
            if 1 <= len(toks) <= self.max_ngram:
                table.setdefault((self._e_rank[e], " ".join(toks)), []).append(
                    (e_row[e], e_alias[e], e)
                )
        self._exact: dict[tuple[int, str], tuple[tuple[int, int], ...]] = {
            key: by_row(items) for key, items in table.items()
        }
        #: Every word of a key of ``_exact``: an n-gram holding any other word is no key
        #: (words hold no space, so a key's words are exactly its n-gram's).
        self._words: frozenset[str] = frozenset(w for _, key in table for w in key.split(" "))
        #: Keys and words added by :meth:`extended` since ``_exact`` / ``_words`` were last
        #: merged (a key here holds its whole hits and hides ``_exact``'s).
        self._exact_more: dict[tuple[int, str], tuple[tuple[int, int], ...]] = {}
        self._words_more: frozenset[str] = frozenset()
        #: This index's entries are the first ``_n_entries`` of the ``_e_*`` lists (later
        #: generations may append to the same lists; this one never reads past its own).
        self._n_entries = len(e_row)
        self._lock = threading.Lock()
        #: Per thread, inside :meth:`sharing`: (query, tenant rank) -> every match.
        self._shared = threading.local()
        self._fuzzy: dict[int, FuzzyTenant] | None = None
        self._kw: tuple[dict[tuple[int, str], I64], I64, I64] | None = None
        #: Rows no lookup returns (deleted entities, see ``names_grow.without_rows``).
        self._dead: frozenset[int] = frozenset()

    def extended(
        self,
        names: Sequence[str | None],
        tenants: npt.ArrayLike | None = None,
        *,
        aliases: Iterable[tuple[int, str]] = (),
    ) -> NameIndex:
        """A new index over this one's rows plus appended rows and aliases; this one is
        left unchanged (readers of it see no change).

        It matches exactly as ``NameIndex(old_names + names, old_tenants + tenants,
        aliases=old_aliases + aliases)`` with this index's settings does (same matches,
        order and ties), in time linear in the appended entries (see
        :func:`~graphrecall.anchors.names_grow.extended`).

        Args:
            names: The names of the appended rows (``n_rows`` onwards).
            tenants: Their tenant codes (None: code 0), among the index's known tenants.
            aliases: New ``(row, alias)`` pairs, of any row of the extended index.

        Returns:
            The extended index.

        Raises:
            DataError: As the constructor, or a tenant code the index does not know.
        """
        return extended(self, names, tenants, aliases=aliases)

    # ------------------------------------------------------------------ properties

    @property
    def n_rows(self) -> int:
        """Number of entity rows (names, including None ones)."""
        return self._n_rows

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        return (
            f"NameIndex(rows={self._n_rows}, aliases={self.n_aliases}, "
            f"tenants={len(self._tenants.known)}, max_ngram={self.max_ngram})"
        )

    # ------------------------------------------------------------------ helpers

    def _check(self, query: object, tenant: object, limit: object) -> tuple[str, int, int]:
        if not isinstance(query, str):
            raise ParameterError(
                f"invalid parameter query: expected a str, got {type(query).__name__}"
            )
        lim = check_int("limit", limit, 1)
        return query, self._tenants.resolve(tenant), lim

    def _prepare(
        self, query: object, tenant: object, limit: object
    ) -> tuple[int, int, list[str], list[tuple[int, int]]]:
        q, t, lim = self._check(query, tenant, limit)
        toks, spans = token_spans(q) if t >= 0 else ([], [])
        return t, lim, toks, spans

    def _match(
        self,
        e: int,
        query: str,
        span: tuple[int, int],
        score: float,
        kind: Literal["exact", "alias", "fuzzy", "keyword"],
    ) -> NameMatch:
        a, b = span
        return NameMatch(self._e_row[e], self._e_text[e], query[a:b], a, b, score, kind)

    # ------------------------------------------------------------------ recognize

    def recognize(
        self, query: str, *, tenant: int | None = None, limit: int = 5
    ) -> list[NameMatch]:
        """Entities whose name or alias occurs in the query as a word n-gram.

        Every 1..``max_ngram``-word n-gram of the normalised query is looked up. Matches
        rank longer n-grams first, then earlier ones (leftmost-longest); an n-gram lying
        inside a longer matched span is skipped ("Ned Stark" hides "Stark"); a 1-word
        n-gram that is a stopword never matches; each entity is returned once (at its best
        n-gram, by its name rather than an alias when both match there); entities sharing
        a name come in row order. Time is linear in the query length.

        Args:
            query: The query text.
            tenant: Tenant code (None: the index's only tenant).
            limit: Most matches returned (seed 003: 5).

        Returns:
            Matches, best first (``kind`` ``"exact"`` or ``"alias"``, score 1.0); empty for
            a query without words.

        Raises:
            ParameterError: ``query`` is not a str, ``limit`` is not a positive integer,
                or ``tenant`` is None with several tenants.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        _, t, lim = self._check(query, tenant, limit)
        shared: dict[tuple[str, int], list[NameMatch]] | None = getattr(self._shared, "hits", None)
        if shared is None:
            return self._recognize(query, t, lim)
        # Inside sharing(): every match, kept (a limit's matches are the first ones).
        got = shared.get((query, t))
        if got is None:
            got = shared[(query, t)] = self._recognize(query, t, None)
        return got[:lim]

    @contextmanager
    def sharing(self) -> Iterator[None]:
        """Within the block, this thread recognises each query once: a later
        :meth:`recognize` of the same query and tenant gets the first call's matches (how
        the router's known-entity test hands its work to the recipe it picks). Nested
        blocks share the outer one's; the matches are dropped when the outer block ends.
        """
        if getattr(self._shared, "hits", None) is not None:
            yield
            return
        self._shared.hits = {}
        try:
            yield
        finally:
            self._shared.hits = None

    def _recognize(self, query: str, t: int, lim: int | None) -> list[NameMatch]:
        """The first ``lim`` (None: every) matches of :meth:`recognize`, best first (tenant
        rank ``t``, -1 for none)."""
        toks, spans = token_spans(query) if t >= 0 else ([], [])
        n_tok = len(toks)
        out: list[NameMatch] = []
        seen: set[int] = set()
        # run[i]: how many tokens from i on are words of some name; only an n-gram of such
        # words can be a name, so the others are not looked up.
        words, words_more = self._words, self._words_more
        run = [0] * (n_tok + 1)
        for i in range(n_tok - 1, -1, -1):
            if toks[i] in words or toks[i] in words_more:
                run[i] = run[i + 1] + 1
        get, more = self._exact.get, self._exact_more
        # ends[i]: furthest end of a matched (longer) span starting at token i; covered[i]:
        # the furthest end of one starting at or before i (none yet: all 0).
        ends = [0] * n_tok
        covered = ends
        for n in range(min(self.max_ngram, max(run)), 0, -1):
            matched: list[int] = []
            for i in range(n_tok - n + 1):
                if run[i] < n or covered[i] >= i + n:
                    continue
                if n == 1:
                    if toks[i] in self.stopwords:
                        continue
                    key = toks[i]
                else:
                    key = " ".join(toks[i : i + n])
                hits = (more.get((t, key)) or get((t, key))) if more else get((t, key))
                if hits is not None and self._dead:
                    hits = tuple(h for h in hits if h[0] not in self._dead) or None
                if hits is None:
                    continue
                matched.append(i)
                span = (spans[i][0], spans[i + n - 1][1])
                for row, e in hits:
                    if row in seen:
                        continue
                    seen.add(row)
                    kind: Literal["exact", "alias"] = "alias" if self._e_alias[e] else "exact"
                    out.append(self._match(e, query, span, 1.0, kind))
                    if len(out) == lim:
                        return out
            for i in matched:
                ends[i] = max(ends[i], i + n)
            if matched:
                covered = list(accumulate(ends, max))
        return out

    def recognize_many(
        self, queries: Sequence[str], *, tenant: int | None = None, limit: int = 5
    ) -> list[list[NameMatch]]:
        """:meth:`recognize` for each query.

        Args:
            queries: The queries.
            tenant: Tenant code (None: the index's only tenant).
            limit: Most matches per query.

        Returns:
            One list of matches per query, in order.

        Raises:
            ParameterError: As :meth:`recognize`, or ``queries`` is a single str.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        if isinstance(queries, (str, bytes)):
            raise ParameterError(
                "invalid parameter queries: expected a sequence of str, got a single str"
            )
        check_int("limit", limit, 1)
        self._tenants.resolve(tenant)
        return [self.recognize(q, tenant=tenant, limit=limit) for q in queries]

    # ------------------------------------------------------------------ fuzzy

    def _fuzzy_tables(self) -> dict[int, FuzzyTenant]:
        return fuzzy_tables(self)

    def fuzzy(
        self,
        query: str,
        *,
        tenant: int | None = None,
        limit: int = 5,
        min_score: float = 85.0,
    ) -> list[NameMatch]:
        """Entities whose normalised name or alias is close to one of the query's n-grams.

        Seed 004's fuzzy fallback for misspellings ("Ned Strak" -> *Ned Stark*). Every
        1..``max_ngram``-word n-gram of the normalised query (stopwords alone excluded) is
        compared with the tenant's normalised names and aliases by ``rapidfuzz.fuzz.ratio``:
        the normalised Indel similarity ``100 * (1 - indel_distance / (len_a + len_b))``.
        ``ratio`` is chosen over ``WRatio`` because WRatio's partial and token-set parts
        score a name 90+ whenever one word of it occurs ("ned" vs "ned stark"), which is
        exact word matching, not misspelling; and ``ratio``'s length bound
        (``ratio >= s`` needs ``len_b`` within ``len_a * [s/(2-s), (2-s)/s]``) limits the
        comparisons to names of a compatible length.

        ``min_score`` 85 (the default) accepts one transposition or two edits in a
        9-letter name ("ned strak": 88.9) and one edit in a 7-letter one, and refuses any
        edit to a name of 5 letters or fewer, where a single edit already makes another
        word.

        Args:
            query: The query text.
            tenant: Tenant code (None: the index's only tenant).
            limit: Most matches returned.
            min_score: Least ``fuzz.ratio`` (0..100) accepted.

        Returns:
            Matches (``kind="fuzzy"``, ``score = ratio / 100``), best score first, then
            longer n-grams, earlier n-grams, lower rows; one per entity.

        Raises:
            ParameterError: ``query`` is not a str, ``limit`` is not a positive integer,
                ``min_score`` is not a number in [0, 100], or ``tenant`` is None with
                several tenants.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        if isinstance(min_score, bool) or not isinstance(
            min_score, (int, float, np.integer, np.floating)
        ):
            raise ParameterError(
                f"invalid parameter min_score: expected a number, got {min_score!r}"
            )
        cutoff = float(min_score)
        if not 0.0 <= cutoff <= 100.0:  # NaN fails too
            raise ParameterError(
                f"invalid parameter min_score: min_score = {min_score!r} must be in [0, 100]"
            )
        t, lim, toks, spans = self._prepare(query, tenant, limit)
        table = self._fuzzy_tables().get(t) if toks else None
        if table is None:
            return []
        # Distinct n-grams, each at its first position.
        grams: dict[str, tuple[int, int]] = {}
        for n in range(min(self.max_ngram, len(toks)), 0, -1):
            for i in range(len(toks) - n + 1):
                if n == 1 and toks[i] in self.stopwords:
                    continue
                grams.setdefault(" ".join(toks[i : i + n]), (i, n))
        cands: list[tuple[float, int, int, int, int, int]] = []
        keys = sorted(grams, key=len)
        from rapidfuzz import fuzz, process  # imported on first use: a slow import

        for a, b, lo, hi in fuzzy_groups(keys, table.lengths, cutoff / 100.0):
            scores = process.cdist(
                keys[a:b],
                table.keys[lo:hi],
                scorer=fuzz.ratio,
                processor=None,
                score_cutoff=cutoff,
                dtype=np.float64,
                workers=1,
            )
            for gi, j in zip(*np.nonzero(scores >= cutoff), strict=True):
                i, n = grams[keys[a + gi]]
                score = float(scores[gi, j])
                for row, e in table.hits[lo + int(j)]:
                    if row not in self._dead:
                        cands.append((-score, -n, i, row, e, i + n - 1))
        cands.sort()
        out: list[NameMatch] = []
        seen: set[int] = set()
        for neg, _, i, row, e, last in cands:
            if row in seen:
                continue
            seen.add(row)
            out.append(self._match(e, query, (spans[i][0], spans[last][1]), -neg / 100.0, "fuzzy"))
            if len(out) == lim:
                break
        return out

    # ------------------------------------------------------------------ keyword

    def _keyword_tables(self) -> tuple[dict[tuple[int, str], I64], I64, I64]:
        if self._kw is None:
            with self._lock:
                if self._kw is None:
                    post: dict[tuple[int, str], list[int]] = {}
                    n_e = self._n_entries
                    size = np.zeros(n_e, dtype=np.int64)
                    for e, toks in enumerate(self._e_toks[:n_e]):
                        words = {w for w in toks if w not in self.stopwords}
                        size[e] = len(words)
                        for w in words:
                            post.setdefault((self._e_rank[e], w), []).append(e)
                    self._kw = (
                        {k: np.asarray(v, dtype=np.int64) for k, v in post.items()},
                        size,
                        np.asarray(self._e_row[:n_e], dtype=np.int64),
                    )
        return self._kw

    def keyword(self, query: str, *, tenant: int | None = None, limit: int = 3) -> list[NameMatch]:
        """Entities whose name shares words with the query: seed 000's fallback "keyword
        search on entity names" when embedding fails.

        A name (or alias) scores ``matched / words``: of its distinct non-stopword
        normalised words, the share that occur among the query's non-stopword words.
        "Bank of America" scores 1.0 for "america's bank" and 0.5 for "bank holiday".
        Each entity counts once, at its best name or alias.

        Args:
            query: The query text.
            tenant: Tenant code (None: the index's only tenant).
            limit: Most matches returned (seed 000 anchors on the top 3 entities).

        Returns:
            Matches (``kind="keyword"``), best score first, ties by row; ``text`` / ``start``
            / ``end`` cover the query from the first to the last word the name shares with
            it.

        Raises:
            ParameterError: ``query`` is not a str, ``limit`` is not a positive integer, or
                ``tenant`` is None with several tenants.
            UnknownTenantError: ``tenant`` is not a tenant of the index.
        """
        t, lim, toks, spans = self._prepare(query, tenant, limit)
        words = {w for w in toks if w not in self.stopwords}
        if not words:
            return []
        post, size, e_row = self._keyword_tables()
        found = [post[(t, w)] for w in words if (t, w) in post]
        if not found:
            return []
        entries, counts = np.unique(np.concatenate(found), return_counts=True)
        if self._dead:
            entries, counts = alive(entries, counts, e_row, self._dead)
        score = counts / size[entries]
        rows = e_row[entries]
        order = np.lexsort((entries, rows, -score))
        out: list[NameMatch] = []
        seen: set[int] = set()
        for j in order.tolist():
            row = int(rows[j])
            if row in seen:
                continue
            seen.add(row)
            e = int(entries[j])
            mine = set(self._e_toks[e])
            pos = [i for i, w in enumerate(toks) if w in mine and w in words]
            span = (spans[pos[0]][0], spans[pos[-1]][1])
            out.append(self._match(e, query, span, float(score[j]), "keyword"))
            if len(out) == lim:
                break
        return out
