"""``LiveGraph.update_entities`` / ``update_chunks`` and ``delete_mentions`` /
``delete_aliases``: the errors (unknown, deleted, malformed, bad values, tenant rules), what
the store holds afterwards, and the graph answering as a fresh build of its tables."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall import LiveGraph
from graphrecall.demo import demo_data, demo_tables
from graphrecall.errors import DataError, UnknownIdError
from graphrecall.live.overlay import MentionDrop, NoChange, TenantChange
from graphrecall.storage.sqlite import SQLiteStore
from graphrecall.tables import NULL_TIME, BadDataError
from test_live_overlay import assert_fresh
from test_storage_sqlite import assert_tables_equal


@contextmanager
def live_store() -> Iterator[tuple[LiveGraph, Path]]:
    """The demo graph in a fresh SQLite store, loaded live, and the store's path."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.db"
        store = SQLiteStore.create(path)
        try:
            tables, _ = demo_tables(demo_data()).check()
            store.write(tables)
            yield store.load(), path
        finally:
            store.close()


def _unchanged(live: LiveGraph, version: int, before: Any) -> None:
    """Nothing was swapped in or written."""
    assert live.version == version
    assert_tables_equal(live.store.read(), before)


def _mention(live: LiveGraph, k: int = 0) -> tuple[Any, Any]:
    m = live.tables.mentions
    assert m is not None
    return m["chunk"][k], m["entity"][k]


def _lonely(live: LiveGraph, kind: str, tenant: str) -> str:
    """A new entity or chunk with no facts, mentions or references."""
    if kind == "entity":
        live.add_entities([{"id": "lonely", "tenant": tenant, "name": "Lonely One"}])
    else:
        live.add_chunks([{"id": "lonely", "tenant": tenant, "text": "Nobody here."}])
    return "lonely"


# ------------------------------------------------------------------------------ refused


@pytest.mark.parametrize("table", ["entities", "chunks"])
def test_unknown_deleted_and_malformed_records_are_refused(table: str) -> None:
    with live_store() as (live, _):
        update = live.update_entities if table == "entities" else live.update_chunks
        col = "name" if table == "entities" else "text"
        ids = live.tables.table(table)["id"].tolist()  # type: ignore[index]
        before, version = live.store.read(), live.version
        with pytest.raises(UnknownIdError):
            update([{"id": "no such id", col: "x"}])
        with pytest.raises(DataError, match="has no 'id'") as err:
            update([{col: "x"}])
        assert err.value.kind == "missing_id"
        with pytest.raises(DataError, match="unknown column 'colour'") as err:
            update([{"id": ids[0], "colour": "red"}])
        assert err.value.column == "colour"
        with pytest.raises(DataError, match="named twice"):
            update([{"id": ids[0], col: "a"}, {"id": ids[0], col: "b"}])
        _unchanged(live, version, before)
        # A deleted row's id is unknown from then on.
        (live.delete_entities if table == "entities" else live.delete_chunks)([ids[1]])
        with pytest.raises(UnknownIdError):
            update([{"id": ids[1], col: "x"}])


BAD_VALUES = [
    ("entities", {"name": 5}),
    ("entities", {"created_at": "not a time"}),
    ("entities", {"primary_chunk": "no such chunk"}),
    ("entities", {"primary_chunk": "c_ned_lord"}),  # a chunk of another tenant
    ("chunks", {"confidence": 1.5}),
    ("chunks", {"access_count": -1}),
    ("chunks", {"tags": 5}),
    ("chunks", {"confidence": -math.inf}),
]


@pytest.mark.parametrize(("table", "change"), BAD_VALUES)
def test_bad_values_are_refused_as_a_fresh_check_refuses_them(
    table: str, change: dict[str, Any]
) -> None:
    with live_store() as (live, _):
        tables = live.tables
        cols = tables.table(table)
        assert cols is not None
        row = cols["id"].tolist().index("jacq" if table == "entities" else "c_jacq")
        before, version = live.store.read(), live.version
        update = live.update_entities if table == "entities" else live.update_chunks
        with pytest.raises(BadDataError) as err:
            update([{"id": cols["id"][row], **change}])
        assert not err.value.report.ok
        _unchanged(live, version, before)
        # The whole tables with the change are refused by a fresh check too.
        changed = {c: a.astype(object) for c, a in cols.items()}
        for c, v in change.items():
            changed.setdefault(c, np.full(len(cols["id"]), None, dtype=object))[row] = v
        with pytest.raises(BadDataError):
            type(tables)(**{**tables.__dict__, table: changed}).check()


