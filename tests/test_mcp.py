"""``graphrecall mcp INDEX`` through the MCP SDK's own client: the server runs as a
subprocess on a small saved index built here, over stdio and over streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from graphrecall import GraphRAG
from graphrecall.demo import demo_data, demo_tables
from mcp import Client, StdioServerParameters

NOW = 1_767_225_600
SRC = str(Path(__file__).resolve().parents[1] / "python")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GraphRAG]:
    rag = GraphRAG.from_tables(demo_tables(demo_data()))
    path = tmp_path_factory.mktemp("mcp") / "index"
    rag.save(path)
    return path, rag


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC, env.get("PYTHONPATH")]))
    return env


def _command(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "graphrecall.cli", "mcp", str(path), *extra]


async def _session(client: Client, rag: GraphRAG) -> None:
    """The checks every transport passes: tools and schemas, answers equal to the API's,
    and errors as tool errors."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"retrieve", "context", "explain"}
    schema = tools["retrieve"].input_schema["properties"]
    assert schema["k"]["maximum"] == 1000 and schema["k"]["type"] == "integer"
    assert "ppr" in schema["recipe"]["anyOf"][0]["enum"]
    assert tools["retrieve"].output_schema is not None

    q, args = "What is JACQ?", {"tenant": "alice", "recipe": "spreading_activation", "now": NOW}
    want = rag.retrieve(q, **args)  # type: ignore[arg-type]
    got = await client.call_tool("retrieve", {"query": q, "k": 3, **args})
    assert not got.is_error
    out: dict[str, Any] = got.structured_content or {}
    assert out["recipe"] == "spreading_activation" and out["tenant"] == "alice"
    assert [i["metadata"]["id"] for i in out["items"]] == want.fact_ids[:3]
    assert [i["score"] for i in out["items"]] == [f.score for f in want.facts[:3]]
    assert out["items"][0]["text"] == "JACQ Project uses DuckDB"
    assert out["items"][0]["metadata"]["path"][0]["entity"] == "jacq"

    got = await client.call_tool("context", {"query": q, "budget": 200, **args})
    block = rag.context(want, budget=200)
    assert (got.structured_content or {})["text"] == block.text
    got = await client.call_tool("explain", {"query": q, **args})
    text = got.content[0].text  # type: ignore[union-attr]
    assert _untimed(text) == _untimed(rag.explain(want)) and "anchors:" in text

    bad = await client.call_tool("retrieve", {"query": q, "tenant": "nobody"})
    assert bad.is_error and "UnknownTenantError" in bad.content[0].text  # type: ignore[union-attr]
    bad = await client.call_tool("retrieve", {"query": q, "tenant": "alice", "k": 10**12})
    assert bad.is_error and "less than or equal to 1000" in bad.content[0].text  # type: ignore[union-attr]
    bad = await client.call_tool("retrieve", {"query": q, "tenant": "alice", "recipe": "nope"})
    assert bad.is_error and "ParameterError" in bad.content[0].text  # type: ignore[union-attr]
    # The server keeps serving after errors.
    assert not (await client.call_tool("retrieve", {"query": q, **args})).is_error


def _untimed(text: str) -> list[str]:
    """An explanation without its timings line."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("timings")]


def test_stdio(index: tuple[Path, GraphRAG]) -> None:
    path, rag = index
    cmd = _command(path)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=_env())

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _session(client, rag)

    asyncio.run(main())


def test_stdio_pinned_tenant(index: tuple[Path, GraphRAG]) -> None:
    path, _ = index
    cmd = _command(path, "--tenant", "stark")
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=_env())

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            ok = await client.call_tool("retrieve", {"query": "Who is Ned Stark?", "k": 2})
            assert not ok.is_error and (ok.structured_content or {})["tenant"] == "stark"
            bad = await client.call_tool("retrieve", {"query": "x", "tenant": "alice"})
            assert bad.is_error and "stark" in bad.content[0].text  # type: ignore[union-attr]

    asyncio.run(main())


def test_streamable_http(index: tuple[Path, GraphRAG]) -> None:
    path, rag = index
    proc = subprocess.Popen(
        _command(path, "--transport", "http", "--port", "0"),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = None
        assert proc.stderr is not None
        for line in proc.stderr:  # uvicorn names the bound port once it listens
            m = re.search(r"running on (http://\S+)", line, re.IGNORECASE)
            if m:
                url = m.group(1) + "/mcp"
                break
        assert url is not None, "the server never said it was listening"

        async def main() -> None:
            async with Client(url, read_timeout_seconds=120) as client:
                await _session(client, rag)

        asyncio.run(main())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


def test_cli_refuses_a_missing_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from graphrecall.cli import main

    assert main(["mcp", str(tmp_path / "missing")]) == 1
    assert "neither a saved index" in capsys.readouterr().err
