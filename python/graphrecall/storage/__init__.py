"""Storage: the shared table model, the embedded SQLite default and loaders.

* :mod:`~graphrecall.storage.tables`: :class:`GraphTables` (a graph as columns, the shape of
  the schema), :class:`EmbeddingSet`, row-level validation with a :class:`LoadReport`;
* :mod:`~graphrecall.storage.sqlite`: :class:`SQLiteStore` (the versioned schema, stdlib
  ``sqlite3`` in WAL mode) and :class:`LiveGraph` (incremental updates committed to SQLite
  first, then swapped in atomically; usage write-back).
"""

from __future__ import annotations

from .errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError
from .tables import BadDataError, BadRow, EmbeddingSet, GraphTables, LoadReport, TableReport

__all__ = [
    "BadDataError",
    "BadRow",
    "CorruptStoreError",
    "EmbeddingSet",
    "GraphTables",
    "LoadReport",
    "NotAStoreError",
    "SchemaVersionError",
    "StorageError",
    "TableReport",
]
