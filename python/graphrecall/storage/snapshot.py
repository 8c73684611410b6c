"""Snapshots: a built graph saved to a directory and loaded back without rebuilding.

A snapshot is a :mod:`graphrecall.bundle` (magic ``graphrecall-snapshot``, format version
4): ``header.json`` (counts, scalars, every file's size, CRC-32, and for arrays dtype and
shape), then::

    <part>.npy       one numpy array per core array (CSR offsets, fact columns in position
                     order, the fact id -> position inverse, in-adjacency, mentions)
    python.json      vocabularies (statuses, sources, predicates, tenants), string ids, and
                     the values of text columns that are not text (literal numbers)
    ids_<kind>.npy   integer external ids (entities / facts / chunks)
    text_<col>.txt   a text column (entity names, literal values): its strings in row order,
                     UTF-8, separated by NUL (a column with a NUL or a lone surrogate in a
                     value is kept in python.json instead, so that text round-trips exactly)
    text_<col>.npy   what each row of that column holds: 0 None, 1 the next string, 2 the
                     next value of python.json's list for the column

Arrays are read memory-mapped and handed to the core in one call, which reads them in place
(no copy first) with the GIL released, checking in the same parallel passes that write its
own layout what memory safety needs (lengths, bounds, codes, the fact/position bijection)
and, unless ``verify="trusted"``, that no link crosses tenants (``verify="full"``: also
orders and validity intervals). The stored inverse and the in-adjacency are checked against
the fact columns by multiset fingerprints (sequential passes; a mismatch is found with
probability below 1e-10 at 100M facts, at a point drawn per load), which is what keeps a
large load within a few seconds. The core builds
in a thread while this one decodes the text columns, and the checksums of all files are
computed in other threads meanwhile; a graph is returned only once every checksum matched,
so a flipped byte is always refused (as a checksum mismatch), never answered from.

Snapshots of format versions 1 to 3 are still read (version 3 has no stored inverse: the
core computes it; versions 1 and 2 keep their checksums in per-kind header tables; version 1
keeps text columns as JSON lists in python.json).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .. import _core
from ..bundle import (
    HEADER,
    BundleWriter,
    crc32,
    crc32_file,
    file_path,
    has_xxh3,
    open_array,
    read_bytes,
    read_header,
    xxh3_file,
)
from ..errors import DataError, ParameterError
from ..graph import KnowledgeGraph
from ..tables import IdMap, Vocab
from .errors import CorruptStoreError

__all__ = ["FORMAT_VERSION", "MAGIC", "load_snapshot", "save_snapshot"]

MAGIC = "graphrecall-snapshot"
FORMAT_VERSION = 4
#: The format versions this module reads.
READ_VERSIONS = (1, 2, 3, 4)
_SCALARS = ("n_predicates", "n_statuses", "n_sources")
_TEXT_COLUMNS = ("entity_names", "object_values")
_NONE, _STR, _OTHER = 0, 1, 2


def _json_value(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _text_column(values: npt.NDArray[Any] | None) -> tuple[Any, bytes | None, Any]:
    """A text column for saving: (its python.json entry, the text file's bytes or None, the
    row kinds or None). Columns with a NUL in a string stay a JSON list (version 1 form)."""
    if values is None:
        return None, None, None
    items = values.tolist()
    kinds = np.fromiter(
        (_NONE if v is None else _STR if type(v) is str else _OTHER for v in items),
        dtype=np.uint8,
        count=len(items),
    )
    strings = [v for v in items if type(v) is str]
    try:
        blob = "\x00".join(strings).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON escapes keep it exactly
        blob = None
    if blob is None or any("\x00" in v for v in strings):
        return [_json_value(v) for v in items], None, None
    others = [_json_value(v) for v in items if v is not None and type(v) is not str]
    return {"others": others, "strings": len(strings)}, blob, kinds


def _json_bytes(doc: Any) -> bytes:
    """``doc`` as UTF-8 JSON; with ASCII escapes when a string holds a lone surrogate
    (which UTF-8 cannot encode and JSON's escapes restore exactly)."""
    try:
        return json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(doc).encode("ascii")


def save_snapshot(graph: KnowledgeGraph, directory: str | os.PathLike[str]) -> Path:
    """Save ``graph`` to ``directory`` (created; an existing snapshot there is replaced).

    Args:
        graph: The graph to save.
        directory: The snapshot directory.

    Returns:
        The snapshot directory.

    Raises:
        OSError: The directory cannot be written (nothing is left behind).
    """
    with BundleWriter(directory, magic=MAGIC, version=FORMAT_VERSION, xxh3=True) as out:
        parts = graph.core.to_parts()
        scalars = {k: int(parts.pop(k)) for k in _SCALARS}
        for name, arr in parts.items():
            if arr is not None:
                out.add_array(f"{name}.npy", arr)
        ids: dict[str, Any] = {}
        for kind, m in (
            ("entities", graph.entity_map),
            ("facts", graph.fact_map),
            ("chunks", graph.chunk_map),
        ):
            if m.kind == "identity":
                ids[kind] = {"kind": "identity", "n": len(m)}
            elif m.kind == "int":
                ext = np.ascontiguousarray(m.external, dtype=np.int64)
                first = int(ext[0]) if len(ext) else 0
                if len(ext) and int(ext[-1]) - first == len(ext) - 1 and m.consecutive:
                    # first, first + 1, ...: two numbers instead of a file
                    ids[kind] = {"kind": "int", "n": len(m), "start": first}
                else:
                    out.add_array(f"ids_{kind}.npy", ext)
                    ids[kind] = {"kind": "int", "n": len(m)}
            else:
                ids[kind] = {
                    "kind": "object",
                    "n": len(m),
                    "values": [_json_value(v) for v in m.external.tolist()],
                }
        text: dict[str, Any] = {}
        for col, values in (
            ("entity_names", graph.entity_names),
            ("object_values", graph.object_values),
        ):
            entry, blob, kinds = _text_column(values)
            if blob is None:
                text[col] = entry
                continue
            out.add_bytes(f"text_{col}.txt", blob)
            out.add_array(f"text_{col}.npy", kinds)
            text[col] = {"file": f"text_{col}.txt", **entry}
        python = {
            "vocab": {
                "statuses": list(graph.statuses.names),
                "sources": list(graph.sources.names),
                "predicates": [_json_value(v) for v in graph.predicates.names],
                "tenants": [_json_value(v) for v in graph.tenants.names],
            },
            "ids": ids,
            **text,
        }
        out.add_bytes("python.json", _json_bytes(python))
        counts = {"entities": graph.n_entities, "facts": graph.n_facts, "chunks": graph.n_chunks}
        return out.publish({"counts": counts, "scalars": scalars})


def _layout(root: Path) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """The header, its file table, and whether the layout is an older one (version 1 or 2,
    whose array checksums cover the array's data rather than the whole file)."""
    header = read_header(root, magic=MAGIC, versions=READ_VERSIONS, what="snapshot")
    path = root / HEADER
    scalars = header.get("scalars")
    if (
        not isinstance(scalars, dict)
        or sorted(scalars) != sorted(_SCALARS)
        or not all(type(v) is int and 0 <= v < 2**32 for v in scalars.values())
    ):
        raise CorruptStoreError(f"{path}: the header's 'scalars' are not {', '.join(_SCALARS)}")
    if header["format_version"] >= 3:
        files = header.get("files")
        if not isinstance(files, dict):
            raise CorruptStoreError(f"{path}: the header lists no files")
        return header, files, False
    for key in ("arrays", "python", "texts"):
        if not isinstance(header.get(key, {}), dict):
            raise CorruptStoreError(f"{path}: the header's {key!r} is not an object")
    files = {f"{name}.npy": meta for name, meta in header["arrays"].items()}
    for col, meta in header.get("texts", {}).items():
        if col not in _TEXT_COLUMNS or not isinstance(meta, dict):
            raise CorruptStoreError(f"{root}: unknown text column {col!r} in the header")
        files[f"text_{col}.txt"] = {"size": meta.get("bytes"), "crc32": meta.get("crc32")}
    python = header["python"]
    files[str(python.get("file", "python.json"))] = {"crc32": python.get("crc32"), "python": True}
    return header, files, True


class _Checksums:
    """Checksums of a snapshot's files, computed in threads while the caller goes on;
    :meth:`verify` raises for the first file (in the order added) whose checksum differs."""

    def __init__(self, pool: ThreadPoolExecutor):
        self._pool = pool
        self._pending: list[tuple[Path, Any, Future[int]]] = []

    def add(self, path: Path, expected: Any, crc: Callable[[Any], int], data: Any) -> None:
        self._pending.append((path, expected, self._pool.submit(crc, data)))

    def verify(self) -> None:
        for path, expected, future in self._pending:
            if future.result() != expected:
                raise CorruptStoreError(f"{path}: checksum mismatch (the file is corrupted)")


def _text_values(
    root: Path,
    col: str,
    spec: Any,
    arrays: dict[str, npt.NDArray[Any]],
    blobs: dict[str, bytes],
) -> npt.NDArray[Any] | None:
    """A text column of python.json: a JSON list (version 1), or its text file and kinds."""
    if spec is None:
        return None
    if isinstance(spec, list):
        return np.fromiter(spec, dtype=object, count=len(spec))
    where = root / f"text_{col}.txt"
    kinds = arrays.get(f"text_{col}")
    if not isinstance(spec, dict) or col not in blobs or kinds is None or kinds.ndim != 1:
        raise CorruptStoreError(f"{root}: text column {col!r} is not described consistently")
    try:
        text = blobs[col].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptStoreError(f"{where}: not UTF-8 text ({exc})") from None
    strings = text.split("\x00") if spec.get("strings") else []
    others = spec.get("others")
    n = len(kinds)
    is_str = kinds == _STR
    is_other = kinds == _OTHER
    if (
        not isinstance(others, list)
        or len(strings) != int(is_str.sum())
        or len(others) != int(is_other.sum())
        or int(np.count_nonzero(kinds > _OTHER))
    ):
        raise CorruptStoreError(f"{where}: does not hold the rows its kinds array says")
    if len(strings) == n:
        return np.fromiter(strings, dtype=object, count=n)
    out = np.empty(n, dtype=object)  # None everywhere
    out[is_str] = np.fromiter(strings, dtype=object, count=len(strings))
    if others:
        out[is_other] = np.fromiter(others, dtype=object, count=len(others))
    return out


_CHECKS: dict[str, Literal["tenants", "trusted", "full"]] = {
    "safe": "tenants",
    "trusted": "trusted",
    "full": "full",
}


def load_snapshot(
    directory: str | os.PathLike[str], *, verify: Literal["safe", "trusted", "full"] = "safe"
) -> KnowledgeGraph:
    """Load a snapshot saved by :func:`save_snapshot`.

    Every level verifies every file's checksum (its XXH3-64 where the writer recorded one
    and xxhash is installed, else its CRC-32) and what memory safety needs (sizes, bounds,
    codes): a corrupted file is always refused, never answered from.

    Args:
        directory: The snapshot directory.
        verify: "safe" (default) also checks isolation: no fact or mention links two
            tenants, the in-adjacency holds exactly the facts pointing at each entity (so
            none of its entries does either), and every tenant / vocabulary code has its name, so
            a crafted snapshot with valid checksums cannot answer one tenant with another's
            data. "trusted" skips the isolation checks, for snapshots you wrote yourself
            (a few percent faster). "full" checks every invariant (also orders, validity
            intervals, that the in-adjacency is exactly the facts' objects).

    Returns:
        The graph, ready to query.

    Raises:
        ParameterError: ``verify`` is not "safe", "trusted" or "full".
        NotAStoreError: The directory holds no graphrecall snapshot.
        SchemaVersionError: The snapshot's format version is unknown.
        CorruptStoreError: A file is missing, truncated, corrupted, or inconsistent.
    """
    if verify not in _CHECKS:
        raise ParameterError(
            f"invalid parameter verify: {verify!r} is not 'safe', 'trusted' or 'full'"
        )
    check = _CHECKS[verify]
    root = Path(directory)
    try:
        return _load(root, check)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
        # A malformed value the checks did not foresee: still the corruption error.
        raise CorruptStoreError(
            f"{root}: malformed snapshot ({type(exc).__name__}: {exc})"
        ) from None


def _load(root: Path, check: Literal["tenants", "trusted", "full"]) -> KnowledgeGraph:
    """:func:`load_snapshot` after its argument checks."""
    header, files, legacy = _layout(root)
    arrays: dict[str, npt.NDArray[Any]] = {}
    paths: dict[str, Path] = {}
    python_file = "python.json"
    for rel, meta in files.items():
        if not isinstance(rel, str) or not isinstance(meta, dict):
            raise CorruptStoreError(f"{root}: the header's file table is malformed")
        if meta.get("python"):
            python_file = rel
        elif rel.endswith(".npy"):
            paths[rel] = file_path(root, rel, files, verify=False, what="snapshot")
            arrays[rel[:-4]] = open_array(paths[rel], meta, mmap_mode=True)
        elif rel not in (*(f"text_{c}.txt" for c in _TEXT_COLUMNS), "python.json"):
            raise CorruptStoreError(f"{root}: unknown file {rel!r} in the header")
    core_names = [n for n in arrays if not n.startswith(("ids_", "text_"))]

    def build() -> _core.CoreGraph:
        kwargs: dict[str, Any] = {k: int(v) for k, v in header["scalars"].items()}
        kwargs.update({n: arrays[n] for n in core_names})  # read in place by the core
        try:
            return _core.CoreGraph.from_parts(**kwargs, check=check)
        except (DataError, TypeError, ValueError) as exc:
            raise CorruptStoreError(f"{root}: inconsistent snapshot ({exc})") from None

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1) + 1) as pool:
        # The core builds in a thread (without the GIL) while this one decodes the text
        # columns. The core checks bounds itself, so it may build from unverified bytes:
        # the graph is handed out only after every checksum matched.
        core_future = pool.submit(build)
        sums = _Checksums(pool)
        # Largest first, so that the threads finish together.
        for name in sorted(arrays, key=lambda k: -arrays[k].nbytes):
            rel = f"{name}.npy"
            if legacy:
                sums.add(paths[rel], files[rel].get("crc32"), crc32, arrays[name])
            elif "xxh3" in files[rel] and has_xxh3():
                # The faster of the two checksums the writer recorded (see BundleWriter).
                sums.add(paths[rel], files[rel]["xxh3"], xxh3_file, paths[rel])
            else:
                sums.add(paths[rel], files[rel].get("crc32"), crc32_file, paths[rel])
        blob = _read(root, python_file, files)
        sums.add(root / python_file, files[python_file].get("crc32"), crc32, blob)
        blobs: dict[str, bytes] = {}
        for col in _TEXT_COLUMNS:
            rel = f"text_{col}.txt"
            if rel in files:
                blobs[col] = _read(root, rel, files)
                sums.add(root / rel, files[rel].get("crc32"), crc32, blobs[col])

        def checked(step: Callable[[], Any]) -> Any:
            """Run a step on unverified data; if it fails, a checksum mismatch is the
            better explanation, when there is one."""
            try:
                return step()
            except CorruptStoreError:
                sums.verify()
                raise

        py = checked(lambda: _python(root, blob))
        # Consecutive int ids are made in a thread too (writing fresh memory is slow, and
        # numpy does it without the GIL): start, start + 1, ...
        # Only for as many ids as the (size-checked) arrays have rows: a corrupted count
        # never allocates.
        rows = {"entities": "entity_tenant", "facts": "object", "chunks": "chunk_tenant"}
        ranges: dict[str, Future[npt.NDArray[np.int64]]] = {}
        specs = py.get("ids")
        for kind, part in rows.items():
            spec = specs.get(kind) if isinstance(specs, dict) else None
            if isinstance(spec, dict) and spec.get("kind") == "int" and "start" in spec:
                start, n = spec["start"], spec.get("n")
                if (
                    type(start) is int
                    and part in arrays
                    and n == len(arrays[part])
                    and -(2**63) <= start <= start + n - 1 < 2**63
                ):
                    ranges[kind] = pool.submit(_consecutive, start, n)
        names, values = checked(
            lambda: tuple(
                _text_values(root, col, py.get(col), arrays, blobs) for col in _TEXT_COLUMNS
            )
        )
        core = checked(core_future.result)
        graph: KnowledgeGraph = checked(
            lambda: _graph(root, core, py, arrays, names, values, ranges)
        )
        sums.verify()
    return graph


