"""The embedded default store: one SQLite file (stdlib ``sqlite3``, WAL journal).

Schema version 1
================

``meta(key, value)`` holds ``application = 'graphrecall'``, ``schema_version = '1'`` and
the vocabularies (``statuses``, ``sources``) as JSON; the file's ``PRAGMA application_id``
is ``0x47524543`` ("GREC"). A file whose ``schema_version`` this graphrecall does not know
is refused (:class:`~graphrecall.storage.errors.SchemaVersionError`).

Ids (``entities.id``, ``facts.id``, ``chunks.id`` and every column referring to one) and
tenants are declared without a type, so SQLite keeps each value's storage class: an ``int``
id is stored as INTEGER and read back as ``int``, a ``str`` id as TEXT (``12`` and ``'12'``
are different ids). Times are INTEGER Unix seconds, NULL = unknown. Statuses and sources
are stored by name; ``tags`` (a JSON array of text) and ``metadata`` (a JSON object) as
JSON text; vectors as little-endian float32 BLOBs of ``4 x dim`` bytes. References are
foreign keys (deferred: checked at commit, so a transaction may insert in any order).
The DDL is :data:`SCHEMA`; the columns are those of
:class:`~graphrecall.tables.GraphTables`.

Durability
==========

Every write is one transaction (``BEGIN IMMEDIATE ... COMMIT``) in WAL mode with
``PRAGMA synchronous = FULL``: the WAL is synced to disk before ``COMMIT`` returns, so a
write acknowledged (returned from) is durable across a process kill *and* a power loss,
and a write interrupted before its commit leaves no trace (readers and the next open see
the last committed state; the WAL is recovered on open).
"""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from ..tables import NULL_SEQUENCE, NULL_TIME, EmbeddingSet, GraphTables, LoadReport, OnBad
from .errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError

if TYPE_CHECKING:
    from ..live import LiveGraph

__all__ = ["APPLICATION_ID", "SCHEMA", "SCHEMA_VERSION", "SUPPORTED_SCHEMA_VERSIONS", "SQLiteStore"]

#: What :meth:`SQLiteStore.load` builds: the live graph registers itself here when
#: :mod:`graphrecall.live` is imported (storage sits below it and does not import it).
_live: Callable[..., LiveGraph] | None = None


def register_live(factory: Callable[..., LiveGraph]) -> None:
    """Set what :meth:`SQLiteStore.load` builds (called by :mod:`graphrecall.live`)."""
    global _live
    _live = factory


#: The schema version this module writes.
SCHEMA_VERSION = 1
#: The schema versions this module reads.
SUPPORTED_SCHEMA_VERSIONS: tuple[int, ...] = (1,)
#: ``PRAGMA application_id`` of a graphrecall store ("GREC").
APPLICATION_ID = 0x47524543

