"""One machine at scale: build from Parquet, save, load, and every recipe's graph stage.

Usage::

    python benches/bench_scale.py --entities 100000,1000000,10000000 --work /tmp/scale \
        [--out benches/results/scale]

For each size (WORKLOADS.md's generator, ``benches/workload.py``: 10 facts per entity, so
100k / 1M / 10M entities are ~1M / 10M / 100M facts) three fresh processes run one after the
other, so that each one's peak resident set (``VmHWM``) is its own:

* ``gen``: generate the graph and write ``entities.parquet``, ``facts.parquet``,
  ``queries.json`` (skipped when they exist);
* ``build``: read the Parquet columns one at a time (text columns as Arrow dictionary or
  string arrays, never Python objects), ``KnowledgeGraph.from_arrays``, ``save_snapshot``;
* ``load``: ``load_snapshot`` (``verify="trusted"`` then ``"safe"``, warm page cache; wall and
  CPU seconds), then
  single-query medians of the graph stage of every recipe family over the 1,000 workload
  queries: W1 (spreading activation, out, score_fact: seed 000), W4 (graph recall, both
  directions, top 20: seed 004), a 2-hop spread in both directions (chunk_boost and
  hybrid_expand) and push PPR (epsilon 5e-5, damping 0.5, both directions: the ppr
  recipes).

The literal values and entity names stay Arrow string columns (offsets + UTF-8 bytes, one
buffer each), joined by id when a result is shown: at 100M facts a Python object per
value would cost ~60 bytes each and minutes to make.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import workload as W  # noqa: E402


def peak_rss_mb() -> float:
    """This process's resident-set high-water mark (``VmHWM``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ------------------------------------------------------------------------------------------
# phases (each in its own process)
# ------------------------------------------------------------------------------------------


