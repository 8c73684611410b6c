"""Hits build their ``path`` and score ``components`` on first read: the lazily built
results must be the eagerly built ones, field by field, whatever is read first."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any

import numpy as np
import pytest
from graphrecall.index import GraphIndex
from graphrecall.recipes import RECIPES
from graphrecall.recipes.base import (
    ChunkHit,
    EntityHit,
    FactHit,
    LazyColumn,
    RetrievalResult,
    Step,
    chunk_hits,
    entity_hits,
    fact_hits,
)

NOW = 1_767_225_600
QUERIES = [
    "Who are Ned Stark's allies?",
    "Who did Robert marry?",
    "How is Ned Stark related to Robert Baratheon?",
    "What is the JACQ project?",
    "what happens if we change the OAuth provider?",
]
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "spreading_activation": [{}, {"direction": "both", "max_hops": 3}, {"top_k": 2}],
    "chunk_boost": [{}, {"max_hops": 2, "k": 8}, {"use_centrality": True}, {"expand_graph": False}],
    "hybrid_expand": [{}, {"max_hops": 2}, {"use_graph": False}, {"text_score": "openclaw"}],
    "graph_recall": [{}, {"dedupe": "fact", "max_hops": 1}, {"chunks": 0}],
}


@pytest.fixture(scope="module")
def demo_index() -> GraphIndex:
    from graphrecall.cli import demo_data, demo_tables

    return GraphIndex.build(demo_tables(demo_data()), embedder="default")


@pytest.fixture(scope="module")
def query_vectors(demo_index: GraphIndex) -> np.ndarray:
    assert demo_index.embedder is not None
    return np.asarray(demo_index.embedder.embed_queries(QUERIES))


def _hits(res: RetrievalResult) -> list[Any]:
    return [*res.anchors, *res.entities, *res.facts, *res.chunks]


def _runs(index: GraphIndex) -> list[tuple[str, dict[str, Any], str]]:
    return [
        (name, kw, tenant)
        for name, variants in VARIANTS.items()
        for kw in variants
        for tenant in index.graph.tenants.names
    ]


def test_lazy_fields_read_in_any_order_give_the_same_result(
    demo_index: GraphIndex, query_vectors: np.ndarray
) -> None:
    for name, kw, tenant in _runs(demo_index):
        fn = RECIPES[name]
        ref = fn(demo_index, QUERIES, tenant=tenant, now=NOW, query_vectors=query_vectors, **kw)
        # Read everything through to_dict (the JSON form) at once.
        want = [r.to_dict() for r in ref]
        json.dumps(want)
        for order in ("paths", "components", "last_first"):
            got = fn(demo_index, QUERIES, tenant=tenant, now=NOW, query_vectors=query_vectors, **kw)
            for r in got:
                hits = _hits(r)
                if order == "last_first":
                    hits.reverse()
                for h in hits:
                    if order == "components" and hasattr(h, "components"):
                        dict(h.components)
                    else:
                        tuple(h.path)
            for a, b in zip(want, got, strict=True):
                a, b = dict(a), b.to_dict()
                a.pop("timings"), b.pop("timings")
                assert a == b, (name, kw, tenant, order)


def test_lazy_hits_equal_eager_hits_and_survive_pickle_and_copy(
    demo_index: GraphIndex, query_vectors: np.ndarray
) -> None:
    for name, kw, tenant in _runs(demo_index):

        def run(
            q: int, name: str = name, tenant: str = tenant, kw: dict[str, Any] = kw
        ) -> RetrievalResult:
            return RECIPES[name](
                demo_index,
                QUERIES[:2],
                tenant=tenant,
                now=NOW,
                query_vectors=query_vectors[:2],
                **kw,
            )[q]

        for q in range(2):
            # Eager twins: every field given to the constructor.
            eager = [
                type(h)(**{f.name: getattr(h, f.name) for f in dataclasses.fields(h)})
                for h in _hits(run(q))
            ]
            fresh = _hits(run(q))
            # Equality and repr materialise the lazy fields first.
            assert fresh == eager
            assert [repr(h) for h in fresh] == [repr(h) for h in eager]
            fresh = _hits(run(q))
            assert pickle.loads(pickle.dumps(fresh)) == eager
            fresh = _hits(run(q))
            assert [copy.copy(h) for h in fresh] == eager
            assert copy.deepcopy(fresh) == eager
            fresh = _hits(run(q))
            assert [dataclasses.asdict(h) for h in fresh] == [dataclasses.asdict(h) for h in eager]
            fresh_res = run(q)
            back = pickle.loads(pickle.dumps(fresh_res))
            assert _hits(back) == eager


def test_columns_are_built_once_on_first_read(demo_index: GraphIndex) -> None:
    calls: list[str] = []
    n = 3

    def make(what: str) -> Any:
        def build() -> list[Any]:
            calls.append(what)
            if what == "components":
                return [{"x": float(i)} for i in range(n)]
            return [(Step(i, f"e{i}"),) for i in range(n)]

        return LazyColumn(build)

    facts = fact_hits(
        demo_index,
        np.arange(n, dtype=np.int64),
        scores=[1.0] * n,
        hops=[0, 1, 1],
        anchors=[-1] * n,
        components=make("components"),
        parents=[-1, 0, 0],
    )
    chunks = chunk_hits(
        demo_index,
        [0, 1, 2],
        scores=[0.5] * n,
        sources="vector",
        components=make("components"),
        paths=make("paths"),
    )
    ents = entity_hits(demo_index, [0, 1, 2], scores=0.0, how="graph", paths=make("paths"))
    assert calls == []
    assert [f.components for f in facts] == [{"x": 0.0}, {"x": 1.0}, {"x": 2.0}]
    assert calls == ["components"]
    # Facts with parents: each path is its parent's path plus a step.
    assert facts[1].path[: len(facts[0].path) - 1] == facts[0].path[:-1]
    assert chunks[2].path == (Step(2, "e2"),) and ents[0].path == (Step(0, "e0"),)
    assert calls == ["components", "paths", "paths"]
    # Hits are frozen, lazy fields too, and their components read-only.
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunks[0].components = {"y": 1.0}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ents[1].path  # type: ignore[misc]
    with pytest.raises(TypeError, match="read-only"):
        chunks[1].components["x"] = 9.0  # type: ignore[index]
    assert chunks[0].components == {"x": 0.0} and calls.count("components") == 2
    assert isinstance(facts[0], FactHit) and isinstance(chunks[0], ChunkHit)
    assert isinstance(ents[0], EntityHit)


def test_hits_are_frozen_values_on_every_path(demo_index: Any) -> None:
    """Hits built by the public constructors and by the recipes' bulk builders alike refuse
    changes, hold read-only components, and still copy, pickle, compare and serialise."""
    import copy
    import json
    import pickle

    made = FactHit("f", "s", "S", "p", None, None, "v", 1.0, 2.0, 0, components={"a": 1.0})
    built = fact_hits(
        demo_index,
        np.arange(2, dtype=np.int64),
        scores=[1.0, 0.5],
        hops=[0, 1],
        anchors=None,
        components=[{"a": 1.0}, {"a": 2.0}],
    )
    for hit in (made, *built):
        assert type(hit) is FactHit
        with pytest.raises(dataclasses.FrozenInstanceError):
            hit.score = 9.0  # type: ignore[misc]
        with pytest.raises(TypeError, match="read-only"):
            hit.components["a"] = 0.0  # type: ignore[index]
        with pytest.raises(TypeError, match="read-only"):
            hit.components.update(b=1.0)  # type: ignore[attr-defined]
        assert pickle.loads(pickle.dumps(hit)) == hit
        assert copy.deepcopy(hit) == hit and copy.copy(hit) == hit
        assert dataclasses.replace(hit, score=3.0).score == 3.0 and hit.score != 3.0
        assert json.loads(json.dumps(dataclasses.asdict(hit)))["components"] == dict(hit.components)
        assert hash(hit) == hash(dataclasses.replace(hit))
    assert built[0] != built[1] and built[1].components == {"a": 2.0}
