"""Per-table checksums of a store (schema version 2): what a bit flip in the file changes is
found when the store is read, although SQLite keeps no checksum of its pages.

Each checksummed table has a row in ``checksums(name, rows, total)``: its row count and the
sum, modulo 2**64, of ``crc32(ascii((rowid, *columns)))`` over its rows (the values as
``sqlite3`` returns them: ``int``, ``float``, ``str``, ``bytes`` or ``None``). The sum does not
depend on the order of the rows, so triggers keep it up to date one changed row at a time
(an insert adds the row's hash, a delete subtracts it, an update does both), in the
transaction that changes the row: an append hashes the new rows only. An append of many
rows (:func:`appending`) lifts the insert trigger for its statement and adds the rows' hashes
in one pass after it, in the same transaction, to the same sum. A whole-graph write
recomputes the sums once from what it wrote. Reading a table recomputes its sum from the
rows read and compares.

The triggers call the SQL function ``gr_checksum``, which :class:`SQLiteStore` registers
on its connections: another SQLite client can read a store but cannot change it (its
writes fail with ``no such function: gr_checksum``), so it cannot leave a stale checksum.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...tables import COLUMNS
from ..errors import CorruptStoreError

#: The checksummed tables and the columns each checksum covers (after the rowid).
TABLES: Mapping[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "chunks": tuple(COLUMNS["chunks"]),
    "entities": tuple(COLUMNS["entities"]),
    "aliases": tuple(COLUMNS["aliases"]),
    "facts": tuple(COLUMNS["facts"]),
    "facts_log": tuple(COLUMNS["facts"]),  # schema version 3
    "mentions": tuple(COLUMNS["mentions"]),
    "embeddings": ("kind", "model", "id", "dim", "vector"),
}

#: The DDL of the checksum table (schema version 2).
SCHEMA = """
CREATE TABLE checksums (
    name  TEXT PRIMARY KEY,     -- a checksummed table
    rows  INTEGER NOT NULL,     -- its row count
    total INTEGER NOT NULL      -- sum of crc32(ascii((rowid, *columns))) mod 2**64, signed
);
"""

_MOD = 1 << 64


def signed(value: int) -> int:
    """``value`` modulo 2**64 as a signed 64-bit int (how SQLite stores a checksum)."""
    value %= _MOD
    return value - _MOD if value >= 1 << 63 else value


def row_hash(row: tuple[Any, ...]) -> int:
    """The hash of one row: ``(rowid, *columns)`` as ``sqlite3`` returns them. ``ascii``
    escapes every non-ASCII character the same way in every Python version (``repr``
    leaves the printable ones, a set that grows with Unicode)."""
    return zlib.crc32(ascii(row).encode("ascii"))


def total_of(rows: Iterable[tuple[Any, ...]]) -> int:
    """The checksum of rows ``(rowid, *columns)``, as stored (a signed 64-bit int)."""
    return signed(sum(map(zlib.crc32, map(str.encode, map(ascii, rows)))))  # row_hash, inlined


def _sql_checksum(total: int, sign: int, *row: Any) -> int:
    return signed(total + sign * row_hash(row))


def register(conn: sqlite3.Connection) -> None:
    """Register ``gr_checksum(total, sign, rowid, *columns)`` (the triggers' function)."""
    conn.create_function("gr_checksum", -1, _sql_checksum, deterministic=True)


def select(table: str) -> str:
    """The query that reads a checksummed table: ``rowid`` then its columns, by rowid."""
    return f"SELECT rowid, {', '.join(TABLES[table])} FROM {table} ORDER BY rowid"


def triggers(table: str) -> list[str]:
    """The DDL of ``table``'s insert, delete and update triggers (in that order)."""
    cols = TABLES[table]
    new = ", ".join(["NEW.rowid", *(f"NEW.{c}" for c in cols)])
    old = ", ".join(["OLD.rowid", *(f"OLD.{c}" for c in cols)])
    where = f"WHERE name = '{table}'"
    return [
        f"CREATE TRIGGER {table}_checksum_insert AFTER INSERT ON {table} BEGIN "
        f"UPDATE checksums SET rows = rows + 1, total = gr_checksum(total, 1, {new}) {where}; "
        "END",
        f"CREATE TRIGGER {table}_checksum_delete AFTER DELETE ON {table} BEGIN "
        f"UPDATE checksums SET rows = rows - 1, total = gr_checksum(total, -1, {old}) {where}; "
        "END",
        f"CREATE TRIGGER {table}_checksum_update AFTER UPDATE ON {table} BEGIN "
        "UPDATE checksums SET total = "
        f"gr_checksum(gr_checksum(total, -1, {old}), 1, {new}) {where}; END",
    ]


#: The fewest rows for which :func:`appending` hashes in one pass rather than per row
#: (about where the two cost the same: see benches/results/live.md).
BATCH_ROWS = 128


@contextmanager
def appending(cur: sqlite3.Cursor, table: str, n: int) -> Iterator[None]:
    """Around the inserts of ``n`` rows into ``table`` (inside a write transaction): for
    :data:`BATCH_ROWS` rows or more, the insert trigger is lifted for them and the table's
    checksum gains their hashes at the end, read back as stored (the sum the trigger would
    have made). The DDL is part of the transaction: a rollback restores the trigger.
    Rows inserted before a failure are counted too, so the checksum stays true if the
    caller goes on with the transaction."""
    if n < BATCH_ROWS:
        yield
        return
    (last,) = cur.execute(f"SELECT max(rowid) FROM {table}").fetchone()
    insert_trigger = triggers(table)[0]
    cur.execute(f"DROP TRIGGER {table}_checksum_insert")
    try:
        yield
    finally:
        if cur.connection.in_transaction:
            rows = cur.execute(
                f"SELECT rowid, {', '.join(TABLES[table])} FROM {table} WHERE rowid > ?",
                (0 if last is None else last,),
            ).fetchall()
            (count, total) = cur.execute(
                "SELECT rows, total FROM checksums WHERE name = ?", (table,)
            ).fetchone()
            cur.execute(
                "UPDATE checksums SET rows = ?, total = ? WHERE name = ?",
                (count + len(rows), signed(total + total_of(rows)), table),
            )
            cur.execute(insert_trigger)


def drop_triggers(cur: sqlite3.Cursor) -> None:
    """Drop the triggers (a whole-graph write recomputes the sums instead)."""
    for table in TABLES:
        for op in ("insert", "delete", "update"):
            cur.execute(f"DROP TRIGGER IF EXISTS {table}_checksum_{op}")


def present(cur: sqlite3.Cursor) -> list[str]:
    """The checksummed tables this store holds (``facts_log`` from schema version 3)."""
    held = {r[0] for r in cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return [t for t in TABLES if t in held]


def create_triggers(cur: sqlite3.Cursor) -> None:
    """Create the triggers that keep every checksum up to date."""
    for table in present(cur):
        for ddl in triggers(table):
            cur.execute(ddl)


def recompute(cur: sqlite3.Cursor) -> None:
    """Set every table's checksum from its rows (inside the writing transaction)."""
    for table in present(cur):
        rows = cur.execute(select(table)).fetchall()
        cur.execute(
            "INSERT INTO checksums (name, rows, total) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET rows = excluded.rows, total = excluded.total",
            (table, len(rows), total_of(rows)),
        )


def verify(path: Path, table: str, rows: list[tuple[Any, ...]], stored: Mapping[str, Any]) -> None:
    """Check rows read from ``table`` against its stored checksum.

    Args:
        path: The store (for the message).
        table: The table.
        rows: Its rows as :func:`select` reads them.
        stored: ``name -> (rows, total)`` from the checksum table.

    Raises:
        CorruptStoreError: The table has no checksum, or its rows do not match it.
    """
    verify_sum(path, table, len(rows), total_of(rows), stored)


def verify_sum(path: Path, table: str, n: int, total: int, stored: Mapping[str, Any]) -> None:
    """Check the row count ``n`` and checksum ``total`` of the rows read from ``table``
    (summed chunk by chunk) against its stored checksum; raises as :func:`verify`."""
    expected = stored.get(table)
    if expected is None:
        raise CorruptStoreError(f"{path}: corrupted: the checksum of table {table} is missing")
    count, want = expected
    if count != n:
        raise CorruptStoreError(
            f"{path}: corrupted: table {table} has {n} rows, its checksum says {count}"
        )
    if total != want:
        raise CorruptStoreError(
            f"{path}: corrupted: the rows of table {table} do not match their checksum"
        )
