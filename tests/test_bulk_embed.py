"""Bulk embedding: order, batch plan, threads, resume after a kill, and the index hooks."""

from __future__ import annotations

import argparse
import hashlib
import io
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from graphrecall import GraphIndex
from graphrecall import embed_bulk as eb
from graphrecall.errors import ParameterError
from graphrecall.indexer import add_arguments, index

DIM = 8


class HashEmbedder:
    """Deterministic vectors from a hash of each text; counts the texts it embeds."""

    model_name = "hash-embedder"
    dim = DIM

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls = 0
        self.texts: list[str] = []
        self.fail_after = fail_after
        self._lock = threading.Lock()

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise RuntimeError("killed")
            self.calls += 1
            self.texts.extend(texts)
        return np.stack([self._vec(t) for t in texts]).reshape(len(texts), DIM)


TEXTS = [f"passage {i} " + "word " * (i * 7 % 23) for i in range(50)]


def test_order_and_bytes_match_the_sequential_path() -> None:
    emb = HashEmbedder()
    want = emb.embed_passages(TEXTS)
    for workers in (1, 3):
        got = eb.embed_bulk(HashEmbedder(), TEXTS, workers=workers, batch_tokens=40, max_batch=7)
        assert got.dtype == np.float32
        assert got.tobytes() == want.tobytes()
    assert eb.embed_bulk(emb, [], workers=2).shape == (0, DIM)


def test_batches_are_sized_by_tokens() -> None:
    plan = eb._plan(TEXTS, 40, 7)
    assert sorted(i for b in plan for i in b) == list(range(len(TEXTS)))
    for b in plan:
        tokens = sum(len(TEXTS[i]) // 4 + 1 for i in b)
        assert len(b) <= 7
        assert tokens <= 40 or len(b) == 1
    lengths = [len(TEXTS[i]) for b in plan for i in b]
    assert lengths == sorted(lengths)


def test_progress_bar_counts_texts() -> None:
    stream = io.StringIO()
    eb.embed_bulk(HashEmbedder(), TEXTS, workers=2, batch_tokens=40, progress=stream)
    assert "50/50" in stream.getvalue()


def test_a_killed_run_resumes_from_its_shards(tmp_path: Path) -> None:
    work = tmp_path / "work"
    want = HashEmbedder().embed_passages(TEXTS)
    n_batches = len(eb._plan(TEXTS, 40, 64))
    killed = HashEmbedder(fail_after=3)
    with pytest.raises(RuntimeError, match="killed"):
        eb.embed_bulk(killed, TEXTS, workers=1, batch_tokens=40, work_dir=work)
    first = set(killed.texts)
    again = HashEmbedder()
    got = eb.embed_bulk(again, TEXTS, workers=1, batch_tokens=40, work_dir=work)
    assert got.tobytes() == want.tobytes()
    assert again.calls == n_batches - 3
    assert set(again.texts) == set(TEXTS) - first
    # Other texts (or another model) never reuse these shards.
    other = HashEmbedder()
    other.model_name = "another"
    eb.embed_bulk(other, TEXTS, workers=1, batch_tokens=40, work_dir=work)
    assert other.calls == n_batches


def _source(root: Path, n: int = 30) -> Path:
    src = root / "parquet"
    src.mkdir()
    ids = list(range(1, 5))
    pq.write_table(
        pa.table({"id": ids, "name": ["Paris", "Seine", "France", "Lyon"]}),
        src / "entities.parquet",
    )
    pq.write_table(
        pa.table({"id": [10, 11], "subject": [1, 1], "object": [2, 3], "predicate": ["on", "in"]}),
        src / "facts.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": [f"c{i}" for i in range(n)],
                "text": [f"Paris text {i} " * (1 + i % 4) for i in range(n)],
            }
        ),
        src / "chunks.parquet",
    )
    return src


def test_index_run_resumes_after_a_kill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eb, "BATCH_TOKENS", 20)
    src = _source(tmp_path)
    out = tmp_path / "idx"
    work = tmp_path / "idx.embed-work"
    killed = HashEmbedder(fail_after=4)
    with pytest.raises(RuntimeError, match="killed"):
        index(src, out, target="index", embedder=killed, embed_workers=1)
    assert work.is_dir()
    again = HashEmbedder()
    index(src, out, target="index", embedder=again, embed_workers=2)
    assert not work.exists()
    assert set(again.texts).isdisjoint(killed.texts)
    one_shot = HashEmbedder()
    out2 = tmp_path / "idx2"
    index(src, out2, target="index", embedder=one_shot, embed_workers=1)
    assert len(again.texts) + len(killed.texts) == len(one_shot.texts)
    a = GraphIndex.load(out, embedder=HashEmbedder())
    b = GraphIndex.load(out2, embedder=HashEmbedder())
    for kind in ("entity", "chunk"):
        va, vb = a.vectors_of(kind)[0], b.vectors_of(kind)[0]
        assert va is not None and vb is not None
        assert va.tobytes() == vb.tobytes()


def test_embedding_model_column_survives_parquet_to_index(tmp_path: Path) -> None:
    src = tmp_path / "parquet"
    src.mkdir()
    vecs = np.eye(4, dtype=np.float32).tolist()
    pq.write_table(
        pa.table(
            {
                "id": [1, 2, 3, 4],
                "name": ["Paris", "Seine", "France", "Lyon"],
                "embedding": pa.array(vecs, type=pa.list_(pa.float32())),
                "embedding_model": ["my-model"] * 4,
            }
        ),
        src / "entities.parquet",
    )
    pq.write_table(
        pa.table({"id": [10], "subject": [1], "object": [2], "predicate": ["on"]}),
        src / "facts.parquet",
    )
    out = tmp_path / "idx"
    index(src, out, target="index", embedder=None)
    loaded: Any = GraphIndex.load(out, embedder=None)
    models = {s.kind: s.model for s in loaded.embedding_sets()}
    assert models.get("entity") == "my-model"


def test_invalid_workers_are_refused() -> None:
    with pytest.raises(ParameterError, match="workers"):
        eb.embed_bulk(HashEmbedder(), TEXTS, workers=0)


def test_the_cli_takes_embed_workers_and_shows_the_bar(tmp_path: Path) -> None:
    src = _source(tmp_path)
    err = io.StringIO()
    index(
        src,
        tmp_path / "idx",
        target="index",
        embedder=HashEmbedder(),
        embed_workers=2,
        progress=err,
    )
    assert "embed" in err.getvalue() and "/30" in err.getvalue()
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([str(src), str(tmp_path / "o"), "--embed-workers", "3"])
    assert args.embed_workers == 3
