"""Personalized PageRank workload: graphrecall's exact and push modes against the peers.

Usage::

    python benches/bench_ppr.py                          # 20k and 100k entities, 50 queries
    python benches/bench_ppr.py --sizes 20000 --queries 20
    python benches/bench_ppr.py --long                   # adds 1M entities (bounded queries)

Graphs are random undirected graphs (seeded): ``5 x entities`` distinct edges without
self-loops, strengths uniform in [0.5, 1.5] (float32, the same values for every engine).
Each query has 5 seed entities, damping 0.5 (HippoRAG's). Engines:

* ``graphrecall exact``: ``KnowledgeGraph.personalized_pagerank(seeds, damping=0.5)`` (the
  full ranking, L1 error <= 1e-10 certified); ``graphrecall exact, cold`` rebuilds the walk
  matrix in every call (a filter that admits every fact but misses the matrix cache);
* ``graphrecall push``: the same call with ``epsilon=5e-5`` (approximate);
* ``igraph prpack``: ``Graph.personalized_pagerank(reset_vertices=seeds, directed=False,
  weights="weight", implementation="prpack")``;
* ``igraph, HippoRAG / fast-graphrag call``: a reset vector over all nodes built per query,
  ``personalized_pagerank(vertices=range(n), reset=reset, ...)``, scores to numpy;
* ``networkx``: ``nx.pagerank(G, alpha=0.5, personalization=..., tol=1e-10 / n)`` (skipped
  at 1M entities: minutes per query);
* ``scipy power iteration``: a column-stochastic CSR matrix built once, iterated until the
  L1 change is below 1e-10.

Before timing, the top-20 entities of every exact engine (score descending, id ascending)
must be identical on the check queries; the script reports the mismatch and exits 2 if not.
Timings are medians per query over the same queries, in one process, engines interleaved
query by query; ratios are igraph prpack's median over the engine's. igraph (prpack) runs
with ``OMP_NUM_THREADS=1`` unless set: on a shared machine its OpenMP threads otherwise
spin against other processes. Batch throughput is one call for all the queries
(graphrecall's rayon threads). The push mode's error against the exact vector is reported
per epsilon (top-10 / top-20 overlap, L1). Results: ``benches/results/ppr.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results"
DAMPING = 0.5
SEEDS = 5
TOP = 20
PUSH_EPS = 5e-5
EPSILONS = (1e-3, 1e-4, 5e-5, 1e-5, 1e-6, 1e-7)
EXACT_TOL = 1e-10

Ranking = list[int]


def graph_edges(n: int, seed: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Any]:
    """``5 n`` distinct undirected edges (a < b, no self-loops) and their float32 strengths."""
    rng = np.random.default_rng(seed)
    m = 5 * n
    got = np.empty(0, dtype=np.int64)
    while len(got) < m:
        s = rng.integers(0, n, 2 * m)
        o = rng.integers(0, n, 2 * m)
        keep = s != o
        a, b = np.minimum(s, o)[keep], np.maximum(s, o)[keep]
        got = np.unique(np.concatenate([got, a.astype(np.int64) * n + b]))
    key = rng.permutation(got)[:m]
    strength = rng.uniform(0.5, 1.5, m).astype(np.float32)
    return key // n, key % n, strength


def ranking(scores: npt.NDArray[np.float64], k: int = TOP) -> Ranking:
    """Top ``k`` node indices of a dense score vector, score descending, index ascending."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    return order[:k].tolist()


