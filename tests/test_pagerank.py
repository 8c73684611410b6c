"""Personalized PageRank (HippoRAG) against dense power iteration, dense solves, NetworkX."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY, GraphData, anchors_of, examples, f32, filters_st, graph_data
from graphrecall import KnowledgeGraph, ParameterError
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import graph_ref

TOL = 1e-9

ppr_params_st = st.fixed_dictionaries(
    {
        "damping": st.sampled_from([0.5, 0.85, 0.15]) | st.floats(0.01, 0.95),
        "weight": st.sampled_from(["strength", "confidence", "uniform"]),
        "direction": st.sampled_from(["both", "both", "out", "in"]),
        "weight_by_count": st.booleans(),
    }
)


@st.composite
def ppr_case(draw: st.DrawFn) -> tuple[GraphData, list[Hashable], list[float]]:
    data = draw(graph_data(max_entities=10, max_facts=25))
    seeds = draw(anchors_of(data, max_anchors=3))
    weights = draw(
        st.lists(
            st.sampled_from([0.0, 1.0, 0.5]) | st.floats(0.0, 2.0),
            min_size=len(seeds),
            max_size=len(seeds),
        ).filter(lambda w: sum(w) > 0)
    )
    return data, seeds, weights


def ref_filters(filters: dict[str, Any]) -> dict[str, Any]:
    out = dict(filters)
    if "min_confidence" in out:  # compared in float32, like the stored confidences
        out["min_confidence"] = f32(out["min_confidence"])
    return out


def as_dict(ids: Any, scores: Any) -> dict[Hashable, float]:
    return dict(zip(ids.tolist(), scores.tolist(), strict=True))


def assert_close(got: dict[Hashable, float], want: dict[Hashable, float]) -> None:
    for k in set(got) | set(want):
        assert abs(got.get(k, 0.0) - want.get(k, 0.0)) <= TOL, (k, got.get(k), want.get(k))


@settings(PROPERTY, max_examples=examples(120))
@given(ppr_case(), ppr_params_st, filters_st)
def test_ppr_matches_dense_power_iteration(
    case: tuple[GraphData, list[Hashable], list[float]],
    params: dict[str, Any],
    filters: dict[str, Any],
) -> None:
    data, seeds, weights = case
    g = data.build()
    res = g.personalized_pagerank(seeds, weights, tol=1e-13, max_iter=10_000, **params, **filters)
    q = res[0]
    got = as_dict(q.entity_ids, q.entity_scores)
    rf = ref_filters(filters)
    kw = {
        "damping": params["damping"],
        "weight": params["weight"],
        "direction": params["direction"],
    }
    want = graph_ref.pagerank(data.entities, data.facts, seeds, weights, tol=1e-14, **kw, **rf)
    assert_close(got, want)
    # The support: every entity the reference scores visibly, nothing unreachable.
    assert {e for e, s in want.items() if s > TOL} <= set(got)
    walk = {"weight": params["weight"], "direction": params["direction"]}
    assert set(got) <= graph_ref.reachable(data.entities, data.facts, seeds, **walk, **rf)
    assert abs(sum(got.values()) - 1.0) <= TOL
    assert all(s > 0 for s in got.values())
    scores = q.entity_scores.tolist()
    assert scores == sorted(scores, reverse=True)
    # One tenant only, entities and chunks alike.
    tenant = data.tenant_of(seeds[0])
    assert all(data.tenant_of(e) == tenant for e in got)
    chunk_tenant = {c["id"]: c["tenant"] for c in data.chunks}
    assert all(chunk_tenant[c] == tenant for c in q.chunk_ids.tolist())
    # Chunk score = sum of the scores of the entities it mentions (x count).
    want_chunks = graph_ref.chunk_scores(
        data.mentions, got, weight_by_count=params["weight_by_count"]
    )
    got_chunks = as_dict(q.chunk_ids, q.chunk_scores)
    assert set(got_chunks) == set(want_chunks)
    assert_close(got_chunks, want_chunks)
    chunk_scores = q.chunk_scores.tolist()
    assert chunk_scores == sorted(chunk_scores, reverse=True)
    assert 1 <= q.iterations <= 10_000


@settings(PROPERTY, max_examples=examples(60))
@given(ppr_case())
def test_ppr_defaults_match_the_reference(
    case: tuple[GraphData, list[Hashable], list[float]],
) -> None:
    """HippoRAG's settings (damping 0.5, undirected, strength weights, tol 1e-10)."""
    data, seeds, weights = case
    q = data.build().personalized_pagerank(seeds, weights)[0]
    want = graph_ref.pagerank(data.entities, data.facts, seeds, weights, tol=1e-14)
    assert_close(as_dict(q.entity_ids, q.entity_scores), want)
    assert q.iterations <= 100


