"""The data-aware router, GraphRAG's default routing, and what recipes do without their inputs."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphRAG, GraphTables
from graphrecall.embed import CallableEmbedder
from graphrecall.errors import ParameterError
from graphrecall.index import GraphIndex
from graphrecall.recipes import RECIPES, get_recipe
from graphrecall.router import HeuristicRouter, IndexProfile, IndexRouter, MemoryRoute, QueryType

DIM = 16
NOW = 1_767_225_600


def _embed(texts: list[str]) -> Any:
    out = np.zeros((len(texts), DIM))
    for i, t in enumerate(texts):
        for j, ch in enumerate(t.lower().encode()):
            out[i, (ch * 7 + j) % DIM] += 1.0 + (j % 3)
        out[i, len(t) % DIM] += 0.5
    return out


def _emb() -> CallableEmbedder:
    return CallableEmbedder(_embed, dim=DIM)


def _tables(
    names: dict[str, list[str]], *, scope: str | None = None, since: bool = False
) -> GraphTables:
    """Per tenant, a chain of named entities, one passage per entity mentioning it."""
    ids, ns, ten = [], [], []
    for t, tn in names.items():
        for i, n in enumerate(tn):
            ids.append(f"{t}{i}")
            ns.append(n)
            ten.append(t)
    subj = [ids[i] for i in range(len(ids) - 1) if ten[i] == ten[i + 1]]
    obj = [ids[i + 1] for i in range(len(ids) - 1) if ten[i] == ten[i + 1]]
    facts: dict[str, Any] = {
        "id": list(range(len(subj))),
        "subject": subj,
        "object": obj,
        "predicate": ["next"] * len(subj),
    }
    if since:
        facts["valid_from"] = [NOW - 86_400] * len(subj)
    chunks: dict[str, Any] = {
        "id": [f"c-{x}" for x in ids],
        "text": [f"a passage about {n}" for n in ns],
        "tenant": ten,
    }
    if scope is not None:
        chunks["scope"] = [scope] * len(ids)
    return GraphTables(
        entities={"id": ids, "name": ns, "tenant": ten},
        facts=facts,
        chunks=chunks,
        mentions={"chunk": [f"c-{x}" for x in ids], "entity": ids},
    )


def _known(res: Any) -> bool:
    return any("known entity" in r for r in res.route.reasons)


def test_after_update_the_router_knows_the_new_names() -> None:
    rag = GraphRAG.from_tables(_tables({"a": ["Ada Lovelace", "Charles Babbage"]}), embedder=_emb())
    assert not _known(rag.retrieve("what about Grace Hopper here", now=NOW))
    rag.update(_tables({"a": ["Ada Lovelace", "Charles Babbage", "Grace Hopper"]}))
    res = rag.retrieve("what about Grace Hopper here", now=NOW)
    assert _known(res)
    assert res.route is not None and res.route.memory_route is MemoryRoute.GRAPH


def test_known_entity_rule_fires_on_a_multi_tenant_graph() -> None:
    rag = GraphRAG.from_tables(
        _tables({"a": ["Ada Lovelace", "Alan Turing"], "b": ["Grace Hopper", "Edsger Dijkstra"]}),
        embedder=_emb(),
    )
    assert _known(rag.retrieve("what about Grace Hopper here", tenant="b", now=NOW))
    # Each tenant's own names only: tenant a knows no Grace Hopper.
    assert not _known(rag.retrieve("what about Grace Hopper here", tenant="a", now=NOW))


def test_passage_questions_route_to_ppr_and_tiers_to_routed_hybrid() -> None:
    rag = GraphRAG.from_tables(_tables({"a": ["Ada Lovelace", "Alan Turing"]}), embedder=_emb())
    res = rag.retrieve("Who worked with the analytical engine?", now=NOW)
    assert res.recipe == "ppr" and res.chunks
    assert res.route is not None and res.route.reasons[-1].startswith("data: recipe=ppr")
    tiered = GraphRAG.from_tables(
        _tables({"a": ["Ada Lovelace", "Alan Turing"]}, scope="project"), embedder=_emb()
    )
    res = tiered.retrieve("my goal for the engine", context={"goal_id": "g1"}, now=NOW)
    assert res.recipe == "routed_hybrid"
    assert res.route is not None and res.route.query_type is QueryType.GOAL_SPECIFIC


def test_router_results_equal_the_named_recipe_and_recognise_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no recipe named, a passage question gets exactly ``ppr``'s result (chunks,
    scores, anchors), and its names are recognised once: the router's known-entity test
    and ppr's name anchors share the work."""
    from graphrecall.anchors.names import NameIndex

    names = ["Ada Lovelace", "Alan Turing", "Charles Babbage", "Grace Hopper"]
    rag = GraphRAG.from_tables(_tables({"a": names}), embedder=_emb())
    calls: list[str] = []
    inner = NameIndex._recognize

    def counted(self: NameIndex, query: str, t: int, lim: int | None) -> Any:
        calls.append(query)
        return inner(self, query, t, lim)

    monkeypatch.setattr(NameIndex, "_recognize", counted)
    for q in (
        "Did Ada Lovelace work with Charles Babbage?",
        "Who wrote about the engine?",
        "Grace Hopper and Alan Turing and Ada Lovelace",
    ):
        calls.clear()
        auto = rag.retrieve(q, now=NOW, use_cache=False)
        assert auto.recipe == "ppr" and calls == [q]
        named = rag.retrieve(q, recipe="ppr", now=NOW, use_cache=False)
        assert [(c.id, c.score, c.components) for c in auto.chunks] == [
            (c.id, c.score, c.components) for c in named.chunks
        ]
        assert [(a.id, a.score) for a in auto.anchors] == [(a.id, a.score) for a in named.anchors]


