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

import datetime as _dt
import importlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError
from ..tables import NULL_TIME, EmbeddingKind, EmbeddingSet, GraphTables
from ..tables.columns import ObjectColumn, describe
from ..tables.mapping import LIST_COLUMNS, TABLES, TIME_COLUMNS, ColumnMapping

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ArrowSource", "load_arrow", "load_dataframes", "load_parquet", "tables_from_sources"]

#: A column on its way to numpy: a ``pyarrow.ChunkedArray`` (the usual case) or a numpy
#: object array (a pandas column Arrow cannot type, e.g. ids mixing ints and text).
#: pyarrow ships no type information, hence ``Any``.
Column = Any
#: A ``pyarrow.Table`` or ``RecordBatch``.
ArrowTable = Any

_ID_COLUMNS = frozenset(
    {
        "entities.id",
        "entities.tenant",
        "entities.primary_chunk",
        "facts.id",
        "facts.subject",
        "facts.object",
        "chunks.id",
        "chunks.tenant",
        "mentions.chunk",
        "mentions.entity",
        "aliases.entity",
    }
)
_FLOAT_COLUMNS = frozenset({"facts.confidence", "facts.strength", "chunks.confidence"})
_INT_COLUMNS = frozenset(
    {"facts.access_count", "facts.sequence", "chunks.access_count", "mentions.count"}
)
#: Names or codes: kept as text, or as int64 codes when the column is numeric.
_CODE_COLUMNS = frozenset({"facts.predicate", "facts.status", "facts.source"})
_EMBEDDING = ("embedding", "embedding_model")
_KIND: dict[str, EmbeddingKind] = {"entities": "entity", "chunks": "chunk"}


def _pa() -> Any:
    try:
        return importlib.import_module("pyarrow")
    except ImportError:  # pragma: no cover - pyarrow is in the test extra
        raise ImportError(
            "graphrecall.storage needs pyarrow to load tables: pip install pyarrow"
        ) from None


def _pc() -> Any:
    _pa()
    return importlib.import_module("pyarrow.compute")


# ---------------------------------------------------------------------------- sources


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
        return cols if isinstance(cols, _LazyColumns) else dict(cols)


class _LazyColumns(MutableMapping[str, Column]):
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


def _from_memory(name: str, data: Any) -> ArrowSource:
    """A source over a ``pyarrow.Table`` / ``RecordBatch`` or a pandas ``DataFrame``."""
    pa = _pa()
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
        return _from_memory(name, pa.table(data))
    raise ParameterError(
        f"invalid table {name!r}: expected a pyarrow.Table, RecordBatch, pandas DataFrame "
        f"or an Arrow stream, got {type(data).__name__}"
    )


# ---------------------------------------------------------------------------- conversion


def _is_arrow(col: Column) -> bool:
    return not isinstance(col, np.ndarray)


def _plain(col: Column) -> Column:
    """Decode dictionaries, extension types and decimals into plain Arrow types."""
    pa = _pa()
    t = col.type
    if isinstance(t, pa.ExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], type=t.storage_type)
        t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    if pa.types.is_decimal(t):
        try:
            col = col.cast(pa.int64() if t.scale == 0 else pa.float64())
        except pa.ArrowInvalid as exc:
            raise DataError(f"decimal values do not fit an int64 / float64: {exc}") from None
    return col


def _is_text(t: Any) -> bool:
    pa = _pa()
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_text_dictionary(col: Column) -> bool:
    pa = _pa()
    return (
        _is_arrow(col)
        and not isinstance(col.type, pa.ExtensionType)
        and pa.types.is_dictionary(col.type)
        and _is_text(col.type.value_type)
    )


