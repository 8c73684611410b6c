"""Bit flips in a SQLite store: every flip either is reported as corruption or changes
nothing that is read (a flip in free space or in bytes SQLite does not use)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall.storage import CorruptStoreError, EmbeddingSet, GraphTables
from graphrecall.storage.sqlite import SQLiteStore

FLIPS = 150


def _tables(n: int = 300) -> GraphTables:
    """A graph over several pages of every table, using most column types."""
    rng = np.random.default_rng(3)
    return GraphTables(
        entities={
            "id": [f"e{i}" for i in range(n)],
            "tenant": [i % 2 for i in range(n)],
            "name": [f"Entity {i} " + "é✓😀\u2028"[: i % 5] for i in range(n)],
            "created_at": [1_700_000_000 + i for i in range(n)],
        },
        facts={
            "id": list(range(2 * n)),
            "subject": [f"e{i % n}" for i in range(2 * n)],
            # the object has the subject's tenant (its parity); every fourth is a literal
            "object": [None if i % 4 == 0 else f"e{(7 * i + 2) % n}" for i in range(2 * n)],
            "object_value": [i * 0.5 if i % 4 == 0 else None for i in range(2 * n)],
            "predicate": [f"p{i % 5}" for i in range(2 * n)],
            "confidence": rng.random(2 * n).round(3).tolist(),
            "access_count": [i % 9 for i in range(2 * n)],
        },
        chunks={
            "id": [f"c{i}" for i in range(n // 3)],
            "tenant": [i % 2 for i in range(n // 3)],
            "text": [f"chunk {i} " * 8 for i in range(n // 3)],
            "tags": [["a", f"t{i}"] for i in range(n // 3)],
        },
        mentions={
            "chunk": [f"c{i // 3}" for i in range(n)],
            # chunk j (tenant j % 2) mentions three entities of its tenant
            "entity": [f"e{(6 * (i // 3) + 2 * (i % 3) + (i // 3) % 2) % n}" for i in range(n)],
        },
        embeddings=[
            EmbeddingSet(
                "entity",
                np.array([f"e{i}" for i in range(n)], dtype=object),
                rng.standard_normal((n, 8)).astype(np.float32),
                "m",
            )
        ],
    )


def _observed(tables: GraphTables) -> str:
    """Everything a read returns, as one comparable text (NaN-safe)."""
    out: dict[str, Any] = {}
    for name in ("entities", "facts", "chunks", "mentions", "aliases"):
        cols = tables.table(name)
        out[name] = (
            None if cols is None else {c: (str(a.dtype), a.tolist()) for c, a in cols.items()}
        )
    out["embeddings"] = [
        (e.kind, e.model, e.ids.tolist(), e.vectors.tobytes()) for e in tables.embeddings
    ]
    out["vocabularies"] = (tables.statuses, tables.sources)
    return repr(out)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    path = tmp_path_factory.mktemp("flips") / "good.db"
    tables = _tables()
    checked, _ = tables.check()
    with SQLiteStore.create(path) as s:
        s.write(checked)
        want = _observed(s.read())
    assert not Path(f"{path}-wal").exists()  # closed: everything is in the main file
    return path.read_bytes(), want


def test_every_single_bit_flip_is_detected_or_harmless(
    original: tuple[bytes, str], tmp_path: Path
) -> None:
    data, want = original
    rng = np.random.default_rng(17)
    bad = tmp_path / "bad.db"
    outcomes = {"corrupt": 0, "same": 0}
    for k in range(FLIPS):
        bit = int(rng.integers(0, len(data) * 8))
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        for q in (bad, Path(f"{bad}-wal"), Path(f"{bad}-shm")):
            q.unlink(missing_ok=True)
        bad.write_bytes(bytes(flipped))
        try:
            with SQLiteStore.open(bad) as s:
                got = _observed(s.read())
        except CorruptStoreError:
            outcomes["corrupt"] += 1
            continue
        assert got == want, f"flip {k} (byte {bit // 8}, bit {bit % 8}) loaded different data"
        outcomes["same"] += 1
    assert outcomes["corrupt"] > 0 and sum(outcomes.values()) == FLIPS, outcomes


def test_a_changed_value_names_its_table(original: tuple[bytes, str], tmp_path: Path) -> None:
    """A value changed in place (same length, so SQLite sees a valid record) is found by
    the table's checksum."""
    data, _ = original
    at = data.find(b"chunk 7 chunk 7")
    assert at > 0
    bad = tmp_path / "bad.db"
    bad.write_bytes(data[:at] + b"chunk 8" + data[at + 7 :])
    with pytest.raises(CorruptStoreError, match=r"table chunks do not match their checksum"):
        with SQLiteStore.open(bad) as s:
            s.load()
    with SQLiteStore.open(bad) as s:  # the opt-out for a file you trust reads it as it is
        chunks = s.load(verify=False).tables.chunks
        assert chunks is not None and chunks["text"][7].startswith("chunk 8 chunk 7")
