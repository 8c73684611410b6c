"""Fact changes and added entities as a new graph generation over the same base (no
rebuild), and the log that lets a background compaction catch up with the changes made
while it ran.

:func:`fact_generation` encodes only the changed and new rows of the facts table, with the
current graph's id maps and vocabularies, and hands them to the core's ``with_facts``: the
new graph shares every array of the old one and answers exactly as a fresh build of the
same tables. It returns None where the change needs a rebuild (a word the vocabularies do
not hold, a column the graph does not hold yet, rows that are not the old rows plus new
ones at the end). :func:`entity_generation` does the same for entities appended to the
entities table (a tenant the graph does not hold yet takes a rebuild: the tenant codes
are the sorted tenants).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import DataError, GraphRecallError
from ..graph import KnowledgeGraph
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


def with_core(
    graph: KnowledgeGraph,
    core: _core.CoreGraph,
    *,
    facts: Any = None,
    object_values: Array | None = None,
) -> KnowledgeGraph:
    """``graph``'s maps and vocabularies over another core (of the same entities and
    chunks)."""
    return KnowledgeGraph(
        core,
        entities=graph.entity_map,
        facts=graph.fact_map if facts is None else facts,
        chunks=graph.chunk_map,
        statuses=graph.statuses,
        sources=graph.sources,
        predicates=graph.predicates,
        tenants=graph.tenants,
        entity_names=graph.entity_names,
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
    return with_core(graph, core, facts=facts_map, object_values=values), change


@dataclass(frozen=True)
class EntityChange:
    """The core's argument for appended entities (``CoreGraph.with_entities``), kept to
    replay it on a compacted base."""

    tenant: npt.NDArray[np.uint32]

    def apply(self, core: _core.CoreGraph) -> _core.CoreGraph:
        """The generation of ``core`` with these entities appended."""
        return core.with_entities(self.tenant)


#: A change logged since the graph's base.
Change = FactChange | EntityChange


def entity_generation(
    graph: KnowledgeGraph, before: GraphTables, after: GraphTables
) -> tuple[KnowledgeGraph, EntityChange] | None:
    """The graph of ``after`` as a generation of ``graph`` (the graph of ``before``), whose
    entities are those of ``before`` followed by new ones and whose other tables are the
    same; None when it takes a rebuild (a tenant the graph does not hold)."""
    old, ents = before.entities, after.entities
    n_old, n_new = before.n_rows("entities"), after.n_rows("entities")
    if n_old != graph.n_entities or n_new < n_old or set(old) != set(ents):
        return None
    if ("name" in ents) != (graph.entity_names is not None):
        return None
    if "tenant" in ents:
        values = np.asarray(ents["tenant"][n_old:])
        held = set(graph.tenants.names)
        if any(v not in held for v in values.tolist()):
            return None  # a new tenant: the codes of the sorted tenants change
        try:
            codes = graph.tenants.encode_names(values, "entities", "tenant", np.uint32)
        except DataError:
            return None
    else:
        codes = np.zeros(n_new - n_old, dtype=np.uint32)
    change = EntityChange(np.ascontiguousarray(codes, dtype=np.uint32))
    try:
        core = change.apply(graph.core)
    except GraphRecallError:
        return None
    ids = ents.get("id")
    entity_map = (
        IdMap(None, n_new, "entity") if ids is None else graph.entity_map.extended(np.asarray(ids))
    )
    names = None if "name" not in ents else np.asarray(ents["name"], dtype=object)
    return (
        KnowledgeGraph(
            core,
            entities=entity_map,
            facts=graph.fact_map,
            chunks=graph.chunk_map,
            statuses=graph.statuses,
            sources=graph.sources,
            predicates=graph.predicates,
            tenants=graph.tenants,
            entity_names=names,
            object_values=graph.object_values,
        ),
        change,
    )
