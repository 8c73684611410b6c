"""The fact log of the SQLite store (schema version 3): added facts are acknowledged once
logged, every reader sees them, and a fold moves them into ``facts`` exactly once, also
across a process killed between the ack and the fold or in the middle of a fold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphTables
from graphrecall.errors import DataError, UnknownIdError
from graphrecall.live import LiveGraph
from graphrecall.storage.errors import SchemaVersionError, StorageError
from graphrecall.storage.sqlite import SQLiteStore
from graphrecall.storage.sqlite import store as store_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
NOW = 1_700_000_000
ENTITIES = ["a", "b", "c", "d", "e"]


def base_tables() -> GraphTables:
    """Five entities and three facts (int ids)."""
    return GraphTables(
        entities={"id": np.array(ENTITIES, dtype=object)},
        facts={
            "id": np.array([0, 1, 2], dtype=np.int64),
            "subject": np.array(["a", "b", "c"], dtype=object),
            "object": np.array(["b", "c", "d"], dtype=object),
        },
    )


@contextmanager
def temp_store(name: str = "g.db") -> Iterator[SQLiteStore]:
    """A version 3 store holding :func:`base_tables`, in a fresh directory."""
    with tempfile.TemporaryDirectory() as d:
        s = SQLiteStore.create(Path(d) / name)
        s.fold_idle_s = None  # folds only where a test makes them
        try:
            s.write(base_tables())
            yield s
        finally:
            s.close()


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    with temp_store() as s:
        yield s


def fact(i: int, s: str = "a", o: str = "b") -> dict[str, Any]:
    return {"id": i, "subject": s, "object": o}


def stored_facts(store: SQLiteStore) -> tuple[list[Any], list[Any]]:
    """The ids in ``facts`` and in the log, each in rowid order."""
    q = "SELECT id FROM {} ORDER BY rowid"
    return (
        [r[0] for r in store.conn.execute(q.format("facts"))],
        [r[0] for r in store.conn.execute(q.format("facts_log"))],
    )


# ------------------------------------------------------------------------------ reads


def test_added_facts_are_logged_and_every_read_sees_them(store: SQLiteStore) -> None:
    live = store.load()
    live.add_facts([fact(10), fact(11, "c", "e")])
    assert stored_facts(store) == ([0, 1, 2], [10, 11])
    assert store.logged_facts() == 2
    assert store.counts()["facts"] == 5
    assert store.read().facts["id"].tolist() == [0, 1, 2, 10, 11]
    with SQLiteStore.open(store.path) as other:  # another connection, a fresh load
        again = other.load()
        assert again.tables.facts["id"].tolist() == [0, 1, 2, 10, 11]
        assert again.graph.fact_index([11]).tolist() == [4]
    assert store.fold() == 2
    assert stored_facts(store) == ([0, 1, 2, 10, 11], [])
    assert store.fold() == 0
    store.read()  # the checksums hold after the fold
    store.integrity_check()


def test_a_second_connection_sees_the_batch(store: SQLiteStore) -> None:
    first = store.load()
    with SQLiteStore.open(store.path) as other:
        second = other.load()
        first.add_facts([fact(10), fact(11)])
        assert second.tables.facts["id"].tolist() == [0, 1, 2, 10, 11]  # caught up
        second.add_facts([fact(12, "d", "e")])  # ids from the file's state
        assert first.tables.facts["id"].tolist() == [0, 1, 2, 10, 11, 12]
        second.delete_facts([10])  # folds the other connection's batch first
        assert first.tables.facts["id"].tolist() == [0, 1, 2, 11, 12]
    assert stored_facts(store) == ([0, 1, 2, 11, 12], [])


def test_a_log_over_fold_at_loses_a_slice_at_each_write(store: SQLiteStore) -> None:
    live = store.load()
    live.add_facts([fact(10), fact(11)])
    live.add_facts([fact(12), fact(13)])
    assert store.logged_facts() == 4  # under the fold debt's low mark
    store.fold_at, store.fold_slice, store.fold_ratio = 2, 3, 1  # a log left over the bound
    live.add_facts([fact(14)])  # logs its own, owes 1, would leave 4: the 3 oldest
    assert stored_facts(store) == ([0, 1, 2, 10, 11, 12], [13, 14])
    live.add_entities([{"id": "f"}])  # below fold_at: no fold
    assert store.logged_facts() == 2
    store.read()  # the checksums of a partial fold hold
    assert store.fold() == 2
    store.read()


def test_an_idle_store_folds_its_log_in_the_background(store: SQLiteStore) -> None:
    store.fold_slice, store.fold_idle_s = 2, 0.0
    live = store.load()
    live.add_facts([fact(10 + k) for k in range(5)])
    done = threading.Event()
    for _ in range(1000):  # the fold thread's slices, up to 10 s
        if store.logged_facts() < 2 or done.wait(0.01):
            break
    assert stored_facts(store) == ([0, 1, 2, 10, 11, 12, 13], [14])  # under a slice stays
    assert store.fold_error is None
    store.read()
    store.close()
    assert store._idle.thread is not None and not store._idle.thread.is_alive()


# ------------------------------------------------------------------------------ changes


def test_updates_record_access_and_deletes_of_logged_facts(store: SQLiteStore) -> None:
    live = store.load()
    live.add_facts([fact(10), fact(11), fact(12)])
    live.record_access([10, 10, 1], at=NOW)  # no fold: both tables take the update
    assert store.logged_facts() == 3
    rows = dict(store.conn.execute("SELECT id, access_count FROM facts_log").fetchall())
    assert rows == {10: 2, 11: 0, 12: 0}
    assert store.conn.execute("SELECT access_count FROM facts WHERE id = 1").fetchone() == (1,)
    live.update_facts([{"id": 11, "confidence": 0.25}])  # folds, then updates
    assert stored_facts(store) == ([0, 1, 2, 10, 11, 12], [])
    live.add_facts([fact(13)])
    live.delete_facts([13, 12])
    live.delete_entities(["e"])
    live.add_facts([fact(14, "a", "d")])
    live.delete_entities(["d"])  # a logged fact's object: deleted with it
    with SQLiteStore.open(store.path) as other:
        got = other.read()
    ids = got.facts["id"].tolist()
    assert ids == [0, 1, 10, 11]
    assert got.facts["confidence"][ids.index(11)] == 0.25
    assert got.facts["access_count"][ids.index(10)] == 2
    assert live.tables.facts["id"].tolist() == ids


def test_a_duplicate_id_across_the_log_and_the_table_is_refused(store: SQLiteStore) -> None:
    live = store.load()
    live.add_facts([fact(10)])
    with pytest.raises(DataError):
        live.add_facts([fact(1)])  # in facts
    with pytest.raises(DataError):
        live.add_facts([fact(10)])  # in the log
    cols = "id, subject, object, status, source"
    for i in (1, 10):  # SQLite itself refuses them too (another client's writes)
        with pytest.raises(StorageError, match="UNIQUE constraint failed"):
            with store.transaction(fold=False) as cur:
                cur.execute(
                    f"INSERT INTO facts_log ({cols}) VALUES (?, 'a', 'b', 'confirmed', 'system')",
                    (i,),
                )
    with pytest.raises(StorageError, match="FOREIGN KEY"):
        with store.transaction(fold=False) as cur:
            cur.execute(
                f"INSERT INTO facts_log ({cols}) VALUES (20, 'zz', 'b', 'confirmed', 'system')"
            )
    with pytest.raises(UnknownIdError):
        live.delete_facts([99])
    assert stored_facts(store) == ([0, 1, 2], [10])


# ------------------------------------------------------------------------------ versions


def test_a_version_2_store_opens_writes_facts_directly_and_upgrades(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with monkeypatch.context() as m:  # a store as a version 2 graphrecall made it
        m.setattr(store_module, "SCHEMA_VERSION", 2)
        m.setattr(store_module, "LOG_SCHEMA", "")
        with SQLiteStore.create(tmp_path / "v2.db") as s:
            s.write(base_tables())
    with SQLiteStore.open(tmp_path / "v2.db") as s:
        assert (s.schema_version, s.logged, s.fact_tables) == (2, False, ("facts",))
        s.load().add_facts([fact(10)])
        assert s.fold() == 0
        s.upgrade()
        assert (s.schema_version, s.logged) == (3, True)
        s.load().add_facts([fact(11)])
        assert stored_facts(s) == ([0, 1, 2, 10], [11])
    with SQLiteStore.open(tmp_path / "v2.db") as s:
        assert s.schema_version == 3
        assert s.read().facts["id"].tolist() == [0, 1, 2, 10, 11]


def test_a_reader_of_older_versions_refuses_a_version_3_store(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.close()
    monkeypatch.setattr(store_module, "SUPPORTED_SCHEMA_VERSIONS", (1, 2))
    with pytest.raises(SchemaVersionError, match=r"schema version 3 .*upgrade graphrecall"):
        SQLiteStore.open(store.path)


# ------------------------------------------------------------------------------ crashes

_CHILD = """
import sys, threading
from graphrecall.storage.sqlite import SQLiteStore, log
path, mode, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = SQLiteStore.open(path)
store.fold_idle_s = None
live = store.load()
for b in range(batches):
    base = 100 + 10 * b
    live.add_facts([{"id": base + k, "subject": "a", "object": "c"} for k in range(10)])
    print("ack", b, flush=True)