def _recognize_into(out: list[Any], names: Any, q: str) -> None:
    out.append(names.recognize(q, limit=2))


def test_recognize_shares_matches_within_a_block() -> None:
    """Inside ``NameIndex.sharing`` a repeated query gets the first call's matches (any
    limit: the first ones of the full list, as a fresh recognition with that limit gives);
    outside it and in other threads every call recognises afresh."""
    import threading

    tables = _tables({"a": ["Ada Lovelace", "Alan Turing", "Ada", "Turing"]})
    index = GraphIndex.build(tables, embedder=_emb())
    names = index.names
    q = "Ada Lovelace met Alan Turing; Ada and Turing"
    want = {n: names.recognize(q, limit=n) for n in (1, 2, 3, 10)}
    calls: list[str] = []
    inner = names._recognize

    def counted(query: str, t: int, lim: int | None) -> Any:
        calls.append(query)
        return inner(query, t, lim)

    names._recognize = counted  # type: ignore[method-assign]
    for first, then in ((1, 10), (10, 1), (2, 3)):
        calls.clear()
        with names.sharing():
            assert names.recognize(q, limit=first) == want[first]
            with names.sharing():  # nested: the outer block's matches
                assert names.recognize(q, limit=then) == want[then]
            seen: list[Any] = []
            th = threading.Thread(target=partial(_recognize_into, seen, names, q))
            th.start()
            th.join()
            assert seen == [want[2]]
        assert calls == [q, q]  # this thread once, the other thread once
    calls.clear()
    names.recognize(q, limit=1)
    names.recognize(q, limit=1)
    assert calls == [q, q]  # outside a block: no sharing


def test_profile_rules() -> None:
    base = dict(
        tiers=False,
        facts=True,
        dated_facts=False,
        chunks=True,
        linked_chunks=False,
        chunk_vectors=True,
        keywords=True,
    )
    q = "Who founded the band?"
    assert IndexRouter(IndexProfile(**{**base, "linked_chunks": True})).route(q).recipe == "ppr"
    rel = IndexRouter(IndexProfile(**{**base, "linked_chunks": True})).route(
        "How is Rust related to this project?"
    )
    assert rel.recipe == "graph_recall" and "relationships" in rel.reasons[-1]
    assert IndexRouter(IndexProfile(**base)).route(q).recipe == "hybrid"
    assert IndexRouter(IndexProfile(**{**base, "keywords": False})).route(q).recipe == "vector"
    assert IndexRouter(IndexProfile(**{**base, "chunk_vectors": False})).route(q).recipe == "bm25"
    no_chunks = {**base, "chunks": False, "chunk_vectors": False, "keywords": False}
    assert IndexRouter(IndexProfile(**no_chunks)).route(q).recipe == "graph_recall"
    dated = {**no_chunks, "dated_facts": True}
    assert IndexRouter(IndexProfile(**dated)).route(q).recipe == "spreading_activation"
    # The seed router stays available and keeps its own choice.
    assert HeuristicRouter().route(q).recipe == "spreading_activation"
    with pytest.raises(ParameterError):
        IndexRouter("profile")  # type: ignore[arg-type]


