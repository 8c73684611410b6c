"""The fact log of a store (schema version 3): where added facts are written, and the fold
that moves them into the indexed ``facts`` table.

An append of facts commits their rows to ``facts_log`` (:data:`~.schema.LOG_SCHEMA`: the
columns and checks of ``facts``, no secondary index), so its commit writes a few
sequential pages rather than a random leaf of ``facts_subject``, ``facts_object`` and the
ids' index per fact. Readers see ``facts`` and then the log, in rowid order: the rows
that a fold would leave. A fold (:func:`fold`) inserts the logged rows into ``facts`` in
their order and empties the log in one transaction, so a crash leaves each fact in
exactly one of the two tables. :class:`~.store.SQLiteStore` folds at the start of every
write transaction that may need the indexed table (deletes, updates, whole-graph writes),
when the log passes :data:`FOLD_ROWS`, and on :meth:`~.store.SQLiteStore.fold`.
"""

from __future__ import annotations

import sqlite3

from ...tables import COLUMNS
from . import checksum
from .schema import LOG_SCHEMA

#: The table that holds logged facts.
LOG_TABLE = "facts_log"

#: Logged facts at which a write transaction folds the log before it writes: one fold per
#: this many added facts (a fold costs about what inserting its rows into ``facts`` costs,
#: in fewer, larger transactions).
FOLD_ROWS = 100_000


def logged(cur: sqlite3.Cursor) -> int:
    """The number of logged facts (the log's checksum row count: no scan)."""
    row = cur.execute("SELECT rows FROM checksums WHERE name = ?", (LOG_TABLE,)).fetchone()
    return 0 if row is None else int(row[0])


def fold(cur: sqlite3.Cursor) -> int:
    """Move every logged fact into ``facts``, in log order, inside the caller's write
    transaction; returns the number moved. Both tables' checksums stay true."""
    n = logged(cur)
    if n == 0:
        return 0
    cols = ", ".join(COLUMNS["facts"])
    with checksum.appending(cur, "facts", n):
        cur.execute(f"INSERT INTO facts ({cols}) SELECT {cols} FROM {LOG_TABLE} ORDER BY rowid")
    # Emptied, the log's checksum is (0, 0): no trigger per deleted row.
    cur.execute(f"DROP TRIGGER {LOG_TABLE}_checksum_delete")
    cur.execute(f"DELETE FROM {LOG_TABLE}")
    cur.execute("UPDATE checksums SET rows = 0, total = 0 WHERE name = ?", (LOG_TABLE,))
    cur.execute(checksum.triggers(LOG_TABLE)[1])
    return n


def create(cur: sqlite3.Cursor) -> None:
    """Create the empty log, its checksum and triggers (inside a write transaction of a
    checksummed store)."""
    for ddl in _statements(LOG_SCHEMA):
        cur.execute(ddl)
    cur.execute("INSERT INTO checksums (name, rows, total) VALUES (?, 0, 0)", (LOG_TABLE,))
    for ddl in checksum.triggers(LOG_TABLE):
        cur.execute(ddl)


def _statements(script: str) -> list[str]:
    """The statements of an SQL script (a trigger's body holds semicolons)."""
    out: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending)
            pending = ""
    return out
