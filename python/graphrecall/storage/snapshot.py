"""Snapshots: a built graph saved to a directory and loaded back without rebuilding.

Layout of a snapshot directory (format version 1)::

    header.json      magic, format version, counts, and for every file its dtype, shape
                     and CRC-32
    <part>.npy       one numpy array per core array (CSR offsets, fact columns in position
                     order, in-adjacency, mentions)
    python.json      vocabularies (statuses, sources, predicates, tenants), string ids,
                     entity names and literal values
    <ids>.npy        integer external ids (entities / facts / chunks), when not 0..n-1

Arrays are read memory-mapped and handed to the core in one call, which copies them into its
own layout and re-checks every structural invariant (offsets, orders, the fact/position
bijection, tenants), so a snapshot that passes its checksums but is inconsistent is still
refused. The header is written last, through a rename, so a crash while saving leaves no
snapshot rather than half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .. import _core
from .._columns import IdMap, Vocab
from ..errors import DataError, ParameterError
from ..graph import KnowledgeGraph
from .errors import CorruptStoreError, NotAStoreError, SchemaVersionError

__all__ = ["FORMAT_VERSION", "MAGIC", "load_snapshot", "save_snapshot"]

MAGIC = "graphrecall-snapshot"
FORMAT_VERSION = 1
_SCALARS = ("n_predicates", "n_statuses", "n_sources")
_CHUNK = 1 << 24


def _crc(data: bytes | npt.NDArray[Any]) -> int:
    if isinstance(data, np.ndarray):
        view = memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8).data)
    else:
        view = memoryview(data)
    crc = 0
    for start in range(0, len(view), _CHUNK):
        crc = zlib.crc32(view[start : start + _CHUNK], crc)
    return crc


def _json_value(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def save_snapshot(graph: KnowledgeGraph, directory: str | os.PathLike[str]) -> Path:
    """Save ``graph`` to ``directory`` (created; an existing snapshot there is replaced).

    Returns:
        The snapshot directory.
    """
    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=target.parent))
    try:
        parts = graph._core.to_parts()
        files: dict[str, dict[str, Any]] = {}
        scalars = {k: int(parts.pop(k)) for k in _SCALARS}
        for name, arr in parts.items():
            if arr is None:
                continue
            np.save(tmp / f"{name}.npy", arr, allow_pickle=False)
            files[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "crc32": _crc(arr)}
        ids: dict[str, Any] = {}
        for kind, m in (
            ("entities", graph._entities),
            ("facts", graph._facts),
            ("chunks", graph._chunks),
        ):
            if m.kind == "identity":
                ids[kind] = {"kind": "identity", "n": len(m)}
            elif m.kind == "int":
                arr = np.ascontiguousarray(m.external, dtype=np.int64)
                np.save(tmp / f"ids_{kind}.npy", arr, allow_pickle=False)
                files[f"ids_{kind}"] = {
                    "dtype": arr.dtype.str,
                    "shape": list(arr.shape),
                    "crc32": _crc(arr),
                }
                ids[kind] = {"kind": "int", "n": len(m)}
            else:
                ids[kind] = {
                    "kind": "object",
                    "n": len(m),
                    "values": [_json_value(v) for v in m.external.tolist()],
                }
        python = {
            "vocab": {
                "statuses": list(graph.statuses.names),
                "sources": list(graph.sources.names),
                "predicates": [_json_value(v) for v in graph.predicates.names],
                "tenants": [_json_value(v) for v in graph.tenants.names],
            },
            "ids": ids,
            "entity_names": None
            if graph.entity_names is None
            else [_json_value(v) for v in graph.entity_names.tolist()],
            "object_values": None
            if graph.object_values is None
            else [_json_value(v) for v in graph.object_values.tolist()],
        }
        blob = json.dumps(python, ensure_ascii=False).encode("utf-8")
        (tmp / "python.json").write_bytes(blob)
        header = {
            "magic": MAGIC,
            "format_version": FORMAT_VERSION,
            "graphrecall_version": _core.__version__,
            "counts": {
                "entities": graph.n_entities,
                "facts": graph.n_facts,
                "chunks": graph.n_chunks,
            },
            "scalars": scalars,
            "arrays": files,
            "python": {"file": "python.json", "crc32": _crc(blob)},
        }
        (tmp / "header.json").write_text(json.dumps(header, indent=1), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _read_header(root: Path) -> dict[str, Any]:
    path = root / "header.json"
    if not path.is_file():
        raise NotAStoreError(f"{root}: not a graphrecall snapshot (no header.json)")
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptStoreError(f"{path}: unreadable snapshot header ({exc})") from None
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise NotAStoreError(f"{root}: not a graphrecall snapshot (header has no {MAGIC!r} magic)")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise SchemaVersionError(
            f"{root}: snapshot format version {version!r}; "
            f"this graphrecall reads version {FORMAT_VERSION}"
        )
    return header


def _load_array(root: Path, name: str, meta: dict[str, Any]) -> npt.NDArray[Any]:
    path = root / f"{name}.npy"
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise CorruptStoreError(f"{path}: missing from the snapshot") from None
    except (ValueError, OSError, EOFError) as exc:
        raise CorruptStoreError(f"{path}: truncated or not a numpy array ({exc})") from None
    if arr.dtype.str != meta.get("dtype") or list(arr.shape) != meta.get("shape"):
        raise CorruptStoreError(
            f"{path}: holds {arr.dtype.str}{list(arr.shape)}, the header says "
            f"{meta.get('dtype')}{meta.get('shape')}"
        )
    if _crc(arr) != meta.get("crc32"):
        raise CorruptStoreError(f"{path}: checksum mismatch (the file is corrupted)")
    out: npt.NDArray[Any] = arr
    return out


def load_snapshot(
    directory: str | os.PathLike[str], *, verify: Literal["checksums", "full"] = "checksums"
) -> KnowledgeGraph:
    """Load a snapshot saved by :func:`save_snapshot`.

    Args:
        directory: The snapshot directory.
        verify: "checksums" (default) trusts a payload whose every CRC-32 matches and checks
            only what memory safety needs (lengths, bounds, codes): the fast cold start.
            "full" also re-checks every semantic invariant (tenants, orders, that the
            in-adjacency is exactly the facts' objects), for snapshots from an untrusted
            source.

    Raises:
        NotAStoreError: The directory holds no graphrecall snapshot.
        SchemaVersionError: The snapshot's format version is unknown.
        CorruptStoreError: A file is missing, truncated, corrupted, or inconsistent.
    """
    if verify not in ("checksums", "full"):
        raise ParameterError(f"invalid parameter verify: {verify!r} is not 'checksums' or 'full'")
    root = Path(directory)
    header = _read_header(root)
    # Checksums of the files in parallel (zlib releases the GIL on large buffers).
    from concurrent.futures import ThreadPoolExecutor

    items = list(header["arrays"].items())
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        loaded = list(pool.map(lambda kv: _load_array(root, kv[0], kv[1]), items))
    arrays = {name: arr for (name, _), arr in zip(items, loaded, strict=True)}
    pyfile = root / header["python"]["file"]
    try:
        blob = pyfile.read_bytes()
    except OSError:
        raise CorruptStoreError(f"{pyfile}: missing from the snapshot") from None
    if _crc(blob) != header["python"]["crc32"]:
        raise CorruptStoreError(f"{pyfile}: checksum mismatch (the file is corrupted)")
    py = json.loads(blob.decode("utf-8"))
    core_names = [n for n in arrays if not n.startswith("ids_")]
    kwargs: dict[str, Any] = {k: int(v) for k, v in header["scalars"].items()}
    kwargs.update({n: arrays[n] for n in core_names})  # memory-mapped, copied once by the core
    try:
        core = _core.CoreGraph.from_parts(**kwargs, full_check=verify == "full")
    except (DataError, TypeError) as exc:
        raise CorruptStoreError(f"{root}: inconsistent snapshot ({exc})") from None

    def idmap(kind: str, name: str) -> IdMap:
        spec = py["ids"][kind]
        if spec["kind"] == "identity":
            return IdMap(None, int(spec["n"]), name)
        if spec["kind"] == "int":
            return IdMap(np.asarray(arrays[f"ids_{kind}"]), int(spec["n"]), name)
        return IdMap(spec["values"], int(spec["n"]), name)

    entities = idmap("entities", "entity")
    facts = idmap("facts", "fact")
    chunks = idmap("chunks", "chunk")
    if (len(entities), len(facts), len(chunks)) != (core.n_entities, core.n_facts, core.n_chunks):
        raise CorruptStoreError(f"{root}: id maps do not match the graph's sizes")
    vocab = py["vocab"]
    names = py["entity_names"]
    values = py["object_values"]
    return KnowledgeGraph(
        core,
        entities=entities,
        facts=facts,
        chunks=chunks,
        statuses=Vocab(vocab["statuses"], "status"),
        sources=Vocab(vocab["sources"], "source"),
        predicates=Vocab(vocab["predicates"], "predicate"),
        tenants=Vocab(vocab["tenants"], "tenant"),
        entity_names=None if names is None else np.array(names, dtype=object),
        object_values=None if values is None else np.array(values, dtype=object),
    )
