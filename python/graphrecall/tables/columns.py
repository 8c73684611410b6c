"""Column conversion with errors that name the table, row and column.

Casting to the core's narrow dtypes must never wrap silently (``np.uint8(300) == 44``), so
every integer column is range-checked before it is cast, and every float column is checked
for NaN / infinity by the core after conversion.

Object columns that a loader made from typed data (Arrow dictionaries, integer ids with
nulls) can carry an :class:`ObjectColumn` description (:func:`describe`): their codes or
integers, so that checking and building never walk millions of Python objects again. A
described array is made read-only, so the description can never go stale.
"""

from __future__ import annotations

import datetime as _dt
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from .constants import NULL_SEQUENCE, NULL_TIME
from .faults import column_error, row_error

_PLURAL = {"entity": "entities"}
_F32_MAX = float(np.finfo(np.float32).max)

_INT_RANGES = {
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.uint32): (0, 2**32 - 2),  # 2**32 - 1 is the core's "none" sentinel
    np.dtype(np.int64): (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class ObjectColumn:
    """What is known about an object column without reading its values.

    Attributes:
        types: The Python types of its values (``type(None)`` when some are None).
        codes: Dictionary columns: signed integer codes into ``values``, ``-1`` for None.
        values: Dictionary columns: the distinct values (each once).
        ints: Integer columns (ints and None): the ints as ``int64``, 0 where None.
        null: Integer columns: True where the value is None.
    """

    types: frozenset[type]
    codes: npt.NDArray[np.signedinteger[Any]] | None = None
    values: tuple[Any, ...] | None = None
    ints: npt.NDArray[np.int64] | None = None
    null: npt.NDArray[np.bool_] | None = None

    def take(self, rows: npt.NDArray[Any]) -> ObjectColumn:
        """The description of ``column[rows]`` (a mask or indices)."""
        codes = None if self.codes is None else self.codes[rows]
        ints_ = None if self.ints is None else self.ints[rows]
        null = None if self.null is None else self.null[rows]
        types = set(self.types)
        if null is not None and not null.any():
            types.discard(type(None))
        if codes is not None and not (codes < 0).any():
            types.discard(type(None))
        return ObjectColumn(frozenset(types), codes, self.values, ints_, null)


#: id(array) -> (weak reference to it, its description).
_DESCRIBED: dict[int, tuple[weakref.ReferenceType[npt.NDArray[Any]], ObjectColumn]] = {}


def _forget(key: int, ref: weakref.ReferenceType[npt.NDArray[Any]]) -> None:
    entry = _DESCRIBED.get(key)
    if entry is not None and entry[0] is ref:
        del _DESCRIBED[key]


def describe(arr: npt.NDArray[Any], info: ObjectColumn) -> npt.NDArray[Any]:
    """Attach ``info`` to the object array ``arr`` (which must hold exactly what ``info``
    says) and make ``arr`` read-only, so that the two cannot drift apart.

    Returns:
        ``arr`` itself, or a copy of it when it is a view (whose base could still change).
    """
    if arr.base is not None:
        arr = arr.copy()
    arr.flags.writeable = False
    key = id(arr)

    def forget(r: weakref.ReferenceType[npt.NDArray[Any]]) -> None:
        _forget(key, r)

    _DESCRIBED[key] = (weakref.ref(arr, forget), info)
    return arr


def description(arr: Any) -> ObjectColumn | None:
    """The :class:`ObjectColumn` attached to ``arr`` by :func:`describe`, if any (and if
    the array is still read-only)."""
    entry = _DESCRIBED.get(id(arr))
    if entry is None:
        return None
    ref, info = entry
    held = ref()
    if held is None or held is not arr or held.flags.writeable:
        return None
    return info


def take(arr: npt.NDArray[Any], rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``arr[rows]``, described as ``arr`` is (when it is)."""
    out: npt.NDArray[Any] = arr[rows]
    info = description(arr)
    if info is not None:
        describe(out, info.take(rows))
    return out


def unmask(values: Any) -> Any:
    """A masked array with its masked entries as None (an object array), so that they are
    nulls as in a table; any other value as given."""
    if not isinstance(values, np.ma.MaskedArray):
        return values
    mask = np.ma.getmaskarray(values)
    data = np.asarray(values.data)
    if not mask.any():
        return data
    out = data.astype(object)
    out[mask] = None
    return out


def no_bools(ids: Any, table: str) -> None:
    """Refuse bool ids (an id is an int or a str, as the table check rules)."""
    if ids is None:
        return
    arr = np.asarray(ids)
    if arr.dtype.kind == "b" and len(arr):
        v0 = arr[0].item()
        raise row_error(
            table,
            0,
            "id",
            f"id {v0!r} is a bool, not an int or str",
            kind="invalid_value",
            input=v0,
        )
    if arr.dtype.kind == "O" and bool in value_types(arr):
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, bool):
                raise row_error(
                    table,
                    i,
                    "id",
                    f"id {v!r} is a bool, not an int or str",
                    kind="invalid_value",
                    input=v,
                )


def value_types(arr: npt.NDArray[Any]) -> set[type]:
    """The Python types of an object array's values (from its description when it has
    one)."""
    info = description(arr)
    if info is not None:
        return set(info.types)
    return set(map(type, arr.tolist()))


def first_row(mask: npt.NDArray[np.bool_]) -> int:
    """Index of the first True in a boolean mask."""
    return int(np.argmax(mask))


def ints(values: Any, dtype: npt.DTypeLike, table: str, column: str) -> npt.NDArray[Any]:
    """Convert to a contiguous integer array of ``dtype``, refusing lossy casts."""
    target = np.dtype(dtype)
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise column_error(
            table, column, f"must be one-dimensional, got shape {arr.shape}", kind="invalid_value"
        )
    if arr.dtype == target:
        return np.ascontiguousarray(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=target)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            i = first_row(bad)
            raise row_error(
                table,
                i,
                column,
                f"{column} = {arr[i]!r} is not an integer",
                kind="invalid_value",
                input=arr[i],
            )
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "O":
        try:
            arr = np.array([int(v) for v in arr], dtype=np.int64)
        except (TypeError, ValueError) as exc:
            for i, v in enumerate(arr):
                try:
                    int(v)
                except (TypeError, ValueError):
                    raise row_error(
                        table,
                        i,
                        column,
                        f"{column} = {v!r} is not an integer",
                        kind="invalid_value",
                        input=v,
                    ) from exc
            raise
    elif arr.dtype.kind not in "iu":
        raise column_error(
            table, column, f"must hold integers, got dtype {arr.dtype}", kind="invalid_value"
        )
    lo, hi = _INT_RANGES[target]
    # min / max first: two passes and no temporary on the (usual) clean column.
    if int(arr.min()) >= lo and int(arr.max()) <= hi:
        return np.ascontiguousarray(arr.astype(target))
    if arr.dtype.kind == "u":
        bad = arr > hi
    else:
        bad = (arr < lo) | (arr > hi)
    if bad.any():
        i = first_row(bad)
        problem = "negative" if arr[i] < 0 else f"larger than {hi}"
        raise row_error(
            table,
            i,
            column,
            f"{column} = {arr[i]} is {problem}",
            kind="invalid_value",
            input=arr[i],
        )
    return np.ascontiguousarray(arr.astype(target))


def floats(values: Any, dtype: npt.DTypeLike, table: str, column: str) -> npt.NDArray[Any]:
    """Convert to a contiguous float array (range checks are the core's)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise column_error(
            table, column, f"must be one-dimensional, got shape {arr.shape}", kind="invalid_value"
        )
    if arr.dtype.kind in "USO":  # text is not a number (as the table check rules)
        for i, v in enumerate(arr.tolist()):
            if isinstance(v, (str, bytes)):
                raise DataError(
                    f"{table}.{column} must hold numbers; row {i} is {v!r}",
                    table=table,
                    row=i,
                    column=column,
                    kind="invalid_value",
                    input=v,
                )
    if arr.dtype.kind not in "fiub":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise column_error(
                table, column, f"must hold numbers, got dtype {arr.dtype}", kind="invalid_value"
            ) from exc
    if np.dtype(dtype) == np.float32 and arr.dtype.kind == "f" and arr.dtype.itemsize > 4:
        with np.errstate(invalid="ignore"):
            big = np.isfinite(arr) & (np.abs(arr) > _F32_MAX)
        if big.any():
            i = first_row(big)
            raise row_error(
                table,
                i,
                column,
                f"{column} = {float(arr[i])!r} is out of range (beyond float32)",
                kind="invalid_value",
                input=arr[i],
            )
    return np.ascontiguousarray(arr, dtype=dtype)


def times(values: Any, table: str, column: str) -> npt.NDArray[np.int64] | None:
    """Times as int64 seconds; ``None`` / ``NaT`` / NaN become the null sentinel.

    Accepts int seconds, float seconds (NaN = null), ``datetime64`` of any unit, and
    sequences of ``datetime`` (naive ones are taken as UTC), ints or ``None``.
    """
    if values is None:
        return None
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise column_error(
            table, column, f"must be one-dimensional, got shape {arr.shape}", kind="invalid_value"
        )
    if arr.dtype.kind == "M":
        out = arr.astype("datetime64[s]").view(np.int64).copy()
        return out  # NaT is already int64 min
    if arr.dtype.kind in "iu":
        return ints(arr, np.int64, table, column)
    if arr.dtype.kind == "f":
        out = np.full(arr.shape, NULL_TIME, dtype=np.int64)
        ok = ~np.isnan(arr)
        if np.isinf(arr).any():
            i = first_row(np.isinf(arr))
            raise row_error(
                table,
                i,
                column,
                f"{column} = {arr[i]} is not a time",
                kind="invalid_value",
                input=arr[i],
            )
        big = ok & (np.abs(arr) >= 2.0**63)
        if big.any():
            i = first_row(big)
            raise row_error(
                table,
                i,
                column,
                f"{column} = {arr[i]} is not a time (out of range)",
                kind="invalid_value",
                input=arr[i],
            )
        out[ok] = np.floor(arr[ok]).astype(np.int64)
        return out
    out = np.empty(len(arr), dtype=np.int64)
    for i, v in enumerate(arr):
        out[i] = time_value(v, table, column, i)
    return out


def time_value(v: Any, table: str, column: str, row: int) -> int:
    """One time value as int seconds (null sentinel for missing)."""
    if v is None:
        return NULL_TIME
    if isinstance(v, bool):
        raise row_error(
            table, row, column, f"{column} = {v!r} is not a time", kind="invalid_value", input=v
        )
    if isinstance(v, float) and v != v:
        return NULL_TIME
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return int(np.floor(v.timestamp()))
    if isinstance(v, _dt.date):
        return int(_dt.datetime(v.year, v.month, v.day, tzinfo=_dt.timezone.utc).timestamp())
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            return NULL_TIME
        return int(v.astype("datetime64[s]").astype(np.int64))
    if hasattr(v, "to_pydatetime"):  # pandas Timestamp / NaT
        if str(v) == "NaT":
            return NULL_TIME
        return time_value(v.to_pydatetime(), table, column, row)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        if not -(2**63) < int(v) < 2**63:
            raise row_error(
                table,
                row,
                column,
                f"{column} = {v!r} is not a time (out of range)",
                kind="invalid_value",
                input=v,
            )
        return int(v)
    if isinstance(v, (float, np.floating)):
        if not abs(float(v)) < 2.0**63:
            raise row_error(
                table,
                row,
                column,
                f"{column} = {v!r} is not a time (out of range)",
                kind="invalid_value",
                input=v,
            )
        return int(np.floor(v))
    raise row_error(
        table, row, column, f"{column} = {v!r} is not a time", kind="invalid_value", input=v
    )


def sequence_column(sequence: Any) -> npt.NDArray[np.int64]:
    """Sequence numbers as int64; None / NaN become :data:`NULL_SEQUENCE`, anything else
    must be an integer."""
    s = np.asarray(sequence)
    if s.dtype.kind not in "fO":
        return ints(s, np.int64, "facts", "sequence")
    if s.dtype.kind == "O":
        s = np.array([np.nan if v is None else v for v in s.tolist()], dtype=np.float64)
    null = np.isnan(s)
    with np.errstate(invalid="ignore"):
        bad = ~null & (~np.isfinite(s) | (s != np.floor(s)) | (np.abs(s) >= 2.0**63))
    if bad.any():
        i = int(np.argmax(bad))
        raise row_error(
            "facts",
            i,
            "sequence",
            f"sequence = {float(s[i])!r} is not an integer",
            kind="invalid_value",
            input=s[i],
        )
    out = np.where(null, 0, s).astype(np.int64)
    out[null] = NULL_SEQUENCE
    return out
