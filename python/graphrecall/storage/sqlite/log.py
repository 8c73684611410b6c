"""The fact log of a store (schema version 3): where added facts are written, and the fold
that moves them into the indexed ``facts`` table.

An append of facts commits their rows to ``facts_log`` (:data:`~.schema.LOG_SCHEMA`: the
columns and checks of ``facts``, no secondary index), so its commit writes a few
sequential pages rather than a random leaf of ``facts_subject``, ``facts_object`` and the
ids' index per fact. Readers see ``facts`` and then the log, in rowid order: the rows
that a fold would leave. A fold (:func:`fold`) inserts the oldest logged rows into
``facts`` in their order and deletes them from the log in one transaction, so a crash
leaves each fact in exactly one of the two tables.

When :class:`~.store.SQLiteStore` folds:

* the whole log at the start of every write transaction that may need the indexed table
  (deletes, updates, whole-graph writes: their statements name ``facts``) and on
  :meth:`~.store.SQLiteStore.fold`;
* a slice (:data:`FOLD_SLICE`) per transaction in the background once no write came for
  :data:`FOLD_IDLE_S`;
* the fold debt, at the end of each write transaction that logs facts (:func:`due`):
  once the log holds more than :data:`FOLD_FROM` facts, the write also folds the excess,
  at most :data:`FOLD_RATIO` facts per fact it logged (one :data:`FOLD_SLICE` at least
  while more than :data:`FOLD_ROWS` would be left). Under writes that never pause, the
  log stays at :data:`FOLD_FROM` and each write folds as many facts as it logs, never a
  whole log.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import TYPE_CHECKING

from ...tables import COLUMNS
from . import checksum
from .schema import LOG_SCHEMA, statements

if TYPE_CHECKING:
    from .store import SQLiteStore

#: The table that holds logged facts.
LOG_TABLE = "facts_log"

#: The bound on the log: over it, a write that logs facts folds at least one
#: :data:`FOLD_SLICE` (the fold debt keeps the log at :data:`FOLD_FROM`, or at this bound
#: if lower; a log left longer, e.g. by older settings, shrinks a slice per write).
FOLD_ROWS = 100_000

#: Logged facts folded per transaction by the idle fold, and at least by a write that
#: would leave more than :data:`FOLD_ROWS` (a fold holds the store's write lock).
FOLD_SLICE = 2_000

#: The low mark of the fold debt: a write that leaves more logged facts than this folds
#: the excess (:func:`due`). Up to this many added facts cost their writes the log only
#: (a burst); a delete or update folds at most about this many first.
FOLD_FROM = 10_000

#: The most facts a write folds per fact it logs (:func:`due`): over 1, the debt left by
#: a lower mark or another writer shrinks by (ratio - 1) facts per fact logged.
FOLD_RATIO = 2

#: Seconds without a write after which the store folds its log in the background, one
#: slice per transaction while it holds a slice or more (None: never;
#: :meth:`~.store.SQLiteStore.fold` still does).
FOLD_IDLE_S = 1.0


#: The ``meta`` key counting the store's content-changing transactions
#: (:meth:`~.store.SQLiteStore.content_version`); a fold is not one of them.
WRITES = "writes"


def count_write(cur: sqlite3.Cursor) -> int:
    """Add one to the store's content-changing transactions; returns the new count."""
    row = cur.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') "
        "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value",
        (WRITES,),
    ).fetchone()
    return int(row[0])


def logged(cur: sqlite3.Cursor) -> int:
    """The number of logged facts (the log's checksum row count: no scan)."""
    row = cur.execute("SELECT rows FROM checksums WHERE name = ?", (LOG_TABLE,)).fetchone()
    return 0 if row is None else int(row[0])


def due(logged: int, appended: int, store: SQLiteStore) -> int:
    """The facts that a write transaction which logged ``appended`` facts folds before its
    commit, the log then holding ``logged``: the excess over the low mark (``fold_from``,
    or ``fold_at`` if lower), at most ``fold_ratio`` per fact logged; one ``fold_slice``
    at least where that would leave more than ``fold_at`` (never more than ``logged``;
    none for a write that logged no fact, which adds no debt). A log at or under the mark
    before the write is back there after it, so a write folds at most
    ``max(fold_ratio * appended, fold_slice)`` facts."""
    if appended <= 0 or logged <= 0:
        return 0
    mark = min(store.fold_from, store.fold_at)
    n = min(max(logged - mark, 0), store.fold_ratio * appended)
    if logged - n > store.fold_at:
        n = max(n, store.fold_slice)
    return min(n, logged)


