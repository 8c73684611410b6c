"""The storage table model and the embedded SQLite store: round trips, schema versions,
corrupted files, every bad-data rule (raise and skip), incremental updates, readers during
updates, usage write-back and its durability across a killed process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import NOW, PROPERTY, GraphData, examples, graph_data
from graphrecall import DataError, GraphRecallError, KnowledgeGraph, ParameterError, UnknownIdError
from graphrecall.live import LiveGraph
from graphrecall.storage import (
    BadDataError,
    CorruptStoreError,
    EmbeddingSet,
    GraphTables,
    LoadReport,
    NotAStoreError,
    SchemaVersionError,
    StorageError,
)
from graphrecall.storage.sqlite import SCHEMA_VERSION, SQLiteStore
from graphrecall.tables import NULL_TIME
from hypothesis import given, settings

# ------------------------------------------------------------------------------ helpers


def tables_of(data: GraphData) -> GraphTables:
    """The rows of a conftest graph as GraphTables."""

    def cols(rows: list[dict[str, Any]]) -> dict[str, Any]:
        keys = list(dict.fromkeys(k for r in rows for k in r))
        return {k: [r.get(k) for r in rows] for k in keys}

    return GraphTables(
        entities=cols(data.entities),
        facts=cols(data.facts),
        chunks=cols(data.chunks) if data.chunks else None,
        mentions=cols(data.mentions) if data.mentions else None,
    )


def observe(g: KnowledgeGraph, entities: list[Hashable], facts: list[Hashable]) -> dict[str, Any]:
    """Everything observable about a graph, as plain values."""
    act = g.spread([[e] for e in entities], direction="both", max_hops=3)
    ppr = g.personalized_pagerank([[e] for e in entities])
    return {
        "facts": g.facts(facts),
        "adjacency": [[x.tolist() for x in g.adjacency(e)] for e in entities],
        "spread": [(q.fact_ids.tolist(), q.hops.tolist()) for q in act],
        "ppr": [ppr[k].chunk_ids.tolist() for k in range(len(ppr))],
        "sizes": (g.n_entities, g.n_facts, g.n_chunks, g.n_tenants),
        "entity_ids": g.entity_ids.tolist(),
        "chunk_ids": g.chunk_ids.tolist(),
    }


def _all_null(arr: np.ndarray) -> bool:
    if arr.dtype.kind == "f":
        return bool(np.isnan(arr).all())
    if arr.dtype == np.int64:
        return bool((arr == NULL_TIME).all())
    return all(v is None for v in arr.tolist())


#: Columns the schema stores NOT NULL with a default: read back even when not given.
DEFAULTS = {
    "facts": {
        "predicate": "related_to",
        "confidence": 1.0,
        "strength": 1.0,
        "status": "confirmed",
        "source": "system",
        "access_count": 0,
    },
    "chunks": {"access_count": 0},
    "mentions": {"count": 1},
}


def _as_stored(name: str, cols: dict[str, np.ndarray] | None) -> dict[str, np.ndarray] | None:
    """A table as a store reads it back: defaults filled in, optional columns that are
    null in every row left out."""
    if cols is None:
        return None
    n = len(next(iter(cols.values())))
    if n == 0 and name in ("chunks", "mentions", "aliases"):
        return None  # an empty optional table is no table
    cols = dict(cols)
    for c, v in DEFAULTS.get(name, {}).items():
        if c not in cols:
            cols[c] = np.array([v] * n, dtype=object if isinstance(v, str) else None)
    required = {"id", "subject", "chunk", "entity", "alias"}
    return {c: a for c, a in cols.items() if c in required or not _all_null(a)}


def assert_tables_equal(a: GraphTables, b: GraphTables) -> None:
    """Equal columns (dtypes and Python types of the values included), optional columns
    that are null everywhere counting as absent."""
    for name in ("entities", "facts", "chunks", "mentions", "aliases"):
        ta, tb = _as_stored(name, a.table(name)), _as_stored(name, b.table(name))
        assert (ta is None) == (tb is None), name
        if ta is None or tb is None:
            continue
        assert sorted(ta) == sorted(tb), name
        for col in ta:
            x, y = ta[col], tb[col]
            assert x.dtype == y.dtype or len(x) == len(y) == 0, (name, col, x.dtype, y.dtype)
            if x.dtype.kind == "f":
                np.testing.assert_array_equal(x, y, err_msg=f"{name}.{col}")
            else:
                assert x.tolist() == y.tolist(), (name, col)
                assert [type(v) for v in x.tolist()] == [type(v) for v in y.tolist()]
    assert len(a.embeddings) == len(b.embeddings)
    for ea, eb in zip(a.embeddings, b.embeddings, strict=True):
        assert (ea.kind, ea.model) == (eb.kind, eb.model)
        assert ea.ids.tolist() == eb.ids.tolist()
        assert ea.vectors.dtype == eb.vectors.dtype == np.float32
        np.testing.assert_array_equal(ea.vectors, eb.vectors)
    assert (a.statuses, a.sources) == (b.statuses, b.sources)


def full_tables() -> GraphTables:
    """A small graph using every column of every table."""
    return GraphTables(
        entities={
            "id": ["user", "jacq", "duckdb", "pg"],
            "tenant": ["acme", "acme", "acme", "acme"],
            "name": ["User", "JACQ Project", "DuckDB", "PostgreSQL"],
            "type": ["person", "project", "tool", None],
            "description": ["the user", None, "embedded OLAP", None],
            "primary_chunk": ["c1", "c1", None, "c2"],
            "created_at": [NOW - 100, None, NOW - 50, None],
        },
        facts={
            "id": ["f1", "f2", "f3", "f4"],
            "subject": ["user", "jacq", "duckdb", "jacq"],
            "object": ["jacq", "duckdb", None, "pg"],
            "predicate": ["works_on", "uses", "type", "used"],
            "object_value": [None, None, "embedded OLAP database", None],
            "description": ["main project", None, None, "before duckdb"],
            "confidence": [0.97, 0.92, 0.99, 0.5],
            "strength": [3.0, 1.0, 1.0, 0.5],
            "status": ["confirmed", "staged", "confirmed", "archived"],
            "source": ["user_edit", "file", "system", "conversation"],
            "access_count": [25, 8, 0, 1],
            "last_accessed": [NOW - 10, NOW - 1000, None, NOW - 99],
            "created_at": [NOW - 500, NOW - 400, None, NOW - 900],
            "valid_from": [None, NOW - 400, None, NOW - 900],
            "valid_to": [None, None, None, NOW - 400],
            "sequence": [3, 5, None, 1],
        },
        chunks={
            "id": ["c1", "c2"],
            "tenant": ["acme", "acme"],
            "text": ["The user works on JACQ.", "JACQ used PostgreSQL."],
            "scope": ["project", "session"],
            "category": ["fact", None],
            "tags": [["work", "jacq"], '["db"]'],
            "metadata": [{"goal": "ship", "mission": {"step": 2}}, '{"k": [1, 2]}'],
            "created_at": [NOW - 300, NOW - 200],
            "expires_at": [None, NOW + 1000],
            "confidence": [0.8, None],
            "access_count": [2, 0],
            "last_accessed": [NOW - 5, None],
        },
        mentions={"chunk": ["c1", "c1", "c2", "c2"], "entity": ["user", "jacq", "jacq", "pg"]},
        aliases={"entity": ["jacq", "pg", "pg"], "alias": ["JACQ", "Postgres", "PG"]},
        embeddings=[
            EmbeddingSet("entity", ["user", "jacq"], np.eye(2, 3, dtype=np.float32), "mini"),
            EmbeddingSet("chunk", ["c2"], np.ones((1, 4), dtype=np.float32), None),
            EmbeddingSet("alias", ["Postgres"], np.full((1, 2), 0.5, dtype=np.float32), "mini"),
        ],
    )


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore.create(tmp_path / "graph.db")
    yield s
    s.close()


@contextmanager
def temp_store() -> Iterator[SQLiteStore]:
    """A store in a fresh directory (for Hypothesis tests: no function-scoped fixtures)."""
    with tempfile.TemporaryDirectory() as d:
        s = SQLiteStore.create(Path(d) / "g.db")
        try:
            yield s
        finally:
            s.close()


def state(store: SQLiteStore, live: LiveGraph | None = None) -> Any:
    """The store's rows (and the live graph's version and graph object)."""
    tables = ["entities", "facts", "chunks", "mentions", "aliases", "embeddings", "meta"]
    if store.logged:
        tables.append("facts_log")
    rows = {t: store.conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    if live is None:
        return rows
    return rows, live.version, id(live.graph), id(live.tables)


# ------------------------------------------------------------------------------ round trips


@settings(PROPERTY, max_examples=examples(30))
@given(graph_data())
def test_round_trip_builds_the_graph_a_direct_build_does(data: GraphData) -> None:
    direct = KnowledgeGraph.from_records(data.entities, data.facts, data.chunks, data.mentions)
    ents = [e["id"] for e in data.entities]
    fids = [f["id"] for f in data.facts]
    want = observe(direct, ents, fids)
    tables = tables_of(data)
    checked, report = tables.check()
    assert report.ok
    with temp_store() as s:
        assert s.write(tables).ok
        path = s.path
        s.close()
        with SQLiteStore.open(path) as again:
            back = again.read()
            assert_tables_equal(back, checked)
            g, report = back.to_graph()
            assert report.ok
            assert observe(g, ents, fids) == want
            live = again.load()
            assert observe(live.graph, ents, fids) == want


def test_every_column_round_trips(store: SQLiteStore) -> None:
    tables = full_tables()
    checked, _ = tables.check()
    store.write(tables)
    back = store.read()
    assert_tables_equal(back, checked)
    assert back.chunks is not None
    assert back.chunks["tags"].tolist() == [["work", "jacq"], ["db"]]
    assert back.chunks["metadata"][0] == {"goal": "ship", "mission": {"step": 2}}
    assert np.isnan(back.chunks["confidence"][1])
    assert back.facts["last_accessed"][2] == NULL_TIME
    assert back.embeddings[1].model is None
    g, _ = back.to_graph()
    assert g.facts(["f3"])[0]["object_value"] == "embedded OLAP database"
    assert g.entity_names is not None and list(g.entity_names) == [
        "User",
        "JACQ Project",
        "DuckDB",
        "PostgreSQL",
    ]
    assert list(g.adjacency("jacq")[0]) == ["f2", "f4"]
    assert g.tenants.names == ("acme",)


@pytest.mark.parametrize(
    ("entity_ids", "fact_ids", "chunk_ids"),
    [
        ([10, -3, 2**40], [7, 8], [0, 5]),
        (["10", "-3", "x'); DROP TABLE facts; --"], ["a", "b"], ["c0", "c5"]),
        ([1, "1", "e"], [1, "1"], [2, "2"]),  # int 1 and text "1" are different ids
    ],
)
def test_int_and_str_ids_keep_their_python_type(
    store: SQLiteStore, entity_ids: list[Any], fact_ids: list[Any], chunk_ids: list[Any]
) -> None:
    e0, e1, e2 = entity_ids
    tables = GraphTables(
        entities={"id": entity_ids},
        facts={"id": fact_ids, "subject": [e0, e1], "object": [e1, e2]},
        chunks={"id": chunk_ids},
        mentions={"chunk": chunk_ids, "entity": [e0, e2]},
        embeddings=[EmbeddingSet("entity", [e1], np.ones((1, 2)), "m")],
    )
    store.write(tables)
    back = store.read()
    for got, want in (
        (back.entities["id"], entity_ids),
        (back.facts["id"], fact_ids),
        (back.facts["subject"], [e0, e1]),
        (back.facts["object"], [e1, e2]),
        (back.mentions["chunk"] if back.mentions else None, chunk_ids),
        (back.embeddings[0].ids, [e1]),
    ):
        assert got is not None
        assert got.tolist() == want
        assert [type(v) for v in got.tolist()] == [type(v) for v in want]
    if all(type(i) is int for i in entity_ids):
        assert back.entities["id"].dtype == np.int64
    g = store.load().graph
    assert g.adjacency(e1)[0].tolist() == [fact_ids[1]]


def test_facts_without_ids_get_their_row_numbers(store: SQLiteStore) -> None:
    tables = GraphTables(
        entities={"id": ["a", "b"]},
        facts={"subject": ["a", "b", "a", "zz"], "object": ["b", "a", None, None]},
    )
    checked, report = tables.check("skip")
    assert checked.facts["id"].tolist() == [0, 1, 2]  # row 3 dropped: nothing renumbered
    assert report.skipped == {"facts": 1}
    store.write(tables, on_bad="skip")
    assert store.read().facts["id"].tolist() == [0, 1, 2]


def test_an_empty_graph_round_trips(store: SQLiteStore) -> None:
    store.write(GraphTables(entities={"id": ["only"]}, facts={"subject": []}))
    live = store.load()
    assert live.graph.n_entities == 1 and live.graph.n_facts == 0


def test_a_new_store_loads_empty_and_grows_by_updates(store: SQLiteStore) -> None:
    live = store.load()
    assert (live.graph.n_entities, live.graph.n_facts, live.version) == (0, 0, 0)
    live.add_entities([{"id": "a", "name": "A"}, {"id": "b"}])
    live.add_facts([{"id": "f", "subject": "a", "object": "b"}])
    live.add_chunks([{"id": "c", "text": "a and b"}])
    live.add_mentions([{"chunk": "c", "entity": "a"}])
    assert live.version == 4
    store.close()
    with SQLiteStore.open(store.path) as again:
        g = again.load().graph
        assert (g.n_entities, g.n_facts, g.n_chunks) == (2, 1, 1)
        assert g.personalized_pagerank(["a"]).chunk_ids.tolist() == ["c"]


# ------------------------------------------------------------------------------ files


def test_open_refuses_an_unknown_schema_version(store: SQLiteStore) -> None:
    store.write(full_tables())
    store.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    store.conn.execute("PRAGMA user_version = 99")
    store.close()
    with pytest.raises(
        SchemaVersionError, match=r"schema version 99 .*reads schema versions \[1, 2, 3\]"
    ):
        SQLiteStore.open(store.path)
    with SQLiteStore.create(store.path, overwrite=True) as s:
        s.conn.execute("UPDATE meta SET value = 'one' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match=r"'one' is not a version number"):
        SQLiteStore.open(store.path)
    assert SCHEMA_VERSION == 3


def test_a_version_1_store_reads_without_checksums(store: SQLiteStore) -> None:
    """A store of schema version 1 (no checksum table or triggers) opens, reads and takes
    updates as before."""
    store.write(full_tables())
    with store.transaction() as cur:
        from graphrecall.storage.sqlite import checksum

        checksum.drop_triggers(cur)
        cur.execute("DROP TABLE checksums")
        cur.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        cur.execute("PRAGMA user_version = 0")
    store.close()
    with SQLiteStore.open(store.path) as s:
        assert (s.schema_version, s.checksummed) == (1, False)
        assert_tables_equal(s.read(), full_tables().check()[0])
        live = s.load()
        live.add_facts([{"id": "new", "subject": "user", "object": "pg"}])
    with SQLiteStore.open(store.path) as s:
        assert s.load().graph.n_facts == 5


def test_the_checksums_hold_after_every_kind_of_update(store: SQLiteStore) -> None:
    """Adds, updates, deletes (with their cascades) and usage write-back keep every
    table's checksum equal to its rows."""
    store.write(full_tables())
    live = store.load()
    live.add_entities([{"id": "x", "tenant": "acme", "name": "X"}])
    live.add_facts([{"id": "fx", "subject": "x", "object": "pg"}])
    live.update_facts([{"id": "fx", "confidence": 0.5}])
    live.record_access(["fx"], at=NOW)
    live.delete_chunks(["c2"])
    live.delete_entities(["duckdb"])
    store.close()
    with SQLiteStore.open(store.path) as s:
        s.read()
        s.conn.execute("UPDATE facts SET confidence = 0.25")  # through the triggers: fine
        s.read()
    with sqlite3.connect(store.path) as c:  # another client cannot write without them
        with pytest.raises(sqlite3.OperationalError, match="gr_checksum"):
            c.execute("UPDATE facts SET confidence = 0.5")
    c.close()


