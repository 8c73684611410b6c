"""Fact changes and added entities as a new graph generation over the same base (no
rebuild), and the log that lets a background compaction catch up with the changes made
while it ran.

:func:`fact_generation` encodes only the changed and new rows of the facts table, with the
current graph's id maps and vocabularies, and hands them to the core's ``with_facts``: the
new graph shares every array of the old one and answers exactly as a fresh build of the
same tables. It returns None where the change needs a rebuild (a word the vocabularies do
not hold, a column the graph does not hold yet, rows that are not the old rows plus new
ones at the end). :func:`table_generation` does the same for rows appended to the
entities, chunks, mentions and aliases tables (a tenant the graph does not hold yet takes
a rebuild: the tenant codes are the places of the sorted tenants).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import DataError, GraphRecallError
from ..graph import KnowledgeGraph
from ..index.fact_changes import note_fact_rows
from ..tables import GraphTables
from ..tables.columns import floats, ints, sequence_column, times
from ..tables.ids import IdMap

Array = npt.NDArray[Any]

_NONE32 = np.uint32(2**32 - 1)
#: Optional fact time columns: the core holds one exactly when the table has it.
_OPTIONAL = ("created_at", "valid_from", "valid_to", "sequence")


@dataclass(frozen=True)
class FactChange:
    """The core's arguments for one change (``CoreGraph.with_facts``), kept to replay it on
    a compacted base."""

    fact: npt.NDArray[np.uint32]
    columns: tuple[Array, ...]
    times: dict[str, Array | None]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with this change."""
        t = self.times
        return core.with_facts(
            self.fact,
            *self.columns,
            last_accessed=t["last_accessed"],
            created_at=t["created_at"],
            valid_from=t["valid_from"],
            valid_to=t["valid_to"],
            sequence=t["sequence"],
        )


def _coded(graph_vocab: Any, values: Array | None, n: int, column: str, default: str) -> Array:
    if values is None:
        names = graph_vocab.names
        return np.full(n, graph_vocab.code(default) if default in names else 0, np.uint8)
    out: Array = graph_vocab.encode(values, "facts", column, np.uint8)
    return out


def encode_facts(
    graph: KnowledgeGraph, before: GraphTables, after: GraphTables, rows: npt.NDArray[np.int64]
) -> FactChange | None:
    """The core's change for the facts at ``rows`` of ``after`` (changed rows of
    ``before``, and the rows after them), or None when only a rebuild can show it."""
    old, facts = before.facts, after.facts
    n_old = before.n_rows("facts")
    n_new = after.n_rows("facts")
    if n_old != graph.n_facts or n_new < n_old:
        return None
    appended = rows[rows >= n_old]
    if len(appended) != n_new - n_old or not np.array_equal(
        appended, np.arange(n_old, n_new, dtype=np.int64)
    ):
        return None
    for col in (*_OPTIONAL, "object_value"):
        if (col in old) != (col in facts):
            return None
    if ("object_value" in facts) != (graph.object_values is not None):
        return None
    n = len(rows)

    def column(name: str) -> Array | None:
        return facts[name][rows] if name in facts else None

    try:
        subject = graph.entity_map.to_index(column("subject"), "facts", "subject")
        obj = column("object")
        if obj is None:
            obj32 = np.full(n, _NONE32, dtype=np.uint32)
        else:
            obj32 = graph.entity_map.to_index(obj, "facts", "object", allow_none=True).astype(
                np.uint32
            )
        pred = column("predicate")
        if pred is None:
            pred32 = np.zeros(n, dtype=np.uint32)
        else:
            pred32 = graph.predicates.encode(pred, "facts", "predicate", np.uint32)
        status = _coded(graph.statuses, column("status"), n, "status", "confirmed")
        source = _coded(graph.sources, column("source"), n, "source", "system")

        def number(name: str, default: float, dtype: npt.DTypeLike) -> Array:
            values = column(name)
            return np.full(n, default, dtype=dtype) if values is None else np.asarray(values)

        confidence = floats(number("confidence", 1.0, np.float32), np.float32, "facts", "c")
        strength = floats(number("strength", 1.0, np.float32), np.float32, "facts", "s")
        access = ints(number("access_count", 0, np.int64), np.uint32, "facts", "access_count")
        stamp: dict[str, Array | None] = {
            col: times(column(col), "facts", col)
            for col in ("last_accessed", "created_at", "valid_from", "valid_to")
        }
        seq = column("sequence")
        stamp["sequence"] = None if seq is None else sequence_column(seq)
    except DataError:
        return None  # a value only a rebuild's vocabularies hold (or refuse)
    return FactChange(
        rows.astype(np.uint32),
        (
            subject.astype(np.uint32),
            obj32,
            pred32,
            confidence.astype(np.float32),
            strength.astype(np.float32),
            status,
            source,
            access,
        ),
        stamp,
    )


