"""Several writers on one SQLite store: new ids are the file's next ones, not a process's
stale view, and every live graph sees the others' commits before its next read."""

from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

import pytest
from graphrecall.storage import GraphTables
from graphrecall.storage.sqlite import SQLiteStore

ROUNDS = 15


def _store(path: Path) -> None:
    with SQLiteStore.create(path) as s:
        s.write(
            GraphTables(
                entities={"id": ["a", "b"], "name": ["A", "B"]},
                facts={"id": [0], "subject": ["a"], "object": ["b"], "description": ["seed"]},
            )
        )


def _descriptions(tables: GraphTables) -> set[str]:
    return set(tables.facts["description"].tolist())


def test_a_second_live_graph_sees_the_first_ones_commits(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    _store(path)
    with SQLiteStore.open(path) as s1, SQLiteStore.open(path) as s2:
        one, two = s1.load(), s2.load()
        one.add_facts([{"subject": "a", "object": "b", "description": "from one"}])
        assert two.graph.n_facts == 2  # reloaded before answering
        assert "from one" in _descriptions(two.tables)
        two.add_facts([{"subject": "b", "object": "a", "description": "from two"}])
        assert sorted(one.tables.facts["id"].tolist()) == [0, 1, 2]
        assert _descriptions(one.tables) == {"seed", "from one", "from two"}
        one.delete_facts([2])  # an id only the other graph wrote
        assert two.graph.n_facts == 2
        two.record_access([1], at=1_700_000_000)
        assert one.tables.facts["access_count"].tolist() == [0, 1]
    with SQLiteStore.open(path) as s:
        assert _descriptions(s.read()) == {"seed", "from one"}


def _writer(path: str, name: str, barrier: Any, out: Any) -> None:
    """Add one fact per round (no id given: the store assigns the next), in lock step
    with the other writer, then report what was acknowledged and what this process sees."""
    with SQLiteStore.open(path) as s:
        live = s.load()
        acked = []
        errors = []
        for k in range(ROUNDS):
            barrier.wait()
            text = f"{name}-{k}"
            try:
                live.add_facts([{"subject": "a", "object": "b", "description": text}])
                acked.append(text)
            except Exception as exc:  # reported to the test, which fails on it
                errors.append(f"{text}: {exc}")
        barrier.wait()  # both writers are done: each must now see the other's facts
        seen = sorted(_descriptions(live.tables))
        out.put((name, acked, errors, seen))


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    _store(path)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(path), n, barrier, out)) for n in "xy"]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    acked = {t for _, a, _, _ in results for t in a}
    assert [e for _, _, errs, _ in results for e in errs] == []
    assert len(acked) == 2 * ROUNDS
    for name, _, _, seen in results:
        assert acked <= set(seen), name  # each writer sees every acknowledged write
    with SQLiteStore.open(path) as s:
        facts = s.read().facts
        assert acked | {"seed"} == _descriptions(s.read())
        ids = facts["id"].tolist()
        assert sorted(ids) == list(range(2 * ROUNDS + 1))  # the next id each time, no gap


@pytest.mark.skipif(os.name == "nt", reason="SIGKILL")
def test_the_crash_test_short_mode_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """benches/crash_test.py in short mode: writers of every kind killed at random points;
    every acknowledged write is present and every store and saved directory loads."""
    path = Path(__file__).resolve().parents[1] / "benches" / "crash_test.py"
    spec = importlib.util.spec_from_file_location("crash_test", path)
    assert spec is not None and spec.loader is not None
    crash_test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crash_test)
    assert crash_test.main(["--kills", "2", "--jitter", "0", "--seed", "3"]) == 0, (
        capsys.readouterr().out
    )