def test_profile_of_an_index() -> None:
    index = GraphIndex.build(_tables({"a": ["Ada", "Alan"], "b": ["Grace"]}), embedder=_emb())
    pa = IndexProfile.of(index, index.tenant_code("a"))
    assert pa.linked_chunks and pa.facts and not pa.tiers and not pa.dated_facts
    pb = IndexProfile.of(index, index.tenant_code("b"))
    assert pb.chunks and not pb.facts and not pb.linked_chunks


def test_routed_hybrid_without_tiers_falls_back_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rag = GraphRAG.from_tables(_tables({"a": ["Ada Lovelace", "Alan Turing"]}), embedder=_emb())
    with caplog.at_level(logging.WARNING, logger="graphrecall"):
        res = rag.retrieve("Ada Lovelace", recipe="routed_hybrid", now=NOW)
    assert res.chunks and res.fallback is not None and "no tiers" in res.fallback
    assert res.tiers is not None and list(res.tiers) == ["all"]
    assert "no tiers" in caplog.text


def test_fact_recipes_return_supporting_passages() -> None:
    index = GraphIndex.build(_tables({"a": ["Ada", "Alan", "Grace"]}, since=True), embedder=_emb())
    assert get_recipe("spreading_activation").params().passages == 10
    out = GraphRAG(index).retrieve("Ada", recipe="spreading_activation", now=NOW)
    assert out.facts and out.chunks
    # Each passage mentions an endpoint of a ranked fact; the best fact's come first.
    first = out.facts[0]
    assert out.chunks[0].id in {f"c-{first.subject}", f"c-{first.object}"}
    assert out.chunks[0].score == first.score


def test_baselines_run_and_fall_back_precisely(caplog: pytest.LogCaptureFixture) -> None:
    tables = _tables({"a": ["Ada Lovelace", "Alan Turing"], "b": ["Grace Hopper"]})
    rag = GraphRAG.from_tables(tables, embedder=_emb())
    for name in ("vector", "bm25", "hybrid"):
        res = rag.retrieve("Grace Hopper", recipe=name, tenant="b", now=NOW)
        assert [c.id for c in res.chunks] == ["c-b0"] and res.fallback is None
    assert rag.retrieve("Alan Turing", recipe="hybrid", tenant="a").chunks[0].id == "c-a1"
    no_vectors = GraphRAG.from_tables(tables, embedder=None)
    with pytest.raises(ParameterError, match="chunk vectors"):
        no_vectors.retrieve("Grace", recipe="vector", tenant="b")
    with caplog.at_level(logging.WARNING, logger="graphrecall"):
        res = no_vectors.retrieve("Grace Hopper", recipe="hybrid", tenant="b")
    assert res.fallback is not None and "BM25" in res.fallback
    assert [c.id for c in res.chunks] == ["c-b0"]
    assert "recipe hybrid" in caplog.text


def _kinds() -> dict[str, GraphTables]:
    t = _tables({"a": ["Ada Lovelace", "Alan Turing", "Grace Hopper"]})
    no_facts = {"id": [], "subject": [], "object": [], "predicate": []}
    return {
        "full": t,
        "no_chunks": GraphTables(entities=t.entities, facts=t.facts),
        "no_facts": GraphTables(
            entities=t.entities, facts=no_facts, chunks=t.chunks, mentions=t.mentions
        ),
    }


@pytest.mark.parametrize("kind", ["full", "no_chunks", "no_facts"])
@pytest.mark.parametrize("with_vectors", [True, False])
def test_no_recipe_is_silently_empty(kind: str, with_vectors: bool) -> None:
    """On an index lacking facts, chunks or vectors, every recipe either finds something,
    says in ``fallback`` why it did not, or raises a ParameterError naming what is missing."""
    index = GraphIndex.build(_kinds()[kind], embedder=_emb() if with_vectors else None)
    for name, fn in RECIPES.items():
        try:
            res = fn(index, "Ada Lovelace", now=NOW)[0]
        except ParameterError as exc:
            assert any(w in str(exc) for w in ("chunk", "vectors", "BM25")), (name, exc)
            continue
        assert res.facts or res.chunks or res.fallback, (kind, with_vectors, name)
