"""Live updates without a rebuild: how long a fact change takes to be visible, and what the
overlay costs queries.

Usage::

    python benches/bench_live.py [--entities 100000] [--updates 200] [--batches 20] \
        [--out benches/results/live.md]

The graph is WORKLOADS.md's power-law generator (``benches/workload.py``; 100k entities give
~1M facts) in a SQLite store, loaded as a :class:`~graphrecall.LiveGraph`. Timed, each from
the call to its return (validated, committed durably to SQLite, and swapped in: the next
query sees it):

* one-fact ``add_facts`` and ``update_facts`` (``--updates`` each), and ``record_access``;
* 1,000-fact ``add_facts`` batches (``--batches``);
* one-entity ``add_entities`` (``--updates``; a held tenant);
* of each, the part that makes the new graph generation (``overlay``), next to what the
  rebuild it replaces costs (``tables.build_graph()``);
* W1 / W4 single-query medians (``benches/peers.py``'s parameters, through prepared plans)
  on the compacted graph and on the same graph with 1 % of its facts changed in the overlay.

``--changes`` times only one-entity and one-chunk changes and one-mention and one-alias
deletes (``LiveGraph.update_entities``, ...; ``--updates`` each, with ``--chunks`` chunks),
next to one full rebuild.

``--deletes`` times only one-fact and one-entity deletes instead (``--updates`` each), on the
loaded base and on a generation with 1,000 changed facts in its overlay, with the part that
makes the new graph (``LiveGraph._deletion``; a rebuild where the tree has none).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import workload  # noqa: E402
from graphrecall.storage import GraphTables  # noqa: E402
from graphrecall.storage.sqlite import SQLiteStore  # noqa: E402

MAX_HOPS, PER_ENTITY_LIMIT, MAX_FACTS, TOP_K = 2, 10, 50, 20
W1 = {
    "max_hops": MAX_HOPS,
    "per_entity_limit": PER_ENTITY_LIMIT,
    "max_facts": MAX_FACTS,
    "direction": "out",
    "statuses": ("staged", "confirmed"),
    "rank": "score_fact",
}
W4 = {"max_hops": MAX_HOPS, "direction": "both", "top_k": TOP_K}


def tables_of(g: workload.Graph) -> GraphTables:
    n, m = g.n_entities, g.n_facts
    return GraphTables(
        entities={"id": np.arange(n), "tenant": g.entity_tenant},
        facts={
            "id": np.arange(m),
            "subject": g.subject,
            "object": np.where(g.object < 0, None, g.object).astype(object),
            "predicate": np.array(workload.PREDICATES, dtype=object)[g.predicate],
            "confidence": g.confidence,
            "strength": g.strength,
            "status": np.array(workload.STATUSES, dtype=object)[g.status],
            "source": np.array(workload.SOURCES, dtype=object)[g.source],
            "access_count": g.access_count,
            "last_accessed": g.last_accessed,
        },
    )


class Timed:
    """Wraps ``LiveGraph._generation`` (or ``_table_generation``) to time the part of an
    update that makes the graph."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.last = 0.0
        self.rebuilds = 0

    def __call__(self, *args: Any) -> Any:
        t0 = time.perf_counter()
        graph, change = self.inner(*args)
        self.last = time.perf_counter() - t0
        self.rebuilds += change is None
        return graph, change


_BY_TENANT: dict[int, list[np.ndarray]] = {}


def new_facts(
    rng: np.random.Generator, g: workload.Graph, start: int, k: int
) -> list[dict[str, Any]]:
    """``k`` new facts between random entities of one tenant, with workload predicates."""
    subj = rng.integers(0, g.n_entities, k)
    out = []
    by_tenant = _BY_TENANT.get(id(g))
    if by_tenant is None:
        by_tenant = [np.flatnonzero(g.entity_tenant == t) for t in range(workload.N_TENANTS)]
        _BY_TENANT[id(g)] = by_tenant
    for i, s in enumerate(subj.tolist()):
        mates = by_tenant[int(g.entity_tenant[s])]
        out.append(
            {
                "id": start + i,
                "subject": s,
                "object": int(mates[rng.integers(0, len(mates))]),
                "predicate": workload.PREDICATES[int(rng.integers(0, workload.N_PREDICATES))],
                "confidence": float(np.float32(rng.random())),
                "status": "confirmed",
                "source": "conversation",
            }
        )
    return out


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1e3, q))