def _checksums(s: SQLiteStore) -> list[tuple[Any, ...]]:
    return s.conn.execute("SELECT name, rows, total FROM checksums ORDER BY name").fetchall()


def _many_adds(live: LiveGraph) -> None:
    """Adds of every table large enough for the one-pass checksum (with deleted rows
    before them, so that rowids have gaps)."""
    live.delete_facts(["f3"])
    n = 40
    live.add_entities([{"id": f"e{i}", "tenant": "acme", "name": f"É{i}"} for i in range(n)])
    live.add_chunks([{"id": f"k{i}", "tenant": "acme", "tags": ["t", "ü"]} for i in range(n)])
    live.add_facts(
        [
            {"id": f"n{i}", "subject": f"e{i}", "object": f"e{(i + 1) % n}", "confidence": 0.5}
            for i in range(n)
        ]
        + [{"id": "lit", "subject": "e0", "object_value": 3, "sequence": 7}]
    )
    live.add_mentions([{"chunk": f"k{i}", "entity": f"e{i}"} for i in range(n)])
    live.add_aliases([{"entity": f"e{i}", "alias": f"a{i}"} for i in range(n)])


def test_a_big_append_checksums_in_one_pass_to_the_triggers_sum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append of many rows sums their hashes in one pass after the insert, to the same
    checksums the per-row triggers make; the triggers are back after it."""
    from graphrecall.storage.sqlite import checksum

    sums = []
    for batch_rows in (10**9, 16):  # per row (triggers), then one pass
        monkeypatch.setattr(checksum, "BATCH_ROWS", batch_rows)
        with SQLiteStore.create(tmp_path / f"{batch_rows}.db") as s:
            s.write(full_tables())
            _many_adds(s.load())
            sums.append(_checksums(s))
            triggers = s.conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                "AND name LIKE '%checksum%'"
            ).fetchone()
            assert triggers == (3 * len(checksum.TABLES),)
        with SQLiteStore.open(tmp_path / f"{batch_rows}.db") as s:
            s.read()  # verifies every table
            assert s.load().graph.n_facts == 4 - 1 + 41
    assert sums[0] == sums[1]


def test_a_failed_big_append_keeps_the_trigger_and_the_checksums(
    live: LiveGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that fails in SQLite rolls back with its trigger DDL: the insert trigger and
    the checksums are what they were, and the next append keeps them true."""
    from graphrecall.storage.sqlite import checksum

    monkeypatch.setattr(checksum, "BATCH_ROWS", 16)
    _fail_on(
        live,
        "CREATE TRIGGER boom BEFORE INSERT ON facts_log WHEN NEW.id = 'n39' "
        "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END",
    )
    before = state(live.store, live), _checksums(live.store)
    many = [{"id": f"n{i}", "subject": "a", "object": "b"} for i in range(40)]
    with pytest.raises(StorageError, match="simulated disk failure"):
        live.add_facts(many)
    assert (state(live.store, live), _checksums(live.store)) == before
    live.store.conn.execute("DROP TRIGGER boom")
    live.add_facts(many)
    live.add_facts([{"id": "one", "subject": "a", "object": "b"}])  # through the trigger
    live.store.read()


