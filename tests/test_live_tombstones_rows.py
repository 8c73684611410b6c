"""Entity and chunk deletes as tombstones: no rebuild and no new base, the deleted id is
unknown to every caller at once, its rows stay in the tables until a new base drops them,
and every answer (through the live graph, GraphRAG.update and the service) equals a fresh
build of the tables without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from graphrecall import GraphIndex, GraphRAG
from graphrecall.errors import GraphRecallError, UnknownIdError
from graphrecall.live.dead import ChunkTombstones, EntityTombstones
from graphrecall.live.delete import Deletion
from graphrecall.service.backend import Backend
from test_live_overlay import EMBEDDER, NOW, answers, assert_fresh, live_demo, live_tables


def _no_new_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a rebuild from the tables or a new base (``CoreGraph.without``) fail."""
    from graphrecall.tables import GraphTables

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a delete rebuilt the graph or made a new base")

    monkeypatch.setattr(GraphTables, "build_graph", refuse)
    monkeypatch.setattr(Deletion, "apply", refuse)


def _error(call: Any, value: Any) -> tuple[str, Any]:
    with pytest.raises(GraphRecallError) as info:
        call(value)
    return str(info.value), getattr(info.value, "kind", None)


def test_a_deleted_entity_is_unknown_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    with live_demo() as live:
        with monkeypatch.context() as m:
            _no_new_base(m)
            report = live.delete_entities(["jacq"])
            assert isinstance(live._log[-1], EntityTombstones)
            cur = live.current()
            assert cur.dead_entities.tolist() == [1]
            assert report.rows["facts"] == len(cur.dead_facts) > 0
            assert report.rows["mentions"] >= 1
            g = cur.graph
            never = "no_such_entity"
            for call in (
                lambda e: g.entity_index([e]),
                lambda e: g.adjacency(e),
                lambda e: live.delete_entities([e]),
            ):
                got, want = _error(call, "jacq"), _error(call, never)
                assert got[1] == want[1]
                assert got[0] == want[0].replace(never, "jacq")
            # In no tenant's listing, in no chunk's mentions.
            assert 1 not in g.core.tenant_entities(int(g.core.entity_tenants()[1])).tolist()
            for c in range(g.n_chunks):
                assert 1 not in g.core.chunk_entities(c)[0].tolist()
        assert_fresh(live)


def test_a_deleted_chunk_is_unknown_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    with live_demo() as live:
        chunks = live_tables(live).chunks
        assert chunks is not None
        row = chunks["id"].tolist().index("c_ned_lord")
        with monkeypatch.context() as m:
            _no_new_base(m)
            report = live.delete_chunks(["c_ned_lord"])
            assert isinstance(live._log[-1], ChunkTombstones)
            assert report.rows["chunks"] == 1 and report.rows["mentions"] >= 1
            cur = live.current()
            assert cur.dead_chunks.tolist() == [row]
            g = cur.graph
            for call in (
                lambda c: g.chunk_index([c]),
                lambda c: live.delete_chunks([c]),
                lambda c: live.record_access(chunk_ids=[c], at=NOW),
            ):
                got, want = _error(call, "c_ned_lord"), _error(call, "c_never")
                assert got[1] == want[1]
                assert got[0] == want[0].replace("c_never", "c_ned_lord")
            assert not len(g.core.chunk_entities(row)[0])
        assert_fresh(live)
        with pytest.raises(GraphRecallError):
            live.add_mentions([{"chunk": "c_ned_lord", "entity": "ned", "count": 1}])
        assert_fresh(live)


def test_facts_and_mentions_naming_a_deleted_entity_are_refused() -> None:
    with live_demo() as live:
        live.delete_entities(["jacq"])
        with pytest.raises(GraphRecallError):
            live.add_facts([{"subject": "user", "object": "jacq", "predicate": "prefers"}])
        with pytest.raises(GraphRecallError):
            live.add_mentions([{"chunk": "c_ned_lord", "entity": "jacq", "count": 1}])
        fid = int(live_tables(live).facts["id"][0])
        with pytest.raises(GraphRecallError):
            live.update_facts([{"id": fid, "object": "jacq"}])
        assert_fresh(live)


