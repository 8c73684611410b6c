"""``graphrecall serve`` through a real HTTP client against a server started by the test:
retrieval, context, explain, metrics, writes, and bad requests answered with precise 4xx
JSON errors while the service keeps serving."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

from service_server import Server, demo_store  # noqa: E402

KEY = "s3cret-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
NOW = 1767225600


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_store(tmp_path_factory.mktemp("svc") / "demo.sqlite")


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[Server]:
    with Server(
        store,
        "--api-key-env",
        "GR_TEST_KEY",
        "--max-body-bytes",
        "65536",
        "--max-batch",
        "8",
        # Short enough for the slow-client tests to finish fast, long enough that a client
        # descheduled on a busy 2-core machine between connecting and sending still counts
        # as on time (0.5 s once cut a healthy connection of the 32-request test).
        "--read-timeout",
        "2.0",
        env={"GR_TEST_KEY": KEY},
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[Any]:
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=30.0) as c:
        yield c


def _error(resp: Any, status: int, kind: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    err = resp.json()["error"]
    assert set(err) == {"type", "message", "errors"}
    assert err["errors"] and set(err["errors"][0]) == {"type", "loc", "msg", "input", "ctx"}
    if kind is not None:
        assert err["errors"][0]["type"] == kind, err
    return dict(err)


def test_retrieve_one_a_batch_and_the_router(client: Any) -> None:
    one = client.post(
        "/retrieve",
        json={
            "query": "Who are Ned Stark's allies?",
            "recipe": "chunk_boost",
            "tenant": "stark",
            "params": {"k": 3},
            "now": NOW,
        },
    )
    assert one.status_code == 200, one.text
    res = one.json()["result"]
    assert res["recipe"] == "chunk_boost" and res["tenant"] == "stark"
    assert 0 < len(res["chunks"]) <= 3
    batch = client.post(
        "/retrieve",
        json={"queries": ["What is JACQ?", "Who uses DuckDB?"], "tenant": "alice", "now": NOW},
    )
    assert batch.status_code == 200, batch.text
    results = batch.json()["results"]
    assert [r["query"] for r in results] == ["What is JACQ?", "Who uses DuckDB?"]
    assert all(r["recipe"] for r in results)  # the router chose


def test_the_service_answers_what_the_api_answers(client: Any, store: Path) -> None:
    from graphrecall import GraphRAG

    rag = GraphRAG.from_sqlite(store)
    want = rag.retrieve("What is JACQ?", recipe="spreading_activation", tenant="alice", now=NOW)
    got = client.post(
        "/retrieve",
        json={
            "query": "What is JACQ?",
            "recipe": "spreading_activation",
            "tenant": "alice",
            "now": NOW,
        },
    ).json()["result"]
    assert [f["id"] for f in got["facts"]] == [f.id for f in want.facts]
    assert [f["score"] for f in got["facts"]] == pytest.approx([f.score for f in want.facts])


def test_concurrent_singles_are_coalesced(server: Server) -> None:
    import asyncio

    async def run() -> list[int]:
        async with httpx.AsyncClient(base_url=server.url, headers=AUTH, timeout=30) as c:
            body = {"query": "Who is Ned Stark?", "recipe": "ppr", "tenant": "stark"}
            rs = await asyncio.gather(*(c.post("/retrieve", json=body) for _ in range(32)))
            return [r.status_code for r in rs]

    assert asyncio.run(run()) == [200] * 32
    text = httpx.get(server.url + "/metrics", headers=AUTH).text
    counts = {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("graphrecall_batch_size_")
    }
    assert counts["graphrecall_batch_size_sum"] >= 32  # every single query went through it


def test_the_batcher_coalesces_queries_that_wait_for_a_worker() -> None:
    import asyncio
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from graphrecall.service.batcher import MicroBatcher

    release = threading.Event()
    calls: list[list[str]] = []

    def run(key: Any, queries: list[str], vectors: Any) -> list[Any]:
        calls.append(list(queries))
        release.wait(30)
        if "bad" in queries:
            raise ValueError("bad query")
        return [f"{key}:{q}" for q in queries]

    async def main() -> list[Any]:
        with ThreadPoolExecutor(1) as pool:
            b: MicroBatcher[str] = MicroBatcher(run, pool, workers=1, wait_s=10.0, max_size=4)
            first = asyncio.ensure_future(b.submit("k", "q0", None))
            await asyncio.sleep(0)  # let the first batch start: the only worker is busy
            await asyncio.sleep(0)
            rest = [asyncio.ensure_future(b.submit("k", f"q{i}", None)) for i in range(1, 7)]
            bad = asyncio.ensure_future(b.submit("k", "bad", None))
            other = asyncio.ensure_future(b.submit("j", "x", None))
            await asyncio.sleep(0)
            release.set()
            return await asyncio.gather(first, *rest, bad, other, return_exceptions=True)

    out = asyncio.run(main())
    assert out[:7] == [f"k:q{i}" for i in range(7)]
    assert isinstance(out[7], ValueError) and out[8] == "j:x"
    # q1..q4 filled a batch (max_size 4); q5, q6 and "bad" waited together; "bad" failed
    # alone when its batch was retried one by one.
    assert calls[0] == ["q0"] and calls[1] == ["q1", "q2", "q3", "q4"]
    assert ["q5", "q6", "bad"] in calls and ["x"] in calls


def test_the_batcher_sends_every_tenant_in_one_hop_per_free_worker() -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from graphrecall.service.batcher import MicroBatcher

    calls: list[tuple[str, list[str]]] = []
    jobs: list[int] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            jobs.append(1)
            return super().submit(fn, *args, **kwargs)

    def run(key: str, queries: list[str], vectors: Any) -> list[Any]:
        calls.append((key, list(queries)))
        return [f"{key}:{q}" for q in queries]

    async def main(workers: int) -> list[Any]:
        with Counting(workers) as pool:
            b: MicroBatcher[str] = MicroBatcher(run, pool, workers=workers, wait_s=1.0, max_size=8)
            subs = [b.submit(k, f"q{i}", None) for i, k in enumerate("abcabc")]
            subs.append(b.submit("a", "bad", None, render=lambda r: 1 / 0))
            subs.append(b.submit("b", "up", None, render=str.upper))
            return await asyncio.gather(*subs, return_exceptions=True)

    for workers, hops in ((1, 1), (2, 2), (8, 3)):
        calls.clear()
        jobs.clear()
        out = asyncio.run(main(workers))
        assert out[:6] == ["a:q0", "b:q1", "c:q2", "a:q3", "b:q4", "c:q5"]
        assert isinstance(out[6], ZeroDivisionError) and out[7] == "B:UP"
        assert len(jobs) == hops  # one thread hop per free worker, at most one per tenant
        assert sorted(calls) == [
            ("a", ["q0", "q3", "bad"]),
            ("b", ["q1", "q4", "up"]),
            ("c", ["q2", "q5"]),
        ]


def test_context_and_explain(client: Any) -> None:
    q = {"query": "What is JACQ?", "recipe": "spreading_activation", "tenant": "alice"}
    block = client.post("/context", json={**q, "budget": 200})
    assert block.status_code == 200, block.text
    body = block.json()
    assert body["text"] and 0 < body["tokens"] <= 200 and body["items"]
    exp = client.post("/explain", json=q)
    assert exp.status_code == 200, exp.text
    assert exp.json()["text"].startswith("spreading_activation: 'What is JACQ?'")
    assert exp.json()["items"][0]["path"]
    html = client.post("/explain?format=html", json=q)
    # The HTML picture is served where graphrecall.explain has its renderer (to_html).
    if html.status_code == 200:
        assert html.headers["content-type"].startswith("text/html")
        assert "JACQ" in html.text
    else:
        _error(html, 406, "unsupported_format")
    _error(client.post("/explain?format=pdf", json=q), 422, "invalid_value")


def test_health_ready_and_metrics(server: Server, client: Any) -> None:
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz").json()
    assert ready["status"] == "ready" and ready["writable"] and ready["tenants"] == 4
    client.post("/retrieve", json={"query": "x", "recipe": "ppr", "tenant": "nobody"})
    text = client.get("/metrics").text
    assert 'graphrecall_request_seconds_count{endpoint="retrieve",recipe="chunk_boost"}' in text
    assert 'graphrecall_errors_total{status="404",type="UnknownTenantError"}' in text
    assert "graphrecall_cache_hits_total" in text


BAD: list[tuple[str, dict[str, Any], int, str]] = [
    ("unknown tenant", {"query": "x", "recipe": "ppr", "tenant": "nobody"}, 404, "unknown_tenant"),
    ("missing tenant", {"query": "x", "recipe": "ppr"}, 422, "missing"),
    ("tenant of a wrong type", {"query": "x", "tenant": [1]}, 422, "invalid_parameter"),
    (
        "k = 10**12",
        {"query": "x", "recipe": "chunk_boost", "tenant": "stark", "params": {"k": 10**12}},
        422,
        "",
    ),
    (
        "hops = 10**9",
        {
            "query": "x",
            "recipe": "spreading_activation",
            "tenant": "stark",
            "params": {"max_hops": 10**9},
        },
        422,
        "invalid_parameter",
    ),
    (
        "unknown parameter",
        {"query": "x", "recipe": "ppr", "tenant": "stark", "params": {"bogus": 1}},
        422,
        "",
    ),
    ("unknown recipe", {"query": "x", "recipe": "nope", "tenant": "stark"}, 422, ""),
    ("unknown field", {"query": "x", "tenant": "stark", "qeury": 1}, 422, "unknown_field"),
    ("batch over the limit", {"queries": ["x"] * 9, "tenant": "stark"}, 413, "batch_too_large"),
    ("no query", {"tenant": "stark"}, 422, "missing"),
    ("query not a str", {"query": 5, "tenant": "stark"}, 422, "invalid_value"),
    (
        "vector of the wrong size",
        {"query": "x", "tenant": "stark", "recipe": "ppr", "query_vector": [0.1, 0.2]},
        422,
        "invalid_parameter",
    ),
    ("now absurd", {"query": "x", "tenant": "stark", "now": 10**30}, 422, "invalid_parameter"),
]


@pytest.mark.parametrize(("case", "body", "status", "kind"), BAD, ids=[b[0] for b in BAD])
def test_bad_retrieve_requests(
    client: Any, case: str, body: dict[str, Any], status: int, kind: str
) -> None:
    err = _error(client.post("/retrieve", json=body), status, kind or None)
    assert err["message"]
    # The service keeps serving.
    ok = client.post("/retrieve", json={"query": "Who is Ned?", "recipe": "ppr", "tenant": "stark"})
    assert ok.status_code == 200


def test_malformed_oversized_and_unauthorised(server: Server, client: Any) -> None:
    _error(client.post("/retrieve", content=b'{"query": "x",'), 400, "json_invalid")
    _error(client.post("/retrieve", content=b"[1, 2"), 400, "json_invalid")
    big = json.dumps({"query": "x" * 70_000, "tenant": "stark"})
    _error(client.post("/retrieve", content=big), 413, "body_too_large")
    _error(httpx.post(server.url + "/retrieve", json={"query": "x"}), 401, "unauthorized")
    wrong = {"Authorization": "Bearer not-the-key"}
    _error(httpx.post(server.url + "/retrieve", json={"query": "x"}, headers=wrong), 401)
    _error(httpx.get(server.url + "/metrics", headers={"X-API-Key": "x"}), 401, "unauthorized")
    assert httpx.get(server.url + "/metrics", headers={"X-API-Key": KEY}).status_code == 200
    _error(client.get("/nope"), 404, "not_found")
    _error(client.get("/retrieve"), 405, "method_not_allowed")


def _raw(server: Server, data: bytes) -> bytes:
    """Send ``data`` and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


