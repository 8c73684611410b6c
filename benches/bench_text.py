"""Text anchors at scale: BM25Index against SQLite FTS5, and NameIndex's three lookups.

Run: ``python benches/bench_text.py [--passages 100000] [--chunks 100000] [--names 100000]``.

Passages are 8-29 words drawn from a Zipf(1) vocabulary of 50k words (so some query words
occur in most rows, as "the" would); names are 1-3 capitalised pseudo-words. Chunks are
``bench_recipes.py``'s: 10 tenants, each chunk an entity's name ("amber basil 123"), two
same-tenant entities' names and two filler words; queries "How is <name> related to
<name>?" in one tenant, top 24 (hybrid_expand's k x 4 candidates), p50 / p99 of single
queries and ``search_many`` throughput. Times are wall-clock on one thread; FTS5 is the
stdlib ``sqlite3`` in memory (one table per tenant for chunks), queried with the same tokens
joined by ``OR`` / ``AND`` and ``ORDER BY bm25(t) LIMIT k``.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from graphrecall.anchors.keyword import BM25Index, tokenize
from graphrecall.anchors.names import NameIndex


def per_call_us(fn: Callable[[Any], object], items: Sequence[Any]) -> float:
    t = time.perf_counter()
    for x in items:
        fn(x)
    return (time.perf_counter() - t) / len(items) * 1e6


def passages(n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    rng = np.random.default_rng(seed)
    v = 50_000
    words = [f"w{i}x" for i in range(v)]
    p = 1.0 / np.arange(1, v + 1)
    p /= p.sum()
    lens = rng.integers(8, 30, n)
    ids = rng.choice(v, size=int(lens.sum()), p=p)
    texts, o = [], 0
    for ln in lens.tolist():
        texts.append(" ".join(words[j] for j in ids[o : o + ln]).capitalize() + ".")
        o += ln
    zipf_q = [" ".join(words[j] for j in rng.choice(v, size=3, p=p)) for _ in range(200)]
    rare_q = [" ".join(words[j] for j in rng.integers(100, v, 3)) for _ in range(200)]
    return texts, zipf_q, rare_q


def bench_bm25(n: int) -> None:
    texts, zipf_q, rare_q = passages(n)
    t = time.perf_counter()
    idx = BM25Index(texts)
    print(f"BM25Index build, {n} passages: {time.perf_counter() - t:.2f} s")
    con = sqlite3.connect(":memory:")
    t = time.perf_counter()
    con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    con.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts))
    con.commit()
    print(f"FTS5 build, {n} passages: {time.perf_counter() - t:.2f} s")
    sql = "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
    for name, qs in (("zipf words", zipf_q), ("rare words", rare_q)):
        for mode in ("or", "and"):
            ours = per_call_us(lambda q, m=mode: idx.search(q, 10, mode=m), qs)
            op = f" {mode.upper()} "
            fts = per_call_us(
                lambda q, op=op: con.execute(
                    sql, (op.join(f'"{w}"' for w in tokenize(q)),)
                ).fetchall(),
                qs,
            )
            print(
                f"  top-10, 3 {name}, {mode:>3}: BM25Index {ours:8.0f} us   "
                f"FTS5 {fts:8.0f} us   ({fts / ours:.1f}x)"
            )


WORDS = (
    "amber basil cedar delta ember falcon garnet harbor indigo juniper kestrel lumen meadow "
    "nimbus onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr"
).split()
FILLER = "the a of and to in is was for on with as by at from about into over after".split()


def chunks(n: int, seed: int = 0) -> tuple[list[str], np.ndarray, list[tuple[str, int]]]:
    """bench_recipes.py's chunk texts over 10 tenants, and 1000 two-entity queries."""
    rng = np.random.default_rng(seed)
    tenant = rng.integers(0, 10, n)
    w = rng.integers(0, len(WORDS), (n, 2)).tolist()
    names = [f"{WORDS[a]} {WORDS[b]} {i}" for i, (a, b) in enumerate(w)]
    other = np.empty((n, 2), np.int64)
    for t in range(10):
        rows = np.flatnonzero(tenant == t)
        other[rows] = rows[rng.integers(0, len(rows), (len(rows), 2))]
    texts = [
        f"{names[i]} {FILLER[i % len(FILLER)]} {names[other[i, 0]]} "
        f"{FILLER[(i * 7) % len(FILLER)]} {names[other[i, 1]]}"
        for i in range(n)
    ]
    queries = []
    for a in rng.integers(0, n, 1000).tolist():
        mates = np.flatnonzero(tenant == tenant[a])
        b = int(mates[rng.integers(0, len(mates))])
        queries.append((f"How is {names[a]} related to {names[b]}?", int(tenant[a])))
    return texts, tenant, queries


