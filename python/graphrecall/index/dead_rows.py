"""The index of a graph that holds deleted entities or chunks (tombstones of a
:class:`~graphrecall.LiveGraph`) where the rooms cannot mask them
(:mod:`.dead_mask`: no previous index over the same rows, a dead row in a sketch or HNSW
vector tenant): it indexes the new base without them, so that name, keyword and vector
anchors, BM25 statistics, mention links and primary chunks are a fresh build's; and the
index without deleted rows that a save writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..graph import KnowledgeGraph
from ..tables import GraphTables
from .fact_changes import FACT_TEXT_INPUTS, note_fact_rows

if TYPE_CHECKING:
    from .graph_index import GraphIndex


#: How a graph with deleted entities or chunks becomes a new base without them
#: (``graphrecall.live.dead.without_dead``; only a live graph makes such graphs, and it
#: registers this when imported).
_WITHOUT_DEAD: Callable[[KnowledgeGraph, GraphTables], tuple[KnowledgeGraph, GraphTables]] | None
_WITHOUT_DEAD = None


def register_without_dead(
    fn: Callable[[KnowledgeGraph, GraphTables], tuple[KnowledgeGraph, GraphTables]],
) -> None:
    """Register how a graph with deleted entities or chunks is indexed (see
    :func:`without_dead_rows`)."""
    global _WITHOUT_DEAD
    _WITHOUT_DEAD = fn


def without_dead_rows(
    graph: KnowledgeGraph, tables: GraphTables, previous: GraphIndex | None
) -> tuple[KnowledgeGraph, GraphTables]:
    """``graph`` (holding deleted entities or chunks) and its tables as a new base without
    the dead rows: anchors, BM25 statistics, tenant centres and primary chunks are then a
    fresh build's. When
    ``previous`` indexed ``graph``'s parent over the same fact rows, the new base records
    the rows it drops from them, so the update drops them from ``previous``'s columns."""
    assert _WITHOUT_DEAD is not None  # registered by the live graph that made ``graph``
    made, after = _WITHOUT_DEAD(graph, tables)
    if previous is None:
        return made, after
    old = previous.graph
    same_rows = (old.n_facts, old.n_entities) == (graph.n_facts, graph.n_entities)
    if (
        same_rows
        and not len(old.core.dead_entities())
        and not len(old.core.dead_chunks())
        and all(previous.tables.facts.get(c) is tables.facts.get(c) for c in FACT_TEXT_INPUTS)
    ):
        note_fact_rows(
            made,
            old,
            previous.tables,
            after,
            deleted=graph.core.dead_facts(),
            deleted_entities=graph.core.dead_entities(),
        )
    return made, after


def without_deleted(index: GraphIndex) -> GraphIndex:
    """``index``, or, when its graph holds deleted facts, entities or chunks, the index of
    its tables without those rows (vectors kept by id from ``index``): what
    :meth:`GraphIndex.without_deleted_facts` gives."""
    tables = index.tables
    core = index.graph.core
    graph: KnowledgeGraph | None = None
    if len(core.dead_entities()) or len(core.dead_chunks()):
        graph, tables = without_dead_rows(index.graph, tables, None)
    else:
        dead = np.asarray(core.dead_facts(), dtype=np.int64)
        if not len(dead):
            return index
        keep = np.ones(tables.n_rows("facts"), dtype=bool)
        keep[dead] = False
        tables = replace(tables, facts={c: a[keep] for c, a in tables.facts.items()})
    return type(index).build(
        tables,
        embedder=index.embedder,
        checked=True,
        vector_backend=index.vector_backend,
        exact_below=index.exact_below,
        previous=index,
        graph=graph,
    )
