"""Fact deletes as tombstones: a deleted fact is cut out of its rows by a graph generation
and its id leaves the id map at once, while its dense index and its table row stay until a
compaction drops every tombstone in one pass.

One mechanism carries the deleted rows: the core's generation (``CoreGraph.dead_facts``)
and a :class:`LiveIds` fact map that answers "unknown" for them. The tables keep the rows
(no copy of the fact columns), so "graph index == table row" holds for every room above the
graph, and a deleted fact is reachable from nowhere: not through adjacency (the rows no
longer hold it), not by id (the map refuses it). The facts that stay keep their indices and
their relative order, so every index-order tie-break is a fresh build's. A compaction
(:func:`dropped`) renumbers the facts that stay as a fresh build of the remaining rows
numbers them, and the tables lose the rows in the same swap.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import GraphRecallError
from ..graph import KnowledgeGraph
from ..tables import GraphTables
from ..tables.faults import row_error
from ..tables.ids import IdMap
from .changes import _keep_rows
from .delete import Deletion, _occurs
from .overlay import FactChange, with_core
from .report import GraphVersion

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]


class LiveIds(IdMap):
    """An id map whose ids at the ``dead`` indices (sorted) are unknown: a lookup of one
    raises the error of an id the map never held, and it counts as not held."""

    __slots__ = ("_dead",)

    def __init__(self, live: IdMap, dead: I64):
        for slot in IdMap.__slots__:
            setattr(self, slot, getattr(live, slot))
        self._dead = dead

    @property
    def dead(self) -> I64:
        """The dense indices whose ids are deleted (sorted)."""
        return self._dead

    def _is_dead(self, idx: I64) -> npt.NDArray[np.bool_]:
        if not len(self._dead) or not len(idx):
            return np.zeros(len(idx), dtype=bool)
        at = np.minimum(np.searchsorted(self._dead, idx), len(self._dead) - 1)
        out: npt.NDArray[np.bool_] = self._dead[at] == idx
        return out

    def to_index(
        self, ids: Any, table: str, column: str, *, allow_none: bool = False
    ) -> npt.NDArray[np.int64]:
        """As :meth:`IdMap.to_index`, a deleted id refused as one never held."""
        out = super().to_index(ids, table, column, allow_none=allow_none)
        dead = self._is_dead(out)
        if dead.any():
            i = int(np.flatnonzero(dead)[0])
            value = self.external[out[i]]
            shown = value if self.kind == "int" else repr(value)
            raise row_error(
                table,
                i,
                column,
                f"{column} = {shown} refers to no {self.name}",
                kind="dangling",
                input=value,
                ctx={"target": self.name},
            )
        return out

    def holds_any(self, ids: npt.NDArray[Any]) -> bool:
        """Whether any of ``ids`` is held and not deleted."""
        if not super().holds_any(ids):
            return False
        for one in ids.tolist():
            try:
                self.to_index([one], "facts", "id")
            except GraphRecallError:
                continue
            return True
        return False

    @property
    def largest(self) -> int | None:
        """The largest int id that is not deleted."""
        keys = self._sorted_keys
        if self.kind != "int" or keys is None or not len(keys):
            return super().largest
        k = len(keys) - 1
        while k >= 0:
            row = k if self._sorted_pos is None else int(self._sorted_pos[k])
            if not bool(self._is_dead(np.array([row]))[0]):
                return int(keys[k])
            k -= 1
        return None

    @property
    def consecutive(self) -> bool:
        """Never, with ids deleted."""
        return not len(self._dead) and super().consecutive

    def extended(self, ids: npt.NDArray[Any]) -> IdMap:
        """The map of ``ids`` (this map's followed by new ones), the same ids deleted."""
        return LiveIds(super().extended(ids), self._dead)


@dataclass(frozen=True)
class Tombstones:
    """The core's argument for one delete of facts (``CoreGraph.with_tombstones``), kept
    to replay it on a compacted base."""

    facts: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these facts deleted."""
        return core.with_tombstones(self.facts)


def dead_rows(ids: IdMap) -> I64:
    """The deleted rows of an id map (sorted; empty when it holds none)."""
    if isinstance(ids, LiveIds):
        return ids.dead
    return np.zeros(0, dtype=np.int64)


def dead_of(graph: KnowledgeGraph) -> I64:
    """The graph's deleted fact rows (sorted; empty when it holds none)."""
    return dead_rows(graph.fact_map)


def _words_stay(tables: GraphTables, rows: I64, dead: I64) -> bool:
    """Whether every status and source word of the facts at ``rows`` stays a word of the
    vocabulary a fresh build of the rows outside ``dead`` learns."""
    facts = tables.facts
    for col, declared in (("status", tables.statuses), ("source", tables.sources)):
        if col not in facts:
            continue
        names = set(declared)
        for value in set(np.asarray(facts[col])[rows].tolist()):
            if value in names:
                continue
            if value is None or not _occurs(np.asarray(facts[col]), value, dead):
                return False
    return True


def tombstoned(
    graph: KnowledgeGraph, tables: GraphTables, rows: I64
) -> tuple[KnowledgeGraph, Tombstones] | None:
    """The graph of ``tables`` without the facts at ``rows`` (live rows of ``graph``, the
    graph of ``tables``), as a generation of ``graph`` with tombstones; None when it takes
    a new base (facts without ids, whose ids are their rows; a status or source word
    beyond the declared ones left unused, whose code a fresh build would not learn)."""
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    if "id" not in tables.facts or tables.n_rows("facts") != graph.n_facts:
        return None
    if graph.fact_map.kind == "identity":
        return None
    dead = np.union1d(dead_of(graph), rows)
    if not _words_stay(tables, rows, dead):
        return None
    change = Tombstones(np.ascontiguousarray(rows, dtype=np.uint32))
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None
    return with_core(graph, core, facts=LiveIds(graph.fact_map, dead)), change


def reuses_deleted_id(cur: GraphVersion, records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a fact record names the id of a fact of ``cur`` deleted since the last
    compaction (its row is still in the tables), or takes the next id, which may be one."""
    graph = cur.graph
    dead = dead_of(graph)
    if not len(dead):
        return False
    if any(r.get("id") is None for r in records):
        # The next id is the largest live one plus one: it may be a deleted one's.
        held: int | None = IdMap.largest.__get__(graph.fact_map)
        return graph.fact_map.largest != held
    gone = set(cur.tables.facts["id"][dead].tolist())
    return any(r.get("id") in gone for r in records if isinstance(r.get("id"), Hashable))


def renumbered(indices: npt.NDArray[Any], dead: I64) -> npt.NDArray[Any]:
    """Fact indices of a generation with tombstones ``dead`` as the compaction numbers
    them (each lowered by the tombstones below it); ``indices`` are live ones."""
    if not len(dead) or not len(indices):
        return indices
    lowered = np.asarray(indices, dtype=np.int64) - np.searchsorted(dead, indices)
    return lowered.astype(np.asarray(indices).dtype)


def renumbered_change(change: Any, dead: I64) -> Any:
    """A logged change (made on a generation with the tombstones ``dead``) naming facts by
    the numbers of the compaction that drops them."""
    if not len(dead):
        return change
    if isinstance(change, FactChange):
        return replace(change, fact=renumbered(change.fact, dead))
    if isinstance(change, Tombstones):
        return Tombstones(renumbered(change.facts, dead))
    if isinstance(change, Deletion):  # a new base drops the tombstones it finds too
        live = np.setdiff1d(change.facts, dead.astype(np.uint32))
        return replace(change, facts=renumbered(live, dead))
    return change  # entities, chunks, mentions, aliases: no fact numbers


def rows_dropped(tables: GraphTables, dead: I64) -> GraphTables:
    """``tables`` without the fact rows ``dead``."""
    if not len(dead):
        return tables
    keep = np.ones(tables.n_rows("facts"), dtype=bool)
    keep[dead] = False
    return replace(tables, facts=_keep_rows(tables.facts, keep))


def dropped(
    graph: KnowledgeGraph, core: _core.CoreGraph, tables: GraphTables, dead: I64
) -> tuple[KnowledgeGraph, GraphTables]:
    """``graph`` over ``core`` (its compaction without the tombstones ``dead``, later
    tombstones replayed) and ``tables`` (the tables of ``graph``) without the rows
    ``dead``: the fresh build's numbering in both; tombstones of ``graph`` not in ``dead``
    stay tombstones under their new numbers."""
    if not len(dead):
        return with_core(graph, core), tables
    out = rows_dropped(tables, dead)
    facts = out.facts
    fact_map: IdMap = IdMap(np.asarray(facts["id"]), out.n_rows("facts"), "fact")
    rest = np.setdiff1d(dead_of(graph), dead, assume_unique=True)
    if len(rest):
        fact_map = LiveIds(fact_map, renumbered(rest, dead))
    values = graph.object_values
    if values is not None:
        values = np.asarray(facts["object_value"], dtype=object)
    return with_core(graph, core, facts=fact_map, object_values=values), out
