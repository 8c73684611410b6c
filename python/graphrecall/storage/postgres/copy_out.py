"""``COPY (SELECT ...) TO STDOUT (FORMAT csv)`` run through libpq, and its CSV parsed by
``pyarrow.csv`` with the column types the catalog gave."""

from __future__ import annotations

import importlib
import selectors
from typing import TYPE_CHECKING, Any

from ...errors import DataError
from ..arrow.source import import_pyarrow
from ..errors import StorageError
from .catalog import ColumnExpr, PgTable
from .connection import import_psycopg

if TYPE_CHECKING:
    import psycopg

__all__ = ["QueryFailed", "copy_csv", "parse_csv"]


def parse_csv(data: bytearray, exprs: list[ColumnExpr], encoding: str, where: str) -> Any:
    """The COPY output as a ``pyarrow.Table`` with columns ``c0``, ``c1``, ..."""
    pa = import_pyarrow()
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


class QueryFailed(Exception):
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


def _failure(res: Any, encoding: str) -> QueryFailed:
    pq = import_psycopg().pq
    if res is None:  # pragma: no cover - libpq always answers a query
        return QueryFailed("the server sent no result", "")
    primary = res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or res.error_message or b""
    message = primary.decode(encoding, "replace").strip()
    state = (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode("ascii", "replace")
    return QueryFailed(message or f"unexpected result status {res.status!r}", state)


def _copy_out(conn: psycopg.Connection[Any], query: bytes) -> bytearray:
    """Run a ``COPY ... TO STDOUT`` through libpq and return its bytes.

    psycopg's ``Copy`` makes every row (one protocol message each) go through a generator
    and a wait call; draining libpq's buffer in one loop and waiting on the socket only
    when it is empty is faster. The connection lock is held throughout, as psycopg's own
    methods do.
    """
    pq = import_psycopg().pq
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
    pq = import_psycopg().pq
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


def copy_csv(
    conn: psycopg.Connection[Any], query: Any, params: dict[str, Any], table: PgTable
) -> bytearray:
    """Run ``COPY (query) TO STDOUT (FORMAT csv)``; its bytes. COPY takes no bound
    parameters, so the tenant is merged into the statement by psycopg as a quoted literal
    (its adapters, libpq's escaping: the SQL text never holds an unescaped value)."""
    psycopg = import_psycopg()
    try:
        if params:
            text = psycopg.ClientCursor(conn).mogrify(query, params)
        else:
            text = query.as_string(conn)
        return _copy_out(conn, text.encode(conn.info.encoding))
    except (psycopg.Error, QueryFailed) as exc:
        state = exc.sqlstate if isinstance(exc, QueryFailed) else (exc.sqlstate or "")
        hint = ""
        if "tenant" in params and state.startswith(("22", "42883")):
            hint = f" (does tenant {params['tenant']!r} compare with the tenant column?)"
        raise StorageError(
            f"reading table {table.theirs!r} ({table.ours}) failed: {exc}{hint}"
        ) from None