def test_deleted_ids_can_be_added_again() -> None:
    with live_demo() as live:
        live.delete_entities(["jacq"])
        live.delete_chunks(["c_ned_lord"])
        live.add_entities([{"id": "jacq", "tenant": "alice", "name": "JACQ again"}])
        live.add_chunks([{"id": "c_ned_lord", "tenant": "stark", "text": "Ned again."}])
        live.add_mentions([{"chunk": "c_ned_lord", "entity": "ned", "count": 1}])
        live.add_facts([{"subject": "user", "object": "jacq", "predicate": "prefers"}])
        g = live.graph
        assert len(g.adjacency("jacq")[1]) == 1
        assert_fresh(live)


def test_entities_added_after_a_delete_keep_it_out_of_the_listings() -> None:
    with live_demo() as live:
        live.delete_entities(["jacq"])
        epoch = live._epoch
        live.add_entities([{"id": "newcomer", "tenant": "alice", "name": "Newcomer"}])
        assert live._epoch == epoch and len(live.current().dead_entities) == 1
        assert_fresh(live)


def test_a_compaction_drops_dead_entities_and_chunks() -> None:
    with live_demo() as live:
        n_e = live.graph.n_entities
        live.delete_entities(["jacq"])
        live.delete_chunks(["c_ned_lord"])
        live.add_facts([{"subject": "user", "object": "duckdb", "predicate": "prefers"}])
        live.compact()
        cur = live.current()
        assert live.compaction_error is None and live.overlay_len == 0
        assert not (len(cur.dead_facts) or len(cur.dead_entities) or len(cur.dead_chunks))
        assert cur.graph.n_entities == cur.tables.n_rows("entities") == n_e - 1
        assert "jacq" not in cur.tables.entities["id"].tolist()
        assert_fresh(live)


def test_tables_and_saves_hold_no_deleted_rows(tmp_path: Path) -> None:
    with live_demo() as live:
        live.delete_entities(["jacq"])
        live.delete_chunks(["c_ned_lord"])
        cur = live.current()
        index = GraphIndex.build(cur.tables, graph=cur.graph, checked=True, embedder=None)
        saved = GraphIndex.load(index.save(tmp_path / "idx"), embedder=None)
        assert "jacq" not in saved.tables.entities["id"].tolist()
        assert saved.tables.chunks is not None
        assert "c_ned_lord" not in saved.tables.chunks["id"].tolist()
        assert "jacq" not in live.tables.entities["id"].tolist()  # compacted first
        assert not len(live.current().dead_entities)
        assert_fresh(live)


def test_rag_update_after_entity_and_chunk_deletes_equals_a_fresh_index() -> None:
    with live_demo() as live:
        cur = live.current()
        rag = GraphRAG(GraphIndex.build(cur.tables, graph=cur.graph, embedder=EMBEDDER))
        live.delete_entities(["jacq"])
        live.delete_chunks(["c_ned_lord"])
        cur = live.current()
        rag.update(cur.tables, graph=cur.graph, checked=True)
        fresh_tables = live_tables(live)
        _, want = answers(fresh_tables.build_graph(), fresh_tables)
        _, got = answers(rag.index.graph, rag.index.tables)
        assert got == want


def test_the_service_answers_after_entity_and_chunk_deletes() -> None:
    with live_demo() as live:
        cur = live.current()
        rag = GraphRAG(GraphIndex.build(cur.tables, graph=cur.graph, checked=True, embedder=None))
        backend = Backend(rag, live)
        backend._apply(live.delete_entities(["jacq"]), live)  # the service's write path
        backend._apply(live.delete_chunks(["c_ned_lord"]), live)
        after = rag.retrieve("JACQ project", tenant="alice", now=NOW, use_cache=False)
        assert "jacq" not in [h.id for h in after.entities]
        assert "c_ned_lord" not in [c.id for c in after.chunks]
        with pytest.raises(UnknownIdError):
            rag.index.graph.entity_index(["jacq"])


def test_a_tenant_left_without_entities_takes_a_new_base() -> None:
    with live_demo() as live:
        t = live_tables(live).entities
        tenant = "stark"
        mates = [
            e for e, tn in zip(t["id"].tolist(), t["tenant"].tolist(), strict=True) if tn == tenant
        ]
        live.delete_entities(mates[:-1])
        assert isinstance(live._log[-1], EntityTombstones)
        epoch = live._epoch
        live.delete_entities(mates[-1:])  # the tenant's last entity: its code would move
        assert live._epoch > epoch and not len(live.current().dead_entities)
        assert_fresh(live)
