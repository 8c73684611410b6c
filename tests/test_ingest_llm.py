"""The LLM extractor hook: :class:`OpenAIExtractor` against a local OpenAI-compatible server
that replays the recorded-shape responses of ``tests/data/llm/`` (no network), with faults
injected on request: 429 with Retry-After, 500, a reply slower than the client's timeout,
malformed JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from graphrecall.ingest import (
    Extraction,
    Extractor,
    ExtractorError,
    IngestReport,
    OfflineExtractor,
    OpenAIExtractor,
    ingest,
)
from graphrecall.ingest.prompts import parse_entities, parse_triples

DATA = Path(__file__).parent / "data" / "llm"
DOCS = [json.loads(line) for line in (DATA / "documents.jsonl").read_text().splitlines()]
RESPONSES = {p.name[: -len(".json")]: json.loads(p.read_text()) for p in DATA.glob("responses/*")}
ERRORS = {p.stem: json.loads(p.read_text()) for p in DATA.glob("errors/*")}
#: Client timeout in the timeout test; the server holds that reply until released.
CLIENT_TIMEOUT = 0.3


class Replay:
    """The server's state: the recorded answers, faults to inject, what it saw."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.faults: dict[str, list[str]] = {}  # "<doc>.<step>" or "*" -> faults, in order
        self.inflight = 0
        self.max_inflight = 0
        self.barrier: threading.Barrier | None = None
        self.barrier_broken = False
        self.release = threading.Event()

    def route(self, body: dict[str, Any]) -> str:
        step = "openie" if "triples" in body["messages"][0]["content"] else "ner"
        last = body["messages"][-1]["content"]
        for d in DOCS:
            if d["text"][:40] in last:
                return f"{d['id']}.{step}"
        return f"generic.{step}"

    def next_fault(self, key: str) -> str | None:
        with self.lock:
            for k in (key, "*"):
                if self.faults.get(k):
                    return self.faults[k].pop(0)
        return None


def _generic(key: str) -> dict[str, Any]:
    """A valid answer for a passage that has no recorded one."""
    base = json.loads(json.dumps(RESPONSES["warsaw.ner"]))
    content = '{"named_entities": []}' if key.endswith("ner") else '{"triples": []}'
    base["choices"][0]["message"]["content"] = content
    base["usage"] = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    return base


def _handler(state: Replay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)
            except OSError:
                pass  # the client gave up (the timeout fault)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append(body)
                state.headers.append(dict(self.headers))
                state.inflight += 1
                state.max_inflight = max(state.max_inflight, state.inflight)
            try:
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if state.barrier is not None:
                    try:
                        state.barrier.wait()
                    except threading.BrokenBarrierError:
                        state.barrier_broken = True
                key = state.route(body)
                fault = state.next_fault(key)
                if fault == "429":
                    self._send(429, ERRORS["rate_limit"], {"Retry-After": "7"})
                elif fault == "429-long":
                    self._send(429, ERRORS["rate_limit"], {"Retry-After": "3600"})
                elif fault == "500":
                    self._send(500, ERRORS["server_error"])
                elif fault == "401":
                    self._send(401, ERRORS["invalid_api_key"])
                else:
                    if fault == "timeout":
                        state.release.wait(10)  # past the client's timeout
                    self._send(200, RESPONSES.get(key) or _generic(key))
            finally:
                with state.lock:
                    state.inflight -= 1

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, Replay]]:
    state = Replay()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join()


def _extractor(url: str, cache_dir: Path, sleeps: list[float], **kw: Any) -> OpenAIExtractor:
    kw.setdefault("max_concurrency", 2)
    return OpenAIExtractor(
        "gpt-4o-mini",
        base_url=url,
        api_key="sk-test",
        cache_dir=cache_dir,
        backoff=0.01,
        sleep=sleeps.append,
        seed=1,
        **kw,
    )


def _tokens(kind: str) -> int:
    return sum(r["usage"][kind] for r in RESPONSES.values())


def _facts(tables: Any) -> set[tuple[str, str, str]]:
    names = dict(zip(tables.entities["id"].tolist(), tables.entities["name"], strict=True))
    return {
        (names[s], p, names[o])
        for s, p, o in zip(
            tables.facts["subject"].tolist(),
            tables.facts["predicate"],
            tables.facts["object"],
            strict=True,
        )
        if p not in ("co_occurs", "mentions")
    }