_KEEP: Any = object()  # with_core: keep the graph's entity names


def with_core(
    graph: KnowledgeGraph,
    core: _core.CoreGraph,
    *,
    facts: Any = None,
    object_values: Array | None = None,
    entities: IdMap | None = None,
    chunks: IdMap | None = None,
    entity_names: Any = _KEEP,
) -> KnowledgeGraph:
    """``graph``'s maps and vocabularies over another core; the maps given replace
    ``graph``'s (``entity_names``: an array or None; not given, ``graph``'s)."""
    return KnowledgeGraph(
        core,
        entities=graph.entity_map if entities is None else entities,
        facts=graph.fact_map if facts is None else facts,
        chunks=graph.chunk_map if chunks is None else chunks,
        statuses=graph.statuses,
        sources=graph.sources,
        predicates=graph.predicates,
        tenants=graph.tenants,
        entity_names=graph.entity_names if entity_names is _KEEP else entity_names,
        object_values=graph.object_values if object_values is None else object_values,
    )


def fact_generation(
    graph: KnowledgeGraph, before: GraphTables, after: GraphTables, rows: npt.NDArray[np.int64]
) -> tuple[KnowledgeGraph, FactChange] | None:
    """The graph of ``after`` as a generation of ``graph`` (the graph of ``before``), whose
    facts differ at ``rows``; None when it takes a rebuild."""
    change = encode_facts(graph, before, after, rows)
    if change is None:
        return None
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None  # refused by the core: the rebuild gives the precise error
    facts_map = None
    if after.n_rows("facts") != before.n_rows("facts"):
        ids = after.facts.get("id")
        n = after.n_rows("facts")
        facts_map = (
            IdMap(np.arange(n, dtype=np.int64), n, "fact", copy=False)
            if ids is None
            else graph.fact_map.extended(np.asarray(ids))
        )
    values = None
    if graph.object_values is not None:
        values = np.asarray(after.facts["object_value"], dtype=object)
    made = with_core(graph, core, facts=facts_map, object_values=values)
    note_fact_rows(made, graph, before, after, changed=rows)  # the index redoes these only
    return made, change


