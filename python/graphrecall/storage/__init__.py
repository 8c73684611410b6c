"""Storage: adapters that read and write :class:`~graphrecall.tables.GraphTables` (the
table model of :mod:`graphrecall.tables`, re-exported here), and snapshots.

* :mod:`~graphrecall.storage.sqlite`: :class:`SQLiteStore` (the versioned schema, stdlib
  ``sqlite3`` in WAL mode);
* :mod:`~graphrecall.storage.live`: :class:`LiveGraph` (incremental updates committed to the
  store first, then swapped in atomically; usage write-back);
* :mod:`~graphrecall.storage.arrow`, :mod:`~graphrecall.storage.duckdb`,
  :mod:`~graphrecall.storage.mapping`: loaders for Arrow / Parquet / pandas and DuckDB, with
  a :class:`ColumnMapping` for the user's own table and column names;
* :mod:`~graphrecall.storage.snapshot`: save / load a built graph.
"""

from __future__ import annotations

from ..tables import BadDataError, BadRow, EmbeddingSet, GraphTables, LoadReport, TableReport
from ..tables.mapping import ColumnMapping
from .arrow import load_arrow, load_dataframes, load_parquet
from .duckdb import load_duckdb
from .errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError
from .live import GraphVersion, LiveGraph, UpdateReport
from .postgres import load_postgres
from .snapshot import load_snapshot, save_snapshot
from .sqlite import SCHEMA_VERSION, SQLiteStore

__all__ = [
    "SCHEMA_VERSION",
    "BadDataError",
    "BadRow",
    "ColumnMapping",
    "CorruptStoreError",
    "EmbeddingSet",
    "GraphTables",
    "GraphVersion",
    "LiveGraph",
    "LoadReport",
    "NotAStoreError",
    "SQLiteStore",
    "SchemaVersionError",
    "StorageError",
    "TableReport",
    "UpdateReport",
    "load_arrow",
    "load_dataframes",
    "load_duckdb",
    "load_parquet",
    "load_postgres",
    "load_snapshot",
    "save_snapshot",
]
