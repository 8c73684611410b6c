"""External ids <-> dense indices (:class:`IdMap`) and names <-> codes (:class:`Vocab`)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError, UnknownIdError
from .columns import _PLURAL, description, first_row, ints
from .faults import row_error


class IdMap:
    """External ids <-> dense indices. ``None`` ids mean the identity (ids are 0..n-1)."""

    __slots__ = ("_ext", "_index", "_n", "_sorted_keys", "_sorted_pos", "kind", "name")

    def __init__(
        self,
        ids: Sequence[Hashable] | npt.NDArray[Any] | None,
        n: int,
        name: str,
        *,
        copy: bool = True,
    ):
        """
        Args:
            ids: External ids by index (None: the identity, ids ``0..n-1``).
            n: The number of ids.
            name: What the ids name (``"entity"``...), for messages.
            copy: Copy int ids (so that the caller cannot change them under the map);
                False only for an array nobody else holds.

        Raises:
            DataError: A negative ``n``, ids of the wrong shape, or a duplicate id.
        """
        if n < 0:
            table = _PLURAL.get(name, name + "s")
            raise DataError(
                f"the number of {table} is negative ({n})",
                table=table,
                kind="invalid_value",
                input=n,
            )
        self.name = name
        self._n = n
        self._index: dict[Hashable, int] | None = None
        self._sorted_keys: npt.NDArray[Any] | None = None
        self._sorted_pos: npt.NDArray[np.int64] | None = None
        if ids is None:
            self.kind = "identity"
            self._ext: npt.NDArray[Any] | None = None
            return
        arr = np.asarray(ids)
        if arr.ndim != 1 or len(arr) != n:
            raise DataError(
                f"{name} ids: expected {n} ids in one dimension, got shape {arr.shape}",
                table=_PLURAL.get(name, name + "s"),
                column="id",
                kind="length_mismatch" if arr.ndim == 1 else "invalid_value",
                ctx={"expected": n, "got": len(arr)} if arr.ndim == 1 else None,
            )
        if arr.dtype.kind in "iu":
            arr = arr.astype(np.int64, copy=copy)
            self.kind = "int"
            self._ext = arr
            if n < 2 or bool((arr[1:] > arr[:-1]).all()):
                # Already in order (the usual case: ids from a store's primary key): the
                # ids are their own sorted keys, at their own positions.
                self._sorted_keys = arr
                self._sorted_pos = None
                return
            order = np.argsort(arr, kind="stable")
            keys = arr[order]
            dup = keys[1:] == keys[:-1]
            if dup.any():
                i = int(order[first_row(dup) + 1])
                table = _PLURAL.get(name, name + "s")
                raise row_error(
                    table, i, "id", f"duplicate id {arr[i]}", kind="duplicate", input=arr[i]
                )
            self._sorted_keys = keys
            self._sorted_pos = order.astype(np.int64)
        else:
            ext = np.empty(n, dtype=object)
            ext[:] = arr.tolist()
            index: dict[Hashable, int] = {}
            for i, v in enumerate(ext):
                if v in index:
                    table = _PLURAL.get(name, name + "s")
                    raise row_error(
                        table, i, "id", f"duplicate id {v!r}", kind="duplicate", input=v
                    )
                index[v] = i
            self.kind = "object"
            self._ext = ext
            self._index = index

    def __len__(self) -> int:
        return self._n

    @property
    def largest(self) -> int | None:
        """The largest int id (None for no ids, or ids that are not ints)."""
        if self.kind == "identity":
            return self._n - 1 if self._n else None
        keys = self._sorted_keys
        if self.kind != "int" or keys is None or not len(keys):
            return None
        return int(keys[-1])

    def holds_any(self, ids: npt.NDArray[Any]) -> bool:
        """Whether any of ``ids`` is held (a lookup per id, not a scan of the map)."""
        if self.kind == "object":
            assert self._index is not None
            index = self._index
            return any(v in index for v in ids.tolist())
        if ids.dtype.kind not in "iu":
            return True  # not int ids: the caller's full check decides
        arr = ids.astype(np.int64)
        if self.kind == "identity":
            return bool(((arr >= 0) & (arr < self._n)).any())
        return bool(self._positions(arr)[1].any())

    def extended(self, ids: npt.NDArray[Any]) -> IdMap:
        """The map of ``ids`` (this map's ids followed by new ones, an array nobody writes
        to again), made in the cost of the new ids where both are int ids in order and the
        new ones come after (else built anew, checks included)."""
        n = len(ids)
        keys = self._sorted_keys
        if (
            self.kind == "int"
            and keys is not None
            and self._sorted_pos is None
            and ids.dtype == np.int64
            and n >= self._n
        ):
            new = ids[self._n :]
            last = int(keys[-1]) if self._n else None
            if (last is None or not len(new) or int(new[0]) > last) and bool(
                (new[1:] > new[:-1]).all()
            ):
                out = IdMap(None, n, self.name)
                out.kind = "int"
                out._ext = ids
                out._sorted_keys = ids
                return out
        return IdMap(ids, n, self.name)

    @property
    def consecutive(self) -> bool:
        """Int ids that are consecutive and in order (``k, k + 1, ...``), or the identity."""
        if self.kind == "identity":
            return True
        keys = self._sorted_keys
        if self.kind != "int" or self._sorted_pos is not None or keys is None:
            return False
        return not len(keys) or int(keys[-1]) - int(keys[0]) == len(keys) - 1

    @property
    def external(self) -> npt.NDArray[Any]:
        """All external ids in index order."""
        if self._ext is None:
            return np.arange(self._n, dtype=np.int64)
        return self._ext

    def to_index(
        self, ids: Any, table: str, column: str, *, allow_none: bool = False
    ) -> npt.NDArray[np.int64]:
        """Map external ids (array-like) to dense indices; -1 for None when allowed."""
        if self.kind == "identity":
            arr = np.asarray(ids)
            if arr.size == 0:
                return np.zeros(0, dtype=np.int64)
            info = description(arr)
            if info is not None and info.ints is not None and info.null is not None:
                if info.null.any() and not allow_none:
                    i = first_row(info.null)
                    raise row_error(table, i, column, f"{column} is missing", kind="missing")
                arr = np.where(info.null, -1, info.ints)
            elif arr.dtype.kind == "O":
                arr = np.array(
                    [-1 if (allow_none and v is None) else v for v in arr], dtype=np.float64
                )
                if np.isnan(arr).any():
                    i = first_row(np.isnan(arr))
                    raise row_error(table, i, column, f"{column} is missing", kind="missing")
            if arr.dtype.kind == "f":
                nan = np.isnan(arr)
                if nan.any() and not allow_none:
                    i = first_row(nan)
                    raise row_error(table, i, column, f"{column} is missing", kind="missing")
                arr = np.where(nan, -1, arr)
            out = ints(arr, np.int64, table, column)
            floor = -1 if allow_none else 0
            if int(out.min()) >= floor and int(out.max()) < self._n:
                return out
            bad = (out >= self._n) | (out < floor)
            if bad.any():
                i = first_row(bad)
                raise row_error(
                    table,
                    i,
                    column,
                    f"{column} = {out[i]} refers to no {self.name} (there are {self._n})",
                    kind="dangling",
                    input=out[i],
                    ctx={"target": self.name, "count": self._n},
                )
            return out
        if self.kind == "int":
            arr = np.asarray(ids)
            if arr.size == 0:
                return np.zeros(0, dtype=np.int64)
            missing = np.zeros(len(arr), dtype=bool)
            info = description(arr)
            if info is not None and info.ints is not None and info.null is not None:
                arr, missing = info.ints, info.null
            elif arr.dtype.kind in "fO":
                missing = np.array([v is None or (isinstance(v, float) and v != v) for v in arr])
                arr = np.where(missing, 0, arr).astype(np.int64)
            arr = ints(arr, np.int64, table, column)
            pos, found = self._positions(arr)
            bad = ~found & ~missing
            if bad.any() or (missing.any() and not allow_none):
                i = first_row(bad | (missing & (not allow_none)))
                if missing[i]:
                    raise row_error(table, i, column, f"{column} is missing", kind="missing")
                raise row_error(
                    table,
                    i,
                    column,
                    f"{column} = {arr[i]} refers to no {self.name}",
                    kind="dangling",
                    input=arr[i],
                    ctx={"target": self.name},
                )
            if missing.any():
                pos = np.where(missing, -1, pos)
            return pos
        assert self._index is not None
        index = self._index
        vals = list(ids) if not isinstance(ids, np.ndarray) else ids.tolist()
        out = np.empty(len(vals), dtype=np.int64)
        for i, v in enumerate(vals):
            if v is None or (isinstance(v, float) and v != v):
                if allow_none:
                    out[i] = -1
                    continue
                raise row_error(table, i, column, f"{column} is missing", kind="missing")
            j = index.get(v)
            if j is None:
                raise row_error(
                    table,
                    i,
                    column,
                    f"{column} = {v!r} refers to no {self.name}",
                    kind="dangling",
                    input=v,
                    ctx={"target": self.name},
                )
            out[i] = j
        return out

    def _positions(
        self, arr: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """(index of each int id, found mask) for an int map; index 0 where not found."""
        keys = self._sorted_keys
        assert keys is not None
        n = len(keys)
        if n == 0:
            return np.zeros(len(arr), dtype=np.int64), np.zeros(len(arr), dtype=bool)
        lo, hi = int(keys[0]), int(keys[-1])
        if self._sorted_pos is None and hi - lo == n - 1:
            # Consecutive ids in order (0..n-1, 1..n...): the index is the id minus the first.
            found = (arr >= lo) & (arr <= hi)
            pos = arr - lo
            if not found.all():
                pos[~found] = 0
            return pos, found
        if len(arr) >= 65_536 and hi - lo < 4 * n + 1024:
            # Dense ids and many to map: one lookup table instead of a binary search each.
            table = np.full(hi - lo + 1, -1, dtype=np.int64)
            table[keys - lo] = (
                np.arange(n, dtype=np.int64) if self._sorted_pos is None else self._sorted_pos
            )
            inside = (arr >= lo) & (arr <= hi)
            pos = np.full(len(arr), -1, dtype=np.int64)
            pos[inside] = table[arr[inside] - lo]
            found = pos >= 0
            pos[~found] = 0
            return pos, found
        at = np.minimum(np.searchsorted(keys, arr), n - 1)
        found = keys[at] == arr
        pos = at if self._sorted_pos is None else self._sorted_pos[at]
        return pos.astype(np.int64, copy=False), found

    def lookup(self, ids: Iterable[Hashable], what: str) -> npt.NDArray[np.int64]:
        """Map query-time ids, raising :class:`UnknownIdError` (kind ``"unknown_id"``) for an
        unknown one."""
        try:
            return self.to_index(
                np.asarray(list(ids), dtype=object if self.kind == "object" else None),
                what,
                self.name,
            )
        except DataError as exc:
            raise UnknownIdError(
                str(exc),
                table=exc.table,
                row=exc.row,
                column=exc.column,
                kind="unknown_id" if exc.kind == "dangling" else exc.kind,
                input=exc.input,
                ctx=exc.ctx,
            ) from None

    def to_external(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Dense indices -> external ids (-1 stays -1 for identity/int maps, None for objects)."""
        if self._ext is None:
            return idx
        if self.kind == "int":
            out = self._ext[np.maximum(idx, 0)]
            return np.where(idx < 0, -1, out)
        out = self._ext[np.maximum(idx, 0)]
        if (idx < 0).any():
            out = out.copy()
            out[idx < 0] = None
        return out