def bench_bm25_tenants(n: int, k: int = 24) -> None:
    texts, tenant, queries = chunks(n)
    t = time.perf_counter()
    idx = BM25Index(texts, tenant)
    print(f"BM25Index build, {n} chunks / 10 tenants: {time.perf_counter() - t:.2f} s")
    con = sqlite3.connect(":memory:")
    for c in range(10):
        con.execute(f"CREATE VIRTUAL TABLE t{c} USING fts5(x)")
        rows = np.flatnonzero(tenant == c).tolist()
        con.executemany(f"INSERT INTO t{c}(rowid, x) VALUES (?, ?)", ((r, texts[r]) for r in rows))
    con.commit()
    for mode in ("or", "and"):
        for q, c in queries[:50]:  # warm up
            idx.search_many([q], k, tenant=c, mode=mode)
        times = []
        for q, c in queries[:300]:
            t0 = time.perf_counter_ns()
            idx.search_many([q], k, tenant=c, mode=mode)
            times.append((time.perf_counter_ns() - t0) / 1e3)
        batch = [q for q, c in queries if c == queries[0][1]]
        t0 = time.perf_counter()
        idx.search_many(batch, k, tenant=queries[0][1], mode=mode)
        qps = len(batch) / (time.perf_counter() - t0)
        op = f" {mode.upper()} "
        fts = per_call_us(
            lambda qc, op=op: con.execute(
                f"SELECT rowid, bm25(t{qc[1]}) FROM t{qc[1]} WHERE t{qc[1]} MATCH ? "
                f"ORDER BY bm25(t{qc[1]}) LIMIT {k}",
                (op.join(f'"{w}"' for w in tokenize(qc[0])),),
            ).fetchall(),
            queries[:100],
        )
        print(
            f"  top-{k}, two-entity queries, {mode:>3}: BM25Index p50 "
            f"{np.percentile(times, 50):6.1f} us, p99 {np.percentile(times, 99):6.1f} us; "
            f"search_many {qps:8,.0f} q/s ({len(batch)} queries); FTS5 {fts:8.0f} us"
        )


def bench_names(n: int) -> None:
    rng = random.Random(0)
    syll = "ka to ri mar len sha dor vin el ast on bru qui zen fa lo ther win gar ith".split()

    def word() -> str:
        return "".join(rng.choice(syll) for _ in range(rng.randint(2, 4))).capitalize()

    first = [word() for _ in range(3000)]
    last = [word() for _ in range(20000)]
    names = []
    for _ in range(n):
        r = rng.random()
        names.append(
            rng.choice(first)
            if r < 0.1
            else f"{rng.choice(first)} {rng.choice(last)}"
            if r < 0.8
            else f"{rng.choice(first)} {word()} {rng.choice(last)}"
        )

    def misspell(s: str) -> str:
        i = rng.randrange(len(s) - 1)
        return s[:i] + s[i + 1] + s[i] + s[i + 2 :]

    qs = [
        f"what did {rng.choice(names)} tell {word().lower()} about the war last winter?"
        for _ in range(200)
    ]
    fq = [
        f"what did {misspell(rng.choice(names))} tell {word().lower()} about the war?"
        for _ in range(30)
    ]
    t = time.perf_counter()
    idx = NameIndex(names)
    print(f"NameIndex build, {n} names: {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    idx.fuzzy("warm up")
    idx.keyword("warm up")
    print(f"  fuzzy + keyword tables (built on first use): {time.perf_counter() - t:.2f} s")
    print(f"  recognize (14-word query): {per_call_us(idx.recognize, qs):8.0f} us")
    print(f"  fuzzy     (one transposition): {per_call_us(idx.fuzzy, fq):8.0f} us")
    print(f"  keyword: {per_call_us(idx.keyword, qs):8.0f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--names", type=int, default=100_000)
    args = ap.parse_args()
    bench_bm25(args.passages)
    bench_bm25_tenants(args.chunks)
    bench_names(args.names)


if __name__ == "__main__":
    main()
