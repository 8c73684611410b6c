"""Entity and chunk deletes as tombstones: a deleted entity's facts become fact tombstones
(:mod:`.tombstones`), its mentions are cut from the core's rows, it leaves its tenant's
listing, and its id leaves the entity map at once (a :class:`~.tombstones.LiveIds`), while
its dense index and its table rows (entity, mentions, aliases, embeddings) stay until a new
base drops every dead row in one pass (:func:`without_dead`, the core's ``without``). A
deleted chunk likewise: its mentions cut, its id unknown, its rows kept until then.

Every other entity and chunk keeps its index, so index-order tie-breaks are a fresh
build's. The rooms above the graph that enumerate entities or chunks by row (name, keyword
and vector anchors, BM25 statistics, mention links, primary chunks) mask the dead rows
when ``GraphIndex.build`` updates the previous index over the same rows
(:mod:`graphrecall.index.dead_mask`); otherwise it indexes the graph of
:func:`without_dead` (a new base), so a retrieval answer is a fresh build's either way.
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
from ..index.dead_rows import register_without_dead
from ..tables import GraphTables
from .changes import _drop_orphan_embeddings, _keep_rows, _member
from .delete import deletion, entity_facts
from .overlay import with_core
from .tombstones import LiveIds, _words_stay, dead_of, dead_rows

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


@dataclass(frozen=True)
class ChunkTombstones:
    """The core's argument for one delete of chunks (``CoreGraph.with_dead_chunks``), kept
    to replay it on a compacted base."""

    chunks: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these chunks deleted."""
        return core.with_dead_chunks(self.chunks)


def dead_entities_of(graph: KnowledgeGraph) -> I64:
    """The graph's deleted entity rows (sorted; empty when it holds none)."""
    return dead_rows(graph.entity_map)


def dead_chunks_of(graph: KnowledgeGraph) -> I64:
    """The graph's deleted chunk rows (sorted; empty when it holds none)."""
    return dead_rows(graph.chunk_map)


def has_dead_rows(graph: KnowledgeGraph) -> bool:
    """Whether ``graph`` holds deleted entities or chunks (a new base drops them)."""
    return bool(len(dead_entities_of(graph)) or len(dead_chunks_of(graph)))


def chunk_tombstoned(
    graph: KnowledgeGraph, tables: GraphTables, rows: I64
) -> tuple[KnowledgeGraph, ChunkTombstones] | None:
    """The graph of ``tables`` without the chunks at ``rows`` (live rows of ``graph``, the
    graph of ``tables``), as a generation of ``graph`` with tombstones; None when it takes
    a new base (chunks without ids, or a chunk of a tenant without entities, whose code
    may move)."""
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    chunks = tables.chunks
    if chunks is None or "id" not in chunks or graph.chunk_map.kind == "identity":
        return None
    if tables.n_rows("chunks") != graph.n_chunks:
        return None
    tenants = np.unique(graph.core.chunk_tenants()[rows]).tolist()
    if any(not len(graph.core.tenant_entities(int(t))) for t in tenants):
        return None
    change = ChunkTombstones(np.ascontiguousarray(rows, dtype=np.uint32))
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None
    dead = np.union1d(dead_chunks_of(graph), rows)
    return with_core(graph, core, chunks=LiveIds(graph.chunk_map, dead)), change


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
    """``tables`` (whose leading rows are ``graph``'s) without the rows of the facts,
    entities and chunks ``graph`` deleted, nor their mentions, aliases and vectors; an
    entity whose primary chunk was deleted has none."""
    dead_f = dead_of(graph)
    dead_e = dead_entities_of(graph)
    dead_c = dead_chunks_of(graph)
    out: dict[str, Any] = {}
    if len(dead_f):
        keep = np.ones(tables.n_rows("facts"), dtype=bool)
        keep[dead_f] = False
        out["facts"] = _keep_rows(tables.facts, keep)
    if not len(dead_e) and not len(dead_c):
        return replace(tables, **out) if out else tables
    entities = tables.entities
    mentions, aliases = tables.mentions, tables.aliases
    if len(dead_e):
        keep = np.ones(tables.n_rows("entities"), dtype=bool)
        keep[dead_e] = False
        ids = _ids_of(entities["id"], dead_e)
        entities = _keep_rows(entities, keep)
        if mentions is not None:
            mentions = _keep_rows(mentions, ~_member(np.asarray(mentions["entity"]), ids))
        if aliases is not None:
            aliases = _keep_rows(aliases, ~_member(np.asarray(aliases["entity"]), ids))
    chunks = tables.chunks
    if len(dead_c) and chunks is not None:
        keep = np.ones(tables.n_rows("chunks"), dtype=bool)
        keep[dead_c] = False
        ids = _ids_of(chunks["id"], dead_c)
        chunks = _keep_rows(chunks, keep)
        if mentions is not None:
            mentions = _keep_rows(mentions, ~_member(np.asarray(mentions["chunk"]), ids))
        pc = entities.get("primary_chunk")
        if pc is not None:
            cleared = _member(np.asarray(pc), ids)
            if cleared.any():
                pc = np.asarray(pc).copy()
                pc[cleared] = None
                entities = {**entities, "primary_chunk": pc}
    out.update(entities=entities, chunks=chunks, mentions=mentions, aliases=aliases)
    shown, _ = _drop_orphan_embeddings(replace(tables, **out))
    return shown


