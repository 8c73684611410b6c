"""Bulk embedding throughput: passages/s of the default embedder on 1 and 2 worker threads.

Run: ``PYTHONPATH=$PWD/python python benches/bench_bulk_embed.py [--n 100]``. Embeds the
first N MuSiQue passages (title + text, as an index build would see chunk texts) with
:func:`graphrecall.embed_bulk.embed_bulk`, checks every worker count gives the same bytes as
the plain sequential ``embed_passages`` path, and prints one table row per worker count.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from graphrecall.embed import E5Embedder
from graphrecall.embed_bulk import embed_bulk

CORPUS = Path("/work/shared/data/musique_train_hipporag/musique_train_corpus.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    docs = json.loads(CORPUS.read_text())[: args.n]
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    emb = E5Embedder(num_threads=1)  # one OpenMP thread per call: the workers are the cores
    emb.embed_passages(texts[:2])  # warm up
    t = time.perf_counter()
    ref = np.concatenate([emb.embed_passages(texts[i : i + 64]) for i in range(0, len(texts), 64)])
    seq = time.perf_counter() - t
    print(f"{len(texts)} passages, {sum(map(len, texts)):,} characters")
    print("| path | workers | seconds | passages/s | same bytes |")
    print("|---|---:|---:|---:|---|")
    print(f"| sequential embed_passages (64/batch) | 1 | {seq:.1f} | {len(texts) / seq:.1f} | - |")
    for w in args.workers:
        t = time.perf_counter()
        got = embed_bulk(emb, texts, workers=w)
        s = time.perf_counter() - t
        same = got.tobytes() == ref.tobytes()
        print(f"| embed_bulk | {w} | {s:.1f} | {len(texts) / s:.1f} | {same} |")


if __name__ == "__main__":
    main()
