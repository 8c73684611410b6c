"""The fold debt of the SQLite store's fact log: a write that logs facts folds the log's
excess over ``fold_from`` in its own transaction, never more than ``fold_ratio`` facts per
fact it logged (one ``fold_slice`` at least while the log reaches ``fold_at``); under
writes that never pause the log stays at the low mark. Whatever the fold state, every read
(``read``, ``load``, another connection's catch-up) equals a store without a log."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphTables
from graphrecall.errors import UnknownIdError
from graphrecall.live import LiveGraph
from graphrecall.storage.sqlite import SQLiteStore, log
from graphrecall.storage.sqlite import store as store_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NOW = 1_700_000_000
ENTITIES = ["a", "b", "c", "d", "e", "f", "g"]
KEPT = ENTITIES[:5]  # never deleted: every add may name them
TABLES = ("entities", "facts", "chunks", "mentions", "aliases")


def base_tables() -> GraphTables:
    return GraphTables(
        entities={"id": np.array(ENTITIES, dtype=object)},
        facts={
            "id": np.array([0, 1, 2], dtype=np.int64),
            "subject": np.array(["a", "b", "f"], dtype=object),
            "object": np.array(["b", "g", "d"], dtype=object),
        },
    )


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Stores holding :func:`base_tables`: schema version 3 (the fact log) and version 2
    (facts written straight into ``facts``, as a graphrecall before the log made them)."""
    d = tmp_path_factory.mktemp("debt")
    with SQLiteStore.create(d / "v3.db") as s:
        s.write(base_tables())
    with pytest.MonkeyPatch.context() as m:
        m.setattr(store_module, "SCHEMA_VERSION", 2)
        m.setattr(store_module, "LOG_SCHEMA", "")
        with SQLiteStore.create(d / "v2.db") as s:
            s.write(base_tables())
    return {3: d / "v3.db", 2: d / "v2.db"}


def opened(path: Path, **fold: int) -> SQLiteStore:
    s = SQLiteStore.open(path)
    s.fold_idle_s = None  # no background fold: the writes alone decide
    for name, value in fold.items():
        setattr(s, name, value)
    return s


def rows_of(s: SQLiteStore, table: str) -> int:
    """A table's row count, from its checksum (no scan)."""
    return int(s.conn.execute("SELECT rows FROM checksums WHERE name = ?", (table,)).fetchone()[0])


def assert_same(a: GraphTables, b: GraphTables) -> None:
    for table in TABLES:
        x, y = a.table(table), b.table(table)
        assert (x is None) == (y is None), table
        if x is None or y is None:
            continue
        assert sorted(x) == sorted(y), table
        for col in x:
            assert x[col].tolist() == y[col].tolist(), (table, col)


# ------------------------------------------------------------------------------ the bound


@settings(max_examples=300, deadline=None)
@given(
    logged=st.integers(0, 500),
    appended=st.integers(0, 100),
    fold_from=st.integers(0, 300),
    ratio=st.integers(1, 4),
    fold_at=st.integers(1, 600),
    fold_slice=st.integers(1, 50),
)
def test_a_write_owes_at_most_its_ratio_or_one_slice(
    logged: int, appended: int, fold_from: int, ratio: int, fold_at: int, fold_slice: int
) -> None:
    store: Any = SimpleNamespace(
        fold_from=fold_from, fold_ratio=ratio, fold_at=fold_at, fold_slice=fold_slice
    )
    n = log.due(logged, appended, store)
    assert 0 <= n <= logged
    if appended == 0:
        assert n == 0
        return
    assert n <= max(ratio * appended, fold_slice)
    mark = min(fold_from, fold_at)
    owed = min(max(logged - mark, 0), ratio * appended)
    if logged - owed > fold_at:  # a log over the bound: a slice at least
        assert n == max(owed, min(fold_slice, logged))
    else:
        assert n == owed
    if logged - appended <= mark:  # was at or under the mark: back there
        assert logged - n <= mark


