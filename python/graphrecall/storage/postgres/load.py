"""Load the mapped tables of a PostgreSQL database: tenant filters in SQL, one Arrow
source per table read by ``COPY``, and the check of the loaded tables."""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DataError, ParameterError
from ...tables import GraphTables, LoadReport, OnBad
from ...tables.mapping import TABLES, ColumnMapping, validate_identifier
from ..arrow.source import ArrowSource, Column
from ..arrow.tables import tables_from_sources
from ..errors import StorageError
from .catalog import ColumnExpr, PgTable, column_expr, open_table, table_label, table_names
from .connection import (
    conninfo_parts,
    database_label,
    fetch_one,
    import_psycopg,
    import_sql,
    snapshot,
)
from .copy_out import copy_csv, parse_csv
from .vectors import hex_blobs, pgvectors, text_vectors

if TYPE_CHECKING:
    import psycopg

__all__ = ["CONNECT_TIMEOUT", "MissingTableError", "PostgresTables", "load_postgres"]

#: Seconds to wait for a connection when the conninfo sets no ``connect_timeout``.
CONNECT_TIMEOUT = 10


class MissingTableError(StorageError, DataError):
    """A mapped table, column or schema is not in the PostgreSQL database.

    Both a :class:`~graphrecall.storage.errors.StorageError` and a
    :class:`~graphrecall.errors.DataError` (what the other loaders raise for a missing table
    or column); the message names the table or column and what the database holds instead.
    """


@dataclass
class PostgresTables(GraphTables):
    """:class:`GraphTables` read from PostgreSQL and already checked.

    The tables are :meth:`GraphTables.check`'s output (normalised; with ``on_bad="skip"``
    without the bad rows): :meth:`build_graph` builds the graph without checking again,
    :meth:`to_graph` checks again (every row passes) and builds.

    Attributes:
        report: What the load's check refused (``on_bad="raise"``: nothing, else the load
            raised) or skipped (``report.skipped``, per table).
    """

    report: LoadReport = field(default_factory=lambda: LoadReport(()))


def _filters(tables: dict[str, PgTable], tenant_given: bool) -> dict[str, Any]:
    """The WHERE condition of each table for a tenant filter (``%(tenant)s``)."""
    if not tenant_given:
        return {}
    sql = import_sql()
    ident = sql.Identifier
    p = sql.Placeholder("tenant")
    ent = tables["entities"]
    if "tenant" not in ent.selected:
        raise ParameterError(
            f"invalid parameter tenant: table {ent.theirs!r} (entities) has no tenant column "
            "(map one with ColumnMapping(columns={'entities.tenant': ...}))"
        )
    c = ent.selected
    in_tenant = sql.SQL("SELECT {} FROM {} WHERE {} = {}").format(
        ident(c["id"]), ent.ident, ident(c["tenant"]), p
    )
    out: dict[str, Any] = {"entities": sql.SQL("{} = {}").format(ident(c["tenant"]), p)}
    facts = tables["facts"]
    if "tenant" in facts.selected:
        out["facts"] = sql.SQL("{} = {}").format(ident(facts.selected["tenant"]), p)
    else:
        out["facts"] = sql.SQL("{} IN ({})").format(ident(facts.selected["subject"]), in_tenant)
    ment = tables.get("mentions")
    chunks = tables.get("chunks")
    chunk_ids: Any = None
    if chunks is not None:
        ch = chunks.selected
        if "tenant" in ch:
            out["chunks"] = sql.SQL("{} = {}").format(ident(ch["tenant"]), p)
            chunk_ids = sql.SQL("SELECT {} FROM {} WHERE {}").format(
                ident(ch["id"]), chunks.ident, out["chunks"]
            )
        elif ment is not None and not ment.is_list("entity") and not ment.is_list("chunk"):
            m = ment.selected
            out["chunks"] = sql.SQL("{} IN (SELECT {} FROM {} WHERE {} IN ({}))").format(
                ident(ch["id"]), ident(m["chunk"]), ment.ident, ident(m["entity"]), in_tenant
            )
        else:
            raise ParameterError(
                f"invalid parameter tenant: table {chunks.theirs!r} (chunks) has no tenant "
                "column to filter by (map chunks.tenant)"
            )
    if ment is not None:
        m = ment.selected
        if not ment.is_list("entity"):
            out["mentions"] = sql.SQL("{} IN ({})").format(ident(m["entity"]), in_tenant)
        elif chunk_ids is not None and not ment.is_list("chunk"):
            out["mentions"] = sql.SQL("{} IN ({})").format(ident(m["chunk"]), chunk_ids)
        else:
            raise ParameterError(
                f"invalid parameter tenant: mentions in a list column of {ment.theirs!r} need "
                "a chunks table with a tenant column to filter by"
            )
    aliases = tables.get("aliases")
    if aliases is not None:
        out["aliases"] = sql.SQL("{} IN ({})").format(ident(aliases.selected["entity"]), in_tenant)
    return out