def dense_ppr(
    nodes: list[Hashable],
    edges: list[tuple[Hashable, Hashable, float]],
    seeds: list[Hashable],
    weights: list[float],
    damping: float,
) -> dict[Hashable, float]:
    """The exact vector by a dense solve of ``(I - d (P + s 1_dangling^T)) x = (1 - d) s``."""
    index = {e: i for i, e in enumerate(nodes)}
    n = len(nodes)
    w = np.zeros((n, n))
    for u, v, x in edges:
        w[index[v], index[u]] += x  # column u (from) -> row v (to)
    total = w.sum(axis=0)
    p = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    s = np.zeros(n)
    for seed, sw in zip(seeds, weights, strict=True):
        s[index[seed]] += sw
    s /= s.sum()
    m = p + np.outer(s, total <= 0)
    x = np.linalg.solve(np.eye(n) - damping * m, (1 - damping) * s)
    return {e: float(x[i]) for e, i in index.items()}


def l1_error(got: dict[Hashable, float], want: dict[Hashable, float]) -> float:
    return sum(abs(got.get(k, 0.0) - want.get(k, 0.0)) for k in set(got) | set(want))


@settings(PROPERTY, max_examples=examples(120))
@given(ppr_case(), ppr_params_st, filters_st, st.sampled_from([1e-10, 1e-8, 1e-4]))
def test_exact_mode_is_within_tol_of_a_dense_solve(
    case: tuple[GraphData, list[Hashable], list[float]],
    params: dict[str, Any],
    filters: dict[str, Any],
    tol: float,
) -> None:
    """``tol`` bounds the L1 error against the exact vector (a dense linear solve)."""
    data, seeds, weights = case
    g = data.build()
    walk = {"weight": params["weight"], "direction": params["direction"]}
    q = g.personalized_pagerank(seeds, weights, tol=tol, max_iter=10_000, **params, **filters)[0]
    nodes, edges = graph_ref.ppr_edges(
        data.entities, data.facts, data.tenant_of(seeds[0]), **walk, **ref_filters(filters)
    )
    want = dense_ppr(nodes, edges, seeds, weights, params["damping"])
    assert l1_error(as_dict(q.entity_ids, q.entity_scores), want) <= tol + 1e-12


@pytest.mark.parametrize("direction", ["both", "out", "in"])
@pytest.mark.parametrize("weight", ["strength", "uniform"])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_exact_mode_on_a_random_graph(direction: str, weight: str, damping: float) -> None:
    """A random graph of 400 entities: the default ``tol`` (1e-10) holds against a dense
    solve, with the default ``max_iter``."""
    rng = np.random.default_rng(7)
    n, m = 400, 2000
    subject, obj = rng.integers(0, n, m), rng.integers(0, n, m)
    strength = rng.uniform(0.0, 2.0, m)
    g = KnowledgeGraph.from_arrays(
        fact_subject=subject, fact_object=obj, strength=strength, n_entities=n
    )
    seeds = rng.choice(n, 5, replace=False).tolist()
    q = g.personalized_pagerank(seeds, damping=damping, weight=weight, direction=direction)[0]
    w = strength if weight == "strength" else np.ones(m)
    edges = []
    for s, o, x in zip(subject.tolist(), obj.tolist(), w.tolist(), strict=True):
        if float(np.float32(x)) <= 0:
            continue
        x = float(np.float32(x))
        if direction in ("out", "both"):
            edges.append((s, o, x))
        if direction == "in" or (direction == "both" and s != o):
            edges.append((o, s, x))
    want = dense_ppr(list(range(n)), edges, seeds, [1.0] * 5, damping)
    assert l1_error(as_dict(q.entity_ids, q.entity_scores), want) <= 1e-10 + 1e-12
    assert q.iterations <= 100


