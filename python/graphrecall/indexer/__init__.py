"""``graphrecall index``: read a store, check it, and write a snapshot or a SQLite store.

::

    graphrecall index SOURCE OUT [--from sqlite|duckdb|parquet|postgres|text|graphrag|
                                         hipporag|lightrag|graphml|neo4j]
                      [--to snapshot|sqlite|index] [--tenant T] [--on-bad raise|skip]
                      [--mapping PRESET|JSON|FILE] [--overwrite] [--no-embedder]
                      [--embed-workers N]

``SOURCE`` is a graphrecall SQLite store, a DuckDB file, a directory of ``<table>.parquet``
files, or a PostgreSQL conninfo / ``postgresql://`` URI; without ``--from`` its kind is
told from what it is (a directory of Parquet files, the file's SQLite or DuckDB header,
a URI or ``key=value`` conninfo; ``--from text`` reads documents through
:func:`~graphrecall.ingest.ingest`; ``--from graphrag|hipporag|lightrag|graphml|neo4j`` reads
those tools' outputs through :mod:`graphrecall.presets`). It is read with the storage loaders,
every row is checked (:meth:`~graphrecall.tables.GraphTables.check`), and the result is written to
``OUT``: a snapshot directory (:func:`~graphrecall.storage.snapshot.save_snapshot`, the
default; the graph is built first), a SQLite store
(:meth:`~graphrecall.storage.sqlite.SQLiteStore.write`), or a saved retrieval index
(:func:`~graphrecall.index_io.save_index`: tables, vectors and HNSW indexes, what
``graphrecall query`` and :meth:`GraphRAG.load` start from without embedding or building
anything; texts without stored vectors are embedded with the default model unless
``--no-embedder``). The output is written beside
``OUT`` and renamed into place, so a failed run leaves no half-written output; an existing
``OUT`` is replaced only with ``--overwrite``, and only when it is a snapshot or a
graphrecall store (never another file or directory).

Progress (the phases read, check, build, write, each with its time) goes to stderr, the
summary (rows per table, tenants, skipped rows, time per phase, peak memory, output size)
to stdout.

Exit codes:

* 0: the output was written (with ``--on-bad skip``, perhaps without some rows: the summary
  and the report on stderr say which);
* 1: the source or the output could not be used (no such file, not a store, a missing
  table or column, an unknown tenant, an output in the way, a write that failed);
* 2: bad rows were refused (the default ``--on-bad raise``; the report on stderr names
  them and nothing was written). argparse also exits with 2 on a malformed command line.
"""

from .args import (
    EXIT_BAD_DATA,
    EXIT_FAILED,
    EXIT_OK,
    add_arguments,
    parse_mapping,
    parse_tenant,
    run,
)
from .output import TargetKind
from .pipeline import index
from .progress import IndexSummary
from .source import SourceKind, detect_source, filter_tenant

__all__ = [
    "EXIT_BAD_DATA",
    "EXIT_FAILED",
    "EXIT_OK",
    "IndexSummary",
    "SourceKind",
    "TargetKind",
    "add_arguments",
    "detect_source",
    "filter_tenant",
    "index",
    "parse_mapping",
    "parse_tenant",
    "run",
]
