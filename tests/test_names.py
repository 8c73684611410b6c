"""NameIndex: n-gram recognition rules, fuzzy and keyword fallbacks, tenants, errors.

The property tests compare each method with a slow, obviously-correct reference that
applies the documented rules literally (every n-gram, every name, no indexes).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import PROPERTY
from graphrecall.anchors.names import DEFAULT_STOPWORDS, NameIndex, NameMatch, normalise
from graphrecall.errors import DataError, ParameterError, UnknownTenantError
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz import fuzz

STARK = [
    "Ned Stark",  # 0
    "Stark",  # 1
    "Winterfell",  # 2
    "Jon Snow",  # 3
    "Arya Stark",  # 4
    None,  # 5
    "Élodie Roux",  # 6
    "The Who",  # 7
    "The",  # 8
    "Ned Stark",  # 9: shares row 0's name
    "House of the Undying Ones",  # 10: 5 words
    "Bank of America",  # 11
]


def stark(**kw: object) -> NameIndex:
    return NameIndex(STARK, aliases=[(3, "Lord Snow"), (0, "Eddard Stark"), (4, "arya")], **kw)  # type: ignore[arg-type]


def rows(matches: list[NameMatch]) -> list[int]:
    return [m.row for m in matches]


# --------------------------------------------------------------------------- normalise


def test_normalise() -> None:
    assert normalise("Ned Stark's") == "ned stark s"
    assert normalise("  Élodie_Roux\t\n") == "elodie roux"
    assert normalise("O'Brien-Smith, Jr.") == "o brien smith jr"
    assert normalise("Cafe\u0301 ﬁne ＡＢＣ") == "cafe fine abc"
    assert normalise("") == "" and normalise(" ... ") == ""
    with pytest.raises(ParameterError):
        normalise(3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- recognize


def test_longest_first_and_skip_inside() -> None:
    got = stark().recognize("What did Ned Stark's son do at Winterfell?", limit=10)
    # "Ned Stark" (2 words, rows 0 and 9) hides "Stark" inside it; the possessive stays out.
    assert [(m.row, m.text, m.kind, m.score) for m in got] == [
        (0, "Ned Stark", "exact", 1.0),
        (9, "Ned Stark", "exact", 1.0),
        (2, "Winterfell", "exact", 1.0),
    ]
    q = "What did Ned Stark's son do at Winterfell?"
    assert q[got[0].start : got[0].end] == "Ned Stark"
    assert (got[2].start, got[2].end) == (31, 41)


def test_rank_longer_then_earlier_and_limit() -> None:
    idx = stark()
    got = idx.recognize("stark, then Arya Stark and Jon Snow", limit=10)
    # 2-grams first (left to right), then the 1-gram "stark" outside them.
    assert [(m.row, m.text) for m in got] == [(4, "Arya Stark"), (3, "Jon Snow"), (1, "stark")]
    assert rows(idx.recognize("stark, then Arya Stark and Jon Snow", limit=2)) == [4, 3]
    # An entity is returned once, at its best n-gram.
    assert rows(idx.recognize("arya met Arya Stark", limit=10)) == [4]


def test_overlapping_spans_are_both_kept() -> None:
    idx = NameIndex(["new york", "york city", "york"])
    got = idx.recognize("New York City")
    assert [(m.row, m.text) for m in got] == [(0, "New York"), (1, "York City")]


def test_stopwords() -> None:
    idx = stark()
    # "The" alone is a stopword: never matched; "The Who" is a 2-gram and matches.
    assert rows(idx.recognize("the band")) == []
    assert rows(idx.recognize("I saw the who live")) == [7]
    assert "the" in DEFAULT_STOPWORDS and "s" in DEFAULT_STOPWORDS
    assert rows(stark(stopwords=()).recognize("the band")) == [8]
    assert rows(stark(stopwords=["BAND", "Winterfell"]).recognize("winterfell")) == []


def test_aliases_and_shared_names() -> None:
    idx = stark()
    got = idx.recognize("Lord Snow and Eddard Stark")
    # "Stark" lies inside the matched alias span "Eddard Stark": skipped.
    assert [(m.row, m.name, m.kind) for m in got] == [
        (3, "Lord Snow", "alias"),
        (0, "Eddard Stark", "alias"),
    ]
    # An alias equal to the entity's own name: reported as the name.
    idx = NameIndex(["Arya"], aliases=[(0, "ARYA")])
    assert [(m.name, m.kind) for m in idx.recognize("arya")] == [("Arya", "exact")]
    # Two entities, one name: both, in row order.
    idx = NameIndex(["Paris", "Berlin", "Paris"], aliases=[(1, "paris")])
    assert rows(idx.recognize("Paris in spring")) == [0, 1, 2]


def test_unicode_accents_and_offsets() -> None:
    idx = stark()
    q = "Where is ÉLODIE   roux?"
    (m,) = idx.recognize(q)
    assert (m.row, m.text, m.name) == (6, "ÉLODIE   roux", "Élodie Roux")
    q = "Where is Elodie\u0301 Rou\u0308x\u0301!"  # combining marks follow the words
    (m,) = idx.recognize(q)
    assert m.text == "Elodie\u0301 Rou\u0308x\u0301"
    assert q[m.start : m.end] == m.text
    idx = NameIndex(["ﬁre nation", "Straße"])
    assert [m.text for m in idx.recognize("The Fire Nation and the STRASSE")] == [
        "Fire Nation",
        "STRASSE",
    ]


def test_names_longer_than_max_ngram() -> None:
    q = "the house of the undying ones"
    assert 10 not in rows(stark().recognize(q))
    assert rows(stark(max_ngram=5).recognize(q)) == [10]
    assert rows(stark(max_ngram=8).recognize(q)) == [10]


def test_empty_queries_and_index() -> None:
    idx = stark()
    assert idx.recognize("") == [] and idx.recognize("  \t ") == []
    assert idx.recognize("?!") == []
    assert idx.fuzzy("") == [] and idx.keyword(" ") == []
    empty = NameIndex([])
    assert empty.recognize("Ned Stark") == []
    assert empty.fuzzy("Ned Stark") == [] and empty.keyword("Ned Stark") == []
    assert len(empty) == 0
    assert idx.recognize_many(["Ned Stark", "", "Winterfell"]) == [
        idx.recognize("Ned Stark"),
        [],
        idx.recognize("Winterfell"),
    ]
    assert repr(idx).startswith("NameIndex(rows=12")


# --------------------------------------------------------------------------- fuzzy


def test_fuzzy_misspellings() -> None:
    idx = stark()
    (m,) = idx.fuzzy("where is Ned Strak now?", limit=1)
    assert (m.row, m.name, m.text, m.kind) == (0, "Ned Stark", "Ned Strak", "fuzzy")
    assert m.score == pytest.approx(fuzz.ratio("ned strak", "ned stark") / 100)
    got = idx.fuzzy("where is Ned Strak now?")
    assert rows(got)[:2] == [0, 9]
    assert rows(idx.fuzzy("winterfel")) == [2]
    assert rows(idx.fuzzy("Lord Snoww")) == [3]
    assert idx.fuzzy("Lord Snoww")[0].kind == "fuzzy"
    # Exact names score 1.0; min_score 100 keeps only them.
    assert [m.score for m in idx.fuzzy("Winterfell", min_score=100)] == [1.0]
    assert idx.fuzzy("winterfel", min_score=100) == []
    # Stopwords alone are not compared.
    assert idx.fuzzy("the") == []


def test_fuzzy_ignores_other_tenants() -> None:
    idx = NameIndex(["Ned Stark", "Ned Stark", "Jon Snow"], [0, 1, 1])
    assert rows(idx.fuzzy("ned strak", tenant=0)) == [0]
    assert rows(idx.fuzzy("ned strak", tenant=1)) == [1]
    assert rows(idx.fuzzy("jon snw", tenant=0, min_score=0)) == [0]


# --------------------------------------------------------------------------- keyword


def test_keyword() -> None:
    idx = stark()
    got = idx.keyword("america's bank")
    assert [(m.row, m.score, m.text, m.kind) for m in got] == [
        (11, 1.0, "america's bank", "keyword")
    ]
    got = idx.keyword("stark snow", limit=10)
    assert [(m.row, m.score) for m in got] == [(1, 1.0), (0, 0.5), (3, 0.5), (4, 0.5), (9, 0.5)]
    assert idx.keyword("stark snow")[1].name in ("Ned Stark", "Eddard Stark")
    assert rows(idx.keyword("the of")) == []
    assert [m.score for m in idx.keyword("bank holiday")] == [0.5]


# --------------------------------------------------------------------------- properties

VOCAB = ["ned", "Stark", "jon", "snow", "the", "of", "Ärya", "arya", "winter", "fell", "x"]
names_st = st.lists(
    st.one_of(st.none(), st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4).map(" ".join)),
    max_size=14,
)
query_st = st.lists(st.sampled_from([*VOCAB, "snw", "starks", "'s", ",", "wintr"]), max_size=9)


@st.composite
def index_data(draw: st.DrawFn) -> tuple[list[str | None], list[int], list[tuple[int, str]]]:
    names = draw(names_st)
    tenants = draw(st.lists(st.integers(0, 2), min_size=len(names), max_size=len(names)))
    aliases: list[tuple[int, str]] = []
    if names:
        aliases = draw(
            st.lists(
                st.tuples(
                    st.integers(0, len(names) - 1),
                    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(" ".join),
                ),
                max_size=6,
            )
        )
    return names, tenants, aliases


def entries(
    names: list[str | None], tenants: list[int], aliases: list[tuple[int, str]], tenant: int
) -> list[tuple[int, int, str, bool]]:
    """(entry order, row, text, is_alias) of one tenant: names first, then aliases."""
    all_e = [(r, n, False) for r, n in enumerate(names) if n is not None] + [
        (r, a, True) for r, a in aliases
    ]
    return [(e, r, t, al) for e, (r, t, al) in enumerate(all_e) if tenants[r] == tenant]


def ref_recognize(
    ents: list[tuple[int, int, str, bool]], query: str, max_ngram: int, limit: int
) -> list[tuple[int, str, str]]:
    toks = normalise(query).split()
    spans: list[tuple[int, int]] = []
    out: list[tuple[int, str, str]] = []
    for n in range(max_ngram, 0, -1):
        matched = []
        for i in range(len(toks) - n + 1):
            if any(a <= i and i + n <= b and b - a > n for a, b in spans):
                continue
            if n == 1 and toks[i] in DEFAULT_STOPWORDS:
                continue
            key = " ".join(toks[i : i + n])
            hits = sorted(
                (r, al, e, t) for e, r, t, al in ents if normalise(t) == key and normalise(t)
            )
            if not hits:
                continue
            matched.append((i, i + n))
            for r, al, _, t in hits:
                if r not in {o[0] for o in out}:
                    out.append((r, t, "alias" if al else "exact"))
        spans += matched
    return out[:limit]


@PROPERTY
@given(data=index_data(), query=query_st, max_ngram=st.integers(1, 4), limit=st.integers(1, 6))
def test_recognize_matches_reference(
    data: tuple[list[str | None], list[int], list[tuple[int, str]]],
    query: list[str],
    max_ngram: int,
    limit: int,
) -> None:
    names, tenants, aliases = data
    q = " ".join(query)
    idx = NameIndex(names, tenants, aliases=aliases, max_ngram=max_ngram, n_tenants=3)
    for t in range(3):
        got = idx.recognize(q, tenant=t, limit=limit)
        ref = ref_recognize(entries(names, tenants, aliases, t), q, max_ngram, limit)
        assert [(m.row, m.name, m.kind) for m in got] == ref
        for m in got:
            assert tenants[m.row] == t  # tenant isolation
            assert q[m.start : m.end] == m.text
            assert normalise(m.text) == normalise(m.name)
        assert idx.recognize_many([q, q], tenant=t, limit=limit) == [got, got]


@PROPERTY
@given(
    data=index_data(),
    query=query_st,
    min_score=st.sampled_from([0.0, 50.0, 70.0, 85.0, 100.0]),
    limit=st.integers(1, 6),
)
def test_fuzzy_matches_reference(
    data: tuple[list[str | None], list[int], list[tuple[int, str]]],
    query: list[str],
    min_score: float,
    limit: int,
) -> None:
    names, tenants, aliases = data
    q = " ".join(query)
    idx = NameIndex(names, tenants, aliases=aliases, n_tenants=3)
    toks = normalise(q).split()
    grams: dict[str, tuple[int, int]] = {}
    for n in range(min(3, len(toks)), 0, -1):
        for i in range(len(toks) - n + 1):
            if not (n == 1 and toks[i] in DEFAULT_STOPWORDS):
                grams.setdefault(" ".join(toks[i : i + n]), (i, n))
    for t in range(3):
        cands = []
        for e, r, text, _ in entries(names, tenants, aliases, t):
            if not normalise(text):
                continue
            for g, (i, n) in grams.items():
                s = fuzz.ratio(g, normalise(text))
                if s >= min_score:
                    cands.append((-s, -n, i, r, e, text))
        cands.sort()
        ref: list[tuple[int, str, float]] = []
        for neg, _, _, r, _, text in cands:
            if r not in {x[0] for x in ref}:
                ref.append((r, text, -neg / 100))
        got = idx.fuzzy(q, tenant=t, limit=limit, min_score=min_score)
        assert [(m.row, m.name) for m in got] == [(r, n) for r, n, _ in ref[:limit]]
        assert [m.score for m in got] == pytest.approx([s for _, _, s in ref[:limit]])
        for m in got:
            assert tenants[m.row] == t and q[m.start : m.end] == m.text


@PROPERTY
@given(data=index_data(), query=query_st, limit=st.integers(1, 6))
def test_keyword_matches_reference(
    data: tuple[list[str | None], list[int], list[tuple[int, str]]],
    query: list[str],
    limit: int,
) -> None:
    names, tenants, aliases = data
    q = " ".join(query)
    idx = NameIndex(names, tenants, aliases=aliases, n_tenants=3)
    qwords = set(normalise(q).split()) - DEFAULT_STOPWORDS
    for t in range(3):
        best: dict[int, tuple[float, int, str]] = {}
        for e, r, text, _ in entries(names, tenants, aliases, t):
            words = set(normalise(text).split()) - DEFAULT_STOPWORDS
            if not words or not words & qwords:
                continue
            s = len(words & qwords) / len(words)
            if r not in best or (-s, e) < (-best[r][0], best[r][1]):
                best[r] = (s, e, text)
        ref = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:limit]
        got = idx.keyword(q, tenant=t, limit=limit)
        assert [(m.row, m.name) for m in got] == [(r, v[2]) for r, v in ref]
        assert [m.score for m in got] == pytest.approx([v[0] for _, v in ref])
        for m in got:
            assert tenants[m.row] == t and q[m.start : m.end] == m.text


# --------------------------------------------------------------------------- tenants, errors


def test_tenants() -> None:
    idx = NameIndex(["Ned Stark", "Ned Stark", "Jon Snow"], np.array([4, 7, 7], np.uint32))
    with pytest.raises(ParameterError, match="tenant"):
        idx.recognize("Ned Stark")
    with pytest.raises(UnknownTenantError, match="5"):
        idx.recognize("Ned Stark", tenant=5)
    with pytest.raises(UnknownTenantError):
        idx.fuzzy("Ned Stark", tenant=5)
    with pytest.raises(UnknownTenantError):
        idx.keyword("Ned Stark", tenant=5)
    with pytest.raises(ParameterError, match="tenant"):
        idx.recognize("Ned Stark", tenant="4")  # type: ignore[arg-type]
    assert rows(idx.recognize("Ned Stark and Jon Snow", tenant=4)) == [0]
    assert rows(idx.recognize("Ned Stark and Jon Snow", tenant=np.int64(7))) == [1, 2]
    assert rows(idx.keyword("stark snow", tenant=4)) == [0]
    idx = NameIndex(["a"], [2], n_tenants=3)
    assert idx.recognize("a", tenant=0) == []
    assert idx.fuzzy("a", tenant=1) == [] and idx.keyword("a", tenant=1) == []


def test_errors() -> None:
    idx = stark()
    for bad in (None, 3, b"ned"):
        with pytest.raises(ParameterError, match="query"):
            idx.recognize(bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError, match="query"):
            idx.fuzzy(bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError, match="query"):
            idx.keyword(bad)  # type: ignore[arg-type]
    for lim in (0, -2, 1.0, True):
        with pytest.raises(ParameterError, match="limit"):
            idx.recognize("ned", limit=lim)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="queries"):
        idx.recognize_many("Ned Stark")
    with pytest.raises(ParameterError, match="limit"):
        idx.recognize_many(["Ned Stark"], limit=0)
    for ms in (-1.0, 100.5, math.nan, "85"):
        with pytest.raises(ParameterError, match="min_score"):
            idx.fuzzy("ned", min_score=ms)  # type: ignore[arg-type]
    for mx in (0, 9, 2.0):
        with pytest.raises(ParameterError, match="max_ngram"):
            NameIndex(["a"], max_ngram=mx)  # type: ignore[arg-type]
    with pytest.raises(DataError, match="row 1"):
        NameIndex(["a", 2])  # type: ignore[list-item]
    with pytest.raises(DataError, match="item 0"):
        NameIndex(["a"], aliases=[(1, "b")])
    with pytest.raises(DataError, match="item 1"):
        NameIndex(["a"], aliases=[(0, "b"), (0, None)])  # type: ignore[list-item]
    with pytest.raises(DataError, match="item 0"):
        NameIndex(["a"], aliases=["ab"])  # type: ignore[list-item]
    with pytest.raises(DataError, match="tenants"):
        NameIndex(["a", "b"], [0, 1, 2])
    with pytest.raises(ParameterError, match="stopwords"):
        NameIndex(["a"], stopwords=[1])  # type: ignore[list-item]
    with pytest.raises(ParameterError, match="names"):
        NameIndex("Ned Stark")
