"""SQL to tables: each stored column back to the checked-table convention, and the whole
stored graph as :class:`~graphrecall.tables.GraphTables`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...tables import (
    COLUMNS,
    DEFAULT_SOURCES,
    DEFAULT_STATUSES,
    NULL_SEQUENCE,
    NULL_TIME,
    EmbeddingSet,
    GraphTables,
)
from ..errors import CorruptStoreError
from . import checksum
from .schema import _ID_COLUMNS, _JSON_COLUMNS, _REQUIRED_ON_READ, _TIME_COLUMNS


def _ids_array(values: list[Any]) -> npt.NDArray[Any]:
    if all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _column_from_sql(table: str, col: str, values: list[Any]) -> npt.NDArray[Any] | None:
    """A column read from SQL -> the checked-table convention; None if all NULL and the
    column is optional."""
    if col not in _REQUIRED_ON_READ[table] and all(v is None for v in values):
        return None
    if col in _ID_COLUMNS:
        return _ids_array(values)
    if col in _TIME_COLUMNS:
        return np.array([NULL_TIME if v is None else v for v in values], dtype=np.int64)
    if col == "sequence":
        return np.array([NULL_SEQUENCE if v is None else v for v in values], dtype=np.int64)
    if col in ("confidence", "strength"):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    if col in ("access_count", "count"):
        return np.array(values, dtype=np.int64)
    if col == "predicate" and all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    if col in _JSON_COLUMNS:
        out[:] = [None if v is None else json.loads(v) for v in values]
    else:
        out[:] = values
    return out


def read_tables(
    path: Path,
    read: Callable[[str], list[tuple[Any, ...]]],
    *,
    verify: bool,
    logged: bool = False,
) -> GraphTables:
    """The stored graph of the store at ``path`` as checked-table columns (rows in insertion
    order), read with ``read`` (one SQL query -> its rows); optional columns that are NULL
    in every row are left out. With ``verify``, every table is checked against its stored
    checksum (:mod:`.checksum`). With ``logged`` (schema version 3), the facts are those of
    ``facts`` followed by those of the fact log (:mod:`.log`), the order a fold keeps."""
    stored = (
        {r[0]: (r[1], r[2]) for r in read("SELECT name, rows, total FROM checksums")}
        if verify
        else {}
    )

    def rows_of(table: str) -> list[tuple[Any, ...]]:
        rows = read(checksum.select(table))
        if verify:
            checksum.verify(path, table, rows, stored)
        return [r[1:] for r in rows]

    meta = dict(rows_of("meta"))
    data: dict[str, dict[str, npt.NDArray[Any]]] = {}
    counts: dict[str, int] = {}
    for table in ("entities", "facts", "chunks", "mentions", "aliases"):
        names = COLUMNS[table]
        rows = rows_of(table)
        if table == "facts" and logged:
            rows += rows_of("facts_log")
        counts[table] = len(rows)
        cols = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        out: dict[str, npt.NDArray[Any]] = {}
        for name, values in zip(names, cols, strict=True):
            arr = _column_from_sql(table, name, list(values))
            if arr is not None:
                out[name] = arr
        data[table] = out
    embeddings: list[EmbeddingSet] = []
    rows = rows_of("embeddings")  # kind, model, id, dim, vector
    groups: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r)
    for (kind, model), members in groups.items():
        dims = {int(r[3]) for r in members}
        if len(dims) != 1:
            raise CorruptStoreError(
                f"{path}: embeddings of {kind} model {model!r} have dimensions {sorted(dims)}"
            )
        dim = dims.pop()
        flat = np.frombuffer(b"".join(r[4] for r in members), dtype="<f4")
        vectors = flat.astype(np.float32).reshape(len(members), dim)
        embeddings.append(
            EmbeddingSet(kind, _ids_array([r[2] for r in members]), vectors, model or None)  # type: ignore[arg-type]
        )
    return GraphTables(
        entities=data["entities"],
        facts=data["facts"],
        chunks=data["chunks"] if counts["chunks"] else None,
        mentions=data["mentions"] if counts["mentions"] else None,
        aliases=data["aliases"] if counts["aliases"] else None,
        embeddings=embeddings,
        statuses=tuple(json.loads(meta.get("statuses", "null")) or ()) or DEFAULT_STATUSES,
        sources=tuple(json.loads(meta.get("sources", "null")) or ()) or DEFAULT_SOURCES,
    )
