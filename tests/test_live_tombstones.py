"""Fact deletes as tombstones: the deleted fact is cut out of the graph at once (no rebuild,
no new base), its id is unknown to every caller, its table row stays until the next
compaction drops it, and every answer equals a fresh build of the tables without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphIndex, GraphRAG, LiveGraph
from graphrecall.errors import UnknownIdError
from graphrecall.live.delete import Deletion
from graphrecall.live.tombstones import LiveIds, Tombstones
from graphrecall.service.backend import Backend
from test_live_overlay import (
    LONG_ROW,
    NOW,
    _same_tenant_pair,
    assert_fresh,
    hub_facts,
    live_demo,
    live_tables,
)


def _no_new_base(live: LiveGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a rebuild from the tables or a new base (``CoreGraph.without``) fail."""
    from graphrecall.tables import GraphTables

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a fact delete rebuilt the graph or made a new base")

    monkeypatch.setattr(GraphTables, "build_graph", refuse)
    monkeypatch.setattr(Deletion, "apply", refuse)


def _error(call: Any, fid: Any) -> tuple[str, Any]:
    with pytest.raises(UnknownIdError) as info:
        call(fid)
    return str(info.value), info.value.kind


def test_a_deleted_id_is_unknown_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    with live_demo() as live:
        fid = int(live_tables(live).facts["id"][3])
        never = 10**6
        with monkeypatch.context() as m:
            _no_new_base(live, m)
            report = live.delete_facts([fid])
        assert report.rows == {"facts": 1}
        assert isinstance(live._log[-1], Tombstones)
        cur = live.current()
        assert cur.dead_facts.tolist() == [3]
        assert isinstance(cur.graph.fact_map, LiveIds)
        # The precise errors of an id the graph never held.
        for call in (
            lambda f: live.update_facts([{"id": f, "confidence": 0.5}]),
            lambda f: live.record_access([f], at=NOW),
            lambda f: live.delete_facts([f]),
            lambda f: cur.graph.fact_index([f]),
            lambda f: cur.graph.facts([f]),
        ):
            got, want = _error(call, fid), _error(call, never)
            assert got[1] == want[1]
            assert got[0] == want[0].replace(str(never), str(fid))
        assert not cur.graph.fact_map.holds_any(np.array([fid]))
        for e in cur.tables.entities["id"].tolist():
            assert fid not in [f for a in cur.graph.adjacency(e) for f in a.tolist()]
        assert_fresh(live)


def test_a_deleted_id_can_be_added_again() -> None:
    with live_demo() as live:
        row = live_tables(live).facts
        fid, subject = int(row["id"][5]), row["subject"][5]
        live.delete_facts([fid])
        live.add_facts([{"id": fid, "subject": subject, "object": None, "predicate": "prefers"}])
        assert fid in live.graph.adjacency(subject)[0].tolist()
        assert_fresh(live)


def test_the_next_id_after_deleting_the_largest_is_a_fresh_loads() -> None:
    with live_demo() as live:
        ids = live_tables(live).facts["id"]
        top = int(ids.max())
        subject = live_tables(live).facts["subject"][int(np.argmax(ids))]
        live.delete_facts([top])
        live.add_facts([{"subject": subject, "predicate": "prefers"}])
        fresh = LiveGraph(live.store, live.store.read())
        assert int(live_tables(live).facts["id"].max()) == top  # max live + 1
        assert sorted(live_tables(live).facts["id"].tolist()) == sorted(
            fresh.tables.facts["id"].tolist()
        )
        assert_fresh(live)


def test_a_compaction_drops_the_tombstones() -> None:
    with live_demo() as live:
        ids = live_tables(live).facts["id"].tolist()
        n = live.graph.n_facts
        live.delete_facts([ids[0], ids[7]])
        assert live.overlay_len >= 2
        live.compact()
        cur = live.current()
        assert live.compaction_error is None
        assert not len(cur.dead_facts) and live.overlay_len == 0
        assert cur.graph.n_facts == cur.tables.n_rows("facts") == n - 2
        assert not isinstance(cur.graph.fact_map, LiveIds)
        assert cur.graph.fact_index([ids[1]]).tolist() == [0]  # renumbered as a fresh build
        assert_fresh(live)
        reloaded = live.store.load()
        assert reloaded.tables.facts["id"].tolist() == cur.tables.facts["id"].tolist()


