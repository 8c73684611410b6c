"""One table under check (:class:`_Work`) and the column rules shared by every table:
ids, references, numbers, times, text, JSON values and names."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .columns import (
    ObjectColumn,
    describe,
    description,
    value_types,
)
from .constants import MAX_REPORTED_ROWS
from .report import BadRow, TableReport

_EMBEDDING_KINDS = ("entity", "chunk", "alias")
_PARENT = {"entity": "entities", "chunk": "chunks", "alias": "aliases"}
_OBJECT_COLUMNS = frozenset({"tags", "metadata", "object_value"})
_I64_MAX = 2**63 - 1
_U32_LIMIT = 2**32 - 2  # 2**32 - 1 is the core's "none"
_MAX_TENANT = 2**24 - 1
_F32_MAX = float(np.finfo(np.float32).max)
#: Value types whose ``==`` against None falls back to identity (vectorised None tests).
_PLAIN_TYPES: frozenset[type] = frozenset({int, str, float, type(None)})
_NONE = np.array(None, dtype=object)

#: Rows per block of the row-wise passes that would otherwise make full-size temporaries.
_BLOCK = 1 << 20
Array = npt.NDArray[Any]
Mask = npt.NDArray[np.bool_]


def _is_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(v != v)
    if isinstance(v, np.datetime64):
        return bool(np.isnat(v))
    return type(v).__name__ in ("NAType", "NaTType")


def _is_none(arr: Array) -> Mask:
    return np.fromiter(
        map(operator.is_, arr.tolist(), itertools.repeat(None)), dtype=bool, count=len(arr)
    )


def _none_mask(arr: Array, kinds: set[type]) -> Mask:
    """``v is None`` per value, for an object array whose value types are ``kinds``:
    vectorised when every type is one whose ``==`` against None is identity."""
    if kinds <= _PLAIN_TYPES:
        return np.asarray(np.equal(arr, _NONE), dtype=np.bool_)
    return _is_none(arr)


def _types(arr: Array) -> set[type]:
    """The Python types of an object array's values."""
    return value_types(arr)


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


# ------------------------------------------------------------------------------ checking


class _Rule(NamedTuple):
    """Rows a rule refuses, why (as text), its kind, column and offending value."""

    mask: Mask
    why: Callable[[int], str]
    kind: str
    column: str | None
    value: Callable[[int], Any] | None
    dependent: bool


class _Work:
    """One table under check: its rules, then the rows kept."""

    def __init__(self, name: str, cols: Mapping[str, Array] | None, label: str, base: int):
        self.name = name
        self.label = label
        self.base = base
        self.present = cols is not None
        self.cols: Mapping[str, Array] = cols or {}
        self.n = _n_rows(cols)
        self.rules: list[_Rule] = []
        self.out: dict[str, Array | None] = {}
        self.key: Array | None = None  # the column others refer to, normalised
        self.key_unusable: Mask | None = None
        self.row_ids: Array | None = None  # ids for the report
        self.keep: Mask | None = None
        self._kept_index: _Index | None = None
        self._all_index: _Index | None = None

    def bad(
        self,
        mask: Mask,
        why: Callable[[int], str],
        *,
        column: str | None,
        kind: str = "invalid_value",
        value: Callable[[int], Any] | None = None,
        dependent: bool = False,
    ) -> None:
        """Refuse the rows of ``mask``: ``why(i)`` says why, ``column`` and ``kind`` (an
        errors' ``kind`` code) locate and classify it, ``value(i)`` is the offending value."""
        if self.keep is not None:  # pragma: no cover - a bug in the rule order
            raise RuntimeError(f"rule added to {self.name} after it was finished")
        if mask.any():
            self.rules.append(
                _Rule(mask, why, "dependent" if dependent else kind, column, value, dependent)
            )

    def finish(self) -> Mask:
        keep = np.ones(self.n, dtype=bool)
        for rule in self.rules:
            keep &= ~rule.mask
        self.keep = keep
        return keep

    def index(self, kept: bool) -> _Index:
        if self.key is None or self.key_unusable is None or self.keep is None:
            raise RuntimeError(f"{self.name} has no key")  # pragma: no cover
        if kept:
            if self._kept_index is None:
                self._kept_index = _Index(self.key, ~self.key_unusable & self.keep)
            return self._kept_index
        if self._all_index is None:
            self._all_index = _Index(self.key, ~self.key_unusable)
        return self._all_index

    def report(self) -> TableReport:
        own = np.zeros(self.n, dtype=bool)
        dep = np.zeros(self.n, dtype=bool)
        for rule in self.rules:
            if rule.dependent:
                dep |= rule.mask
            else:
                own |= rule.mask
        dep &= ~own
        first = []
        for i in np.flatnonzero(own | dep)[:MAX_REPORTED_ROWS].tolist():
            for rule in self.rules:
                if rule.mask[i] and rule.dependent != bool(own[i]):
                    rid = None if self.row_ids is None else _py(self.row_ids[i])
                    # a row already stored (an update broke it) keeps its own table and row
                    table, row = (self.name, i) if i < self.base else (self.label, i - self.base)
                    value = None if rule.value is None else _py(rule.value(i))
                    first.append(
                        BadRow(
                            table,
                            row,
                            rid,
                            rule.why(i),
                            rule.dependent,
                            column=rule.column,
                            kind=rule.kind,
                            input=value,
                        )
                    )
                    break
        return TableReport(
            self.label, self.n - self.base, int(own.sum()), int(dep.sum()), tuple(first)
        )


