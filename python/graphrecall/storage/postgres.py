"""Load :class:`~graphrecall.tables.GraphTables` from PostgreSQL (with pgvector).

The user's tables and columns are named by a :class:`~graphrecall.storage.mapping.ColumnMapping`
(validated identifiers, quoted with ``psycopg.sql.Identifier``); the only value that enters
a query, the tenant, is a query parameter (bound by psycopg; in a ``COPY``, which takes no
server-side parameters, psycopg's quoted literal), never text formatted by us. All tables
are read in one read-only transaction (``REPEATABLE READ`` when the loader starts it, so
the tables are one consistent snapshot; inside a transaction of the caller's connection, a
savepoint rolled back at the end).

Each table is read with one ``COPY (SELECT ...) TO STDOUT (FORMAT csv)`` parsed by
``pyarrow.csv`` with the column types taken from the catalog, then converted like
:func:`~graphrecall.storage.arrow.load_arrow`. (Measured on 1M facts rows: about 3x faster
than ``cursor.fetchall()`` of the same query, text or binary, plus its conversion to
columns; no Python object is made per numeric value, and the COPY's rows are drained from
libpq in one loop.) How PostgreSQL types are read:

* ``smallint`` / ``integer`` / ``bigint`` -> int64; ``real`` -> float32 (the stored value);
  ``double precision`` / ``numeric`` -> float64 (``numeric`` converted on the server);
  ``boolean`` -> bool;
* ``timestamp`` / ``timestamptz`` / ``date`` in a time column -> int64 seconds (the epoch
  computed on the server; ``infinity`` is reported by the check);
* pgvector ``vector`` in an ``embedding`` column -> ``float32 (n, d)`` matrices, read in
  its binary form (``vector_send``, hex in the CSV) and decoded for the whole column at
  once: exact, and 3x faster end to end than its text form (measured on 50k x 384); the
  ``pgvector`` Python package is not needed. ``halfvec`` and arrays of numbers (``real[]``,
  ``float8[]``) are parsed from their text by Arrow compute; ``bytea`` of little-endian
  float32 is read as blobs;
* an array in a list column (``mentions.entity``, ``mentions.chunk``, ``aliases.alias``,
  e.g. seed 001's ``chunks.mentioned_entity_ids uuid[]``) -> one row per element
  (``unnest`` on the server);
* a time column of another type is read as it is (ints as seconds, ISO-8601 text);
* other arrays (``tags text[]``) -> their JSON text; ``json`` / ``jsonb`` -> JSON text
  (:meth:`GraphTables.check` parses both); ``uuid``, enums and anything else -> text.

With ``tenant=`` only that tenant's rows are read (the filter is in the SQL, the tenant a
parameter): entities by their tenant column; facts by their own tenant column when the
mapping has one (``facts.tenant``), otherwise those whose subject is one of the tenant's
entities; chunks by their tenant column (or, without one, those mentioning the tenant's
entities); mentions and aliases of the tenant's entities.

The loaded tables are checked (``on_bad``) before they are returned: a
:class:`PostgresTables` carries the :class:`~graphrecall.tables.LoadReport`.

Needs ``psycopg`` 3 (``pip install "psycopg[binary]"``) and ``pyarrow``.
"""

from __future__ import annotations

import binascii
import importlib
import selectors
import uuid
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError
from ..tables import GraphTables, LoadReport, OnBad
from ..tables.mapping import LIST_COLUMNS, TABLES, TIME_COLUMNS, ColumnMapping, validate_identifier
from .arrow import ArrowSource, Column, tables_from_sources
from .errors import StorageError

if TYPE_CHECKING:
    import psycopg

__all__ = ["MissingTableError", "PostgresTables", "load_postgres"]

#: Seconds to wait for a connection when the conninfo sets no ``connect_timeout``.
CONNECT_TIMEOUT = 10

_INT_TYPES = frozenset({"int2", "int4", "int8", "oid"})
_TIME_TYPES = frozenset({"timestamp", "timestamptz", "date"})
_VECTOR_TYPES = frozenset({"vector", "halfvec"})
_TEXT_TYPES = frozenset({"text", "varchar", "bpchar", "name", "char", "citext", "uuid"})


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


# ---------------------------------------------------------------------------- psycopg


def _psycopg() -> Any:
    try:
        return importlib.import_module("psycopg")
    except ImportError:  # pragma: no cover - psycopg is in the test extra
        raise ImportError('load_postgres needs psycopg 3: pip install "psycopg[binary]"') from None


def _sql() -> Any:
    _psycopg()
    return importlib.import_module("psycopg.sql")


