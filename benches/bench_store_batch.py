"""The store's part of a 1,000-fact ``LiveGraph.add_facts``, side by side: two copies of one
store, batches alternating between them, timed in one process.

* ``A``: SQLite's default WAL checkpoint (1,000 pages) and the per-row checksum triggers
  for every append;
* ``B``: the store's settings (``WAL_CHECKPOINT_PAGES``; appends of ``BATCH_ROWS`` rows or
  more checksummed in one pass).

Each batch's time is split into the insert (``SQLiteStore.insert``), the ``COMMIT`` (log
write and sync, and a checkpoint when one is due), the overlay generation
(``LiveGraph._generation``) and the rest (record conversion, checks).

Usage::

    python benches/bench_store_batch.py --entities 100000 --batches 30
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import bench_live  # noqa: E402
import workload  # noqa: E402
from graphrecall.storage.sqlite import SQLiteStore, checksum  # noqa: E402

BATCH_ROWS = checksum.BATCH_ROWS
PARTS = ("total", "insert", "commit", "overlay")


class _TimedCommits:
    """A connection that times its ``COMMIT`` statements (delegates everything else)."""

    def __init__(self, conn: Any, times: list[float]):
        self._conn, self._times = conn, times

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql != "COMMIT":
            return self._conn.execute(sql, *args)
        t0 = time.perf_counter()
        out = self._conn.execute(sql, *args)
        self._times.append(time.perf_counter() - t0)
        return out


def _open(base: Path, copy: Path, name: str, times: dict[str, list[float]]) -> Any:
    shutil.copy(base, copy)
    store = SQLiteStore.open(copy)
    if name == "A":
        store.conn.execute("PRAGMA wal_autocheckpoint = 1000")
    live = store.load(verify=False)
    live.compact_at = 1.0  # no compaction inside the timed batches
    live.write_in_place = True
    store._conn = _TimedCommits(store._conn, times["commit"])  # type: ignore[assignment]
    insert, generation = store.insert, live._generation

    def timed_insert(*a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        out = insert(*a, **k)
        times["insert"].append(time.perf_counter() - t0)
        return out

    def timed_generation(*a: Any) -> Any:
        t0 = time.perf_counter()
        out = generation(*a)
        times["overlay"].append(time.perf_counter() - t0)
        return out

    store.insert = timed_insert  # type: ignore[method-assign]
    live._generation = timed_generation  # type: ignore[method-assign]
    return live


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=30, help="timed batches per store")
    ap.add_argument("--size", type=int, default=1000, help="facts per batch")
    args = ap.parse_args(argv)
    g = workload.generate(args.entities, seed=0)
    with tempfile.TemporaryDirectory() as d:
        base = Path(d) / "base.db"
        with SQLiteStore.create(base) as s:
            s.write(bench_live.tables_of(g))
        times = {name: {p: [] for p in PARTS} for name in "AB"}
        lives = {name: _open(base, Path(d) / f"{name}.db", name, times[name]) for name in "AB"}
        print(f"load average at the start: {os.getloadavg()[0]:.1f}")
        rng = np.random.default_rng(1)
        next_id = lives["A"].graph.n_facts
        warm = 2
        for i in range(args.batches + warm):
            batch = bench_live.new_facts(rng, g, next_id + args.size * i, args.size)
            for name in "AB" if i % 2 else "BA":
                checksum.BATCH_ROWS = 10**9 if name == "A" else BATCH_ROWS
                t0 = time.perf_counter()
                lives[name].add_facts(batch)
                times[name]["total"].append(time.perf_counter() - t0)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}\n")
        print(
            "| store | add_facts p50 ms | p99 ms | mean ms | insert p50 ms | "
            "commit p50 ms | commit mean ms | overlay p50 ms | rest p50 ms |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name in "AB":
            t = {p: np.asarray(times[name][p][warm:]) * 1e3 for p in PARTS}
            rest = t["total"] - t["insert"] - t["commit"] - t["overlay"]
            print(
                f"| {name} | {np.median(t['total']):.1f} | "
                f"{np.percentile(t['total'], 99):.1f} | {t['total'].mean():.1f} | "
                f"{np.median(t['insert']):.1f} | {np.median(t['commit']):.1f} | "
                f"{t['commit'].mean():.1f} | {np.median(t['overlay']):.1f} | "
                f"{np.median(rest):.1f} |"
            )
        for live in lives.values():
            store = live.store
            store._conn = store._conn._conn
            store.close()
            with SQLiteStore.open(store.path) as s:
                s.read(verify=True)  # both stores' checksums hold
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
