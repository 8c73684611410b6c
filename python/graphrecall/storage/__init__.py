"""Storage: adapters that read and write :class:`~graphrecall.tables.GraphTables` (the
table model of :mod:`graphrecall.tables`, re-exported here), and snapshots.

* :mod:`~graphrecall.storage.sqlite`: :class:`SQLiteStore` (the versioned schema, stdlib
  ``sqlite3`` in WAL mode);
* :mod:`~graphrecall.storage.arrow`, :mod:`~graphrecall.storage.duckdb`,
  :mod:`~graphrecall.storage.mapping`: loaders for Arrow / Parquet / pandas and DuckDB, with
  a :class:`ColumnMapping` for the user's own table and column names;
* :mod:`~graphrecall.storage.snapshot`: save / load a built graph.

:class:`~graphrecall.LiveGraph` (and :class:`~graphrecall.live.GraphVersion`,
:class:`~graphrecall.live.UpdateReport`) live in :mod:`graphrecall.live`, above storage;
they are also reachable here by name, resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tables import BadDataError, BadRow, EmbeddingSet, GraphTables, LoadReport, TableReport
from ..tables.mapping import ColumnMapping
from .errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError
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

#: Names resolved on first use: the loaders (their modules import slowly) and the live
#: graph's names (:mod:`graphrecall.live` sits above storage).
_LAZY = {
    "load_arrow": "arrow",
    "load_dataframes": "arrow",
    "load_parquet": "arrow",
    "load_duckdb": "duckdb",
    "load_postgres": "postgres",
    "load_snapshot": "snapshot",
    "save_snapshot": "snapshot",
}
_ABOVE = ("GraphVersion", "LiveGraph", "UpdateReport")

if TYPE_CHECKING:
    from ..live import GraphVersion, LiveGraph, UpdateReport
    from .arrow import load_arrow, load_dataframes, load_parquet
    from .duckdb import load_duckdb
    from .postgres import load_postgres
    from .snapshot import load_snapshot, save_snapshot


def __getattr__(name: str) -> Any:
    """A loader, or one of the live graph's names, imported when first asked for."""
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    elif name in _ABOVE:
        # Names kept for compatibility, looked up by module name: storage holds no import
        # of the room above it.
        value = getattr(importlib.import_module("graphrecall.live"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