def query_medians(graph: Any, queries: np.ndarray, clock: str = "wall") -> dict[str, float]:
    spread = graph.spread_plan(**W1)
    recall = graph.recall_plan(**W4)
    match = np.array(workload.MATCH_SCORES)
    out: dict[str, float] = {}
    for name, fn in (
        ("W1", lambda a: spread(a, now=workload.NOW)),
        ("W4", lambda a: recall(a, match)),
    ):
        for a in queries[:50]:
            fn(a)
        now = time.thread_time if clock == "cpu" else time.perf_counter
        lat = []
        for a in queries:
            t0 = now()
            fn(a)
            lat.append(now() - t0)
        out[name] = float(np.median(lat)) * 1e6
    return out


def peer_medians(n_entities: int, rounds: int, clock: str = "wall") -> dict[str, float]:
    """W1 / W4 single-query medians (µs) of ``peers.py``'s graphrecall peer, with the
    extension this process imports (the median of ``rounds`` rounds); ``clock="cpu"``
    times each query by the thread's CPU time (the time it ran, not the time it waited
    for a core on a shared machine)."""
    import peers

    g = workload.generate(n_entities, seed=0)
    peer = peers.GraphRecallPeer()
    peer.build(g)
    qs = peer.prepare(g.queries)
    out: dict[str, list[float]] = {"W1": [], "W4": []}
    for _ in range(rounds):
        for name, fn in (("W1", peer.w1), ("W4", peer.w4)):
            for a in qs[:50]:
                fn(a)
            now = time.thread_time if clock == "cpu" else time.perf_counter
            lat = []
            for a in qs:
                t0 = now()
                fn(a)
                lat.append(now() - t0)
            out[name].append(float(np.median(lat)) * 1e6)
    return {w: float(np.median(v)) for w, v in out.items()}


def in_trees(cores: list[Path], call: str) -> list[dict[str, Any]]:
    """``bench_live.<call>`` (a JSON-able result) in one process per extension in
    ``cores``, each with this tree's Python package around it, one after the other."""
    import json
    import shutil
    import subprocess

    out = []
    with tempfile.TemporaryDirectory() as d:
        for k, core in enumerate(cores):
            tree = Path(d) / str(k)
            shutil.copytree(ROOT.parent / "python" / "graphrecall", tree / "graphrecall")
            shutil.copy(core, tree / "graphrecall" / "_core.abi3.so")
            code = (
                f"import sys, json; sys.path[:0] = [{str(tree)!r}, {str(ROOT)!r}]; "
                "import graphrecall, bench_live; "
                f"print(json.dumps(bench_live.{call}))"
            )
            res = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            out.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