@settings(PROPERTY, max_examples=examples(60))
@given(ppr_case(), ppr_params_st)
def test_one_iteration_is_one_step(
    case: tuple[GraphData, list[Hashable], list[float]], params: dict[str, Any]
) -> None:
    data, seeds, weights = case
    q = data.build().personalized_pagerank(seeds, weights, max_iter=1, **params)[0]
    assert q.iterations == 1
    kw = {
        "damping": params["damping"],
        "weight": params["weight"],
        "direction": params["direction"],
    }
    want = graph_ref.pagerank(data.entities, data.facts, seeds, weights, max_iter=1, **kw)
    assert_close(as_dict(q.entity_ids, q.entity_scores), want)


@settings(PROPERTY, max_examples=examples(60))
@given(ppr_case(), ppr_params_st)
def test_ppr_matches_networkx(
    case: tuple[GraphData, list[Hashable], list[float]], params: dict[str, Any]
) -> None:
    nx = pytest.importorskip("networkx")
    data, seeds, weights = case
    q = data.build().personalized_pagerank(seeds, weights, tol=1e-13, max_iter=10_000, **params)[0]
    tenant = data.tenant_of(seeds[0])
    nodes, edges = graph_ref.ppr_edges(
        data.entities, data.facts, tenant, weight=params["weight"], direction=params["direction"]
    )
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(nodes)
    for u, v, w in edges:
        graph.add_edge(u, v, weight=w)
    personal: dict[Hashable, float] = {}
    for s, w in zip(seeds, weights, strict=True):
        personal[s] = personal.get(s, 0.0) + w
    want = nx.pagerank(
        graph,
        alpha=params["damping"],  # networkx's alpha is the damping
        personalization=personal,
        dangling=personal,
        weight="weight",
        tol=1e-14,
        max_iter=100_000,
    )
    want = {k: v for k, v in want.items() if v > 0}
    assert_close(as_dict(q.entity_ids, q.entity_scores), want)


@st.composite
def ppr_batch(draw: st.DrawFn) -> tuple[GraphData, list[list[Hashable]], list[list[float]]]:
    data = draw(graph_data(max_entities=10, max_facts=25))
    n = draw(st.integers(1, 5))
    queries = [draw(anchors_of(data, max_anchors=3)) for _ in range(n)]
    weights = [
        draw(st.lists(st.floats(0.1, 2.0), min_size=len(s), max_size=len(s))) for s in queries
    ]
    return data, queries, weights


