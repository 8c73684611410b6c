"""Deletes of entities, facts and chunks as a new base made from the current graph (no
rebuild from the tables), and the change that replays one on a compaction's new base.

A fresh build of the tables without the deleted rows numbers the rows that stay in
order, so the dense indices after a deleted row shift down by one. :func:`deletion`
makes that same graph from the current one: the core's ``without`` drops the rows and
renumbers the rest in one pass over its arrays (no sort, no encoding), and the id maps,
names and literal values drop the same rows. Every room keeps reading "graph index ==
table row" (the tables the graph goes with are the tables without the rows), so nothing
above the graph needs a second mapping. It returns None where only a rebuild gives the
fresh build's answer: a tenant left without entities (the tenant codes are the places of
the sorted tenants), a status or source word beyond the declared ones left unused (the
open vocabularies' codes), or tables without id columns (their ids are the rows). A
predicate left unused keeps its word and code, as after a fact update (an answer names
predicates by word, so it is the fresh build's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import GraphRecallError
from ..graph import KnowledgeGraph
from ..index.fact_changes import note_fact_rows
from ..tables import GraphTables
from ..tables.ids import IdMap
from .overlay import with_core

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]

#: Values compared per step while looking for a value that stays (most are found in the
#: first step: a scan of the whole column only for a value about to vanish).
_STEP = 1 << 16


@dataclass(frozen=True)
class Deletion:
    """The core's arguments for one delete (``CoreGraph.without``), kept to replay it on a
    compacted base."""

    entities: npt.NDArray[np.uint32]
    facts: npt.NDArray[np.uint32]
    chunks: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The base of ``core`` without these rows."""
        return core.without(entities=self.entities, facts=self.facts, chunks=self.chunks)


def _u32(rows: I64 | None) -> npt.NDArray[np.uint32]:
    if rows is None:
        return np.zeros(0, dtype=np.uint32)
    return np.ascontiguousarray(np.unique(rows), dtype=np.uint32)


def _occurs(column: Array, value: Any, dead: I64 | None = None) -> bool:
    """Whether ``value`` is in a row of ``column`` outside the sorted rows ``dead``
    (stepwise, stopping at the first step holding it)."""
    for start in range(0, len(column), _STEP):
        hit = column[start : start + _STEP] == value
        if dead is None or not len(dead):
            if bool(np.any(hit)):
                return True
        elif len(np.setdiff1d(np.flatnonzero(hit) + start, dead, assume_unique=True)):
            return True
    return False


def _words_stay(
    before: dict[str, Array], after: dict[str, Array], rows: I64, declared: dict[str, Any]
) -> bool:
    """Whether every word of ``before``'s coded columns at ``rows`` is still a word of
    the vocabulary a fresh build of ``after`` learns (declared, or still in the column)."""
    for col, names in declared.items():
        if col not in before or not len(rows):
            continue
        gone = set(np.asarray(before[col])[rows].tolist())
        for value in gone:
            if value in names:
                continue
            if value is None or not _occurs(np.asarray(after[col]), value):
                return False
    return True


def _ids(table: dict[str, Array] | None, n: int, kind: str) -> IdMap | None:
    """The id map a fresh build makes of ``table`` (None: a table without ids)."""
    if table is None:
        return IdMap(None, 0, kind)
    ids = table.get("id")
    if ids is None:
        return None
    return IdMap(np.asarray(ids), n, kind)


def entity_facts(graph: KnowledgeGraph, entities: I64) -> I64:
    """Rows of the facts whose subject or object is one of ``entities`` (rows), read
    from ``graph``'s adjacency: the cost is their facts, not the table (rows of the
    graph == rows of its tables)."""
    parts = [np.zeros(0, dtype=np.int64)]
    for e in np.unique(entities).tolist():
        out, inn = graph.core.adjacency(int(e))
        parts += [out, inn]
    return np.unique(np.concatenate(parts)).astype(np.int64)


def deletion(
    graph: KnowledgeGraph,
    before: GraphTables,
    after: GraphTables,
    entities: I64 | None = None,
    facts: I64 | None = None,
    chunks: I64 | None = None,
) -> tuple[KnowledgeGraph, Deletion] | None:
    """The graph of ``after`` (``before``, the tables of ``graph``, without the rows
    ``entities``, ``facts`` and ``chunks``; a deleted entity's facts among ``facts``),
    made from ``graph``; None when it takes a rebuild."""
    n_f = after.n_rows("facts")
    if before.n_rows("facts") != graph.n_facts or "id" not in after.facts:
        return None
    if facts is not None and len(facts):
        declared = {
            "status": set(before.statuses),
            "source": set(before.sources),
        }
        if not _words_stay(before.facts, after.facts, facts, declared):
            return None
    change = Deletion(_u32(entities), _u32(facts), _u32(chunks))
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None  # refused by the core: the rebuild gives the precise error
    entity_map: IdMap | None = None
    names: Any = graph.entity_names
    if len(change.entities):
        entity_map = _ids(after.entities, after.n_rows("entities"), "entity")
        if entity_map is None:
            return None
        kept = core.entity_tenants()
        if set(np.unique(kept).tolist()) != set(np.unique(graph.core.entity_tenants()).tolist()):
            return None  # a tenant left with its last entity: the tenant codes move
        if "name" in after.entities:
            names = np.asarray(after.entities["name"], dtype=object)
    chunk_map: IdMap | None = None
    if len(change.chunks):
        chunk_map = _ids(after.chunks, after.n_rows("chunks"), "chunk")
        if chunk_map is None:
            return None
    fact_map = _ids(after.facts, n_f, "fact") if len(change.facts) else graph.fact_map
    values = graph.object_values
    if values is not None and len(change.facts):
        values = np.asarray(after.facts["object_value"], dtype=object)
    made = with_core(
        graph,
        core,
        facts=fact_map,
        object_values=values,
        entities=entity_map,
        chunks=chunk_map,
        entity_names=names,
    )
    note_fact_rows(made, graph, before, after, deleted=facts, deleted_entities=entities)
    return made, change