def test_appending_counts_rows_inserted_before_a_failure(store: SQLiteStore) -> None:
    """Rows that went in before a failed statement are counted, so a transaction that goes
    on after the error still commits true checksums."""
    from graphrecall.storage.sqlite import checksum

    store.write(full_tables())
    with store.transaction() as cur:
        with pytest.raises(sqlite3.IntegrityError):
            with checksum.appending(cur, "aliases", checksum.BATCH_ROWS):
                cur.executemany(
                    "INSERT INTO aliases (entity, alias) VALUES (?, ?)",
                    [("pg", "x"), ("pg", "y"), ("pg", "x")],  # the third is a duplicate
                )
    assert store.counts()["aliases"] == 5
    store.read()


def test_open_refuses_a_database_that_is_not_a_store(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (x)")
    c.close()
    with pytest.raises(NotAStoreError, match=r"other\.db: not a graphrecall store"):
        SQLiteStore.open(other)
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE meta (key, value)")
        c.execute("INSERT INTO meta VALUES ('application', 'something else')")
    c.close()
    with pytest.raises(NotAStoreError, match="'something else'"):
        SQLiteStore.open(other)
    with pytest.raises(StorageError, match="no such file"):
        SQLiteStore.open(tmp_path / "missing.db")
    with pytest.raises(StorageError, match="already exists"):
        SQLiteStore.create(other)
    SQLiteStore.create(other, overwrite=True).close()
    SQLiteStore.open(other).close()


def _garbage_over(data: bytes, start: int, length: int) -> bytes:
    rng = np.random.default_rng(7)
    junk = rng.integers(0, 256, size=length, dtype=np.uint8).tobytes()
    return data[:start] + junk + data[start + length :]


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda b: b"this is not a database at all" * 100, "random text"),
        (lambda b: _garbage_over(b, 0, 100), "header"),
        (lambda b: _garbage_over(b, 100, 3000), "first page"),
        (lambda b: _garbage_over(b, 8192, len(b) - 8192), "every page after the second"),
        (lambda b: b[: len(b) // 2], "truncated to half"),
        (lambda b: b[:5000], "truncated inside a page"),
    ],
)
def test_a_corrupted_file_is_a_clear_error_not_a_crash(
    tmp_path: Path, damage: Callable[[bytes], bytes], where: str
) -> None:
    path = tmp_path / "good.db"
    n = 2000
    with SQLiteStore.create(path) as s:
        s.write(
            GraphTables(
                entities={
                    "id": [f"e{i}" for i in range(n)],
                    "name": [f"n{i}" * 9 for i in range(n)],
                },
                facts={
                    "subject": [f"e{i}" for i in range(n)],
                    "object": [f"e{i // 2}" for i in range(n)],
                },
            )
        )
    bad = tmp_path / "bad.db"
    shutil.copy(path, bad)
    bad.write_bytes(damage(path.read_bytes()))
    with pytest.raises(
        CorruptStoreError, match=r"bad\.db: not a SQLite database, or a corrupted"
    ) as info:
        with SQLiteStore.open(bad) as s:
            s.load()
    assert isinstance(info.value, GraphRecallError)
    with SQLiteStore.open(path) as s:  # the original is untouched
        s.integrity_check()
        assert s.load().graph.n_facts == n


