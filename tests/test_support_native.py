"""The supporting-chunk walk (``_core.supporting_chunks``, one native call per batch)
against its pure-Python reference: order, ties by chunk row, each chunk once per query,
scores and mention counts, on random mention tables."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY
from graphrecall import _core
from graphrecall.errors import DataError, ParameterError
from graphrecall.index.columns import MentionLinks
from graphrecall.recipes.support import supporting_chunks, supporting_chunks_batch
from hypothesis import given
from hypothesis import strategies as st


def reference(
    index: Any, facts: list[int], scores: list[float], k: int
) -> tuple[list[int], list[float], list[int]]:
    """For each fact in rank order, the chunks mentioning both its subject and its object
    (else its subject), most mentions first, ties by chunk row; each chunk once, at its
    best-ranked fact, with that fact's score; ``k`` at most."""
    m = index.mentions
    rows: list[int] = []
    out_scores: list[float] = []
    counts: list[int] = []
    seen: set[int] = set()
    if k <= 0 or not facts:
        return rows, out_scores, counts
    offsets, chunks, mentions = m.entity_offsets, m.entity_chunks, m.entity_counts
    for f, s in zip(facts, scores, strict=True):
        s_ent, o = int(index.fact_subject[f]), int(index.fact_object[f])
        a, b = offsets[s_ent : s_ent + 2].tolist()
        if a == b:
            continue
        cs = chunks[a:b].tolist()
        cn = mentions[a:b].tolist()
        pairs = [(-n, c) for c, n in zip(cs, cn, strict=True)]
        if o >= 0:
            oa, ob = offsets[o : o + 2].tolist()
            both = set(chunks[oa:ob].tolist()).intersection(cs)
            if both:
                pairs = [(-n, c) for c, n in zip(cs, cn, strict=True) if c in both]
        pairs.sort()
        for neg, c in pairs:
            if c not in seen:
                seen.add(c)
                rows.append(c)
                out_scores.append(float(s))
                counts.append(-neg)
                if len(rows) >= k:
                    return rows, out_scores, counts
    return rows, out_scores, counts


@st.composite
def tables(draw: st.DrawFn) -> tuple[Any, list[list[int]], list[list[float]], int]:
    """A fake index (mention CSR, fact ends), queries' fact rows and scores, and ``k``."""
    n_ent = draw(st.integers(1, 8))
    n_chunks = draw(st.integers(1, 10))
    mention = st.tuples(st.integers(0, n_chunks - 1), st.integers(0, n_ent - 1), st.integers(0, 4))
    rows = draw(st.lists(mention, max_size=30))
    arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    links = MentionLinks.build(arr[:, 0], arr[:, 1], arr[:, 2], n_chunks, n_ent)
    if draw(st.booleans()):
        # Each entity's slots in any order: the walk must not rely on the build's order.
        perm = np.arange(len(arr))
        eo = links.entity_offsets.tolist()
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        for e in range(n_ent):
            rng.shuffle(perm[eo[e] : eo[e + 1]])
        links = MentionLinks(
            links.chunk_offsets,
            links.chunk_entities,
            links.chunk_counts,
            links.entity_offsets,
            links.entity_chunks[perm],
            links.entity_counts[perm],
        )
    n_facts = draw(st.integers(1, 10))
    subject = draw(st.lists(st.integers(0, n_ent - 1), min_size=n_facts, max_size=n_facts))
    obj = draw(st.lists(st.integers(-1, n_ent - 1), min_size=n_facts, max_size=n_facts))
    index = SimpleNamespace(
        mentions=links,
        fact_subject=np.asarray(subject, dtype=np.int64),
        fact_object=np.asarray(obj, dtype=np.int64),
    )
    score = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5]) | st.floats(allow_nan=False)
    queries = draw(st.lists(st.lists(st.integers(0, n_facts - 1), max_size=8), max_size=4))
    scores = [draw(st.lists(score, min_size=len(q), max_size=len(q))) for q in queries]
    return index, queries, scores, draw(st.integers(0, 12))


def bits(values: list[float]) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


@PROPERTY
@given(tables())
def test_batch_matches_the_reference(case: tuple[Any, Any, Any, int]) -> None:
    index, queries, scores, k = case
    flat = [f for q in queries for f in q]
    flat_scores = [s for q in scores for s in q]
    offsets = np.cumsum([0, *map(len, queries)])
    got = supporting_chunks_batch(index, np.asarray(flat, dtype=np.int64), flat_scores, offsets, k)
    assert got.offsets.dtype == np.uintp
    assert len(got.offsets) == len(queries) + 1
    for q, (facts, sc) in enumerate(zip(queries, scores, strict=True)):
        a, b = int(got.offsets[q]), int(got.offsets[q + 1])
        want_rows, want_scores, want_counts = reference(index, facts, sc, k)
        assert got.rows[a:b].tolist() == want_rows
        assert bits(got.scores[a:b].tolist()) == bits(want_scores)
        assert got.counts[a:b].tolist() == want_counts
        one = supporting_chunks(index, facts, sc, k)
        assert one[0] == want_rows and bits(one[1]) == bits(want_scores)
        assert one[2] == want_counts


def small_index() -> Any:
    links = MentionLinks.build(
        np.array([0, 1, 1], dtype=np.int64),
        np.array([0, 0, 1], dtype=np.int64),
        np.array([1, 2, 1], dtype=np.int64),
        2,
        2,
    )
    return SimpleNamespace(
        mentions=links,
        fact_subject=np.array([0, 1], dtype=np.int64),
        fact_object=np.array([1, 5], dtype=np.int64),
    )


def test_outputs_and_dtypes() -> None:
    index = small_index()
    got = supporting_chunks_batch(index, np.array([0, 0], dtype=np.int64), [2.0, 1.0], [0, 1, 2], 5)
    assert got.rows.dtype == np.int64 and got.scores.dtype == np.float64
    assert got.counts.dtype == np.int64
    assert got.rows.tolist() == [1, 1] and got.counts.tolist() == [2, 2]
    assert got.offsets.tolist() == [0, 1, 2]
    assert supporting_chunks(index, [0], [1.0], 0) == ([], [], [])


def test_bad_input_raises() -> None:
    index = small_index()
    with pytest.raises(DataError):  # fact 1's object is outside the mention CSR
        supporting_chunks(index, [1], [1.0], 3)
    with pytest.raises(DataError):  # a fact outside the columns
        supporting_chunks(index, [2], [1.0], 3)
    with pytest.raises(ValueError):
        supporting_chunks(index, [0, 0], [1.0], 3)
    with pytest.raises(ParameterError):
        supporting_chunks_batch(index, np.array([0], dtype=np.int64), [1.0], [0, 2], 3)
    m = index.mentions
    with pytest.raises(ParameterError, match="contiguous"):
        _core.supporting_chunks(
            m.entity_offsets,
            m.entity_chunks,
            m.entity_counts,
            index.fact_subject,
            index.fact_object,
            np.zeros(4, dtype=np.int64)[::2],
            np.array([1.0, 1.0]),
            np.array([0, 2], dtype=np.uintp),
            3,
        )