class Engines:
    """Every engine over one graph, each a function from seeds to a top-20 ranking."""

    def __init__(self, n: int, seed: int, networkx: bool) -> None:
        import igraph as ig
        import scipy.sparse as sp
        from graphrecall import KnowledgeGraph

        t0 = time.perf_counter()
        a, b, w = graph_edges(n, seed)
        self.n = n
        self.gen_s = time.perf_counter() - t0
        self.graph = KnowledgeGraph.from_arrays(
            fact_subject=a, fact_object=b, strength=w, n_entities=n
        )
        self.ig = ig.Graph(n=n, edges=np.stack([a, b], axis=1), directed=False)
        self.ig.es["weight"] = w.astype(np.float64)
        w64 = w.astype(np.float64)
        adj = sp.csr_matrix(
            (np.concatenate([w64, w64]), (np.concatenate([a, b]), np.concatenate([b, a]))),
            shape=(n, n),
        )
        out = np.asarray(adj.sum(axis=1)).ravel()
        self.dangling = out == 0
        inv = np.divide(1.0, out, out=np.zeros(n), where=out > 0)
        # Column-stochastic in pull form: x_new = M @ x, M[v, u] = w(u, v) / out(u).
        self.m = sp.csr_matrix(adj.T.multiply(inv[None, :]))
        self.nx: Any = None
        if networkx:
            import networkx as nx

            g = nx.Graph()
            g.add_nodes_from(range(n))
            g.add_weighted_edges_from(zip(a.tolist(), b.tolist(), w64.tolist(), strict=True))
            self.nx = g
        self.build_s = time.perf_counter() - t0 - self.gen_s
        self._cold = 0

    # -- graphrecall ---------------------------------------------------------------------
    def gr_exact(self, seeds: npt.NDArray[np.int64]) -> Ranking:
        r = self.graph.personalized_pagerank(seeds, damping=DAMPING)[0]
        return r.entity_ids[:TOP].tolist()

    def gr_exact_cold(self, seeds: npt.NDArray[np.int64]) -> Ranking:
        # A different (all-admitting) filter per call: the walk matrix cache always misses.
        self._cold += 1
        mc = (self._cold % 8) * 1e-3
        r = self.graph.personalized_pagerank(seeds, damping=DAMPING, min_confidence=mc)[0]
        return r.entity_ids[:TOP].tolist()

    def gr_push(self, seeds: npt.NDArray[np.int64], eps: float = PUSH_EPS) -> Ranking:
        r = self.graph.personalized_pagerank(seeds, damping=DAMPING, epsilon=eps)[0]
        return r.entity_ids[:TOP].tolist()

    def gr_dense(self, seeds: npt.NDArray[np.int64], eps: float | None) -> npt.NDArray[np.float64]:
        r = self.graph.personalized_pagerank(seeds, damping=DAMPING, epsilon=eps)[0]
        x = np.zeros(self.n)
        x[r.entity_ids] = r.entity_scores
        return x

    # -- igraph --------------------------------------------------------------------------
    def igraph(self, seeds: npt.NDArray[np.int64]) -> Ranking:
        s = self.ig.personalized_pagerank(
            reset_vertices=seeds.tolist(),
            damping=DAMPING,
            directed=False,
            weights="weight",
            implementation="prpack",
        )
        return ranking(np.asarray(s))

    def igraph_hipporag(self, seeds: npt.NDArray[np.int64]) -> Ranking:
        reset = np.zeros(self.n)
        reset[seeds] = 1.0
        s = self.ig.personalized_pagerank(
            vertices=range(self.n),
            damping=DAMPING,
            directed=False,
            weights="weight",
            reset=reset,
            implementation="prpack",
        )
        return ranking(np.array(s))

    # -- networkx, scipy -----------------------------------------------------------------
    def networkx(self, seeds: npt.NDArray[np.int64]) -> Ranking:
        import networkx as nx

        pers = dict.fromkeys(seeds.tolist(), 1.0)
        s = nx.pagerank(
            self.nx,
            alpha=DAMPING,
            personalization=pers,
            weight="weight",
            tol=EXACT_TOL / self.n,
            max_iter=1000,
        )
        return ranking(np.fromiter((s[v] for v in range(self.n)), dtype=np.float64))

    def scipy(self, seeds: npt.NDArray[np.int64]) -> Ranking:
        s = np.zeros(self.n)
        s[seeds] = 1.0 / len(seeds)
        x = s.copy()
        for _ in range(1000):
            nxt = (1 - DAMPING) * s + DAMPING * (self.m @ x + x[self.dangling].sum() * s)
            done = np.abs(nxt - x).sum() < EXACT_TOL
            x = nxt
            if done:
                break
        return ranking(x)


def timed(fn: Callable[[Any], Any], arg: Any) -> float:
    t = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t


