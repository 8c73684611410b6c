"""Deletes of facts, entities and chunks make the next graph from the current one (no
rebuild from the tables: tombstones for facts, a new base for entities and chunks) and
answer exactly as a fresh build of the tables without the deleted rows; a compaction
running meanwhile replays them; GraphRAG.update after a delete answers as a fresh
index."""

from __future__ import annotations

import numpy as np
import pytest
from graphrecall import GraphRAG, LiveGraph
from graphrecall.errors import UnknownIdError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_live_index import _answers, _fresh, _live_rag
from test_live_overlay import assert_fresh, live_demo


def _no_rebuild(live: LiveGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any rebuild of ``live``'s graph from its tables fail the test."""
    from graphrecall.tables import GraphTables

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a delete rebuilt the graph")

    monkeypatch.setattr(GraphTables, "build_graph", refuse)


def test_fact_entity_and_chunk_deletes_do_not_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    with live_demo() as live:
        epoch, n = live._epoch, live.graph.n_facts
        with monkeypatch.context() as m:
            _no_rebuild(live, m)
            report = live.delete_facts([0, 5])
            assert report.rows == {"facts": 2}
            # Tombstones: the rows stay (graph index == table row) until a new base.
            assert live.graph.n_facts == n and len(live.current().dead_facts) == 2
            live.delete_chunks(["c_ned_lord"])
            live.delete_entities(["jacq"])
            with pytest.raises(UnknownIdError):
                live.delete_facts([0])  # gone
        # Tombstones all: no new base, the rows and their indices stay.
        assert live._epoch == epoch
        cur = live.current()
        assert (len(cur.dead_chunks), len(cur.dead_entities)) == (1, 1)
        assert live.graph.fact_index([1]).tolist() == [1]
        assert_fresh(live)
        live.compact()  # a new base without the dead rows: the rest renumbered
        assert live._epoch == epoch + 1
        assert live.graph.fact_index([1]).tolist() == [0]
        assert_fresh(live)
        with pytest.raises(UnknownIdError):
            live.graph.entity_index(["jacq"])


def test_deletes_after_overlay_changes_answer_as_a_fresh_build() -> None:
    with live_demo() as live:
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        live.update_facts([{"id": 3, "confidence": 0.25}])
        live.add_chunks([{"id": "c_new", "tenant": "stark", "text": "Ned rides."}])
        live.add_mentions([{"chunk": "c_new", "entity": "ned", "count": 2}])
        assert live.overlay_len > 0
        epoch = live._epoch
        live.delete_facts([1000, 2])
        assert live._epoch == epoch and len(live.current().dead_facts) == 2  # tombstones
        assert_fresh(live)
        live.delete_chunks(["c_new"])
        live.delete_entities(["ned"])
        assert live._epoch == epoch  # tombstones
        assert_fresh(live)
        live.compact()
        assert live._epoch == epoch + 1 and live.overlay_len == 0
        assert_fresh(live)


def test_a_compaction_running_while_a_delete_lands_replays_it() -> None:
    with live_demo() as live:
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        core = live.graph.core
        epoch, n_log = live._epoch, len(live._log)
        live.delete_facts([1])
        live.update_facts([{"id": 1000, "confidence": 0.1}])
        live._compact(core, epoch, n_log)
        assert live.compaction_error is None
        assert_fresh(live)
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)


def test_a_delete_that_empties_a_tenant_rebuilds() -> None:
    with live_demo() as live:
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "solo"}])
        epoch = live._epoch
        live.delete_facts([1000])  # a predicate word left unused stays, as after an update
        assert live._epoch == epoch and "solo" in live.graph.predicates.names
        assert_fresh(live)
        live.add_entities([{"id": "zed", "tenant": "a new tenant"}])
        epoch = live._epoch
        live.delete_entities(["zed"])  # the tenant codes move: rebuilt
        assert live._epoch == epoch + 1
        assert "a new tenant" not in live.graph.tenants.names
        assert_fresh(live)


def test_the_graph_a_reader_holds_is_unchanged_by_a_delete() -> None:
    with live_demo() as live:
        held = live.current()
        ids = held.tables.facts["id"].copy()
        live.delete_facts([ids[0]])
        assert held.graph.n_facts == len(ids)
        assert held.graph.fact_index([ids[0]]).tolist() == [0]
        assert np.array_equal(held.tables.facts["id"], ids)


DELETE_OPS = st.tuples(
    st.sampled_from(["delete_fact", "delete_entity", "delete_chunk", "add_fact"]),
    st.integers(0, 200),
)


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(DELETE_OPS, min_size=1, max_size=4))
def test_rag_update_after_deletes_answers_as_a_fresh_build(ops: list[tuple[str, int]]) -> None:
    """``rag.update(tables, graph=live graph)`` after deletes takes the graph the delete
    made and answers every recipe as a fresh index of the same tables."""
    with _live_rag() as (live, rag):
        for i, (kind, k) in enumerate(ops):
            t = live.tables
            if kind == "delete_fact":
                ids = t.facts["id"].tolist()
                live.delete_facts([ids[k % len(ids)]])
            elif kind == "delete_entity":
                ids = t.entities["id"].tolist()
                live.delete_entities([ids[k % len(ids)]])
            elif kind == "delete_chunk" and t.chunks is not None and len(t.chunks["id"]):
                ids = t.chunks["id"].tolist()
                live.delete_chunks([ids[k % len(ids)]])
            else:
                ents = t.entities
                j = k % len(ents["id"])
                same = [
                    e
                    for e, tn in zip(ents["id"], ents["tenant"], strict=True)
                    if tn == ents["tenant"][j]
                ]
                live.add_facts(
                    [
                        {
                            "id": 5000 + i,
                            "subject": ents["id"][j],
                            "object": same[(k // 3) % len(same)],
                            "predicate": "next",
                        }
                    ]
                )
            cur = live.current()
            idx = rag.update(cur.tables, graph=cur.graph, checked=True)
            if idx.graph is not cur.graph:  # masks need an index of the same rows before
                assert idx.graph.n_entities == cur.graph.n_entities - len(cur.dead_entities)
                assert idx.graph.n_chunks == cur.graph.n_chunks - len(cur.dead_chunks)
        assert _answers(rag) == _answers(_fresh(live))
        assert isinstance(rag, GraphRAG)
