"""Text ingestion's bad inputs: each one a precise error or a counted skip, never silently
lost; a killed ``graphrecall index --from text`` run resumes without redoing finished work."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from graphrecall import GraphIndex
from graphrecall import embed_bulk as eb
from graphrecall.cli import main
from graphrecall.errors import DataError
from graphrecall.indexer import index
from graphrecall.ingest import IngestReport, ReadReport, ingest, read_documents


def names(tables) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(str(n) for n in tables.entities["name"])


def documents(tables) -> list[str]:  # type: ignore[no-untyped-def]
    """The names of the files (or ``file:line``) the chunks come from."""
    return sorted({Path(str(m["document"])).name for m in tables.chunks["metadata"]})


def test_jsonl_bad_utf8_line_loses_only_that_line(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    good = b'{"text": "Oslo is cold."}\n'
    p.write_bytes(good + b'{"text": "Bergen \xff wet."}\n{"text": "Tromso is far."}\n')
    with pytest.raises(DataError) as err:
        ingest(p)
    assert (err.value.kind, err.value.row) == ("invalid_utf8", 2)
    assert err.value.ctx["offset"] == len(good) + len(b'{"text": "Bergen ')
    rep = IngestReport()
    t = ingest(p, on_bad="skip", report=rep)
    assert names(t) == ["Oslo", "Tromso"]
    assert [w for w, _ in rep.skipped["invalid_utf8"]] == [f"{p}:2"]


def test_jsonl_lines_split_at_newline_only(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    rec = {"text": "Oslo is cold.\u2028Bergen is wet."}
    p.write_text(json.dumps(rec, ensure_ascii=False) + "\r\n" + '{"text": "Rome."}\n')
    docs = list(read_documents(p))
    assert [d.text for d in docs] == [rec["text"], "Rome."]
    assert [d.id for d in docs] == [f"{p}:1", f"{p}:2"]


def test_jsonl_binary_file(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a"}\n\x00\x01')
    with pytest.raises(DataError) as err:
        ingest(p)
    assert err.value.kind == "binary"


def test_parquet_without_text_column_among_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Oslo is cold.")
    pd.DataFrame({"body": ["x", "y"]}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError) as err:
        ingest(tmp_path)
    assert (err.value.kind, err.value.column, err.value.ctx["rows"]) == (
        "missing_column",
        "text",
        2,
    )
    rep = IngestReport()
    t = ingest(tmp_path, on_bad="skip", report=rep)
    assert documents(t) == ["a.txt"]
    ((where, why),) = rep.skipped["missing_column"]
    assert where.endswith("b.parquet") and "2 rows not read" in why
    # A DataFrame given directly is the whole input: always an error.
    with pytest.raises(DataError):
        ingest(pd.DataFrame({"body": ["x"]}), on_bad="skip")


def test_hidden_files_and_folders_are_counted(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Oslo is cold.")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x01\x02")
    objects = tmp_path / ".git" / "objects"
    objects.mkdir(parents=True)
    for i in range(3):
        (objects / f"{i:02x}").write_bytes(b"x\x00\x9c")
    rep = IngestReport()
    t = ingest(tmp_path, report=rep)  # no error: hidden files are not documents
    assert documents(t) == ["a.txt"] and rep.documents == 1
    assert sorted(Path(w).name for w, _ in rep.skipped["hidden"]) == [".DS_Store", ".git"]


def test_dangling_link_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Oslo is cold.")
    (tmp_path / "b.txt").symlink_to(tmp_path / "gone.txt")
    with pytest.raises(DataError) as err:
        ingest(tmp_path)
    assert err.value.kind == "unreadable" and "b.txt" in str(err.value)
    rep = IngestReport()
    assert documents(ingest(tmp_path, on_bad="skip", report=rep)) == ["a.txt"]
    assert len(rep.skipped["unreadable"]) == 1


def test_nothing_is_silently_lost(tmp_path: Path) -> None:
    """Every input is either a document or a counted skip."""
    d = tmp_path / "docs"
    d.mkdir()
    (d / "01.txt").write_text("Oslo is cold.")
    (d / "02.txt").write_text("  \n\t ")
    (d / "03.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (d / "04.txt").write_bytes(b"Z\xfcrich")
    (d / "05.txt").write_text("Word " * 300)
    lines = [
        '{"text": "Bergen is wet."}',
        "{oops",
        '{"body": "no text column"}',
        '{"text": 7}',
        '{"text": ""}',
        "[1, 2]",
        '{"id": "r7", "text": "Rome is old."}',
        '{"id": "r7", "text": "Rome again."}',
    ]
    (d / "06.jsonl").write_text("\n".join(lines) + "\n")
    rep = IngestReport()
    t = ingest(d, on_bad="skip", report=rep, max_chars=1000)
    counts = {k: len(v) for k, v in rep.skipped.items()}
    assert counts == {
        "empty": 2,
        "binary": 1,
        "invalid_utf8": 1,
        "too_large": 1,
        "invalid_json": 1,
        "missing_column": 1,
        "invalid_value": 2,
        "duplicate": 1,
    }
    assert documents(t) == ["01.txt", "06.jsonl:1", "r7"]
    assert rep.documents + rep.n_skipped == 4 + 1 + len(lines)  # 5 files, 8 lines
    rr = ReadReport()
    assert len(list(read_documents(d, on_bad="skip", report=rr, max_chars=1000))) == rr.read


def test_cli_reports_every_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.txt").write_text("Oslo is cold.")
    (d / "b.txt").write_bytes(b"\xff\xfe")
    (d / ".hidden").write_text("Bergen is wet.")
    assert main(["index", str(d), str(tmp_path / "snap"), "--from", "text"]) != 0
    assert "not UTF-8 at byte 0" in capsys.readouterr().err
    code = main(["index", str(d), str(tmp_path / "snap"), "--from", "text", "--on-bad", "skip"])
    assert code == 0
    err = capsys.readouterr().err
    assert "1 documents, 1 chunks; skipped documents: 1 hidden, 1 invalid_utf8" in err


def test_a_50_mb_document(tmp_path: Path) -> None:
    """Over the default ``max_chars``: a precise error, or a counted skip; the read stops
    at the size check (no chunking), so this stays fast."""
    p = tmp_path / "big.jsonl"
    p.write_text(json.dumps({"text": "Oslo is cold. " * 3_600_000}) + '\n{"text": "Rome."}\n')
    with pytest.raises(DataError) as err:
        ingest(p)
    assert (err.value.kind, err.value.row) == ("too_large", 1)
    assert err.value.ctx == {"chars": 50_400_000, "limit": 10_000_000}
    rep = IngestReport()
    assert names(ingest(p, on_bad="skip", report=rep)) == ["Rome"]
    assert [w for w, _ in rep.skipped["too_large"]] == [f"{p}:1"]


class HashEmbedder:
    """Deterministic vectors from a hash of each text; counts the texts it embeds and
    fails (as a killed run would stop) after ``fail_after`` batches."""

    model_name = "hash-embedder"
    dim = 8

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls = 0
        self.texts: list[str] = []
        self.fail_after = fail_after
        self._lock = threading.Lock()

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise RuntimeError("killed")
            self.calls += 1
            self.texts.extend(texts)
        return np.stack([self._vec(t) for t in texts]).reshape(len(texts), self.dim)


def test_killed_text_index_run_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eb, "BATCH_TOKENS", 20)
    d = tmp_path / "docs"
    d.mkdir()
    cities = ["Oslo", "Bergen", "Rome", "Paris", "Lyon", "Milan", "Turin", "Porto", "Braga"]
    for i, c in enumerate(cities):
        other = cities[(i + 1) % len(cities)]
        (d / f"{i}.txt").write_text(f"{c} is near {other}. {c} has a Grand Museum of {c}.")
    out = tmp_path / "idx"
    killed = HashEmbedder(fail_after=3)
    with pytest.raises(RuntimeError, match="killed"):
        index(d, out, source_kind="text", target="index", embedder=killed, embed_workers=1)
    assert (tmp_path / "idx.embed-work").is_dir() and not out.exists()
    again = HashEmbedder()
    index(d, out, source_kind="text", target="index", embedder=again, embed_workers=1)
    assert not (tmp_path / "idx.embed-work").exists()
    assert killed.texts and set(again.texts).isdisjoint(killed.texts)
    one_shot = HashEmbedder()
    out2 = tmp_path / "idx2"
    index(d, out2, source_kind="text", target="index", embedder=one_shot, embed_workers=1)
    assert len(again.texts) + len(killed.texts) == len(one_shot.texts)
    a = GraphIndex.load(out, embedder=HashEmbedder())
    b = GraphIndex.load(out2, embedder=HashEmbedder())
    for kind in ("entity", "chunk"):
        va, vb = a.vectors_of(kind)[0], b.vectors_of(kind)[0]
        assert va is not None and vb is not None
        assert va.tobytes() == vb.tobytes()