def test_a_compaction_running_while_tombstones_land_replays_them() -> None:
    with live_demo() as live:
        ids = live_tables(live).facts["id"].tolist()
        live.delete_facts([ids[2]])
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        core, epoch, n_log = live.graph.core, live._epoch, len(live._log)
        # Changes while it runs: a delete, an update and an add after the tombstone.
        live.delete_facts([ids[9], 1000])
        live.update_facts([{"id": ids[4], "confidence": 0.15}])
        live.add_facts([{"id": 1001, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        live._compact(core, epoch, n_log)
        assert live.compaction_error is None
        cur = live.current()
        assert len(cur.dead_facts) == 2  # the later tombstones, renumbered
        assert_fresh(live)
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)


def test_a_fact_added_in_the_overlay_can_be_deleted() -> None:
    with live_demo() as live:
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        live.update_facts([{"id": 1000, "confidence": 0.2}])
        live.delete_facts([1000])
        assert live.graph.core.dead_facts().tolist() == [live.graph.n_facts - 1]
        assert 1000 not in live.graph.adjacency("user")[0].tolist()
        assert_fresh(live)


def test_hub_rows_lose_facts_as_tombstones() -> None:
    """A hub's long rows, compacted into the base, lose facts one by one (delta runs with
    entries cut out), then take new facts spliced in around the cuts."""
    with live_demo() as live:
        live.add_facts(hub_facts(live_tables(live), 1, 2, 3, n=2 * LONG_ROW))
        live.compact()
        hub_id, _ = _same_tenant_pair(live_tables(live), 1, 0)
        out, inn = live.graph.adjacency(hub_id)
        touching = out.tolist() + inn.tolist()
        assert len(touching) > 2 * LONG_ROW - 1
        for i in range(6):
            live.delete_facts([touching[(7 * i + 3) % len(touching)]])
            assert_fresh(live)
        live.add_facts(hub_facts(live_tables(live), 1, 5, 1))
        assert_fresh(live)
        live.compact()
        assert_fresh(live)


def test_entity_and_chunk_deletes_add_tombstones() -> None:
    with live_demo() as live:
        ids = live_tables(live).facts["id"].tolist()
        live.delete_facts([ids[1]])
        report = live.delete_entities(["jacq"])
        assert len(live.current().dead_facts) == report.rows["facts"] + 1
        assert live.current().dead_entities.tolist() == [1]
        assert ids[1] not in live_tables(live).facts["id"]
        assert_fresh(live)
        live.delete_facts([live_tables(live).facts["id"][6]])
        live.delete_chunks(["c_ned_lord"])
        cur = live.current()
        assert len(cur.dead_chunks) == 1 and len(cur.dead_entities) == 1
        assert_fresh(live)
        live.compact()  # one new base drops them all
        cur = live.current()
        assert not (len(cur.dead_facts) or len(cur.dead_entities) or len(cur.dead_chunks))
        assert_fresh(live)


def test_tables_and_saves_hold_no_deleted_rows(tmp_path: Path) -> None:
    with live_demo() as live:
        ids = live_tables(live).facts["id"].tolist()
        n = len(ids)
        live.delete_facts([ids[3]])
        cur = live.current()
        index = GraphIndex.build(cur.tables, graph=cur.graph, checked=True, embedder=None)
        saved = GraphIndex.load(index.save(tmp_path / "idx"), embedder=None)
        assert saved.tables.n_rows("facts") == saved.graph.n_facts == n - 1
        assert ids[3] not in saved.tables.facts["id"].tolist()
        assert live.current().tables.n_rows("facts") == n  # the tombstone still
        assert live.tables.n_rows("facts") == n - 1  # whole tables: compacted first
        assert not len(live.current().dead_facts)
        assert_fresh(live)


def test_the_service_answers_after_a_delete() -> None:
    with live_demo() as live:
        cur = live.current()
        rag = GraphRAG(GraphIndex.build(cur.tables, graph=cur.graph, checked=True, embedder=None))
        backend = Backend(rag, live)
        tables = live_tables(live)
        fid, subject = tables.facts["id"][0], tables.facts["subject"][0]
        tenant = tables.entities["tenant"][tables.entities["id"].tolist().index(subject)]
        before = rag.retrieve("JACQ project", tenant=tenant, now=NOW, use_cache=False)
        backend._apply(live.delete_facts([fid]), live)  # the service's write path
        with pytest.raises(UnknownIdError, match="no fact"):
            backend.update_facts(tenant, [{"id": int(fid), "confidence": 0.5}])
        after = rag.retrieve("JACQ project", tenant=tenant, now=NOW, use_cache=False)
        assert fid not in [h.id for h in after.facts]
        assert before is not after


def test_a_compaction_running_while_an_entity_delete_is_dropped() -> None:
    """A compaction that started before an entity delete is not swapped in (the dead
    entity goes with the next new base), and the state answers as a fresh build."""
    with live_demo() as live:
        ids = live_tables(live).facts["id"].tolist()
        live.delete_facts([ids[2]])
        core, epoch, n_log = live.graph.core, live._epoch, len(live._log)
        live.delete_entities(["jacq"])
        live._compact(core, epoch, n_log)
        assert live.compaction_error is None
        assert len(live.current().dead_entities) == 1
        assert_fresh(live)
        live.compact()
        cur = live.current()
        assert not len(cur.dead_facts) and not len(cur.dead_entities)
        assert_fresh(live)