def _objects(col: Column) -> npt.NDArray[Any]:
    """Any column as a 1-D object array (``None`` for null)."""
    if not _is_arrow(col):
        arr = np.asarray(col, dtype=object)
        return _nan_to_none(arr)
    if _is_text_dictionary(col):
        return _from_dictionary(col)
    pa = _pa()
    t = col.type
    if _is_text(t):
        return _strings(col)
    values = col.to_pylist()
    if pa.types.is_map(t):  # key-value pairs -> dicts
        values = [None if v is None else dict(v) for v in values]
    out = np.empty(len(col), dtype=object)
    out[:] = values
    return out


def _strings(col: Column) -> npt.NDArray[Any]:
    """A text column as an object array. Columns with repeated values (names, statuses,
    predicates, text ids) are dictionary-encoded first, so that each distinct string is
    made into a Python object once (3-10x faster than converting row by row)."""
    pc = _pc()
    pa = _pa()
    n = len(col)
    sample = col.slice(0, 4096)
    valid = len(sample) - sample.null_count
    if n >= 1024 and pc.count_distinct(sample).as_py() * 2 < valid:
        return _from_dictionary(pa.chunked_array([col.combine_chunks().dictionary_encode()]))
    text: npt.NDArray[Any] = col.to_numpy(zero_copy_only=False)
    if text.dtype != object:
        text = text.astype(object)
    types: frozenset[type] = frozenset({str, type(None)} if col.null_count else {str})
    return describe(text, ObjectColumn(types))