@settings(PROPERTY, max_examples=examples(60))
@given(ppr_batch(), ppr_params_st, st.none() | st.integers(1, 4), st.none() | st.integers(1, 3))
def test_batched_ppr_equals_single_calls(
    case: tuple[GraphData, list[list[Hashable]], list[list[float]]],
    params: dict[str, Any],
    top_k: int | None,
    top_k_chunks: int | None,
) -> None:
    data, queries, weights = case
    g = data.build()
    kw = dict(params, top_k=top_k, top_k_chunks=top_k_chunks)
    batch = g.personalized_pagerank(queries, weights, **kw)
    assert len(batch) == len(queries)
    for k, (seeds, w) in enumerate(zip(queries, weights, strict=True)):
        one = g.personalized_pagerank(seeds, w, **kw)[0]
        q = batch[k]
        assert q.entity_ids.tolist() == one.entity_ids.tolist()
        assert q.entity_scores.tolist() == one.entity_scores.tolist()
        assert q.chunk_ids.tolist() == one.chunk_ids.tolist()
        assert q.chunk_scores.tolist() == one.chunk_scores.tolist()
        assert q.iterations == one.iterations
        # top_k keeps a prefix of the full ranking.
        full = g.personalized_pagerank(seeds, w, **params)[0]
        n = len(full.entity_ids) if top_k is None else top_k
        assert q.entity_ids.tolist() == full.entity_ids.tolist()[:n]
        n = len(full.chunk_ids) if top_k_chunks is None else top_k_chunks
        assert q.chunk_ids.tolist() == full.chunk_ids.tolist()[:n]
        # Never another tenant's entity or chunk.
        tenant = data.tenant_of(seeds[0])
        assert all(data.tenant_of(e) == tenant for e in q.entity_ids.tolist())
    if len({len(s) for s in queries}) == 1:
        arr = np.array(queries, dtype=object)
        b2 = g.personalized_pagerank(arr, np.array(weights), **kw)
        for k in range(len(queries)):
            assert b2[k].entity_ids.tolist() == batch[k].entity_ids.tolist()
            assert b2[k].entity_scores.tolist() == batch[k].entity_scores.tolist()


def test_ppr_small_example_by_hand() -> None:
    """a - b undirected with weight 2, c isolated in another tenant; seed a, d = 0.5:
    x_a = 0.5 + 0.5 x_b, x_b = 0.5 x_a  =>  x_a = 2/3, x_b = 1/3."""
    g = KnowledgeGraph.from_records(
        entities=[
            {"id": "a", "tenant": "t"},
            {"id": "b", "tenant": "t"},
            {"id": "c", "tenant": "u"},
        ],
        facts=[{"subject": "a", "object": "b", "strength": 2.0}],
        chunks=[{"id": "k1", "tenant": "t"}, {"id": "k2", "tenant": "u"}],
        mentions=[
            {"chunk": "k1", "entity": "a", "count": 2},
            {"chunk": "k1", "entity": "b"},
            {"chunk": "k2", "entity": "c"},
        ],
    )
    q = g.personalized_pagerank(["a"])[0]
    assert q.entity_ids.tolist() == ["a", "b"]
    assert q.entity_scores == pytest.approx([2 / 3, 1 / 3], abs=1e-9)
    assert q.chunk_ids.tolist() == ["k1"]
    assert q.chunk_scores == pytest.approx([1.0], abs=1e-9)
    counted = g.personalized_pagerank(["a"], weight_by_count=True)[0]
    assert counted.chunk_scores == pytest.approx([2 * 2 / 3 + 1 / 3], abs=1e-9)
    # Directed out from b: b has no out-edge (dangling), its mass returns to b.
    q = g.personalized_pagerank(["b"], direction="out")[0]
    assert q.entity_ids.tolist() == ["b"]
    assert q.entity_scores == pytest.approx([1.0])
    other = g.personalized_pagerank(["c"])[0]
    assert other.entity_ids.tolist() == ["c"] and other.chunk_ids.tolist() == ["k2"]
    # Explicit tenant.
    assert g.personalized_pagerank(["c"], tenant="u")[0].entity_ids.tolist() == ["c"]


def test_ppr_result_dtypes() -> None:
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0, 1], fact_object=[1, 2], mention_chunk=[0], mention_entity=[2]
    )
    r = g.personalized_pagerank(np.array([[0], [1]]))
    assert r.entity_offsets.dtype == np.int64 and r.entity_offsets.tolist()[0] == 0
    assert r.entity_ids.dtype == np.int64
    assert r.entity_scores.dtype == np.float64
    assert r.chunk_ids.dtype == np.int64
    assert r.chunk_scores.dtype == np.float64
    assert r.iterations.dtype == np.uint32
    assert len(r) == 2 and r.entity_offsets[-1] == len(r.entity_ids)


