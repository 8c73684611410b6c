"""The public retrieval signatures are typed: a misspelt or mistyped parameter fails in the
type checker, not only at run time (mypy --strict run on a snippet)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SNIPPET = """
from graphrecall import ChunkBoost, GraphRAG, KnowledgeGraph

def use(g: KnowledgeGraph, rag: GraphRAG) -> None:
    g.spread(["a"], max_hopz=2)
    g.graph_recall(["a"], top_k="x")
    rag.retrieve("q", recipe="chunk_boost", kk=3)
    rag.retrieve("q", recipe=ChunkBoost(kk=3))
    g.spread(["a"], max_hops=2, now=0)
    rag.retrieve("q", recipe=ChunkBoost(k=3))
"""


def test_typos_fail_in_the_type_checker(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    src = tmp_path / "use.py"
    src.write_text(textwrap.dedent(SNIPPET))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(src),
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    errors = sorted(int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line)
    # Lines 5-8 of the snippet are the four mistakes; the correct calls after them pass.
    assert errors == [5, 6, 7, 8], out