@pytest.mark.parametrize("ratio", [1, 2, 3])
def test_sustained_writes_fold_their_own_share_and_no_more(
    templates: dict[int, Path], tmp_path: Path, ratio: int
) -> None:
    """Writes of random sizes that never pause: counted in rows moved into ``facts``, no
    write folds more than ``ratio`` facts per fact it logs, and the log never passes the
    low mark (nor reaches ``fold_at``)."""
    shutil.copy(templates[3], tmp_path / "s.db")
    rng = np.random.default_rng(ratio)
    fold_from, fold_at = 20, 40
    with opened(tmp_path / "s.db", fold_from=fold_from, fold_ratio=ratio, fold_at=fold_at) as s:
        live = s.load()
        next_id, added, moved_total = 3, 0, 0
        for _ in range(60):
            k = int(rng.integers(1, 9))
            before = rows_of(s, "facts")
            live.add_facts([{"id": next_id + j, "subject": "a", "object": "c"} for j in range(k)])
            next_id += k
            added += k
            moved = rows_of(s, "facts") - before
            moved_total += moved
            assert 0 <= moved <= ratio * k
            assert s.logged_facts() <= fold_from
            assert s.logged_facts() + moved_total == added
        assert moved_total >= added - fold_from  # the log did not grow past the mark


def test_a_debt_over_the_mark_shrinks_by_ratio_minus_one_per_fact(
    templates: dict[int, Path], tmp_path: Path
) -> None:
    """A log left long (a burst under a higher mark) is paid back by later writes, each
    folding at most ``fold_ratio`` facts per fact it logs, until the log is at the mark."""
    shutil.copy(templates[3], tmp_path / "s.db")
    with opened(tmp_path / "s.db", fold_from=1000) as s:
        live = s.load()
        live.add_facts([{"id": 10 + j, "subject": "a", "object": "c"} for j in range(30)])
        assert s.logged_facts() == 30  # under the mark: the log only
        s.fold_from, s.fold_ratio = 5, 3
        lengths = []
        for b in range(8):
            before = rows_of(s, "facts")
            live.add_facts([{"id": 100 + 2 * b + j, "subject": "b", "object": "d"} for j in (0, 1)])
            assert rows_of(s, "facts") - before <= 6
            lengths.append(s.logged_facts())
        assert lengths == [26, 22, 18, 14, 10, 6, 5, 5]
        live.add_entities([{"id": "h"}])  # logs no fact: owes nothing
        assert s.logged_facts() == 5
        assert live.tables.facts["id"].tolist() == s.read().facts["id"].tolist()


# ------------------------------------------------------------------------------ model


_ops = st.one_of(
    st.tuples(st.just("add"), st.integers(1, 7), st.integers(0, 4)),
    st.tuples(st.just("read"), st.just(0), st.just(0)),
    st.tuples(st.just("fold"), st.just(0), st.just(0)),
    st.tuples(st.just("update"), st.integers(0, 99), st.integers(0, 4)),
    st.tuples(st.just("access"), st.integers(0, 99), st.integers(1, 3)),
    st.tuples(st.just("delete"), st.integers(0, 99), st.integers(1, 2)),
    st.tuples(st.just("delete_entity"), st.integers(0, 1), st.just(0)),
    st.tuples(st.just("other"), st.just(0), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0), st.just(0)),
)


class Pair:
    """The same operations on a store with the fact log and one without."""

    def __init__(self, paths: dict[int, Path], fold: dict[str, int]):
        self.paths, self.fold = paths, fold
        self.stores = {v: opened(p, **(fold if v == 3 else {})) for v, p in paths.items()}
        self.lives: dict[int, LiveGraph] = {v: s.load() for v, s in self.stores.items()}
        self.others = {v: opened(p, **(fold if v == 3 else {})) for v, p in paths.items()}
        self.other_lives = {v: s.load() for v, s in self.others.items()}

    def each(self, name: str, *args: Any, **kw: Any) -> None:
        for live in self.lives.values():
            getattr(live, name)(*args, **kw)

    def reopen(self) -> None:
        for s in self.stores.values():
            s.close()
        self.stores = {v: opened(p, **(self.fold if v == 3 else {})) for v, p in self.paths.items()}
        self.lives = {v: s.load() for v, s in self.stores.items()}

    def close(self) -> None:
        for s in (*self.stores.values(), *self.others.values()):
            s.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(_ops, max_size=14),
    fold_from=st.sampled_from([0, 4, 10_000]),
    fold_ratio=st.sampled_from([1, 2, 3]),
    fold_at=st.sampled_from([6, 100_000]),
)
def test_any_interleaving_reads_as_a_store_without_a_log(
    templates: dict[int, Path],
    ops: list[tuple[str, int, int]],
    fold_from: int,
    fold_ratio: int,
    fold_at: int,
) -> None:
    fold = {"fold_from": fold_from, "fold_ratio": fold_ratio, "fold_at": fold_at, "fold_slice": 3}
    with tempfile.TemporaryDirectory() as d:
        paths = {v: Path(d) / f"v{v}.db" for v in templates}
        for v, p in paths.items():
            shutil.copy(templates[v], p)
        pair = Pair(paths, fold)
        try:
            _run(pair, ops)
        finally:
            pair.close()


