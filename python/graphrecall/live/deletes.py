"""The deletes of :class:`~graphrecall.live.LiveGraph`: facts (:mod:`.tombstones`),
entities and chunks (:mod:`.dead`) as tombstones, the cases tombstones do not cover as a new
base made from the current graph (:mod:`.delete`), each with its SQL inside the store's
write transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..graph import KnowledgeGraph
from ..tables import GraphTables
from .changes import _drop_orphan_embeddings, _keep_rows, _member
from .dead import (
    ChunkTombstones,
    EntityTombstones,
    chunk_counts,
    chunk_tombstoned,
    entity_counts,
    entity_tombstoned,
    has_dead_rows,
)
from .delete import Deletion, entity_facts
from .tombstones import Tombstones, dead_of, tombstoned

if TYPE_CHECKING:
    from .graph import LiveGraph

Array = npt.NDArray[Any]
#: The arguments of ``LiveGraph._swap``: operation, graph, tables, rows, check, change.
Swap = tuple[
    str,
    KnowledgeGraph,
    GraphTables,
    dict[str, int],
    None,
    Deletion | Tombstones | EntityTombstones | ChunkTombstones | None,
]


def delete_entities(live: LiveGraph, ids: list[Hashable], cur: sqlite3.Cursor) -> Swap:
    """:meth:`LiveGraph.delete_entities` on ``live``'s current state, inside the store
    transaction ``cur``: the arguments of its swap."""
    rows = live._rows_of("entities", ids)
    base = live._tables
    if base is live._current.tables:  # no usage counts waiting for a refresh
        made = entity_tombstoned(live._current.graph, base, rows)
        if made is not None:
            graph, tomb, n_facts = made
            counts = {"entities": len(tomb.entities), "facts": n_facts}
            more = entity_counts(live._current.graph, base, tomb.entities.astype(np.int64))
            if base.mentions is None:
                more.pop("mentions")
            counts.update(more)
            _delete_entity_rows(cur, base.entities["id"][tomb.entities].tolist())
            return ("delete_entities", graph, base, counts, None, tomb)
    if has_dead_rows(live._current.graph):
        live._drop_tombstones()  # the new base below starts from one without dead rows
        base = live._tables
        rows = live._rows_of("entities", ids)
    dead = np.zeros(base.n_rows("entities"), dtype=bool)
    dead[rows] = True
    dead_ids = base.entities["id"][rows]
    facts = base.facts
    f_dead = np.zeros(base.n_rows("facts"), dtype=bool)
    f_dead[entity_facts(live._current.graph, rows)] = True
    counts = {"entities": int(dead.sum()), "facts": int(f_dead.sum())}
    f_dead[dead_of(live._current.graph)] = True  # the new base drops tombstones
    out: dict[str, dict[str, Array] | None] = {
        "entities": _keep_rows(base.entities, ~dead),
        "facts": _keep_rows(facts, ~f_dead),
    }
    for table in ("mentions", "aliases"):
        cols = base.table(table)
        if cols is not None:
            gone = _member(cols["entity"], dead_ids)
            out[table] = _keep_rows(cols, ~gone)
            counts[table] = int(gone.sum())
    tables = replace(base, **out)  # type: ignore[arg-type]
    tables, n_emb = _drop_orphan_embeddings(tables)
    counts["embeddings"] = n_emb
    graph, change, tables = live._deletion(
        tables, entities=rows, facts=np.flatnonzero(f_dead).astype(np.int64)
    )
    change = live._absorbing(change)
    _delete_entity_rows(cur, dead_ids.tolist())
    return ("delete_entities", graph, tables, counts, None, change)


def _delete_entity_rows(cur: sqlite3.Cursor, ids: list[Any]) -> None:
    """The store's side of an entity delete: the entities, their facts, mentions, aliases
    and vectors."""
    key = [(i,) for i in ids]
    cur.executemany("DELETE FROM embeddings WHERE kind = 'entity' AND id = ?", key)
    cur.executemany("DELETE FROM mentions WHERE entity = ?", key)
    cur.executemany("DELETE FROM aliases WHERE entity = ?", key)
    cur.execute(
        "DELETE FROM embeddings WHERE kind = 'alias' AND id NOT IN (SELECT alias FROM aliases)"
    )
    cur.executemany("DELETE FROM facts WHERE subject = ? OR object = ?", [(i, i) for (i,) in key])
    cur.executemany("DELETE FROM entities WHERE id = ?", key)


def delete_facts(live: LiveGraph, ids: list[Hashable], cur: sqlite3.Cursor) -> Swap:
    """:meth:`LiveGraph.delete_facts` on ``live``'s current state, inside the store
    transaction ``cur``: the arguments of its swap."""
    base = live._tables
    rows = np.unique(live._rows_of("facts", ids))
    made = None
    cur_graph = live._current.graph
    if base is live._current.tables:  # no usage counts waiting for a refresh
        made = tombstoned(cur_graph, base, rows)
    if made is None and has_dead_rows(cur_graph):
        live._drop_tombstones()  # the new base below starts from one without dead rows
        base, cur_graph = live._tables, live._current.graph
        rows = np.unique(live._rows_of("facts", ids))
    change: Deletion | Tombstones | None
    if made is not None:
        graph, change = made
        tables = base
    else:  # a new base, without the tombstones too
        dead = np.zeros(base.n_rows("facts"), dtype=bool)
        dead[rows] = True
        dead[dead_of(cur_graph)] = True
        tables = replace(base, facts=_keep_rows(base.facts, ~dead))
        graph, change, tables = live._deletion(tables, facts=np.flatnonzero(dead))
        change = live._absorbing(change)
    fact_ids = base.facts["id"][rows].tolist() if "id" in base.facts else rows.tolist()
    cur.executemany("DELETE FROM facts WHERE id = ?", [(i,) for i in fact_ids])
    return ("delete_facts", graph, tables, {"facts": len(rows)}, None, change)


def delete_chunks(live: LiveGraph, ids: list[Hashable], cur: sqlite3.Cursor) -> Swap:
    """:meth:`LiveGraph.delete_chunks` on ``live``'s current state, inside the store
    transaction ``cur``: the arguments of its swap."""
    rows = live._rows_of("chunks", ids)
    base = live._tables
    chunks = base.chunks
    assert chunks is not None  # _rows_of found the rows
    if base is live._current.tables:  # no usage counts waiting for a refresh
        made = chunk_tombstoned(live._current.graph, base, rows)
        if made is not None:
            graph, tomb_c = made
            dead_ids = chunks["id"][tomb_c.chunks]
            counts = {"chunks": len(tomb_c.chunks)}
            more = chunk_counts(live._current.graph, base, tomb_c.chunks.astype(np.int64))
            if base.mentions is None:
                more.pop("mentions")
            counts.update(more)
            _delete_chunk_rows(cur, dead_ids.tolist())
            return ("delete_chunks", graph, base, counts, None, tomb_c)
    if has_dead_rows(live._current.graph):
        live._drop_tombstones()  # the new base below starts from one without dead rows
        rows = live._rows_of("chunks", ids)
        base = live._tables
        chunks = base.chunks
        assert chunks is not None
    dead = np.zeros(base.n_rows("chunks"), dtype=bool)
    dead[rows] = True
    dead_ids = chunks["id"][rows]
    out: dict[str, Any] = {"chunks": _keep_rows(chunks, ~dead)}
    counts = {"chunks": int(dead.sum())}
    tomb = dead_of(live._current.graph)  # the new base drops tombstones
    if len(tomb):
        keep = np.ones(base.n_rows("facts"), dtype=bool)
        keep[tomb] = False
        out["facts"] = _keep_rows(base.facts, keep)
    if base.mentions is not None:
        gone = _member(base.mentions["chunk"], dead_ids)
        out["mentions"] = _keep_rows(base.mentions, ~gone)
        counts["mentions"] = int(gone.sum())
    if "primary_chunk" in base.entities:
        pc = base.entities["primary_chunk"]
        cleared = _member(pc, dead_ids)
        if cleared.any():
            pc = pc.copy()
            pc[cleared] = None
            out["entities"] = {**base.entities, "primary_chunk": pc}
        counts["entities.primary_chunk"] = int(cleared.sum())
    tables = replace(base, **out)
    tables, n_emb = _drop_orphan_embeddings(tables)
    counts["embeddings"] = n_emb
    graph, change, tables = live._deletion(tables, chunks=rows, facts=tomb)
    change = live._absorbing(change)
    _delete_chunk_rows(cur, dead_ids.tolist())
    return ("delete_chunks", graph, tables, counts, None, change)


def _delete_chunk_rows(cur: sqlite3.Cursor, ids: list[Any]) -> None:
    """The store's side of a chunk delete: the chunks, their mentions and vectors, and
    the primary chunk of the entities that named one."""
    key = [(i,) for i in ids]
    cur.executemany("DELETE FROM embeddings WHERE kind = 'chunk' AND id = ?", key)
    cur.executemany("DELETE FROM mentions WHERE chunk = ?", key)
    cur.executemany("UPDATE entities SET primary_chunk = NULL WHERE primary_chunk = ?", key)
    cur.executemany("DELETE FROM chunks WHERE id = ?", key)