def test_write_refuses_bad_data_and_writes_nothing(store: SQLiteStore) -> None:
    store.write(full_tables())
    before = state(store)
    bad = full_tables()
    bad.facts["confidence"][1] = 1.5
    with pytest.raises(BadDataError, match=r"facts: 1 of 4 rows"):
        store.write(bad)
    assert state(store) == before
    report = store.write(bad, on_bad="skip")
    assert report.skipped == {"facts": 1}
    assert store.read().facts["id"].tolist() == ["f1", "f3", "f4"]


# ------------------------------------------------------------------------------ bad data


def base_tables(**changes: Any) -> GraphTables:
    """A valid graph of two tenants; ``changes`` maps "table.column" -> (row, value) or
    a whole replacement table (``"table"`` -> columns)."""
    cols: dict[str, Any] = {
        "entities": {
            "id": ["a", "b", "c", "x", "d"],
            "tenant": ["t1", "t1", "t1", "t2", "t1"],
            "primary_chunk": ["c1", None, None, None, None],
        },
        "facts": {
            "id": ["f1", "f2", "f3", "f4"],
            "subject": ["a", "b", "a", "x"],
            "object": ["b", "c", None, None],
            "predicate": ["p", "p", "q", "q"],
            "object_value": [None, None, "v", 3.5],
            "confidence": [0.9, 0.8, 0.7, 0.6],
            "strength": [1.0, 2.0, 0.0, 1.0],
            "status": ["confirmed", "staged", "confirmed", "archived"],
            "source": ["file", "system", "system", "user_edit"],
            "access_count": [0, 1, 2, 3],
            "last_accessed": [NOW, None, NOW - 1, None],
            "valid_from": [None, 1, None, None],
            "valid_to": [None, 2, None, None],
            "sequence": [1, None, 2, None],
        },
        "chunks": {
            "id": ["c1", "c2", "c3"],
            "tenant": ["t1", "t2", "t1"],
            "confidence": [0.5, None, 0.3],
            "tags": [["a"], None, None],
            "metadata": [None, {"k": 1}, None],
        },
        "mentions": {"chunk": ["c1", "c1", "c2"], "entity": ["a", "b", "x"], "count": [1, 2, 1]},
        "aliases": {"entity": ["a", "x"], "alias": ["A", "X"]},
    }
    embeddings = [
        EmbeddingSet("entity", ["a", "b", "x"], np.ones((3, 4), np.float32), "m"),
        EmbeddingSet("chunk", ["c1"], np.ones((1, 2), np.float32), "m"),
    ]
    for key, value in changes.items():
        if key == "embeddings":
            embeddings = value
        elif "." in key:
            table, col = key.split(".")
            row, v = value
            column = list(cols[table][col])
            column[row] = v
            cols[table][col] = column
        else:
            cols[key] = value
    return GraphTables(**cols, embeddings=embeddings)


