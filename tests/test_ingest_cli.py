"""``graphrecall index DOCS OUT --from text``: documents to a snapshot or a saved index."""

from __future__ import annotations

from pathlib import Path

import pytest
from graphrecall.cli import main


def test_index_from_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Ada Lovelace\n\nAda Lovelace worked with Charles Babbage.\n")
    (docs / "b.txt").write_text("Charles Babbage designed the Analytical Engine.\n")
    (docs / "c.txt").write_text("   \n")
    assert main(["index", str(docs), str(tmp_path / "snap"), "--from", "text"]) == 0
    out = capsys.readouterr()
    assert "2 documents, 2 chunks; skipped documents: 1 empty" in out.err
    assert (tmp_path / "snap").exists()
    code = main(
        [
            "index",
            str(docs),
            str(tmp_path / "idx"),
            "--from",
            "text",
            "--to",
            "index",
            "--no-embedder",
        ]
    )
    assert code == 0


def test_index_from_text_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text('{"text": "Oslo is cold."}\n{oops\n')
    assert main(["index", str(p), str(tmp_path / "snap"), "--from", "text"]) != 0
    assert "not JSON" in capsys.readouterr().err
    assert (
        main(["index", str(p), str(tmp_path / "snap"), "--from", "text", "--on-bad", "skip"]) == 0
    )
    assert "1 invalid_json" in capsys.readouterr().err
