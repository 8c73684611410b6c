"""Side-by-side comparison of graphrecall and its peers on W1 and W4 (WORKLOADS.md).

Usage::

    python benches/compare.py --data benches/data/100k --out benches/results/100k.md
    python benches/compare.py --data benches/data/100k --peers graphrecall,dict,scipy \\
        --queries 1000 --rounds 10 --out benches/results/100k.md

Steps: load the Parquet columns once; build the oracle (:class:`peers.Reference`) and its answers;
build every peer, recording build seconds and resident-memory growth; check that every peer
returns exactly the oracle's ids for every query (single and batched), which is also the warm-up
pass (so SQLite is timed with a hot cache); then time single-query latency of W1 and W4
interleaved in blocks (each round runs every peer over one block of queries, rotating the peer
order), and batched throughput of the peers that take a whole batch in one call. Writes a
markdown report to ``--out`` and the raw summary to the same path with ``.json``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers as P
import workload as W

DEFAULT_PEERS = (
    "graphrecall",
    "graphrecall-call",
    "dict",
    "scipy",
    "igraph",
    "rustworkx",
    "networkx",
    "sqlite",
)
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """Current resident set size of this process."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


def peak_rss_bytes() -> int:
    """High-water mark of the resident set (since the last :func:`reset_peak_rss`)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measure_build(data: Path, name: str) -> dict[str, float]:
    """Build one peer in this (fresh) process: seconds, resident growth and peak growth."""
    g = W.load(data)
    peer = P.make_peer(name, data)
    for mod in peer.modules:  # library code is not the peer's index
        importlib.import_module(mod)
    gc.collect()
    # Arrow keeps the pages it freed while reading Parquet: give them back first, so that a
    # peer releasing Arrow's pool does not count them as its own savings.
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    r0 = rss_bytes()
    clean_peak = reset_peak_rss()
    t0 = time.perf_counter()
    peer.build(g)
    secs = time.perf_counter() - t0
    gc.collect()
    r1 = rss_bytes()
    out = {
        "seconds": secs,
        "rss_mb": (r1 - r0) / 2**20,
        "bytes_per_fact": (r1 - r0) / g.n_facts,
    }
    if clean_peak:
        out["peak_mb"] = (peak_rss_bytes() - r0) / 2**20
    peer.close()
    return out


def measure_build_isolated(data: Path, name: str) -> dict[str, float]:
    """:func:`measure_build` in a subprocess, so that memory freed by earlier peers (or the
    oracle) cannot be reused and hide part of this peer's footprint."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--data", str(data)]
    proc = subprocess.run(
        [*cmd, "--measure-build", name], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"measuring {name} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------
# verification
# ------------------------------------------------------------------------------------------


def describe_mismatch(
    oracle: Callable[[], P.Reference],
    workload: str,
    qi: int,
    anchors: list[int],
    want: list[int],
    got: list[int],
) -> str:
    k = next(
        (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
        min(len(want), len(got)),
    )
    lines = [
        f"{workload} query {qi} anchors={anchors}: first difference at rank {k} "
        f"(oracle {len(want)} ids, peer {len(got)} ids)",
        f"  oracle: {want[max(0, k - 2) : k + 5]}",
        f"  peer:   {got[max(0, k - 2) : k + 5]}",
    ]
    ref = oracle()
    ids = {f for f in want[k : k + 3] + got[k : k + 3] if 0 <= f < len(ref.confidence)}
    for f in sorted(ids):
        detail = (
            f"  fact {f}: subject={ref.subject[f]} object={ref.object[f]} "
            f"confidence={ref.confidence[f]!r} status={W.STATUSES[ref.status[f]]} "
            f"source={W.SOURCES[ref.source[f]]} access_count={ref.access_count[f]} "
            f"last_accessed={ref.last_accessed[f]}"
        )
        if workload == "W1":
            detail += f" score={ref.score(f, W.NOW)!r}"
        else:
            detail += f" best={ref.w4_scores(anchors).get(f)!r}"
        lines.append(detail)
    missing = set(want) - set(got)
    extra = set(got) - set(want)
    if missing or extra:
        lines.append(f"  missing from peer: {sorted(missing)[:10]}  extra: {sorted(extra)[:10]}")
    return "\n".join(lines)


def verify(
    peer: P.Peer,
    args: list[Any],
    queries: np.ndarray,
    oracle: Callable[[], P.Reference],
    want1: list[list[int]],
    want4: list[list[int]],
) -> tuple[str | None, dict[str, float]]:
    """Check single and batched answers against the oracle; returns (error, first-pass secs)."""
    first_pass: dict[str, float] = {}
    for wl, fn, want in (("W1", lambda a: peer.w1(a, W.NOW), want1), ("W4", peer.w4, want4)):
        t0 = time.perf_counter()
        for i, a in enumerate(args):
            got = P.as_list(fn(a))
            if got != want[i]:
                return describe_mismatch(
                    oracle, wl, i, queries[i].tolist(), want[i], got
                ), first_pass
        first_pass[wl] = time.perf_counter() - t0
    for wl, name, want in (("W1", "w1_batch", want1), ("W4", "w4_batch", want4)):
        fn = getattr(peer, name, None)
        if fn is None:
            continue
        ids, offsets = fn(queries, W.NOW) if wl == "W1" else fn(queries)
        got_all = P.split_batch(ids, offsets)
        if len(got_all) != len(want):
            return f"{name}: {len(got_all)} results for {len(want)} queries", first_pass
        for i, got in enumerate(got_all):
            if got != want[i]:
                msg = describe_mismatch(oracle, wl, i, queries[i].tolist(), want[i], got)
                return f"{name} (batched): " + msg, first_pass
    return None, first_pass


# ------------------------------------------------------------------------------------------
# timing
# ------------------------------------------------------------------------------------------


def time_block(fn: Callable[..., Any], args: list[Any], extra: tuple[Any, ...]) -> tuple[Any, int]:
    """Wall ns of each call, and the CPU ns of the whole block."""
    lat = np.empty(len(args), np.int64)
    clock = time.perf_counter_ns
    cpu0 = time.process_time_ns()
    for i, a in enumerate(args):
        t0 = clock()
        fn(a, *extra)
        lat[i] = clock() - t0
    return lat, time.process_time_ns() - cpu0


def time_single(
    built: dict[str, P.Peer],
    args: dict[str, list[Any]],
    n_queries: int,
    rounds: int,
    repeat: int,
) -> dict[str, dict[str, Any]]:
    names = list(built)
    lat: dict[tuple[str, str], list[np.ndarray]] = {(n, w): [] for n in names for w in ("W1", "W4")}
    cpu: dict[tuple[str, str], int] = dict.fromkeys(lat, 0)
    block = max(1, -(-n_queries // rounds))
    r = 0
    for _rep in range(repeat):
        for lo in range(0, n_queries, block):
            hi = min(lo + block, n_queries)
            order = names[r % len(names) :] + names[: r % len(names)]
            r += 1
            for name in order:
                peer, a = built[name], args[name][lo:hi]
                for wl, fn, extra in (("W1", peer.w1, (W.NOW,)), ("W4", peer.w4, ())):
                    gc.collect()
                    ns, c = time_block(fn, a, extra)
                    lat[name, wl].append(ns)
                    cpu[name, wl] += c
        log(f"  timed repeat {_rep + 1}/{repeat}")
    out: dict[str, dict[str, Any]] = {}
    for (name, wl), parts in lat.items():
        ns = np.concatenate(parts)
        out.setdefault(name, {})[wl] = {
            "n": len(ns),
            "median_us": float(np.median(ns)) / 1e3,
            "p99_us": float(np.percentile(ns, 99)) / 1e3,
            "mean_us": float(ns.mean()) / 1e3,
            "min_us": float(ns.min()) / 1e3,
            "max_us": float(ns.max()) / 1e3,
            "cpu_us_per_query": cpu[name, wl] / len(ns) / 1e3,
        }
    return out


def time_batch(
    peer: P.Peer, queries: np.ndarray, min_seconds: float, max_reps: int
) -> dict[str, dict[str, float]]:
    out = {}
    for wl, name in (("W1", "w1_batch"), ("W4", "w4_batch")):
        fn = getattr(peer, name, None)
        if fn is None:
            continue
        extra = (W.NOW,) if wl == "W1" else ()
        fn(queries, *extra)  # warm-up
        walls, cpus = [], []
        start = time.perf_counter()
        while len(walls) < max_reps and (
            len(walls) < 3 or time.perf_counter() - start < min_seconds
        ):
            gc.collect()
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            fn(queries, *extra)
            walls.append(time.perf_counter_ns() - t0)
            cpus.append(time.process_time_ns() - c0)
        med = float(np.median(walls))
        out[wl] = {
            "batch": len(queries),
            "reps": len(walls),
            "median_ms": med / 1e6,
            "min_ms": float(np.min(walls)) / 1e6,
            "queries_per_s": len(queries) / (med / 1e9),
            "us_per_query": med / len(queries) / 1e3,
            "cpu_us_per_query": float(np.median(cpus)) / len(queries) / 1e3,
        }
    return out


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("numpy", "pyarrow", "scipy", "networkx", "rustworkx", "igraph", "graphrecall"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    import sqlite3

    out["sqlite"] = sqlite3.sqlite_version
    return out


def machine() -> str:
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def fmt_us(x: float) -> str:
    if x >= 10_000:
        return f"{x / 1000:,.1f} ms"
    if x >= 100:
        return f"{x:,.0f} µs"
    return f"{x:.1f} µs"


def render(res: dict[str, Any]) -> str:
    d = res["data"]
    base = res["baseline"]
    lines = [
        f"# W1 / W4 comparison: {d['entities']:,} entities, {d['facts']:,} facts",
        "",
        f"{res['date']} · {res['machine']} · "
        + ", ".join(f"{k} {v}" for k, v in res["versions"].items()),
        "",
        f"Data `{res['data_dir']}` (WORKLOADS.md generator, seed {d.get('seed', '?')}): "
        f"literal share {d['literal_share']:.3f}, out-degree median/p99/max "
        f"{d['out_degree_median']:.0f}/{d['out_degree_p99']:.0f}/{d['out_degree_max']}, "
        f"in-degree p99/max {d['in_degree_p99']:.0f}/{d['in_degree_max']}. "
        f"{res['queries']} queries of 3 anchors; every peer below returned exactly the oracle's "
        "ids for every query (single and batched) before it was timed.",
        "",
        "## Build (from the same Parquet columns)",
        "",
        "| peer | build s | RSS growth MB | peak during build MB | bytes / fact | "
        "first (cold) pass W1 / W4 s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, b in res["build"].items():
        fp = res["first_pass"].get(name, {})
        peak = f"{b['peak_mb']:,.1f}" if "peak_mb" in b else "n/a"
        lines.append(
            f"| {name} | {b['seconds']:.2f} | {b['rss_mb']:,.1f} | {peak} | "
            f"{b['bytes_per_fact']:,.0f} | "
            f"{fp.get('W1', float('nan')):.2f} / {fp.get('W4', float('nan')):.2f} |"
        )
    where = (
        "in a fresh process per peer (`--memory subprocess`), after loading the Parquet columns"
        if res.get("memory") == "subprocess"
        else "around the in-process build (`--memory inprocess`: memory freed earlier may be "
        "reused, so this can understate)"
    )
    lines += [
        "",
        f"Build seconds and memory are measured {where}: RSS growth is the resident-set change "
        "around `build` after `gc.collect()` (the index the peer keeps), peak is the "
        "high-water mark during the build (`VmHWM`). The SQLite peer's data lives in the OS "
        "page cache and its own page cache (256 MiB max), not in the process at build time.",
    ]
    for wl, title in (
        ("W1", "W1: spreading activation + scoreFact (seed 000), single query"),
        ("W4", "W4: graph recall, BFS both directions, top 20 (seed 004), single query"),
    ):
        lines += [
            "",
            f"## {title}",
            "",
            f"| peer | median | p99 | mean | CPU / query | median × {base} |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        b_med = res["single"].get(base, {}).get(wl, {}).get("median_us")
        rows = sorted(res["single"].items(), key=lambda kv: kv[1][wl]["median_us"])
        for name, s in rows:
            x = s[wl]
            ratio = f"{x['median_us'] / b_med:,.1f}×" if b_med else "n/a"
            lines.append(
                f"| {name} | {fmt_us(x['median_us'])} | {fmt_us(x['p99_us'])} | "
                f"{fmt_us(x['mean_us'])} | {fmt_us(x['cpu_us_per_query'])} | {ratio} |"
            )
    if res["batch"]:
        lines += [
            "",
            "## Batched: all queries in one call",
            "",
            "| peer | workload | batch | median per batch | queries / s | wall / query | "
            "CPU / query |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for name, per in res["batch"].items():
            for wl, x in per.items():
                lines.append(
                    f"| {name} | {wl} | {x['batch']} | {x['median_ms']:,.2f} ms | "
                    f"{x['queries_per_s']:,.0f} | {fmt_us(x['us_per_query'])} | "
                    f"{fmt_us(x['cpu_us_per_query'])} |"
                )
    lines += [
        "",
        "## Method",
        "",
        f"* Single-query latency: {res['rounds_total']} blocks of {res['block']} queries; each "
        "block runs every peer (W1 then W4) over the same queries, rotating which peer goes "
        "first, `time.perf_counter_ns` around each call, `time.process_time_ns` around each "
        "block (CPU / query; above wall time when a peer uses more than one thread). "
        f"Each peer answered each query {res['repeat']}× per workload. GC stays enabled "
        "(collected before each block); the built indexes are `gc.freeze()`-d so that "
        "collections do not traverse them.",
        "* Ratios are of medians measured in the same run, interleaved: absolute times on "
        "shared machines drift, ratios much less.",
        "* SQLite is timed **hot**: the verification pass beforehand has read every page the "
        "queries touch (the 'first pass' column is that pass, including the id check).",
        "* Scores are computed per query from raw columns with `now` passed in; adjacency may "
        "be pre-sorted at build (dict, scipy, graphrecall do; the graph libraries sort an "
        "entity's out-edges per query; SQLite sorts in the query).",
    ]
    for name, err in res["failed"].items():
        lines += ["", f"**{name}: ids differ from the oracle, not timed.**", "", "```", err, "```"]
    if res["skipped"]:
        lines += ["", "Skipped: " + "; ".join(f"{k} ({v})" for k, v in res["skipped"].items())]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="directory written by workload.py")
    ap.add_argument("--peers", default=",".join(DEFAULT_PEERS), help="comma-separated")
    ap.add_argument("--queries", type=int, default=None, help="first N queries (default all)")
    ap.add_argument("--rounds", type=int, default=10, help="blocks per pass over the queries")
    ap.add_argument("--repeat", type=int, default=1, help="passes over the queries when timing")
    ap.add_argument("--batch-seconds", type=float, default=2.0)
    ap.add_argument("--batch-max-reps", type=int, default=50)
    ap.add_argument("--out", type=Path, default=None, help="markdown report (+ .json beside it)")
    ap.add_argument(
        "--memory",
        choices=("subprocess", "inprocess"),
        default="subprocess",
        help="measure each build in a fresh process (default) or around the in-process build",
    )
    ap.add_argument("--measure-build", metavar="PEER", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure_build:
        print(json.dumps(measure_build(args.data, args.measure_build)))
        return 0

    names = [n.strip() for n in args.peers.split(",") if n.strip()]
    unknown = [n for n in names if n not in P.PEERS]
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {list(P.PEERS)}")

    t0 = time.perf_counter()
    g = W.load(args.data)
    queries = g.queries[: args.queries] if args.queries else g.queries
    nq = len(queries)
    summ = W.summary(g)
    sj = args.data / "summary.json"
    if sj.exists():
        summ["seed"] = json.loads(sj.read_text()).get("seed")
    log(
        f"loaded {g.n_entities:,} entities, {g.n_facts:,} facts in {time.perf_counter() - t0:.1f} s"
    )

    ref = P.Reference()
    t0 = time.perf_counter()
    ref.build(g)
    qlist = [tuple(q) for q in queries.tolist()]
    want1 = [ref.w1(q) for q in qlist]
    want4 = [ref.w4(q) for q in qlist]
    log(f"oracle answers for {nq} queries in {time.perf_counter() - t0:.1f} s")
    del ref  # its lists are big; rebuilt only to describe a mismatch
    gc.collect()
    cache: list[P.Reference] = []

    def oracle() -> P.Reference:
        if not cache:
            cache.append(P.Reference())
            cache[0].build(g)
        return cache[0]

    built: dict[str, P.Peer] = {}
    prepared: dict[str, list[Any]] = {}
    build: dict[str, dict[str, float]] = {}
    first_pass: dict[str, dict[str, float]] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name in names:
        why = P.peer_available(name)
        if why:
            skipped[name] = why
            log(f"skip {name}: {why}")
            continue
        peer = P.make_peer(name, args.data)
        for mod in peer.modules:
            importlib.import_module(mod)
        gc.collect()
        r0 = rss_bytes()
        t0 = time.perf_counter()
        try:
            peer.build(g)
        except Exception as exc:  # a peer that cannot build is reported, not fatal
            skipped[name] = f"build failed: {type(exc).__name__}: {exc}"
            log(f"skip {name}: {skipped[name]}")
            continue
        secs = time.perf_counter() - t0
        gc.collect()
        grow = rss_bytes() - r0
        gc.freeze()
        if args.memory == "subprocess":
            build[name] = measure_build_isolated(args.data, name)
        else:
            build[name] = {
                "seconds": secs,
                "rss_mb": grow / 2**20,
                "bytes_per_fact": grow / g.n_facts,
            }
        build[name]["seconds_in_run"] = secs
        b = build[name]
        log(
            f"built {name} in {b['seconds']:.2f} s, RSS +{b['rss_mb']:,.1f} MB"
            + (f" (peak +{b['peak_mb']:,.1f} MB)" if "peak_mb" in b else "")
        )
        prepared[name] = peer.prepare(queries)
        err, fp = verify(peer, prepared[name], queries, oracle, want1, want4)
        first_pass[name] = fp
        if err:
            failed[name] = err
            log(f"MISMATCH {name}:\n{err}")
            continue
        log(
            f"verified {name}: {nq} queries identical (first pass W1 {fp['W1']:.2f} s, "
            f"W4 {fp['W4']:.2f} s)"
        )
        built[name] = peer
    for name in failed:
        build.pop(name, None)

    if not built:
        log("nothing to time")
        return 1
    # Move the peers' indexes (millions of Python objects) out of the collector's reach, so
    # that collections triggered while timing one peer do not traverse every other peer.
    gc.collect()
    gc.freeze()
    log(f"timing single queries: {', '.join(built)}")
    single = time_single(built, prepared, nq, args.rounds, args.repeat)
    batch = {}
    for name, peer in built.items():
        if hasattr(peer, "w1_batch") or hasattr(peer, "w4_batch"):
            batch[name] = time_batch(peer, queries, args.batch_seconds, args.batch_max_reps)
    base = "graphrecall" if "graphrecall" in built else next(iter(built))
    res = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": versions(),
        "data_dir": str(args.data),
        "data": summ,
        "queries": nq,
        "rounds_total": args.rounds * args.repeat,
        "block": max(1, -(-nq // args.rounds)),
        "repeat": args.repeat,
        "baseline": base,
        "build": build,
        "memory": args.memory,
        "first_pass": first_pass,
        "single": single,
        "batch": batch,
        "skipped": skipped,
        "failed": failed,
        "peak_rss_mb": peak_rss_bytes() / 2**20,
    }
    for peer in built.values():
        peer.close()
    text = render(res)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
        log(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    if failed:
        log("FAILED (ids differ from the oracle): " + ", ".join(failed))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
