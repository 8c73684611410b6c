"""Tables to SQL: the value of an absent column, each row as SQL parameters, and the inserts
that :class:`SQLiteStore` runs inside its transactions."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import DataError
from ...tables import COLUMNS, NULL_SEQUENCE, NULL_TIME, EmbeddingSet, GraphTables
from .schema import _JSON_COLUMNS, _TIME_COLUMNS


def fill_value(tables: GraphTables, table: str, column: str) -> Any:
    """The value of an absent column (the defaults of ``KnowledgeGraph.from_arrays``)."""
    if table == "facts":
        if column in ("confidence", "strength"):
            return 1.0
        if column == "access_count":
            return 0
        if column == "predicate":
            return "related_to"
        if column == "status":
            return "confirmed" if "confirmed" in tables.statuses else tables.statuses[0]
        if column == "source":
            return "system" if "system" in tables.sources else tables.sources[0]
    if table == "chunks" and column == "access_count":
        return 0
    if table == "mentions" and column == "count":
        return 1
    return None


def sql_values(
    tables: GraphTables, table: str, rows: npt.NDArray[np.int64] | None = None
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The columns of ``table`` and its rows as SQL parameters (None for NULL), for the rows
    ``rows`` (all when None). Tables must be checked (normalised)."""
    cols = tables.table(table)
    assert cols is not None
    n = tables.n_rows(table)
    idx = np.arange(n, dtype=np.int64) if rows is None else rows
    names = COLUMNS[table]
    out: list[list[Any]] = []
    for col in names:
        arr = cols.get(col)
        if arr is None:
            if col == "id" and table == "facts":
                out.append(idx.tolist())
            else:
                out.append([fill_value(tables, table, col)] * len(idx))
            continue
        a = arr[idx]
        if col in _TIME_COLUMNS:
            out.append([None if v == NULL_TIME else v for v in a.tolist()])
        elif col == "sequence":
            out.append([None if v == NULL_SEQUENCE else v for v in a.tolist()])
        elif col == "confidence" and table == "chunks":
            out.append([None if v != v else v for v in a.tolist()])
        elif col in _JSON_COLUMNS:
            out.append([None if v is None else json.dumps(v, ensure_ascii=False) for v in a])
        else:
            out.append(a.tolist())
    return names, list(zip(*out, strict=True)) if out else []


def insert_rows(
    cur: sqlite3.Cursor,
    tables: GraphTables,
    table: str,
    rows: npt.NDArray[np.int64] | None = None,
    *,
    into: str | None = None,
) -> int:
    """Insert rows of a checked table (all, or those at ``rows``) into ``into`` (a table
    with its columns; ``table`` itself when None); returns the count."""
    names, values = sql_values(tables, table, rows)
    cols = ", ".join(names)
    marks = ", ".join("?" * len(names))
    try:
        cur.executemany(f"INSERT INTO {into or table} ({cols}) VALUES ({marks})", values)
    except (sqlite3.InterfaceError, sqlite3.ProgrammingError, OverflowError) as exc:
        raise DataError(f"{table}: a value cannot be stored in SQLite ({exc})") from None
    return len(values)


def insert_embeddings(cur: sqlite3.Cursor, sets: Iterable[EmbeddingSet]) -> int:
    """Insert checked embedding sets; returns the number of vectors."""
    n = 0
    for es in sets:
        vec = np.ascontiguousarray(es.vectors, dtype="<f4")
        dim = int(vec.shape[1]) if vec.ndim == 2 else 0
        rows = [
            (es.kind, i, es.model or "", dim, vec[k].tobytes())
            for k, i in enumerate(es.ids.tolist())
        ]
        cur.executemany(
            "INSERT INTO embeddings (kind, id, model, dim, vector) VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        n += len(rows)
    return n


def update_rows(
    cur: sqlite3.Cursor,
    tables: GraphTables,
    table: str,
    rows: npt.NDArray[np.int64],
    names: Iterable[str],
) -> int:
    """Write the columns ``names`` of the rows ``rows`` of a checked table with ids
    (entities, chunks, facts) over the stored rows of the same ids; returns the count."""
    cols, values = sql_values(tables, table, rows)
    sets = [c for c in cols if c in set(names) and c != "id"]
    if not sets:
        return 0
    pos = [cols.index(c) for c in sets]
    key = cols.index("id")
    try:
        cur.executemany(
            f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in sets)} WHERE id = ?",
            [(*(v[p] for p in pos), v[key]) for v in values],
        )
    except (sqlite3.InterfaceError, sqlite3.ProgrammingError, OverflowError) as exc:
        raise DataError(f"{table}: a value cannot be stored in SQLite ({exc})") from None
    return len(values)


def delete_pairs(
    cur: sqlite3.Cursor, table: str, columns: tuple[str, str], pairs: Iterable[tuple[Any, Any]]
) -> None:
    """Delete the rows of ``table`` (mentions, aliases: no id) whose two key ``columns``
    hold each pair."""
    a, b = columns
    cur.executemany(f"DELETE FROM {table} WHERE {a} = ? AND {b} = ?", list(pairs))
