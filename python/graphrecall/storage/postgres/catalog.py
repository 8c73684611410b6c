"""The PostgreSQL catalog as the loader sees it: the user's tables and their column types,
and the select expression and Arrow type each column is read with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import DataError
from ...tables.mapping import LIST_COLUMNS, TIME_COLUMNS
from ..arrow.source import import_pyarrow
from .connection import fetch_all, fetch_one, import_sql

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "ColumnExpr",
    "PgColumn",
    "PgTable",
    "column_expr",
    "open_table",
    "table_label",
    "table_names",
]

_INT_TYPES = frozenset({"int2", "int4", "int8", "oid"})
_TIME_TYPES = frozenset({"timestamp", "timestamptz", "date"})
_VECTOR_TYPES = frozenset({"vector", "halfvec"})
_TEXT_TYPES = frozenset({"text", "varchar", "bpchar", "name", "char", "citext", "uuid"})


@dataclass(frozen=True)
class PgColumn:
    """A column of the user's table: its name and (base) type."""

    name: str
    typname: str
    category: str
    elem: str | None
    elem_category: str | None

    @property
    def is_array(self) -> bool:
        return self.category == "A"


_COLUMNS_SQL = """
SELECT a.attname,
       COALESCE(bt.typname, t.typname),
       COALESCE(bt.typcategory, t.typcategory),
       et.typname,
       et.typcategory
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type bt ON t.typtype = 'd' AND bt.oid = t.typbasetype
LEFT JOIN pg_type et
  ON COALESCE(bt.typcategory, t.typcategory) = 'A' AND et.oid = COALESCE(bt.typelem, t.typelem)
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""


class PgTable:
    """One of the user's tables in the database: its name, columns and types."""

    def __init__(self, ours: str, theirs: str, parts: tuple[str, ...], columns: list[PgColumn]):
        self.ours = ours
        self.theirs = theirs
        self.ident = import_sql().Identifier(*parts)
        self.types = {c.name: c for c in columns}
        self.columns = [c.name for c in columns]
        self.selected: dict[str, str] = {}

    def is_list(self, ours: str) -> bool:
        theirs = self.selected.get(ours)
        return theirs is not None and self.types[theirs].is_array


def open_table(
    conn: psycopg.Connection[Any], ours: str, theirs: str, schema: str | None
) -> PgTable | None:
    """The table (or view) ``theirs`` (in ``schema`` unless qualified), None when missing.
    An unquoted-style fallback: a name with capitals is also tried in lower case."""
    sql = import_sql()
    parts = tuple(theirs.split("."))
    if len(parts) == 1 and schema is not None:
        parts = (schema, parts[0])
    candidates = [parts]
    lower = tuple(p.lower() for p in parts)
    if lower != parts:
        candidates.append(lower)
    for cand in candidates:
        name = sql.Identifier(*cand).as_string(conn)
        row = fetch_one(conn, "SELECT to_regclass(%s)::oid", [name])
        if row is not None and row[0] is not None:
            cols = [PgColumn(*r) for r in fetch_all(conn, _COLUMNS_SQL, [row[0]])]
            return PgTable(ours, theirs, cand, cols)
    return None


def table_names(conn: psycopg.Connection[Any], schema: str | None) -> list[str]:
    """Tables and views the loader could see (for messages), at most 50."""
    if schema is not None:
        where, params = "table_schema = %s", [schema]
    else:
        where, params = "table_schema = ANY(current_schemas(false))", []
    rows = fetch_all(
        conn,
        "SELECT CASE WHEN table_schema = ANY(current_schemas(false)) THEN table_name "
        "ELSE table_schema || '.' || table_name END FROM information_schema.tables "
        f"WHERE {where} ORDER BY 1 LIMIT 50",
        params,
    )
    return [r[0] for r in rows]


@dataclass(frozen=True)
class ColumnExpr:
    """How one of the user's columns is selected and parsed.

    ``mode``: ``"plain"`` (CSV of ``arrow``), ``"pgvector"`` (hex of ``vector_send``),
    ``"vector"`` / ``"vector64"`` (``[...]`` / ``{...}`` text -> list of float32 /
    float64), ``"hex"`` (hex text -> binary blob).
    """

    key: tuple[str, str]
    sql: Any
    arrow: Any
    mode: str = "plain"
    unnest: bool = False


def column_expr(table: PgTable, ours: str, theirs: str) -> ColumnExpr:
    """The select expression of ``theirs`` read as our column ``ours`` of ``table``."""
    sql = import_sql()
    pa = import_pyarrow()
    col = table.types[theirs]
    ident = sql.Identifier(theirs)
    t = col.typname
    if ours == "embedding":
        numeric_array = col.is_array and col.elem_category == "N"
        if t == "vector":  # its binary form, hex: no float formatting on the server
            return ColumnExpr(
                (theirs, "pgvector"),
                sql.SQL("encode(vector_send({}), 'hex')").format(ident),
                pa.string(),
                "pgvector",
            )
        if t in _VECTOR_TYPES or numeric_array:
            # float8 / numeric elements are parsed as float64 and then rounded to float32,
            # like the other loaders do; vector / real as float32 (exactly the stored value).
            wide = numeric_array and col.elem not in ("float4", "int2", "int4")
            mode = "vector64" if wide else "vector"
            return ColumnExpr((theirs, mode), sql.SQL("{}::text").format(ident), pa.string(), mode)
        if t == "bytea":
            return ColumnExpr(
                (theirs, "hex"), sql.SQL("encode({}, 'hex')").format(ident), pa.string(), "hex"
            )
        raise DataError(
            f"{table_label(table)}.{theirs} (embedding) has type {t}; expected a pgvector vector / "
            "halfvec, an array of numbers or a bytea of float32"
        )
    if f"{table.ours}.{ours}" in LIST_COLUMNS and col.is_array:
        elem = col.elem or ""
        if elem in _INT_TYPES:
            return ColumnExpr(
                (theirs, "unnest"), sql.SQL("unnest({})").format(ident), pa.int64(), unnest=True
            )
        return ColumnExpr(
            (theirs, "unnest"), sql.SQL("unnest({})::text").format(ident), pa.string(), unnest=True
        )
    if ours in TIME_COLUMNS and t in _TIME_TYPES:
        return ColumnExpr(
            (theirs, "epoch"),
            sql.SQL("extract(epoch FROM {})::float8").format(ident),
            pa.float64(),
        )
    if t in _INT_TYPES:
        return ColumnExpr((theirs, "int"), ident, pa.int64())
    if t == "float4":  # the stored float32, not the float64 nearest its shortest decimal
        return ColumnExpr((theirs, "float4"), ident, pa.float32())
    if t == "float8":
        return ColumnExpr((theirs, "float"), ident, pa.float64())
    if t == "numeric":
        return ColumnExpr((theirs, "float"), sql.SQL("{}::float8").format(ident), pa.float64())
    if t == "bool":
        return ColumnExpr((theirs, "bool"), ident, pa.bool_())
    if col.is_array:
        return ColumnExpr((theirs, "json"), sql.SQL("to_json({})::text").format(ident), pa.string())
    if t in _TEXT_TYPES or col.category in ("S", "E"):
        return ColumnExpr((theirs, "text"), ident, pa.string())
    return ColumnExpr((theirs, "text"), sql.SQL("{}::text").format(ident), pa.string())


def table_label(table: PgTable) -> str:
    """The user's table name for messages, with ours when they differ."""
    return table.theirs if table.theirs == table.ours else f"{table.theirs} ({table.ours})"