def phase_gen(n_entities: int, data: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    g = W.generate(n_entities, seed=0)
    gen_s = time.perf_counter() - t0
    data.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    W.write_parquet(g, data)
    W.write_queries(g, data, 0)
    return {
        "facts": g.n_facts,
        "generate_s": gen_s,
        "parquet_s": time.perf_counter() - t0,
        "parquet_mb": sum(f.stat().st_size for f in data.glob("*.parquet")) / 2**20,
    }


def _codes(path: Path, column: str, names: tuple[str, ...]) -> np.ndarray:
    """A text column read as Arrow dictionaries, mapped to codes of ``names``: no string
    is materialised per row."""
    col = pq.read_table(path, columns=[column], read_dictionary=[column])[column]
    out = np.empty(len(col), np.uint8)
    at = 0
    for chunk in col.chunks:
        table = np.array([names.index(v) for v in chunk.dictionary.to_pylist()], np.uint8)
        idx = chunk.indices.to_numpy(zero_copy_only=False)
        out[at : at + len(idx)] = table[idx]
        at += len(idx)
    return out


def _numbers(path: Path, column: str, dtype: Any, fill: int | None = None) -> np.ndarray:
    col = pq.read_table(path, columns=[column])[column]
    if fill is not None:
        col = col.fill_null(fill)
    return col.to_numpy().astype(dtype, copy=False)


def read_parquet(data: Path) -> tuple[dict[str, Any], dict[str, pa.ChunkedArray]]:
    """The graph columns of ``data`` (numbers) and its text columns (Arrow strings)."""
    ent, facts = data / "entities.parquet", data / "facts.parquet"
    cols = {
        "entity_tenant": _numbers(ent, "tenant", np.int64),
        "fact_subject": _numbers(facts, "subject_id", np.int64),
        "fact_object": _numbers(facts, "object_id", np.int64, fill=-1),
        "predicate": _codes(facts, "predicate", W.PREDICATES),
        "confidence": _numbers(facts, "confidence", np.float32),
        "strength": _numbers(facts, "strength", np.float32),
        "status": _codes(facts, "status", W.STATUSES),
        "source": _codes(facts, "source", W.SOURCES),
        "last_accessed": _numbers(facts, "last_accessed", np.int64),
        "access_count": _numbers(facts, "access_count", np.int64),
    }
    ids = pq.read_table(facts, columns=["id"])["id"].to_numpy()
    if not np.array_equal(ids, np.arange(len(ids))):
        raise ValueError("facts.parquet rows must be in id order with ids 0..M-1")
    del ids
    text = {
        "entity_names": pq.read_table(ent, columns=["name"])["name"],
        "object_value": pq.read_table(facts, columns=["object_value"])["object_value"],
    }
    return cols, text


def phase_build(data: Path, snap: Path) -> dict[str, Any]:
    import graphrecall as gr
    from graphrecall.storage import save_snapshot

    t0 = time.perf_counter()
    cols, text = read_parquet(data)
    read_s = time.perf_counter() - t0
    text_mb = sum(c.nbytes for c in text.values()) / 2**20
    rss_cols = rss_mb()
    t0 = time.perf_counter()
    kg = gr.KnowledgeGraph.from_arrays(
        **cols,
        predicates=W.PREDICATES,
        statuses=W.STATUSES,
        sources=W.SOURCES,
    )
    build_s = time.perf_counter() - t0
    del cols
    stats = kg.stats()
    t0 = time.perf_counter()
    save_snapshot(kg, snap)
    save_s = time.perf_counter() - t0
    return {
        "facts": kg.n_facts,
        "read_parquet_s": read_s,
        "build_s": build_s,
        "save_s": save_s,
        "rss_after_read_mb": rss_cols,
        "text_arrow_mb": text_mb,
        "core_bytes": int(stats["bytes"]),
        "snapshot_mb": sum(f.stat().st_size for f in snap.iterdir()) / 2**20,
    }


def _median_us(fn: Any, queries: list[np.ndarray]) -> tuple[float, float]:
    for q in queries[:20]:  # warm-up: lazy per-tenant state, caches
        fn(q)
    ts = []
    for q in queries:
        t0 = time.perf_counter_ns()
        fn(q)
        ts.append(time.perf_counter_ns() - t0)
    a = np.array(ts) / 1e3
    return float(np.median(a)), float(np.percentile(a, 99))


def _cpu_s() -> float:
    """User + system CPU seconds of this process (all threads) so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def phase_load(data: Path, snap: Path, ppr_queries: int) -> dict[str, Any]:
    from graphrecall.storage import load_snapshot

    out: dict[str, Any] = {}
    for verify in ("trusted", "safe"):
        c0 = _cpu_s()
        t0 = time.perf_counter()
        kg = load_snapshot(snap, verify=verify)  # type: ignore[arg-type]
        out[f"load_{verify}_s"] = time.perf_counter() - t0
        # CPU seconds of all threads: on a shared machine, wall time is mostly the wait
        # for a free core.
        out[f"load_{verify}_cpu_s"] = _cpu_s() - c0
        if verify == "trusted":
            del kg
    out["rss_loaded_mb"] = rss_mb()
    out["core_bytes"] = int(kg.stats()["bytes"])
    doc = json.loads((data / "queries.json").read_text())
    queries = [np.array(q["anchors"], np.int64) for q in doc["queries"]]
    match = np.array(W.MATCH_SCORES)
    w1 = kg.spread_plan(
        max_hops=2,
        per_entity_limit=10,
        max_facts=30,
        direction="out",
        statuses=("staged", "confirmed"),
        rank="score_fact",
    )
    w4 = kg.recall_plan(max_hops=2, direction="both", top_k=20)
    both = kg.spread_plan(max_hops=2, direction="both")
    stages = {
        "W1": lambda q: w1(q, now=W.NOW),
        "W4": lambda q: w4(q, match),
        "spread_both_2hop": lambda q: both(q),
        "ppr_push": lambda q: kg.personalized_pagerank(
            q, damping=0.5, epsilon=5e-5, direction="both", top_k=20, score_chunks=False
        ),
    }
    for name, fn in stages.items():
        qs = queries[:ppr_queries] if name == "ppr_push" else queries
        med, p99 = _median_us(fn, qs)
        out[f"{name}_median_us"] = med
        out[f"{name}_p99_us"] = p99
    return out


# ------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------


def run_phase(args: list[str], timeout: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0
    return res


def label(n_entities: int) -> str:
    facts = n_entities * 10
    return f"{facts // 10**6}M" if facts >= 10**6 else f"{facts // 1000}k"


def markdown(report: dict[str, Any], command: str) -> str:
    """The report as the tables of ``benches/results/scale.md``."""
    sizes = report["sizes"]
    head = "| | " + " | ".join(f"{k} facts" for k in sizes) + " |"
    rule = "|---|" + "---:|" * len(sizes)

    def row(name: str, fn: Any) -> str:
        cells = []
        for r in sizes.values():
            try:
                cells.append(fn(r))
            except (KeyError, TypeError):
                cells.append("-")
        return f"| {name} | " + " | ".join(cells) + " |"

    def facts(r: dict[str, Any]) -> int:
        return int(r["load"].get("facts") or r.get("build", r.get("gen", {}))["facts"])

    rows = [
        row("facts", lambda r: f"{facts(r):,}"),
        row("core bytes / fact", lambda r: f"{r['load']['core_bytes'] / facts(r):.1f}"),
        row("core GiB", lambda r: f"{r['load']['core_bytes'] / 2**30:.2f}"),
        row(
            "generate + Parquet s",
            lambda r: f"{r['gen']['generate_s'] + r['gen']['parquet_s']:.0f}",
        ),
        row("generate peak RSS GiB", lambda r: f"{r['gen']['peak_rss_mb'] / 1024:.1f}"),
        row("read Parquet s", lambda r: f"{r['build']['read_parquet_s']:.1f}"),
        row("build (from_arrays) s", lambda r: f"{r['build']['build_s']:.1f}"),
        row("save snapshot s", lambda r: f"{r['build']['save_s']:.1f}"),
        row("build process peak RSS GiB", lambda r: f"{r['build']['peak_rss_mb'] / 1024:.1f}"),
        row("snapshot GiB", lambda r: f"{r['build']['snapshot_mb'] / 1024:.2f}"),
        row("load, verify=trusted s", lambda r: f"{r['load']['load_trusted_s']:.2f}"),
        row("load, verify=safe s", lambda r: f"{r['load']['load_safe_s']:.2f}"),
        row(
            "load CPU s (all threads), trusted / safe",
            lambda r: f"{r['load']['load_trusted_cpu_s']:.1f} / {r['load']['load_safe_cpu_s']:.1f}",
        ),
        row("RSS after load GiB", lambda r: f"{r['load']['rss_loaded_mb'] / 1024:.2f}"),
        row("load process peak RSS GiB", lambda r: f"{r['load']['peak_rss_mb'] / 1024:.2f}"),
    ]
    for stage, title in (
        ("W1", "W1 (spread out, score_fact)"),
        ("W4", "W4 (graph recall, both, top 20)"),
        ("spread_both_2hop", "2-hop spread, both directions"),
        ("ppr_push", "PPR, push (epsilon 5e-5)"),
    ):
        rows.append(
            row(
                f"{title} median / p99 µs",
                lambda r, s=stage: (
                    f"{r['load'][s + '_median_us']:.1f} / {r['load'][s + '_p99_us']:.0f}"
                ),
            )
        )
    rows.append(row("load average (1 min) after", lambda r: f"{r['load_avg'][0]:.1f}"))
    return "\n".join(
        [
            "# One machine at scale: 1M / 10M / 100M facts",
            "",
            f"{report['date']} · {report['machine']} · `{command}`",
            "",
            head,
            rule,
            *rows,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", default="100000,1000000", help="comma-separated sizes")
    ap.add_argument("--work", type=Path, default=Path("/tmp/graphrecall-scale"))
    ap.add_argument("--out", type=Path, default=None, help="results stem (.json is written)")
    ap.add_argument("--ppr-queries", type=int, default=200)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per phase")
    ap.add_argument("--reuse", action="store_true", help="skip the build where a snapshot exists")
    ap.add_argument("--phase", choices=("gen", "build", "load"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    sizes = [int(s) for s in args.entities.split(",")]
    if args.phase:
        n = sizes[0]
        data, snap = args.work / f"data-{n}", args.work / f"snap-{n}"
        if args.phase == "gen":
            res = phase_gen(n, data)
        elif args.phase == "build":
            res = phase_build(data, snap)
        else:
            res = phase_load(data, snap, args.ppr_queries)
        res["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(res))
        return 0

    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "sizes": {},
    }
    for n in sizes:
        data = args.work / f"data-{n}"
        row: dict[str, Any] = {"entities": n}
        common = ["--entities", str(n), "--work", str(args.work)]
        if not (data / "queries.json").exists():
            row["gen"] = run_phase([*common, "--phase", "gen"], args.timeout)
            print(f"{label(n)} gen {row['gen']}", file=sys.stderr, flush=True)
        if not (args.reuse and (args.work / f"snap-{n}" / "header.json").exists()):
            row["build"] = run_phase([*common, "--phase", "build"], args.timeout)
            print(f"{label(n)} build {row['build']}", file=sys.stderr, flush=True)
        ppr = ["--ppr-queries", str(args.ppr_queries)]
        row["load"] = run_phase([*common, "--phase", "load", *ppr], args.timeout)
        print(f"{label(n)} load {row['load']}", file=sys.stderr, flush=True)
        row["load_avg"] = os.getloadavg()
        report["sizes"][label(n)] = row
    text = json.dumps(report, indent=1)
    print(text)
    if args.out is not None:
        args.out.with_suffix(".json").write_text(text + "\n")
        command = "python benches/bench_scale.py " + " ".join(argv or sys.argv[1:])
        args.out.with_suffix(".md").write_text(markdown(report, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
