"""The embedded default store: one SQLite file (stdlib ``sqlite3``, WAL journal).

Schema version 3
================

``meta(key, value)`` holds ``application = 'graphrecall'``, ``schema_version = '3'`` and
the vocabularies (``statuses``, ``sources``) as JSON; the file's header repeats the
application (``PRAGMA application_id`` = ``0x47524543``, "GREC") and the schema version
(``PRAGMA user_version`` = 3). A file whose ``schema_version`` this graphrecall does not know
is refused (:class:`~graphrecall.storage.errors.SchemaVersionError`). Version 2 is version 1
plus per-table checksums (:mod:`.checksum`: a ``checksums`` table kept by triggers, checked
by every read); version 3 is version 2 plus the fact log (:mod:`.log`: added facts are
committed to ``facts_log`` and folded into ``facts`` off the write path; every read sees
both). Version 1 and 2 stores still open, read and take updates (facts go straight to
``facts``); :meth:`SQLiteStore.upgrade` makes a version 2 store version 3. A graphrecall
that reads versions 1-2 only refuses a version 3 store rather than miss its logged facts.

Ids (``entities.id``, ``facts.id``, ``chunks.id`` and every column referring to one) and
tenants are declared without a type, so SQLite keeps each value's storage class: an ``int``
id is stored as INTEGER and read back as ``int``, a ``str`` id as TEXT (``12`` and ``'12'``
are different ids). Times are INTEGER Unix seconds, NULL = unknown. Statuses and sources
are stored by name; ``tags`` (a JSON array of text) and ``metadata`` (a JSON object) as
JSON text; vectors as little-endian float32 BLOBs of ``4 x dim`` bytes. References are
foreign keys (deferred: checked at commit, so a transaction may insert in any order).
The DDL is :data:`SCHEMA`; the columns are those of
:class:`~graphrecall.tables.GraphTables`.

Corruption
==========

SQLite keeps no checksum of its pages, so a flipped bit in a value can read back as another
valid value. Every read of a version 2 store recomputes each table's checksum (row count and
a sum of per-row CRC-32s, rowid included) and raises
:class:`~graphrecall.storage.errors.CorruptStoreError` when one differs; damage SQLite
itself notices (a malformed page, undecodable text, a broken schema) raises the same error,
and so does a header that disagrees with ``meta``. Not covered: the indexes (a read does not
use them; ``integrity_check`` does), a change that keeps a table's sum (two rows changed so
that their CRC-32 changes cancel, about 2**-32 for random damage), and a change made
through graphrecall's own connection (it updates the checksum: that is a write).

Several writers
===============

Several processes (or connections) may write one store. Each update runs inside one
``BEGIN IMMEDIATE`` transaction, which SQLite grants to one writer at a time; a live graph
first reloads what other connections committed (``PRAGMA data_version`` changed), so ids
are assigned from the file's state at commit time. A reader reloads before answering when
another connection has committed.

Durability
==========

Every write is one transaction (``BEGIN IMMEDIATE ... COMMIT``) in WAL mode with
``PRAGMA synchronous = FULL``: the WAL is synced to disk before ``COMMIT`` returns, so a
write acknowledged (returned from) is durable across a process kill *and* a power loss,
and a write interrupted before its commit leaves no trace (readers and the next open see
the last committed state; the WAL is recovered on open).
A fact batch is acknowledged once its rows in the fact log are committed (the same
synced commit); a fold is one transaction that inserts the logged rows into ``facts`` and
deletes them from the log, so a crash before, during or after it leaves each fact once.

The package holds :mod:`.schema` (the DDL and the column classes), :mod:`.write` (tables
to SQL rows), :mod:`.read` (SQL rows back to tables, a chunk at a time), :mod:`.checksum`,
:mod:`.log` (the fact log and its folds) and :mod:`.store` (:class:`SQLiteStore`: files,
transactions, whole-graph reads and writes).
"""

from .schema import APPLICATION_ID, SCHEMA, SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS
from .store import SQLiteStore, register_live
from .write import delete_pairs, fill_value, sql_values, update_rows

__all__ = [
    "APPLICATION_ID",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "SQLiteStore",
    "delete_pairs",
    "fill_value",
    "register_live",
    "sql_values",
    "update_rows",
]
