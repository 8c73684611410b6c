"""The psycopg side of the PostgreSQL loader: lazy imports, conninfo parsing, and the
read-only transaction every load runs in."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ...errors import ParameterError
from ..errors import StorageError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "conninfo_parts",
    "database_label",
    "fetch_all",
    "fetch_one",
    "import_psycopg",
    "import_sql",
    "snapshot",
]


def import_psycopg() -> Any:
    """The ``psycopg`` module, with an install hint when it is missing."""
    try:
        return importlib.import_module("psycopg")
    except ImportError:  # pragma: no cover - psycopg is in the test extra
        raise ImportError('load_postgres needs psycopg 3: pip install "psycopg[binary]"') from None


def import_sql() -> Any:
    """The ``psycopg.sql`` module (identifiers and composed statements)."""
    import_psycopg()
    return importlib.import_module("psycopg.sql")


def conninfo_parts(conninfo: str) -> tuple[dict[str, Any], str]:
    """A conninfo's parameters, and the conninfo for messages (without its password)."""
    psycopg = import_psycopg()
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


def database_label(conn: psycopg.Connection[Any]) -> str:
    """The connected database, host, port and user, for messages."""
    info = conn.info
    return f"PostgreSQL database {info.dbname!r} on {info.host}:{info.port} (user {info.user!r})"


@contextmanager
def snapshot(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """A read-only transaction for the load, rolled back at the end (a savepoint when the
    caller's connection is already in a transaction)."""
    psycopg = import_psycopg()
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


def fetch_one(conn: psycopg.Connection[Any], query: Any, params: Any) -> tuple[Any, ...] | None:
    """The first row of a query, as a tuple (None when it returns none)."""
    psycopg = import_psycopg()
    cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
    row: tuple[Any, ...] | None = cur.execute(query, params).fetchone()
    return row


def fetch_all(conn: psycopg.Connection[Any], query: Any, params: Any) -> list[tuple[Any, ...]]:
    """Every row of a query, as tuples."""
    psycopg = import_psycopg()
    cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
    rows: list[tuple[Any, ...]] = cur.execute(query, params).fetchall()
    return rows