@dataclass(frozen=True)
class EntityChange:
    """The core's argument for appended entities (``CoreGraph.with_entities``), kept to
    replay it on a compacted base."""

    tenant: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these entities appended."""
        return core.with_entities(self.tenant)


@dataclass(frozen=True)
class ChunkChange:
    """The core's argument for appended chunks (``CoreGraph.with_chunks``)."""

    tenant: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these chunks appended."""
        return core.with_chunks(self.tenant)


@dataclass(frozen=True)
class MentionChange:
    """The core's arguments for added mentions (``CoreGraph.with_mentions``)."""

    chunk: npt.NDArray[np.uint32]
    entity: npt.NDArray[np.uint32]
    count: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these mentions added."""
        return core.with_mentions(self.chunk, self.entity, self.count)


@dataclass(frozen=True)
class MentionDrop:
    """The core's arguments for deleted mentions (``CoreGraph.without_mentions``)."""

    chunk: npt.NDArray[np.uint32]
    entity: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` without these mentions."""
        return core.without_mentions(self.chunk, self.entity)


@dataclass(frozen=True)
class TenantChange:
    """The core's arguments for moved entities or chunks (``CoreGraph.with_tenants``), kept
    to replay it on a compacted base."""

    entities: npt.NDArray[np.uint32]
    entity_tenant: npt.NDArray[np.uint32]
    chunks: npt.NDArray[np.uint32]
    chunk_tenant: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these tenants."""
        return core.with_tenants(self.entities, self.entity_tenant, self.chunks, self.chunk_tenant)


@dataclass(frozen=True)
class NoChange:
    """A change of a table the core does not hold (aliases): the core stays as it is."""

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """``core`` itself."""
        return core


#: A change logged since the graph's base.
Change = (
    FactChange | EntityChange | ChunkChange | MentionChange | MentionDrop | TenantChange | NoChange
)


def _tenant_codes(
    graph: KnowledgeGraph, cols: dict[str, Array], n_old: int, n_new: int, table: str
) -> npt.NDArray[np.uint32] | None:
    """The tenant codes of rows ``n_old:`` of a table, or None when one is a tenant the
    graph does not hold (the codes are the places of the sorted tenants: a new one moves
    them, which takes a rebuild)."""
    if "tenant" not in cols:
        return np.zeros(n_new - n_old, dtype=np.uint32)
    values = np.asarray(cols["tenant"][n_old:])
    held = set(graph.tenants.names)
    if any(v not in held for v in values.tolist()):
        return None
    try:
        codes = graph.tenants.encode_names(values, table, "tenant", np.uint32)
    except DataError:
        return None
    return np.ascontiguousarray(codes, dtype=np.uint32)


def _appended(before: GraphTables, after: GraphTables, table: str, n_graph: int) -> bool:
    """Whether ``after``'s ``table`` can be ``before``'s with rows appended, the graph
    holding ``before``'s rows."""
    old, new = before.table(table), after.table(table)
    if old is None or new is None or set(old) != set(new):
        return False
    return before.n_rows(table) == n_graph and after.n_rows(table) >= n_graph


def _grown(
    graph: KnowledgeGraph,
    after: GraphTables,
    table: str,
    change: EntityChange | ChunkChange,
    old_map: IdMap,
    kind: str,
) -> tuple[_core.CoreGraph, IdMap] | None:
    """The core with ``change`` applied and the id map of ``after``'s ``table`` extended by
    its appended rows; None when the core refuses the change (then it takes a rebuild)."""
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None
    cols = after.table(table)
    assert cols is not None  # _appended checked it
    ids = cols.get("id")
    n_new = after.n_rows(table)
    id_map = IdMap(None, n_new, kind) if ids is None else old_map.extended(np.asarray(ids))
    return core, id_map


def entity_generation(
    graph: KnowledgeGraph, before: GraphTables, after: GraphTables
) -> tuple[KnowledgeGraph, EntityChange] | None:
    """The graph of ``after`` as a generation of ``graph`` (the graph of ``before``), whose
    entities are those of ``before`` followed by new ones and whose other tables are the
    same; None when it takes a rebuild (a tenant the graph does not hold)."""
    if not _appended(before, after, "entities", graph.n_entities):
        return None
    ents = after.entities
    n_old, n_new = before.n_rows("entities"), after.n_rows("entities")
    if ("name" in ents) != (graph.entity_names is not None):
        return None
    codes = _tenant_codes(graph, ents, n_old, n_new, "entities")
    if codes is None:
        return None
    change = EntityChange(codes)
    grown = _grown(graph, after, "entities", change, graph.entity_map, "entity")
    if grown is None:
        return None
    core, entity_map = grown
    names = None if "name" not in ents else np.asarray(ents["name"], dtype=object)
    return with_core(graph, core, entities=entity_map, entity_names=names), change


def chunk_generation(
    graph: KnowledgeGraph, before: GraphTables, after: GraphTables
) -> tuple[KnowledgeGraph, ChunkChange] | None:
    """The graph of ``after``, whose chunks are ``before``'s followed by new ones, as a
    generation of ``graph``; None when it takes a rebuild."""
    if not _appended(before, after, "chunks", graph.n_chunks):
        return None
    chunks = after.chunks
    assert chunks is not None  # _appended checked it
    n_old, n_new = before.n_rows("chunks"), after.n_rows("chunks")
    codes = _tenant_codes(graph, chunks, n_old, n_new, "chunks")
    if codes is None:
        return None
    change = ChunkChange(codes)
    grown = _grown(graph, after, "chunks", change, graph.chunk_map, "chunk")
    if grown is None:
        return None
    core, chunk_map = grown
    return with_core(graph, core, chunks=chunk_map), change


def mention_generation(
    graph: KnowledgeGraph, before: GraphTables, after: GraphTables
) -> tuple[KnowledgeGraph, MentionChange] | None:
    """The graph of ``after``, whose mentions are ``before``'s followed by new ones, as a
    generation of ``graph``; None when it takes a rebuild."""
    old, new = before.mentions, after.mentions
    if new is None or (old is not None and set(old) != set(new)):
        return None
    n_old, n_new = before.n_rows("mentions"), after.n_rows("mentions")
    if n_new < n_old:
        return None
    rows = slice(n_old, n_new)
    try:
        chunk = graph.chunk_map.to_index(new["chunk"][rows], "mentions", "chunk")
        entity = graph.entity_map.to_index(new["entity"][rows], "mentions", "entity")
        count = (
            np.ones(n_new - n_old, dtype=np.uint32)
            if "count" not in new
            else ints(new["count"][rows], np.uint32, "mentions", "count")
        )
    except DataError:
        return None
    change = MentionChange(
        np.ascontiguousarray(chunk, dtype=np.uint32),
        np.ascontiguousarray(entity, dtype=np.uint32),
        np.ascontiguousarray(count, dtype=np.uint32),
    )
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None
    return with_core(graph, core), change


def table_generation(
    table: str, graph: KnowledgeGraph, before: GraphTables, after: GraphTables
) -> tuple[KnowledgeGraph, Change] | None:
    """The graph of ``after``, whose ``table`` (entities, chunks, mentions or aliases) is
    ``before``'s with rows appended, as a generation of ``graph``; None when it takes a
    rebuild."""
    if table == "entities":
        return entity_generation(graph, before, after)
    if table == "chunks":
        return chunk_generation(graph, before, after)
    if table == "mentions":
        return mention_generation(graph, before, after)
    if table == "aliases":  # the core holds no aliases
        return with_core(graph, graph.core), NoChange()
    return None
