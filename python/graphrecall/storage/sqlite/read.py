"""SQL to tables: each stored column back to the checked-table convention, and the whole
stored graph as :class:`~graphrecall.tables.GraphTables`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
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


#: Rows fetched at a time by :func:`read_tables` (the rows of one chunk are Python tuples;
#: the columns are built chunk by chunk, so the whole table never is).
CHUNK_ROWS = 65_536

#: Text columns whose values repeat (vocabularies, names of kinds): one ``str`` per distinct
#: value is kept, not one per row.
_SHARED_TEXT = frozenset({"predicate", "status", "source", "type", "tenant", "scope", "category"})


def _column_from_sql(
    table: str, col: str, values: list[Any], *, optional: bool = True
) -> npt.NDArray[Any] | None:
    """A column read from SQL -> the checked-table convention; None if all NULL and the
    column is optional (with ``optional`` False, a column of NULLs is converted)."""
    if optional and col not in _REQUIRED_ON_READ[table] and all(v is None for v in values):
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


class _Column:
    """One column built from chunks of values, converted as :func:`_column_from_sql`
    converts the whole column at once."""

    def __init__(self, table: str, col: str):
        self.table, self.col = table, col
        self.parts: list[npt.NDArray[Any]] = []
        self.held = col in _REQUIRED_ON_READ[table]  # kept even when all NULL
        self.shared: dict[Any, Any] | None = {} if col in _SHARED_TEXT else None

    def add(self, values: list[Any]) -> None:
        if not self.held and any(v is not None for v in values):
            self.held = True
        if self.shared is not None:
            values = [self.shared.setdefault(v, v) for v in values]
        arr = _column_from_sql(self.table, self.col, values, optional=False)
        assert arr is not None
        self.parts.append(arr)

    def finish(self) -> npt.NDArray[Any] | None:
        if not self.held:
            return None
        if not self.parts:
            return _column_from_sql(self.table, self.col, [], optional=False)
        if len({p.dtype for p in self.parts}) > 1:  # ints in some chunks, text in others
            self.parts = [p.astype(object) for p in self.parts]
        out = self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts)
        self.parts = []
        return out


def read_tables(
    path: Path,
    read: Callable[[str], list[tuple[Any, ...]]],
    *,
    verify: bool,
    logged: bool = False,
    chunks: Callable[[str], Iterator[list[tuple[Any, ...]]]] | None = None,
) -> GraphTables:
    """The stored graph of the store at ``path`` as checked-table columns (rows in insertion
    order), read with ``read`` (one SQL query -> its rows); optional columns that are NULL
    in every row are left out. With ``verify``, every table is checked against its stored
    checksum (:mod:`.checksum`). With ``logged`` (schema version 3), the facts are those of
    ``facts`` followed by those of the fact log (:mod:`.log`), the order a fold keeps.
    ``chunks`` (one SQL query -> its rows, a chunk at a time) reads the graph tables
    chunk by chunk, so that their rows are never all held as Python tuples."""
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

    def chunks_of(table: str) -> Iterator[list[tuple[Any, ...]]]:
        if chunks is None:
            yield rows_of(table)
            return
        n, total = 0, 0
        for rows in chunks(checksum.select(table)):
            if verify:
                n += len(rows)
                total += checksum.total_of(rows)
            yield [r[1:] for r in rows]
        if verify:
            checksum.verify_sum(path, table, n, checksum.signed(total), stored)

    meta = dict(rows_of("meta"))
    data: dict[str, dict[str, npt.NDArray[Any]]] = {}
    counts: dict[str, int] = {}
    for table in ("entities", "facts", "chunks", "mentions", "aliases"):
        names = COLUMNS[table]
        columns = [_Column(table, name) for name in names]
        counts[table] = 0
        for source in (table, "facts_log") if table == "facts" and logged else (table,):
            for rows in chunks_of(source):
                if not rows:
                    continue
                counts[table] += len(rows)
                for column, values in zip(columns, zip(*rows, strict=True), strict=True):
                    column.add(list(values))
                del rows
        out: dict[str, npt.NDArray[Any]] = {}
        for column in columns:
            arr = column.finish()
            if arr is not None:
                out[column.col] = arr
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