def load() -> dict[str, Any]:
    """The machine's load and its busiest other processes, to judge the timings by."""
    busy: list[str] = []
    try:
        ps = subprocess.run(
            ["ps", "-eo", "pcpu,args", "--sort=-pcpu"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.splitlines()[1:6]
        busy = [" ".join(line.split()[:4])[:100] for line in ps]
    except OSError:
        pass
    return {"loadavg": list(os.getloadavg()), "busiest": busy}


def run_size(n: int, n_queries: int, seed: int, check: int, long_mode: bool) -> dict[str, Any]:
    with_nx = n <= 200_000
    eng = Engines(n, seed, with_nx)
    rng = np.random.default_rng(seed + 1)
    queries = [rng.choice(n, SEEDS, replace=False).astype(np.int64) for _ in range(n_queries)]
    exact: dict[str, Callable[[Any], Ranking]] = {
        "graphrecall exact": eng.gr_exact,
        "igraph prpack": eng.igraph,
        "igraph, HippoRAG / fast-graphrag call": eng.igraph_hipporag,
        "scipy power iteration": eng.scipy,
    }
    if with_nx:
        exact["networkx"] = eng.networkx
    # 1. Identical top-20 first.
    mismatches = []
    for qi, q in enumerate(queries[:check]):
        want = eng.gr_exact(q)
        for name, fn in exact.items():
            got = fn(q)
            if got != want:
                mismatches.append({"query": qi, "engine": name, "graphrecall": want, "got": got})
    if mismatches:
        return {"entities": n, "mismatches": mismatches}
    # 2. Per-query medians, engines interleaved query by query (networkx on a few queries).
    engines: dict[str, Callable[[Any], Any]] = {
        "graphrecall exact": eng.gr_exact,
        "graphrecall exact, cold": eng.gr_exact_cold,
        "graphrecall push (epsilon 5e-5)": eng.gr_push,
        **{k: v for k, v in exact.items() if k != "graphrecall exact"},
    }
    nx_queries = min(n_queries, 5 if n <= 20_000 else 3)
    times: dict[str, list[float]] = {k: [] for k in engines}
    eng.gr_exact(queries[0])  # the walk matrix, once
    for qi, q in enumerate(queries):
        for name, fn in engines.items():
            if name == "networkx" and qi >= nx_queries:
                continue
            if name == "scipy power iteration" and qi >= max(nx_queries, n_queries // 5):
                continue
            times[name].append(timed(fn, q))
    med = {k: float(np.median(v)) for k, v in times.items() if v}
    base = med["igraph prpack"]
    rows = [
        {
            "engine": k,
            "median_ms": med[k] * 1e3,
            "p90_ms": float(np.percentile(times[k], 90)) * 1e3,
            "queries": len(times[k]),
            "vs_igraph": base / med[k],
        }
        for k in engines
        if k in med
    ]
    # 3. Batch throughput: one call for every query.
    seeds2d = np.stack(queries)
    batch: dict[str, float] = {}
    for label, kw in (("exact", {}), ("push (epsilon 5e-5)", {"epsilon": PUSH_EPS})):
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            eng.graph.personalized_pagerank(seeds2d, damping=DAMPING, **kw)
            runs.append(time.perf_counter() - t)
        batch[f"graphrecall {label}"] = n_queries / float(np.median(runs))
    batch["igraph prpack (one call per query)"] = 1.0 / base
    # 4. The push mode's error against the exact vector, per epsilon.
    err_queries = queries[: min(n_queries, 20)]
    exact_x = [eng.gr_dense(q, None) for q in err_queries]
    push_rows = []
    for eps in EPSILONS:
        l1s, o10, o20, ts = [], [], [], []
        for q, x in zip(err_queries, exact_x, strict=True):
            t = time.perf_counter()
            y = eng.gr_dense(q, eps)
            ts.append(time.perf_counter() - t)
            l1s.append(float(np.abs(x - y).sum()))
            o10.append(len(set(ranking(x, 10)) & set(ranking(y, 10))) / 10)
            o20.append(len(set(ranking(x, 20)) & set(ranking(y, 20))) / 20)
        push_rows.append(
            {
                "epsilon": eps,
                "top10_overlap_mean": float(np.mean(o10)),
                "top10_overlap_min": float(np.min(o10)),
                "top20_overlap_mean": float(np.mean(o20)),
                "top20_overlap_min": float(np.min(o20)),
                "l1_mean": float(np.mean(l1s)),
                "l1_max": float(np.max(l1s)),
                "median_ms": float(np.median(ts)) * 1e3,
            }
        )
    return {
        "entities": n,
        "edges": 5 * n,
        "queries": n_queries,
        "checked_queries": min(check, n_queries),
        "networkx": with_nx,
        "build_s": eng.build_s,
        "rows": rows,
        "batch_qps": batch,
        "push_error": push_rows,
        "mismatches": [],
    }


def markdown(res: dict[str, Any]) -> str:
    lines = [
        "# Personalized PageRank: graphrecall against igraph, networkx, scipy",
        "",
        f"Command: `{res['command']}`",
        "",
        f"Machine: {res['machine']}; load average before {res['load_before']['loadavg']}, "
        f"after {res['load_after']['loadavg']}. Busiest processes before: "
        + "; ".join(f"`{b}`" for b in res["load_before"]["busiest"]),
        "",
        "Random undirected graphs (5 x entities distinct edges, strengths in [0.5, 1.5]), "
        "5 seed entities per query, damping 0.5, top-20 entities identical across the exact "
        "engines on the check queries. Median per query, engines interleaved query by query "
        f"in one process; `x igraph` = igraph prpack's median / the engine's. "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}.",
        "",
    ]
    for s in res["sizes"]:
        lines += [
            f"## {s['entities']:,} entities, {s['edges']:,} edges ({s['queries']} queries)",
            "",
            "| engine | median ms / query | p90 ms | queries | x igraph |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in s["rows"]:
            lines.append(
                f"| {r['engine']} | {r['median_ms']:.3f} | {r['p90_ms']:.3f} | "
                f"{r['queries']} | {r['vs_igraph']:.2f} |"
            )
        if not s["networkx"]:
            lines.append("\nnetworkx skipped at this size (minutes per query).")
        lines += ["", "Batch throughput (one call for all the queries):", ""]
        lines += ["| engine | queries / s |", "|---|---:|"]
        lines += [f"| {k} | {v:,.0f} |" for k, v in s["batch_qps"].items()]
        lines += [
            "",
            "Push mode against the exact vector (first 20 queries):",
            "",
            "| epsilon | top-10 overlap mean / min | top-20 overlap mean / min | "
            "L1 mean | L1 max | median ms |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for p in s["push_error"]:
            lines.append(
                f"| {p['epsilon']:g} | {p['top10_overlap_mean']:.3f} / "
                f"{p['top10_overlap_min']:.2f} | {p['top20_overlap_mean']:.3f} / "
                f"{p['top20_overlap_min']:.2f} | {p['l1_mean']:.2e} | {p['l1_max']:.2e} | "
                f"{p['median_ms']:.3f} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--long", action="store_true", help="add 1M entities (bounded queries)")
    ap.add_argument("--long-queries", type=int, default=10)
    ap.add_argument("--check", type=int, default=5, help="queries whose top-20 are compared")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT / "ppr")
    args = ap.parse_args(argv)
    sizes = [(n, args.queries) for n in args.sizes]
    if args.long and 1_000_000 not in args.sizes:
        sizes.append((1_000_000, min(args.queries, args.long_queries)))
    res: dict[str, Any] = {
        "command": "python benches/bench_ppr.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "load_before": load(),
        "sizes": [],
    }
    for n, q in sizes:
        print(f"{n:,} entities, {q} queries ...", file=sys.stderr)
        s = run_size(n, q, args.seed, args.check, args.long)
        if s["mismatches"]:
            for m in s["mismatches"]:
                print(f"top-20 mismatch at {n:,} entities: {m}", file=sys.stderr)
            return 2
        res["sizes"].append(s)
        for r in s["rows"]:
            print(
                f"  {r['engine']:40s} {r['median_ms']:9.3f} ms  x{r['vs_igraph']:.2f}",
                file=sys.stderr,
            )
    res["load_after"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(res))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