def _from_dictionary(col: Column) -> npt.NDArray[Any]:
    """A dictionary-encoded text column as an object array of its values (each distinct
    string made into a Python object once), described by its codes."""
    pa = _pa()
    pc = _pc()
    if col.num_chunks > 1:
        col = col.unify_dictionaries()
    chunks = col.chunks
    if chunks:
        values: list[Any] = chunks[0].dictionary.to_pylist()
        indices = pa.chunked_array([c.indices for c in chunks], type=col.type.index_type)
        codes = pc.fill_null(indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    else:
        values, codes = [], np.zeros(0, dtype=np.int32)
    distinct: dict[Any, int] = {}
    for v in values:
        distinct.setdefault(v, len(distinct))
    if len(distinct) != len(values):  # a dictionary may repeat a value: code each once
        lut = np.array([distinct[v] for v in values] + [-1], dtype=np.int32)
        codes = lut[codes]
        values = list(distinct)
    lookup = np.empty(len(values) + 1, dtype=object)
    lookup[:-1] = values
    lookup[-1] = None  # code -1
    out: npt.NDArray[Any] = lookup[codes]
    present = np.bincount(codes.astype(np.int64) + 1, minlength=len(values) + 1) > 0
    if len(values) < 2**7 - 1:  # the narrowest codes (-1 = None)
        codes = codes.astype(np.int8)
    elif len(values) < 2**15 - 1:
        codes = codes.astype(np.int16)
    types = {type(values[k]) for k in np.flatnonzero(present[1:]).tolist()}
    if present[0]:
        types.add(type(None))
    return describe(out, ObjectColumn(frozenset(types), codes=codes, values=tuple(values)))


def _nan_to_none(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Object array: NaN / NaT / pandas NA -> None (one pass over the objects)."""
    bad = [i for i, v in enumerate(arr) if v is not None and _is_missing(v)]
    if bad:
        arr = arr.copy()
        arr[bad] = None
    return arr


def _is_missing(v: Any) -> bool:
    if isinstance(v, float):
        return v != v
    try:
        return bool(v != v)  # NaN-likes, pandas NA / NaT
    except (TypeError, ValueError):
        return str(v) in ("<NA>", "NaT")


def _ids(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Ids: int64 when integral without nulls, an object array (None = missing) for text or
    ints with nulls; float ids (pandas' ints with NaN) and uint64 beyond int64 pass through
    for :meth:`GraphTables.check` to accept or report row by row."""
    if not _is_arrow(col):
        return _nan_to_none(np.asarray(col, dtype=object))
    pa = _pa()
    pc = _pc()
    col = _plain(col)
    t = col.type
    if pa.types.is_floating(t):
        return np.ascontiguousarray(col.to_numpy(zero_copy_only=False).astype(np.float64))
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        if pa.types.is_uint64(t) and pc.any(pc.greater(col, 2**63 - 1)).as_py():
            return np.asarray(col.to_numpy(zero_copy_only=False))
        if col.null_count == 0:
            return _int64(col.to_numpy(zero_copy_only=False))
        vals = _int64(pc.fill_null(col, 0).to_numpy(zero_copy_only=False))
        null = col.is_null().to_numpy(zero_copy_only=False)
        out = _int_objects(vals, null)
        types = frozenset({int, type(None)} if null.any() else {int})
        return describe(out, ObjectColumn(types, ints=vals, null=null))
    return _objects(col)


def _int_objects(vals: npt.NDArray[np.int64], null: npt.NDArray[np.bool_]) -> npt.NDArray[Any]:
    """Ints as an object array, None where ``null``. References repeat a narrow range of
    ids, so when the range is no wider than the column, each id is made into a Python int
    once and shared (a tenth of the objects and faster); else one int per row."""
    ok = vals[~null]
    lo, hi = (int(ok.min()), int(ok.max())) if len(ok) else (0, -1)
    if hi - lo < len(vals):
        lookup = np.empty(hi - lo + 2, dtype=object)
        lookup[:-1] = range(lo, hi + 1)
        lookup[-1] = None
        index = vals - lo
        index[null] = hi - lo + 1
        shared: npt.NDArray[Any] = lookup[index]
        return shared
    out: npt.NDArray[Any] = vals.astype(object)
    out[null] = None
    return out


def _int64(arr: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """``arr`` as contiguous int64, copied only when it is not that already."""
    return np.ascontiguousarray(arr.astype(np.int64, copy=False))


def _floats(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Numbers as float32 / float64 (null -> NaN)."""
    if not _is_arrow(col):
        try:
            return np.asarray(
                [np.nan if v is None else v for v in _nan_to_none(np.asarray(col, dtype=object))],
                dtype=np.float64,
            )
        except (TypeError, ValueError):
            raise DataError(f"{where}.{column} must hold numbers") from None
    pa = _pa()
    col = _plain(col)
    t = col.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        if pa.types.is_null(t):
            return np.full(len(col), np.nan)
        raise DataError(f"{where}.{column} must hold numbers, got Arrow type {t}")
    if pa.types.is_float32(t) and col.null_count == 0:
        return np.ascontiguousarray(col.to_numpy(zero_copy_only=False))
    if pa.types.is_float16(t):
        col = col.cast(pa.float32())
    return np.ascontiguousarray(col.to_numpy(zero_copy_only=False).astype(np.float64))


def _ints(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Integers as int64; with nulls, float64 with NaN for null."""
    if not _is_arrow(col):
        return _floats(col, where, column)
    pa = _pa()
    col = _plain(col)
    t = col.type
    if (pa.types.is_integer(t) or pa.types.is_boolean(t)) and col.null_count == 0:
        vals = col.to_numpy(zero_copy_only=False)
        if pa.types.is_uint64(t) and len(vals) and int(vals.max()) > 2**63 - 1:
            return np.asarray(vals)  # GraphTables.check reports the rows beyond int64
        return _int64(vals)
    return _floats(col, where, column)


def _codes(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Names (object array) or integer codes (int64)."""
    if not _is_arrow(col):
        return _nan_to_none(np.asarray(col, dtype=object))
    if _is_text_dictionary(col):
        return _from_dictionary(col)
    pa = _pa()
    col = _plain(col)
    if pa.types.is_integer(col.type) and col.null_count == 0:
        return _ints(col, where, column)
    return _objects(col)


_UNIT_SECONDS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _times(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Times as int64 seconds (floor), null -> graphrecall's null time. Values that are not
    times are passed on (as float64 / objects) for :meth:`GraphTables.check` to report."""
    if not _is_arrow(col):
        return _times_of_objects(np.asarray(col, dtype=object), where, column)
    pa = _pa()
    pc = _pc()
    col = _plain(col)
    t = col.type
    null = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else None
    if pa.types.is_timestamp(t):
        # The stored value is UTC for zoned timestamps and wall time for naive ones (taken
        # as UTC, like graphrecall's datetimes).
        raw = pc.fill_null(col.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        out = np.floor_divide(raw, _UNIT_SECONDS[t.unit])
    elif pa.types.is_date(t):
        days = pc.fill_null(col.cast(pa.date32()).cast(pa.int32()), 0)
        out = days.to_numpy(zero_copy_only=False).astype(np.int64) * 86_400
    elif pa.types.is_integer(t):
        out = _ints(pc.fill_null(col, 0), where, column)
        if out.dtype == np.uint64:
            return out  # beyond int64: GraphTables.check reports the rows
    elif pa.types.is_floating(t):
        vals: npt.NDArray[Any] = col.to_numpy(zero_copy_only=False).astype(np.float64)
        nan = np.isnan(vals)
        with np.errstate(invalid="ignore"):
            if (~nan & ~(np.abs(vals) < 2.0**63)).any():
                return vals  # GraphTables.check reports the rows that are not times
        out = np.floor(np.where(nan, 0.0, vals)).astype(np.int64)
        null = nan if null is None else (null | nan)
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _times_of_text(col, where, column)
    elif pa.types.is_null(t):
        return np.full(len(col), NULL_TIME, dtype=np.int64)
    else:
        raise DataError(f"{where}.{column} must hold times, got Arrow type {t}")
    out = np.ascontiguousarray(out, dtype=np.int64)
    if null is not None and null.any():
        if not out.flags.writeable:  # a view of Arrow's buffer
            out = out.copy()
        out[null] = NULL_TIME
    return out


def _times_of_text(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """ISO-8601 text: naive (taken as UTC) or zoned, parsed by Arrow; mixed forms per row."""
    pa = _pa()
    for target in (pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")):
        try:
            return _times(col.cast(target), where, column)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return _times_of_objects(_objects(col), where, column)


def _times_of_objects(arr: npt.NDArray[Any], where: str, column: str) -> npt.NDArray[Any]:
    """Times from Python objects (ISO-8601 text, datetimes, numbers), row by row. A value
    that is not a time is kept as given, and the column returned as objects, so that
    :meth:`GraphTables.check` reports exactly those rows."""
    out = np.empty(len(arr), dtype=np.int64)
    kept: list[int] = []
    values = _nan_to_none(arr)
    for i, v in enumerate(values):
        t = _time_object(v)
        if t is None:
            kept.append(i)
        else:
            out[i] = t
    if not kept:
        return out
    mixed = out.astype(object)
    mixed[kept] = values[kept]
    return mixed


def _time_object(v: Any) -> int | None:
    """One time as int seconds (NULL_TIME for null); None when it is not a time."""
    if v is None:
        return NULL_TIME
    if isinstance(v, str):
        text = v.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            v = _dt.datetime.fromisoformat(text)
        except ValueError:
            return None
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            return NULL_TIME
        return int(v.astype("datetime64[s]").astype(np.int64))
    if hasattr(v, "to_pydatetime"):  # pandas Timestamp
        v = v.to_pydatetime()
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return int(np.floor(v.timestamp()))
    if isinstance(v, _dt.date):
        return int(_dt.datetime(v.year, v.month, v.day, tzinfo=_dt.timezone.utc).timestamp())
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        if -(2**63) < int(v) < 2**63:
            return int(v)
    elif isinstance(v, (float, np.floating)) and abs(float(v)) < 2.0**63:
        return int(np.floor(v))
    return None


def _apply_values(col: Column, vmap: Mapping[Any, Any]) -> Column:
    """Replace values through ``vmap`` (the user's -> ours), vectorised over the distinct
    values; values not in the map pass through."""
    pa = _pa()
    if _is_arrow(col):
        arr = _plain(col).combine_chunks()
        try:
            enc = arr.dictionary_encode()
        except pa.ArrowNotImplementedError:  # lists, structs: map row by row
            col = _objects(arr)
    if not _is_arrow(col):
        out = np.empty(len(col), dtype=object)
        out[:] = [vmap.get(v, v) if _hashable(v) else v for v in col.tolist()]
        return out
    distinct = enc.dictionary.to_pylist()
    mapped = [vmap.get(v, v) for v in distinct]
    fill = vmap.get(None) if None in vmap else None
    try:
        new_dict = pa.array([*mapped, fill])
        indices = enc.indices.fill_null(len(mapped))
        return pa.chunked_array([new_dict.take(indices)])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        objs = np.empty(len(mapped) + 1, dtype=object)
        objs[:] = [*mapped, fill]
        idx = enc.indices.fill_null(len(mapped)).to_numpy(zero_copy_only=False)
        return objs[idx]


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _explode(
    cols: MutableMapping[str, Column], table: str, where: str
) -> MutableMapping[str, Column]:
    """Rows whose list column (``mentions.entity`` ...) holds several values become one row
    per value (an empty or null list gives none); other columns repeat."""
    pa = _pa()
    pc = _pc()
    lists = [
        ours
        for ours in cols
        if f"{table}.{ours}" in LIST_COLUMNS
        and _is_arrow(cols[ours])
        and (pa.types.is_list(cols[ours].type) or pa.types.is_large_list(cols[ours].type))
    ]
    if not lists:
        return cols
    if len(lists) > 1:
        raise DataError(f"{where}: only one list column can be exploded, got {lists!r}")
    key = lists[0]
    arr = cols[key].combine_chunks()
    parents = pc.list_parent_indices(arr)
    out: dict[str, Column] = {key: pa.chunked_array([pc.list_flatten(arr)])}
    idx = parents.to_numpy(zero_copy_only=False)
    for ours, col in cols.items():
        if ours == key:
            continue
        out[ours] = col.take(parents) if _is_arrow(col) else np.asarray(col)[idx]
    return out


def _embedding_sets(
    table: str,
    ids: npt.NDArray[Any],
    vectors: Column,
    models: Column | None,
    where: str,
) -> list[EmbeddingSet]:
    """``(n, d)`` float32 matrices of the rows that have a vector, one set per model.

    Vectors are lists / fixed-size lists of numbers, or blobs of little-endian float32
    (sqlite-vec's format); rows with a null vector are not embedded.
    """
    pa = _pa()
    pc = _pc()
    if not _is_arrow(vectors):
        vectors = pa.chunked_array([pa.array(list(vectors), from_pandas=True)])
    vec = _plain(vectors).combine_chunks()
    t = vec.type
    has = pa.array(~vec.is_null().to_numpy(zero_copy_only=False))
    rows = np.flatnonzero(has.to_numpy(zero_copy_only=False))
    if len(rows) == 0:
        return []
    kept = vec.filter(has)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        nbytes = pc.binary_length(kept).to_numpy(zero_copy_only=False).astype(np.int64)
        if (nbytes % 4).any():
            i = int(rows[int(np.argmax(nbytes % 4))])
            raise DataError(f"{where} row {i}: embedding blob is not a float32 vector")
        lens = nbytes // 4
        if not len(lens):
            return []
        flat: npt.NDArray[Any] = np.frombuffer(b"".join(kept.to_pylist()), dtype="<f4")
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        lens = pc.list_value_length(kept).to_numpy(zero_copy_only=False).astype(np.int64)
        values = pc.list_flatten(kept)
        if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
            raise DataError(f"{where}.embedding must hold numbers, got Arrow type {t}")
        # A null inside a vector becomes NaN, which GraphTables.check refuses.
        flat = values.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    else:
        raise DataError(f"{where}.embedding must be a list of numbers, got Arrow type {t}")
    flat32 = np.asarray(flat, dtype=np.float32)
    matrix: npt.NDArray[Any]
    if (lens == lens[0]).all():
        matrix = np.ascontiguousarray(flat32.reshape(len(rows), int(lens[0])))
    else:  # ragged: GraphTables.check refuses the rows of the wrong dimension
        matrix = np.empty(len(rows), dtype=object)
        matrix[:] = np.split(flat32, np.cumsum(lens)[:-1])
    kind = _KIND[table]
    if models is None:
        return [EmbeddingSet(kind, ids[rows], matrix, None)]
    if not _is_arrow(models):
        models = pa.chunked_array([pa.array(_objects(models).tolist())])
    enc = _plain(models).combine_chunks().filter(has).dictionary_encode()
    names = enc.dictionary.to_pylist()
    code = enc.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
    sets = []
    for c, name in enumerate([*names, None]):
        sel = np.flatnonzero(code == c)
        if len(sel):
            sets.append(EmbeddingSet(kind, ids[rows[sel]], matrix[sel], name))
    return sets


def _convert(
    table: str, cols: MutableMapping[str, Column], mapping: ColumnMapping, where: str
) -> tuple[dict[str, npt.NDArray[Any]], list[EmbeddingSet]]:
    """Our table's columns (by our names, Arrow) -> numpy columns and embedding sets."""
    for ours in list(cols):
        vmap = mapping.value_map(table, ours)
        if vmap:
            cols[ours] = _apply_values(cols[ours], vmap)
    cols = _explode(cols, table, where)
    out: dict[str, npt.NDArray[Any]] = {}
    vectors = {k: cols.pop(k) for k in _EMBEDDING if k in cols}
    for ours in list(cols):
        col = cols.pop(ours)  # Arrow's copy of each column is freed once converted
        key = f"{table}.{ours}"
        if key in _ID_COLUMNS:
            out[ours] = _ids(col, where, ours)
        elif ours in TIME_COLUMNS:
            out[ours] = _times(col, where, ours)
        elif key in _FLOAT_COLUMNS:
            out[ours] = _floats(col, where, ours)
        elif key in _INT_COLUMNS:
            out[ours] = _ints(col, where, ours)
        elif key in _CODE_COLUMNS:
            out[ours] = _codes(col, where, ours)
        elif _is_text_dictionary(col):
            out[ours] = _from_dictionary(col)
        else:
            out[ours] = _objects(_plain(col) if _is_arrow(col) else col)
        del col
        if out[ours].dtype != object:
            # Nothing else holds the new array: read-only lets the check share it (a
            # fully valid column is then never copied) and keeps it as loaded.
            out[ours].flags.writeable = False
    embeddings: list[EmbeddingSet] = []
    if "embedding" in vectors:
        embeddings = _embedding_sets(
            table, out["id"], vectors["embedding"], vectors.get("embedding_model"), where
        )
    return out, embeddings


def read_table(
    table: str, source: ArrowSource, mapping: ColumnMapping
) -> tuple[dict[str, npt.NDArray[Any]], list[EmbeddingSet]]:
    """Resolve, read and convert one of our tables from a source.

    Raises:
        DataError: A mapped or required column is missing (naming the user's table and
            column), or a column cannot be converted.
    """
    selected = mapping.resolve(table, source.columns)
    if table == "facts":  # a filter column only: the core takes the subject's tenant
        selected.pop("tenant", None)
    where = source.name if source.name == table else f"{source.name} ({table})"
    return _convert(table, source.read(selected), mapping, where)


def tables_from_sources(
    sources: Mapping[str, ArrowSource], mapping: ColumnMapping | None
) -> GraphTables:
    """Build :class:`GraphTables` from one :class:`ArrowSource` per table of ours present
    (``entities`` and ``facts`` required)."""
    m = mapping if mapping is not None else ColumnMapping()
    for ours in ("entities", "facts"):
        if ours not in sources:
            raise DataError(f"no {ours} table: expected one named {m.table(ours)!r}")
    data: dict[str, dict[str, npt.NDArray[Any]] | None] = {}
    embeddings: list[EmbeddingSet] = []
    for ours in TABLES:
        if ours not in sources:
            data[ours] = None
            continue
        cols, sets = read_table(ours, sources[ours], m)
        data[ours] = cols
        embeddings.extend(sets)
        # Arrow's allocator keeps freed memory for reuse, which numpy never makes: give
        # the pages of the table just converted back to the system.
        _pa().default_memory_pool().release_unused()
    entities = data["entities"]
    facts = data["facts"]
    if entities is None or facts is None:  # pragma: no cover - checked above
        raise DataError("entities and facts are required")
    return GraphTables(
        entities=entities,
        facts=facts,
        chunks=data["chunks"],
        mentions=data["mentions"],
        aliases=data["aliases"],
        embeddings=embeddings,
    )


# ---------------------------------------------------------------------------- public API


def _mapping(mapping: ColumnMapping | None) -> ColumnMapping:
    if mapping is None:
        return ColumnMapping()
    if not isinstance(mapping, ColumnMapping):
        raise ParameterError(f"invalid parameter mapping: {mapping!r} is not a ColumnMapping")
    return mapping


def _assign(names: Iterable[str], m: ColumnMapping, what: str) -> dict[str, str]:
    """Our table -> the user's name among ``names``: the mapped name, else our own name.

    Raises:
        ParameterError: A name that no table of ours reads (a typo).
        DataError: A table the mapping requires is missing.
    """
    have = list(names)
    out: dict[str, str] = {}
    for ours in TABLES:
        theirs = m.table(ours)
        if theirs in have:
            out[ours] = theirs
        elif ours in have and ours not in m.tables.values():
            out[ours] = ours
        elif m.table_required(ours) and ours not in ("entities", "facts"):
            raise DataError(f"no table {theirs!r} ({ours}) among the {what} {have!r}")
    used = set(out.values())
    unknown = [n for n in have if n not in used]
    if unknown:
        raise ParameterError(
            f"invalid {what}: {unknown!r} is read as no table; tables are read as "
            f"{ {o: m.table(o) for o in TABLES}!r} (name them in ColumnMapping.tables)"
        )
    return out


def load_arrow(
    tables: Mapping[str, ArrowTable | pd.DataFrame],
    mapping: ColumnMapping | None = None,
) -> GraphTables:
    """Load Arrow tables (or pandas DataFrames) keyed by the user's table names.

    Args:
        tables: The user's table name -> ``pyarrow.Table`` / ``RecordBatch`` /
            ``pandas.DataFrame``; names are those of ``mapping.tables`` (or ours:
            ``entities``, ``facts``, ``chunks``, ``mentions``, ``aliases``).
        mapping: The user's table and column names (default: ours).

    Returns:
        The converted tables; call :meth:`GraphTables.check` or :meth:`GraphTables.to_graph`.

    Raises:
        ParameterError: An invalid mapping or a table name that no table of ours reads.
        DataError: A missing table or column (named), or a column that cannot be converted.
    """
    m = _mapping(mapping)
    if not isinstance(tables, Mapping):
        raise ParameterError(f"invalid parameter tables: {type(tables).__name__} is not a mapping")
    assigned = _assign(tables.keys(), m, "tables")
    sources = {ours: _from_memory(theirs, tables[theirs]) for ours, theirs in assigned.items()}
    return tables_from_sources(sources, m)


def load_dataframes(
    entities: pd.DataFrame | ArrowTable,
    facts: pd.DataFrame | ArrowTable,
    chunks: pd.DataFrame | ArrowTable | None = None,
    mentions: pd.DataFrame | ArrowTable | None = None,
    aliases: pd.DataFrame | ArrowTable | None = None,
    *,
    mapping: ColumnMapping | None = None,
) -> GraphTables:
    """Load pandas DataFrames (or Arrow tables) given as our tables; ``mapping`` renames
    their columns (its table names are not used).

    ``mentions`` may be the chunks frame itself when a list column holds the mentioned
    entities (map ``mentions.entity`` to it); likewise ``aliases`` and the entities frame.

    Raises:
        ParameterError, DataError: As :func:`load_arrow`.
    """
    m = _mapping(mapping)
    given = {
        "entities": entities,
        "facts": facts,
        "chunks": chunks,
        "mentions": mentions,
        "aliases": aliases,
    }
    sources = {ours: _from_memory(ours, df) for ours, df in given.items() if df is not None}
    return tables_from_sources(sources, m)


#: Our text columns with few distinct values, read from Parquet as dictionaries (Parquet
#: stores them so): no string is decoded or hashed per row.
_DICTIONARY_COLUMNS = _CODE_COLUMNS | {"entities.type", "chunks.scope", "chunks.category"}


def _parquet_source(name: str, path: Path, table: str) -> ArrowSource:
    pq = importlib.import_module("pyarrow.parquet")
    pa = _pa()
    try:
        schema = pq.read_schema(path) if path.is_file() else pq.ParquetDataset(path).schema
    except (OSError, pa.ArrowInvalid) as exc:
        raise DataError(f"cannot read Parquet {str(path)!r} ({name}): {exc}") from None

    def read(sel: dict[str, str]) -> _LazyColumns:
        coded = [
            theirs
            for ours, theirs in sel.items()
            if f"{table}.{ours}" in _DICTIONARY_COLUMNS and _is_text(schema.field(theirs).type)
        ]
        # Column by column (Parquet stores them apart): the conversion then holds one
        # column of Arrow data at a time, not the whole table beside its numpy copy.
        if path.is_file():  # ParquetFile: no pyarrow.dataset (which imports pandas)
            file = pq.ParquetFile(path, read_dictionary=coded)

            def column(ours: str) -> Column:
                return file.read(columns=[sel[ours]]).column(0)

        else:

            def column(ours: str) -> Column:
                data = pq.read_table(path, columns=[sel[ours]], read_dictionary=coded)
                return data.column(0)

        return _LazyColumns(sel, column)

    return ArrowSource(name, schema.names, read)


def load_parquet(
    paths: Mapping[str, str | os.PathLike[str]] | str | os.PathLike[str],
    mapping: ColumnMapping | None = None,
) -> GraphTables:
    """Load Parquet files (or directories of them), reading only the mapped columns.

    Args:
        paths: A directory holding ``<table>.parquet`` per table (the user's table names
            of ``mapping``, e.g. ``entities.parquet``, ``facts.parquet``, ``chunks.parquet``;
            ``entities`` and ``facts`` required), or the user's table name -> file.
        mapping: The user's table and column names (default: ours).

    Raises:
        ParameterError: An invalid mapping, or a table name that no table of ours reads.
        DataError: A missing file, table or column (named), or an unreadable file.
    """
    m = _mapping(mapping)
    if isinstance(paths, Mapping):
        files = {str(k): Path(v) for k, v in paths.items()}
    else:
        root = Path(paths)
        if not root.is_dir():
            raise DataError(f"{str(root)!r} is not a directory of Parquet files")
        files = {}
        for ours in TABLES:
            theirs = m.table(ours)
            for cand in (root / f"{theirs}.parquet", root / theirs):
                if cand.exists():
                    files[theirs] = cand
                    break
            else:
                if ours in ("entities", "facts") or m.table_required(ours):
                    raise DataError(
                        f"no {theirs}.parquet ({ours}) in {str(root)!r}; it holds "
                        f"{sorted(p.name for p in root.iterdir())!r}"
                    )
    assigned = _assign(files.keys(), m, "Parquet tables")
    sources = {
        ours: _parquet_source(theirs, files[theirs], ours) for ours, theirs in assigned.items()
    }
    return tables_from_sources(sources, m)
