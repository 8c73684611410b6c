"""Snapshot load time by verify level on a ~1M-fact graph (warm page cache).

    PYTHONPATH=python python benches/bench_snapshot_verify.py --facts 1000000 --repeat 7

Prints the min and median of ``--repeat`` loads per level. ``--levels`` picks them (a tree
whose ``load_snapshot`` knows other levels, e.g. an older "checksums", can be timed the same
way with ``--levels checksums,full``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from graphrecall import KnowledgeGraph
from graphrecall.storage.snapshot import load_snapshot, save_snapshot


def graph(n_facts: int, seed: int = 0) -> KnowledgeGraph:
    """``n_facts`` facts over ``n_facts // 5`` entities in 8 tenants, objects in the
    subject's tenant (20% literals), 200k chunks' mentions."""
    rng = np.random.default_rng(seed)
    n = max(n_facts // 5, 8)
    tenant = np.arange(n) % 8
    subj = rng.integers(0, n, n_facts)
    obj = subj - subj % 8 + tenant[subj]  # same residue mod 8: same tenant
    obj = (obj + 8 * rng.integers(0, 50, n_facts)) % (n - n % 8 or n)
    obj = obj - obj % 8 + tenant[subj]
    obj[rng.random(n_facts) < 0.2] = -1
    return KnowledgeGraph.from_arrays(
        entity_tenant=tenant,
        fact_subject=subj,
        fact_object=obj,
        confidence=rng.random(n_facts).astype(np.float32),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--levels", default="trusted,safe,full")
    ap.add_argument("--dir", default=None, help="an existing snapshot to load instead")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.dir) if args.dir else save_snapshot(graph(args.facts), Path(tmp) / "s")
        load_snapshot(root)  # warm the page cache
        for level in args.levels.split(","):
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                g = load_snapshot(root, verify=level)  # type: ignore[arg-type]
                times.append(time.perf_counter() - t)
            print(
                f"{level:>9}: min {min(times) * 1e3:7.1f} ms  median "
                f"{statistics.median(times) * 1e3:7.1f} ms  ({g.n_facts:,} facts, "
                f"{g.n_entities:,} entities)"
            )


if __name__ == "__main__":
    main()
