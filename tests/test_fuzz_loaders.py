"""Fuzzing the readers of untrusted input: snapshot directories, saved indexes, SQLite store
files and JSON rows given to ``from_records``.

Each target mutates a valid input (flipped, overwritten, inserted or cut bytes) or draws an
arbitrary one, and requires the reader to answer exactly the original or refuse with the
library's error (a :class:`~graphrecall.errors.GraphRecallError`): never a raw
``KeyError`` / ``TypeError`` / ``IndexError``, a crash, or different data.

The examples are bounded (a few seconds per target in ``pytest``, and three times as many,
new ones, under ``.ci/run``'s random profile). The long run:
``GRAPHRECALL_FUZZ_EXAMPLES=20000 GRAPHRECALL_HYPOTHESIS=random python -m pytest -q
tests/test_fuzz_loaders.py -p no:randomly``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY, examples
from graphrecall import KnowledgeGraph
from graphrecall.demo import demo_data, demo_tables
from graphrecall.embed import CallableEmbedder, EmbeddingError
from graphrecall.errors import GraphRecallError
from graphrecall.index import GraphIndex
from graphrecall.storage import SQLiteStore
from graphrecall.storage.errors import StorageError
from graphrecall.storage.snapshot import load_snapshot, save_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

_LONG = int(os.environ.get("GRAPHRECALL_FUZZ_EXAMPLES", "0"))


def _count(n: int) -> int:
    """Examples per target: ``GRAPHRECALL_FUZZ_EXAMPLES`` when set, else the profile's."""
    return _LONG or examples(n)


FUZZ = settings(PROPERTY, max_examples=_count(60))

#: Edits to a file's bytes: (kind, where, value); kind 0 xor, 1 overwrite, 2 insert, 3 cut.
EDITS = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 2**31), st.integers(1, 255)),
    min_size=1,
    max_size=4,
)


def _edit(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    out = bytearray(data)
    for kind, at, v in edits:
        i = at % (len(out) + 1)
        if kind == 0 and i < len(out):
            out[i] ^= v
        elif kind == 1 and i < len(out):
            out[i] = v
        elif kind == 2:
            out[i:i] = bytes([v])
        else:
            del out[i:]
    return bytes(out)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="graphrecall-fuzz-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_records(
        [
            {"id": "u", "tenant": "alice", "name": "User"},
            {"id": "j", "tenant": "alice", "name": "JACQ"},
            {"id": 7, "tenant": "alice", "name": "DuckDB"},
            {"id": "n", "tenant": "stark", "name": "Ned"},
        ],
        [
            {"id": "f1", "subject": "u", "object": "j", "predicate": "works_on"},
            {"id": "f2", "subject": "j", "object": 7, "predicate": "uses", "confidence": 0.8},
            {"id": 3, "subject": 7, "object": None, "object_value": "OLAP", "valid_from": 5},
        ],
        chunks=[{"id": "c1", "tenant": "alice"}, {"id": "c2", "tenant": "stark"}],
        mentions=[{"chunk": "c1", "entity": "j", "count": 2}, {"chunk": "c2", "entity": "n"}],
    )


def _fingerprint(g: KnowledgeGraph) -> Any:
    parts = g.core.to_parts()
    arrays = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in parts.items()}
    return (
        arrays,
        g.entity_ids.tolist(),
        g.fact_ids.tolist(),
        g.chunk_ids.tolist(),
        g.tenants.names,
        g.predicates.names,
        None if g.entity_names is None else g.entity_names.tolist(),
        None if g.object_values is None else g.object_values.tolist(),
    )


@pytest.fixture(scope="module")
def snapshot(workdir: Path) -> tuple[Path, list[str], Any]:
    g = _graph()
    root = save_snapshot(g, workdir / "snapshot")
    return root, sorted(p.name for p in root.iterdir()), _fingerprint(g)


@given(which=st.integers(0, 100), edits=EDITS)
@FUZZ
def test_fuzz_snapshot_files(
    snapshot: tuple[Path, list[str], Any], which: int, edits: list[tuple[int, int, int]]
) -> None:
    """Any edit of any one file of a snapshot: the same graph, or a StorageError."""
    root, names, want = snapshot
    name = names[which % len(names)]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(shutil.copytree(root, Path(tmp) / "s"))
        (copy / name).write_bytes(_edit((root / name).read_bytes(), edits))
        try:
            got = load_snapshot(copy)
        except StorageError:
            return
        assert _fingerprint(got) == want


@given(
    header=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids),
        max_leaves=12,
    ),
    key=st.sampled_from(["files", "scalars", "counts", "magic", "format_version", None]),
)
@FUZZ
def test_fuzz_snapshot_header_values(
    snapshot: tuple[Path, list[str], Any], header: Any, key: str | None
) -> None:
    """A header whose value under ``key`` (or the whole header) is any JSON value."""
    root, _, want = snapshot
    doc = json.loads((root / "header.json").read_text())
    if key is None:
        doc = header
    else:
        doc[key] = header
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(shutil.copytree(root, Path(tmp) / "s"))
        (copy / "header.json").write_text(json.dumps(doc))
        try:
            got = load_snapshot(copy)
        except StorageError:
            return
        assert _fingerprint(got) == want


