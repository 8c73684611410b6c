"""Entity deletes as tombstones: a deleted entity's facts become fact tombstones
(:mod:`.tombstones`), its mentions are cut from the core's rows, it leaves its tenant's
listing, and its id leaves the entity map at once (a :class:`~.tombstones.LiveIds`), while
its dense index and its table rows (entity, mentions, aliases, embeddings) stay until a new
base drops every dead row in one pass (:func:`without_dead`, the core's ``without``).

Every other entity keeps its index, so index-order tie-breaks are a fresh build's. The rooms
above the graph that enumerate entities by row (name, keyword and vector anchors, BM25
statistics, tenant centres) are not masked: ``GraphIndex.build`` indexes the graph of
:func:`without_dead` instead (a new base, as a delete made one before), so a retrieval
answer is a fresh build's.
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
from .changes import _drop_orphan_embeddings, _keep_rows, _member
from .delete import deletion, entity_facts
from .overlay import with_core
from .tombstones import LiveIds, _words_stay, dead_of

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class EntityTombstones:
    """The core's arguments for one delete of entities (``CoreGraph.with_dead_entities``),
    kept to replay it on a compacted base."""

    entities: npt.NDArray[np.uint32]
    facts: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these entities and facts deleted."""
        return core.with_dead_entities(self.entities, self.facts)


def dead_entities_of(graph: KnowledgeGraph) -> I64:
    """The graph's deleted entity rows (sorted; empty when it holds none)."""
    m = graph.entity_map
    if isinstance(m, LiveIds):
        return m.dead
    return np.zeros(0, dtype=np.int64)


def entity_tombstoned(
    graph: KnowledgeGraph, tables: GraphTables, rows: I64
) -> tuple[KnowledgeGraph, EntityTombstones, int] | None:
    """The graph of ``tables`` without the entities at ``rows`` (live rows of ``graph``,
    the graph of ``tables``) and their facts, as a generation of ``graph`` with
    tombstones, and the number of facts deleted; None when it takes a new base (tables
    without ids, a tenant left without entities, whose code a fresh build would not
    learn, or a status or source word left unused)."""
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    if "id" not in tables.facts or "id" not in tables.entities:
        return None
    if tables.n_rows("facts") != graph.n_facts or tables.n_rows("entities") != graph.n_entities:
        return None
    if graph.fact_map.kind == "identity" or graph.entity_map.kind == "identity":
        return None
    facts = entity_facts(graph, rows)
    dead_f = np.union1d(dead_of(graph), facts)
    if len(facts) and not _words_stay(tables, facts, dead_f):
        return None
    change = EntityTombstones(
        np.ascontiguousarray(rows, dtype=np.uint32), np.ascontiguousarray(facts, dtype=np.uint32)
    )
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None
    tenants = np.unique(graph.core.entity_tenants()[rows]).tolist()
    if any(not len(core.tenant_entities(int(t))) for t in tenants):
        return None  # a tenant left with no entity: the tenant codes move
    dead_e = np.union1d(dead_entities_of(graph), rows)
    made = with_core(
        graph,
        core,
        entities=LiveIds(graph.entity_map, dead_e),
        facts=LiveIds(graph.fact_map, dead_f),
    )
    return made, change, len(facts)


def _ids_of(column: Array, rows: I64) -> Array:
    return np.asarray(column)[rows]


def live_tables(tables: GraphTables, graph: KnowledgeGraph) -> GraphTables:
    """``tables`` (whose leading rows are ``graph``'s) without the rows of the facts and
    entities ``graph`` deleted, nor the deleted entities' mentions, aliases and vectors."""
    dead_f = dead_of(graph)
    dead_e = dead_entities_of(graph)
    out: dict[str, Any] = {}
    if len(dead_f):
        keep = np.ones(tables.n_rows("facts"), dtype=bool)
        keep[dead_f] = False
        out["facts"] = _keep_rows(tables.facts, keep)
    if not len(dead_e):
        return replace(tables, **out) if out else tables
    keep = np.ones(tables.n_rows("entities"), dtype=bool)
    keep[dead_e] = False
    ids = _ids_of(tables.entities["id"], dead_e)
    out["entities"] = _keep_rows(tables.entities, keep)
    for table in ("mentions", "aliases"):
        cols = tables.table(table)
        if cols is not None:
            out[table] = _keep_rows(cols, ~_member(np.asarray(cols["entity"]), ids))
    shown, _ = _drop_orphan_embeddings(replace(tables, **out))
    return shown


def without_dead(graph: KnowledgeGraph, tables: GraphTables) -> tuple[KnowledgeGraph, GraphTables]:
    """``graph`` and ``tables`` (its tables) as a fresh build of their live rows: the
    deleted facts and entities dropped, the rows that stay renumbered in order (the core's
    ``without``, one pass; a rebuild where that cannot give the fresh build's graph)."""
    dead_e = dead_entities_of(graph)
    dead_f = dead_of(graph)
    if not len(dead_e) and not len(dead_f):
        return graph, tables
    after = live_tables(tables, graph)
    made = deletion(graph, tables, after, entities=dead_e, facts=dead_f)
    if made is None:
        return after.build_graph(), after
    return made[0], after


def reuses_dead_entity(graph: KnowledgeGraph, tables: GraphTables, records: Sequence[Any]) -> bool:
    """Whether an entity record names the id of an entity of ``graph`` deleted since the
    last new base (its row is still in ``tables``)."""
    dead = dead_entities_of(graph)
    if not len(dead):
        return False
    gone = set(np.asarray(tables.entities["id"])[dead].tolist())
    return any(
        isinstance(r, Mapping) and isinstance(r.get("id"), Hashable) and r.get("id") in gone
        for r in records
    )
