"""Value rules shared by every table: numbers, integers, times, text, JSON values and
vocabulary names, each refusing the rows it cannot convert."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from .columns import ObjectColumn, describe, description, time_value, times
from .constants import NULL_TIME
from .work import (
    _I64_MAX,
    Array,
    Mask,
    _is_none,
    _is_null,
    _object_array,
    _py,
    _refuse_unencodable,
    _types,
    _Work,
)


def _floats(w: _Work, col: str) -> tuple[npt.NDArray[np.floating[Any]], Mask] | None:
    """(values with NaN for null, null mask); non-numbers refused. None when absent.
    Values are float64, or float32 when given so."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    if arr.dtype == np.float32:  # kept as given (each float32 is a float64): no copy
        return arr, np.isnan(arr)
    if arr.dtype.kind in "fiub":
        vals = arr.astype(np.float64)
        return vals, np.isnan(vals)
    vals = np.full(w.n, np.nan)
    null = np.zeros(w.n, dtype=bool)
    badm = np.zeros(w.n, dtype=bool)
    if arr.dtype.kind == "O":
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if _is_null(v):
                null[i] = True
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                vals[i] = float(v) if abs(v) < 1e308 or isinstance(v, float) else np.inf
            else:
                badm[i] = True
    else:
        badm[:] = True
    w.bad(
        badm,
        lambda i: f"{col} = {_py(arr[i])!r} is not a number",
        column=col,
        value=lambda i: arr[i],
    )
    return vals, null & ~badm


def _ints(
    w: _Work, col: str, lo: int, hi: int, *, null_value: int | None
) -> npt.NDArray[np.int64] | None:
    """An int column in [lo, hi]; null allowed (as ``null_value``) when given. None when
    absent."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    n = w.n
    out = np.zeros(n, dtype=np.int64)
    null = np.zeros(n, dtype=bool)
    badm = np.zeros(n, dtype=bool)
    if arr.dtype.kind == "i" or (arr.dtype.kind == "u" and arr.dtype.itemsize < 8):
        out = arr.astype(np.int64, copy=null_value is not None)  # nulls are written below
        if null_value is not None:
            null = out == null_value
    elif arr.dtype.kind == "f":
        null = np.isnan(arr)
        with np.errstate(invalid="ignore"):
            badm = ~null & (~np.isfinite(arr) | (arr != np.floor(arr)) | (np.abs(arr) >= 2.0**63))
        ok = ~null & ~badm
        out[ok] = arr[ok].astype(np.int64)
    elif arr.dtype.kind in "uOb":
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if _is_null(v) or (null_value is not None and type(v) is int and v == null_value):
                null[i] = True
            elif isinstance(v, bool):
                badm[i] = True
            elif isinstance(v, int) and -(2**63) < v <= _I64_MAX:
                out[i] = v
            elif isinstance(v, float) and v.is_integer() and abs(v) < 2.0**63:
                out[i] = int(v)
            else:
                badm[i] = True
    else:
        badm[:] = True
    w.bad(
        badm,
        lambda i: f"{col} = {_py(arr[i])!r} is not an integer",
        column=col,
        value=lambda i: arr[i],
    )
    if null_value is None:
        w.bad(null & ~badm, lambda i: f"{col} is missing", column=col, kind="missing")
    rng = ~null & ~badm & ((out < lo) | (out > hi))
    w.bad(
        rng,
        lambda i: f"{col} = {int(out[i])} is out of range [{lo}, {hi}]",
        column=col,
        value=lambda i: out[i],
    )
    if null_value is not None:
        out[null] = null_value
    return out


def _time_column(w: _Work, col: str) -> npt.NDArray[np.int64] | None:
    arr = w.cols.get(col)
    if arr is None:
        return None
    if arr.dtype == object:  # the null sentinel of checked tables means null here too
        arr = _object_array([None if type(v) is int and v == NULL_TIME else v for v in arr])
    try:
        out = times(arr, w.name, col)
    except DataError:
        out = None
    if out is not None:
        return out
    out = np.full(w.n, NULL_TIME, dtype=np.int64)
    badm = np.zeros(w.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        try:
            out[i] = time_value(v, w.name, col, i)
        except DataError:
            badm[i] = True
    w.bad(
        badm, lambda i: f"{col} = {_py(arr[i])!r} is not a time", column=col, value=lambda i: arr[i]
    )
    return out


def _texts(w: _Work, col: str, *, required: bool = False) -> Array | None:
    arr = w.cols.get(col)
    if arr is None:
        return None
    if arr.dtype.kind in "OU":
        _refuse_unencodable(w, col, arr.tolist())
    if arr.dtype == object and _types(arr) <= {str, type(None)}:
        if required:
            null = _is_none(arr)
            w.bad(null, lambda i: f"{col} is missing", column=col, kind="missing")
        return arr
    out = np.empty(w.n, dtype=object)
    null = np.zeros(w.n, dtype=bool)
    badm = np.zeros(w.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, str):
            out[i] = str(v)
        elif _is_null(v):
            null[i] = True
        else:
            badm[i] = True
    w.bad(
        badm, lambda i: f"{col} = {_py(arr[i])!r} is not text", column=col, value=lambda i: arr[i]
    )
    if required:
        w.bad(null, lambda i: f"{col} is missing", column=col, kind="missing")
    return out


def _json_values(w: _Work, col: str, want: type) -> Array | None:
    """tags (list of str) / metadata (dict): Python values or their JSON text."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    out = np.empty(w.n, dtype=object)
    why: dict[int, str] = {}
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if not isinstance(v, (list, tuple, dict, str)) and _is_null(v):
            continue
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError as exc:
                why[i] = f"{col} is not valid JSON ({exc})"
                continue
        if want is list:
            if isinstance(v, tuple):
                v = list(v)
            if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
                why[i] = f"{col} = {v!r} is not a list of str"
                continue
        elif not isinstance(v, dict):
            why[i] = f"{col} = {v!r} is not a dict"
            continue
        else:
            try:
                v = json.loads(json.dumps(v))
            except (TypeError, ValueError) as exc:
                why[i] = f"{col} cannot be stored as JSON ({exc})"
                continue
        out[i] = v
    badm = np.zeros(w.n, dtype=bool)
    badm[list(why)] = True
    w.bad(badm, lambda i: why[i], column=col, value=lambda i: arr[i])
    return out