if mode == "fold":
    fold = log.fold
    def stuck(cur):
        n = fold(cur)
        print("folded", n, flush=True)  # inside the fold's transaction, not committed
        threading.Event().wait()
        return n
    log.fold = stuck
    store.fold()
print("waiting", flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("mode", ["ack", "fold"])
def test_a_killed_writer_loses_no_acknowledged_fact_and_duplicates_none(
    store: SQLiteStore, mode: str
) -> None:
    store.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(store.path), mode, "4"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    acked: list[int] = []
    try:
        for line in child.stdout:
            word, *rest = line.split()
            if word == "ack":
                acked.append(int(rest[0]))
            if word in ("waiting", "folded"):
                break
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
        child.stdout.close()
    assert acked == [0, 1, 2, 3]
    with SQLiteStore.open(store.path) as s:
        in_table, in_log = stored_facts(s)
        got = s.read().facts["id"].tolist()  # verifies the checksums
        s.integrity_check()
        expect = [0, 1, 2, *(100 + 10 * b + k for b in acked for k in range(10))]
        assert got == expect  # each acknowledged fact, once, in order
        assert in_table == [0, 1, 2] and in_log == expect[3:]  # the fold never committed
        assert s.fold() == 40
        assert s.read().facts["id"].tolist() == expect


# ------------------------------------------------------------------------------ model


class Model:
    """The facts a store should hold, in order: id -> [subject, object, confidence,
    access_count]."""

    def __init__(self) -> None:
        self.facts: dict[int, list[Any]] = {
            0: ["a", "b", 1.0, 0],
            1: ["b", "c", 1.0, 0],
            2: ["c", "d", 1.0, 0],
        }
        self.next_id = 3


_ops = st.one_of(
    st.tuples(st.just("add"), st.integers(1, 3), st.integers(0, 4), st.integers(0, 4)),
    st.tuples(st.just("fold"), st.just(0), st.just(0), st.just(0)),
    st.tuples(st.just("update"), st.integers(0, 50), st.integers(0, 4), st.just(0)),
    st.tuples(st.just("access"), st.integers(0, 50), st.integers(1, 3), st.just(0)),
    st.tuples(st.just("delete"), st.integers(0, 50), st.just(0), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0), st.just(0), st.just(0)),
)


