"""Ingest throughput without the embedder: passages per second through read + chunk +
extract + tables, and through the check and graph build as well.

Usage::

    python benches/bench_ingest.py [--data ../shared/data] [--copies 4]

The passages are the MuSiQue and HotpotQA corpora of ``--data`` (2,884 passages), repeated
``--copies`` times with distinct ids (so every copy is chunked and extracted again), each
given as a record with its title.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "python"))

from graphrecall._core import count_tokens  # noqa: E402
from graphrecall.ingest import IngestOptions, Ingestor, builder, extract  # noqa: E402
from graphrecall.ingest.chunking import chunk_text  # noqa: E402
from graphrecall.ingest.documents import read_documents  # noqa: E402
from graphrecall.tables import GraphTables  # noqa: E402


def records(data: Path, copies: int) -> list[dict[str, str]]:
    """The corpora's passages as records, ``copies`` times."""
    mq = json.loads((data / "musique_train_hipporag" / "musique_train_corpus.json").read_text())
    hp = json.loads((data / "hotpotqa_train_hipporag" / "hotpotqa_train_corpus.json").read_text())
    base = [(c["title"], c["text"]) for c in mq] + [(t, "".join(hp[t])) for t in hp]
    return [
        {"id": f"{k}-{i}", "title": t, "text": x}
        for k in range(copies)
        for i, (t, x) in enumerate(base)
    ]


def digest(tables: GraphTables) -> str:
    """A SHA-256 of every column of ``tables``, to compare the extractor's output across
    versions (the same input must give the same entities, facts, mentions and aliases)."""
    h = hashlib.sha256()
    for name in ("entities", "facts", "chunks", "mentions", "aliases"):
        table = getattr(tables, name)
        for col in sorted(table):
            h.update(f"{name}.{col}".encode())
            h.update(repr([str(v) for v in table[col]]).encode())
    return h.hexdigest()


#: The option sets whose tables must stay byte-identical across versions (``--digests``);
#: ``tenants`` gives every third passage to one of three tenants.
OPTION_SETS: dict[str, dict[str, object]] = {
    "default": {},
    "40-token chunks": {"max_tokens": 40},
    "no known names / co-occurrence": {"known_names": False, "cooccurrence": False},
    "no title edges, min_chunks=2": {"title_edges": False, "min_chunks": 2},
    "tenants": {},
}


def digests(recs: list[dict[str, str]]) -> None:
    """Prints the :func:`digest` of the tables of each of :data:`OPTION_SETS`."""
    for name, opts in OPTION_SETS.items():
        rs: list[dict[str, str]] = recs
        if name == "tenants":
            rs = [{**r, "tenant": f"t{i % 3}"} for i, r in enumerate(recs)]
        ing = Ingestor(IngestOptions(**opts))  # type: ignore[arg-type]
        ing.add(rs)
        print(f"digest {digest(ing.tables())} {name}")


def _timed(module: Any, name: str, spent: dict[str, float]) -> None:
    """Wraps ``module.name`` so that its CPU seconds add up in ``spent[name]``."""
    f = getattr(module, name)

    def timed(*args: Any) -> Any:
        t = time.process_time()
        try:
            return f(*args)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - t

    setattr(module, name, timed)


def stages(recs: list[dict[str, str]]) -> None:
    """Prints the CPU seconds of each stage of ``Ingestor.add`` (default options): the
    reading and chunking on their own, then one ``add`` with its Rust kernels timed
    inside it, then the tables, the check and the graph build."""
    cpu = time.process_time
    out: dict[str, float] = {}
    t = cpu()
    docs = list(read_documents(recs))
    out["read documents"] = cpu() - t
    t = cpu()
    counts = count_tokens([d.text for d in docs]).tolist()
    out["count_tokens kernel (Rust)"] = cpu() - t
    t = cpu()
    for d, k in zip(docs, counts, strict=True):
        chunk_text(d.text, n_tokens=k)
    out["chunk_text (Python)"] = cpu() - t
    spent: dict[str, float] = {}
    for name in ("scan_names", "link_call_order", "link_names"):
        _timed(builder, name, spent)
    _timed(extract, "find_known_names_in", spent)
    _timed(builder.NameMerger, "resolve", spent)
    t = cpu()
    ing = Ingestor()
    ing.add(recs)
    total = cpu() - t
    for name, sec in spent.items():
        kind = "Python, rapidfuzz" if name == "resolve" else "Rust"
        out[f"in add: {name} ({kind})"] = sec
    out["in add: the rest (Python: read, chunk, rows, ids, counters)"] = total - sum(spent.values())
    out["Ingestor.add total"] = total
    t = cpu()
    tables = ing.tables()
    out["tables()"] = cpu() - t
    t = cpu()
    checked, _ = tables.check()
    out["check()"] = cpu() - t
    t = cpu()
    checked.to_graph()
    out["graph build"] = cpu() - t
    out["end to end (add + tables + check + build)"] = total + sum(
        out[k] for k in ("tables()", "check()", "graph build")
    )
    for name, sec in out.items():
        print(f"| {name} | {sec:.2f} |")


def main() -> int:
    """Runs the benchmark and prints one line per stage.

    Returns:
        The process exit status (0).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--digest", action="store_true", help="print a SHA-256 of the tables")
    ap.add_argument(
        "--digests", action="store_true", help="print only the digests of every option set"
    )
    ap.add_argument(
        "--stages", action="store_true", help="print only the CPU seconds of each stage"
    )
    args = ap.parse_args()
    recs = records(args.data, args.copies)
    if args.digests:
        digests(recs)
        return 0
    if args.stages:
        stages(recs)
        return 0
    n = len(recs)
    t0 = time.perf_counter()
    c0 = time.process_time()
    ing = Ingestor()
    ing.add(recs)
    t1 = time.perf_counter()
    c1 = time.process_time()
    tables = ing.tables()
    t2 = time.perf_counter()
    checked, _ = tables.check()
    t3 = time.perf_counter()
    graph = checked.to_graph()
    t4 = time.perf_counter()
    c4 = time.process_time()
    print(
        f"passages {n}, chunks {len(ing.chunk_text)}, entities {len(ing.entity_name)}, "
        f"facts {len(tables.facts['subject'])}, mentions {len(ing.mentions)}"
    )
    print(f"chunk + extract: {t1 - t0:.2f} s ({n / (t1 - t0):,.0f} passages/s)")
    print(f"+ tables:        {t2 - t0:.2f} s ({n / (t2 - t0):,.0f} passages/s)")
    print(f"+ check:         {t3 - t0:.2f} s ({n / (t3 - t0):,.0f} passages/s)")
    print(f"+ graph build:   {t4 - t0:.2f} s ({n / (t4 - t0):,.0f} passages/s) {graph}")
    # CPU seconds of the process (all threads): steadier than wall time on a loaded machine;
    # wall time is the measure on a quiet one (the Rust kernels use every core).
    print(
        f"CPU: chunk + extract {c1 - c0:.2f} s ({n / (c1 - c0):,.0f} passages/s), "
        f"end to end {c4 - c0:.2f} s ({n / (c4 - c0):,.0f} passages/s)"
    )
    print(
        f"end to end: wall {t4 - t0:.2f} s ({n / (t4 - t0):,.0f} passages/s), "
        f"CPU {c4 - c0:.2f} s ({n / (c4 - c0):,.0f} passages/s), "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if args.digest:
        print(f"digest {digest(tables)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
