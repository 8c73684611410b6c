"""Latency of the router (no recipe named) and of ``ppr`` named, before and after the
native re-ranking and the shared name recognition, side by side in one process.

Usage::

    python benches/router_ab.py [--rev 423b2c0] [--repeat 7] [--data ../shared/data]

"before" runs the previous ``NameIndex.recognize`` (no sharing) and the previous Python
re-ranking (``BM25Index.holds`` and the per-candidate loop), taken from commit ``--rev``
with ``git show`` and bound into the current modules; "after" is the current code. Per
question the four runs (before / after x auto / ppr) alternate, each repeated ``--repeat``
times; the best wall time and the best thread CPU time count (the CPU time leaves out the
time other processes held the core, so it is the nearest to an idle machine on a loaded
one). Both variants must return the same chunks and scores. Data and embeddings as
``benches/eval_recall.py`` (its cache under ``benches/data/eval`` must exist).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads BLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import eval_recall as ev  # noqa: E402
from graphrecall import GraphRAG  # noqa: E402
from graphrecall.index import GraphIndex  # noqa: E402
from graphrecall.storage import EmbeddingSet  # noqa: E402

NOW = 1_767_225_600


def _old(rev: str, path: str, start: str, end: str, module: Any) -> dict[str, Any]:
    """The definitions between ``start`` and ``end`` of ``path`` at ``rev``, executed in a
    copy of ``module``'s namespace (so they see the same helpers)."""
    src = subprocess.run(
        ["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    body = src[src.index(start) : src.index(end)]
    if body.startswith("    "):  # a method: dedent it
        body = "\n".join(line[4:] for line in body.splitlines())
    ns = dict(vars(module))
    exec(body, ns)
    return ns


def _load(name: str, data: Path) -> tuple[GraphIndex, list[str], Any]:
    loader = ev.musique if name == "MuSiQue" else ev.hotpotqa
    tables, questions, _ = loader(data)
    checked, _ = tables.check()
    cache = ROOT / "data" / "eval"
    ent = [str(n) for n in checked.entities["name"].tolist()]
    txt = [str(t) for t in checked.chunks["text"].tolist()]
    checked.embeddings = [
        EmbeddingSet(
            "entity", checked.entities["id"], ev._cached(None, ent, "passage", cache), "e5"
        ),
        EmbeddingSet("chunk", checked.chunks["id"], ev._cached(None, txt, "passage", cache), "e5"),
    ]
    index = GraphIndex.build(checked, embedder=None, checked=True)
    return index, questions, ev._cached(None, questions, "query", cache)


def main() -> int:
    """Prints before / after latencies of auto and ppr on both sets.

    Returns:
        The process exit status (0; 1 when the variants' results differ).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="423b2c0", help="the commit of the 'before' code")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    args = ap.parse_args()
    logging.getLogger("graphrecall").setLevel(logging.ERROR)
    names_mod = importlib.import_module("graphrecall.anchors.names")
    rr_mod = importlib.import_module("graphrecall.recipes.ppr_rerank")
    ppr_mod = importlib.import_module("graphrecall.recipes.ppr")
    old_recognize = _old(
        args.rev,
        "python/graphrecall/anchors/names.py",
        "    def recognize(\n",
        "    def recognize_many(",
        names_mod,
    )["recognize"]
    old_rr = _old(
        args.rev,
        "python/graphrecall/recipes/ppr_rerank.py",
        "def rerank_from_top(",
        "def bridge_weights(",
        rr_mod,
    )
    new = (names_mod.NameIndex.recognize, ppr_mod.rerank_from_top, ppr_mod.query_terms)
    spec_lists: dict[int, list[float]] = {}

    def old_terms(keywords: Any, query: str, t: int, w: float) -> Any:
        return (keywords, query, t, w)  # the old step needs the candidates: see below

    def old_rerank(rows: Any, scores: Any, graph: Any, comps: Any, m: Any, spec: Any,
                   bridge: float, cover: Any, terms: Any, k: int) -> Any:  # fmt: skip
        sl = spec_lists.get(id(spec))
        if sl is None:
            sl = spec_lists[id(spec)] = spec.tolist()
        gains = (
            None if terms is None else old_rr["term_gains"](terms[0], terms[1], rows, *terms[2:])
        )
        return old_rr["rerank_from_top"](rows, scores, graph, comps, m, sl, bridge, cover, gains, k)

    def use(before: bool) -> None:
        if before:
            names_mod.NameIndex.recognize = old_recognize
            ppr_mod.rerank_from_top, ppr_mod.query_terms = old_rerank, old_terms
        else:
            names_mod.NameIndex.recognize = new[0]
            ppr_mod.rerank_from_top, ppr_mod.query_terms = new[1], new[2]

    same = True
    print("| set | variant | auto µs (wall / CPU) | ppr µs (wall / CPU) |\n|---|---|---:|---:|")
    for name in ("MuSiQue", "HotpotQA"):
        index, questions, qv = _load(name, args.data)
        rag = GraphRAG(index, cache=None)
        wall: dict[tuple[bool, str | None], list[float]] = {}
        cpu: dict[tuple[bool, str | None], list[float]] = {}
        for i, q in enumerate(questions):
            got: dict[tuple[bool, str | None], list[tuple[str, float]]] = {}
            for _ in range(args.repeat):
                for before in (True, False):
                    use(before)
                    for recipe in (None, "ppr"):
                        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
                        r = rag.retrieve(
                            q, recipe=recipe, query_vector=qv[i], use_cache=False, now=NOW
                        )
                        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
                        key = (before, recipe)
                        w = wall.setdefault(key, [float("inf")] * len(questions))
                        c = cpu.setdefault(key, [float("inf")] * len(questions))
                        w[i], c[i] = min(w[i], t1 - t0), min(c[i], c1 - c0)
                        got[key] = [(str(x.id), x.score) for x in r.chunks]
            same &= len({tuple(v) for v in got.values()}) == 1
        use(False)
        for before in (True, False):
            cells = []
            for recipe in (None, "ppr"):
                k = (before, recipe)
                n = len(questions) * 1e3
                cells.append(f"{sum(wall[k]) / n:.0f} / {sum(cpu[k]) / n:.0f}")
            label = f"before ({args.rev})" if before else "after"
            print(f"| {name} | {label} | {cells[0]} | {cells[1]} |")
    print(f"\nsame results: {same}; load average {os.getloadavg()}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