@pytest.mark.parametrize(
    ("case", "data"),
    [
        ("headers never finished", b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Le"),
        (
            "body shorter than announced",
            b"POST /retrieve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + KEY.encode()
            + b'\r\nContent-Length: 100\r\n\r\n{"query": ',
        ),
    ],
)
def test_slow_clients_get_408(server: Server, client: Any, case: str, data: bytes) -> None:
    out = _raw(server, data)
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), out
    assert json.loads(body)["error"]["errors"][0]["type"] == "timeout"
    assert client.get("/readyz").status_code == 200


def test_responses_on_one_keep_alive_connection(server: Server) -> None:
    # The head is held and sent with the body: each response, a HEAD one (no body bytes)
    # included, arrives whole, and the connection serves the next request.
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    head = b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    out = _raw(server, get + head + last)
    parts = out.split(b"HTTP/1.1 200 OK\r\n")
    assert len(parts) == 4 and parts[0] == b"", out
    assert parts[1].endswith(b'\r\n\r\n{"status":"ok"}'), out
    assert parts[2].endswith(b"\r\n\r\n") and b"content-length: 15" in parts[2], out
    assert parts[3].endswith(b'\r\n\r\n{"status":"ok"}'), out


def test_a_retrieval_past_the_request_timeout_gets_503(store: Path) -> None:
    import asyncio
    import threading

    from graphrecall.service import ServiceConfig, create_app
    from graphrecall.service.backend import Backend

    backend = Backend.open(store, embedder=None)
    app = create_app(backend, ServiceConfig(request_timeout_s=0.05, use_cache=False))
    release = threading.Event()
    run = app.service._run

    def held(*args: Any) -> Any:
        release.wait(30)  # until the 503 is out: the timeout, not this wait, ends it
        return run(*args)

    app.service._run = held  # type: ignore[method-assign]
    body = json.dumps({"queries": ["What is JACQ?"], "tenant": "alice"}).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/retrieve",
        "headers": [(b"content-length", str(len(body)).encode())],
    }
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            release.set()

    try:
        asyncio.run(app(scope, receive, send))
    finally:
        release.set()
        app.service.executor.shutdown(wait=True)
        backend.close()
    assert sent[0]["status"] == 503
    err = json.loads(sent[1]["body"])["error"]
    assert err["errors"][0]["type"] == "timeout", err


