"""Load :class:`~graphrecall.tables.GraphTables` from Arrow tables, Parquet files and
pandas DataFrames, reading the user's own table and column names through a
:class:`~graphrecall.storage.mapping.ColumnMapping`.

Every column is converted with Arrow compute and numpy, never a Python loop over numeric
rows: ids become int64 arrays (integer ids without nulls) or object arrays (text ids, or ids
with nulls, ``None`` = missing); numbers become float / int64 arrays (NaN = null for
numbers that have one); times of any Arrow or pandas type (timestamps of any unit and time
zone, dates, ISO-8601 text, int or float seconds) become int64 seconds with graphrecall's
null time (``-2**63``) for null; vector columns (list / fixed-size-list of numbers, or
float32 blobs) become ``float32 (n, d)`` matrices in
:class:`~graphrecall.tables.EmbeddingSet`\\ s (ragged when dimensions differ).

Validation (dangling ids, NaN weights, unknown statuses, wrong dimensions...) is
:meth:`GraphTables.check`'s: the loaders convert, and pass values they cannot convert (a
time that is not one, an id beyond int64) on unchanged, so that the check's report names
every such row. They raise only for what makes a table unreadable: a missing table or
column (named), or a column of a type that cannot hold the values at all.

pyarrow is needed (``pip install pyarrow``); pandas only for DataFrames.
"""

from __future__ import annotations

from .load import load_arrow, load_dataframes, load_parquet
from .source import ArrowSource
from .tables import tables_from_sources

__all__ = ["ArrowSource", "load_arrow", "load_dataframes", "load_parquet", "tables_from_sources"]
