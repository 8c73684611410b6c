"""Compaction of a :class:`~graphrecall.live.LiveGraph`: the new base that drops every
tombstone (deleted facts by the core's ``compacted``, deleted entities and chunks by a new
base without them), swapped in with the tables without the dead rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..graph import KnowledgeGraph
from ..index.fact_changes import note_fact_rows
from ..tables import GraphTables
from .dead import has_dead_rows, live_tables, without_dead
from .overlay import with_core
from .report import GraphVersion
from .tombstones import dead_of, dropped, renumbered_change, rows_dropped

if TYPE_CHECKING:
    from .graph import LiveGraph


def without_tombstones(
    cur: GraphVersion, committed: GraphTables
) -> tuple[KnowledgeGraph, GraphTables, GraphTables] | None:
    """The graph of ``cur`` without its dead rows, its tables, and ``committed`` (the
    committed tables, ``cur.tables`` or ahead of them) without the dead rows; None when
    ``cur`` holds none."""
    if has_dead_rows(cur.graph):
        graph, tables = without_dead(cur.graph, cur.tables)
        pending = tables if committed is cur.tables else live_tables(committed, cur.graph)
        return graph, tables, pending
    dead = dead_of(cur.graph)
    if not len(dead):
        return None
    graph, tables = dropped(cur.graph, cur.graph.core.compacted(), cur.tables, dead)
    note_fact_rows(graph, cur.graph, cur.tables, tables, deleted=dead)
    pending = tables if committed is cur.tables else rows_dropped(committed, dead)
    return graph, tables, pending


def compact_in_background(live: LiveGraph, core: Any, epoch: int, n_log: int) -> None:
    """Build the new base of ``core`` (without any lock), then replay the changes logged
    since and swap it in, unless a rebuild made a new base meanwhile or deleted entities or
    chunks wait for one (the next compaction makes it). Tombstones of ``core`` leave the
    graph and the tables in the same swap (the changes logged since name facts by the new
    base's numbers)."""
    try:
        base = core.compacted()
        dead = np.asarray(core.dead_facts(), dtype=np.int64)
        with live._update_lock:
            if epoch != live._epoch or has_dead_rows(live._current.graph):
                return
            later = [renumbered_change(c, dead) for c in live._log[n_log:]]
            for change in later:
                base = change.apply(base)
            cur = live._current
            if len(dead):
                graph, tables = dropped(cur.graph, base, cur.tables, dead)
                pending = tables if live._tables is cur.tables else rows_dropped(live._tables, dead)
                note_fact_rows(graph, cur.graph, cur.tables, tables, deleted=dead)
            else:
                graph, tables, pending = with_core(cur.graph, base), cur.tables, live._tables
            with live._swap_lock:
                live._current = GraphVersion(cur.version, graph, tables)
                live._tables = pending
            live._log = later
    except Exception as exc:
        live.compaction_error = exc
