"""The recipes against slow references of their source designs, on random graphs, and every
stated rule of the seeds on the packaged demo graph."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from conftest import NOW, PROPERTY, GraphData, graph_data
from graphrecall.errors import ParameterError, UnknownTenantError
from graphrecall.index import GraphIndex
from graphrecall.recipes import (
    RECIPES,
    chunk_boost,
    graph_recall,
    hybrid_expand,
    ppr,
    routed_hybrid,
    spreading_activation,
)
from graphrecall.storage import EmbeddingSet, GraphTables
from hypothesis import assume, given
from hypothesis import strategies as st
from reference import fusion_ref, recipes_ref

DIM = 8
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    return {k: [r.get(k) for r in rows] for k in keys}


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    # Coarse values make exact ties likely: ties must break by row everywhere.
    v = rng.integers(-2, 3, size=(n, DIM)).astype(np.float32)
    v[np.all(v == 0, axis=1), 0] = 1.0
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def build(data: GraphData, seed: int) -> tuple[GraphIndex, np.ndarray, np.ndarray, list[str]]:
    """A GraphIndex of random rows with random entity / chunk vectors and chunk texts."""
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    ent_vec = _unit(rng, len(data.entities))
    chunk_vec = _unit(rng, len(data.chunks))
    texts = [" ".join(r.choices(WORDS, k=r.randint(1, 6))) for _ in data.chunks]
    entities = [dict(e, name=f"{WORDS[i % len(WORDS)]} {i}") for i, e in enumerate(data.entities)]
    tables = GraphTables(
        entities=_columns(entities),
        facts=_columns(data.facts),
        chunks=_columns([dict(c, text=t) for c, t in zip(data.chunks, texts, strict=True)])
        if data.chunks
        else None,
        mentions=_columns(data.mentions) if data.mentions else None,
        embeddings=[EmbeddingSet("entity", [e["id"] for e in data.entities], ent_vec, "random")]
        + (
            [EmbeddingSet("chunk", [c["id"] for c in data.chunks], chunk_vec, "random")]
            if data.chunks
            else []
        ),
    )
    index = GraphIndex.build(tables, embedder=None)
    return index, ent_vec, chunk_vec, texts


def _query(seed: int) -> np.ndarray:
    return _unit(np.random.default_rng(seed + 7), 1)[0]


def _assert_same_ranking(
    got: list[tuple[Any, float]], expected: list[tuple[Any, float]], tol: float = 1e-6
) -> None:
    """``got`` ranks the ids of ``expected`` with the same scores (within ``tol``).

    Ids whose reference scores are within ``tol`` of each other may come in either order: the
    native kernels sum float32 cosines in another order than numpy, so a cosine of exactly 0
    in the reference can be 1e-8 in the recipe (and break a tie the other way).
    """
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=tol, abs=tol)
    i = 0
    while i < len(expected):
        j = i + 1
        while j < len(expected) and abs(expected[j][1] - expected[i][1]) <= tol:
            j += 1
        assert {x for x, _ in got[i:j]} == {x for x, _ in expected[i:j]}
        i = j


@PROPERTY
@given(graph_data(max_entities=12, max_facts=40), st.integers(0, 2**16), st.data())
def test_spreading_activation_matches_seed_000(
    data: GraphData, seed: int, d: st.DataObject
) -> None:
    index, ent_vec, _, _ = build(data, seed)
    tenant = d.draw(st.sampled_from(data.tenants()))
    q = _query(seed)
    assume(recipes_ref.clear_cut(ent_vec, [e["tenant"] for e in data.entities], tenant, q, 3))
    res = spreading_activation(index, "q", tenant=tenant, now=NOW, query_vectors=q)[0]
    expected = recipes_ref.spreading_activation(data.entities, data.facts, ent_vec, tenant, q, NOW)
    assert [(f.id, f.score) for f in res.facts] == expected
    # Every fact's path starts at one of the anchors and ends with the fact itself.
    anchors = {a.id for a in res.anchors}
    for f in res.facts:
        assert f.path[0].entity in anchors
        assert f.path[-1 if f.object is None else -2].fact == f.id


@PROPERTY
@given(graph_data(max_entities=12, max_facts=40), st.integers(0, 2**16), st.data())
def test_graph_recall_matches_seed_004(data: GraphData, seed: int, d: st.DataObject) -> None:
    index, ent_vec, _, _ = build(data, seed)
    tenant = d.draw(st.sampled_from(data.tenants()))
    q = _query(seed)
    assume(recipes_ref.clear_cut(ent_vec, [e["tenant"] for e in data.entities], tenant, q, 5))
    # A cosine of 0 can come out of the kernel as -1e-8: its facts' scores change sign and
    # the triple dedupe keeps another fact.
    top = recipes_ref.top_cosine(ent_vec, [e["tenant"] for e in data.entities], tenant, q, 5)
    assume(all(abs(s) > 1e-6 for _, s in top))
    res = graph_recall(index, "q", tenant=tenant, query_vectors=q, chunks=0)[0]
    expected = recipes_ref.graph_recall(data.entities, data.facts, ent_vec, tenant, q)
    _assert_same_ranking([(f.id, f.score) for f in res.facts], expected)


@PROPERTY
@given(graph_data(max_entities=12, max_facts=40), st.integers(0, 2**16), st.data())
def test_chunk_boost_matches_seed_001(data: GraphData, seed: int, d: st.DataObject) -> None:
    tenants = [c["tenant"] for c in data.chunks]
    if not tenants:
        return
    index, ent_vec, chunk_vec, _ = build(data, seed)
    tenant = d.draw(st.sampled_from(tenants))
    q = _query(seed)
    assume(recipes_ref.clear_cut(ent_vec, [e["tenant"] for e in data.entities], tenant, q, 3))
    assume(recipes_ref.clear_cut(chunk_vec, tenants, tenant, q, 6))
    res = chunk_boost(index, "q", tenant=tenant, query_vectors=q, k=3)[0]
    expected = recipes_ref.chunk_boost(
        data.entities, data.facts, data.chunks, data.mentions, ent_vec, chunk_vec, tenant, q, k=3
    )
    _assert_same_ranking([(c.id, c.score) for c in res.chunks], expected)


@PROPERTY
@given(graph_data(max_entities=12, max_facts=40), st.integers(0, 2**16), st.data())
def test_hybrid_expand_matches_seed_003(data: GraphData, seed: int, d: st.DataObject) -> None:
    tenants = [c["tenant"] for c in data.chunks]
    if not tenants:
        return
    index, ent_vec, chunk_vec, texts = build(data, seed)
    tenant = d.draw(st.sampled_from(tenants))
    names = [f"{WORDS[i % len(WORDS)]} {i}" for i in range(len(data.entities))]  # as build's
    words = d.draw(st.lists(st.sampled_from([*WORDS, "9", "3", *names]), min_size=1, max_size=4))
    query = " ".join(words)
    q = _query(seed)
    assume(recipes_ref.clear_cut(chunk_vec, tenants, tenant, q, 12))
    res = hybrid_expand(index, query, tenant=tenant, query_vectors=q, k=3)[0]
    # Phase 1: vector + BM25 (text score = BM25 / the best), 0.7 / 0.3 merge.
    vec = dict(recipes_ref.top_cosine(chunk_vec, tenants, tenant, q, 12))
    bm = recipes_ref.bm25(texts, tenants, tenant, query, 12)
    text = {r: s / bm[0][1] for r, s in bm}
    merged = {c: 0.7 * vec.get(c, 0.0) + 0.3 * text.get(c, 0.0) for c in set(vec) | set(text)}
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
    assume(len(ranked) <= 3 or ranked[2][1] - ranked[3][1] > 1e-6)  # a clear top 3
    base = ranked[:3]
    # Phase 2: names by n-gram lookup, else the embedding fallback (top 3, >= 0.75).
    ent_tenants = [e["tenant"] for e in data.entities]
    found = recipes_ref.recognize_names(names, ent_tenants, tenant, query)
    if not found:
        assume(recipes_ref.clear_cut(ent_vec, ent_tenants, tenant, q, 3))
        found = [
            r for r, s in recipes_ref.top_cosine(ent_vec, ent_tenants, tenant, q, 3) if s >= 0.75
        ]
    recognized = [data.entities[r]["id"] for r in found]
    assert [a.id for a in res.anchors] == recognized
    # Phase 3: the recognised entities' 1-hop neighbours' chunks.
    graph = recipes_ref.graph_chunk_scores(data.facts, data.mentions, recognized)
    chunk_row = {c["id"]: i for i, c in enumerate(data.chunks)}
    expected = fusion_ref.additive_merge(
        ([c for c, _ in base], [s for _, s in base]),
        ([chunk_row[c] for c in graph], list(graph.values())),
    )
    _assert_same_ranking(
        [(c.id, c.score) for c in res.chunks], [(data.chunks[r]["id"], s) for r, s, _ in expected]
    )
    assert sum(c.source == "graph" for c in res.chunks) <= 4
    assert {c.id for c in res.chunks} >= {data.chunks[r]["id"] for r, _ in base}  # additive only


# ------------------------------------------------------------------------------ the demo graph


@pytest.fixture(scope="module")
def demo_index() -> GraphIndex:
    from graphrecall.cli import demo_data, demo_tables

    return GraphIndex.build(demo_tables(demo_data()), embedder="default")


DEMO_NOW = 1_767_225_600


def _demo_inputs(
    index: GraphIndex, question: str
) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray]:
    """The demo's rows, its entity / chunk vectors in row order, and the question's vector:
    the inputs of the references."""
    from graphrecall.cli import demo_data

    data = demo_data()
    sets = {
        s.kind: dict(zip(s.ids.tolist(), s.vectors, strict=True)) for s in index.embedding_sets()
    }
    ent_vec = np.stack([sets["entity"][e["id"]] for e in data["entities"]])
    chunk_vec = np.stack([sets["chunk"][c["id"]] for c in data["chunks"]])
    return data, ent_vec, chunk_vec, index.embed_queries([question])[0]


def test_seed_000_on_the_demo(demo_index: GraphIndex) -> None:
    res = spreading_activation(
        demo_index, "What is the JACQ project?", tenant="alice", now=DEMO_NOW
    )[0]
    assert len(res.anchors) == 3 and res.anchors[0].how == "vector"
    # Only staged / confirmed facts; the rejected "uses HNSW" fact never appears.
    assert all(f.id != 10 for f in res.facts)
    scores = [f.score for f in res.facts]
    assert scores == sorted(scores, reverse=True)


def test_seed_000_keyword_fallback_without_an_embedder() -> None:
    from graphrecall.cli import demo_data, demo_tables

    index = GraphIndex.build(demo_tables(demo_data()), embedder=None)
    res = spreading_activation(index, "what does JACQ use", tenant="alice", now=DEMO_NOW)[0]
    assert res.fallback == "no embedder"
    assert [a.id for a in res.anchors] == ["jacq"]
    assert {f.predicate for f in res.facts} >= {"uses", "written_in"}


def test_seed_001_boosts_robert_for_neds_allies(demo_index: GraphIndex) -> None:
    res = chunk_boost(demo_index, "Who are Ned Stark's allies?", tenant="stark")[0]
    assert "ned" in [a.id for a in res.anchors]
    data, ent_vec, chunk_vec, q = _demo_inputs(demo_index, "Who are Ned Stark's allies?")
    expected = recipes_ref.chunk_boost(
        data["entities"],
        data["facts"],
        data["chunks"],
        data["mentions"],
        ent_vec,
        chunk_vec,
        "stark",
        q,
    )
    assert [c.id for c in res.chunks] == [i for i, _ in expected]
    assert [c.score for c in res.chunks] == pytest.approx([s for _, s in expected], rel=1e-6)
    boosted = [c for c in res.chunks if c.components["direct"] + c.components["indirect"] > 0]
    assert boosted and res.stats["max_boost"] >= 0.3
    for c in res.chunks:
        assert c.score == pytest.approx(
            c.components["similarity"] + c.components["direct"] + c.components["indirect"]
        )
    base = chunk_boost(
        demo_index, "Who are Ned Stark's allies?", tenant="stark", expand_graph=False
    )[0]
    assert all(c.components.keys() == {"similarity"} for c in base.chunks)


def test_seed_002_routes_and_filters(demo_index: GraphIndex) -> None:
    res = routed_hybrid(
        demo_index,
        "How do I usually feel about running?",
        tenant="eliza",
        now=DEMO_NOW,
        context={"goal_id": "goal_marathon_123"},
    )[0]
    assert res.route.query_type.value == "goal_specific"
    assert set(res.tiers or {}) == {"project", "task"}
    ids = {c.id for c in res.chunks}
    assert "m_piano" not in ids  # another goal
    assert "m_expired" not in ids  # expired task memory
    assert "m_morning" not in ids  # personal tier is not searched for a goal query


def test_seed_003_recognises_and_expands(demo_index: GraphIndex) -> None:
    res = hybrid_expand(
        demo_index, "what happens if we change the OAuth provider?", tenant="devteam"
    )[0]
    assert [a.id for a in res.anchors][:1] == ["oauth"]
    assert any(c.source == "graph" or c.source == "hybrid+graph" for c in res.chunks)
    plain = hybrid_expand(
        demo_index,
        "what happens if we change the OAuth provider?",
        tenant="devteam",
        use_graph=False,
    )[0]
    assert {c.id for c in plain.chunks} <= {c.id for c in res.chunks}


def test_seed_004_known_facts(demo_index: GraphIndex) -> None:
    res = graph_recall(demo_index, "How is Ned Stark related to Robert Baratheon?", tenant="stark")[
        0
    ]
    assert len(res.facts) <= 10 and res.facts
    data, ent_vec, _, q = _demo_inputs(demo_index, "How is Ned Stark related to Robert Baratheon?")
    expected = recipes_ref.graph_recall(data["entities"], data["facts"], ent_vec, "stark", q)
    _assert_same_ranking([(f.id, f.score) for f in res.facts], expected)
    for f in res.facts:
        assert f.score == pytest.approx(
            f.components["match"] * f.components["hop_factor"] * f.components["confidence"]
        )


def test_ppr_ranks_chunks(demo_index: GraphIndex) -> None:
    res = ppr(demo_index, "Who did Robert Baratheon marry?", tenant="stark")[0]
    assert res.chunks and res.chunks[0].score >= res.chunks[-1].score
    assert "c_cersei" in [c.id for c in res.chunks[:3]]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_tenants_never_leak(demo_index: GraphIndex, name: str) -> None:
    res = RECIPES[name](
        demo_index, ["Ned Stark and Robert", "JACQ uses DuckDB"], tenant="alice", now=DEMO_NOW
    )
    alice = set(
        np.asarray(demo_index.graph.chunk_ids)[
            demo_index.chunk_tenant == demo_index.tenant_code("alice")
        ].tolist()
    )
    alice_e = set(
        np.asarray(demo_index.graph.entity_ids)[
            demo_index.entity_tenant == demo_index.tenant_code("alice")
        ].tolist()
    )
    for r in res:
        assert {c.id for c in r.chunks} <= alice
        assert {e.id for e in r.entities} <= alice_e
        assert {f.subject for f in r.facts} <= alice_e


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_bad_parameters_are_refused(demo_index: GraphIndex, name: str) -> None:
    fn = RECIPES[name]
    with pytest.raises(UnknownTenantError):
        fn(demo_index, "x", tenant="nobody", now=DEMO_NOW)
    with pytest.raises(ParameterError, match="tenants"):
        fn(demo_index, "x", now=DEMO_NOW)
    with pytest.raises(ParameterError, match="no_such"):
        fn(demo_index, "x", tenant="alice", now=DEMO_NOW, no_such=1)
    with pytest.raises(ParameterError, match="query_vectors: NaN or inf values"):
        fn(demo_index, "x", tenant="alice", now=DEMO_NOW, query_vectors=np.full(384, np.nan))
    two = np.ones((2, 384), np.float32)
    two[1, 5] = np.inf
    with pytest.raises(ParameterError, match="query_vectors: NaN or inf values"):
        fn(demo_index, ["x", "y"], tenant="alice", now=DEMO_NOW, query_vectors=two)
    two[1] = 0.0
    with pytest.raises(ParameterError, match="query_vectors: a zero vector"):
        fn(demo_index, ["x", "y"], tenant="alice", now=DEMO_NOW, query_vectors=two)
    with pytest.raises(ParameterError, match="queries"):
        fn(demo_index, [1], tenant="alice", now=DEMO_NOW)


def test_batch_equals_singles(demo_index: GraphIndex) -> None:
    qs = ["Who are Ned Stark's allies?", "Who did Robert marry?", "Where is Winterfell?"]
    for name in ("spreading_activation", "chunk_boost", "hybrid_expand", "graph_recall", "ppr"):
        batch = RECIPES[name](demo_index, qs, tenant="stark", now=DEMO_NOW)
        for q, r in zip(qs, batch, strict=True):
            one = RECIPES[name](demo_index, q, tenant="stark", now=DEMO_NOW)[0]
            assert [c.id for c in one.chunks] == [c.id for c in r.chunks]
            assert [f.id for f in one.facts] == [f.id for f in r.facts]


def _best_chunks_numpy(
    offsets: np.ndarray, chunks: np.ndarray, ends: np.ndarray, scores: np.ndarray
) -> list[int]:
    """Seed 004's chunk ranking as numpy writes it: every mention of a known end scored by
    its edge, sorted by (-score, chunk), each chunk at its first (best) place."""
    known = ends >= 0
    rows, vals = [], []
    for e, s in zip(ends[known].tolist(), scores[known].tolist(), strict=True):
        for j in range(int(offsets[e]), int(offsets[e + 1])):
            rows.append(int(chunks[j]))
            vals.append(s)
    r = np.asarray(rows, np.int64)
    v = np.asarray(vals, np.float64)
    take = v > -1.0
    r, v = r[take], v[take]
    return list(dict.fromkeys(r[np.lexsort((r, -v))].tolist()))


@PROPERTY
@given(st.data())
def test_best_mentioned_chunks_matches_numpy(d: st.DataObject) -> None:
    """The native ranking of seed 004's graph chunks equals the numpy form."""
    from graphrecall import _core

    n_e = d.draw(st.integers(1, 8))
    deg = d.draw(st.lists(st.integers(0, 4), min_size=n_e, max_size=n_e))
    offsets = np.zeros(n_e + 1, np.int64)
    np.cumsum(deg, out=offsets[1:])
    chunks = np.asarray(
        d.draw(st.lists(st.integers(0, 9), min_size=sum(deg), max_size=sum(deg))), np.int64
    )
    counts = np.ones(len(chunks), np.int64)
    ends = np.asarray(d.draw(st.lists(st.integers(-1, n_e - 1), max_size=12)), np.int64)
    vals = st.sampled_from([-1.0, -0.5, 0.0, -0.0, 0.5, 1.0, float("nan")])
    scores = np.asarray(d.draw(st.lists(vals, min_size=len(ends), max_size=len(ends))))
    got, _ = _core.best_mentioned_chunks(offsets, chunks, counts, ends, scores)
    assert got.tolist() == _best_chunks_numpy(offsets, chunks, ends, scores)
