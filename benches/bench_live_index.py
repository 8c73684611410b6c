"""Retrieval-index updates: how long ``GraphRAG.update(tables)`` takes after a small change.

Usage::

    python benches/bench_live_index.py [--entities 100000] [--repeats 3] [--checked] [--live]
        [--collect] [--json OUT]

The graph is WORKLOADS.md's power-law generator (``benches/workload.py``; 100k entities give
~1M facts), with a name per entity, one chunk of 12 words per five entities, and stored
32-d vectors for both (no embedder: the update time is the index's, not a model's). From
the built index, each operation makes the next tables and times ``rag.update`` on them:

* ``fact``: one fact added; ``fact_delete``: one fact deleted;
* ``entity``: one entity added, with a name and a vector;
* ``chunk``: one chunk added, with a text and a vector;
* ``facts_1000``: 1,000 facts added at once;
* ``entity_delete``: one entity deleted, with its facts; ``chunk_delete``: one chunk deleted
  (with ``--live`` the graph is LiveGraph's generation with the tombstone over the same
  tables; without, the tables without the rows).

With ``--live``, each update also gets the new tables' graph made the way
:class:`~graphrecall.LiveGraph` makes it (an overlay generation of the base graph; for a
fact delete, a generation with a tombstone over the same tables, or in a tree without
tombstones the new base made from it; untimed) and passes it (``rag.update(tables,
graph=...)``), so the index does not compile it again. ``--checked`` passes
``checked=True``, as the service does after a LiveGraph write (the tables were checked by
the write).

Each is repeated ``--repeats`` times (p50 and the maximum, which is p99 at this count), with
the median of each ``build_seconds`` phase and which text indexes the update kept as they
were or extended with the appended rows (the others were rebuilt). Run it once per code
version (e.g. with ``PYTHONPATH`` set to another checkout's ``python/``) to compare.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import bench_live  # noqa: E402
import workload  # noqa: E402
from graphrecall import GraphRAG  # noqa: E402
from graphrecall.graph import KnowledgeGraph  # noqa: E402
from graphrecall.index import GraphIndex  # noqa: E402
from graphrecall.live.overlay import fact_generation, table_generation  # noqa: E402

try:  # a tree whose LiveGraph makes a delete's graph from the current one
    from graphrecall.live.delete import deletion
except ImportError:  # pragma: no cover - an older tree: a delete rebuilds
    deletion = None  # type: ignore[assignment]
try:  # a tree whose LiveGraph deletes facts as tombstones (the tables keep the row)
    from graphrecall.live.tombstones import tombstoned
except ImportError:  # pragma: no cover - an older tree: a delete makes a new base
    tombstoned = None  # type: ignore[assignment]
try:  # a tree whose LiveGraph deletes entities and chunks as tombstones
    from graphrecall.live.dead import chunk_tombstoned, entity_tombstoned, live_tables
except ImportError:  # pragma: no cover - an older tree: no such rows
    chunk_tombstoned = entity_tombstoned = live_tables = None  # type: ignore[assignment]
from graphrecall.tables import EmbeddingSet, GraphTables  # noqa: E402

DIM = 32
WORDS = 5000


def base_tables(n: int, seed: int = 0) -> GraphTables:
    """The workload graph with entity names, chunk texts and stored vectors."""
    g = workload.generate(n, seed)
    t = bench_live.tables_of(g)
    rng = np.random.default_rng(seed)
    n_c = n // 5
    words = np.array([f"w{i}" for i in range(WORDS)], dtype=object)
    texts = [" ".join(words[rng.integers(0, WORDS, 12)]) for _ in range(n_c)]
    ent = dict(t.entities)
    ent["name"] = np.array([f"entity {i}" for i in range(n)], dtype=object)
    chunks = {
        "id": np.arange(n_c),
        "text": np.array(texts, dtype=object),
        "tenant": g.entity_tenant[:n_c],
    }
    ev = rng.standard_normal((n, DIM)).astype(np.float32)
    cv = rng.standard_normal((n_c, DIM)).astype(np.float32)
    return dataclasses.replace(
        t,
        entities=ent,
        chunks=chunks,
        embeddings=[
            EmbeddingSet("entity", np.arange(n), ev),
            EmbeddingSet("chunk", np.arange(n_c), cv),
        ],
    )


def _append(cols: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    return {k: np.concatenate([v, np.asarray(extra[k], dtype=v.dtype)]) for k, v in cols.items()}


def add_facts(t: GraphTables, k: int, step: int) -> GraphTables:
    f = t.facts
    n = len(f["id"])
    src = np.arange(k) % n
    extra = {c: v[src] for c, v in f.items()}
    extra["id"] = np.arange(10**9 + step * 10_000, 10**9 + step * 10_000 + k)
    return dataclasses.replace(t, facts=_append(f, extra))


def delete_fact(t: GraphTables, step: int) -> GraphTables:
    f = t.facts
    keep = np.ones(len(f["id"]), dtype=bool)
    keep[step] = False
    return dataclasses.replace(t, facts={c: v[keep] for c, v in f.items()})


def add_entity(t: GraphTables, step: int) -> GraphTables:
    e = t.entities
    new_id = 10**9 + step
    extra = {"id": [new_id], "tenant": [e["tenant"][0]], "name": [f"new entity {step}"]}
    sets = [
        EmbeddingSet(
            s.kind,
            np.append(s.ids, new_id),
            np.vstack([s.vectors, np.ones((1, DIM), np.float32)]),
        )
        if s.kind == "entity"
        else s
        for s in t.embeddings
    ]
    return dataclasses.replace(t, entities=_append(e, extra), embeddings=sets)


def add_chunk(t: GraphTables, step: int) -> GraphTables:
    ch = t.chunks
    assert ch is not None
    new_id = 10**9 + step
    extra = {"id": [new_id], "text": [f"w1 w2 fresh{step}"], "tenant": [ch["tenant"][0]]}
    sets = [
        EmbeddingSet(
            s.kind,
            np.append(s.ids, new_id),
            np.vstack([s.vectors, np.ones((1, DIM), np.float32)]),
        )
        if s.kind == "chunk"
        else s
        for s in t.embeddings
    ]
    return dataclasses.replace(t, chunks=_append(ch, extra), embeddings=sets)


OPS: dict[str, Callable[[GraphTables, int], GraphTables]] = {
    "fact": lambda t, i: add_facts(t, 1, i),
    "fact_delete": delete_fact,
    "entity": add_entity,
    "chunk": add_chunk,
    "facts_1000": lambda t, i: add_facts(t, 1000, i + 500),
}

#: Deletes made as LiveGraph makes them (tombstones over the same tables, see
#: ``graphrecall.live.dead``): one entity (with its facts) or one chunk, row 1000 + 7 * step
#: (modulo the rows).
TOMBSTONES: dict[str, Callable[[KnowledgeGraph, GraphTables, Any], Any]] = (
    {}
    if entity_tombstoned is None
    else {"entity_delete": entity_tombstoned, "chunk_delete": chunk_tombstoned}
)


def tombstone(name: str, graph: KnowledgeGraph, tables: GraphTables, step: int) -> KnowledgeGraph:
    """The graph of ``tables`` with the row of delete ``name`` (number ``step``) dead."""
    n = graph.n_entities if name == "entity_delete" else graph.n_chunks
    made = TOMBSTONES[name](graph, tables, np.array([(1000 + 7 * step) % n], dtype=np.int64))
    assert made is not None, f"{name} {step}: LiveGraph would take a new base"
    return made[0]  # type: ignore[no-any-return]


def live_graph(
    name: str, graph: KnowledgeGraph, before: GraphTables, after: GraphTables, step: int
) -> Any:
    """The graph of ``after`` as LiveGraph makes it after operation ``name`` (number
    ``step``) on ``before`` (whose graph is ``graph``): an overlay generation, a delete's
    new base, or a rebuild where the tree has neither."""
    made: Any = None
    if name == "fact_delete" and deletion is not None:
        made = deletion(graph, before, after, facts=np.array([step], dtype=np.int64))
    if name in ("fact", "facts_1000"):
        n_old, n_new = before.n_rows("facts"), after.n_rows("facts")
        made = fact_generation(graph, before, after, np.arange(n_old, n_new, dtype=np.int64))
    elif name in ("entity", "chunk"):
        made = table_generation("entities" if name == "entity" else "chunks", graph, before, after)
    return after.build_graph() if made is None else made[0]


def run(
    n: int, repeats: int, *, live: bool = False, checked: bool = False, collect: bool = False
) -> dict[str, Any]:
    tables = base_tables(n)
    t0 = time.perf_counter()
    rag = GraphRAG(GraphIndex.build(tables, embedder=None, vector_backend="exact"))
    if checked:
        tables = rag.index.tables
    base_graph = rag.index.graph
    out: dict[str, Any] = {
        "entities": n,
        "facts": len(tables.facts["id"]),
        "build_s": time.perf_counter() - t0,
        "live": live,
        "checked": checked,
        "collect": collect,
        "ops": {},
    }
    kw: dict[str, Any] = {"checked": True} if checked else {}
    for name in [*OPS, *TOMBSTONES]:
        times, gen_times, phases = [], [], []
        kept: tuple[str, ...] = ()
        extended: tuple[str, ...] = ()
        for i in range(repeats):
            if name in TOMBSTONES:
                # The tables keep the row; the graph's tombstone masks it. Without --live
                # the update gets the tables without the row.
                t0 = time.perf_counter()
                dead = tombstone(name, base_graph, tables, i)
                gen = time.perf_counter() - t0
                if live:
                    new, kw["graph"] = tables, dead
                    gen_times.append(gen)
                else:
                    new = live_tables(tables, dead)
            elif live and name == "fact_delete" and tombstoned is not None:
                # The tables keep the row; the graph's tombstone masks it.
                t0 = time.perf_counter()
                made = tombstoned(base_graph, tables, np.array([i], dtype=np.int64))
                assert made is not None
                new, kw["graph"] = tables, made[0]
                gen_times.append(time.perf_counter() - t0)
            elif live:
                new = OPS[name](tables, i)
                t0 = time.perf_counter()
                kw["graph"] = live_graph(name, base_graph, tables, new, i)
                gen_times.append(time.perf_counter() - t0)
            else:
                new = OPS[name](tables, i)
            if collect:
                gc.collect()
            t0 = time.perf_counter()
            idx = rag.update(new, **kw)
            times.append(time.perf_counter() - t0)
            phases.append(idx.build_seconds)
            kept = tuple(getattr(idx, "kept_text_indexes", ()))
            extended = tuple(getattr(idx, "extended_text_indexes", ()))
            # Dropped before the untimed update back to the base, so that the next timed
            # update never frees it (what it frees is the index it replaces, as a swap does).
            del idx
            if live:
                kw["graph"] = base_graph
            rag.update(tables, **kw)  # back to the base, untimed
        ms = np.array(times) * 1e3
        out["ops"][name] = {
            "p50_ms": float(np.median(ms)),
            "max_ms": float(ms.max()),
            "phases_ms": {k: float(np.median([p[k] for p in phases]) * 1e3) for k in phases[0]},
            "text_indexes_kept": list(kept),
            "text_indexes_extended": list(extended),
        }
        if gen_times:
            out["ops"][name]["generation_p50_ms"] = float(np.median(gen_times) * 1e3)
        print(name, out["ops"][name], flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--live", action="store_true", help="pass LiveGraph's graph generation")
    ap.add_argument("--checked", action="store_true", help="pass checked=True")
    ap.add_argument(
        "--collect",
        action="store_true",
        help="gc.collect() before each timed update (the update's own time, without a "
        "collection its allocations happen to trigger)",
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    res = run(
        args.entities, args.repeats, live=args.live, checked=args.checked, collect=args.collect
    )
    if args.json is not None:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
