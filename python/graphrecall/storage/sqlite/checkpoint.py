"""Checkpoints off the write path: a thread with its own connection copies the
write-ahead log into the database file after the commits, so that no write waits for it.

A checkpoint is part of SQLite's WAL design and never changes what is durable: a commit is
durable once its log frames are synced (``synchronous = FULL``), and a checkpoint cut short
by a crash is finished by the next open's recovery. What moves here is only when the
copying (and the database file's sync) happens: after a commit has returned, not inside it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

#: Rows changed (``sqlite3.Connection.total_changes``, triggers included) after which the
#: store asks for a background checkpoint: about one 1,000-fact append (~2,200 pages of
#: log: a fact dirties about two random index pages), so the thread copies each such batch
#: while the next one is being prepared.
CHECKPOINT_ROWS = 1_000

#: The writer connection's own ``wal_autocheckpoint`` (80 MiB of log at 4 KiB pages). The
#: log starts again from its beginning only when a write begins with every frame copied,
#: which back-to-back writes seldom leave time for; at this size a commit copies what the
#: thread has not copied yet (little, when it keeps up), so that the next write restarts
#: the log and the file stays bounded.
WAL_AUTOCHECKPOINT_PAGES = 20_000


class Checkpointer:
    """A daemon thread that runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection
    each time :meth:`request` is called (requests made while one runs are merged).

    A passive checkpoint never blocks a writer or a reader: it copies the frames that no
    reader still needs, and the next writer restarts the log from its start once every
    frame is copied. Errors (another process checkpointing, a busy file) are dropped: the
    next request, or the writer's backstop, checkpoints instead.
    """

    def __init__(self, path: Path):
        """Start nothing yet: the thread starts on the first :meth:`request`."""
        self.path = path
        self._wake = threading.Condition()
        self._pending = False
        self._stopping = False
        self._busy = False
        self._thread: threading.Thread | None = None
        #: Checkpoints run so far (for tests and benchmarks).
        self.runs = 0

    def request(self) -> None:
        """Ask for a checkpoint soon (returns at once)."""
        with self._wake:
            if self._stopping:
                return
            self._pending = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="graphrecall-checkpoint", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def wait_idle(self) -> None:
        """Return once no checkpoint is pending or running (for tests and benchmarks)."""
        with self._wake:
            while self._pending or self._busy:
                self._wake.wait()

    def close(self) -> None:
        """Finish a running checkpoint, stop the thread and close its connection."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        _lower_priority()
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA synchronous = FULL")
            while True:
                with self._wake:
                    while not self._pending and not self._stopping:
                        self._wake.wait()
                    if self._stopping:
                        return
                    self._pending = False
                    self._busy = True
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except sqlite3.Error:
                    pass  # busy or locked: the next request (or the backstop) checkpoints
                finally:
                    with self._wake:
                        self._busy = False
                        self._wake.notify_all()
        except sqlite3.Error:
            return  # cannot open: the writer's backstop checkpoints instead
        finally:
            if conn is not None:
                conn.close()
            with self._wake:
                self._busy = False
                self._pending = False
                self._wake.notify_all()


#: The niceness added to the checkpoint thread: the copying yields the cores to the
#: writes and queries it runs beside (the writer's backstop copies what is left).
NICENESS = 10


def _lower_priority() -> None:
    """Lower this thread's CPU priority where the system allows it (Linux: a thread's
    nice value is its own)."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + NICENESS)
    except (AttributeError, OSError):
        pass  # not Linux, or not allowed: the thread runs at the writer's priority