class Vocab:
    """Names <-> small integer codes (statuses, sources, predicates, tenants)."""

    __slots__ = ("_index", "kind", "names")

    def __init__(self, names: Sequence[Hashable], kind: str):
        self.kind = kind
        self.names: tuple[Hashable, ...] = tuple(names)
        self._index = {n: i for i, n in enumerate(self.names)}
        if len(self._index) != len(self.names):
            raise DataError(
                f"{kind} names must be unique, got {list(self.names)!r}",
                column=kind,
                kind="duplicate",
                input=list(self.names),
            )

    def __len__(self) -> int:
        return len(self.names)

    def code(self, name: Hashable) -> int:
        """Code of a name, or an int code (range-checked) where no name is that int: names
        come first, so int tenant names (``(7, 16_000_000)``) resolve to their own codes."""
        try:
            found = self._index.get(name)
        except TypeError:  # unhashable
            found = None
        if found is not None:
            return found
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            if 0 <= int(name) < len(self.names):
                return int(name)
        raise DataError(
            f"unknown {self.kind} {name!r}; known: {list(self.names)!r}",
            column=self.kind,
            kind="invalid_value",
            input=name,
        )

    def name_code(self, name: Hashable) -> int:
        """Code of a name, never taking an int for a code (a bool names nothing)."""
        if not isinstance(name, (bool, np.bool_)):
            try:
                code = self._index.get(name)
            except TypeError:  # unhashable
                code = None
            if code is not None:
                return code
        raise DataError(
            f"unknown {self.kind} {name!r}; known: {list(self.names)!r}",
            column=self.kind,
            kind="invalid_value",
            input=name,
        )

    def encode(
        self, values: Any, table: str, column: str, dtype: npt.DTypeLike
    ) -> npt.NDArray[Any]:
        """Encode a column of names or codes."""
        arr = np.asarray(values)
        if arr.dtype.kind in "iu":
            if arr.size == 0:
                return np.zeros(0, dtype=dtype)
            if arr.ndim == 1 and int(arr.min()) >= 0 and int(arr.max()) < len(self.names):
                return np.ascontiguousarray(arr.astype(dtype, copy=arr.dtype != np.dtype(dtype)))
            out = ints(arr, np.int64, table, column)
            bad = (out < 0) | (out >= len(self.names))
            if bad.any():
                i = first_row(bad)
                raise row_error(
                    table,
                    i,
                    column,
                    f"{column} = {out[i]} is an unknown {self.kind} code "
                    f"(known: {list(self.names)!r})",
                    kind="invalid_value",
                    input=out[i],
                )
            return out.astype(dtype)
        coded = _coded_as_text(arr)
        if coded is not None:
            keys, present, codes_in = coded
            lut = np.full(len(keys), -1, dtype=np.int64)
            by_key: dict[str, list[int]] = {}
            for k in present:
                by_key.setdefault(keys[k], []).append(k)
            for text in sorted(by_key):  # in the order np.unique gives
                c = self._index.get(text)
                if c is None:
                    i = first_row(np.isin(codes_in, by_key[text]))
                    raise row_error(
                        table,
                        i,
                        column,
                        f"{column} = {arr[i]!r} is an unknown {self.kind} "
                        f"(known: {list(self.names)!r})",
                        kind="invalid_value",
                        input=arr[i],
                    )
                lut[by_key[text]] = c
            return lut[codes_in].astype(dtype)
        uniq, inverse = np.unique(
            _as_text(arr) if arr.dtype.kind == "O" else arr, return_inverse=True
        )
        codes = np.empty(len(uniq), dtype=np.int64)
        for j, u in enumerate(uniq):
            key: Hashable = u.item() if isinstance(u, np.generic) else u
            c = self._index.get(key)
            if c is None:
                i = first_row(inverse == j)
                raise row_error(
                    table,
                    i,
                    column,
                    f"{column} = {arr[i]!r} is an unknown {self.kind} "
                    f"(known: {list(self.names)!r})",
                    kind="invalid_value",
                    input=arr[i],
                )
            codes[j] = c
        return codes[inverse.reshape(-1)].astype(dtype)

    def grown(self, values: Any, table: str, column: str, limit: int = 256) -> Vocab:
        """This vocabulary with the column's names it lacks appended, in the order they
        first occur (an open vocabulary: statuses and sources are the user's words; codes
        and nulls are left to :meth:`encode`, which refuses what is out of range).

        Raises:
            DataError: More than ``limit`` names in all (the core stores a byte per fact).
        """
        if values is None:
            return self
        arr = np.asarray(values)
        if arr.dtype.kind not in "UO" or arr.size == 0:
            return self  # codes (checked by encode) or nothing
        if arr.dtype.kind == "U":
            uniq, first = np.unique(arr, return_index=True)
            new = [str(uniq[j]) for j in np.argsort(first) if str(uniq[j]) not in self._index]
        else:
            values_l = arr.ravel().tolist()
            try:
                distinct = set(values_l)
            except TypeError:  # unhashable junk: encode names the row
                return self
            if all(v in self._index or not isinstance(v, str) for v in distinct):
                return self  # the usual case: every word known
            new = [
                v for v in dict.fromkeys(values_l) if isinstance(v, str) and v not in self._index
            ]
        if not new:
            return self
        names = [*self.names, *new]
        if len(names) > limit:
            raise DataError(
                f"{table}.{column} holds {len(names)} distinct {self.kind} names; at most "
                f"{limit} are supported",
                table=table,
                column=column,
                kind="invalid_value",
                input=len(names),
            )
        return Vocab(names, self.kind)

    def encode_names(
        self, values: Any, table: str, column: str, dtype: npt.DTypeLike
    ) -> npt.NDArray[Any]:
        """Encode a column of names, never taking an int for a code (tenants)."""
        arr = np.asarray(values)
        if arr.dtype.kind not in "iu":
            return self.encode(arr, table, column, dtype)  # text and objects: by name
        given = ints(arr, np.int64, table, column)
        names = sorted(n for n in self.names if type(n) is int)
        keys = np.array(names, dtype=np.int64)
        codes = np.array([self._index[n] for n in names], dtype=np.int64)
        at = np.minimum(np.searchsorted(keys, given), max(len(keys) - 1, 0))
        found = keys[at] == given if len(keys) else np.zeros(len(given), dtype=bool)
        if not found.all():
            i = first_row(~found)
            raise row_error(
                table,
                i,
                column,
                f"{column} = {int(given[i])} is an unknown {self.kind} "
                f"(known: {list(self.names)!r})",
                kind="invalid_value",
                input=int(given[i]),
            )
        return codes[at].astype(dtype)

    @classmethod
    def learn(cls, values: Any, kind: str) -> tuple[Vocab, npt.NDArray[np.int64]]:
        """Build a vocabulary from the distinct values of a column (sorted) and encode it."""
        arr = np.asarray(values)
        coded = _coded_as_text(arr)
        if coded is not None:
            keys, present, codes_in = coded
            distinct = sorted({keys[k] for k in present})
            where = {name: c for c, name in enumerate(distinct)}
            lut = np.array([where.get(key, -1) for key in keys], dtype=np.int64)
            return cls(distinct, kind), lut[codes_in]
        if arr.dtype.kind == "O":
            arr = _as_text(arr)
        uniq, inverse = np.unique(arr, return_inverse=True)
        names = [u.item() if isinstance(u, np.generic) else u for u in uniq]
        return cls(names, kind), inverse.reshape(-1).astype(np.int64)