#: (changes, table, row, reason pattern, rows dropped per table with on_bad="skip").
BAD_DATA: list[tuple[dict[str, Any], str, int, str, dict[str, int]]] = [
    # ids
    (
        {"entities.id": (4, "a")},
        "entities",
        4,
        r"duplicate id 'a' \(first at row 0\)",
        {"entities": 1},
    ),
    ({"entities.id": (4, None)}, "entities", 4, "id is missing", {"entities": 1}),
    ({"entities.id": (4, 1.5)}, "entities", 4, "id = 1.5 is not an int or str id", {"entities": 1}),
    ({"entities.id": (4, True)}, "entities", 4, "is not an int or str id", {"entities": 1}),
    (
        {"facts.id": (3, "f1")},
        "facts",
        3,
        r"duplicate id 'f1' \(first at row 0\)",
        {"facts": 1},
    ),
    ({"chunks.id": (2, "c1")}, "chunks", 2, "duplicate id 'c1'", {"chunks": 1}),
    # references
    ({"facts.subject": (1, "zz")}, "facts", 1, "subject = 'zz' refers to no entity", {"facts": 1}),
    ({"facts.subject": (1, None)}, "facts", 1, "subject is missing", {"facts": 1}),
    ({"facts.object": (0, "zz")}, "facts", 0, "object = 'zz' refers to no entity", {"facts": 1}),
    (
        {"entities.primary_chunk": (1, "c9")},
        "entities",
        1,
        "primary_chunk = 'c9' refers to no chunk",
        {"entities": 1, "facts": 2, "mentions": 1, "embeddings[0]": 1},
    ),
    (
        {"mentions.chunk": (0, "c9")},
        "mentions",
        0,
        "chunk = 'c9' refers to no chunk",
        {"mentions": 1},
    ),
    (
        {"mentions.entity": (1, "zz")},
        "mentions",
        1,
        "entity = 'zz' refers to no entity",
        {"mentions": 1},
    ),
    ({"aliases.entity": (1, "zz")}, "aliases", 1, "refers to no entity", {"aliases": 1}),
    # tenants
    (
        {"facts.object": (3, "a")},
        "facts",
        3,
        "subject 'x' and object 'a' are in different tenants",
        {"facts": 1},
    ),
    (
        {"mentions.entity": (2, "c")},
        "mentions",
        2,
        "chunk 'c2' and entity 'c' are in different tenants",
        {"mentions": 1},
    ),
    (
        {"entities.primary_chunk": (3, "c1")},
        "entities",
        3,
        "primary_chunk = 'c1' is in another tenant",
        {"entities": 1, "facts": 1, "mentions": 1, "aliases": 1, "embeddings[0]": 1},
    ),
    (
        {"entities.tenant": (2, 7)},
        "entities",
        2,
        "tenant = 7 is not a str, as the graph's other tenants are",
        {"entities": 1, "facts": 1},
    ),
    (
        {"entities.tenant": (2, None)},
        "entities",
        2,
        "tenant is missing",
        {"entities": 1, "facts": 1},
    ),
    # weights
    (
        {"facts.confidence": (1, float("nan"))},
        "facts",
        1,
        "confidence is missing or NaN",
        {"facts": 1},
    ),
    (
        {"facts.confidence": (1, 1.5)},
        "facts",
        1,
        r"confidence = 1.5 is not in \[0, 1\]",
        {"facts": 1},
    ),
    ({"facts.confidence": (1, -0.1)}, "facts", 1, r"is not in \[0, 1\]", {"facts": 1}),
    (
        {"facts.confidence": (1, "high")},
        "facts",
        1,
        "confidence = 'high' is not a number",
        {"facts": 1},
    ),
    (
        {"facts.strength": (2, -1.0)},
        "facts",
        2,
        "strength = -1.0 is not a finite number",
        {"facts": 1},
    ),
    ({"facts.strength": (2, float("inf"))}, "facts", 2, "strength = inf is not", {"facts": 1}),
    ({"facts.strength": (2, float("nan"))}, "facts", 2, "strength is missing or NaN", {"facts": 1}),
    (
        {"chunks.confidence": (1, 2.0)},
        "chunks",
        1,
        r"confidence = 2.0 is not in \[0, 1\]",
        {"chunks": 1, "mentions": 1},
    ),
    # vocabularies
    ({"facts.status": (0, None)}, "facts", 0, "status is missing", {"facts": 1}),
    ({"facts.status": (0, 9)}, "facts", 0, "status = 9 is an unknown status", {"facts": 1}),
    ({"facts.source": (3, 7)}, "facts", 3, "source = 7 is an unknown source", {"facts": 1}),
    # other columns
    (
        {"facts.access_count": (1, -2)},
        "facts",
        1,
        r"access_count = -2 is out of range",
        {"facts": 1},
    ),
    (
        {"facts.access_count": (1, 0.5)},
        "facts",
        1,
        "access_count = 0.5 is not an integer",
        {"facts": 1},
    ),
    (
        {"facts.valid_from": (1, 5)},
        "facts",
        1,
        "valid_from = 5 is after valid_to = 2",
        {"facts": 1},
    ),
    (
        {"facts.last_accessed": (1, "yesterday")},
        "facts",
        1,
        "last_accessed = 'yesterday' is not a time",
        {"facts": 1},
    ),
    ({"facts.sequence": (1, 1.5)}, "facts", 1, "sequence = 1.5 is not an integer", {"facts": 1}),
    ({"facts.predicate": (1, None)}, "facts", 1, "predicate is missing", {"facts": 1}),
    (
        {"facts.object_value": (2, {"a": 1})},
        "facts",
        2,
        "object_value = {'a': 1} is not a str, int or float",
        {"facts": 1},
    ),
    (
        {"chunks.tags": (0, "[not json")},
        "chunks",
        0,
        "tags is not valid JSON",
        {
            "chunks": 1,
            "entities": 1,
            "facts": 2,
            "mentions": 2,
            "aliases": 1,
            "embeddings[0]": 1,
            "embeddings[1]": 1,
        },
    ),
    ({"chunks.tags": (0, [1, 2])}, "chunks", 0, r"tags = \[1, 2\] is not a list of str", None),
    (
        {"chunks.metadata": (1, "[1]")},
        "chunks",
        1,
        r"metadata = \[1\] is not a dict",
        {"chunks": 1, "mentions": 1},
    ),
    ({"mentions.count": (1, 0)}, "mentions", 1, r"count = 0 is out of range \[1,", {"mentions": 1}),
    (
        {"mentions.entity": (1, "a")},
        "mentions",
        1,
        "duplicate mention of entity 'a' by chunk 'c1'",
        {"mentions": 1},
    ),
    ({"aliases.alias": (1, "")}, "aliases", 1, "alias is empty", {"aliases": 1}),
    (
        {"aliases.entity": (1, "a"), "aliases.alias": (1, "A")},
        "aliases",
        1,
        "duplicate alias 'A'",
        {"aliases": 1},
    ),
    # embeddings
    (
        {
            "embeddings": [
                EmbeddingSet("entity", ["a", "b", "x"], [[1, 2, 3, 4], [1, 2], [0, 0, 0, 1]], "m")
            ]
        },
        "embeddings[0]",
        1,
        "vector has dimension 2; model 'm' has dimension 4",
        {"embeddings[0]": 1},
    ),
    (
        {"embeddings": [EmbeddingSet("entity", ["a", "b"], [[1.0, np.nan], [1.0, 2.0]], None)]},
        "embeddings[0]",
        0,
        "vector holds NaN or infinity",
        {"embeddings[0]": 1},
    ),
    (
        {"embeddings": [EmbeddingSet("chunk", ["c1", "c7"], np.ones((2, 3)), "m")]},
        "embeddings[0]",
        1,
        "id = 'c7' refers to no chunk",
        {"embeddings[0]": 1},
    ),
    (
        {"embeddings": [EmbeddingSet("alias", ["A", "Q"], np.ones((2, 3)), "m")]},
        "embeddings[0]",
        1,
        "id = 'Q' refers to no alias",
        {"embeddings[0]": 1},
    ),
    (
        {
            "embeddings": [
                EmbeddingSet("entity", ["a"], np.ones((1, 3)), "m"),
                EmbeddingSet("entity", ["b", "a"], np.ones((2, 3)), "m"),
            ]
        },
        "embeddings[1]",
        1,
        r"duplicate vector of entity 'a' for model 'm' \(first at row 0 of embeddings\[0\]\)",
        {"embeddings[1]": 1},
    ),
]


@pytest.mark.parametrize(
    ("changes", "table", "row", "reason", "skipped"),
    BAD_DATA,
    ids=[f"{c[1]}-{c[3][:40]}" for c in BAD_DATA],
)
def test_every_bad_data_rule_in_raise_and_skip_mode(
    changes: dict[str, Any], table: str, row: int, reason: str, skipped: dict[str, int] | None
) -> None:
    assert base_tables().check()[1].ok
    tables = base_tables(**changes)
    with pytest.raises(BadDataError, match=reason) as info:
        tables.check()
    report = info.value.report
    assert not report.ok and report.on_bad == "raise" and report.skipped == {}
    bad = report.table(table)
    assert bad.first[0].row == row and bad.first[0].table == table
    assert bad.bad == 1
    assert f"{table}: " in str(info.value) and f"row {row}" in str(info.value)
    assert isinstance(info.value, DataError) and isinstance(info.value, ValueError)

    checked, report = tables.check("skip")
    if skipped is not None:
        assert report.skipped == skipped
    assert report.table(table).first[0].row == row
    g = checked.build_graph()  # what is left builds
    assert g.n_entities == checked.n_rows("entities")
    for name, n in report.skipped.items():
        if not name.startswith("embeddings"):
            assert checked.n_rows(name) == tables.n_rows(name) - n