def _run(pair: Pair, ops: list[tuple[str, int, int]]) -> None:
    alive = list(ENTITIES)
    next_id = 3
    mark = min(pair.fold["fold_from"], pair.fold["fold_at"])
    for op, x, y in ops:
        live_ids = list(_live_ids(pair.lives[2]))
        if op == "add":
            recs = [
                {
                    "id": next_id + k,
                    "subject": KEPT[(y + k) % 5],
                    "object": alive[(y + 2 * k) % len(alive)],
                }
                for k in range(x)
            ]
            next_id += x
            s3 = pair.stores[3]
            before, logged = rows_of(s3, "facts"), s3.logged_facts()
            pair.each("add_facts", recs)
            moved = rows_of(s3, "facts") - before
            assert 0 <= moved <= max(s3.fold_ratio * x, s3.fold_slice)
            assert s3.logged_facts() == logged + x - moved
        elif op == "read":
            assert_same(pair.stores[3].read(), pair.stores[2].read())
        elif op == "fold":
            pair.stores[3].fold()
        elif op == "update" and live_ids:
            i = live_ids[x % len(live_ids)]
            pair.each("update_facts", [{"id": i, "confidence": y / 4}])
        elif op == "access" and live_ids:
            pair.each(
                "record_access", [live_ids[(x + k) % len(live_ids)] for k in range(y)], at=NOW
            )
        elif op == "delete" and live_ids:
            picked = sorted({live_ids[(x + k) % len(live_ids)] for k in range(y)})
            pair.each("delete_facts", picked)
        elif op == "delete_entity" and ENTITIES[5 + x] in alive:
            alive.remove(ENTITIES[5 + x])
            pair.each("delete_entities", [ENTITIES[5 + x]])
        elif op == "other":  # another connection catches up from content_version
            for live in pair.other_lives.values():
                live.refresh()
            assert_same(pair.other_lives[3].tables, pair.other_lives[2].tables)
        elif op == "reopen":
            pair.reopen()
        assert pair.stores[3].logged_facts() <= mark
        assert_same(pair.lives[3].tables, pair.lives[2].tables)
    assert_same(pair.stores[3].read(), pair.stores[2].read())
    assert_same(pair.stores[3].load().tables, pair.stores[2].load().tables)
    pair.stores[3].fold()
    assert pair.stores[3].logged_facts() == 0
    assert_same(pair.stores[3].read(), pair.stores[2].read())


def _live_ids(live: LiveGraph) -> Iterator[Any]:
    """The ids of the facts the graph holds (not its tombstones)."""
    for i in live.tables.facts["id"].tolist():
        try:
            live.graph.fact_index([i])
        except UnknownIdError:  # a tombstone
            continue
        yield i


def test_the_idle_fold_counts_from_the_end_of_a_write(
    templates: dict[int, Path], tmp_path: Path
) -> None:
    """A write that runs longer than ``fold_idle_s`` does not leave the store idle at its
    end: the quiet time starts at its commit."""
    shutil.copy(templates[3], tmp_path / "s.db")
    with opened(tmp_path / "s.db") as s:
        with s.transaction() as cur:
            cur.execute("SELECT 1")
            late = time.monotonic()
        assert s._idle.last_write >= late
