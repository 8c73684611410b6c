"""Arrow columns to numpy, by kind: ids, numbers, codes, times and text, vectorised with
Arrow compute and numpy. Values that cannot be converted pass on unchanged for
:meth:`~graphrecall.tables.GraphTables.check` to report row by row."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import DataError
from ...tables import NULL_TIME
from ...tables.columns import ObjectColumn, describe
from .source import Column, import_compute, import_pyarrow

__all__ = [
    "codes",
    "floats",
    "from_dictionary",
    "ids",
    "ints",
    "is_arrow",
    "is_text",
    "is_text_dictionary",
    "nan_to_none",
    "objects",
    "plain",
    "times",
]


def is_arrow(col: Column) -> bool:
    return not isinstance(col, np.ndarray)


def plain(col: Column) -> Column:
    """Decode dictionaries, extension types and decimals into plain Arrow types."""
    pa = import_pyarrow()
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


def is_text(t: Any) -> bool:
    pa = import_pyarrow()
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def is_text_dictionary(col: Column) -> bool:
    pa = import_pyarrow()
    return (
        is_arrow(col)
        and not isinstance(col.type, pa.ExtensionType)
        and pa.types.is_dictionary(col.type)
        and is_text(col.type.value_type)
    )


def objects(col: Column) -> npt.NDArray[Any]:
    """Any column as a 1-D object array (``None`` for null)."""
    if not is_arrow(col):
        arr = np.asarray(col, dtype=object)
        return nan_to_none(arr)
    if is_text_dictionary(col):
        return from_dictionary(col)
    pa = import_pyarrow()
    t = col.type
    if is_text(t):
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
    made into a Python object once rather than once per row."""
    pc = import_compute()
    pa = import_pyarrow()
    n = len(col)
    sample = col.slice(0, 4096)
    valid = len(sample) - sample.null_count
    if n >= 1024 and pc.count_distinct(sample).as_py() * 2 < valid:
        return from_dictionary(pa.chunked_array([col.combine_chunks().dictionary_encode()]))
    text: npt.NDArray[Any] = col.to_numpy(zero_copy_only=False)
    if text.dtype != object:
        text = text.astype(object)
    types: frozenset[type] = frozenset({str, type(None)} if col.null_count else {str})
    return describe(text, ObjectColumn(types))


def from_dictionary(col: Column) -> npt.NDArray[Any]:
    """A dictionary-encoded text column as an object array of its values (each distinct
    string made into a Python object once), described by its codes."""
    pa = import_pyarrow()
    pc = import_compute()
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


def nan_to_none(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
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


def ids(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Ids: int64 when integral without nulls, an object array (None = missing) for text or
    ints with nulls; float ids (pandas' ints with NaN) and uint64 beyond int64 pass through
    for :meth:`GraphTables.check` to accept or report row by row."""
    if not is_arrow(col):
        return nan_to_none(np.asarray(col, dtype=object))
    pa = import_pyarrow()
    pc = import_compute()
    col = plain(col)
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
    return objects(col)


def _int_objects(vals: npt.NDArray[np.int64], null: npt.NDArray[np.bool_]) -> npt.NDArray[Any]:
    """Ints as an object array, None where ``null``. References repeat a narrow range of
    ids, so when the range is no wider than the column, each id is made into a Python int
    once and shared (fewer objects, less time); else one int per row."""
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


def floats(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Numbers as float32 / float64 (null -> NaN)."""
    if not is_arrow(col):
        try:
            return np.asarray(
                [np.nan if v is None else v for v in nan_to_none(np.asarray(col, dtype=object))],
                dtype=np.float64,
            )
        except (TypeError, ValueError):
            raise DataError(f"{where}.{column} must hold numbers") from None
    pa = import_pyarrow()
    col = plain(col)
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


def ints(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Integers as int64; with nulls, float64 with NaN for null."""
    if not is_arrow(col):
        return floats(col, where, column)
    pa = import_pyarrow()
    col = plain(col)
    t = col.type
    if (pa.types.is_integer(t) or pa.types.is_boolean(t)) and col.null_count == 0:
        vals = col.to_numpy(zero_copy_only=False)
        if pa.types.is_uint64(t) and len(vals) and int(vals.max()) > 2**63 - 1:
            return np.asarray(vals)  # GraphTables.check reports the rows beyond int64
        return _int64(vals)
    return floats(col, where, column)


def codes(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Names (object array) or integer codes (int64)."""
    if not is_arrow(col):
        return nan_to_none(np.asarray(col, dtype=object))
    if is_text_dictionary(col):
        return from_dictionary(col)
    pa = import_pyarrow()
    col = plain(col)
    if pa.types.is_integer(col.type) and col.null_count == 0:
        return ints(col, where, column)
    return objects(col)


_UNIT_SECONDS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def times(col: Column, where: str, column: str) -> npt.NDArray[Any]:
    """Times as int64 seconds (floor), null -> graphrecall's null time. Values that are not
    times are passed on (as float64 / objects) for :meth:`GraphTables.check` to report."""
    if not is_arrow(col):
        return _times_of_objects(np.asarray(col, dtype=object), where, column)
    pa = import_pyarrow()
    pc = import_compute()
    col = plain(col)
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
        out = ints(pc.fill_null(col, 0), where, column)
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
    pa = import_pyarrow()
    for target in (pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")):
        try:
            return times(col.cast(target), where, column)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return _times_of_objects(objects(col), where, column)


def _times_of_objects(arr: npt.NDArray[Any], where: str, column: str) -> npt.NDArray[Any]:
    """Times from Python objects (ISO-8601 text, datetimes, numbers), row by row. A value
    that is not a time is kept as given, and the column returned as objects, so that
    :meth:`GraphTables.check` reports exactly those rows."""
    out = np.empty(len(arr), dtype=np.int64)
    kept: list[int] = []
    values = nan_to_none(arr)
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