def compare_cores(
    cores: list[Path], n_entities: int, runs: int, rounds: int, clock: str = "wall"
) -> list[str]:
    """W1 / W4 medians with each extension in ``cores`` (this tree's Python package around
    it), alternating processes, ``runs`` times: the cost of the overlay-capable layout on a
    graph with no overlay."""
    import json
    import shutil
    import subprocess

    names = [c.stem if c.name != "_core.abi3.so" else c.parents[2].name for c in cores]
    lines = [
        "| run | " + " | ".join(f"{n} {w}" for w in ("W1", "W4") for n in names) + " |",
        "|---|" + "---:|" * (2 * len(cores)),
    ]
    with tempfile.TemporaryDirectory() as d:
        trees = []
        for k, core in enumerate(cores):
            tree = Path(d) / str(k)
            shutil.copytree(ROOT.parent / "python" / "graphrecall", tree / "graphrecall")
            shutil.copy(core, tree / "graphrecall" / "_core.abi3.so")
            trees.append(tree)
        runs_got: list[list[dict[str, float]]] = []
        for run in range(runs):
            got = []
            for tree in trees:
                code = (
                    f"import sys, json; sys.path[:0] = [{str(tree)!r}, {str(ROOT)!r}]; "
                    # graphrecall first: bench_live puts this tree's package on the path
                    "import graphrecall, bench_live; "
                    f"print(json.dumps(bench_live.peer_medians({n_entities}, {rounds}, "
                    f"{clock!r})))"
                )
                out = subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                )
                got.append(json.loads(out.stdout.strip().splitlines()[-1]))
            cells = [f"{r[w]:.2f}" for w in ("W1", "W4") for r in got]
            lines.append(f"| {run + 1} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
            runs_got.append(got)
    med = [
        float(np.median([got[k][w] for got in runs_got]))
        for w in ("W1", "W4")
        for k in range(len(cores))
    ]
    lines.append("| median | " + " | ".join(f"{m:.2f}" for m in med) + " |")
    print(lines[-1], flush=True)
    return lines


def overlay_only(
    n_entities: int, batches: int, mode: str, rounds: int, clock: str = "wall"
) -> dict[str, Any]:
    """The overlay without a store: ``batches`` changes of 1,000 facts made generations of
    an in-memory graph (``live.overlay.fact_generation``, what ``LiveGraph`` calls after
    its checks), each timed by the thread's CPU time; ``mode`` "adds" (new facts) or "mix"
    (adds and confidence updates alternating, as the query comparison's 1 % overlay).
    ``core_cpu_ms`` is the core's part (``CoreGraph.with_facts``) of each generation.
    With ``rounds``, W1 / W4 medians on the compacted graph and on the overlay."""
    from dataclasses import replace

    from graphrecall.live.overlay import fact_generation

    g = workload.generate(n_entities, seed=0)
    tables, _ = tables_of(g).check()
    graph = tables.build_graph()
    rng = np.random.default_rng(0)
    cpu: list[float] = []
    core_cpu: list[float] = []
    for b in range(batches):
        facts = dict(tables.facts)
        n, k = tables.n_rows("facts"), 1000
        if mode == "adds" or b % 2 == 0:
            new = new_facts(rng, g, n, k)
            rows = np.arange(n, n + k, dtype=np.int64)
            fill = {"id": rows, "strength": 1.0, "access_count": 0}
            for col, arr in facts.items():
                if col in fill:
                    vals = np.broadcast_to(np.asarray(fill[col]), (k,))
                elif col == "last_accessed":
                    vals = np.full(k, arr[0])
                else:
                    vals = np.asarray([r[col] for r in new])
                facts[col] = np.concatenate([arr, vals.astype(arr.dtype)])
        else:
            rows = np.sort(rng.choice(n, k, replace=False))
            conf = facts["confidence"].copy()
            conf[rows] = rng.random(k).astype(conf.dtype)
            facts["confidence"] = conf
        after = replace(tables, facts=facts)
        t0 = time.thread_time()
        made = fact_generation(graph, tables, after, rows)
        cpu.append(time.thread_time() - t0)
        if made is None:
            raise RuntimeError("the change took a rebuild")
        # The core's part alone: the same change made again from the same generation.
        t0 = time.thread_time()
        made[1].apply(graph.core)
        core_cpu.append(time.thread_time() - t0)
        graph, tables = made[0], after
    out: dict[str, Any] = {
        "generation_cpu_ms_p50": pct(cpu, 50),
        "generation_cpu_ms_last": cpu[-1] * 1e3,
        "core_cpu_ms_p50": pct(core_cpu, 50),
        "core_cpu_ms_last": core_cpu[-1] * 1e3,
        "overlay_positions": graph.core.overlay_len,
    }
    if rounds:
        compacted = tables.build_graph()
        queries = np.ascontiguousarray(g.queries, dtype=np.int64)
        res: dict[str, list[dict[str, float]]] = {"compacted": [], "overlay": []}
        for _ in range(rounds):
            res["compacted"].append(query_medians(compacted, queries, clock))
            res["overlay"].append(query_medians(graph, queries, clock))
        for name, got in res.items():
            for w in ("W1", "W4"):
                out[f"{name}_{w}_us"] = float(np.median([r[w] for r in got]))
        for w in ("W1", "W4"):
            out[f"ratio_{w}"] = out[f"overlay_{w}_us"] / out[f"compacted_{w}_us"]
    return out


def add_cpu(n_entities: int, batches: int) -> dict[str, float]:
    """1,000-fact ``LiveGraph.add_facts`` on a SQLite store (in-place writes, no
    compaction): p50 wall and thread-CPU ms per call and of its generation part, after
    two warm-up batches. The CPU time leaves out the waits: the commit's sync and, on a
    shared machine, the time spent waiting for a core."""
    import shutil

    g = workload.generate(n_entities, seed=0)
    d = tempfile.mkdtemp()
    try:
        store = SQLiteStore.create(Path(d) / "s.db")
        store.write(tables_of(g))
        store.close()
        store = SQLiteStore.open(Path(d) / "s.db")
        live = store.load(verify=False)
        live.compact_at = 1.0
        live.write_in_place = True
        generation, part = live._generation, [0.0, 0.0]

        def timed(*a: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            out = generation(*a)
            part[:] = [time.perf_counter() - t0, time.thread_time() - c0]
            return out

        live._generation = timed  # type: ignore[method-assign]
        rng = np.random.default_rng(1)
        next_id = live.graph.n_facts
        rows = []
        for i in range(batches + 2):
            batch = new_facts(rng, g, next_id + 1000 * i, 1000)
            t0, c0 = time.perf_counter(), time.thread_time()
            live.add_facts(batch)
            rows.append((time.perf_counter() - t0, time.thread_time() - c0, *part))
        store.close()
    finally:
        shutil.rmtree(d)
    a = np.asarray(rows[2:]) * 1e3
    names = ("wall_ms_p50", "cpu_ms_p50", "generation_wall_ms_p50", "generation_cpu_ms_p50")
    return {k: float(np.median(a[:, j])) for j, k in enumerate(names)}


def entity_checks(n_entities: int, rounds: int = 4, calls: int = 25) -> list[str]:
    """One-entity ``add_entities`` with the new row checked alone against the same with the
    whole entities table checked, in alternating blocks on one live graph."""
    from graphrecall.live import graph as live_graph

    fast = live_graph.checked_rows_alone
    g = workload.generate(n_entities, seed=0)
    res: dict[str, list[float]] = {"rows checked alone": [], "whole table checked": []}
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore.create(Path(d) / "live.db")
        store.write(tables_of(g))
        live = store.load(verify=False)
        nxt = g.n_entities
        try:
            for _ in range(rounds):
                for name, xs in res.items():
                    alone = name == "rows checked alone"
                    live_graph.checked_rows_alone = fast if alone else (lambda *a, **k: None)
                    for i in range(calls):
                        rec = {"id": nxt, "tenant": int(g.entity_tenant[i])}
                        t0 = time.perf_counter()
                        live.add_entities([rec])
                        xs.append(time.perf_counter() - t0)
                        nxt += 1
        finally:
            live_graph.checked_rows_alone = fast
        t0 = time.perf_counter()
        live.tables.build_graph()
        rebuild_ms = (time.perf_counter() - t0) * 1e3
        lines = [
            f"# One-entity add_entities: {g.n_entities:,} entities, {live.graph.n_facts:,} facts\n",
            "| check | n | p50 ms | p99 ms |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {k} | {len(xs)} | {pct(xs, 50):.2f} | {pct(xs, 99):.2f} |" for k, xs in res.items()
        ]
        lines.append(
            f"\nRebuilds during the adds: {live._epoch}; one full rebuild {rebuild_ms:,.0f} ms."
        )
        store.close()
    for line in lines:
        print(line)
    return lines


def _live_tables(live: Any) -> Any:
    """The current tables without deleted rows where the tree has tombstones (there,
    ``live.tables`` compacts them first)."""
    cur = live.current()
    dead = getattr(cur, "dead_facts", None)
    if dead is None or not len(dead):
        return cur.tables
    from graphrecall.live.tombstones import rows_dropped

    return rows_dropped(cur.tables, dead)


def with_chunks(tables: GraphTables, n_chunks: int, seed: int = 0) -> GraphTables:
    """``tables`` with ``n_chunks`` chunks, each mentioning two entities of its tenant."""
    if not n_chunks:
        return tables
    rng = np.random.default_rng(seed)
    tenant = np.asarray(tables.entities["tenant"])
    first = rng.integers(0, len(tenant), n_chunks)
    order = np.argsort(tenant, kind="stable")  # entities grouped by tenant
    where = np.searchsorted(tenant[order], tenant[first])
    size = np.searchsorted(tenant[order], tenant[first], side="right") - where
    second = order[where + (rng.integers(0, 1 << 30, n_chunks) % size)]
    ids = np.arange(n_chunks)
    both = np.concatenate([first, second])
    pairs = np.unique(np.stack([np.concatenate([ids, ids]), both]), axis=1)
    return replace(
        tables,
        chunks={
            "id": ids,
            "tenant": tenant[first],
            "text": np.array([f"chunk {i}" for i in range(n_chunks)], dtype=object),
        },
        mentions={
            "chunk": pairs[0],
            "entity": pairs[1],
            "count": np.ones(pairs.shape[1], dtype=np.int64),
        },
    )


def delete_checks(
    n_entities: int, n: int, store_path: Path | None = None, n_chunks: int = 0
) -> list[str]:
    """One-fact, one-entity and one-chunk deletes on a live store of the workload graph
    with ``n_chunks`` chunks (or of the store at ``store_path``, written to: give a
    copy)."""
    rng = np.random.default_rng(0)
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    with tempfile.TemporaryDirectory() as d:
        if store_path is None:
            g = workload.generate(n_entities, seed=0)
            store = SQLiteStore.create(Path(d) / "live.db")
            store.write(with_chunks(tables_of(g), n_chunks))
            del g
        else:
            store = SQLiteStore.open(store_path)
        t0 = time.perf_counter()
        live = store.load(verify=False)
        load_s = time.perf_counter() - t0
        live.compact_at = 1.0
        part = {"last": 0.0, "rebuilds": 0}
        inner = getattr(live, "_deletion", None)
        if inner is not None:

            def timed(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                made = inner(*args, **kwargs)
                part["last"] = time.perf_counter() - t0
                part["rebuilds"] += made[1] is None
                return made

            live._deletion = timed  # type: ignore[method-assign]

        def timing(cut: Any) -> Any:
            def timed_cut(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                made = cut(*args, **kwargs)
                part["last"] = time.perf_counter() - t0
                return made

            return timed_cut

        # Trees with tombstones: the part that makes the generation.
        import graphrecall.live.graph as live_graph

        deletes_mod = getattr(importlib.import_module("graphrecall.live"), "deletes", None)
        for mod in (live_graph, deletes_mod):
            for name in ("tombstoned", "entity_tombstoned", "chunk_tombstoned"):
                if mod is not None and hasattr(mod, name):
                    setattr(mod, name, timing(getattr(mod, name)))
        n_ent = live.graph.n_entities
        say(
            f"# Deletes: {n_ent:,} entities, {live.graph.n_facts:,} facts, "
            f"{live.graph.n_chunks:,} chunks\n"
        )
        say(f"Load: {load_s:,.1f} s.\n")
        if store_path is None:  # a given store is large: no second graph in memory
            t0 = time.perf_counter()
            live.current().tables.build_graph()
            rebuild_s = time.perf_counter() - t0
            say(f"One full rebuild (`tables.build_graph()`): {rebuild_s * 1e3:,.0f} ms.\n")
        say("| operation | n | p50 ms | p99 ms | graph part p50 ms | rebuilds |")
        say("|---|---:|---:|---:|---:|---:|")

        def run(name: str, call: Any, pick: Any) -> None:
            total, made = [], []
            r0 = part["rebuilds"]
            for _ in range(n):
                arg = pick()
                t0 = time.perf_counter()
                call(arg)
                total.append(time.perf_counter() - t0)
                made.append(part["last"])
            graph_part = f"{pct(made, 50):.2f}" if inner is not None else "(rebuild)"
            rebuilds = part["rebuilds"] - r0 if inner is not None else n
            say(
                f"| {name} | {n} | {pct(total, 50):.2f} | {pct(total, 99):.2f} | "
                f"{graph_part} | {rebuilds} |"
            )

        def fact() -> list[int]:
            cur = live.current()
            ids = cur.tables.facts["id"]
            dead = set(getattr(cur, "dead_facts", np.zeros(0)).tolist())
            while True:  # a live row (no scan of the ids)
                row = int(rng.integers(0, len(ids)))
                if row not in dead:
                    return [int(ids[row])]

        def live_row(table: str, dead_of: str) -> Any:
            cur = live.current()
            ids = cur.tables.table(table)["id"]
            dead = set(getattr(cur, dead_of, np.zeros(0)).tolist())
            while True:  # a live row (no scan of the ids)
                row = int(rng.integers(0, len(ids)))
                if row not in dead:
                    return ids[row]

        def entity() -> list[Any]:
            return [live_row("entities", "dead_entities")]

        def chunk() -> list[Any]:
            return [live_row("chunks", "dead_chunks")]

        run("delete_facts, 1 fact (base)", live.delete_facts, fact)
        rows = rng.choice(live.graph.n_facts, 1000, replace=False)
        ids = _live_tables(live).facts["id"]
        rows = rows[rows < len(ids)]
        live.update_facts([{"id": int(f), "confidence": 0.5} for f in ids[rows].tolist()])
        say(f"| (1,000 facts updated: {live.overlay_len:,} overlay positions) | | | | | |")
        run("delete_facts, 1 fact (overlay)", live.delete_facts, fact)
        dead = len(getattr(live.current(), "dead_facts", ()))
        t0 = time.perf_counter()
        live.compact()
        compact_s = time.perf_counter() - t0
        say(
            f"| (`compact()`: {compact_s * 1e3:,.0f} ms, background; {dead} tombstones "
            "dropped) | | | | | |"
        )
        run("delete_entities, 1 entity", live.delete_entities, entity)
        if live.current().tables.chunks is not None:
            run("delete_chunks, 1 chunk", live.delete_chunks, chunk)
        cur = live.current()
        held = {k: len(getattr(cur, k, ())) for k in ("dead_facts", "dead_entities", "dead_chunks")}
        t0 = time.perf_counter()
        live.compact()
        compact_s = time.perf_counter() - t0
        say(
            f"| (`compact()`: {compact_s * 1e3:,.0f} ms; dropped "
            + ", ".join(f"{n} {k[5:]}" for k, n in held.items())
            + ") | | | | | |"
        )
        store.close()
    return lines


def change_checks(n_entities: int, n: int, n_chunks: int) -> list[str]:
    """One-entity and one-chunk changes and one-mention and one-alias deletes (``n`` each;
    tenant changes, which rebuild, a few times) on a live store of the workload graph with
    entity names, ``n_chunks`` chunks and one alias per 10 entities, next to one full
    rebuild."""
    rng = np.random.default_rng(0)
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    with tempfile.TemporaryDirectory() as d:
        g = workload.generate(n_entities, seed=0)
        tables = with_chunks(tables_of(g), n_chunks)
        del g
        names = np.array([f"entity {i}" for i in range(n_entities)], dtype=object)
        every = np.arange(0, n_entities, 10)
        tables = replace(
            tables,
            entities={**tables.entities, "name": names},
            aliases={
                "entity": every,
                "alias": np.array([f"alias {i}" for i in every.tolist()], dtype=object),
            },
        )
        store = SQLiteStore.create(Path(d) / "live.db")
        store.write(tables)
        del tables
        live = store.load(verify=False)
        live.compact_at = 1.0
        cur = live.current()
        say(
            f"# Changes: {cur.graph.n_entities:,} entities, {cur.graph.n_facts:,} facts, "
            f"{cur.graph.n_chunks:,} chunks, {cur.tables.n_rows('mentions'):,} mentions, "
            f"{cur.tables.n_rows('aliases'):,} aliases\n"
        )
        t0 = time.perf_counter()
        cur.tables.build_graph()
        rebuild_ms = (time.perf_counter() - t0) * 1e3
        say(f"One full rebuild (`tables.build_graph()`): {rebuild_ms:,.0f} ms.\n")
        say("| operation | n | p50 ms | p99 ms | rebuilds |")
        say("|---|---:|---:|---:|---:|")

        def run(name: str, call: Any, pick: Any, k: int = n) -> None:
            total = []
            epoch = live._epoch
            for i in range(k):
                arg = pick(i)
                t0 = time.perf_counter()
                call(arg)
                total.append(time.perf_counter() - t0)
            rebuilds = live._epoch - epoch
            say(f"| {name} | {k} | {pct(total, 50):.2f} | {pct(total, 99):.2f} | {rebuilds} |")

        ids = live.current().tables.entities["id"]
        cids = live.current().tables.chunks["id"]

        def rename(i: int) -> list[dict[str, Any]]:
            return [{"id": int(ids[rng.integers(0, len(ids))]), "name": f"renamed {i}"}]

        def retext(i: int) -> list[dict[str, Any]]:
            return [{"id": int(cids[rng.integers(0, len(cids))]), "text": f"changed text {i}"}]

        def mention(i: int) -> list[tuple[int, int]]:
            m = live.current().tables.mentions
            r = int(rng.integers(0, len(m["chunk"])))
            return [(int(m["chunk"][r]), int(m["entity"][r]))]

        def alias(i: int) -> list[tuple[int, str]]:
            al = live.current().tables.aliases
            r = int(rng.integers(0, len(al["entity"])))
            return [(int(al["entity"][r]), str(al["alias"][r]))]

        run("update_entities, 1 name", live.update_entities, rename)
        run("update_chunks, 1 text", live.update_chunks, retext)
        run("delete_mentions, 1 mention", live.delete_mentions, mention)
        say(f"| (overlay after the mention deletes: {live.overlay_len:,}) | | | | |")
        run("delete_aliases, 1 alias", live.delete_aliases, alias)
        lonely = [{"id": -1 - k, "tenant": 0, "name": f"new {k}"} for k in range(n)]
        live.add_entities(lonely)
        run(
            "update_entities, 1 tenant (a held one)",
            live.update_entities,
            lambda i: [{"id": -1 - i, "tenant": 1}],
        )

        live.add_chunks([{"id": -1 - k, "tenant": 0, "text": f"new {k}"} for k in range(n)])
        run(
            "update_chunks, 1 tenant (a held one)",
            live.update_chunks,
            lambda i: [{"id": -1 - i, "tenant": 1}],
        )
        from graphrecall.tables import BadDataError

        def refused(recs: list[dict[str, Any]]) -> None:
            try:
                live.update_entities(recs)
            except BadDataError:
                return
            raise AssertionError("a move across its facts' tenants was accepted")

        facts = live.current().tables.facts
        tenant = live.current().tables.entities["tenant"]  # ids are the rows
        linked = facts["subject"][np.flatnonzero(facts["object"] != None)[:n]]  # noqa: E711
        run(
            "update_entities, 1 tenant refused (its facts cross)",
            refused,
            lambda i: [{"id": int(linked[i]), "tenant": int(tenant[int(linked[i])]) ^ 1}],
        )
        top = int(np.max(live.current().tables.entities["tenant"]))
        run(
            "update_entities, 1 tenant (a new one: whole check + rebuild)",
            live.update_entities,
            lambda i: [{"id": -1 - i, "tenant": top + 1 + i}],
            k=2,
        )
        store.close()
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cores",
        type=Path,
        nargs="+",
        default=None,
        help="compare these extensions (_core.abi3.so) on a graph with no overlay instead",
    )
    ap.add_argument("--runs", type=int, default=4, help="alternating runs of --cores")
    ap.add_argument(
        "--in-place",
        action="store_true",
        help="LiveGraph.write_in_place: updates and access counts written in place",
    )
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time queries by wall clock or by the thread's CPU time",
    )
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--chunks", type=int, default=0, help="with --deletes: chunks to add")
    ap.add_argument("--updates", type=int, default=200)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="query timing rounds (medians)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--entity-checks",
        action="store_true",
        help="only time one-entity add_entities, rows checked alone vs the whole table",
    )
    ap.add_argument(
        "--deletes",
        action="store_true",
        help="only time one-fact and one-entity deletes (--updates each)",
    )
    ap.add_argument(
        "--store",
        type=Path,
        default=None,
        help="with --deletes: this SQLite store instead of a generated one (written to: "
        "give a copy)",
    )
    ap.add_argument(
        "--overlay-only",
        choices=("adds", "mix"),
        default=None,
        help="only the overlay generations of --batches 1,000-fact changes, in memory (no "
        "store), timed by CPU; with --rounds, queries on the result against the compacted graph",
    )
    ap.add_argument(
        "--add-cpu",
        action="store_true",
        help="only --batches 1,000-fact add_facts on a store, wall and CPU time (with "
        "--cores: one process per extension, --runs times)",
    )
    ap.add_argument(
        "--changes",
        action="store_true",
        help="only time one-entity and one-chunk changes and one-mention and one-alias "
        "deletes (--updates each; with --chunks chunks)",
    )
    args = ap.parse_args(argv)
    if args.changes:
        lines = change_checks(args.entities, args.updates, args.chunks)
        if args.out is not None:
            cmd = "python benches/bench_live.py " + " ".join(argv or sys.argv[1:])
            args.out.write_text("\n".join([*lines, "", f"Command: `{cmd}`", ""]), encoding="utf-8")
        return 0
    if args.deletes:
        lines = delete_checks(args.entities, args.updates, args.store, args.chunks)
        if args.out is not None:
            cmd = "python benches/bench_live.py " + " ".join(argv or sys.argv[1:])
            args.out.write_text("\n".join([*lines, "", f"Command: `{cmd}`", ""]), encoding="utf-8")
        return 0
    if args.add_cpu:
        import json

        call = f"add_cpu({args.entities}, {args.batches})"
        if not args.cores:
            print(json.dumps(add_cpu(args.entities, args.batches)))
            return 0
        for run in range(args.runs):
            for core, got in zip(args.cores, in_trees(args.cores, call), strict=True):
                cells = ", ".join(f"{k} {v:.3g}" for k, v in got.items())
                print(f"run {run + 1} {core}: {cells}", flush=True)
        return 0
    if args.overlay_only:
        import json

        if not args.cores:
            got = overlay_only(
                args.entities, args.batches, args.overlay_only, args.rounds, args.clock
            )
            print(json.dumps(got))
            return 0
        call = (
            f"overlay_only({args.entities}, {args.batches}, {args.overlay_only!r}, "
            f"{args.rounds}, {args.clock!r})"
        )
        for run in range(args.runs):
            for core, got in zip(args.cores, in_trees(args.cores, call), strict=True):
                cells = ", ".join(f"{k} {v:.3g}" for k, v in got.items())
                print(f"run {run + 1} {core}: {cells}", flush=True)
        return 0
    if args.cores:
        lines = compare_cores(args.cores, args.entities, args.runs, args.rounds, args.clock)
        if args.out is not None:
            cmd = "python benches/bench_live.py " + " ".join(argv or sys.argv[1:])
            text = "\n".join([*lines, "", f"Command: `{cmd}`", ""])
            args.out.write_text(text, encoding="utf-8")
        return 0
    if args.entity_checks:
        lines = entity_checks(args.entities)
        if args.out is not None:
            cmd = "python benches/bench_live.py " + " ".join(argv or sys.argv[1:])
            args.out.write_text("\n".join([*lines, "", f"Command: `{cmd}`", ""]), encoding="utf-8")
        return 0
    rng = np.random.default_rng(0)
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    g = workload.generate(args.entities, seed=0)
    tables = tables_of(g)
    queries = np.ascontiguousarray(g.queries, dtype=np.int64)
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore.create(Path(d) / "live.db")
        t0 = time.perf_counter()
        store.write(tables)
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        live = store.load(verify=False)
        load_s = time.perf_counter() - t0
        live.compact_at = 1.0  # compactions by hand, so that they are timed apart
        live.write_in_place = args.in_place
        timed = Timed(live._generation)
        live._generation = timed  # type: ignore[method-assign]
        timed_table = Timed(live._table_generation)
        live._table_generation = timed_table  # type: ignore[method-assign]
        t0 = time.perf_counter()
        live.tables.build_graph()
        rebuild_s = time.perf_counter() - t0
        n_facts = live.graph.n_facts
        say(f"# Live updates: {g.n_entities:,} entities, {n_facts:,} facts\n")
        say(
            f"Store write {write_s:.1f} s, load {load_s:.1f} s; one full rebuild "
            f"(`tables.build_graph()`, what every update cost before the overlay): "
            f"{rebuild_s * 1e3:,.0f} ms.\n"
        )
        say("| operation | n | p50 ms | p99 ms | overlay part p50 ms | rebuilds |")
        say("|---|---:|---:|---:|---:|---:|")
        next_id = n_facts

        def run(name: str, n: int, call: Any, make: Any = None, timer: Timed = timed) -> None:
            total, part = [], []
            r0 = timer.rebuilds
            for i in range(n):
                arg = make(i) if make is not None else i
                t0 = time.perf_counter()
                call(arg)
                total.append(time.perf_counter() - t0)
                part.append(timer.last)
            say(
                f"| {name} | {n} | {pct(total, 50):.2f} | {pct(total, 99):.2f} | "
                f"{pct(part, 50):.2f} | {timer.rebuilds - r0} |"
            )

        def adds(k: int) -> Any:
            def make(i: int) -> list[dict[str, Any]]:
                nonlocal next_id
                next_id += k
                return new_facts(rng, g, next_id - k, k)

            return make

        def one_update(i: int) -> list[dict[str, Any]]:
            f = int(rng.integers(0, n_facts))
            return [{"id": f, "confidence": float(np.float32(rng.random()))}]

        run("add_facts, 1 fact", args.updates, live.add_facts, adds(1))
        run("update_facts, 1 fact", args.updates, live.update_facts, one_update)
        run(
            "record_access, 1 fact",
            args.updates,
            lambda f: live.record_access(f, at=workload.NOW),
            lambda i: [int(rng.integers(0, n_facts))],
        )
        run("add_facts, 1,000 facts", args.batches, live.add_facts, adds(1000))
        next_entity = g.n_entities

        def new_entity(i: int) -> list[dict[str, Any]]:
            nonlocal next_entity
            next_entity += 1
            return [{"id": next_entity - 1, "tenant": int(g.entity_tenant[i % g.n_entities])}]

        run("add_entities, 1 entity", args.updates, live.add_entities, new_entity, timed_table)
        say(f"\nOverlay after these: {live.overlay_len:,} positions.")
        t0 = time.perf_counter()
        live.compact()
        compact_s = time.perf_counter() - t0
        say(f"Compaction (a background thread; readers not blocked): {compact_s:.2f} s.\n")

        # Queries: compacted vs 1 % of the facts changed in the overlay.
        compacted = live.graph
        n_change = live.graph.n_facts // 100
        done = 0
        while done < n_change:
            k = min(1000, n_change - done)
            if done % 2000 == 0:
                live.add_facts(new_facts(rng, g, next_id, k))
                next_id += k
            else:
                rows = rng.choice(live.graph.n_facts, k, replace=False)
                live.update_facts(
                    [
                        {"id": int(f), "confidence": float(np.float32(c))}
                        for f, c in zip(rows.tolist(), rng.random(k).tolist(), strict=True)
                    ]
                )
            done += k
        overlaid = live.graph
        res: dict[str, list[dict[str, float]]] = {"compacted": [], "overlay": []}
        for _ in range(args.rounds):
            res["compacted"].append(query_medians(compacted, queries, args.clock))
            res["overlay"].append(query_medians(overlaid, queries, args.clock))
        say(
            f"Queries: {len(queries)} W1 / W4 single queries; the overlay graph has "
            f"{n_change:,} facts (1 %) changed since its base ({overlaid.core.overlay_len:,} "
            f"overlay positions); medians of {args.rounds} rounds, alternating.\n"
        )
        say("| graph | W1 median µs | W4 median µs |")
        say("|---|---:|---:|")
        med = {}
        for name in ("compacted", "overlay"):
            med[name] = {w: float(np.median([r[w] for r in res[name]])) for w in ("W1", "W4")}
            say(f"| {name} | {med[name]['W1']:.1f} | {med[name]['W4']:.1f} |")
        ratio = {w: med["overlay"][w] / med["compacted"][w] for w in ("W1", "W4")}
        say(f"| overlay / compacted | {ratio['W1']:.2f} | {ratio['W4']:.2f} |")
        store.close()
    if args.out is not None:
        cmd = "python benches/bench_live.py " + " ".join(argv or sys.argv[1:])
        args.out.write_text("\n".join([*lines, "", f"Command: `{cmd}`", ""]), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