def _names(w: _Work, col: str, vocab: tuple[str, ...], what: str) -> Array | None:
    """Status / source names or codes -> names (object array). The vocabulary is open: any
    name is kept (words beyond ``vocab`` get the next codes when the graph is built, with
    neutral weights); a code must be one of ``vocab``'s."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    badm = np.zeros(w.n, dtype=bool)
    info = description(arr)
    out: Array
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        badm = (codes < 0) | (codes >= len(vocab))
        names = np.empty(len(vocab) + 1, dtype=object)
        names[:-1] = vocab
        small: npt.NDArray[np.signedinteger[Any]] = np.where(badm, -1, codes).astype(
            np.int8 if len(vocab) < 127 else np.int32
        )
        types: frozenset[type] = frozenset({str, type(None)} if badm.any() else {str})
        out = describe(names[small], ObjectColumn(types, codes=small, values=tuple(vocab)))
    elif (
        info is not None
        and info.codes is not None
        and info.values is not None
        and all(isinstance(v, str) for v in info.values)
    ):  # a dictionary column: each distinct value looked up once
        known = np.array([True] * len(info.values) + [False], dtype=bool)
        badm = ~known[info.codes]  # code -1 (None) is the last: refused as missing
        out = arr
    elif arr.dtype == object and _types(arr) == {str}:
        out = arr
    else:
        out = np.empty(w.n, dtype=object)
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if isinstance(v, str):
                out[i] = v
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(vocab):
                out[i] = vocab[v]
            else:
                badm[i] = True
    null = np.zeros(w.n, dtype=bool)
    for i in np.flatnonzero(badm).tolist():
        null[i] = _is_null(_py(arr[i]))
    w.bad(badm & null, lambda i: f"{col} is missing", column=col, kind="missing")
    w.bad(
        badm & ~null,
        lambda i: f"{col} = {_py(arr[i])!r} is an unknown {what} (known: {list(vocab)!r})",
        column=col,
        value=lambda i: arr[i],
    )
    return out