def settle(cur: sqlite3.Cursor, store: SQLiteStore, appended: int) -> int:
    """Fold what :func:`due` asks of a write that logged ``appended`` facts, inside its
    transaction (so the write and its fold commit together); returns the facts moved."""
    n = due(logged(cur), appended, store) if appended > 0 else 0
    return fold(cur, n) if n > 0 else 0


def fold(cur: sqlite3.Cursor, limit: int | None = None) -> int:
    """Move the oldest ``limit`` logged facts (all when None) into ``facts``, in log order,
    inside the caller's write transaction; returns the number moved. Both tables'
    checksums stay true."""
    n = logged(cur)
    if n == 0:
        return 0
    cols = ", ".join(COLUMNS["facts"])
    where = ""
    if limit is not None and limit < n:
        n = max(limit, 1)
        (last,) = cur.execute(
            f"SELECT rowid FROM {LOG_TABLE} ORDER BY rowid LIMIT 1 OFFSET ?", (n - 1,)
        ).fetchone()
        where = f"WHERE rowid <= {int(last):d}"
    with checksum.appending(cur, "facts", n):
        cur.execute(
            f"INSERT INTO facts ({cols}) SELECT {cols} FROM {LOG_TABLE} {where} ORDER BY rowid"
        )
    # The log's checksum loses the moved rows in one pass, not a trigger per deleted row
    # (emptied, it is (0, 0)).
    if where:
        moved = cur.execute(f"SELECT rowid, {cols} FROM {LOG_TABLE} {where}").fetchall()
        (count, total) = cur.execute(
            "SELECT rows, total FROM checksums WHERE name = ?", (LOG_TABLE,)
        ).fetchone()
        count, total = count - len(moved), checksum.signed(total - checksum.total_of(moved))
    else:
        count, total = 0, 0
    cur.execute(f"DROP TRIGGER {LOG_TABLE}_checksum_delete")
    cur.execute(f"DELETE FROM {LOG_TABLE} {where}")
    cur.execute(
        "UPDATE checksums SET rows = ?, total = ? WHERE name = ?", (count, total, LOG_TABLE)
    )
    cur.execute(checksum.triggers(LOG_TABLE)[1])
    return n


def create(cur: sqlite3.Cursor) -> None:
    """Create the empty log, its checksum and triggers (inside a write transaction of a
    checksummed store)."""
    for ddl in statements(LOG_SCHEMA):
        cur.execute(ddl)
    cur.execute("INSERT INTO checksums (name, rows, total) VALUES (?, 0, 0)", (LOG_TABLE,))
    for ddl in checksum.triggers(LOG_TABLE):
        cur.execute(ddl)


class IdleFold:
    """The background fold of one store: once no write came for its ``fold_idle_s``, a
    slice (``fold_slice``) of the log per transaction while the log holds a whole slice (a
    shorter log costs its readers nothing worth a write); then a look every
    ``fold_idle_s``, until the store closes. Errors go to the store's ``fold_error`` and
    the fold is tried again at the next idle time."""

    def __init__(self, store: SQLiteStore):
        self.store = store
        self.last_write = time.monotonic()
        self.closing = threading.Event()
        self.thread: threading.Thread | None = None

    def wrote(self) -> None:
        """Note a write transaction (the fold's own are not writes)."""
        if threading.current_thread() is not self.thread:
            self.last_write = time.monotonic()

    def start(self) -> None:
        """Start the fold thread unless it runs (a forked process has none) or is off."""
        running = self.thread is not None and self.thread.is_alive()
        if not running and self.store.fold_idle_s is not None and not self.closing.is_set():
            self.thread = threading.Thread(target=self._run, name="graphrecall-fold", daemon=True)
            self.thread.start()

    def stop(self) -> None:
        self.closing.set()

    def join(self) -> None:
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join()

    def _run(self) -> None:
        store = self.store
        while True:
            idle = store.fold_idle_s
            if idle is None:
                return
            quiet = time.monotonic() - self.last_write
            if quiet < idle:
                if self.closing.wait(idle - quiet):
                    return
                continue
            more = False
            try:
                with store._lock:
                    if store.closed:
                        return
                    if time.monotonic() - self.last_write < idle:
                        continue  # a write ran while this fold waited for the lock
                    if store.logged_facts() >= store.fold_slice:
                        with store.transaction(fold=False, content=False) as cur:
                            fold(cur, store.fold_slice)
                            more = logged(cur) >= store.fold_slice
            except Exception as exc:  # kept for the caller; tried again at the next idle time
                store.fold_error = exc
            if not more and self.closing.wait(idle):
                return
