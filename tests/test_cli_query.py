"""``graphrecall query`` against the SQLite store the demo writes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from graphrecall.cli import main

NOW = "1767225600"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from graphrecall.demo import demo

    path = tmp_path_factory.mktemp("q") / "demo.sqlite"
    assert demo(out=io.StringIO(), db=str(path)) == 0
    return path


def test_query_prints_the_recipes_context_block(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["query", str(store), "What is JACQ?", "--recipe", "spreading_activation"]
    assert main([*args, "--tenant", "alice", "--now", NOW]) == 0
    out = capsys.readouterr().out
    assert "### 💡 CONTEXT: JACQ Project" in out and "- uses: DuckDB" in out


def test_query_json_and_explain(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = [
        "query",
        str(store),
        "How is Ned Stark related to Robert Baratheon?",
        "--tenant",
        "stark",
    ]
    assert main([*base, "--json", "--now", NOW]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recipe"] == "graph_recall"  # chosen by the router ("related to")
    assert doc["facts"] and all(f["subject"] for f in doc["facts"])
    assert main([*base, "--explain", "--now", NOW]) == 0
    assert "anchors:" in capsys.readouterr().out


def test_query_errors_are_clear(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", str(store), "x", "--recipe", "nope", "--tenant", "alice"]) == 1
    assert "unknown recipe 'nope'" in capsys.readouterr().err
    assert main(["query", str(store.parent / "missing.sqlite"), "x"]) == 1
    assert "neither a graphrecall SQLite store nor a saved index" in capsys.readouterr().err
    assert main(["query", str(store), "x", "--tenant", "nobody", "--now", NOW]) == 1
    assert "nobody" in capsys.readouterr().err
    assert main(["query", str(store), "x", "--now", NOW]) == 1  # several tenants: name one
    assert "tenant" in capsys.readouterr().err
