"""Seed 001 mention boosts against the pure-Python reference."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY, GraphData, examples, graph_data
from graphrecall import KnowledgeGraph
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import graph_ref

Query = dict[str, list[Any]]


@st.composite
def boost_query(draw: st.DrawFn, data: GraphData, nonempty: bool = False) -> Query:
    """One query; ``nonempty`` gives it at least one chunk, query entity and related entity
    (a batch whose id lists are all empty fails on int-id graphs:
    test_boost_with_an_empty_query_entity_list)."""
    chunk_ids = [c["id"] for c in data.chunks]
    ent_ids = [e["id"] for e in data.entities]
    m = int(nonempty)
    chunks = (
        draw(st.lists(st.sampled_from(chunk_ids), unique=True, min_size=m)) if chunk_ids else []
    )
    related = draw(st.lists(st.sampled_from(ent_ids), unique=True, min_size=m, max_size=5))
    n = len(related)
    return {
        "chunks": chunks,
        "similarity": draw(
            st.lists(
                st.sampled_from([0.5, 0.8, 0.0]) | st.floats(-1.0, 1.0),
                min_size=len(chunks),
                max_size=len(chunks),
            )
        ),
        "query_entities": draw(st.lists(st.sampled_from(ent_ids), min_size=m, max_size=3)),
        "related": related,
        "related_distance": draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)),
        "related_strength": draw(
            st.lists(st.sampled_from([0.0, 1.0, 0.9]) | st.floats(0.0, 1.0), min_size=n, max_size=n)
        ),
    }


@st.composite
def boost_case(draw: st.DrawFn) -> tuple[GraphData, list[Query]]:
    data = draw(graph_data(max_entities=10, max_facts=5))
    queries = [draw(boost_query(data, nonempty=True))]
    queries += draw(st.lists(boost_query(data), max_size=3))
    return data, queries


def call(g: KnowledgeGraph, queries: list[Query], **kw: Any) -> list[dict[str, Any]]:
    cols = (
        "chunks",
        "similarity",
        "query_entities",
        "related",
        "related_distance",
        "related_strength",
    )
    return g.mention_boost(*([q[c] for q in queries] for c in cols), **kw)


def assert_stable_order(order: list[int], adjusted: list[float]) -> None:
    """``order`` is the stable sort of the positions by adjusted score, descending."""
    assert order == sorted(range(len(adjusted)), key=lambda i: -adjusted[i])


@settings(PROPERTY, max_examples=examples(150))
@given(
    boost_case(),
    st.sampled_from([(0.3, 0.1), (0.4, 0.15), (0.0, 0.0), (1.0, 0.5)]),
    st.booleans(),
)
def test_mention_boost_matches_reference(
    case: tuple[GraphData, list[Query]], boosts: tuple[float, float], use_strength: bool
) -> None:
    data, queries = case
    direct, indirect = boosts
    g = data.build()
    kw = {"direct": direct, "indirect": indirect, "use_strength": use_strength}
    got = call(g, queries, **kw)
    assert len(got) == len(queries)
    for q, res in zip(queries, got, strict=True):
        want = graph_ref.mention_boost(data.mentions, **q, **kw)
        assert res["direct"].tolist() == want["direct"]
        assert res["indirect"].tolist() == pytest.approx(want["indirect"], abs=1e-12)
        assert res["adjusted"].tolist() == pytest.approx(want["adjusted"], abs=1e-12)
        adjusted = res["adjusted"].tolist()
        order = res["order"].tolist()
        assert_stable_order(order, adjusted)
        # Where the reference's scores are clearly apart its order is the same.
        w = want["adjusted"]
        apart = all(abs(w[i] - w[j]) > 1e-9 for i in range(len(w)) for j in range(i + 1, len(w)))
        if apart:
            assert order == want["order"]
        assert res["chunk_ids"].tolist() == [q["chunks"][i] for i in order]
        for name in ("direct", "indirect", "adjusted"):
            assert res[name].dtype == np.float64


@settings(PROPERTY, max_examples=examples(60))
@given(boost_case())
def test_batched_boost_equals_single_calls(case: tuple[GraphData, list[Query]]) -> None:
    data, queries = case
    g = data.build()
    batch = call(g, queries)
    for q, res in zip(queries, batch, strict=True):
        if q["chunks"] and q["query_entities"] and q["related"]:
            (one,) = call(g, [q])
        else:  # alone it could hit the empty-list bug; pair it with the first query
            one = call(g, [queries[0], q])[1]
        for name in ("direct", "indirect", "adjusted", "order", "chunk_ids"):
            assert res[name].tolist() == one[name].tolist()


@settings(PROPERTY, max_examples=examples(60))
@given(boost_case(), st.data())
def test_centrality_scales_each_indirect_boost(
    case: tuple[GraphData, list[Query]], data_st: st.DataObject
) -> None:
    """Seed 001's "PageRank-style importance": each indirect boost x centrality[entity]."""
    data, queries = case
    g = data.build()
    cent = data_st.draw(st.lists(st.floats(0.0, 1.0), min_size=g.n_entities, max_size=g.n_entities))
    index = {e: int(i) for e, i in zip(g.entity_ids.tolist(), range(g.n_entities), strict=True)}
    got = call(g, queries, centrality=np.array(cent))
    for q, res in zip(queries, got, strict=True):
        scaled = dict(
            q,
            related_strength=[
                s * cent[index[e]] for e, s in zip(q["related"], q["related_strength"], strict=True)
            ],
        )
        want = graph_ref.mention_boost(data.mentions, **scaled)
        assert res["indirect"].tolist() == pytest.approx(want["indirect"], abs=1e-12)