#: The DDL of schema version 1.
SCHEMA = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE chunks (
    id            NOT NULL PRIMARY KEY,   -- int or text, kept as given
    tenant,                               -- int or text; NULL = no tenant column
    text          TEXT,
    scope         TEXT,                   -- scope / tier
    category      TEXT,
    tags          TEXT,                   -- JSON array of text
    metadata      TEXT,                   -- JSON object (goal / mission style metadata)
    created_at    INTEGER,                -- Unix seconds
    expires_at    INTEGER,
    confidence    REAL CHECK (confidence IS NULL OR confidence BETWEEN 0 AND 1),
    access_count  INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed INTEGER
);
CREATE TABLE entities (
    id            NOT NULL PRIMARY KEY,
    tenant,
    name          TEXT,
    type          TEXT,
    description   TEXT,
    primary_chunk REFERENCES chunks (id) DEFERRABLE INITIALLY DEFERRED,
    created_at    INTEGER
);
CREATE TABLE aliases (
    entity NOT NULL REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,
    alias  TEXT NOT NULL,
    PRIMARY KEY (entity, alias)
);
CREATE TABLE facts (
    id            NOT NULL PRIMARY KEY,
    subject       NOT NULL REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,
    object        REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,  -- NULL = literal
    predicate     NOT NULL DEFAULT 'related_to',  -- text (or an int code)
    object_value,                                 -- the literal: text, int or real
    description   TEXT,
    confidence    REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    strength      REAL NOT NULL DEFAULT 1.0 CHECK (strength >= 0),
    status        TEXT NOT NULL,
    source        TEXT NOT NULL,
    access_count  INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed INTEGER,
    created_at    INTEGER,
    valid_from    INTEGER,
    valid_to      INTEGER,
    sequence      INTEGER
);
CREATE TABLE mentions (
    chunk NOT NULL REFERENCES chunks (id) DEFERRABLE INITIALLY DEFERRED,
    entity NOT NULL REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,
    count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1),
    PRIMARY KEY (chunk, entity)
);
CREATE TABLE embeddings (
    kind   TEXT NOT NULL CHECK (kind IN ('entity', 'chunk', 'alias')),
    id     NOT NULL,              -- entities.id, chunks.id or aliases.alias
    model  TEXT NOT NULL,         -- '' = unnamed
    dim    INTEGER NOT NULL CHECK (dim > 0),
    vector BLOB NOT NULL CHECK (length(vector) = 4 * dim),  -- float32, little-endian
    PRIMARY KEY (kind, model, id)
);
CREATE INDEX facts_subject ON facts (subject);
CREATE INDEX facts_object ON facts (object);
CREATE INDEX mentions_entity ON mentions (entity);
CREATE INDEX aliases_alias ON aliases (alias);
CREATE INDEX entities_primary_chunk ON entities (primary_chunk);
"""

#: Tables in the order rows are deleted (children first); inserts go the other way.
_DELETE_ORDER = ("embeddings", "mentions", "aliases", "facts", "entities", "chunks")

_ID_COLUMNS = frozenset({"id", "subject", "chunk", "entity", "tenant"})
_NULLABLE_IDS = frozenset({"object", "primary_chunk"})
_TIME_COLUMNS = frozenset({"created_at", "expires_at", "last_accessed", "valid_from", "valid_to"})
_JSON_COLUMNS = frozenset({"tags", "metadata"})
#: Columns stored NOT NULL with a default, read back always.
_REQUIRED_ON_READ: Mapping[str, frozenset[str]] = {
    "entities": frozenset({"id"}),
    "facts": frozenset(
        {"id", "subject", "predicate", "confidence", "strength", "status", "source", "access_count"}
    ),
    "chunks": frozenset({"id", "access_count"}),
    "mentions": frozenset({"chunk", "entity", "count"}),
    "aliases": frozenset({"entity", "alias"}),
}


def fill_value(tables: GraphTables, table: str, column: str) -> Any:
    """The value of an absent column (the defaults of ``KnowledgeGraph.from_arrays``)."""
    if table == "facts":
        if column in ("confidence", "strength"):
            return 1.0
        if column == "access_count":
            return 0
        if column == "predicate":
            return "related_to"
        if column == "status":
            return "confirmed" if "confirmed" in tables.statuses else tables.statuses[0]
        if column == "source":
            return "system" if "system" in tables.sources else tables.sources[0]
    if table == "chunks" and column == "access_count":
        return 0
    if table == "mentions" and column == "count":
        return 1
    return None


def sql_values(
    tables: GraphTables, table: str, rows: npt.NDArray[np.int64] | None = None
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The columns of ``table`` and its rows as SQL parameters (None for NULL), for the rows
    ``rows`` (all when None). Tables must be checked (normalised)."""
    from ..tables import COLUMNS

    cols = tables.table(table)
    assert cols is not None
    n = tables.n_rows(table)
    idx = np.arange(n, dtype=np.int64) if rows is None else rows
    names = COLUMNS[table]
    out: list[list[Any]] = []
    for col in names:
        arr = cols.get(col)
        if arr is None:
            if col == "id" and table == "facts":
                out.append(idx.tolist())
            else:
                out.append([fill_value(tables, table, col)] * len(idx))
            continue
        a = arr[idx]
        if col in _TIME_COLUMNS:
            out.append([None if v == NULL_TIME else v for v in a.tolist()])
        elif col == "sequence":
            out.append([None if v == NULL_SEQUENCE else v for v in a.tolist()])
        elif col == "confidence" and table == "chunks":
            out.append([None if v != v else v for v in a.tolist()])
        elif col in _JSON_COLUMNS:
            out.append([None if v is None else json.dumps(v, ensure_ascii=False) for v in a])
        else:
            out.append(a.tolist())
    return names, list(zip(*out, strict=True)) if out else []


