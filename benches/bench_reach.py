"""What the entry points over GraphRAG cost per query, on the packaged demo graph.

Measured, each as the median of many calls after a warm-up, one process, cache off unless
said (the query vector is given, so no embedding is timed except where said):

* ``retrieve``: the sync call, the baseline;
* ``aretrieve``: the same call awaited one at a time (the thread-pool hop), and N awaits in
  flight at once (throughput of the pool);
* LangChain ``invoke`` and LlamaIndex ``retrieve`` (the framework's own overhead on top);
* MCP ``retrieve`` over stdio through the SDK client, a repeated question (the server's
  result cache answers, so this is the protocol's cost) and new questions (server-side
  embedding included); and in process (``Client(server)``: the SDK without the pipe).

Usage:
    PYTHONPATH=python python benches/bench_reach.py [--out benches/results/reach.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

NOW = 1_767_225_600
Q = "Who are Ned Stark's allies?"


def _median_us(fn: Callable[[], Any], n: int) -> float:
    for _ in range(min(50, n)):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


async def _amedian_us(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    for _ in range(min(50, n)):
        await fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


async def _throughput(fn: Callable[[], Awaitable[Any]], inflight: int, total: int) -> float:
    sem = asyncio.Semaphore(inflight)

    async def one() -> None:
        async with sem:
            await fn()

    t = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    return total / (time.perf_counter() - t)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("-n", type=int, default=2000)
    args = ap.parse_args()

    from graphrecall import GraphRAG
    from graphrecall.demo import demo_data, demo_tables
    from graphrecall.integrations.langchain import GraphRecallRetriever as LC
    from graphrecall.integrations.llamaindex import GraphRecallRetriever as LI

    rag = GraphRAG.from_tables(demo_tables(demo_data()), cache=None)
    qv = rag.index.embedder.embed_queries([Q])[0]
    kw: dict[str, Any] = {"recipe": "chunk_boost", "tenant": "stark", "now": NOW}
    rows: list[tuple[str, str]] = []

    sync = _median_us(lambda: rag.retrieve(Q, query_vector=qv, **kw), args.n)
    rows.append(("retrieve (sync, vector given)", f"{sync:.0f} us"))

    async def amain() -> None:
        one = await _amedian_us(lambda: rag.aretrieve(Q, query_vector=qv, **kw), args.n)
        rows.append(("aretrieve, one await at a time", f"{one:.0f} us (+{one - sync:.0f} us)"))
        for inflight in (1, 8, 64):
            qps = await _throughput(
                lambda: rag.aretrieve(Q, query_vector=qv, **kw), inflight, args.n
            )
            rows.append((f"aretrieve, {inflight} in flight", f"{qps:,.0f} queries/s"))
        loop_s = _timed(lambda: [rag.retrieve(Q, query_vector=qv, **kw) for _ in range(args.n)])
        sync_qps = args.n / loop_s
        rows.append(("retrieve, sync loop", f"{sync_qps:,.0f} queries/s"))

    asyncio.run(amain())

    cached = GraphRAG(rag.index)  # default 60 s cache: repeated questions are cache hits
    lc = LC(rag=cached, k=5, **kw)
    li = LI(cached, k=5, **kw)
    base = _median_us(lambda: cached.retrieve(Q, **kw), args.n)
    rows.append(("retrieve, repeated question (cache hit)", f"{base:.0f} us"))
    lc_us = _median_us(lambda: lc.invoke(Q), args.n)
    rows.append(("LangChain invoke, same (cache hit)", f"{lc_us:.0f} us"))
    li_us = _median_us(lambda: li.retrieve(Q), args.n)
    rows.append(("LlamaIndex retrieve, same (cache hit)", f"{li_us:.0f} us"))

    rows.extend(_mcp(rag, kw, min(args.n, 500)))

    import platform

    lines = [
        "# Entry points over GraphRAG: cost per query (demo graph, tenant stark, chunk_boost)",
        "",
        f"Command: `PYTHONPATH=python python benches/bench_reach.py -n {args.n}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
        "(shared with other jobs), Python "
        f"{platform.python_version()}. Medians; throughput over {args.n} queries.",
        "",
        "| what | result |",
        "|---|---|",
        *[f"| {a} | {b} |" for a, b in rows],
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _mcp(rag: Any, kw: dict[str, Any], n: int) -> list[tuple[str, str]]:
    from graphrecall import GraphRAG
    from mcp import Client, StdioServerParameters

    rows: list[tuple[str, str]] = []
    src = str(Path(__file__).resolve().parents[1] / "python")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as tmp:
        rag.save(Path(tmp) / "index")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "graphrecall.cli", "mcp", str(Path(tmp) / "index")],
            env=env,
        )
        args = {"query": Q, "k": 5, **kw}

        async def run() -> None:
            async with Client(params, read_timeout_seconds=120) as client:
                us = await _amedian_us(lambda: client.call_tool("retrieve", args), n)
                rows.append(("MCP retrieve over stdio, repeated question", f"{us:.0f} us"))
                i = iter(range(10**9))
                us = await _amedian_us(
                    lambda: client.call_tool("retrieve", {**args, "query": f"{Q} {next(i)}"}),
                    min(n, 200),
                )
                rows.append(("MCP retrieve over stdio, new questions (embeds)", f"{us:.0f} us"))

        asyncio.run(run())

    from graphrecall.integrations.mcp_server import build_server

    server = build_server(GraphRAG(rag.index))

    async def inproc() -> None:
        async with Client(server) as client:
            us = await _amedian_us(lambda: client.call_tool("retrieve", args), n)
            rows.append(("MCP retrieve in process (SDK client), repeated question", f"{us:.0f} us"))

    asyncio.run(inproc())
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