def test_skip_reports_rows_that_depend_on_refused_rows() -> None:
    tables = base_tables(**{"entities.tenant": (0, None)})  # entity "a" is refused
    with pytest.raises(BadDataError) as info:
        tables.check()
    text = str(info.value)
    assert "entities: 1 of 5 rows (1 by a rule)" in text
    assert "facts: 2 of 4 rows (2 depending on refused rows)" in text
    assert "row 0 (id 'f1'): subject = 'a' is entities row 0, which was refused" in text
    checked, report = tables.check("skip")
    assert report.skipped == {
        "entities": 1,
        "facts": 2,
        "mentions": 1,
        "aliases": 1,
        "embeddings[0]": 1,
    }
    facts = report.table("facts")
    assert (facts.bad, facts.dependent) == (0, 2)
    assert all(r.dependent for r in facts.first)
    assert checked.entities["id"].tolist() == ["b", "c", "x", "d"]
    assert checked.facts["id"].tolist() == ["f2", "f4"]
    assert checked.embeddings[0].ids.tolist() == ["b", "x"]
    assert "skipped them" in str(report)


def test_the_report_names_the_first_ten_rows_and_counts_all() -> None:
    n = 40
    conf = [0.5] * n
    for i in range(5, n, 2):  # 18 bad rows
        conf[i] = float("nan")
    tables = GraphTables(
        entities={"id": [0, 1]},
        facts={"subject": [0] * n, "object": [1] * n, "confidence": conf},
    )
    with pytest.raises(BadDataError) as info:
        tables.check()
    facts = info.value.report.table("facts")
    assert (facts.rows, facts.bad, facts.refused) == (n, 18, 18)
    assert [r.row for r in facts.first] == list(range(5, 25, 2))
    assert "... and 8 more" in str(info.value)
    assert str(info.value).splitlines()[0].startswith("graphrecall load report: 18 bad rows")
    _, report = tables.check("skip")
    assert report.skipped == {"facts": 18} and report.refused == {"facts": 18}


def test_vocabularies_tenants_and_codes() -> None:
    tables = GraphTables(
        entities={"id": ["a", "b"], "tenant": [3, 3]},
        facts={"subject": ["a"], "object": ["b"], "status": ["live"], "source": [0]},
        chunks={"id": ["c"]},  # no tenant column: in the entities' single tenant
        mentions={"chunk": ["c"], "entity": ["a"]},
        statuses=("live", "dead"),
        sources=("human", "bot"),
    )
    checked, report = tables.check()
    assert report.ok
    assert checked.facts["source"].tolist() == ["human"]
    g = checked.build_graph()
    assert g.statuses.names == ("live", "dead")
    assert g.tenants.names == (3,) and g.tenant_code(3) == 0  # dense codes
    with pytest.raises(BadDataError, match="status = 5 is an unknown status"):
        GraphTables(
            entities={"id": ["a"]},
            facts={"subject": ["a"], "status": [5]},
            statuses=("live",),
        ).check()
    with pytest.raises(DataError, match="chunks have no tenant column but entities have 2 tenants"):
        GraphTables(
            entities={"id": ["a", "b"], "tenant": ["t1", "t2"]},
            facts={"subject": []},
            chunks={"id": ["c"]},
        ).check()


def test_table_level_problems_raise_at_once() -> None:
    with pytest.raises(DataError, match=r"facts has unknown column \['weight'\]"):
        GraphTables(entities={"id": [1]}, facts={"subject": [1], "weight": [2.0]})
    with pytest.raises(DataError, match="entities has no 'id' column"):
        GraphTables(entities={"name": ["a"]}, facts={"subject": []})
    with pytest.raises(DataError, match=r"facts.object has 2 rows, but facts.subject has 1"):
        GraphTables(entities={"id": [1]}, facts={"subject": [1], "object": [1, 1]})
    with pytest.raises(DataError, match="2 ids but 1 vectors"):
        EmbeddingSet("entity", [1, 2], np.ones((1, 3)), "m")
    with pytest.raises(DataError, match="kind 'fact' is not one of"):
        EmbeddingSet("fact", [1], np.ones((1, 3)), "m")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="invalid parameter on_bad"):
        base_tables().check("ignore")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ updates


def chain_tables() -> GraphTables:
    return GraphTables(
        entities={"id": ["root", "a", "b"], "name": ["Root", "A", "B"]},
        facts={
            "id": ["f1", "f2"],
            "subject": ["root", "a"],
            "object": ["a", "b"],
            "confidence": [0.9, 0.8],
        },
        chunks={"id": ["c1"], "text": ["root and a"]},
        mentions={"chunk": ["c1", "c1"], "entity": ["root", "a"]},
        aliases={"entity": ["a"], "alias": ["Alpha"]},
        embeddings=[
            EmbeddingSet("entity", ["root", "a"], np.ones((2, 2), np.float32), "m"),
            EmbeddingSet("alias", ["Alpha"], np.ones((1, 2), np.float32), "m"),
        ],
    )


@pytest.fixture()
def live(store: SQLiteStore) -> LiveGraph:
    store.write(chain_tables())
    return store.load()


def reopened(live: LiveGraph) -> GraphTables:
    """What a fresh process would read from the file."""
    with SQLiteStore.open(live.store.path) as s:
        return s.read()


def test_adds_are_durable_and_visible(live: LiveGraph) -> None:
    g0 = live.graph
    r = live.add_entities([{"id": "c", "name": "C"}, {"id": "d"}])
    assert (r.version, r.rows) == (1, {"entities": 2})
    r = live.add_facts([{"id": "f3", "subject": "b", "object": "c", "confidence": 0.7}])
    assert r.version == 2
    live.add_chunks([{"id": "c2", "text": "b and c", "tags": ["x"], "metadata": {"goal": "g"}}])
    live.add_mentions([{"chunk": "c2", "entity": "b"}, {"chunk": "c2", "entity": "c", "count": 3}])
    r = live.add_aliases([{"entity": "c", "alias": "Charlie"}])
    assert live.version == 5 and r.version == 5
    assert g0.n_facts == 2  # the old graph object is untouched
    g = live.graph
    assert g.spread(["root"], max_hops=5)[0].fact_ids.tolist() == ["f1", "f2", "f3"]
    assert g.n_chunks == 2 and g.n_entities == 5
    assert live.tables.chunks is not None and live.tables.chunks["text"][1] == "b and c"
    assert live.tables.entities["name"].tolist() == ["Root", "A", "B", "C", None]
    assert_tables_equal(reopened(live), live.tables)
    assert observe(reopened(live).to_graph()[0], ["root", "c"], ["f1", "f3"]) == observe(
        g, ["root", "c"], ["f1", "f3"]
    )


def test_add_facts_without_ids_gets_the_next_int_ids(store: SQLiteStore) -> None:
    store.write(GraphTables(entities={"id": [1, 2]}, facts={"id": [10, 20], "subject": [1, 2]}))
    live = store.load()
    live.add_facts([{"subject": 2, "object": 1}, {"subject": 1}])
    assert live.graph.fact_ids.tolist() == [10, 20, 21, 22]
    assert reopened(live).facts["id"].tolist() == [10, 20, 21, 22]