def westeros() -> KnowledgeGraph:
    names = ["ned", "robert", "catelyn", "jon_arryn", "cersei", "tywin"]
    chunks = ["grew_up", "lord", "raven", "rebellion"]
    mentions = [
        ("grew_up", "robert"),
        ("grew_up", "ned"),
        ("lord", "ned"),
        ("raven", "tywin"),
        ("rebellion", "robert"),
        ("rebellion", "ned"),
    ]
    return KnowledgeGraph.from_records(
        entities=[{"id": n} for n in names],
        facts=[{"subject": "ned", "object": "robert", "predicate": "ALLY", "strength": 0.9}],
        chunks=[{"id": c} for c in chunks],
        mentions=[{"chunk": c, "entity": e} for c, e in mentions],
    )


def test_seed_001_worked_examples() -> None:
    g = westeros()
    # "Robert and Ned fought together": both query entities, direct 0.6, 0.72 + 0.6 = 1.32.
    (r,) = g.mention_boost([["rebellion"]], [[0.72]], [["ned", "robert"]], [[]], [[]], [[]])
    assert r["direct"].tolist() == [pytest.approx(0.6)]
    assert r["adjusted"].tolist() == [pytest.approx(1.32)]
    # "Tywin sent a raven": distance 2, strength 0.9: 0.1 * 1/2 * 0.9 = 0.045.
    (r,) = g.mention_boost(
        [["raven"]], [[0.55]], [["ned"]], [["robert", "tywin"]], [[1, 2]], [[0.9, 0.9]]
    )
    assert r["indirect"].tolist() == [pytest.approx(0.045)]
    assert r["adjusted"].tolist() == [pytest.approx(0.595)]
    # Re-ranking: "grew_up" (0.80 + 0.3 for Ned + 0.09 for Robert = 1.19) overtakes
    # "lord" (0.85 + 0.3 = 1.15); ties keep their input order.
    (r,) = g.mention_boost(
        [["lord", "grew_up", "raven"]],
        [[0.85, 0.80, 0.3]],
        [["ned"]],
        [["robert", "tywin"]],
        [[1, 2]],
        [[0.9, 0.9]],
    )
    assert r["direct"].tolist() == pytest.approx([0.3, 0.3, 0.0])
    assert r["indirect"].tolist() == pytest.approx([0.0, 0.09, 0.045])
    assert r["adjusted"].tolist() == pytest.approx([1.15, 1.19, 0.345])
    assert r["chunk_ids"].tolist() == ["grew_up", "lord", "raven"]
    assert r["order"].tolist() == [1, 0, 2]
    (r,) = g.mention_boost(
        [["raven", "lord", "grew_up"]], [[0.5, 0.5, 0.5]], [["ned"]], [[]], [[]], [[]]
    )
    assert r["order"].tolist() == [1, 2, 0]  # stable: lord before grew_up
    # Without relationship strength, strength counts 1.0.
    (r,) = g.mention_boost(
        [["raven"]], [[0.0]], [[]], [["tywin"]], [[2]], [[0.2]], use_strength=False
    )
    assert r["indirect"].tolist() == [pytest.approx(0.05)]
    # A query entity is never also an indirect boost.
    (r,) = g.mention_boost([["grew_up"]], [[0.0]], [["robert"]], [["robert"]], [[1]], [[1.0]])
    assert r["direct"].tolist() == [pytest.approx(0.3)]
    assert r["indirect"].tolist() == [0.0]


def test_boost_of_queries_without_chunks_or_entities() -> None:
    g = westeros()
    out = g.mention_boost([[], ["lord"]], [[], [0.1]], [[], []], [[], []], [[], []], [[], []])
    assert [len(r["order"]) for r in out] == [0, 1]
    assert out[1]["adjusted"].tolist() == [0.1]


@pytest.mark.parametrize("ids", [[10, 20, 30], ["x", "y", "z"]])
def test_boost_with_an_empty_query_entity_list(ids: list[Hashable]) -> None:
    """A query with no query entities (nothing matched) on an int-id graph as well."""
    g = KnowledgeGraph.from_records(
        entities=[{"id": i} for i in ids],
        facts=[{"subject": ids[0], "object": ids[1]}],
        chunks=[{"id": 1}, {"id": 2}],
        mentions=[{"chunk": 1, "entity": ids[2]}],
    )
    (r,) = g.mention_boost([[1, 2]], [[0.2, 0.4]], [[]], [[ids[2]]], [[1]], [[0.5]])
    assert r["chunk_ids"].tolist() == [2, 1]
    assert r["indirect"].tolist() == [pytest.approx(0.05), 0.0]