def test_writes_are_visible_to_the_next_query(client: Any) -> None:
    q = {"query": "What is JACQ?", "recipe": "spreading_activation", "tenant": "alice"}
    fact = {
        "id": 5000,
        "subject": "jacq",
        "predicate": "deployed_on",
        "object_value": "a Raspberry Pi",
        "confidence": 0.99,
        "status": "confirmed",
        "source": "user_edit",
        "last_accessed": NOW,
    }
    ack = client.post("/facts", json={"tenant": "alice", "facts": [fact]})
    assert ack.status_code == 200, ack.text
    assert ack.json()["rows"] == {"facts": 1}
    got = client.post("/retrieve", json={**q, "use_cache": True}).json()["result"]
    assert 5000 in [f["id"] for f in got["facts"]]
    upd = client.patch(
        "/facts", json={"tenant": "alice", "facts": [{"id": 5000, "confidence": 0.5}]}
    )
    assert upd.status_code == 200, upd.text
    got = client.post("/retrieve", json=q).json()["result"]
    hit = next(f for f in got["facts"] if f["id"] == 5000)
    assert hit["confidence"] == pytest.approx(0.5)
    use = client.post("/usage", json={"tenant": "alice", "facts": [5000, 5000], "at": NOW})
    assert use.status_code == 200, use.text
    assert use.json()["operation"] == "record_access"