def test_add_facts_without_ids_to_text_ids_is_refused(live: LiveGraph) -> None:
    with pytest.raises(DataError, match="add_facts records row 1: has no 'id'"):
        live.add_facts([{"id": "f3", "subject": "a"}, {"subject": "a"}])


def test_adds_refuse_bad_records_or_skip_them(live: LiveGraph) -> None:
    before = state(live.store, live)
    with pytest.raises(BadDataError, match=r"add_facts records: 2 of 3 rows") as info:
        live.add_facts(
            [
                {"id": "f3", "subject": "b", "object": "zz"},
                {"id": "f4", "subject": "b", "confidence": 2},
                {"id": "f5", "subject": "b"},
            ]
        )
    assert [r.row for r in info.value.report.table("add_facts records").first] == [0, 1]
    with pytest.raises(
        BadDataError, match=r"row 0 \(id 'f1'\): duplicate id 'f1' \(already stored: facts row 0\)"
    ):
        live.add_facts([{"id": "f1", "subject": "b"}])
    with pytest.raises(BadDataError, match="duplicate id 'a'"):
        live.add_entities([{"id": "a"}])
    with pytest.raises(BadDataError, match="chunk = 'c9' refers to no chunk"):
        live.add_mentions([{"chunk": "c9", "entity": "a"}])
    with pytest.raises(DataError, match="unknown column 'weight'"):
        live.add_facts([{"subject": "a", "weight": 1}])
    assert state(live.store, live) == before
    r = live.add_facts(
        [{"id": "f3", "subject": "b", "object": "zz"}, {"id": "f4", "subject": "b"}],
        on_bad="skip",
    )
    assert r.rows == {"facts": 1} and r.check is not None
    assert r.check.skipped == {"add_facts records": 1}
    assert "row 0 (id 'f3'): object = 'zz' refers to no entity" in str(r)
    assert live.graph.fact_ids.tolist() == ["f1", "f2", "f4"]
    assert reopened(live).facts["id"].tolist() == ["f1", "f2", "f4"]


def test_update_facts_changes_only_the_named_columns(live: LiveGraph) -> None:
    r = live.update_facts([{"id": "f2", "confidence": 0.1, "status": "staged", "valid_from": NOW}])
    assert (r.rows, r.version) == ({"facts": 1}, 1)
    f1, f2 = live.graph.facts(["f1", "f2"])
    assert f2["confidence"] == pytest.approx(0.1) and f2["status"] == "staged"
    assert f2["valid_from"] == NOW and f2["subject"] == "a" and f2["object"] == "b"
    assert f1["valid_from"] is None and f1["confidence"] == pytest.approx(0.9)
    assert_tables_equal(reopened(live), live.tables)
    before = state(live.store, live)
    with pytest.raises(UnknownIdError, match="f9"):
        live.update_facts([{"id": "f9", "confidence": 0.2}])
    with pytest.raises(
        BadDataError,
        match=r"(?s)refused the update\)\n  update_facts records: 1 of 1 rows.*confidence = 1.5",
    ):
        live.update_facts([{"id": "f1", "confidence": 1.5}])
    with pytest.raises(BadDataError, match="object = 'zz' refers to no entity"):
        live.update_facts([{"id": "f1", "object": "zz"}])
    with pytest.raises(DataError, match="a fact is named twice"):
        live.update_facts([{"id": "f1", "strength": 2}, {"id": "f1", "strength": 3}])
    assert state(live.store, live) == before


def test_delete_entities_cascades_and_reports_it(live: LiveGraph) -> None:
    r = live.delete_entities(["a"])
    assert r.rows == {"entities": 1, "facts": 2, "mentions": 1, "aliases": 1, "embeddings": 2}
    assert live.tables.entities["id"].tolist() == ["root", "b"]  # a tombstone until then
    g = live.graph
    assert g.entity_ids.tolist() == ["root", "b"] and g.n_facts == 0
    assert [e.ids.tolist() for e in live.tables.embeddings] == [["root"]]
    assert live.store.counts() == {
        "entities": 2,
        "facts": 0,
        "chunks": 1,
        "mentions": 1,
        "aliases": 0,
        "embeddings": 1,
    }
    live.store.integrity_check()
    assert_tables_equal(reopened(live), live.tables)
    with pytest.raises(UnknownIdError):
        live.delete_entities(["a"])


def test_delete_facts_and_chunks(live: LiveGraph) -> None:
    live.store.conn.execute("UPDATE entities SET primary_chunk = 'c1' WHERE id = 'b'")
    live = live.store.load()
    assert live.delete_facts(["f2"]).rows == {"facts": 1}
    assert live.tables.facts["id"].tolist() == ["f1"]  # a tombstone until then
    assert live.graph.fact_ids.tolist() == ["f1"]
    r = live.delete_chunks(["c1"])
    assert r.rows == {"chunks": 1, "mentions": 2, "entities.primary_chunk": 1, "embeddings": 0}
    assert live.tables.entities["primary_chunk"].tolist() == [None, None, None]
    assert live.graph.n_chunks == 0 and live.graph.n_entities == 3  # compacted by .tables
    assert live.version == 2
    live.store.integrity_check()
    back = reopened(live)
    assert "primary_chunk" not in back.entities  # NULL everywhere now
    assert back.chunks is None and back.mentions is None
    with pytest.raises(UnknownIdError):
        live.delete_facts(["f2"])


def _fail_on(live: LiveGraph, sql: str) -> None:
    """A trigger that makes one statement of the next transaction fail in SQLite."""
    live.store.conn.execute(sql)


@pytest.mark.parametrize(
    ("trigger", "update"),
    [
        (
            "CREATE TRIGGER boom BEFORE INSERT ON facts_log WHEN NEW.id = 'f4' "
            "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END",
            lambda live: live.add_facts(
                [{"id": "f3", "subject": "b", "object": "root"}, {"id": "f4", "subject": "b"}]
            ),
        ),
        (
            "CREATE TRIGGER boom BEFORE DELETE ON entities "
            "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END",
            lambda live: live.delete_entities(["a"]),
        ),
        (
            "CREATE TRIGGER boom BEFORE UPDATE ON facts "
            "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END",
            lambda live: live.record_access(["f1", "f2"], at=NOW),
        ),
        (
            "CREATE TRIGGER boom BEFORE DELETE ON chunks "
            "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END",
            lambda live: live.delete_chunks(["c1"]),
        ),
    ],
)
def test_a_failed_commit_changes_nothing(
    live: LiveGraph, trigger: str, update: Callable[[LiveGraph], Any]
) -> None:
    _fail_on(live, trigger)
    before = state(live.store, live)
    with pytest.raises(StorageError, match=r"write failed, rolled back.*simulated disk failure"):
        update(live)
    assert state(live.store, live) == before
    live.store.conn.execute("DROP TRIGGER boom")
    update(live)  # the same update goes through once the store accepts it
    assert live.version == 1


# ------------------------------------------------------------------------------ readers