@pytest.mark.parametrize("table", ["entities", "chunks"])
def test_a_nan_time_is_a_null_time_as_a_fresh_check_reads_it(table: str) -> None:
    with live_store() as (live, _):
        rid = "jacq" if table == "entities" else "c_jacq"
        update = live.update_entities if table == "entities" else live.update_chunks
        update([{"id": rid, "created_at": math.nan}])
        cols = live.tables.table(table)
        assert cols is not None
        assert cols["created_at"][cols["id"].tolist().index(rid)] == NULL_TIME
        assert_tables_equal(live.store.read(), live.tables)


def test_a_tenant_change_that_would_cross_tenants_is_refused() -> None:
    with live_store() as (live, _):
        before, version = live.store.read(), live.version
        with pytest.raises(BadDataError, match="different tenants") as err:
            live.update_entities([{"id": "user", "tenant": "stark"}])  # it has facts
        assert {t.table for t in err.value.report.tables} >= {"facts"}
        with pytest.raises(BadDataError):
            live.update_chunks([{"id": "c_ned_lord", "tenant": "alice"}])  # mentions
        with pytest.raises(BadDataError):
            live.update_entities([{"id": "user", "tenant": None}])
        _unchanged(live, version, before)


def test_mention_and_alias_deletes_refuse_what_the_graph_does_not_hold() -> None:
    with live_store() as (live, _):
        chunk, entity = _mention(live)
        before, version = live.store.read(), live.version
        with pytest.raises(UnknownIdError, match="does not mention"):
            live.delete_mentions([(chunk, "user")])  # an entity the chunk does not name
        with pytest.raises(UnknownIdError):
            live.delete_mentions([("no such chunk", entity)])
        with pytest.raises(UnknownIdError, match="has no alias"):
            live.delete_aliases([("ned", "Lord Snow")])
        with pytest.raises(DataError, match="named twice"):
            live.delete_mentions([(chunk, entity), {"chunk": chunk, "entity": entity}])
        with pytest.raises(DataError, match="pair"):
            live.delete_aliases(["ned"])
        with pytest.raises(DataError, match="only"):
            live.delete_mentions([{"chunk": chunk, "entity": entity, "count": 1}])
        # One bad pair refuses the batch.
        with pytest.raises(UnknownIdError):
            live.delete_mentions([(chunk, entity), (chunk, "user")])
        _unchanged(live, version, before)
        live.delete_entities(["ned"])
        with pytest.raises(UnknownIdError):
            live.delete_aliases([("ned", "Ned")])


# ------------------------------------------------------------------------------ accepted


def test_changes_are_generations_and_answer_as_a_fresh_build() -> None:
    with live_store() as (live, _):
        epoch = live._epoch
        core = live.graph.core
        rep = live.update_entities(
            [
                {"id": "robert", "name": "Iron Man", "type": "hero", "description": "Suits."},
                {"id": "jacq", "primary_chunk": None},
            ]
        )
        assert rep.rows == {"entities": 2}
        assert live.graph.core is core and isinstance(live._log[-1], NoChange)
        assert "Iron Man" in live.graph.entity_names.tolist()
        assert_fresh(live)
        live.update_chunks([{"id": "c_jacq", "text": "JACQ moved.", "tags": ["x"], "scope": "s"}])
        assert live.graph.core is core
        assert_fresh(live)
        chunk, entity = _mention(live, 1)
        rep = live.delete_mentions([{"chunk": chunk, "entity": entity}])
        assert rep.rows == {"mentions": 1} and isinstance(live._log[-1], MentionDrop)
        assert live.overlay_len == 1
        assert_fresh(live)
        rep = live.delete_aliases([("ned", "Ned")])
        assert rep.rows["aliases"] == 1
        assert_fresh(live)
        assert live._epoch == epoch  # no rebuild
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)
        # A column the table lacks is added with its default: still no rebuild.
        core = live.graph.core
        live.update_entities([{"id": "jacq", "created_at": 1_700_000_000}])
        assert live._epoch == epoch and live.graph.core is core
        assert_fresh(live)


@pytest.mark.parametrize("table", ["entities", "chunks"])
@pytest.mark.parametrize("tenant", ["stark", "zeta"])
def test_a_tenant_change_rebuilds_and_answers_as_a_fresh_build(table: str, tenant: str) -> None:
    with live_store() as (live, _):
        rid = _lonely(live, "entity" if table == "entities" else "chunk", "alice")
        live.delete_facts([live.tables.facts["id"][0]])  # a tombstone the rebuild drops
        update = live.update_entities if table == "entities" else live.update_chunks
        epoch = live._epoch
        update([{"id": rid, "tenant": tenant}])
        if tenant == "stark":  # a held tenant: a generation
            assert live._epoch == epoch and isinstance(live._log[-1], TenantChange)
        else:  # a new tenant moves the codes of the sorted tenants: a rebuild
            assert live._epoch > epoch
        assert_fresh(live)
        cols = live.tables.table(table)
        assert cols is not None
        assert cols["tenant"][cols["id"].tolist().index(rid)] == tenant
        assert tenant in live.graph.tenants.names