def test_huge_seed_weights_are_normalised() -> None:
    """Seed weights are only relative: [1e308, 1e308] is [1, 1] (their float sum overflows
    to inf, which must not turn every score into 0)."""
    g = KnowledgeGraph.from_arrays(fact_subject=[0], fact_object=[1])
    want = g.personalized_pagerank([0, 1], [1.0, 1.0])[0]
    got = g.personalized_pagerank([0, 1], [1e308, 1e308])[0]
    assert got.entity_ids.tolist() == want.entity_ids.tolist() == [0, 1]
    assert got.entity_scores.tolist() == pytest.approx(want.entity_scores.tolist(), abs=TOL)


eps_st = st.sampled_from([1e-12, 1e-4, 0.01, 0.1]) | st.floats(1e-6, 0.3)


@settings(PROPERTY, max_examples=examples(120))
@given(ppr_case(), ppr_params_st, filters_st, eps_st)
def test_push_matches_the_push_reference(
    case: tuple[GraphData, list[Hashable], list[float]],
    params: dict[str, Any],
    filters: dict[str, Any],
    eps: float,
) -> None:
    """``epsilon``: forward push, the same pushes in the same order as the reference."""
    data, seeds, weights = case
    g = data.build()
    q = g.personalized_pagerank(seeds, weights, epsilon=eps, **params, **filters)[0]
    kw = {"damping": params["damping"], "weight": params["weight"]}
    want, pushes = graph_ref.pagerank_push(
        data.entities,
        data.facts,
        seeds,
        weights,
        epsilon=eps,
        direction=params["direction"],
        **kw,
        **ref_filters(filters),
    )
    assert_close(as_dict(q.entity_ids, q.entity_scores), want)
    assert q.iterations == pushes
    got_chunks = as_dict(q.chunk_ids, q.chunk_scores)
    want_chunks = graph_ref.chunk_scores(
        data.mentions, want, weight_by_count=params["weight_by_count"]
    )
    assert_close(got_chunks, want_chunks)


@settings(PROPERTY, max_examples=examples(120))
@given(ppr_case(), ppr_params_st, eps_st)
def test_push_is_a_lower_bound_of_the_exact_vector(
    case: tuple[GraphData, list[Hashable], list[float]], params: dict[str, Any], eps: float
) -> None:
    """Every push score is at most the exact one, the L1 error is the unsettled mass
    ``1 - sum(scores)``, and a tiny epsilon gives the exact vector."""
    data, seeds, weights = case
    g = data.build()
    q = g.personalized_pagerank(seeds, weights, epsilon=eps, **params)[0]
    got = as_dict(q.entity_ids, q.entity_scores)
    kw = {"damping": params["damping"], "weight": params["weight"]}
    exact = graph_ref.pagerank(
        data.entities, data.facts, seeds, weights, direction=params["direction"], tol=1e-14, **kw
    )
    assert all(s <= exact.get(e, 0.0) + TOL for e, s in got.items())
    l1 = sum(abs(exact.get(e, 0.0) - got.get(e, 0.0)) for e in set(exact) | set(got))
    assert l1 == pytest.approx(1.0 - sum(got.values()), abs=1e-8)
    if eps <= 1e-12:
        assert_close(got, exact)


def test_push_parameters() -> None:
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0, 1], fact_object=[1, 2], mention_chunk=[0], mention_entity=[2]
    )
    for bad in (0.0, -1.0, 1.0, 2.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError):
            g.personalized_pagerank([0], epsilon=bad)
    with pytest.raises(ParameterError):
        g.personalized_pagerank([0], epsilon="0.1")
    r = g.personalized_pagerank([0], epsilon=1e-3)[0]
    assert r.entity_ids.tolist()[0] == 0 and r.chunk_ids.tolist() == [0]
    # score_chunks=False: entity scores only (both modes).
    for eps in (None, 1e-3):
        r = g.personalized_pagerank([0], epsilon=eps, score_chunks=False)[0]
        assert len(r.entity_ids) == 3 and len(r.chunk_ids) == 0