def test_readers_keep_working_during_an_update_and_see_whole_versions(
    live: LiveGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader queries while an update is inside its transaction (held there until the
    reader is done): it is not blocked and sees the previous complete version."""
    in_commit = threading.Event()
    reader_done = threading.Event()
    seen: list[tuple[int, list[Any]]] = []
    original = live.store.transaction

    @contextmanager
    def held(**kwargs: Any) -> Iterator[Any]:
        with original(**kwargs) as cur:
            yield cur
            in_commit.set()
            assert reader_done.wait(10), "the reader was blocked by the update"

    monkeypatch.setattr(live.store, "transaction", held)

    def reader() -> None:
        assert in_commit.wait(10)
        cur = live.current()
        seen.append((cur.version, cur.graph.spread(["root"], max_hops=9)[0].fact_ids.tolist()))
        reader_done.set()

    t = threading.Thread(target=reader)
    t.start()
    live.add_facts([{"id": "f3", "subject": "b", "object": "root"}])
    t.join()
    assert seen == [(0, ["f1", "f2"])]
    assert live.graph.spread(["root"], max_hops=9)[0].fact_ids.tolist() == ["f1", "f2", "f3"]


def test_concurrent_readers_only_ever_see_complete_versions(store: SQLiteStore) -> None:
    """Every update adds a chain of K facts from the end of the previous one; a reader
    querying continuously must always find exactly K x version facts from the root."""
    k, updates = 5, 12
    store.write(GraphTables(entities={"id": [0]}, facts={"id": [], "subject": []}))
    live = store.load()
    stop = threading.Event()
    started = threading.Barrier(2)
    observed: list[tuple[int, int, int]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        started.wait()
        try:
            while not stop.is_set() or not observed:
                cur = live.current()
                got = cur.graph.spread(np.array([0]), max_hops=64)[0].fact_ids
                observed.append((cur.version, len(got), cur.graph.n_entities))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    started.wait()
    for v in range(updates):
        first = v * k
        live.add_entities([{"id": first + j + 1} for j in range(k)])
        live.add_facts(
            [{"id": first + j, "subject": first + j, "object": first + j + 1} for j in range(k)]
        )
    stop.set()
    t.join()
    assert not errors
    assert observed
    for version, n_facts, n_entities in observed:
        # two updates per step: entities first (version odd), then their facts
        assert n_facts == k * (version // 2)
        assert n_entities == 1 + k * ((version + 1) // 2)
    assert live.version == 2 * updates
    assert store.counts()["facts"] == k * updates


# ------------------------------------------------------------------------------ usage


def test_record_access_counts_and_times(live: LiveGraph) -> None:
    r = live.record_access(fact_ids=["f1", "f1", "f2"], chunk_ids=["c1"], at=NOW)
    assert r.rows == {"facts": 2, "chunks": 1} and r.version == 1
    live.record_access(fact_ids=["f2"], at=NOW - 100)  # older: the time stays
    f1, f2 = live.graph.facts(["f1", "f2"])
    assert (f1["access_count"], f1["last_accessed"]) == (2, NOW)
    assert (f2["access_count"], f2["last_accessed"]) == (2, NOW)
    assert live.tables.chunks is not None
    assert live.tables.chunks["access_count"].tolist() == [1]
    back = reopened(live)
    assert back.facts["access_count"].tolist() == [2, 2]
    assert back.chunks is not None and back.chunks["last_accessed"].tolist() == [NOW]
    before = state(live.store, live)
    with pytest.raises(UnknownIdError):
        live.record_access(fact_ids=["f1", "nope"], at=NOW)
    with pytest.raises(ParameterError, match="invalid parameter at"):
        live.record_access(fact_ids=["f1"], at=None)
    assert state(live.store, live) == before


def test_record_access_without_refresh_is_durable_and_shown_later(live: LiveGraph) -> None:
    r = live.record_access(fact_ids=["f1"], at=NOW, refresh=False)
    assert r.version == 0 and live.graph.facts(["f1"])[0]["access_count"] == 0
    assert reopened(live).facts["access_count"].tolist() == [1, 0]
    live.record_access(fact_ids=["f1"], at=NOW + 1, refresh=False)
    assert live.refresh() == 1
    assert live.graph.facts(["f1"])[0]["access_count"] == 2
    assert live.refresh() == 1  # nothing pending
    live.record_access(fact_ids=["f2"], at=NOW + 2, refresh=False)
    live.add_entities([{"id": "z"}])  # the next update shows pending counts too
    assert live.graph.facts(["f2"])[0]["access_count"] == 1


CHILD = textwrap.dedent(
    """
    import sys
    from graphrecall.storage.sqlite import SQLiteStore

    path, start = sys.argv[1], int(sys.argv[2])
    live = SQLiteStore.open(path).load()
    ids = live.graph.fact_ids.tolist()
    k = start
    while True:
        live.record_access(fact_ids=ids, chunk_ids=[0], at=k, refresh=False)
        print(k, flush=True)  # acknowledged: committed
        k += 1
    """
)


def test_acknowledged_accesses_survive_a_killed_process(tmp_path: Path) -> None:
    """A child records batches (every fact once per batch, at = the batch number) and
    prints each batch number after its commit; it is killed (SIGKILL) while writing. The
    file must open cleanly, hold every acknowledged batch, and no partial batch: all facts
    carry the same count and time."""
    n = 3000
    path = tmp_path / "usage.db"
    with SQLiteStore.create(path) as s:
        s.write(
            GraphTables(
                entities={"id": list(range(n + 1))},
                facts={
                    "id": list(range(n)),
                    "subject": list(range(n)),
                    "object": list(range(1, n + 1)),
                },
                chunks={"id": [0]},
            )
        )
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    start = 0
    for _ in range(2):  # kill, reopen, resume, kill again
        child = subprocess.Popen(
            [sys.executable, str(script), str(path), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        acked = -1
        for line in child.stdout:
            acked = int(line)
            if acked >= start + 12:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL, child.stderr.read() if child.stderr else ""
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()
        with SQLiteStore.open(path) as s:
            s.integrity_check()
            rows = s.conn.execute("SELECT access_count, last_accessed FROM facts").fetchall()
            chunk = s.conn.execute("SELECT access_count, last_accessed FROM chunks").fetchone()
            counts = {r[0] for r in rows}
            times = {r[1] for r in rows}
            assert len(counts) == 1 and len(times) == 1, "a partial batch is visible"
            (count,), (last,) = counts, times
            assert count in (acked + 1, acked + 2)  # the batch after the last ack may be in
            assert last == count - 1
            assert chunk == (count, last)
            assert s.load().graph.facts([0])[0]["access_count"] == count
        start = count
    assert start >= 26


def test_errors_are_graphrecall_errors() -> None:
    for cls in (StorageError, SchemaVersionError, NotAStoreError, CorruptStoreError, BadDataError):
        assert issubclass(cls, GraphRecallError)
    assert issubclass(BadDataError, ValueError)
    report = LoadReport(())
    assert report.ok and str(report).startswith("graphrecall load report: every row passed")
    assert json.dumps(report.refused) == "{}"