def _read_model(store: SQLiteStore) -> list[tuple[Any, ...]]:
    t = store.read().facts
    if len(t["id"]) == 0:
        return []
    return [
        (int(i), s, o, float(c), int(n))
        for i, s, o, c, n in zip(
            t["id"].tolist(),
            t["subject"].tolist(),
            t["object"].tolist(),
            t["confidence"].tolist(),
            t["access_count"].tolist(),
            strict=True,
        )
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_ops, max_size=12), fold_at=st.sampled_from([2, 5, 100_000]))
def test_any_interleaving_matches_a_plain_model(
    ops: list[tuple[str, int, int, int]], fold_at: int
) -> None:
    model = Model()
    with temp_store() as store:
        s = store
        s.fold_at, s.fold_slice = fold_at, 3
        live: LiveGraph = s.load()
        try:
            for op, x, y, z in ops:
                ids = list(model.facts)
                if op == "add":
                    recs = []
                    for k in range(x):
                        i = model.next_id
                        model.next_id += 1
                        subj, obj = ENTITIES[(y + k) % 5], ENTITIES[(z + 2 * k) % 5]
                        recs.append(fact(i, subj, obj))
                        model.facts[i] = [subj, obj, 1.0, 0]
                    live.add_facts(recs)
                elif op == "fold":
                    s.fold()
                elif op == "update" and ids:
                    i = ids[x % len(ids)]
                    model.facts[i][2] = y / 4
                    live.update_facts([{"id": i, "confidence": y / 4}])
                elif op == "access" and ids:
                    picked = [ids[(x + k) % len(ids)] for k in range(y)]
                    for i in picked:
                        model.facts[i][3] += 1
                    live.record_access(picked, at=NOW)
                elif op == "delete" and ids:
                    i = ids[x % len(ids)]
                    del model.facts[i]
                    live.delete_facts([i])
                elif op == "reopen":
                    if s is not store:
                        s.close()
                    s = SQLiteStore.open(store.path)
                    s.fold_at, s.fold_slice, s.fold_idle_s = fold_at, 3, None
                    live = s.load()
                expect = [(i, *v) for i, v in model.facts.items()]
                assert _read_model(s) == expect
            assert [int(i) for i in live.tables.facts["id"].tolist()] == list(model.facts)
            s.fold()
            assert _read_model(s) == [(i, *v) for i, v in model.facts.items()]
            assert s.logged_facts() == 0
        finally:
            if s is not store:
                s.close()