def test_entities_joined_by_facts_move_together() -> None:
    with live_store() as (live, _):
        live.add_entities([{"id": k, "tenant": "alice", "name": k} for k in ("ka", "kb")])
        live.add_facts([{"id": 900, "subject": "ka", "object": "kb", "confidence": 0.7}])
        live.add_chunks([{"id": "kc", "tenant": "alice", "text": "ka"}])
        live.add_mentions([{"chunk": "kc", "entity": "ka"}])
        before, version = live.store.read(), live.version
        with pytest.raises(BadDataError, match="different tenants") as err:
            live.update_entities([{"id": "kb", "tenant": "stark"}])  # its fact crosses
        assert [t.table for t in err.value.report.tables if t.bad] == ["facts"]
        with pytest.raises(BadDataError):  # ka's mention by kc crosses
            live.update_entities([{"id": "ka", "tenant": "stark"}, {"id": "kb", "tenant": "stark"}])
        with pytest.raises(BadDataError):  # kc mentions ka
            live.update_chunks([{"id": "kc", "tenant": "stark"}])
        _unchanged(live, version, before)
        live.delete_mentions([("kc", "ka")])
        epoch = live._epoch
        live.update_entities([{"id": "ka", "tenant": "stark"}, {"id": "kb", "tenant": "stark"}])
        live.update_chunks([{"id": "kc", "tenant": "eliza", "text": "moved"}])
        assert live._epoch == epoch
        assert_fresh(live)
        m = live.tables.mentions
        assert m is not None
        pairs = zip(m["chunk"].tolist(), m["entity"].tolist(), strict=True)
        live.delete_mentions([(c, e) for c, e in pairs if c == "c_jacq"])
        with pytest.raises(BadDataError, match="primary_chunk"):  # jacq's primary chunk
            live.update_chunks([{"id": "c_jacq", "tenant": "stark"}])
        live.update_entities([{"id": "jacq", "primary_chunk": None}])
        live.update_chunks([{"id": "c_jacq", "tenant": "stark"}])
        assert isinstance(live._log[-1], TenantChange)
        assert_fresh(live)
        with pytest.raises(BadDataError):  # duckdb's primary chunk is c_duck (alice)
            live.update_entities([{"id": "duckdb", "tenant": "stark"}])
        live.compact()
        assert_fresh(live)
        assert_tables_equal(live.store.read(), live.tables)


def test_the_store_holds_what_the_graph_shows() -> None:
    with live_store() as (live, path):
        live.update_entities([{"id": "robert", "name": "Iron Man", "description": None}])
        live.update_chunks([{"id": "c_jacq", "text": "JACQ moved.", "metadata": {"k": 1}}])
        live.delete_mentions([_mention(live, 2)])
        live.delete_aliases([("ned", "Eddard Stark")])
        rid = _lonely(live, "entity", "alice")
        live.update_entities([{"id": rid, "tenant": "eliza"}])
        want = live.tables
        live.store.close()
        again = SQLiteStore.open(path)
        try:
            assert_tables_equal(again.read(), want)
            assert_tables_equal(again.load().tables, want)
        finally:
            again.close()


def test_a_compaction_running_meanwhile_replays_the_changes() -> None:
    with live_store() as (live, _):
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "confidence": 0.8}])
        core = live.graph.core
        epoch, n_log = live._epoch, len(live._log)
        live.delete_mentions([_mention(live, 0)])
        live.update_entities([{"id": "jacq", "name": "Jacques"}])
        live.delete_aliases([("ned", "Ned")])
        live._compact(core, epoch, n_log)
        assert live.compaction_error is None
        assert live.overlay_len == 1  # the mention delete, replayed on the new base
        assert_fresh(live)


def test_counts_waiting_for_a_refresh_are_shown_with_the_change() -> None:
    with live_store() as (live, _):
        fid = live.tables.facts["id"][0]
        n = live.graph.facts([fid])[0]["access_count"]
        live.record_access([fid], at=int(demo_data()["now"]), refresh=False)
        live.update_entities([{"id": "robert", "name": "Iron Man"}])
        assert live.graph.facts([fid])[0]["access_count"] == n + 1
        live.record_access([fid], at=int(demo_data()["now"]), refresh=False)
        live.delete_mentions([_mention(live, 0)])
        assert live.graph.facts([fid])[0]["access_count"] == n + 2
        assert_fresh(live)