def _hash_vectors(texts: list[str]) -> Any:
    """A tiny deterministic embedder: 8 numbers from each text's hash."""
    out = np.empty((len(texts), 8), dtype=np.float32)
    for i, t in enumerate(texts):
        h = hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()
        out[i] = np.frombuffer(h[:8], dtype=np.uint8).astype(np.float32) + 1.0
    return out


@pytest.fixture(scope="module")
def saved_index(workdir: Path) -> tuple[Path, CallableEmbedder, list[str], Any]:
    emb = CallableEmbedder(_hash_vectors, dim=8)
    tables = demo_tables(demo_data())
    index = GraphIndex.build(tables, embedder=emb, vector_backend="exact")
    root = index.save(workdir / "index")
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    return root, emb, names, _fingerprint(index.graph)


@given(which=st.integers(0, 1000), edits=EDITS)
@FUZZ
def test_fuzz_saved_index_files(
    saved_index: tuple[Path, CallableEmbedder, list[str], Any],
    which: int,
    edits: list[tuple[int, int, int]],
) -> None:
    """Any edit of any one file of a saved index: the same graph, or a StorageError."""
    root, emb, names, want = saved_index
    name = names[which % len(names)]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(shutil.copytree(root, Path(tmp) / "i"))
        (copy / name).write_bytes(_edit((root / name).read_bytes(), edits))
        try:
            got = GraphIndex.load(copy, embedder=emb)
        except StorageError:
            return
        assert _fingerprint(got.graph) == want


INDEX_KEYS = st.sampled_from(
    [
        "counts",
        "statuses",
        "sources",
        "tables",
        "embeddings",
        "vectors",
        "dims",
        "model",
        "vector_backend",
        "exact_below",
        "files",
    ]
)
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids),
    max_leaves=12,
)


@given(
    value=ANY_JSON,
    key=INDEX_KEYS,
    sub=st.sampled_from(["header.json", "entity-vectors/header.json"]),
    inner=st.integers(0, 100),
)
@FUZZ
def test_fuzz_saved_index_header_values(
    saved_index: tuple[Path, CallableEmbedder, list[str], Any],
    value: Any,
    key: str,
    sub: str,
    inner: int,
) -> None:
    """A saved index (or vector index) header with one value, or one entry of a table in
    it, replaced by any JSON value: the same graph, or a StorageError."""
    root, emb, _, want = saved_index
    doc = json.loads((root / sub).read_text())
    keys = sorted(doc) if sub != "header.json" else [key]
    k = keys[inner % len(keys)] if sub != "header.json" else key
    if isinstance(doc.get(k), dict) and doc[k] and inner % 2:
        entries = sorted(doc[k])
        doc[k][entries[inner % len(entries)]] = value
    else:
        doc[k] = value
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(shutil.copytree(root, Path(tmp) / "i"))
        (copy / sub).write_text(json.dumps(doc))
        try:
            got = GraphIndex.load(copy, embedder=emb)
        except StorageError:
            return
        except EmbeddingError:
            # A header naming another model cannot be told from one that model wrote: its
            # vectors are refused as another model's (the documented check), not loaded.
            if k == "model":
                return
            raise
        assert _fingerprint(got.graph) == want


@pytest.fixture(scope="module")
def sqlite_bytes(workdir: Path) -> bytes:
    path = workdir / "store.db"
    store = SQLiteStore.create(path)
    try:
        store.write(demo_tables(demo_data()))
    finally:
        store.close()
    return path.read_bytes()


@given(edits=EDITS)
@FUZZ
def test_fuzz_sqlite_store_bytes(sqlite_bytes: bytes, edits: list[tuple[int, int, int]]) -> None:
    """Any edit of a SQLite store's file: tables, or the library's error (never a raw
    ``sqlite3`` / ``KeyError`` / ``TypeError``). Which flips are detected is the SQLite
    store's own guarantee (see its tests)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        path.write_bytes(_edit(sqlite_bytes, edits))
        try:
            store = SQLiteStore.open(path)
            try:
                store.read()
            finally:
                store.close()
        except GraphRecallError:
            pass
        except sqlite3.Error as exc:  # pragma: no cover - the failure this test looks for
            raise AssertionError(f"raw sqlite3 error: {exc!r}") from exc


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(["", "\x00", "x\x00", "\ud800", "a", "b"])
)
JSON = st.recursive(
    SCALARS,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids),
    max_leaves=10,
)
KEYS = st.sampled_from(
    [
        "id",
        "subject",
        "object",
        "predicate",
        "confidence",
        "tenant",
        "name",
        "object_value",
        "valid_from",
        "valid_to",
        "status",
        "source",
        "strength",
        "access_count",
        "last_accessed",
        "sequence",
        "created_at",
    ]
)


#: A JSON file's rows: a list of objects mostly, of anything sometimes (a non-list argument is
#: a TypeError, the convention for an argument of the wrong type).
def _rows(cells: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.dictionaries(KEYS, cells, max_size=6) | JSON, max_size=5)


@given(entities=_rows(SCALARS), facts=_rows(SCALARS))
@settings(FUZZ, max_examples=_count(150))
def test_fuzz_from_records_json(entities: Any, facts: Any) -> None:
    """Arbitrary JSON rows with scalar cells: a graph, or the library's error."""
    try:
        KnowledgeGraph.from_records(entities, facts)
    except GraphRecallError:
        pass