def test_bad_writes(client: Any) -> None:
    fact = {"subject": "ned_stark", "predicate": "p", "object_value": "v"}
    # Another tenant's ids read as unknown ones.
    _error(client.post("/facts", json={"tenant": "alice", "facts": [fact]}), 404, "unknown_id")
    _error(
        client.patch("/facts", json={"tenant": "stark", "facts": [{"id": 0, "confidence": 0.1}]}),
        404,
        "unknown_id",
    )
    _error(client.post("/usage", json={"tenant": "stark", "facts": [0]}), 404, "unknown_id")
    _error(client.post("/usage", json={"tenant": "alice", "facts": [10**9]}), 404, "unknown_id")
    _error(client.post("/facts", json={"tenant": "nobody", "facts": []}), 404, "unknown_tenant")
    _error(client.post("/facts", json={"facts": [fact]}), 422, "missing")
    _error(client.post("/facts", json={"tenant": "alice", "facts": "x"}), 422, "invalid_value")
    bad = {"subject": "jacq", "predicate": "p", "confidence": "high"}
    resp = client.post("/facts", json={"tenant": "alice", "facts": [bad]})
    assert 400 <= resp.status_code < 500, resp.text
    _error(resp, resp.status_code)
    assert client.get("/readyz").status_code == 200


