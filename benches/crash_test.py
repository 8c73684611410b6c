"""Crash test: kill writers with SIGKILL at random points, many times, and check that every
acknowledged write is there and that every store and saved directory still loads.

Usage::

    python benches/crash_test.py                       # short mode: 3 kills per scenario
    python benches/crash_test.py --kills 200 --seed 1  # long mode (about 15-25 minutes)

Scenarios (``--scenarios``, comma-separated; all by default):

* ``facts``: two writer processes add facts to one SQLite store through their own
  :class:`~graphrecall.LiveGraph` (the store assigns the ids; odd writes add 200 facts at
  once); both are killed at random. Every write a writer printed (acknowledged) must be in
  the store, every write whole or absent, ids unique, and the
  store must pass ``integrity_check`` and its checksums.
* ``usage``: a writer records usage batches (every fact once per batch,
  ``record_access(..., refresh=False)``); after the kill every acknowledged batch is
  counted and no batch is half applied (all facts carry the same count).
* ``snapshot``: a writer saves graph *k* with ``save_snapshot`` over the same path, over
  and over; after the kill the path loads graph *k* for the last acknowledged *k* or the
  one after it (a save that finished before its acknowledgement was printed).
* ``rag``: the same with ``GraphRAG.save`` / ``GraphRAG.load`` (no embedder).

Each writer prints ``k`` after write *k* returned; the parent reads these lines, kills the
writer after a random number of them plus a random delay of up to ``--jitter`` seconds (so
the kill lands anywhere in the next write), checks, and starts the next writer on the same
files. Saves killed at chosen steps of the publish are tested in ``tests/test_bundle.py``;
this script kills them at random times instead. Exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

SCENARIOS = ("facts", "usage", "snapshot", "rag")
N_FACTS = 200


# ------------------------------------------------------------------------------ writers


def _graph_tables(k: int) -> object:
    """Graph k of the save scenarios: k + 2 entities in a chain."""
    from graphrecall.storage import GraphTables

    n = k + 2
    return GraphTables(
        entities={"id": list(range(n)), "name": [f"e{i}" for i in range(n)]},
        facts={"subject": list(range(n - 1)), "object": list(range(1, n))},
    )


def _facts_in_write(k: int) -> int:
    """Facts added by write ``k`` of the facts scenario: one, or a batch of 200."""
    return 200 if k % 2 else 1


def child(scenario: str, path: str, name: str, start: int) -> None:
    """Write forever, printing k after write k is acknowledged (returned)."""
    k = start
    if scenario == "facts":
        from graphrecall.storage.sqlite import SQLiteStore

        live = SQLiteStore.open(path).load()
        while True:
            # Odd writes add a batch big enough for the store's one-pass checksum.
            fact = {"subject": 0, "object": 1, "description": f"{name}-{k}"}
            live.add_facts([fact] * _facts_in_write(k))
            print(k, flush=True)
            k += 1
    elif scenario == "usage":
        from graphrecall.storage.sqlite import SQLiteStore

        live = SQLiteStore.open(path).load()
        ids = list(range(N_FACTS))
        while True:
            live.record_access(ids, at=1_700_000_000 + k, refresh=False)
            print(k, flush=True)
            k += 1
    elif scenario == "snapshot":
        from graphrecall.storage import save_snapshot

        while True:
            save_snapshot(_graph_tables(k).build_graph(), path)  # type: ignore[attr-defined]
            print(k, flush=True)
            k += 1
    elif scenario == "rag":
        from graphrecall import GraphRAG

        while True:
            GraphRAG.from_tables(_graph_tables(k), embedder=None).save(path)  # type: ignore[arg-type]
            print(k, flush=True)
            k += 1
    raise SystemExit(f"unknown scenario {scenario!r}")


# ------------------------------------------------------------------------------ parent


class Writer:
    """A writer process and the last k it acknowledged."""

    def __init__(self, scenario: str, path: Path, name: str, start: int):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--child", scenario, str(path), name, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.name = name
        self.acked = start - 1

    def run_until(self, count: int) -> None:
        """Read acknowledgements until ``count`` more came (or the writer died)."""
        assert self.proc.stdout is not None
        target = self.acked + count
        for line in self.proc.stdout:
            self.acked = int(line)
            if self.acked >= target:
                return
        raise RuntimeError(f"writer {self.name} died: {self.stderr()}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        if self.proc.returncode != -signal.SIGKILL:
            raise RuntimeError(f"writer {self.name} ended with {self.proc.returncode}")
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # acknowledgements printed before the kill
            if line.strip():
                self.acked = int(line)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()

    def stderr(self) -> str:
        self.proc.wait()
        return self.proc.stderr.read() if self.proc.stderr else ""


def _store(path: Path, n_facts: int) -> None:
    from graphrecall.storage import GraphTables
    from graphrecall.storage.sqlite import SQLiteStore

    with SQLiteStore.create(path) as s:
        s.write(
            GraphTables(
                entities={"id": list(range(n_facts + 1))},
                facts={
                    "id": list(range(n_facts)),
                    "subject": list(range(n_facts)),
                    "object": list(range(1, n_facts + 1)),
                },
            )
        )


def run_facts(work: Path, kills: int, rng: random.Random, jitter: float) -> int:
    from graphrecall.storage.sqlite import SQLiteStore

    path = work / "facts.db"
    _store(path, 1)
    acked: set[str] = set()
    for run in range(kills):
        writers = [Writer("facts", path, f"w{run}{x}", 0) for x in "ab"]
        for w in writers:
            w.run_until(rng.randint(1, 6))
        time.sleep(rng.uniform(0, jitter))  # randomises where in a write each kill lands
        for w in writers:
            w.kill()
            acked |= {f"{w.name}-{k}" for k in range(w.acked + 1)}
        with SQLiteStore.open(path) as s:
            s.integrity_check()
            facts = s.read().facts  # verifies the checksums
            ids = facts["id"].tolist()
            if len(set(ids)) != len(ids):
                raise AssertionError("facts: duplicate ids")
            written = Counter(d for d in facts["description"].tolist() if d is not None)
            missing = acked - set(written)
            if missing:
                raise AssertionError(f"facts: acknowledged writes lost: {sorted(missing)[:5]}")
            for what, n in written.items():  # every write whole (acknowledged or not)
                if n != _facts_in_write(int(what.rsplit("-", 1)[1])):
                    raise AssertionError(f"facts: write {what} is half applied ({n} facts)")
    return len(acked)


def run_usage(work: Path, kills: int, rng: random.Random, jitter: float) -> int:
    from graphrecall.storage.sqlite import SQLiteStore

    path = work / "usage.db"
    _store(path, N_FACTS)
    start = 0
    for _ in range(kills):
        w = Writer("usage", path, "u", start)
        w.run_until(rng.randint(1, 6))
        time.sleep(rng.uniform(0, jitter))
        w.kill()
        with SQLiteStore.open(path) as s:
            facts = s.read().facts
            counts = set(facts["access_count"].tolist())
            if len(counts) != 1:
                raise AssertionError(f"usage: a batch is half applied: counts {sorted(counts)}")
            (count,) = counts
            if count < w.acked + 1:
                raise AssertionError(f"usage: {w.acked + 1} batches acknowledged, {count} stored")
            last = set(facts["last_accessed"].tolist())
            if last != {1_700_000_000 + count - 1}:
                raise AssertionError(f"usage: last_accessed {sorted(last)} after {count} batches")
            start = count
    return start


def _run_saves(
    scenario: str,
    load_n: Callable[[Path], int],
    work: Path,
    kills: int,
    rng: random.Random,
    jitter: float,
) -> int:
    path = work / scenario
    start = 0
    saves = 0
    for _ in range(kills):
        w = Writer(scenario, path, "s", start)
        w.run_until(rng.randint(1, 3))
        time.sleep(rng.uniform(0, jitter))
        w.kill()
        k = load_n(path) - 2
        if k not in (w.acked, w.acked + 1):
            raise AssertionError(f"{scenario}: loads save {k}, the last acknowledged is {w.acked}")
        saves += w.acked + 1 - start
        start = k + 1
    return saves


def run_snapshot(work: Path, kills: int, rng: random.Random, jitter: float) -> int:
    from graphrecall.storage import load_snapshot

    return _run_saves("snapshot", lambda p: load_snapshot(p).n_entities, work, kills, rng, jitter)


def run_rag(work: Path, kills: int, rng: random.Random, jitter: float) -> int:
    from graphrecall import GraphRAG

    def n(p: Path) -> int:
        return GraphRAG.load(p, embedder=None).index.graph.n_entities

    return _run_saves("rag", n, work, kills, rng, jitter)


RUNNERS = {"facts": run_facts, "usage": run_usage, "snapshot": run_snapshot, "rag": run_rag}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3, help="kills per scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jitter", type=float, default=0.02, help="max random delay, s")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--child", nargs=4, metavar=("SCENARIO", "PATH", "NAME", "START"))
    args = parser.parse_args(argv)
    if args.child:
        scenario, path, name, start = args.child
        child(scenario, path, name, int(start))
        return 0
    failed = 0
    with tempfile.TemporaryDirectory(prefix="graphrecall-crash-") as tmp:
        for scenario in args.scenarios.split(","):
            rng = random.Random(f"{args.seed}-{scenario}")
            work = Path(tmp) / scenario
            work.mkdir()
            t0 = time.perf_counter()
            try:
                checked = RUNNERS[scenario](work, args.kills, rng, args.jitter)
            except AssertionError as exc:
                failed += 1
                print(f"{scenario}: FAILED: {exc}", flush=True)
                continue
            took = time.perf_counter() - t0
            print(
                f"{scenario}: {args.kills} kills, {checked} acknowledged writes checked, "
                f"all present and loadable ({took:.1f} s)",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