# ------------------------------------------------------------------------------ chunked reads


def test_a_chunked_read_equals_a_whole_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks whose values differ in kind (int ids then text, NULL objects then ids,
    literals then NULL) make the columns a read of all rows at once makes."""
    from graphrecall.storage.sqlite.read import read_tables

    with temp_store() as s:
        live = s.load()
        live.add_entities([{"id": 7}])
        live.add_facts([{"id": 10 + k, "subject": "a", "object_value": k} for k in range(5)])
        live.add_facts([{"id": f"t{k}", "subject": 7, "object": "c"} for k in range(4)])
        whole = read_tables(s.path, s._read, verify=True, logged=True)
        for size in (1, 2, 3, 1000):
            monkeypatch.setattr(store_module, "CHUNK_ROWS", size)
            got = s.read()
            for table in ("entities", "facts"):
                a, b = whole.table(table), got.table(table)
                assert a is not None and b is not None
                assert sorted(a) == sorted(b), (table, size)
                for col in a:
                    assert a[col].dtype == b[col].dtype, (table, col, size)
                    assert a[col].tolist() == b[col].tolist(), (table, col, size)
            s.fold()
            whole = read_tables(s.path, s._read, verify=True, logged=True)


# ------------------------------------------------------------------- other connections


def test_a_fold_by_another_connection_does_not_reload_a_write_does(store: SQLiteStore) -> None:
    """Another connection's fold moves facts between tables and changes no content, so a
    live graph keeps its graph; that connection's add makes it reload and see the fact."""
    live = store.load()
    other = SQLiteStore.open(store.path)
    other.fold_idle_s = None
    reads: list[int] = []
    read = store.read

    def counted(**kw: Any) -> GraphTables:
        reads.append(1)
        return read(**kw)

    store.read = counted  # type: ignore[method-assign]
    try:
        other_live = other.load()
        other_live.add_facts([fact(10, "c", "e")])  # logged by the other connection
        assert live.graph.n_facts == 4 and len(reads) == 1  # its first change reloads
        assert other.content_version() == store.content_version() is not None
        assert other.fold() == 1
        assert live.graph.n_facts == 4 and len(reads) == 1  # a fold alone: no reload
        live.add_facts([fact(11, "d", "e")])  # its own write: counted, no reload after
        other.fold()
        assert live.graph.n_facts == 5 and len(reads) == 1
        other_live.add_facts([fact(12, "e", "a")])
        assert live.graph.n_facts == 6 and len(reads) == 2
        assert sorted(live.tables.facts["id"].tolist()) == [0, 1, 2, 10, 11, 12]
    finally:
        other.close()
