"""SQLiteStore: one graphrecall store file, its connection, transactions, and whole-graph
reads and writes."""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...tables import EmbeddingSet, GraphTables, LoadReport, OnBad
from ..errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError
from . import checksum, log
from .read import CHUNK_ROWS, read_tables
from .schema import (
    _DELETE_ORDER,
    APPLICATION_ID,
    LOG_SCHEMA,
    SCHEMA,
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    statements,
)
from .write import insert_embeddings as _insert_embeddings
from .write import insert_rows

if TYPE_CHECKING:
    from ...live import LiveGraph

#: Pages of write-ahead log after which a commit checkpoints it into the database file
#: (40 MiB at the default 4 KiB page): commits stay durable (the log is synced at each),
#: and pages written by several commits are copied once.
WAL_CHECKPOINT_PAGES = 10_000

#: What :meth:`SQLiteStore.load` builds: the live graph registers itself here when
#: :mod:`graphrecall.live` is imported (storage sits below it and does not import it).
_live: Callable[..., LiveGraph] | None = None


def register_live(factory: Callable[..., LiveGraph]) -> None:
    """Set what :meth:`SQLiteStore.load` builds (called by :mod:`graphrecall.live`)."""
    global _live
    _live = factory


class SQLiteStore:
    """A graphrecall store in one SQLite file (schema in :mod:`graphrecall.storage.sqlite`).

    Make one with :meth:`create` or :meth:`open`; :meth:`write` replaces the graph it holds,
    :meth:`read` returns it as :class:`~graphrecall.tables.GraphTables`, and
    :meth:`load` builds a :class:`~graphrecall.LiveGraph` that takes
    incremental updates. A store may be used from several threads (one connection, used
    under a lock). Use it as a context manager or call :meth:`close`.

    From schema version 3, added facts are committed to a log and folded into the indexed
    ``facts`` table later (:mod:`.log`): all of them before any other write and on
    :meth:`fold`; a slice (:attr:`fold_slice`) per transaction in the background once no
    write came for :attr:`fold_idle_s`; and, inside each write that logs facts, those over
    :attr:`fold_from` (at most :attr:`fold_ratio` per fact logged). Every read sees them.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, schema_version: int):
        """Use :meth:`create` or :meth:`open`."""
        self.path = path
        self.schema_version = schema_version
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()
        #: The fold debt (:func:`.log.due`): logged facts over which a write folds the
        #: excess, at most ``fold_ratio`` per fact it logs, a slice at least over ``fold_at``.
        self.fold_from, self.fold_ratio = log.FOLD_FROM, log.FOLD_RATIO
        self.fold_at = log.FOLD_ROWS
        #: Facts per fold transaction of the idle fold and of writes (:data:`.log.FOLD_SLICE`).
        self.fold_slice = log.FOLD_SLICE
        #: Seconds without a write before the log is folded in the background; None:
        #: never (:data:`.log.FOLD_IDLE_S`).
        self.fold_idle_s: float | None = log.FOLD_IDLE_S
        #: The last error of a background fold (it retries at the next idle time).
        self.fold_error: BaseException | None = None
        self._folded = self._appended = 0  # facts the last transaction folded, logged
        #: :meth:`content_version` after this connection's last committed write (None
        #: below schema version 3).
        self.written: int | None = None
        self._idle = log.IdleFold(self)

    # ------------------------------------------------------------------ open / create

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=30.0
        )
        checksum.register(conn)
        return conn

    @staticmethod
    def _configure(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk writes build big indexes
        # A checkpoint every WAL_CHECKPOINT_PAGES rather than SQLite's 1,000: an append of
        # 1,000 facts dirties about 1,900 pages (random leaves of the subject and object
        # indexes), so every such commit would also copy and sync the database file.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES:d}")

    @classmethod
    def create(cls, path: str | os.PathLike[str], *, overwrite: bool = False) -> SQLiteStore:
        """Create an empty store at ``path`` (schema version :data:`SCHEMA_VERSION`).

        Args:
            path: The file to create.
            overwrite: Replace an existing file (and its ``-wal`` / ``-shm``).

        Raises:
            StorageError: The file exists (and ``overwrite`` is False) or cannot be written.
        """
        p = Path(path)
        if p.exists():
            if not overwrite:
                raise StorageError(
                    f"{p}: already exists; open it with SQLiteStore.open, or pass overwrite=True"
                )
            for q in (p, Path(f"{p}-wal"), Path(f"{p}-shm")):
                q.unlink(missing_ok=True)
        try:
            conn = cls._connect(p)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID:d}")
            cls._configure(conn)
            cur = conn.execute("BEGIN IMMEDIATE")
            for ddl in statements(SCHEMA + checksum.SCHEMA + LOG_SCHEMA):
                cur.execute(ddl)
            cur.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("application", "graphrecall"), ("schema_version", f"{SCHEMA_VERSION:d}")],
            )
            empty = np.zeros(0, dtype=np.int64)
            _write_vocabularies(cur, GraphTables(entities={"id": empty}, facts={"subject": empty}))
            checksum.recompute(cur)
            checksum.create_triggers(cur)
            cur.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageError(f"{p}: cannot create a store ({exc})") from None
        return cls(p, conn, SCHEMA_VERSION)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SQLiteStore:
        """Open an existing store.

        Raises:
            StorageError: No such file.
            CorruptStoreError: Not a SQLite database, or a corrupted one (``meta`` does not
                match its checksum, or the header disagrees with it).
            NotAStoreError: A SQLite database that is not a graphrecall store.
            SchemaVersionError: A schema version this graphrecall does not know.
        """
        p = Path(path)
        if not p.is_file():
            raise StorageError(f"{p}: no such file (make a store with SQLiteStore.create)")
        conn: sqlite3.Connection | None = None
        try:
            conn = cls._connect(p)
            version = _check_store(p, conn)
            cls._configure(conn)
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            raise _storage_error(p, exc, "cannot open") from None
        except UnicodeDecodeError as exc:  # text of the schema or of meta
            if conn is not None:
                conn.close()
            raise CorruptStoreError(f"{p}: corrupted: undecodable text ({exc})") from None
        except StorageError:
            if conn is not None:
                conn.close()
            raise
        return cls(p, conn, version)

    def close(self) -> None:
        """Close the connection (checkpointing the WAL). Idempotent."""
        self._idle.stop()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        self._idle.join()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"schema {self.schema_version}"
        return f"SQLiteStore({str(self.path)!r}, {state})"

    # ------------------------------------------------------------------ transactions

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(f"{self.path}: the store is closed")
        return self._conn

    @contextmanager
    def transaction(self, *, fold: bool = True, content: bool = True) -> Iterator[sqlite3.Cursor]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``): everything or nothing.

        The commit returns once the WAL is synced (``synchronous = FULL``). A failure rolls
        back and raises :class:`StorageError` (the original error chained).

        Args:
            fold: Fold the fact log into ``facts`` first (:mod:`.log`), so that statements
                on ``facts`` see every fact. False for a transaction that only adds rows
                or also writes the log's rows itself; it folds the debt of the facts it
                logs before its commit (:func:`.log.due`).
            content: The transaction may change what a read returns, so it counts in
                :meth:`content_version` (False only for a fold, which moves facts between
                tables and changes nothing a read returns).
        """
        with self._lock:
            conn = self.conn
            try:
                cur = conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _storage_error(self.path, exc, "cannot begin a transaction") from exc
            try:
                self._folded = self._appended = 0
                self._idle.wrote()
                if self.logged and fold:
                    self._folded = log.fold(cur)
                yield cur
                if self.logged:
                    self._folded += log.settle(cur, self, self._appended)
                    if content:
                        self.written = log.count_write(cur)
                conn.execute("COMMIT")
                self._idle.wrote()  # idle from the end of a write, however long it ran
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _storage_error(self.path, exc, "write failed, rolled back") from exc
                raise

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _storage_error(self.path, exc, "read failed") from None

    def _chunks(self, sql: str) -> Iterator[list[tuple[Any, ...]]]:
        """The rows of one query, :data:`~.read.CHUNK_ROWS` at a time (under the lock)."""
        with self._lock:
            try:
                cur = self.conn.execute(sql)
                while rows := cur.fetchmany(CHUNK_ROWS):
                    yield rows
            except sqlite3.Error as exc:
                raise _storage_error(self.path, exc, "read failed") from None

    # ------------------------------------------------------------------ whole graphs

    def write(self, tables: GraphTables, on_bad: OnBad = "raise") -> LoadReport:
        """Replace the store's contents with ``tables``, in one transaction.

        The tables are checked first (:meth:`GraphTables.check`): bad rows refuse the write
        (``on_bad="raise"``) or are left out and reported (``"skip"``). The check proves
        every reference, so SQLite's foreign-key enforcement is off for this bulk write
        only (incremental updates keep it).

        Returns:
            The check's report.

        Raises:
            BadDataError: Bad rows with ``on_bad="raise"`` (nothing is written).
            StorageError: The write failed (nothing is written).
        """
        checked, report = tables.check(on_bad)
        with self._lock:
            # The check proved every reference; SQLite need not look each one up again
            # (half the time of a bulk write). Incremental updates keep the enforcement.
            self.conn.execute("PRAGMA foreign_keys = OFF")
            try:
                with self.transaction(fold=False) as cur:  # the log is emptied below
                    if self.checksummed:  # one pass over what was written, not a trigger per row
                        checksum.drop_triggers(cur)
                    for table in _DELETE_ORDER:
                        cur.execute(f"DELETE FROM {table}")
                    if self.logged:
                        cur.execute(f"DELETE FROM {log.LOG_TABLE}")
                    self._insert_all(cur, checked)
                    _write_vocabularies(cur, checked)
                    if self.checksummed:
                        checksum.recompute(cur)
                        checksum.create_triggers(cur)
            finally:
                self.conn.execute("PRAGMA foreign_keys = ON")
        return report

    def _insert_all(self, cur: sqlite3.Cursor, tables: GraphTables) -> None:
        for table in reversed(_DELETE_ORDER[1:]):
            if tables.table(table) is not None:
                insert_rows(cur, tables, table)  # the triggers are dropped for this write
        self.insert_embeddings(cur, tables.embeddings)

    def insert(
        self,
        cur: sqlite3.Cursor,
        tables: GraphTables,
        table: str,
        rows: npt.NDArray[np.int64] | None = None,
    ) -> int:
        """Insert rows of a checked table (all, or those at ``rows``) inside a transaction of
        this store, keeping its checksums; returns the count. Facts go to the fact log
        (schema version 3): committed, they are durable and read back at once."""
        if not self.checksummed:
            return insert_rows(cur, tables, table, rows)
        into = log.LOG_TABLE if table == "facts" and self.logged else table
        n = tables.n_rows(table) if rows is None else len(rows)
        if into == log.LOG_TABLE:
            self._idle.start()
            self._appended += n
        with checksum.appending(cur, into, n):
            return insert_rows(cur, tables, table, rows, into=into)

    @staticmethod
    def insert_embeddings(cur: sqlite3.Cursor, sets: Iterable[EmbeddingSet]) -> int:
        """Insert checked embedding sets; returns the number of vectors."""
        return _insert_embeddings(cur, sets)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._conn is None

    @property
    def checksummed(self) -> bool:
        """Whether the store keeps per-table checksums (schema version 2 and later)."""
        return self.schema_version >= 2

    @property
    def logged(self) -> bool:
        """Whether added facts go to the fact log first (schema version 3 and later)."""
        return self.schema_version >= 3

    def fold(self) -> int:
        """Fold the fact log into the indexed ``facts`` table now, in one transaction (e.g.
        when the store is idle); returns the number of facts moved (0 below version 3)."""
        with self._lock:
            with self.transaction(fold=True, content=False):
                pass
            return self._folded

    @property
    def fact_tables(self) -> tuple[str, ...]:
        """The tables that hold facts: ``facts``, and the fact log from schema version 3
        (a statement by id on ``facts`` alone misses the logged facts)."""
        return ("facts", log.LOG_TABLE) if self.logged else ("facts",)

    def logged_facts(self) -> int:
        """The number of facts in the log, not yet folded (0 below schema version 3)."""
        if not self.logged:
            return 0
        return int(self._read("SELECT rows FROM checksums WHERE name = ?", (log.LOG_TABLE,))[0][0])

    def upgrade(self) -> None:
        """Rewrite a schema version 2 store as version 3 (the fact log added, in one
        transaction); a version 3 store is left as it is. A graphrecall that reads
        versions 1-2 only then refuses the store rather than miss its logged facts.

        Raises:
            SchemaVersionError: A version 1 store (rewrite it with :meth:`write`).
        """
        if self.schema_version >= SCHEMA_VERSION:
            return
        if not self.checksummed:
            raise SchemaVersionError(
                f"{self.path}: schema version {self.schema_version} cannot be upgraded in "
                "place; read it and write it to a new store"
            )
        with self.transaction(fold=False) as cur:
            log.create(cur)
            cur.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (f"{SCHEMA_VERSION:d}",)
            )
            cur.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        self.schema_version = SCHEMA_VERSION

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run the reads inside it on one committed state (one read transaction), unless a
        transaction of this store is already open (its state is then the one read)."""
        with self._lock:
            conn = self.conn
            if conn.in_transaction:
                yield
                return
            try:
                conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise _storage_error(self.path, exc, "cannot begin a read") from None
            try:
                yield
            except BaseException:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # the error being raised says more
                raise
            try:
                if conn.in_transaction:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _storage_error(self.path, exc, "read failed") from None

    def read(self, *, verify: bool = True) -> GraphTables:
        """The stored graph as checked-table columns (rows in insertion order), read from
        one committed state.

        Optional columns that are NULL in every row are left out.

        Args:
            verify: Check every table against its checksum (schema version 2; see
                :mod:`graphrecall.storage.sqlite`). False skips that pass (about a third
                of the read's time) for a file you trust; SQLite's own checks remain.

        Raises:
            CorruptStoreError: The file is corrupted (e.g. truncated, or a row does not
                match its table's checksum).
        """
        try:
            with self.snapshot():
                return read_tables(
                    self.path,
                    self._read,
                    verify=verify and self.checksummed,
                    logged=self.logged,
                    chunks=self._chunks,
                )
        except (ValueError, TypeError) as exc:  # undecodable JSON, a vector blob of odd size...
            raise CorruptStoreError(f"{self.path}: a stored value is unreadable ({exc})") from None

    def content_version(self) -> int | None:
        """How many content-changing transactions the store has committed (schema version
        3; None below it). A fold alone leaves it as it is, so another connection that sees
        ``data_version`` move but not this knows its graph is still the file's."""
        if not self.logged:
            return None
        rows = self._read("SELECT value FROM meta WHERE key = ?", (log.WRITES,))
        return int(rows[0][0]) if rows else 0

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version`` of this store's connection: it changes when
        another connection (this process or another) commits to the file."""
        return int(self._read("PRAGMA data_version")[0][0])

    def load(self, on_bad: OnBad = "raise", *, verify: bool = True) -> LiveGraph:
        """Read, check and build: a :class:`~graphrecall.LiveGraph` over this store
        (``live.report`` says what the check skipped with ``on_bad="skip"``; skipped rows
        stay in the file). ``verify`` is :meth:`read`'s."""
        if _live is None:
            # The live graph registers itself when its module loads; name it here rather
            # than import it, so that storage does not depend on what sits above it.
            importlib.import_module("graphrecall.live")
        if _live is None:  # pragma: no cover - graphrecall.live always registers
            raise StorageError("graphrecall.live did not register the live graph")
        with self.snapshot():
            tables = self.read(verify=verify)
            seen = self.data_version()
        return _live(self, tables, on_bad=on_bad, data_version=seen)

    def counts(self) -> dict[str, int]:
        """Rows per table (``facts`` counts the logged facts too)."""
        with self.snapshot():
            out = {
                t: int(self._read(f"SELECT count(*) FROM {t}")[0][0])
                for t in ("entities", "facts", "chunks", "mentions", "aliases", "embeddings")
            }
            if self.logged:
                out["facts"] += int(self._read(f"SELECT count(*) FROM {log.LOG_TABLE}")[0][0])
        return out

    def integrity_check(self) -> None:
        """Run SQLite's ``PRAGMA integrity_check`` and the foreign-key check.

        Raises:
            CorruptStoreError: Naming the first problems found.
        """
        problems = [r[0] for r in self._read("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise CorruptStoreError(f"{self.path}: corrupted: {'; '.join(problems[:5])}")
        fk = self._read("PRAGMA foreign_key_check")
        if fk:
            raise CorruptStoreError(
                f"{self.path}: {len(fk)} rows break a reference, first: table {fk[0][0]} "
                f"rowid {fk[0][1]} -> {fk[0][2]}"
            )


def _write_vocabularies(cur: sqlite3.Cursor, tables: GraphTables) -> None:
    rows = [
        ("statuses", json.dumps(list(tables.statuses))),
        ("sources", json.dumps(list(tables.sources))),
    ]
    # An upsert, not INSERT OR REPLACE: its replacing delete would not fire the checksum
    # triggers.
    cur.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        rows,
    )


def _check_store(p: Path, conn: sqlite3.Connection) -> int:
    """The schema version of a graphrecall store, after checking that it is one.

    The file header's ``application_id`` and ``user_version`` repeat what ``meta`` says (the
    application and, from version 2, the schema version), and ``meta`` is checked against
    its checksum first: where they disagree the file is corrupted, not foreign.
    """
    claims = int(conn.execute("PRAGMA application_id").fetchone()[0]) == APPLICATION_ID
    header_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        if claims:
            raise CorruptStoreError(f"{p}: corrupted: a graphrecall store without its meta table")
        raise NotAStoreError(
            f"{p}: not a graphrecall store (a SQLite database without a meta table)"
        )
    rows = conn.execute(checksum.select("meta")).fetchall()
    if header_version >= 2 or "checksums" in tables:
        if "checksums" not in tables:
            raise CorruptStoreError(f"{p}: corrupted: the checksum table is missing")
        stored = {
            r[0]: (r[1], r[2])
            for r in conn.execute("SELECT name, rows, total FROM checksums").fetchall()
        }
        checksum.verify(p, "meta", rows, stored)
    meta = {r[1]: r[2] for r in rows}
    if meta.get("application") != "graphrecall":
        if claims:
            raise CorruptStoreError(
                f"{p}: corrupted: meta.application is {meta.get('application')!r}"
            )
        raise NotAStoreError(
            f"{p}: not a graphrecall store (meta.application is {meta.get('application')!r})"
        )
    if not claims:
        raise CorruptStoreError(f"{p}: corrupted: the header's application_id is not graphrecall's")
    found = meta.get("schema_version")
    try:
        version = int(found)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SchemaVersionError(
            f"{p}: schema_version {found!r} is not a version number; this graphrecall "
            f"reads schema versions {list(SUPPORTED_SCHEMA_VERSIONS)}"
        ) from None
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        hint = (
            "a newer graphrecall wrote it; upgrade graphrecall"
            if version > max(SUPPORTED_SCHEMA_VERSIONS)
            else "rewrite it with this graphrecall"
        )
        raise SchemaVersionError(
            f"{p}: schema version {version} is not supported; this graphrecall reads "
            f"schema versions {list(SUPPORTED_SCHEMA_VERSIONS)} ({hint})"
        )
    if header_version != (version if version >= 2 else 0):
        raise CorruptStoreError(
            f"{p}: corrupted: the header says schema version {header_version}, meta says {version}"
        )
    return version


def _storage_error(path: Path, exc: sqlite3.Error, what: str) -> StorageError:
    """A graphrecall error for a sqlite3 error: corruption, or anything else."""
    msg = str(exc)
    corrupt = isinstance(exc, sqlite3.DatabaseError) and not isinstance(
        exc, (sqlite3.OperationalError, sqlite3.IntegrityError)
    )
    damaged = ("malformed", "not a database", "no such table", "no such column", "decode")
    if corrupt or any(word in msg for word in damaged):
        return CorruptStoreError(
            f"{path}: not a SQLite database, or a corrupted or truncated one ({msg})"
        )
    return StorageError(f"{path}: {what} ({msg})")