def _read(root: Path, rel: str, files: dict[str, Any]) -> bytes:
    """A file's bytes, size-checked (its checksum is verified with the others)."""
    return read_bytes(root, rel, files, verify=False, what="snapshot")


def _python(root: Path, blob: bytes) -> dict[str, Any]:
    try:
        py = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptStoreError(f"{root}: unreadable python.json ({exc})") from None
    if not isinstance(py, dict) or not isinstance(py.get("vocab"), dict):
        raise CorruptStoreError(f"{root}: python.json has no vocabularies")
    return py


#: Ids per block written by :func:`_consecutive`.
_BLOCK = 1 << 20


def _consecutive(start: int, n: int) -> npt.NDArray[np.int64]:
    """``start, start + 1, ..., start + n - 1`` (within int64) as int64, written block by
    block by a ufunc (which releases the GIL), so that the page faults of the fresh memory
    do not hold up the thread decoding text."""
    out = np.empty(n, dtype=np.int64)
    block = np.arange(min(n, _BLOCK), dtype=np.int64)
    for a in range(0, n, _BLOCK):
        part = out[a : a + _BLOCK]
        np.add(block[: len(part)], start + a, out=part)
    return out


def _graph(
    root: Path,
    core: _core.CoreGraph,
    py: dict[str, Any],
    arrays: dict[str, npt.NDArray[Any]],
    names: npt.NDArray[Any] | None,
    values: npt.NDArray[Any] | None,
    ranges: dict[str, Future[npt.NDArray[np.int64]]],
) -> KnowledgeGraph:
    def idmap(kind: str, name: str) -> IdMap:
        spec = py["ids"][kind]
        if spec["kind"] == "identity":
            return IdMap(None, int(spec["n"]), name)
        if spec["kind"] == "int" and "start" in spec:
            if kind not in ranges:
                raise CorruptStoreError(f"{root}: the {name} ids do not match the graph")
            ids = ranges[kind].result()
            return IdMap(ids, len(ids), name, copy=False)  # nobody else holds it
        if spec["kind"] == "int":
            return IdMap(np.asarray(arrays[f"ids_{kind}"]), int(spec["n"]), name)
        values = spec["values"]  # an object array: a list of mixed ids would become str
        return IdMap(np.fromiter(values, dtype=object, count=len(values)), int(spec["n"]), name)

    try:
        entities = idmap("entities", "entity")
        facts = idmap("facts", "fact")
        chunks = idmap("chunks", "chunk")
        vocab = py["vocab"]
        statuses = Vocab(vocab["statuses"], "status")
        sources = Vocab(vocab["sources"], "source")
        predicates = Vocab(vocab["predicates"], "predicate")
        tenants = Vocab(vocab["tenants"], "tenant")
    except (KeyError, TypeError, ValueError, DataError) as exc:
        raise CorruptStoreError(f"{root}: unreadable ids or vocabularies ({exc!r})") from None
    for vocab_, n_codes in (
        (tenants, core.n_tenants),
        (predicates, core.n_predicates),
        (statuses, core.n_statuses),
        (sources, core.n_sources),
    ):
        if len(vocab_) < n_codes:
            raise CorruptStoreError(
                f"{root}: {n_codes} {vocab_.kind} codes but {len(vocab_)} names in python.json"
            )
    if (len(entities), len(facts), len(chunks)) != (core.n_entities, core.n_facts, core.n_chunks):
        raise CorruptStoreError(f"{root}: id maps do not match the graph's sizes")
    if names is not None and len(names) != core.n_entities:
        raise CorruptStoreError(f"{root}: {len(names)} entity names for {core.n_entities}")
    if values is not None and len(values) != core.n_facts:
        raise CorruptStoreError(f"{root}: {len(values)} literal values for {core.n_facts} facts")
    return KnowledgeGraph(
        core,
        entities=entities,
        facts=facts,
        chunks=chunks,
        statuses=statuses,
        sources=sources,
        predicates=predicates,
        tenants=tenants,
        entity_names=names,
        object_values=values,
    )