def _source(
    conn: psycopg.Connection[Any],
    table: PgTable,
    where: Any,
    params: dict[str, Any],
) -> ArrowSource:
    sql = import_sql()
    label = table_label(table)

    def read(sel: dict[str, str]) -> dict[str, Column]:
        exprs: list[ColumnExpr] = []
        index: dict[str, int] = {}
        for ours, theirs in sel.items():
            e = column_expr(table, ours, theirs)
            keys = [x.key for x in exprs]
            if e.key not in keys:
                exprs.append(e)
                keys.append(e.key)
            index[ours] = keys.index(e.key)
        lists = [e.key[0] for e in exprs if e.unnest]
        if len(lists) > 1:
            raise DataError(f"{label}: only one list column can be exploded, got {lists!r}")
        cols = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(e.sql, sql.Identifier(f"c{i}")) for i, e in enumerate(exprs)
        )
        query = sql.SQL("SELECT {} FROM {}").format(cols, table.ident)
        if where is not None:
            query = sql.SQL("{} WHERE {}").format(query, where)
        copy = sql.SQL("COPY ({}) TO STDOUT (FORMAT csv)").format(query)
        data = copy_csv(conn, copy, params if where is not None else {}, table)
        got = parse_csv(data, exprs, conn.info.encoding, label)
        columns = []
        for i, e in enumerate(exprs):
            col = got.column(f"c{i}")
            if e.mode == "pgvector":
                col = pgvectors(col, label)
            elif e.mode in ("vector", "vector64"):
                col = text_vectors(col, label, e.mode == "vector64")
            elif e.mode == "hex":
                col = hex_blobs(col)
            columns.append(col)
        return {ours: columns[i] for ours, i in index.items()}

    return ArrowSource(table.theirs, table.columns, read)


def _tenant_param(tenant: Hashable) -> int | str | uuid.UUID:
    if isinstance(tenant, (bool, np.bool_)):
        raise ParameterError(f"invalid parameter tenant: {tenant!r} is a bool, not an int or str")
    if isinstance(tenant, (int, np.integer)):
        return int(tenant)
    if isinstance(tenant, (str, uuid.UUID)):
        return tenant
    raise ParameterError(
        f"invalid parameter tenant: {tenant!r} is a {type(tenant).__name__}, not an int, str "
        "or uuid.UUID"
    )


