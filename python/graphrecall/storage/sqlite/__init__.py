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

The package holds :mod:`.schema` (the DDL and the column classes), :mod:`.write` (tables
to SQL rows), :mod:`.read` (SQL rows back to tables) and :mod:`.store`
(:class:`SQLiteStore`: files, transactions, whole-graph reads and writes).
"""

from .schema import APPLICATION_ID, SCHEMA, SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS
from .store import SQLiteStore, register_live
from .write import fill_value, sql_values

__all__ = [
    "APPLICATION_ID",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "SQLiteStore",
    "fill_value",
    "register_live",
    "sql_values",
]
