"""Time the storage loaders on the W1/W4 workload data: Parquet (and DuckDB) -> GraphTables ->
KnowledgeGraph, with peak memory.

Usage::

    python benches/workload.py --entities 100000 --seed 0 --out benches/data/100k   # once
    python benches/bench_storage.py benches/data/100k [--repeat 3] [--duckdb]

Prints first the memory of one ``load_parquet(...).to_graph(release=True)`` (in the fresh
process, before anything else is allocated; the tables are emptied as the graph takes their
columns), then of one ``load_parquet(...).to_graph()`` (the tables kept): the peak
resident-set growth while it loads, checks and builds,
the growth the built graph retains once the tables are dropped (after ``malloc_trim`` and
releasing Arrow's pool, so that freed memory kept by the allocators is not counted), and
their ratio. Then, per phase, the best wall time over ``--repeat`` runs: ``load_parquet``
(read and convert the columns), ``check`` (validate every row), ``build`` (compile the core
graph) and their sum (what ``load_parquet(...).to_graph()`` costs), then the process's peak
RSS.
With ``--snapshot`` the built graph is saved as a snapshot (in a temporary directory) and
``load_snapshot`` is timed ``--repeat`` times (the files are in the page cache: a warm
start), printing the best, the median and the worst. With ``--duckdb`` the Parquet files
are first imported into a temporary DuckDB file (not
timed) and ``load_duckdb`` is timed the same way. The workload's facts name their columns
``subject_id`` / ``object_id``, which the ColumnMapping below maps.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The workload's schema (benches/workload.py) in graphrecall's names.
COLUMNS = {"facts.subject": "subject_id", "facts.object": "object_id", "facts.tenant": None}


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / (1024 * 1024) if sys.platform == "darwin" else kib / 1024


def rss_mib() -> float:
    """Resident set size now, in MiB (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def hwm_mib() -> float:
    """Peak resident set size since the last :func:`reset_hwm` (``VmHWM``), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return peak_rss_mib()


def reset_hwm() -> bool:
    """Reset the kernel's peak-RSS mark of this process (``clear_refs`` 5); False if not
    allowed (the peak is then the process's so far)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def trim() -> None:
    """Collect garbage and hand memory the allocators keep (glibc, Arrow's pool) back."""
    import pyarrow as pa

    gc.collect()
    name = ctypes.util.find_library("c")
    if name:
        ctypes.CDLL(name).malloc_trim(0)
    pa.default_memory_pool().release_unused()


def memory(load: Callable[[], Any], *, release: bool = False) -> None:
    """Peak RSS growth of ``load().to_graph(release=...)`` vs the growth the graph
    retains."""
    trim()
    base = rss_mib()
    fresh = reset_hwm()
    graph, _ = load().to_graph(release=release)
    peak = (hwm_mib() if fresh else peak_rss_mib()) - base
    trim()
    retained = rss_mib() - base
    print(f"memory{' (release=True)' if release else ''}: {graph!r}")
    print(f"  peak growth {peak:7.0f} MiB  (load + check + build, one pipeline)")
    print(f"  retained    {retained:7.0f} MiB  (the built graph)")
    print(f"  ratio       {peak / retained:7.2f}    (peak / retained)")
    del graph
    trim()


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        out = None
        gc.collect()
        t0 = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench(name: str, load: Callable[[], Any], repeat: int) -> None:
    t_load, tables = best_of(repeat, load)
    t_check, (checked, report) = best_of(repeat, tables.check)
    if not report.ok:
        raise SystemExit(f"{name}: the workload has bad rows:\n{report}")
    t_build, graph = best_of(repeat, checked.build_graph)
    print(f"{name}: {graph!r}")
    print(f"  load        {t_load:7.3f} s")
    print(f"  check       {t_check:7.3f} s")
    print(f"  build       {t_build:7.3f} s")
    print(f"  to_graph    {t_load + t_check + t_build:7.3f} s  (load + check + build)")
    print(f"  peak RSS    {peak_rss_mib():7.0f} MiB  (process so far)")


def snapshot(graph: Any, repeat: int) -> None:
    """Time save_snapshot once and load_snapshot ``repeat`` times (warm page cache)."""
    import statistics

    from graphrecall.storage.snapshot import load_snapshot, save_snapshot

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        root = save_snapshot(graph, Path(tmp) / "snapshot")
        t_save = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in root.iterdir())
        del graph
        times = []
        for _ in range(max(repeat, 1)):
            gc.collect()
            t0 = time.perf_counter()
            loaded = load_snapshot(root)
            times.append(time.perf_counter() - t0)
            del loaded
    print(f"snapshot: {size / 2**20:.0f} MiB")
    print(f"  save        {t_save:7.3f} s")
    print(
        f"  load        {min(times):7.3f} s  (best of {len(times)}; median "
        f"{statistics.median(times):.3f}, worst {max(times):.3f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="a directory written by benches/workload.py")
    ap.add_argument("--repeat", type=int, default=3, help="runs per phase (best is shown)")
    ap.add_argument("--duckdb", action="store_true", help="also time load_duckdb")
    ap.add_argument("--snapshot", action="store_true", help="also time save/load_snapshot")
    args = ap.parse_args()

    t0 = time.perf_counter()
    import pyarrow.parquet as pq
    from graphrecall.storage.arrow import load_parquet
    from graphrecall.storage.mapping import ColumnMapping

    print(f"imports       {time.perf_counter() - t0:7.3f} s  (graphrecall.storage, pyarrow)")
    rows = pq.ParquetFile(args.data / "facts.parquet").metadata.num_rows
    print(f"data          {args.data} ({rows} facts)")
    print(f"baseline RSS  {peak_rss_mib():7.0f} MiB")
    mapping = ColumnMapping(columns=COLUMNS)
    # The release=True pipeline first: it is the one whose peak the tables dominate.
    memory(lambda: load_parquet(args.data, mapping), release=True)
    memory(lambda: load_parquet(args.data, mapping))
    bench("load_parquet", lambda: load_parquet(args.data, mapping), args.repeat)

    if args.snapshot:
        snapshot(load_parquet(args.data, mapping).to_graph()[0], args.repeat)

    if args.duckdb:
        import duckdb
        from graphrecall.storage.duckdb import load_duckdb

        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "workload.duckdb"
            con = duckdb.connect(str(db))
            for table in ("entities", "facts"):
                path = str(args.data / f"{table}.parquet")
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_parquet(?)", [path])
            con.close()
            bench("load_duckdb", lambda: load_duckdb(db, mapping), args.repeat)


if __name__ == "__main__":
    main()