def _ids_array(values: list[Any]) -> npt.NDArray[Any]:
    if all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _column_from_sql(table: str, col: str, values: list[Any]) -> npt.NDArray[Any] | None:
    """A column read from SQL -> the checked-table convention; None if all NULL and the
    column is optional."""
    if col not in _REQUIRED_ON_READ[table] and all(v is None for v in values):
        return None
    if col in _ID_COLUMNS:
        return _ids_array(values)
    if col in _TIME_COLUMNS:
        return np.array([NULL_TIME if v is None else v for v in values], dtype=np.int64)
    if col == "sequence":
        return np.array([NULL_SEQUENCE if v is None else v for v in values], dtype=np.int64)
    if col in ("confidence", "strength"):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    if col in ("access_count", "count"):
        return np.array(values, dtype=np.int64)
    if col == "predicate" and all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64)
    out = np.empty(len(values), dtype=object)
    if col in _JSON_COLUMNS:
        out[:] = [None if v is None else json.loads(v) for v in values]
    else:
        out[:] = values
    return out


class SQLiteStore:
    """A graphrecall store in one SQLite file (see the module doc for the schema).

    Make one with :meth:`create` or :meth:`open`; :meth:`write` replaces the graph it holds,
    :meth:`read` returns it as :class:`~graphrecall.tables.GraphTables`, and
    :meth:`load` builds a :class:`~graphrecall.LiveGraph` that takes
    incremental updates. A store may be used from several threads (one connection, used
    under a lock). Use it as a context manager or call :meth:`close`.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, schema_version: int):
        """Use :meth:`create` or :meth:`open`."""
        self.path = path
        self.schema_version = schema_version
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ open / create

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=30.0
        )
        return conn

    @staticmethod
    def _configure(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk writes build big indexes

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
            conn.executescript(
                "BEGIN IMMEDIATE;\n"
                + SCHEMA
                + "INSERT INTO meta (key, value) VALUES ('application', 'graphrecall');\n"
                + "INSERT INTO meta (key, value) VALUES "
                + f"('schema_version', '{SCHEMA_VERSION:d}');\n"
                + "COMMIT;"
            )
        except sqlite3.Error as exc:
            raise StorageError(f"{p}: cannot create a store ({exc})") from None
        store = cls(p, conn, SCHEMA_VERSION)
        empty = np.zeros(0, dtype=np.int64)
        store._write_vocabularies(GraphTables(entities={"id": empty}, facts={"subject": empty}))
        return store

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SQLiteStore:
        """Open an existing store.

        Raises:
            StorageError: No such file.
            CorruptStoreError: Not a SQLite database, or a corrupted one.
            NotAStoreError: A SQLite database that is not a graphrecall store.
            SchemaVersionError: A schema version this graphrecall does not know.
        """
        p = Path(path)
        if not p.is_file():
            raise StorageError(f"{p}: no such file (make a store with SQLiteStore.create)")
        conn: sqlite3.Connection | None = None
        try:
            conn = cls._connect(p)
            has_meta = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", ("meta",)
            ).fetchone()
            if has_meta is None:
                raise NotAStoreError(
                    f"{p}: not a graphrecall store (a SQLite database without a meta table)"
                )
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("application") != "graphrecall":
                raise NotAStoreError(
                    f"{p}: not a graphrecall store (meta.application is "
                    f"{meta.get('application')!r})"
                )
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
            cls._configure(conn)
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            raise _storage_error(p, exc, "cannot open") from None
        except StorageError:
            if conn is not None:
                conn.close()
            raise
        return cls(p, conn, version)

    def close(self) -> None:
        """Close the connection (checkpointing the WAL). Idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

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
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``): everything or nothing.

        The commit returns once the WAL is synced (``synchronous = FULL``). A failure rolls
        back and raises :class:`StorageError` (the original error chained).
        """
        with self._lock:
            conn = self.conn
            try:
                cur = conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _storage_error(self.path, exc, "cannot begin a transaction") from exc
            try:
                yield cur
                conn.execute("COMMIT")
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
                with self.transaction() as cur:
                    for table in _DELETE_ORDER:
                        cur.execute(f"DELETE FROM {table}")
                    self._insert_all(cur, checked)
                    self._write_vocabularies(checked, cur)
            finally:
                self.conn.execute("PRAGMA foreign_keys = ON")
        return report

    def _insert_all(self, cur: sqlite3.Cursor, tables: GraphTables) -> None:
        for table in reversed(_DELETE_ORDER[1:]):
            if tables.table(table) is not None:
                self.insert(cur, tables, table)
        self.insert_embeddings(cur, tables.embeddings)

    def _write_vocabularies(self, tables: GraphTables, cur: sqlite3.Cursor | None = None) -> None:
        rows = [
            ("statuses", json.dumps(list(tables.statuses))),
            ("sources", json.dumps(list(tables.sources))),
        ]
        sql = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
        if cur is not None:
            cur.executemany(sql, rows)
            return
        with self.transaction() as c:
            c.executemany(sql, rows)

    def insert(
        self,
        cur: sqlite3.Cursor,
        tables: GraphTables,
        table: str,
        rows: npt.NDArray[np.int64] | None = None,
    ) -> int:
        """Insert rows of a checked table (all, or those at ``rows``); returns the count."""
        names, values = sql_values(tables, table, rows)
        cols = ", ".join(names)
        marks = ", ".join("?" * len(names))
        try:
            cur.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", values)
        except (sqlite3.InterfaceError, sqlite3.ProgrammingError, OverflowError) as exc:
            raise DataError(f"{table}: a value cannot be stored in SQLite ({exc})") from None
        return len(values)

    @staticmethod
    def insert_embeddings(cur: sqlite3.Cursor, sets: Iterable[EmbeddingSet]) -> int:
        """Insert checked embedding sets; returns the number of vectors."""
        n = 0
        for es in sets:
            vec = np.ascontiguousarray(es.vectors, dtype="<f4")
            dim = int(vec.shape[1]) if vec.ndim == 2 else 0
            rows = [
                (es.kind, i, es.model or "", dim, vec[k].tobytes())
                for k, i in enumerate(es.ids.tolist())
            ]
            cur.executemany(
                "INSERT INTO embeddings (kind, id, model, dim, vector) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            n += len(rows)
        return n

    def read(self) -> GraphTables:
        """The stored graph as checked-table columns (rows in insertion order).

        Optional columns that are NULL in every row are left out.

        Raises:
            CorruptStoreError: The file is corrupted (e.g. truncated).
        """
        try:
            return self._read_tables()
        except (ValueError, TypeError) as exc:  # undecodable JSON, a vector blob of odd size...
            raise CorruptStoreError(f"{self.path}: a stored value is unreadable ({exc})") from None

    def _read_tables(self) -> GraphTables:
        from ..tables import COLUMNS

        meta = dict(self._read("SELECT key, value FROM meta"))
        data: dict[str, dict[str, npt.NDArray[Any]]] = {}
        counts: dict[str, int] = {}
        for table in ("entities", "facts", "chunks", "mentions", "aliases"):
            names = COLUMNS[table]
            rows = self._read(f"SELECT {', '.join(names)} FROM {table} ORDER BY rowid")
            counts[table] = len(rows)
            cols = list(zip(*rows, strict=True)) if rows else [() for _ in names]
            out: dict[str, npt.NDArray[Any]] = {}
            for name, values in zip(names, cols, strict=True):
                arr = _column_from_sql(table, name, list(values))
                if arr is not None:
                    out[name] = arr
            data[table] = out
        embeddings: list[EmbeddingSet] = []
        rows = self._read("SELECT kind, model, id, dim, vector FROM embeddings ORDER BY rowid")
        groups: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        for r in rows:
            groups.setdefault((r[0], r[1]), []).append(r)
        for (kind, model), members in groups.items():
            dims = {int(r[3]) for r in members}
            if len(dims) != 1:
                raise CorruptStoreError(
                    f"{self.path}: embeddings of {kind} model {model!r} have dimensions "
                    f"{sorted(dims)}"
                )
            dim = dims.pop()
            flat = np.frombuffer(b"".join(r[4] for r in members), dtype="<f4")
            vectors = flat.astype(np.float32).reshape(len(members), dim)
            embeddings.append(
                EmbeddingSet(kind, _ids_array([r[2] for r in members]), vectors, model or None)  # type: ignore[arg-type]
            )
        return GraphTables(
            entities=data["entities"],
            facts=data["facts"],
            chunks=data["chunks"] if counts["chunks"] else None,
            mentions=data["mentions"] if counts["mentions"] else None,
            aliases=data["aliases"] if counts["aliases"] else None,
            embeddings=embeddings,
            statuses=tuple(json.loads(meta.get("statuses", "null")) or ()) or _default_statuses(),
            sources=tuple(json.loads(meta.get("sources", "null")) or ()) or _default_sources(),
        )

    def load(self, on_bad: OnBad = "raise") -> LiveGraph:
        """Read, check and build: a :class:`~graphrecall.LiveGraph` over this store
        (``live.report`` says what the check skipped with ``on_bad="skip"``; skipped rows
        stay in the file)."""
        if _live is None:
            # The live graph registers itself when its module loads; name it here rather
            # than import it, so that storage does not depend on what sits above it.
            importlib.import_module("graphrecall.live")
        if _live is None:  # pragma: no cover - graphrecall.live always registers
            raise StorageError("graphrecall.live did not register the live graph")
        return _live(self, self.read(), on_bad=on_bad)

    def counts(self) -> dict[str, int]:
        """Rows per table."""
        return {
            t: int(self._read(f"SELECT count(*) FROM {t}")[0][0])
            for t in ("entities", "facts", "chunks", "mentions", "aliases", "embeddings")
        }

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


def _default_statuses() -> tuple[str, ...]:
    from ..tables import DEFAULT_STATUSES

    return DEFAULT_STATUSES


def _default_sources() -> tuple[str, ...]:
    from ..tables import DEFAULT_SOURCES

    return DEFAULT_SOURCES


def _storage_error(path: Path, exc: sqlite3.Error, what: str) -> StorageError:
    """A graphrecall error for a sqlite3 error: corruption, or anything else."""
    msg = str(exc)
    corrupt = isinstance(exc, sqlite3.DatabaseError) and not isinstance(
        exc, (sqlite3.OperationalError, sqlite3.IntegrityError)
    )
    if corrupt or "malformed" in msg or "not a database" in msg:
        return CorruptStoreError(
            f"{path}: not a SQLite database, or a corrupted or truncated one ({msg})"
        )
    return StorageError(f"{path}: {what} ({msg})")