def _load(
    conn: psycopg.Connection[Any],
    m: ColumnMapping,
    tenant: Hashable | None,
    schema: str | None,
) -> GraphTables:
    psycopg = import_psycopg()
    if conn.closed:
        raise StorageError("the PostgreSQL connection is closed")
    where = database_label(conn)
    params = {} if tenant is None else {"tenant": _tenant_param(tenant)}
    try:
        with snapshot(conn):
            if schema is not None:
                found = fetch_one(conn, "SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema])
                if found is None:
                    raise MissingTableError(f"no schema {schema!r} in {where}")
            tables: dict[str, PgTable] = {}
            for ours in TABLES:
                theirs = m.table(ours)
                table = open_table(conn, ours, theirs, schema)
                if table is None:
                    if m.table_required(ours):
                        raise MissingTableError(
                            f"no table {theirs!r} ({ours}) in {where}"
                            + ("" if schema is None else f", schema {schema!r}")
                            + f"; it has {table_names(conn, schema)!r}"
                        )
                    continue
                try:
                    table.selected = m.resolve(ours, table.columns)
                except DataError as exc:
                    raise MissingTableError(f"{exc} (in {where})") from None
                tables[ours] = table
            filters = _filters(tables, tenant is not None)
            sources = {
                ours: _source(conn, table, filters.get(ours), params)
                for ours, table in tables.items()
            }
            return tables_from_sources(sources, m)
    except psycopg.Error as exc:
        raise StorageError(f"reading {where} failed: {exc}") from None


def load_postgres(
    database: str | psycopg.Connection[Any],
    *,
    mapping: ColumnMapping | None = None,
    tenant: Hashable | None = None,
    schema: str | None = None,
    on_bad: OnBad = "raise",
) -> PostgresTables:
    """Read the mapped tables of a PostgreSQL database (pgvector columns included) and check
    them.

    Args:
        database: A conninfo string or URI (``"postgresql://user@host/db"``,
            ``"dbname=kg host=/tmp"``; connected to and closed again, with a
            ``connect_timeout`` of :data:`CONNECT_TIMEOUT` s unless it sets one) or an open
            ``psycopg.Connection`` (left open, in the transaction state it was in).
        mapping: The user's table and column names (default: ours; see
            :data:`~graphrecall.storage.mapping.PRESETS` for the source designs' schemas).
            Tables may be schema-qualified (``"kg.relationships"``).
        tenant: Read only this tenant's rows (an int, str or ``uuid.UUID`` compared with the
            tenant columns in SQL; see the module doc for how each table is filtered).
        schema: The PostgreSQL schema of the tables the mapping does not qualify (default:
            the connection's ``search_path``).
        on_bad: ``"raise"`` refuses bad rows with a report (:class:`BadDataError`);
            ``"skip"`` drops them and the rows depending on them, counted in ``.report``.

    Returns:
        The checked tables, with the check's report in ``.report``; call
        :meth:`~GraphTables.build_graph` (or :meth:`~GraphTables.to_graph`).

    Raises:
        StorageError: The server cannot be reached, the connection is closed or in a failed
            transaction, or a query fails (the message names the table).
        MissingTableError: A mapped table, column or schema is not in the database (a
            ``StorageError`` and a ``DataError``; the message names it and what there is).
        ParameterError: An invalid argument, mapping or identifier, or a tenant filter the
            tables cannot apply.
        DataError: A column that cannot be converted (an embedding of another type ...).
        BadDataError: ``on_bad="raise"`` and some row is bad (``.report`` names them).
    """
    psycopg = import_psycopg()
    m = mapping if mapping is not None else ColumnMapping()
    if not isinstance(m, ColumnMapping):
        raise ParameterError(f"invalid parameter mapping: {mapping!r} is not a ColumnMapping")
    if schema is not None:
        validate_identifier(schema, "parameter schema")
    if on_bad not in ("raise", "skip"):
        raise ParameterError(f"invalid parameter on_bad: {on_bad!r} is not 'raise' or 'skip'")
    if tenant is not None:
        _tenant_param(tenant)
    if isinstance(database, str):
        parts, shown = conninfo_parts(database)
        extra = {} if "connect_timeout" in parts else {"connect_timeout": CONNECT_TIMEOUT}
        try:
            conn = psycopg.connect(database, autocommit=True, **extra)
        except psycopg.Error as exc:
            raise StorageError(f"cannot connect to PostgreSQL ({shown!r}): {exc}") from None
        try:
            tables = _load(conn, m, tenant, schema)
        finally:
            conn.close()
    elif isinstance(database, psycopg.Connection):
        tables = _load(database, m, tenant, schema)
    else:
        raise ParameterError(
            f"invalid parameter database: {type(database).__name__} is neither a conninfo "
            "string nor a psycopg.Connection"
        )
    checked, report = tables.check(on_bad)
    return PostgresTables(
        entities=checked.entities,
        facts=checked.facts,
        chunks=checked.chunks,
        mentions=checked.mentions,
        aliases=checked.aliases,
        embeddings=checked.embeddings,
        statuses=checked.statuses,
        sources=checked.sources,
        report=report,
    )
