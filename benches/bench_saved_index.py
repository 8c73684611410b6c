"""Time GraphIndex.save / GraphIndex.load on the W1/W4 workload data.

Usage::

    python benches/workload.py --entities 100000 --seed 0 --out benches/data/100k   # once
    python benches/bench_saved_index.py benches/data/100k [--repeat 3]

The index is built from the Parquet files with random 64-d vectors (a callable embedder,
so no model is needed), saved to a temporary directory, and loaded ``--repeat`` times
(warm page cache, CRC-32 of every file verified, no embedder): best and median.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from graphrecall.embed import CallableEmbedder
from graphrecall.index import GraphIndex
from graphrecall.storage.arrow import load_parquet
from graphrecall.storage.mapping import ColumnMapping

#: The workload's schema (benches/workload.py) in graphrecall's names.
COLUMNS = {"facts.subject": "subject_id", "facts.object": "object_id", "facts.tenant": None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="a directory written by benches/workload.py")
    ap.add_argument("--repeat", type=int, default=3, help="loads timed")
    args = ap.parse_args()
    tables = load_parquet(args.data, ColumnMapping(columns=COLUMNS))
    rng = np.random.default_rng(0)
    emb = CallableEmbedder(lambda t: rng.standard_normal((len(t), 64)), dim=64)
    index = GraphIndex.build(tables, embedder=emb)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        index.save(Path(tmp) / "index")
        save = time.perf_counter() - t
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            GraphIndex.load(Path(tmp) / "index", embedder=None)
            times.append(time.perf_counter() - t)
    print(f"save  {save:.3f} s")
    print(
        f"load  {min(times):.3f} s  (best of {args.repeat}; median {statistics.median(times):.3f})"
    )


if __name__ == "__main__":
    main()
