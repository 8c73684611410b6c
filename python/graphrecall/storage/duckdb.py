"""Load :class:`~graphrecall.tables.GraphTables` from a DuckDB database.

The user's tables and columns are named by a :class:`~graphrecall.storage.mapping.ColumnMapping`
(validated identifiers, quoted in the SQL); the only value that enters a query, the tenant,
is a bound parameter. Each table is read with one ``SELECT`` into Arrow and converted like
:func:`~graphrecall.storage.arrow.load_arrow` (vector columns ``FLOAT[]`` / ``FLOAT[n]`` /
``DOUBLE[]`` become embedding matrices; ``UUID`` ids become text, ``HUGEINT`` / ``DECIMAL``
numbers int64 / float64, ``TIMESTAMP`` / ``TIMESTAMPTZ`` / ``DATE`` int64 seconds).

With ``tenant=`` only that tenant's rows are read: entities by their tenant column; facts
by their own tenant column when the mapping has one (``facts.tenant``), otherwise those
whose subject is one of the tenant's entities; chunks by their tenant column (or, without
one, those mentioning the tenant's entities); mentions and aliases of the tenant's entities.

Needs the ``duckdb`` package (``pip install duckdb``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from ..errors import DataError, ParameterError
from ..tables import GraphTables
from ..tables.mapping import TABLES, ColumnMapping, quote_identifier
from .arrow.source import ArrowSource, Column
from .arrow.tables import tables_from_sources
from .errors import StorageError

__all__ = ["load_duckdb"]


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is in the test extra
        raise ImportError("load_duckdb needs the duckdb package: pip install duckdb") from None
    return duckdb


def _arrow(relation: Any) -> Any:
    """A DuckDB relation as a ``pyarrow.Table`` (the method's name changed across versions)."""
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        method = getattr(relation, name, None)
        if method is not None:
            out = method()
            return out.read_all() if hasattr(out, "read_all") else out
    raise StorageError("this duckdb version cannot return Arrow tables")  # pragma: no cover


def _query(con: Any, sql: str, params: list[Any]) -> Any:
    """Run a read-only query with bound parameters; the result as a ``pyarrow.Table``."""
    try:
        relation = con.sql(sql, params=params) if params else con.sql(sql)
    except TypeError:  # pragma: no cover - duckdb < 1.1 has no params on sql()
        return con.execute(sql, params).fetch_arrow_table()
    return _arrow(relation)


def _read(con: Any, sql: str, params: list[Any], table: str, ours: str) -> Any:
    """:func:`_query`, with DuckDB's errors (a tenant of the wrong type...) as
    :class:`StorageError` naming the table."""
    duckdb = _duckdb()
    try:
        return _query(con, sql, params)
    except duckdb.Error as exc:
        raise StorageError(f"reading table {table!r} ({ours}) failed: {exc}") from None


def _q(name: str) -> str:
    return quote_identifier(name)


class _Table:
    """One of the user's tables in the database: its name, columns and Arrow types."""

    def __init__(self, ours: str, theirs: str, schema: Any):
        self.ours = ours
        self.theirs = theirs
        self.schema = schema
        self.columns: list[str] = list(schema.names)
        self.selected: dict[str, str] = {}

    def is_list(self, ours: str) -> bool:
        pa = importlib.import_module("pyarrow")
        theirs = self.selected.get(ours)
        if theirs is None:
            return False
        t = self.schema.field(theirs).type
        return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _open_table(con: Any, ours: str, theirs: str) -> _Table | None:
    duckdb = _duckdb()
    try:
        schema = _query(con, f"SELECT * FROM {_q(theirs)} LIMIT 0", []).schema
    except duckdb.CatalogException:
        return None
    except duckdb.Error as exc:
        raise StorageError(f"reading table {theirs!r} ({ours}) failed: {exc}") from None
    return _Table(ours, theirs, schema)


def _filters(tables: dict[str, _Table], tenant_given: bool) -> dict[str, str]:
    """The WHERE clause of each table for a tenant filter (``$1`` = the tenant)."""
    if not tenant_given:
        return {}
    ent = tables["entities"]
    if "tenant" not in ent.selected:
        raise ParameterError(
            f"invalid parameter tenant: table {ent.theirs!r} (entities) has no tenant column "
            "(map one with ColumnMapping(columns={'entities.tenant': ...}))"
        )
    c = ent.selected
    in_tenant = f"SELECT {_q(c['id'])} FROM {_q(ent.theirs)} WHERE {_q(c['tenant'])} = $1"
    out = {"entities": f"{_q(c['tenant'])} = $1"}
    facts = tables["facts"]
    if "tenant" in facts.selected:
        out["facts"] = f"{_q(facts.selected['tenant'])} = $1"
    else:
        out["facts"] = f"{_q(facts.selected['subject'])} IN ({in_tenant})"
    ment = tables.get("mentions")
    chunks = tables.get("chunks")
    chunk_ids: str | None = None
    if chunks is not None:
        if "tenant" in chunks.selected:
            out["chunks"] = f"{_q(chunks.selected['tenant'])} = $1"
            chunk_ids = (
                f"SELECT {_q(chunks.selected['id'])} FROM {_q(chunks.theirs)} WHERE {out['chunks']}"
            )
        elif ment is not None and not ment.is_list("entity") and not ment.is_list("chunk"):
            m = ment.selected
            out["chunks"] = (
                f"{_q(chunks.selected['id'])} IN (SELECT {_q(m['chunk'])} FROM "
                f"{_q(ment.theirs)} WHERE {_q(m['entity'])} IN ({in_tenant}))"
            )
        else:
            raise ParameterError(
                f"invalid parameter tenant: table {chunks.theirs!r} (chunks) has no tenant "
                "column to filter by (map chunks.tenant)"
            )
    if ment is not None:
        if not ment.is_list("entity"):
            out["mentions"] = f"{_q(ment.selected['entity'])} IN ({in_tenant})"
        elif chunk_ids is not None:
            out["mentions"] = f"{_q(ment.selected['chunk'])} IN ({chunk_ids})"
        else:
            raise ParameterError(
                f"invalid parameter tenant: mentions in a list column of {ment.theirs!r} need "
                "a chunks table with a tenant column to filter by"
            )
    aliases = tables.get("aliases")
    if aliases is not None:
        out["aliases"] = f"{_q(aliases.selected['entity'])} IN ({in_tenant})"
    return out


def _source(con: Any, table: _Table, where: str | None, params: list[Any]) -> ArrowSource:
    def read(sel: dict[str, str]) -> dict[str, Column]:
        names = list(dict.fromkeys(sel.values()))
        cols = ", ".join(f"{_q(n)} AS {_q(f'c{i}')}" for i, n in enumerate(names))
        sql = f"SELECT {cols} FROM {_q(table.theirs)}"
        if where is not None:
            sql += f" WHERE {where}"
        got = _read(con, sql, params if where is not None else [], table.theirs, table.ours)
        return {ours: got.column(f"c{names.index(theirs)}") for ours, theirs in sel.items()}

    return ArrowSource(table.theirs, table.columns, read)


def load_duckdb(
    database: str | os.PathLike[str] | Any,
    mapping: ColumnMapping | None = None,
    tenant: Hashable | None = None,
) -> GraphTables:
    """Read the mapped tables of a DuckDB database.

    Args:
        database: A DuckDB file (opened read-only and closed again) or an open
            ``duckdb.DuckDBPyConnection`` (left open).
        mapping: The user's table and column names (default: ours). Tables may be
            schema-qualified (``"analytics.relationships"``).
        tenant: Read only this tenant's rows (a bound parameter compared with the tenant
            columns; see the module doc for how each table is filtered).

    Returns:
        The converted tables; call :meth:`GraphTables.check` or :meth:`GraphTables.to_graph`.

    Raises:
        StorageError: The file does not exist or is not a DuckDB database.
        ParameterError: An invalid mapping, or a tenant filter the tables cannot apply.
        DataError: A missing table or column (named), or a column that cannot be converted.
    """
    duckdb = _duckdb()
    m = mapping if mapping is not None else ColumnMapping()
    if not isinstance(m, ColumnMapping):
        raise ParameterError(f"invalid parameter mapping: {mapping!r} is not a ColumnMapping")
    if isinstance(database, (str, os.PathLike)):
        path = Path(database)
        if not path.is_file():
            raise StorageError(f"no DuckDB database at {str(path)!r}")
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error as exc:
            raise StorageError(f"cannot open {str(path)!r} as a DuckDB database: {exc}") from None
        try:
            return _load(con, m, tenant, str(path))
        finally:
            con.close()
    if not hasattr(database, "sql"):
        raise ParameterError(
            f"invalid parameter database: {type(database).__name__} is neither a path nor a "
            "DuckDB connection"
        )
    return _load(database, m, tenant, "the DuckDB connection")


def _load(con: Any, m: ColumnMapping, tenant: Hashable | None, where: str) -> GraphTables:
    tables: dict[str, _Table] = {}
    for ours in TABLES:
        theirs = m.table(ours)
        table = _open_table(con, ours, theirs)
        if table is None:
            if m.table_required(ours):
                raise DataError(f"no table {theirs!r} ({ours}) in {where}")
            continue
        table.selected = m.resolve(ours, table.columns)
        tables[ours] = table
    filters = _filters(tables, tenant is not None)
    params = [tenant] if tenant is not None else []
    sources = {
        ours: _source(con, table, filters.get(ours), params) for ours, table in tables.items()
    }
    return tables_from_sources(sources, m)