def _pa() -> Any:
    return importlib.import_module("pyarrow")


def _pc() -> Any:
    return importlib.import_module("pyarrow.compute")


def _conninfo(conninfo: str) -> tuple[dict[str, Any], str]:
    """A conninfo's parameters, and the conninfo for messages (without its password)."""
    psycopg = _psycopg()
    try:
        parts: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise ParameterError(
            f"invalid parameter database: not a PostgreSQL conninfo: {exc}"
        ) from None
    shown: str = psycopg.conninfo.make_conninfo(
        "", **{k: v for k, v in parts.items() if k != "password"}
    )
    return parts, shown


def _where(conn: psycopg.Connection[Any]) -> str:
    info = conn.info
    return f"PostgreSQL database {info.dbname!r} on {info.host}:{info.port} (user {info.user!r})"


@contextmanager
def _snapshot(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """A read-only transaction for the load, rolled back at the end (a savepoint when the
    caller's connection is already in a transaction)."""
    psycopg = _psycopg()
    status = conn.info.transaction_status
    ts = psycopg.pq.TransactionStatus
    if status == ts.INERROR:
        raise StorageError(
            "the PostgreSQL connection is in a failed transaction; roll it back before loading"
        )
    if status not in (ts.IDLE, ts.INTRANS):
        raise StorageError(f"the PostgreSQL connection is busy ({status.name})")
    with conn.transaction(force_rollback=True):
        cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
        if status == ts.IDLE:
            level = "" if conn.isolation_level is not None else "ISOLATION LEVEL REPEATABLE READ, "
            cur.execute(f"SET TRANSACTION {level}READ ONLY")
        # Floats must come back exactly (shortest round-trip form): at least 1.
        cur.execute(
            "SELECT set_config('extra_float_digits', '1', true) "
            "WHERE current_setting('extra_float_digits')::int < 1"
        )
        yield


def _fetch_one(conn: psycopg.Connection[Any], query: Any, params: Any) -> tuple[Any, ...] | None:
    psycopg = _psycopg()
    cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
    row: tuple[Any, ...] | None = cur.execute(query, params).fetchone()
    return row


def _fetch_all(conn: psycopg.Connection[Any], query: Any, params: Any) -> list[tuple[Any, ...]]:
    psycopg = _psycopg()
    cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
    rows: list[tuple[Any, ...]] = cur.execute(query, params).fetchall()
    return rows


# ---------------------------------------------------------------------------- the catalog


@dataclass(frozen=True)
class _PgColumn:
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


class _Table:
    """One of the user's tables in the database: its name, columns and types."""

    def __init__(self, ours: str, theirs: str, parts: tuple[str, ...], columns: list[_PgColumn]):
        self.ours = ours
        self.theirs = theirs
        self.ident = _sql().Identifier(*parts)
        self.types = {c.name: c for c in columns}
        self.columns = [c.name for c in columns]
        self.selected: dict[str, str] = {}

    def is_list(self, ours: str) -> bool:
        theirs = self.selected.get(ours)
        return theirs is not None and self.types[theirs].is_array


def _open_table(
    conn: psycopg.Connection[Any], ours: str, theirs: str, schema: str | None
) -> _Table | None:
    """The table (or view) ``theirs`` (in ``schema`` unless qualified), None when missing.
    An unquoted-style fallback: a name with capitals is also tried in lower case."""
    sql = _sql()
    parts = tuple(theirs.split("."))
    if len(parts) == 1 and schema is not None:
        parts = (schema, parts[0])
    candidates = [parts]
    lower = tuple(p.lower() for p in parts)
    if lower != parts:
        candidates.append(lower)
    for cand in candidates:
        name = sql.Identifier(*cand).as_string(conn)
        row = _fetch_one(conn, "SELECT to_regclass(%s)::oid", [name])
        if row is not None and row[0] is not None:
            cols = [_PgColumn(*r) for r in _fetch_all(conn, _COLUMNS_SQL, [row[0]])]
            return _Table(ours, theirs, cand, cols)
    return None


def _table_names(conn: psycopg.Connection[Any], schema: str | None) -> list[str]:
    """Tables and views the loader could see (for messages), at most 50."""
    if schema is not None:
        where, params = "table_schema = %s", [schema]
    else:
        where, params = "table_schema = ANY(current_schemas(false))", []
    rows = _fetch_all(
        conn,
        "SELECT CASE WHEN table_schema = ANY(current_schemas(false)) THEN table_name "
        "ELSE table_schema || '.' || table_name END FROM information_schema.tables "
        f"WHERE {where} ORDER BY 1 LIMIT 50",
        params,
    )
    return [r[0] for r in rows]


# ---------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class _Expr:
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


def _expr(table: _Table, ours: str, theirs: str) -> _Expr:
    """The select expression of ``theirs`` read as our column ``ours`` of ``table``."""
    sql = _sql()
    pa = _pa()
    col = table.types[theirs]
    ident = sql.Identifier(theirs)
    t = col.typname
    if ours == "embedding":
        numeric_array = col.is_array and col.elem_category == "N"
        if t == "vector":  # its binary form, hex: no float formatting on the server
            return _Expr(
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
            return _Expr((theirs, mode), sql.SQL("{}::text").format(ident), pa.string(), mode)
        if t == "bytea":
            return _Expr(
                (theirs, "hex"), sql.SQL("encode({}, 'hex')").format(ident), pa.string(), "hex"
            )
        raise DataError(
            f"{_label(table)}.{theirs} (embedding) has type {t}; expected a pgvector vector / "
            "halfvec, an array of numbers or a bytea of float32"
        )
    if f"{table.ours}.{ours}" in LIST_COLUMNS and col.is_array:
        elem = col.elem or ""
        if elem in _INT_TYPES:
            return _Expr(
                (theirs, "unnest"), sql.SQL("unnest({})").format(ident), pa.int64(), unnest=True
            )
        return _Expr(
            (theirs, "unnest"), sql.SQL("unnest({})::text").format(ident), pa.string(), unnest=True
        )
    if ours in TIME_COLUMNS and t in _TIME_TYPES:
        return _Expr(
            (theirs, "epoch"),
            sql.SQL("extract(epoch FROM {})::float8").format(ident),
            pa.float64(),
        )
    if t in _INT_TYPES:
        return _Expr((theirs, "int"), ident, pa.int64())
    if t == "float4":  # the stored float32, not the float64 nearest its shortest decimal
        return _Expr((theirs, "float4"), ident, pa.float32())
    if t == "float8":
        return _Expr((theirs, "float"), ident, pa.float64())
    if t == "numeric":
        return _Expr((theirs, "float"), sql.SQL("{}::float8").format(ident), pa.float64())
    if t == "bool":
        return _Expr((theirs, "bool"), ident, pa.bool_())
    if col.is_array:
        return _Expr((theirs, "json"), sql.SQL("to_json({})::text").format(ident), pa.string())
    if t in _TEXT_TYPES or col.category in ("S", "E"):
        return _Expr((theirs, "text"), ident, pa.string())
    return _Expr((theirs, "text"), sql.SQL("{}::text").format(ident), pa.string())


def _label(table: _Table) -> str:
    return table.theirs if table.theirs == table.ours else f"{table.theirs} ({table.ours})"


def _vectors(col: Any, where: str, wide: bool) -> Any:
    """``[1,2,3]`` (pgvector) / ``{1,2,3}`` (arrays) text -> ``large_list<float32>`` (or
    float64 when ``wide``), null for null; a null element (``NULL``) becomes null, which
    the conversion makes NaN and the check refuses."""
    pa = _pa()
    pc = _pc()
    chunks = []
    for arr in col.chunks:
        n = len(arr)
        inner = pc.utf8_slice_codeunits(arr, 1, -1)
        parts = pc.split_pattern(inner, ",")
        flat = pc.list_flatten(parts)
        parents = pc.list_parent_indices(parts)
        keep = pc.not_equal(flat, "")  # "[]" / "{}": no element
        flat = flat.filter(keep)
        parents = parents.filter(keep)
        flat = pc.if_else(pc.equal(flat, "NULL"), pa.scalar(None, pa.string()), flat)
        try:
            values = flat.cast(pa.float64() if wide else pa.float32())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise DataError(
                f"{where}.embedding holds a vector that is not numbers: {exc}"
            ) from None
        counts = np.bincount(parents.to_numpy(zero_copy_only=False), minlength=n)
        chunks.append(_list_array(counts, values, arr.is_null()))
    return pa.chunked_array(chunks, type=pa.large_list(pa.float64() if wide else pa.float32()))


def _list_array(lengths: npt.NDArray[Any], values: Any, null: Any) -> Any:
    pa = _pa()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=null)


def _pgvectors(col: Any, where: str) -> Any:
    """pgvector's binary form (``vector_send``: int16 dimension, int16 unused, then the
    big-endian float32 values), hex-encoded -> ``large_list<float32>``, null for null.

    Decoding hex and dropping each row's 4 header bytes is done on the whole column at once
    (``binascii`` and numpy): 5-6x faster than parsing the text form ``[1,2,3]`` with Arrow
    (measured on 50k x 384), and exact."""
    pa = _pa()
    chunks = []
    for arr in col.chunks:
        n = len(arr)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
        offsets = offsets.astype(np.int64)
        data = arr.buffers()[2]
        hexes = b"" if data is None else memoryview(data)[offsets[0] : offsets[-1]]
        raw = np.frombuffer(binascii.a2b_hex(hexes), dtype=np.uint8)
        sizes = (offsets[1:] - offsets[:-1]) // 2
        starts = (offsets[:-1] - offsets[0]) // 2
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        lengths = np.where(valid, (sizes - 4) // 4, 0)
        heads = starts[valid]
        dims = (raw[heads].astype(np.int64) << 8) | raw[heads + 1]
        bad = (sizes[valid] < 4) | (sizes[valid] % 4 != 0) | (dims != lengths[valid])
        if bad.any():  # pragma: no cover - vector_send always writes this layout
            row = int(np.flatnonzero(valid)[int(np.argmax(bad))])
            raise DataError(f"{where} row {row}: a pgvector value of unexpected layout")
        body = np.ones(len(raw), dtype=bool)
        body[(heads[:, None] + np.arange(4)).ravel()] = False
        values = raw[body].view(">f4").astype(np.float32)
        chunks.append(_list_array(lengths, pa.array(values), arr.is_null()))
    return pa.chunked_array(chunks, type=pa.large_list(pa.float32()))


def _blobs(col: Any) -> Any:
    pa = _pa()
    values = [None if s is None else bytes.fromhex(s) for s in col.to_pylist()]
    return pa.chunked_array([pa.array(values, type=pa.binary())])


def _parse_csv(data: bytearray, exprs: list[_Expr], encoding: str, where: str) -> Any:
    """The COPY output as a ``pyarrow.Table`` with columns ``c0``, ``c1``, ..."""
    pa = _pa()
    csv = importlib.import_module("pyarrow.csv")
    names = [f"c{i}" for i in range(len(exprs))]
    if not data:
        return pa.table({n: pa.array([], type=e.arrow) for n, e in zip(names, exprs, strict=True)})
    text = any(pa.types.is_string(e.arrow) for e in exprs)
    try:
        return csv.read_csv(
            pa.py_buffer(data),
            read_options=csv.ReadOptions(
                column_names=names, encoding="utf8" if encoding in ("utf-8", "utf8") else encoding
            ),
            parse_options=csv.ParseOptions(newlines_in_values=text),
            convert_options=csv.ConvertOptions(
                column_types=dict(zip(names, (e.arrow for e in exprs), strict=True)),
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                true_values=["t"],
                false_values=["f"],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:  # pragma: no cover
        raise DataError(f"cannot parse the rows of {where}: {exc}") from None


# ---------------------------------------------------------------------------- reading


def _filters(tables: dict[str, _Table], tenant_given: bool) -> dict[str, Any]:
    """The WHERE condition of each table for a tenant filter (``%(tenant)s``)."""
    if not tenant_given:
        return {}
    sql = _sql()
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


class _QueryFailed(Exception):
    """A statement sent through libpq failed: the server's message and SQLSTATE."""

    def __init__(self, message: str, sqlstate: str):
        super().__init__(message)
        self.sqlstate = sqlstate


def _next_result(pgconn: Any, sel: selectors.BaseSelector) -> Any:
    """libpq's next result, waiting for the socket (never blocking in C with the GIL)."""
    while True:
        pgconn.consume_input()
        if not pgconn.is_busy():
            return pgconn.get_result()
        sel.select()


def _failure(res: Any, encoding: str) -> _QueryFailed:
    pq = _psycopg().pq
    if res is None:  # pragma: no cover - libpq always answers a query
        return _QueryFailed("the server sent no result", "")
    primary = res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or res.error_message or b""
    message = primary.decode(encoding, "replace").strip()
    state = (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode("ascii", "replace")
    return _QueryFailed(message or f"unexpected result status {res.status!r}", state)


def _copy_out(conn: psycopg.Connection[Any], query: bytes) -> bytearray:
    """Run a ``COPY ... TO STDOUT`` through libpq and return its bytes.

    psycopg's ``Copy`` makes every row (one protocol message each) go through a generator
    and a wait call, about 1.4 us a row; draining libpq's buffer in one loop and waiting on
    the socket only when it is empty reads 1M rows 2-3x faster (measured). The connection
    lock is held throughout, as psycopg's own methods do.
    """
    pq = _psycopg().pq
    encoding = conn.info.encoding
    pgconn = conn.pgconn
    with conn.lock, selectors.DefaultSelector() as sel:
        sel.register(pgconn.socket, selectors.EVENT_READ)
        try:
            pgconn.send_query(query)
            res = _next_result(pgconn, sel)
            if res is None or res.status != pq.ExecStatus.COPY_OUT:
                failed = _failure(res, encoding)
                while _next_result(pgconn, sel) is not None:
                    pass
                raise failed
            data = bytearray()
            get = pgconn.get_copy_data
            while True:
                n, chunk = get(1)
                if n > 0:
                    data += chunk
                elif n == 0:  # nothing buffered: wait for the server
                    sel.select()
                    pgconn.consume_input()
                else:  # -1: the copy is done (-2 raises)
                    break
            res = _next_result(pgconn, sel)
            while _next_result(pgconn, sel) is not None:
                pass
            if res is None or res.status != pq.ExecStatus.COMMAND_OK:
                raise _failure(res, encoding)
            return data
        except BaseException:
            _abort(pgconn, sel)
            raise


def _abort(pgconn: Any, sel: selectors.BaseSelector) -> None:
    """After an error or an interrupt in the middle of a COPY: cancel it and read what is
    left, so that the caller's connection stays usable (best effort)."""
    pq = _psycopg().pq
    if pgconn.transaction_status != pq.TransactionStatus.ACTIVE:
        return
    try:
        pgconn.get_cancel().cancel()
        while True:
            n, _ = pgconn.get_copy_data(1)
            if n == 0:
                sel.select(timeout=10)
                pgconn.consume_input()
            elif n < 0:
                break
        while _next_result(pgconn, sel) is not None:
            pass
    except Exception:  # pragma: no cover - the connection is broken: psycopg reports it next
        return


def _copy(
    conn: psycopg.Connection[Any], query: Any, params: dict[str, Any], table: _Table
) -> bytearray:
    """Run ``COPY (query) TO STDOUT (FORMAT csv)``; its bytes. COPY takes no bound
    parameters, so the tenant is merged into the statement by psycopg as a quoted literal
    (its adapters, libpq's escaping: the SQL text never holds an unescaped value)."""
    psycopg = _psycopg()
    try:
        if params:
            text = psycopg.ClientCursor(conn).mogrify(query, params)
        else:
            text = query.as_string(conn)
        return _copy_out(conn, text.encode(conn.info.encoding))
    except (psycopg.Error, _QueryFailed) as exc:
        state = exc.sqlstate if isinstance(exc, _QueryFailed) else (exc.sqlstate or "")
        hint = ""
        if "tenant" in params and state.startswith(("22", "42883")):
            hint = f" (does tenant {params['tenant']!r} compare with the tenant column?)"
        raise StorageError(
            f"reading table {table.theirs!r} ({table.ours}) failed: {exc}{hint}"
        ) from None


def _source(
    conn: psycopg.Connection[Any],
    table: _Table,
    where: Any,
    params: dict[str, Any],
) -> ArrowSource:
    sql = _sql()
    label = _label(table)

    def read(sel: dict[str, str]) -> dict[str, Column]:
        exprs: list[_Expr] = []
        index: dict[str, int] = {}
        for ours, theirs in sel.items():
            e = _expr(table, ours, theirs)
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
        data = _copy(conn, copy, params if where is not None else {}, table)
        got = _parse_csv(data, exprs, conn.info.encoding, label)
        columns = []
        for i, e in enumerate(exprs):
            col = got.column(f"c{i}")
            if e.mode == "pgvector":
                col = _pgvectors(col, label)
            elif e.mode in ("vector", "vector64"):
                col = _vectors(col, label, e.mode == "vector64")
            elif e.mode == "hex":
                col = _blobs(col)
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
    psycopg = _psycopg()
    if conn.closed:
        raise StorageError("the PostgreSQL connection is closed")
    where = _where(conn)
    params = {} if tenant is None else {"tenant": _tenant_param(tenant)}
    try:
        with _snapshot(conn):
            if schema is not None:
                found = _fetch_one(conn, "SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema])
                if found is None:
                    raise MissingTableError(f"no schema {schema!r} in {where}")
            tables: dict[str, _Table] = {}
            for ours in TABLES:
                theirs = m.table(ours)
                table = _open_table(conn, ours, theirs, schema)
                if table is None:
                    if m.table_required(ours):
                        raise MissingTableError(
                            f"no table {theirs!r} ({ours}) in {where}"
                            + ("" if schema is None else f", schema {schema!r}")
                            + f"; it has {_table_names(conn, schema)!r}"
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
    psycopg = _psycopg()
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
        parts, shown = _conninfo(database)
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
