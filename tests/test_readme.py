"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "README has no python example"
    names: dict[str, object] = {}  # one namespace: a section's examples build on each other
    for block in blocks:
        exec(compile(block, str(README), "exec"), names)


def test_demo_runs_and_prints_every_section(capsys: object) -> None:
    from graphrecall.cli import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    for heading in (
        "=== spreading_activation (seed 000)",
        "=== chunk_boost (seed 001)",
        "=== routed_hybrid (seed 002)",
        "=== hybrid_expand (seed 003)",
        "=== graph_recall (seed 004)",
        "=== ppr (seed HippoRAG)",
        "### 💡 CONTEXT: JACQ Project",
        "## Known Facts",
        "## Knowledge Graph Context",
        "## Memories",
        "=== router",
        "=== explain",
        "served from the TTL cache: True",
        "queries (pre-embedded)",
        "(stored vectors, no re-embedding)",
        "=== update: add_facts",
        "- deployed_on: a Raspberry Pi",
        "usage written back",
        "(none re-embedded)",
        "same answer: True",
    ):
        assert heading in out, heading
    # The seed's TODO: object names are resolved, never "...".
    assert "- uses: DuckDB" in out
    assert ": ...\n" not in out