def without_dead(graph: KnowledgeGraph, tables: GraphTables) -> tuple[KnowledgeGraph, GraphTables]:
    """``graph`` and ``tables`` (its tables) as a fresh build of their live rows: the
    deleted facts, entities and chunks dropped, the rows that stay renumbered in order (the core's
    ``without``, one pass; a rebuild where that cannot give the fresh build's graph)."""
    dead_e, dead_c = dead_entities_of(graph), dead_chunks_of(graph)
    dead_f = dead_of(graph)
    if not len(dead_e) and not len(dead_f) and not len(dead_c):
        return graph, tables
    after = live_tables(tables, graph)
    made = deletion(graph, tables, after, entities=dead_e, facts=dead_f, chunks=dead_c)
    if made is None:
        return after.build_graph(), after
    return made[0], after


register_without_dead(without_dead)


def reuses_dead_row(
    graph: KnowledgeGraph, tables: GraphTables, table: str, records: Sequence[Any]
) -> bool:
    """Whether a record of ``table`` (entities or chunks) names the id of a row of
    ``graph`` deleted since the last new base (its row is still in ``tables``)."""
    dead = {"entities": dead_entities_of, "chunks": dead_chunks_of}[table](graph)
    cols = tables.table(table)
    if not len(dead) or cols is None:
        return False
    gone = set(np.asarray(cols["id"])[dead].tolist())
    return any(
        isinstance(r, Mapping) and isinstance(r.get("id"), Hashable) and r.get("id") in gone
        for r in records
    )


def entity_counts(graph: KnowledgeGraph, tables: GraphTables, rows: I64) -> dict[str, int]:
    """What deleting the live entities at ``rows`` of ``graph`` (the graph of ``tables``)
    removes besides their facts: mentions (read from the core's rows), aliases and the
    vectors of the entities and of alias texts no live alias keeps (one pass over the
    alias and vector ids, not over the mentions)."""
    ids = _ids_of(tables.entities["id"], rows)
    out = {"mentions": sum(len(graph.core.entity_chunks(int(e))[0]) for e in rows.tolist())}
    aliases = tables.aliases
    orphans: Array = np.zeros(0, dtype=object)
    if aliases is not None:
        ent = np.asarray(aliases["entity"])
        texts = np.asarray(aliases["alias"])
        mine = _member(ent, ids)
        out["aliases"] = int(mine.sum())
        if mine.any():
            before = ~_member(ent, _ids_of(tables.entities["id"], dead_entities_of(graph)))
            kept = set(texts[before & ~mine].tolist())
            orphans = np.asarray(
                sorted({t for t in texts[mine].tolist() if t not in kept}, key=str), dtype=object
            )
    n_emb = 0
    for es in tables.embeddings or ():
        if es.kind == "entity":
            n_emb += int(_member(es.ids, ids).sum())
        elif es.kind == "alias" and len(orphans):
            n_emb += int(_member(es.ids, orphans).sum())
    out["embeddings"] = n_emb
    return out


def chunk_counts(graph: KnowledgeGraph, tables: GraphTables, rows: I64) -> dict[str, int]:
    """What deleting the live chunks at ``rows`` of ``graph`` (the graph of ``tables``)
    removes besides the chunks: mentions (read from the core's rows), primary chunks
    cleared and the chunks' vectors."""
    chunks = tables.chunks
    assert chunks is not None
    ids = _ids_of(chunks["id"], rows)
    out = {"mentions": sum(len(graph.core.chunk_entities(int(c))[0]) for c in rows.tolist())}
    pc = tables.entities.get("primary_chunk")
    if pc is not None:
        out["entities.primary_chunk"] = int(_member(np.asarray(pc), ids).sum())
    out["embeddings"] = sum(
        int(_member(es.ids, ids).sum()) for es in tables.embeddings or () if es.kind == "chunk"
    )
    return out
