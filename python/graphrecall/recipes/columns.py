"""A result's hit lists held as columns: the hits of one kind as one value list per field,
built into hit objects only when a caller reads them (:class:`~.hits.LazyHits`), and
written as dicts of some fields without building any (:meth:`HitColumns.dicts`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, fields
from itertools import repeat
from typing import Any

from .hits import (
    ChunkHit,
    EntityHit,
    FactHit,
    LazyColumn,
    LazyHits,
    ReadOnlyDict,
    hit_builder,
    pending,
)

__all__ = ["Column", "Const", "HitChain", "HitColumns"]


class Const:
    """A column with one value for every hit (``repeat(value)``, reusable)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


#: One column of :class:`HitColumns`: a value per hit, one value for all, or a lazy column.
Column = Sequence[Any] | Const | LazyColumn[Any]


class HitColumns(LazyHits):
    """Hits of one class as columns, in the class's field order.

    Args:
        cls: The hit class (:class:`EntityHit`, :class:`FactHit`, :class:`ChunkHit`).
        n: The number of hits.
        columns: One :data:`Column` per field of ``cls``, by name (missing: the default);
            ``path`` / ``components`` may be :class:`LazyColumn` s (built on first read of
            any hit's attribute).
    """

    __slots__ = ("_columns", "cls", "n")

    def __init__(self, cls: type, n: int, columns: Mapping[str, Column]) -> None:
        super().__init__()
        self.cls = cls
        self.n = n
        defaults = _DEFAULTS.get(cls)
        if defaults is None:
            defaults = _DEFAULTS[cls] = _defaults(cls)
        self._columns = tuple(
            [
                columns[name] if name in columns else Const(ReadOnlyDict()) if d is None else d
                for name, d in defaults
            ]
        )

    def __len__(self) -> int:
        return self.n

    def parts(self) -> tuple[HitColumns, ...]:
        return (self,)

    def dicts(self, names: tuple[str, ...]) -> list[dict[str, Any]]:
        """The hits' fields ``names`` as one dict per hit (``{name: getattr(hit, name)}``
        in ``names``' order), read from the columns: no hit object is built."""
        make = _DICTS.get((self.cls, names))
        if make is None:
            make = _DICTS[self.cls, names] = _dicts_writer(self.cls, names)
        return make(self._columns, self.n)

    def _build(self) -> tuple[Any, ...]:
        if not self.n:
            return ()
        lazy = [c for c in self._columns if type(c) is LazyColumn]
        pend: Any = None
        if lazy:
            names = [name for name, _ in _DEFAULTS[self.cls]]
            by = dict(zip(names, self._columns, strict=True))
            paths, comps = by.get("path"), by.get("components")
            pend = pending(
                paths if type(paths) is LazyColumn else None,
                comps if type(comps) is LazyColumn else None,
                self.n,
            )
        args: list[Any] = [
            repeat(c.value, self.n) if type(c) is Const else pend if type(c) is LazyColumn else c
            for c in self._columns
        ]
        return tuple(map(hit_builder(self.cls), *args))


class HitChain(LazyHits):
    """The hits of several lists, one after the other (a hit list already built is kept:
    the chain's hits are the same objects)."""

    __slots__ = ("_parts",)

    def __init__(self, *parts: HitColumns) -> None:
        super().__init__()
        self._parts = parts

    def __len__(self) -> int:
        return sum(p.n for p in self._parts)

    def parts(self) -> tuple[HitColumns, ...]:
        return self._parts

    def _build(self) -> tuple[Any, ...]:
        if len(self._parts) == 1:
            return self._parts[0].hits()
        return tuple(h for p in self._parts for h in p.hits())


def _defaults(cls: type) -> tuple[tuple[str, Const | None], ...]:
    """``cls``'s fields in order, each with the column of its default (None: no default,
    an empty read-only dict per hit list); constant columns are never changed, so one
    serves every hit list."""
    return tuple((f.name, None if f.default is MISSING else Const(f.default)) for f in fields(cls))


_DEFAULTS: dict[type, tuple[tuple[str, Const | None], ...]] = {}


def _dicts_writer(
    cls: type, names: tuple[str, ...]
) -> Callable[[tuple[Column, ...], int], list[dict[str, Any]]]:
    """A writer of :meth:`HitColumns.dicts` for ``cls`` and ``names``, generated as one dict
    display per hit over the columns (a constant column repeated, a lazy one built)."""
    pos = _FIELD_POS[cls]
    lines = ["def dicts(cols, n):"]
    for i, name in enumerate(names):
        lines.append(f"    c{i} = cols[{pos[name]}]")
        lines.append(
            f"    c{i} = _repeat(c{i}.value, n) if c{i}.__class__ is _Const else "
            f"c{i}.values() if c{i}.__class__ is _Lazy else c{i}"
        )
    cs = [f"c{i}" for i in range(len(names))]
    xs = [f"x{i}" for i in range(len(names))]
    row = ", ".join(f"{k!r}: {x}" for k, x in zip(names, xs, strict=True))
    lines.append(f"    return [{{{row}}} for {', '.join(xs)} in zip({', '.join(cs)})]")
    scope: dict[str, Any] = {"_repeat": repeat, "_Const": Const, "_Lazy": LazyColumn}
    exec("\n".join(lines) + "\n", scope)
    dicts: Callable[[tuple[Column, ...], int], list[dict[str, Any]]] = scope["dicts"]
    dicts.__qualname__ = dicts.__name__ = f"{cls.__name__}_dicts"
    return dicts


_DICTS: dict[tuple[type, tuple[str, ...]], Any] = {}
_FIELD_POS: dict[type, dict[str, int]] = {
    c: {f.name: i for i, f in enumerate(fields(c))} for c in (EntityHit, FactHit, ChunkHit)
}
