"""Argument coercion shared by the native kernels' wrappers (fusion, scoring, results):
sequences to contiguous 1-D numpy arrays of the dtype a kernel takes, refusing lossy values;
times to int64 seconds; names to codes; and the int64 offsets that cut flat arrays into
queries.

Errors name the argument and, for a bad element, its position (``scores[3] = nan ...``).
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
import operator
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .errors import DataError, ParameterError
from .tables.constants import NULL_TIME

__all__ = [
    "as_1d",
    "as_float_array",
    "as_int_array",
    "as_offsets",
    "as_sequence",
    "broadcast",
    "check_query",
    "code_column",
    "column_length",
    "concat",
    "offsets_of",
    "optional_float_column",
    "query_bounds",
    "time_column",
    "time_seconds",
]

_Array: TypeAlias = npt.NDArray[Any]


def as_1d(values: object, name: str, error: type[Exception]) -> _Array:
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting and the like
        raise error(f"{name} must be a one-dimensional sequence of numbers ({exc})") from None
    if arr.ndim != 1:
        raise error(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _check_ints(
    values: list[Any], target: np.dtype[Any], name: str, allow_float: bool, error: type[Exception]
) -> None:
    """Raise for the first value that is not an integer representable as ``target``."""
    info = np.iinfo(target)
    for i, value in enumerate(values):
        if isinstance(value, float) and allow_float:
            if not (math.isfinite(value) and value.is_integer()):
                raise error(f"{name}[{i}] = {value!r} is not an integer")
            value = int(value)
        elif isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise error(f"{name}[{i}] = {value!r} is not an integer")
        if not info.min <= int(value) <= info.max:
            raise error(
                f"{name}[{i}] = {value!r} is out of range for {target.name} "
                f"[{info.min}, {info.max}]"
            )


def as_int_array(
    values: object,
    dtype: npt.DTypeLike,
    name: str,
    *,
    allow_float: bool = True,
    error: type[Exception] = DataError,
) -> _Array:
    """Convert to a contiguous 1-D array of the integer ``dtype``, refusing lossy values.

    Integer input of any width is range-checked; float input (when ``allow_float``) must hold
    finite whole numbers in range; booleans count as 0/1.
    """
    target = np.dtype(dtype)
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype == target:
        return np.ascontiguousarray(values)  # already what the kernels take: nothing to check
    arr = as_1d(values, name, error)
    if arr.size == 0:
        return np.empty(0, dtype=target)
    kind = arr.dtype.kind
    info = np.iinfo(target)
    if kind in "fO" and not isinstance(values, np.ndarray):
        # A list mixing huge ints (>= 2**63) with others becomes float64 or object in numpy:
        # check the original elements so that no id is silently rounded.
        items = list(values)  # type: ignore[call-overload]
        _check_ints(items, target, name, allow_float, error)
        return np.array([int(v) for v in items], dtype=target)
    if kind == "b":
        pass
    elif kind in "iu":
        if int(arr.min()) < info.min or int(arr.max()) > info.max:
            _check_ints(arr.tolist(), target, name, allow_float, error)
    elif kind == "f" and allow_float:
        ok = bool(np.isfinite(arr).all()) and bool((arr == np.trunc(arr)).all())
        # float(info.max) + 1.0 is the exclusive upper bound, exact for every integer dtype.
        ok = ok and float(arr.min()) >= info.min and float(arr.max()) < float(info.max) + 1.0
        if not ok:
            _check_ints(arr.tolist(), target, name, allow_float, error)
    elif kind == "O":  # an object array: check element by element
        items = arr.tolist()
        _check_ints(items, target, name, allow_float, error)
        return np.array([int(v) for v in items], dtype=target)
    else:
        what = "integers (or whole floats)" if allow_float else "integers"
        raise error(f"{name} must hold {what}, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=target)


def as_float_array(
    values: object,
    dtype: npt.DTypeLike,
    name: str,
    *,
    error: type[Exception] = DataError,
) -> _Array:
    """Convert to a contiguous 1-D array of the float ``dtype``.

    NaN and infinities pass through (the native kernels report them with their row); finite
    values too large for ``float32`` are refused here rather than silently becoming infinite.
    """
    target = np.dtype(dtype)
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype == target:
        return np.ascontiguousarray(values)  # already the target dtype: nothing to check
    arr = as_1d(values, name, error)
    if arr.size == 0:
        return np.empty(0, dtype=target)
    if arr.dtype.kind not in "biuf":
        raise error(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if target.itemsize < arr.dtype.itemsize or arr.dtype.kind in "iu":
        limit = float(np.finfo(target).max)
        with np.errstate(invalid="ignore"):
            too_big = np.isfinite(arr) & (np.abs(arr.astype(np.float64)) > limit)
        if too_big.any():
            i = int(np.argmax(too_big))
            raise error(f"{name}[{i}] = {arr[i].item()!r} is out of range for {target.name}")
    return np.ascontiguousarray(arr, dtype=target)


def as_sequence(values: object, name: str) -> Sequence[object]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence, got {type(values).__name__}")
    return values  # type: ignore[return-value]


def concat(parts: Sequence[_Array], dtype: npt.DTypeLike) -> _Array:
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)


def offsets_of(lengths: Sequence[int]) -> npt.NDArray[np.uintp]:
    offsets = np.zeros(len(lengths) + 1, dtype=np.uintp)
    if lengths:
        np.cumsum(np.asarray(lengths, dtype=np.uintp), out=offsets[1:])
    return offsets


def as_offsets(offsets: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """``offsets`` as int64 (a view of the native uintp offsets, no copy)."""
    if offsets.dtype == np.int64:
        return offsets
    if offsets.dtype.itemsize == 8 and offsets.dtype.kind == "u":
        return offsets.view(np.int64)
    return offsets.astype(np.int64)


def check_query(q: int, n: int) -> int:
    """Query index ``q`` of a batch of ``n`` (negative counts from the end).

    Raises:
        TypeError: ``q`` is not an int.
        IndexError: ``q`` is out of range (the message names the batch size).
    """
    if not isinstance(q, (int, np.integer)) or isinstance(q, bool):
        raise TypeError(f"query index must be an int, got {type(q).__name__}")
    if not -n <= q < n:
        raise IndexError(f"query {q} out of range for a batch of {n} queries")
    return int(q) + n if q < 0 else int(q)


def query_bounds(offsets: npt.NDArray[Any], q: int) -> tuple[int, int]:
    """``(start, stop)`` of query ``q`` in the flat arrays cut by ``offsets``."""
    q = check_query(q, int(offsets.shape[0]) - 1)
    return int(offsets[q]), int(offsets[q + 1])


def column_length(*columns: object) -> int:
    """Length of the first non-scalar column (1 when all are scalars)."""
    for column in columns:
        if column is not None and np.ndim(column) > 0:  # type: ignore[arg-type]
            return len(column)  # type: ignore[arg-type]
    return 1


def broadcast(values: object, n: int) -> object:
    """Repeat a scalar ``n`` times; leave sequences alone (lengths are checked natively)."""
    if values is not None and not isinstance(values, (list, tuple)) and np.ndim(values) == 0:  # type: ignore[arg-type]
        return [values] * n
    return values


def time_seconds(now: object) -> int:
    """``now`` as int64 seconds (an int, a numpy integer, a ``datetime64`` or a datetime)."""
    if isinstance(now, bool):
        raise TypeError("now must be a time in integer seconds, got bool")
    if isinstance(now, np.datetime64):
        if np.isnat(now):
            raise ParameterError("invalid parameter now: now is NaT")
        return int(now.astype("datetime64[s]").astype(np.int64))
    if isinstance(now, _dt.datetime):
        if now.tzinfo is None:
            raise ParameterError(
                "invalid parameter now: a naive datetime is ambiguous; give an aware one or "
                "integer seconds"
            )
        return int(now.timestamp() // 1)
    try:
        seconds = operator.index(now)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"now must be a time in integer seconds, got {type(now).__name__}"
        ) from None
    if not NULL_TIME < seconds < 2**63:
        raise ParameterError(f"invalid parameter now: now = {seconds} is out of range for int64")
    return seconds


def time_column(values: object, name: str, n: int) -> npt.NDArray[np.int64] | None:
    """int64 seconds with :data:`NULL_TIME` for null; ``None`` stays ``None`` (all null)."""
    if values is None:
        return None
    values = broadcast(values, n)
    arr = as_1d(values, name, DataError)
    if arr.dtype.kind == "M":
        # NaT is the smallest int64, which is NULL_TIME.
        return np.ascontiguousarray(arr.astype("datetime64[s]").view(np.int64))
    if arr.dtype.kind == "O":
        converted = [_time_item(v, name, i) for i, v in enumerate(arr.tolist())]
        return as_int_array(converted, np.int64, name)
    return as_int_array(arr, np.int64, name)


def _time_item(value: object, name: str, i: int) -> object:
    """One element of an object column of times: None, an int, a datetime64 or an aware
    datetime."""
    if value is None:
        return NULL_TIME
    if isinstance(value, np.datetime64):
        return NULL_TIME if np.isnat(value) else int(value.astype("datetime64[s]").astype(np.int64))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise DataError(
                f"{name}[{i}] = {value!r} is a naive datetime, which is ambiguous; give aware "
                "datetimes or integer seconds"
            )
        return int(value.timestamp() // 1)
    return value


def code_column(values: object, names: tuple[str, ...], name: str, n: int) -> npt.NDArray[np.uint8]:
    """uint8 codes from codes or names (``"confirmed"``); unknown numeric codes pass through
    (they take the profile's default weight), unknown names are an error."""
    values = broadcast(values, n)
    arr = as_1d(values, name, DataError)
    if arr.dtype.kind in "OUS":
        lookup = {label: code for code, label in enumerate(names)}
        codes: list[object] = []
        # numpy turns ["file", 1] into strings: look at the original elements.
        items = arr.tolist() if isinstance(values, np.ndarray) else list(values)  # type: ignore[call-overload]
        for i, value in enumerate(items):
            if isinstance(value, bytes):
                value = value.decode()
            if isinstance(value, str):
                if value not in lookup:
                    raise DataError(
                        f"{name}[{i}] = {value!r} is not a known {name} (one of "
                        f"{', '.join(names)}, or a code 0..255)"
                    )
                codes.append(lookup[value])
            else:
                codes.append(value)
        return as_int_array(codes, np.uint8, name)
    return as_int_array(arr, np.uint8, name)


def optional_float_column(
    values: object, name: str, default: float, n: int
) -> npt.NDArray[np.float64] | None:
    """float64 column where ``None`` entries take ``default``; ``None`` stays ``None``."""
    if values is None:
        return None
    values = broadcast(values, n)
    arr = as_1d(values, name, DataError)
    if arr.dtype.kind == "O":
        arr = np.asarray([default if v is None else v for v in arr.tolist()])
    return as_float_array(arr, np.float64, name)