def test_a_saved_index_is_served_read_only(store: Path, tmp_path: Path) -> None:
    from graphrecall import GraphRAG

    GraphRAG.from_sqlite(store).save(tmp_path / "index")
    with Server(tmp_path / "index") as srv:
        body = {"query": "What is JACQ?", "recipe": "spreading_activation", "tenant": "alice"}
        assert httpx.post(srv.url + "/retrieve", json=body).status_code == 200
        resp = httpx.post(srv.url + "/facts", json={"tenant": "alice", "facts": []})
        _error(resp, 405, "read_only")
        assert httpx.get(srv.url + "/readyz").json()["writable"] is False


def test_mixed_tenants_from_several_processes_answer_as_the_api(
    store: Path, tmp_path: Path
) -> None:
    """Concurrent single queries of every demo tenant and recipe, coalesced across tenants
    and answered by two server processes, get the bodies of one API call per query."""
    import asyncio

    from graphrecall import GraphRAG
    from graphrecall.demo import EXAMPLES

    rag = GraphRAG.from_sqlite(store)
    rag.save(tmp_path / "index")
    want = [
        json.loads(
            json.dumps(
                rag.retrieve(q, recipe=r, tenant=t, now=NOW, context=c, use_cache=False).to_dict(),
                default=str,
            )
        )
        for r, t, q, c in EXAMPLES
    ]
    bodies = [
        {
            "query": q,
            "recipe": r,
            "tenant": t,
            "now": NOW,
            "context": c,
            "use_cache": False,
            "explain": True,
        }
        for r, t, q, c in EXAMPLES
    ]

    async def run(url: str) -> list[Any]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            rs = await asyncio.gather(*(c.post("/retrieve", json=b) for b in bodies * 6))
            return [r.json()["result"] for r in rs]

    with Server(tmp_path / "index", "--processes", "2") as srv:
        got = asyncio.run(run(srv.url))
        kids = Path(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children")
        children = kids.read_text().split() if kids.exists() else []
        assert srv.stop() == 0
    for g in [*got, *want]:
        g.pop("timings")  # wall-clock seconds of the stages
    assert got == want * 6
    assert not [c for c in children if Path(f"/proc/{c}").exists()]  # SIGTERM reached them


def test_several_processes_get_the_connections_in_turn(store: Path, tmp_path: Path) -> None:
    """Eight keep-alive clients on two server processes: each process serves four of them
    (the parent hands connections out in turn; a kernel hash would split them unevenly in
    most runs)."""
    from graphrecall import GraphRAG
    from graphrecall.demo import EXAMPLES

    GraphRAG.from_sqlite(store).save(tmp_path / "index")
    r, t, q, _ = EXAMPLES[0]
    body = {"query": q, "recipe": r, "tenant": t, "now": NOW, "use_cache": False}
    with Server(tmp_path / "index", "--processes", "2") as srv:
        clients = [httpx.Client(base_url=srv.url, timeout=30) for _ in range(8)]
        try:
            for c in clients:  # one connection each, opened in this order
                assert c.post("/retrieve", json=body).status_code == 200
            served = []
            for c in clients:  # each asks its own process how many queries it answered
                lines = c.get("/metrics").text.splitlines()
                served.append(
                    sum(
                        float(line.rsplit(" ", 1)[1])
                        for line in lines
                        if line.startswith("graphrecall_request_seconds_count")
                        and 'endpoint="retrieve"' in line
                    )
                )
        finally:
            for c in clients:
                c.close()
        assert srv.stop() == 0
    assert served == [4.0] * 8, served


def test_a_store_is_served_by_one_process(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from graphrecall.cli import main

    assert main(["serve", str(store), "--processes", "2"]) == 1
    assert "only a saved index" in capsys.readouterr().err


def test_result_bodies_are_to_dict(store: Path) -> None:
    from graphrecall import GraphRAG
    from graphrecall.demo import EXAMPLES, ROUTED
    from graphrecall.service.bodies import results_body as _results_body

    rag = GraphRAG.from_sqlite(store)
    results = [
        rag.retrieve(q, recipe=r, tenant=t, now=NOW, context=c) for r, t, q, c in EXAMPLES
    ] + [rag.retrieve(q, tenant=t, now=NOW, context=c) for t, q, c in ROUTED]
    want = json.loads(json.dumps([r.to_dict() for r in results], default=str))
    assert json.loads(_results_body("results", results))["results"] == want
    assert json.loads(_results_body("result", results[:1]))["result"] == want[0]
    # The lean body: to_dict without any hit's path and components.
    for res in want:
        for hits in [res[k] for k in ("anchors", "entities", "facts", "chunks")] + list(
            (res["tiers"] or {}).values()
        ):
            for hit in hits:
                hit.pop("path")
                hit.pop("components", None)
    lean = json.loads(_results_body("results", results, explain=False))["results"]
    assert lean == want
    assert json.loads(_results_body("result", results[:1], explain=False))["result"] == want[0]


def test_explain_asks_for_paths_and_components(client: Any) -> None:
    q = {"query": "What is JACQ?", "recipe": "spreading_activation", "tenant": "alice", "now": NOW}
    lean = client.post("/retrieve", json=q).json()["result"]
    full = client.post("/retrieve", json={**q, "explain": True}).json()["result"]
    assert lean["facts"] and "path" not in lean["facts"][0]
    assert "components" not in lean["facts"][0] and "path" not in lean["entities"][0]
    assert full["facts"][0]["path"] and full["facts"][0]["components"]
    assert [f["id"] for f in lean["facts"]] == [f["id"] for f in full["facts"]]
    many = {k: v for k, v in q.items() if k != "query"}
    batch = client.post(
        "/retrieve", json={**many, "queries": [q["query"]], "explain": True}
    ).json()["results"]
    assert "path" in batch[0]["facts"][0]
    _error(client.post("/retrieve", json={**q, "explain": "yes"}), 422, "invalid_parameter")


def test_unusable_settings_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from graphrecall.cli import main
    from graphrecall.errors import ParameterError
    from graphrecall.service import ServiceConfig

    for bad in ({"max_batch": 0}, {"request_timeout_s": -1.0}, {"api_key": ""}):
        with pytest.raises(ParameterError) as info:
            ServiceConfig(**bad)  # type: ignore[arg-type]
        assert info.value.parameter == next(iter(bad))
    assert main(["serve", "/nonexistent/index"]) == 1
    assert "neither a graphrecall SQLite store nor a saved index" in capsys.readouterr().err
    assert main(["serve", "/nonexistent/index", "--max-batch", "0"]) == 1
    assert "max_batch" in capsys.readouterr().err


def test_batch_key_json_is_canonical() -> None:
    """Equal parameters in any key order give one batch key, and the batcher reads the
    same values back (ints over 64 bits through the stdlib's writer)."""
    from graphrecall.service.bodies import canonical

    a = canonical({"top_k": 10, "anchors": [1, 2], "profile": {"b": 1.5, "a": None}})
    b = canonical({"profile": {"a": None, "b": 1.5}, "anchors": [1, 2], "top_k": 10})
    assert a == b
    assert json.loads(a) == {"anchors": [1, 2], "profile": {"a": None, "b": 1.5}, "top_k": 10}
    assert json.loads(canonical({"k": 10**30})) == {"k": 10**30}


def test_stack_vectors() -> None:
    """A batch's vectors as one (n, d) float32 array; one vector as a view of itself."""
    import numpy as np
    from graphrecall.service.batcher import stack_vectors

    v = np.arange(4, dtype=np.float32)
    one = stack_vectors([v])
    assert one is not None and one.shape == (1, 4) and np.shares_memory(one, v)
    two = stack_vectors([v, v + 1])
    assert two is not None and two.shape == (2, 4) and two.dtype == np.float32
    assert stack_vectors([]) is None
