"""Checkpoints off the write path (``graphrecall.storage.sqlite.checkpoint``): they run on
their own thread after the commits, the store closes cleanly around them, and a process
killed while writing and checkpointing loses no acknowledged batch and shows no partial one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from graphrecall.storage import GraphTables
from graphrecall.storage.sqlite import SQLiteStore
from graphrecall.storage.sqlite import store as store_module

N_ENTITIES = 500


def _create(path: Path, n_facts: int = 100) -> None:
    with SQLiteStore.create(path) as s:
        s.write(
            GraphTables(
                entities={"id": list(range(N_ENTITIES))},
                facts={
                    "id": list(range(n_facts)),
                    "subject": [i % N_ENTITIES for i in range(n_facts)],
                    "object": [(7 * i + 1) % N_ENTITIES for i in range(n_facts)],
                },
            )
        )


def _batch(start: int, k: int) -> list[dict[str, int]]:
    return [
        {"id": i, "subject": (3 * i) % N_ENTITIES, "object": (11 * i + 5) % N_ENTITIES}
        for i in range(start, start + k)
    ]


def test_checkpoints_run_in_the_background_after_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "CHECKPOINT_ROWS", 300)
    path = tmp_path / "s.db"
    _create(path)
    store = SQLiteStore.open(path)
    try:
        live = store.load()
        for k in range(5):
            live.add_facts(_batch(100 + 200 * k, 200))
        store.wait_checkpoint()
        assert store._checkpointer.runs >= 2
        # Everything is in the database file: a passive checkpoint finds nothing to copy.
        busy, log, done = store.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0 and log == done
        with SQLiteStore.open(path) as other:
            assert other.counts()["facts"] == 1100
            other.read(verify=True)
    finally:
        store.close()
    assert store._checkpointer._thread is not None
    assert not store._checkpointer._thread.is_alive()
    assert not Path(f"{path}-wal").exists()  # the last connection checkpointed and removed it
    with SQLiteStore.open(path) as s:
        s.integrity_check()
        assert s.counts()["facts"] == 1100


def test_small_writes_start_no_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _create(path)
    with SQLiteStore.open(path) as store:
        live = store.load()
        live.add_facts(_batch(100, 10))
        assert store._checkpointer._thread is None


CHILD = textwrap.dedent(
    """
    import sys
    from graphrecall.storage.sqlite import SQLiteStore
    from graphrecall.storage.sqlite import store as store_module

    store_module.CHECKPOINT_ROWS = 300  # a checkpoint after about every other batch
    path, k = sys.argv[1], int(sys.argv[2])
    live = SQLiteStore.open(path).load(verify=False)
    while True:
        start = live.graph.n_facts
        live.add_facts(
            [{"id": i, "subject": (3 * i) % 500, "object": (11 * i + 5) % 500}
             for i in range(start, start + 200)]
        )
        print(k, flush=True)  # acknowledged: committed
        k += 1
    """
)


def test_acknowledged_batches_survive_a_kill_during_checkpoints(tmp_path: Path) -> None:
    """A child appends 200-fact batches with background checkpoints between them and
    prints each batch number after its commit; it is killed (SIGKILL) while writing. The
    file must open cleanly and verify, hold every acknowledged batch, and no partial one."""
    path = tmp_path / "kill.db"
    _create(path, n_facts=0)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = 0
    for _ in range(2):  # kill, reopen, resume, kill again
        child = subprocess.Popen(
            [sys.executable, str(script), str(path), str(done)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        acked = -1
        for line in child.stdout:
            acked = int(line)
            if acked >= done + 8:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL, child.stderr.read() if child.stderr else ""
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()
        with SQLiteStore.open(path) as s:
            s.integrity_check()
            tables = s.read(verify=True)
            n = tables.n_rows("facts")
            assert n % 200 == 0, "a partial batch is visible"
            assert n // 200 in (acked + 1, acked + 2)  # the batch after the last ack may be in
            assert tables.facts["id"].tolist() == list(range(n))
        done = n // 200
    assert done >= 18