def _coded_as_text(
    arr: npt.NDArray[Any],
) -> tuple[list[str], list[int], npt.NDArray[np.int64]] | None:
    """A described dictionary column as numpy would see it as text: ``(keys, present,
    codes)`` with ``keys[k]`` the text of value ``k`` (the last key, ``"None"``, is that of
    None), ``present`` the keys that occur, and each row's key. None when ``arr`` has no
    dictionary description, or when a text would not survive numpy's fixed-width strings
    (trailing NUL characters), so that the result is always the slow path's."""
    info = description(arr)
    if info is None or info.codes is None or info.values is None or arr.dtype.kind != "O":
        return None
    keys = [str(v) for v in info.values]
    keys.append(str(None))
    if any(k.endswith("\x00") for k in keys):
        return None
    codes = info.codes.astype(np.int64)
    codes[codes < 0] = len(keys) - 1
    counts = np.bincount(codes, minlength=len(keys))
    return keys, np.flatnonzero(counts).tolist(), codes


def _as_text(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An object column as numpy text for sorting, unless it holds str with a NUL (numpy's
    fixed-width text drops trailing NULs): such a column of str is sorted as objects."""
    values = arr.tolist()
    try:
        joined = "".join(values)
    except TypeError:  # not only str: their text, as numpy gives it
        return arr.astype(str)
    return arr if "\0" in joined else arr.astype(str)