class _Index:
    """Ids of a table's rows -> the row (first occurrence); -1 when absent."""

    def __init__(self, ids: Array, rows: Mask):
        pos = np.flatnonzero(rows)
        self._dict: dict[Hashable, int] | None = None
        self._table: npt.NDArray[np.int64] | None = None
        if ids.dtype == np.int64:
            keys = ids[pos]
            order = np.argsort(keys, kind="stable")
            self._keys: npt.NDArray[np.int64] | None = keys[order]
            self._pos = pos[order]
        else:
            self._keys = None
            self._pos = pos
            d: dict[Hashable, int] = {}
            for i in pos.tolist():
                d.setdefault(ids[i], i)
            self._dict = d

    def _rows_of(self, refs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The row of each int64 id (-1 when absent), for an index of int64 ids."""
        keys = self._keys
        assert keys is not None
        out = np.full(len(refs), -1, dtype=np.int64)
        if not len(keys) or not len(refs):
            return out
        lo, hi = int(keys[0]), int(keys[-1])
        if hi - lo < 4 * len(keys) + 1024:  # dense ids: a direct lookup table
            if self._table is None:
                first = np.concatenate(([True], keys[1:] != keys[:-1]))
                table = np.full(hi - lo + 1, -1, dtype=np.int64)
                table[keys[first] - lo] = self._pos[first]
                self._table = table
            inside = (refs >= lo) & (refs <= hi)
            if inside.all():  # the usual case: no masked copies of the references
                for a in range(0, len(refs), _BLOCK):  # by blocks: no full-size temporary
                    np.take(self._table, refs[a : a + _BLOCK] - lo, out=out[a : a + _BLOCK])
                return out
            out[inside] = self._table[refs[inside] - lo]
            return out
        at = np.minimum(np.searchsorted(keys, refs), len(keys) - 1)
        hit = keys[at] == refs
        out[hit] = self._pos[at[hit]]
        return out

    def find(self, refs: Array, unusable: Mask) -> npt.NDArray[np.int64]:
        if self._keys is not None and refs.dtype == np.int64:
            out = self._rows_of(refs)
            out[unusable] = -1
            return out
        info = description(refs)
        if self._keys is not None and info is not None and info.ints is not None:
            out = self._rows_of(info.ints)  # ints (and None) a loader described
            out[unusable] = -1
            if info.null is not None:
                out[info.null] = -1
            return out
        out = np.full(len(refs), -1, dtype=np.int64)
        if self._keys is not None and refs.dtype == object:
            sel = np.flatnonzero(~unusable)
            vals = refs[sel].tolist()
            if set(map(type, vals)) <= {int}:
                try:
                    ints = np.array(vals, dtype=np.int64)
                except OverflowError:
                    pass
                else:
                    out[sel] = self._rows_of(ints)
                    return out
        if self._dict is None:
            assert self._keys is not None
            d: dict[Hashable, int] = {}
            for k, p in zip(self._keys.tolist(), self._pos.tolist(), strict=True):
                d.setdefault(k, p)
            self._dict = d
        d = self._dict
        for i in np.flatnonzero(~unusable).tolist():
            out[i] = d.get(refs[i], -1)
        return out


def _later_duplicates(
    keys: Array, usable: Mask, second: Array | None = None
) -> npt.NDArray[np.int64]:
    """For each row, the row of the first occurrence of its key (or key pair) when it is a
    later occurrence; -1 otherwise (and for unusable rows)."""
    n = len(keys)
    first = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(usable)
    if not len(rows):
        return first
    if keys.dtype == np.int64 and (second is None or second.dtype == np.int64):
        k = keys[rows]
        if second is None and bool((k[1:] > k[:-1]).all()):
            return first  # in strictly increasing order (a primary key): no duplicate
        cols = (rows, k) if second is None else (rows, second[rows], k)
        order = np.lexsort(cols)
        sk = k[order]
        same = sk[1:] == sk[:-1]
        if second is not None:
            s2 = second[rows][order]
            same &= s2[1:] == s2[:-1]
        start = np.concatenate(([True], ~same))
        group_first = rows[order][np.maximum.accumulate(np.where(start, np.arange(len(rows)), 0))]
        dup = ~start
        first[rows[order][dup]] = group_first[dup]
        return first
    seen: dict[Hashable, int] = {}
    for i in rows.tolist():
        key: Hashable = keys[i] if second is None else (keys[i], second[i])
        j = seen.setdefault(key, i)
        if j != i:
            first[i] = j
    return first


def _ids(w: _Work, col: str, *, nullable: bool, what: str = "id") -> tuple[Array, Mask]:
    """A column of ids, normalised: (values, unusable). Values are int64 when every row is
    an int, else an object array (None where unusable). Bad types are refused here."""
    n = w.n
    arr = w.cols.get(col)
    if arr is None:
        return np.full(n, None, dtype=object), np.ones(n, dtype=bool)
    kind = arr.dtype.kind
    if kind == "i" or (kind == "u" and arr.dtype.itemsize < 8):
        return arr.astype(np.int64, copy=False), np.zeros(n, dtype=bool)
    if kind == "U":
        return arr.astype(object), np.zeros(n, dtype=bool)
    if kind == "O":  # the common cases without a per-value branch
        info = description(arr)
        if info is not None and info.ints is not None and info.null is not None:
            # ints (and None) a loader described: no value to look at
            if not info.null.any():
                return info.ints.copy(), np.zeros(n, dtype=bool)
            if not nullable:
                w.bad(info.null, lambda i: f"{col} is missing", column=col, kind="missing")
            return arr, info.null.copy()
        kinds = _types(arr)
        if kinds == {str}:
            return arr, np.zeros(n, dtype=bool)
        if kinds == {int}:
            try:
                return np.array(arr.tolist(), dtype=np.int64), np.zeros(n, dtype=bool)
            except OverflowError:
                pass
        if nullable and kinds == {str, type(None)}:
            return arr, _none_mask(arr, kinds)
        if kinds == {int, type(None)}:  # ints with nulls (nullable references)
            null = _none_mask(arr, kinds)
            try:  # every int within int64 (else the per-value path below refuses some)
                np.array(arr[~null].tolist(), dtype=np.int64)
            except OverflowError:
                pass
            else:
                if not nullable:
                    w.bad(null, lambda i: f"{col} is missing", column=col, kind="missing")
                return arr.copy(), null
    null = np.zeros(n, dtype=bool)
    badm = np.zeros(n, dtype=bool)
    out = np.empty(n, dtype=object)
    if kind == "f":
        null = np.isnan(arr)
        with np.errstate(invalid="ignore"):
            badm = ~null & (~np.isfinite(arr) | (arr != np.floor(arr)) | (np.abs(arr) >= 2.0**63))
        ok = ~null & ~badm
        out[ok] = arr[ok].astype(np.int64).tolist() if ok.any() else []
        values = arr.astype(object)
    elif kind in "uOb":
        values = arr.astype(object) if kind != "O" else arr
        for i, v in enumerate(values.tolist()):
            v = _py(v)
            if _is_null(v):
                null[i] = True
            elif isinstance(v, str):
                out[i] = v
            elif isinstance(v, bool):
                badm[i] = True
            elif isinstance(v, int):
                if -(2**63) <= v <= _I64_MAX:
                    out[i] = v
                else:
                    badm[i] = True
            elif isinstance(v, float) and v.is_integer() and abs(v) < 2.0**63:
                out[i] = int(v)
            else:
                badm[i] = True
    else:
        values = arr.astype(object)
        badm[:] = True
    w.bad(
        badm,
        lambda i: f"{col} = {_py(values[i])!r} is not an int or str {what}",
        column=col,
        value=lambda i: values[i],
    )
    if not nullable:
        w.bad(null, lambda i: f"{col} is missing", column=col, kind="missing")
    unusable = null | badm
    if not unusable.any() and all(type(v) is int for v in out.tolist()):
        return np.array(out.tolist(), dtype=np.int64), unusable
    return out, unusable


def _compact(ids: Array) -> Array:
    """An object column of ids that are all ints -> int64."""
    info = description(ids)
    if info is not None and info.ints is not None and info.null is not None:
        return info.ints if not info.null.any() else ids
    if ids.dtype == object and all(type(v) is int for v in ids.tolist()):
        return np.array(ids.tolist(), dtype=np.int64)
    return ids


def _nullable_ids(ids: Array) -> Array:
    """A nullable reference column as checked tables hold it: an object array (None =
    none), described by its ints when they are all ints, so that a build maps them
    without looking at the objects."""
    if ids.dtype == object:
        return ids
    if ids.dtype == np.int64:
        return describe(
            ids.astype(object),
            ObjectColumn(frozenset({int}), ints=ids, null=np.zeros(len(ids), dtype=bool)),
        )
    return ids.astype(object)


def _ref(
    w: _Work,
    col: str,
    values: Array,
    unusable: Mask,
    parent: _Work,
    what: str,
) -> npt.NDArray[np.int64]:
    """Rows of ``parent`` that ``values`` name (-1 where none / unusable); refuses dangling
    references (a rule) and references to refused rows (dependent)."""
    if not parent.present:
        w.bad(
            ~unusable,
            lambda i: f"{col} = {_py(values[i])!r} refers to no {what} (no {parent.name} table)",
            column=col,
            kind="dangling",
            value=lambda i: values[i],
        )
        return np.full(w.n, -1, dtype=np.int64)
    rows = parent.index(kept=True).find(values, unusable)
    miss = (rows < 0) & ~unusable
    if miss.any():
        assert parent.keep is not None
        if parent.keep.all():
            w.bad(
                miss,
                lambda i: f"{col} = {_py(values[i])!r} refers to no {what}",
                column=col,
                kind="dangling",
                value=lambda i: values[i],
            )
        else:
            anywhere = parent.index(kept=False).find(values, ~miss)
            w.bad(
                miss & (anywhere < 0),
                lambda i: f"{col} = {_py(values[i])!r} refers to no {what}",
                column=col,
                kind="dangling",
                value=lambda i: values[i],
            )
            w.bad(
                miss & (anywhere >= 0),
                lambda i: (
                    f"{col} = {_py(values[i])!r} is {parent.label} row "
                    f"{int(anywhere[i]) - parent.base}, which was refused"
                ),
                column=col,
                value=lambda i: values[i],
                dependent=True,
            )
    return rows


def _n_rows(cols: Mapping[str, Array] | None) -> int:
    if not cols:
        return 0
    return len(next(iter(cols.values())))


def _object_array(values: Sequence[Any]) -> Array:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


#: Strings per block of the UTF-8 test (one join and encode per block).
_UTF8_BLOCK = 4096


def _refuse_unencodable(w: _Work, col: str, values: list[Any]) -> None:
    """Refuse the rows whose text cannot be written as UTF-8 (lone surrogates): every store
    writes UTF-8, so such text would not round-trip. One encode per block of rows; the rows
    of a failing block are then tested one by one."""
    bad: Mask | None = None
    for a in range(0, len(values), _UTF8_BLOCK):
        block = values[a : a + _UTF8_BLOCK]
        try:
            try:
                joined = "".join(block)
            except TypeError:  # not only str: None, ints
                joined = "".join([v for v in block if type(v) is str])
            joined.encode("utf-8")
        except UnicodeEncodeError:
            if bad is None:
                bad = np.zeros(len(values), dtype=bool)
            for k, v in enumerate(block):
                if type(v) is str:
                    try:
                        v.encode("utf-8")
                    except UnicodeEncodeError:
                        bad[a + k] = True
    if bad is not None:
        w.bad(
            bad,
            lambda i: f"{col} = {values[i]!r} is not UTF-8 text (a lone surrogate)",
            column=col,
            value=lambda i: values[i],
        )
