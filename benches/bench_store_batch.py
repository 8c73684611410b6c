"""A 1,000-fact ``LiveGraph.add_facts`` on the SQLite store, split into its parts, for
several source trees side by side (e.g. main's and a branch's ``python/`` folders).

Each run is a child process that puts one tree's ``python/`` first on ``sys.path``, copies
one saved store, loads it (in-place writes, no compaction) and times its batches; the runs
alternate between the trees (``--rounds`` each). A batch's time is split into the insert
(``SQLiteStore.insert``), the ``COMMIT`` (log write and sync, and a checkpoint when the
commit runs one), the overlay generation (``LiveGraph._generation``), the fold of the
fact log inside the batch (``log.fold``, where the tree has one) and the rest (record
conversion, checks, the checksum's read-back).

In a tree whose store has a fact log (``SQLiteStore.upgrade``), the copy is upgraded first,
the batches are logged (and folded inside a batch as the tree's store decides: its fold
debt over ``--fold-from``, or a slice from ``--fold-at``), and what is left in the log is
folded after the timed batches, timed apart (or by one timed ``delete_facts`` of one
fact with ``--delete``, which folds the whole log first). The batches never leave the
store idle for its ``fold_idle_s``: with ``--warm`` past the fold threshold every timed
batch runs in the sustained-write regime.

Usage::

    python benches/bench_store_batch.py --entities 100000 --batches 30 \\
        --trees /work/main/python python
    python benches/bench_store_batch.py --entities 1000000 --store /work/data14/10m.db \\
        --batches 15 --rounds 2 --trees /work/main/python python
    python benches/bench_store_batch.py --entities 100000 --store /work/data14/1m.db \\
        --fold-at 20000 --warm 25 --batches 60 --delete --trees /work/main/python python

``--store``: the saved store of ``--entities`` entities (``workload.generate(n, seed=0)``),
written there first when the file does not exist; without it, one is written to a
temporary folder for this run. A store written here has this checkout's schema version:
to compare with a tree that predates the fact log (it refuses version 3), pass a version 2
``--store``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
PARTS = ("total", "insert", "commit", "overlay", "fold")


class _TimedCommits:
    """A connection that adds the time of the ``COMMIT`` statements run by the main thread
    (the batches', not a background fold's) to ``spent["commit"]`` (delegates everything
    else)."""

    def __init__(self, conn: Any, spent: dict[str, float]):
        self._conn, self._spent = conn, spent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql != "COMMIT":
            return self._conn.execute(sql, *args)
        t0 = time.perf_counter()
        out = self._conn.execute(sql, *args)
        if threading.current_thread() is threading.main_thread():
            self._spent["commit"] += time.perf_counter() - t0
        return out


def _child(args: argparse.Namespace) -> int:
    """One run in one tree: print the parts' times (ms per batch) as JSON."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(args.child).resolve()))
    # The tree's graphrecall first: bench_live puts this checkout's python/ first on
    # sys.path when it is imported, and would otherwise choose the package.
    graphrecall = importlib.import_module("graphrecall")
    import bench_live
    import workload
    from graphrecall.live import LiveGraph
    from graphrecall.storage.sqlite import SQLiteStore

    g = workload.generate(args.entities, seed=0)
    times: dict[str, list[float]] = {p: [] for p in PARTS}
    store = SQLiteStore.open(args.copy)
    if hasattr(store, "upgrade"):  # a tree with the fact log: the copy gets one
        store.upgrade()
        if args.fold_at:
            store.fold_at = args.fold_at
        if args.fold_from and hasattr(store, "fold_from"):  # a tree with the fold debt
            store.fold_from = args.fold_from
    t0 = time.perf_counter()
    # The stored rows, made again from the workload rather than read back (the same
    # tables as ``store.load()``, floats as SQLite returns them, without the ~10 GiB peak
    # of reading 10M facts as Python rows).
    tables = bench_live.tables_of(g)
    for c in ("confidence", "strength"):
        tables.facts[c] = tables.facts[c].astype(np.float64)
    live = LiveGraph(store, tables)
    load_s = time.perf_counter() - t0
    live.compact_at = 1.0  # no compaction inside the timed batches
    live.write_in_place = True
    spent = {"commit": 0.0, "fold": 0.0, "idle_folds": 0.0}  # the batch running
    store._conn = _TimedCommits(store._conn, spent)
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

    store.insert = timed_insert
    live._generation = timed_generation
    log_module = sys.modules.get("graphrecall.storage.sqlite.log")
    if log_module is not None:  # a tree with the fact log: its folds timed too
        fold_fn = log_module.fold

        def timed_fold(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            out = fold_fn(*a, **k)
            if threading.current_thread() is threading.main_thread():
                spent["fold"] += time.perf_counter() - t0
            else:  # the background fold (its wait shows in the batch's other parts)
                spent["idle_folds"] += 1
            return out

        log_module.fold = timed_fold
    rng = np.random.default_rng(1 + args.seed)
    next_id = live.graph.n_facts
    logged: list[int] = []  # the log's length after each timed batch
    for i in range(args.batches + args.warm):
        batch = bench_live.new_facts(rng, g, next_id + args.size * i, args.size)
        spent["commit"] = spent["fold"] = 0.0
        if i == args.warm:
            spent["idle_folds"] = 0
        t0 = time.perf_counter()
        live.add_facts(batch)
        times["total"].append(time.perf_counter() - t0)
        times["commit"].append(spent["commit"])
        times["fold"].append(spent["fold"])
        if i >= args.warm and hasattr(store, "logged_facts"):
            logged.append(store.logged_facts())
    store._conn = store._conn._conn
    fold: dict[str, float] = {}
    if hasattr(store, "fold"):  # what is left in the log, folded at once (e.g. at idle)
        fold["logged"] = store.logged_facts()
        fold["log_max"] = max(logged, default=0)
        fold["idle_folds"] = spent["idle_folds"]
        t0 = time.perf_counter()
        if args.delete:  # a delete folds the whole log first
            live.delete_facts([next_id])
            fold["facts"] = fold["logged"]
        else:
            fold["facts"] = store.fold()
        fold["ms"] = (time.perf_counter() - t0) * 1e3
    store.close()
    out = {p: [t * 1e3 for t in times[p][args.warm :]] for p in PARTS}
    package = str(Path(graphrecall.__file__).parent)
    print(json.dumps({"load_s": load_s, "times": out, "fold": fold, "package": package}))
    return 0


def _build(path: Path, entities: int) -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT.parent / "python"))
    import bench_live
    import workload
    from graphrecall.storage.sqlite import SQLiteStore

    g = workload.generate(entities, seed=0)
    with SQLiteStore.create(path) as s:
        s.write(bench_live.tables_of(g))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=30, help="timed batches per run")
    ap.add_argument("--warm", type=int, default=2, help="untimed batches first")
    ap.add_argument("--size", type=int, default=1000, help="facts per batch")
    ap.add_argument("--rounds", type=int, default=1, help="runs per tree, alternating")
    ap.add_argument("--store", type=Path, default=None, help="saved store (built if absent)")
    ap.add_argument(
        "--trees", nargs="+", default=[str(ROOT.parent / "python")], help="python/ folders"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--fold-at", type=int, default=0, help="the fact log's fold_at (0: the store's default)"
    )
    ap.add_argument(
        "--fold-from", type=int, default=0, help="the fold debt's low mark (0: the default)"
    )
    ap.add_argument(
        "--delete", action="store_true", help="end with a timed one-fact delete, not a fold"
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--copy", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        return _child(args)
    with tempfile.TemporaryDirectory(dir=None if args.store is None else args.store.parent) as d:
        base = args.store if args.store is not None else Path(d) / "base.db"
        if not base.exists():
            t0 = time.perf_counter()
            _build(base, args.entities)
            print(f"store written in {time.perf_counter() - t0:.0f} s: {base}")
        copy = Path(d) / "copy.db"
        runs: dict[str, list[dict[str, Any]]] = {t: [] for t in args.trees}
        print(f"load average at the start: {os.getloadavg()[0]:.1f}")
        for r in range(args.rounds):
            order = args.trees if r % 2 == 0 else args.trees[::-1]
            for tree in order:
                shutil.copy(base, copy)
                cmd = [sys.executable, __file__, "--child", tree, "--copy", str(copy)]
                cmd += [f"--entities={args.entities}", f"--batches={args.batches}"]
                cmd += [f"--warm={args.warm}", f"--size={args.size}", f"--seed={r}"]
                cmd += [f"--fold-at={args.fold_at}", f"--fold-from={args.fold_from}"]
                cmd += ["--delete"] if args.delete else []
                done = subprocess.run(cmd, check=True, capture_output=True, text=True)
                runs[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
                fold = runs[tree][-1].get("fold") or {}
                how = "a one-fact delete folded" if args.delete else "folded"
                folded = (
                    f", log at most {fold['log_max']:.0f} facts after a timed batch, "
                    f"{fold['idle_folds']:.0f} background folds during them; "
                    f"then {how} {fold['facts']:.0f} facts in {fold['ms']:.0f} ms"
                    if fold
                    else ""
                )
                print(
                    f"round {r} {tree}: load average {os.getloadavg()[0]:.1f}{folded}", flush=True
                )
                for p in (copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")):
                    p.unlink(missing_ok=True)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}\n")
        print(
            "| tree | batches | add_facts p50 ms | p99 ms | mean ms | insert p50 ms | "
            "commit p50 ms | commit mean ms | commit max ms | overlay p50 ms | fold p50 ms | "
            "fold mean ms | rest p50 ms | max ms |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for tree in args.trees:
            t = {p: np.concatenate([run["times"][p] for run in runs[tree]]) for p in PARTS}
            rest = t["total"] - t["insert"] - t["commit"] - t["overlay"] - t["fold"]
            print(
                f"| {tree} | {len(t['total'])} | {np.median(t['total']):.1f} | "
                f"{np.percentile(t['total'], 99):.1f} | {t['total'].mean():.1f} | "
                f"{np.median(t['insert']):.1f} | {np.median(t['commit']):.1f} | "
                f"{t['commit'].mean():.1f} | {t['commit'].max():.1f} | "
                f"{np.median(t['overlay']):.1f} | {np.median(t['fold']):.1f} | "
                f"{t['fold'].mean():.1f} | {np.median(rest):.1f} | "
                f"{t['total'].max():.1f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