def test_ingest_with_faults_then_cached(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, state = server
    state.faults = {"pierre.ner": ["429"], "warsaw.openie": ["500"], "becquerel.ner": ["timeout"]}
    sleeps: list[float] = []
    report = IngestReport()
    with _extractor(url, tmp_path / "cache", sleeps, timeout=CLIENT_TIMEOUT) as ex:
        tables = ingest(DOCS, extractor=ex, report=report)
    checked, check = tables.check()
    assert check.ok
    # 8 answers, plus the 429, the 500 and the timed-out request.
    assert len(state.requests) == 11
    u = report.usage
    assert (u.requests, u.cached, u.retries) == (10, 0, 3)
    assert u.prompt_tokens == _tokens("prompt_tokens")
    assert u.completion_tokens == _tokens("completion_tokens")
    assert (u.malformed, u.dropped) == (1, 1)
    assert ex.usage == u
    # Retry-After is honoured; the other two waits are the jittered backoff.
    assert sorted(sleeps)[-1] == 7.0
    assert len(sleeps) == 3 and all(0.005 <= s <= 0.01 for s in sorted(sleeps)[:2])
    [(where, why)] = report.skipped["extraction"]
    assert where == "chunk 3" and "OpenIE" in why and "finish_reason 'length'" in why
    facts = _facts(checked)
    assert {
        ("Pierre Curie", "married", "Marie Curie"),
        ("Marie Curie", "born in", "Warsaw"),
        ("Warsaw", "capital of", "Poland"),  # read from a code fence
        ("Henri Becquerel", "shared", "1903 Nobel Prize in Physics"),
    } <= facts
    assert not any(p == "colleague of" for _, p, _ in facts)  # the two-item triple
    names = {n.casefold() for n in checked.entities["name"]}
    assert {"radioactivity", "university of paris"} <= names  # NER entities
    # The second run reads every answer from the cache: the server sees no request.
    state.requests.clear()
    report2 = IngestReport()
    with _extractor(url, tmp_path / "cache", sleeps) as ex2:
        tables2 = ingest(DOCS, extractor=ex2, report=report2)
    assert state.requests == []
    assert report2.usage.cached == 8
    assert (report2.usage.requests, report2.usage.total_tokens) == (0, 0)
    assert report2.skipped == report.skipped
    assert _facts(tables2.check()[0]) == facts


def test_requests_carry_the_prompts(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, state = server
    with _extractor(url, tmp_path, [], cache=False) as ex:
        [e] = ex.extract([f"{DOCS[0]['title']}\n{DOCS[0]['text']}"])
    assert e.entities[0] == "Marie Curie" and e.problems == ()
    ner, openie = state.requests
    assert [m["role"] for m in ner["messages"]] == ["system", "user", "assistant", "user"]
    assert json.loads(ner["messages"][2]["content"])["named_entities"]
    assert json.loads(openie["messages"][2]["content"])["triples"]
    # OpenIE is conditioned on the NER answer.
    assert '"named_entities": ["Marie Curie", "Warsaw"' in openie["messages"][3]["content"]
    assert ner["model"] == "gpt-4o-mini" and ner["temperature"] == 0.0
    assert state.headers[0]["Authorization"] == "Bearer sk-test"


def test_concurrency_bound(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, state = server
    # The first three requests meet at a barrier: the test fails unless three are in
    # flight together; the pool must never have a fourth.
    state.barrier = threading.Barrier(3, timeout=10)
    texts = [f"Passage {i} names Oslo and Bergen." for i in range(9)]
    with _extractor(url, tmp_path, [], cache=False, max_concurrency=3) as ex:
        out = ex.extract(texts)
    assert len(out) == 9 and all(isinstance(e, Extraction) for e in out)
    assert not state.barrier_broken
    assert state.max_inflight == 3
    assert ex.usage.requests == 18 and ex.usage.prompt_tokens == 180


def test_refused_request_fails_at_once(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, state = server
    state.faults = {"*": ["401"]}
    sleeps: list[float] = []
    with _extractor(url, tmp_path, sleeps) as ex, pytest.raises(ExtractorError) as info:
        ex.extract(["Oslo is in Norway."])
    assert info.value.kind == "http_status" and info.value.ctx["status"] == 401
    assert "Incorrect API key" in str(info.value)
    assert sleeps == [] and len(state.requests) == 1


def test_retries_exhausted(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, state = server
    state.faults = {"*": ["500"] * 10}
    sleeps: list[float] = []
    with _extractor(url, tmp_path, sleeps, max_retries=3) as ex, pytest.raises(ExtractorError) as e:
        ex.extract(["Oslo is in Norway."])
    assert e.value.kind == "retries_exhausted" and "4 attempts" in str(e.value)
    assert len(state.requests) == 4 and len(sleeps) == 3
    # Exponential: each wait in [0.5, 1] of 0.01 * 2**attempt.
    for attempt, s in enumerate(sleeps):
        assert 0.005 * 2**attempt <= s <= 0.01 * 2**attempt


def test_retry_after_past_the_limit(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, state = server
    state.faults = {"*": ["429-long"]}
    with _extractor(url, tmp_path, []) as ex, pytest.raises(ExtractorError) as e:
        ex.extract(["Oslo is in Norway."])
    assert e.value.kind == "retries_exhausted" and "3600" in str(e.value)
    assert "Rate limit reached" in str(e.value)


def test_strict_malformed(server: tuple[str, Replay], tmp_path: Path) -> None:
    url, _ = server
    doc = DOCS[3]
    with _extractor(url, tmp_path, [], strict=True) as ex, pytest.raises(ExtractorError) as e:
        ex.extract([f"{doc['title']}\n{doc['text']}"])
    assert e.value.kind == "malformed_output" and e.value.ctx["step"] == "OpenIE"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"named_entities": ["A", "B"]}', ["A", "B"]),
        ('```json\n{"named_entities": ["A"]}\n```', ["A"]),
        ('Sure! {"named_entities": ["A", 3, "", "A"]} Done. {"x": 1}', ["A"]),
        ('{"note": "x"} then {"named_entities": ["B"]}', ["B"]),
    ],
)
def test_parse_entities(content: str, expected: list[str]) -> None:
    assert parse_entities(content)[0] == expected


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"named_entities": ["A"', "not valid JSON"),
        ("no JSON here", "no JSON object"),
        ('{"entities": ["A"]}', "without 'named_entities'"),
        ('{"named_entities": "A"}', "not a list"),
    ],
)
def test_parse_entities_malformed(content: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_entities(content)


def test_parse_triples() -> None:
    triples, dropped = parse_triples(
        '{"triples": [["A", "r", "B"], ["A", "r"], ["A", " ", "B"], ["A ", "is  in", "C"]]}'
    )
    assert triples == [("A", "r", "B"), ("A", "is in", "C")] and dropped == 2


def test_protocol() -> None:
    assert isinstance(OfflineExtractor(), Extractor)
    [e] = OfflineExtractor().extract(["Ada Lovelace met Charles Babbage. Babbage left."])
    assert e.entities == ("Ada Lovelace", "Charles Babbage", "Babbage")
    assert e.triples == (("Ada Lovelace", "co_occurs", "Charles Babbage"),)
    # Naming the offline extractor changes nothing: its graph is built anyway.
    docs = ["Ada Lovelace met Charles Babbage in London."]
    a, b = ingest(docs), ingest(docs, extractor=OfflineExtractor())
    assert list(a.facts["predicate"]) == list(b.facts["predicate"])
    assert a.mentions["count"].tolist() == b.mentions["count"].tolist()


def test_cli(
    server: tuple[str, Replay], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphrecall.cli import main

    url, state = server
    docs = tmp_path / "docs.jsonl"
    docs.write_text((DATA / "documents.jsonl").read_text())
    args = ["index", str(docs), "--from", "text", "--extractor", "openai"]
    llm = ["--llm-base-url", url, "--llm-model", "gpt-4o-mini", "--llm-cache", str(tmp_path / "c")]
    assert main([*args[:2], str(tmp_path / "s1"), *args[2:], *llm]) == 0
    err = capsys.readouterr().err
    assert "llm gpt-4o-mini: 8 requests (0 cached" in err
    assert f"{_tokens('prompt_tokens'):,} prompt" in err
    assert len(state.requests) == 8
    assert main([*args[:2], str(tmp_path / "s2"), *args[2:], *llm]) == 0
    assert "0 requests (8 cached" in capsys.readouterr().err
    assert len(state.requests) == 8
    # The extractor applies to text sources only.
    cmd = ["index", str(tmp_path / "s1"), str(tmp_path / "s3"), "--from", "parquet"]
    assert main([*cmd, "--extractor", "openai", *llm]) == 1
    assert "--extractor" in capsys.readouterr().err
