"""Arrow sources: one of the user's tables as column names plus a reader, over an in-memory
Arrow table, a pandas DataFrame or an Arrow stream; pyarrow imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

import numpy as np

from ...errors import DataError, ParameterError

__all__ = [
    "ArrowSource",
    "ArrowTable",
    "Column",
    "LazyColumns",
    "from_memory",
    "import_compute",
    "import_pyarrow",
]

#: A column on its way to numpy: a ``pyarrow.ChunkedArray`` (the usual case) or a numpy
#: object array (a pandas column Arrow cannot type, e.g. ids mixing ints and text).
#: pyarrow ships no type information, hence ``Any``.
Column = Any
#: A ``pyarrow.Table`` or ``RecordBatch``.
ArrowTable = Any


def import_pyarrow() -> Any:
    """The ``pyarrow`` module, with an install hint when it is missing."""
    try:
        return importlib.import_module("pyarrow")
    except ImportError:  # pragma: no cover - pyarrow is in the test extra
        raise ImportError(
            "graphrecall.storage needs pyarrow to load tables: pip install pyarrow"
        ) from None


def import_compute() -> Any:
    """The ``pyarrow.compute`` module."""
    import_pyarrow()
    return importlib.import_module("pyarrow.compute")


class ArrowSource:
    """One of the user's tables, as Arrow: its column names and a way to read some of them.

    Loaders wrap what they read (an in-memory table, a Parquet file, a DuckDB query) in
    this, so that resolution, explosion of list columns and conversion are shared.
    """

    __slots__ = ("_read", "columns", "name")

    def __init__(
        self,
        name: str,
        columns: Iterable[str],
        read: Callable[[dict[str, str]], Mapping[str, Column]],
    ):
        """
        Args:
            name: The user's table name (for messages).
            columns: Its column names.
            read: ``read({ours: theirs})`` -> ``{ours: column}``, each column a
                ``pyarrow.ChunkedArray`` (or a 1-D numpy object array).
        """
        self.name = name
        self.columns = list(columns)
        self._read = read

    def read(self, selected: dict[str, str]) -> MutableMapping[str, Column]:
        """The selected columns, by our names (read on first use when the source reads
        column by column)."""
        cols = self._read(selected)
        return cols if isinstance(cols, LazyColumns) else dict(cols)


class LazyColumns(MutableMapping[str, Column]):
    """Columns read one at a time, on first use: a conversion that pops each column as it
    converts it holds one source column at a time, not the whole table."""

    def __init__(self, keys: Iterable[str], read: Callable[[str], Column]):
        self._keys = list(dict.fromkeys(keys))
        self._read = read
        self._cols: dict[str, Column] = {}

    def __getitem__(self, key: str) -> Column:
        if key not in self._cols:
            if key not in self._keys:
                raise KeyError(key)
            self._cols[key] = self._read(key)
        return self._cols[key]

    def __setitem__(self, key: str, value: Column) -> None:
        if key not in self._keys:
            self._keys.append(key)
        self._cols[key] = value

    def __delitem__(self, key: str) -> None:
        self._keys.remove(key)
        self._cols.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __len__(self) -> int:
        return len(self._keys)


def from_memory(name: str, data: Any) -> ArrowSource:
    """A source over a ``pyarrow.Table`` / ``RecordBatch`` or a pandas ``DataFrame``."""
    pa = import_pyarrow()
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        table = data

        def read_table(sel: dict[str, str]) -> dict[str, Column]:
            return {ours: table.column(theirs) for ours, theirs in sel.items()}

        return ArrowSource(name, table.column_names, read_table)
    if hasattr(data, "columns") and hasattr(data, "iloc"):  # a pandas DataFrame
        frame = data
        names = [str(c) for c in frame.columns]
        if len(set(names)) != len(names):
            raise DataError(f"table {name!r} has duplicate column names {names!r}")

        def read_frame(sel: dict[str, str]) -> dict[str, Column]:
            out: dict[str, Column] = {}
            for ours, theirs in sel.items():
                series = frame[frame.columns[names.index(theirs)]]
                try:
                    out[ours] = pa.chunked_array([pa.array(series, from_pandas=True)])
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                    # Mixed Python types (ints and text ids...): keep the objects.
                    arr = np.empty(len(series), dtype=object)
                    arr[:] = series.tolist()
                    out[ours] = arr
            return out

        return ArrowSource(name, names, read_frame)
    if hasattr(data, "__arrow_c_stream__"):  # polars, DuckDB relations...: Arrow C streams
        return from_memory(name, pa.table(data))
    raise ParameterError(
        f"invalid table {name!r}: expected a pyarrow.Table, RecordBatch, pandas DataFrame "
        f"or an Arrow stream, got {type(data).__name__}"
    )
