"""Rows checked and committed on their own: an add or update of a few facts, or an add of a
few entities, chunks or mentions, costs those rows (their values, what they refer to, their
ids against the graph's), not a check of the whole table."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import GraphRecallError, UnknownIdError
from ..graph import KnowledgeGraph
from ..storage.sqlite import sql_values
from ..tables import BadDataError, GraphTables, LoadReport, OnBad
from ..tables import check_tables as _check
from .changes import _append, _concat, _filled, _reference_view

Array = npt.NDArray[Any]


def checked_alone(
    base: GraphTables,
    graph: KnowledgeGraph,
    new: dict[str, Array],
    n_new: int,
    op: str,
    rows: npt.NDArray[np.int64] | None = None,
    spare: dict[str, Array] | None = None,
    columns: set[str] | None = None,
    patch: dict[str, Array] | None = None,
) -> tuple[dict[str, Array], LoadReport] | None:
    """The facts table with new or changed rows checked alone (their values and what
    they refer to), so that the cost is theirs, not the table's: new rows go after the
    stored ones, or replace ``rows``. None when the whole table must be checked instead
    (a row is refused, a new id is held already, a column or a value type the stored
    rows lack): that check decides, with its precise report. ``spare``: buffers with room
    for appended rows (see ``_append``), kept by the caller from one add to the next.
    ``columns``: the columns an update changes (the others are given to be checked).
    ``patch``: for an update, receives the checked values of the changed columns at
    ``rows`` instead of copies of the columns with them written (see :func:`write_rows`)."""
    old = base.facts
    if "id" not in old or any(c not in old for c in new) or n_new == 0:
        return None
    mini = {c: new[c] if c in new else _filled(base, "facts", c, n_new) for c in old}
    label = f"{op} records"
    view = _entities_referenced(base, graph, mini)
    if view is None:
        return None
    checked = _check(view, "skip", label={"facts": label})
    mine = tuple(t for t in checked.report.tables if t.table == label)
    report = LoadReport(mine, "raise", "update" if rows is not None else "add")
    if not report.ok or not bool(checked.keep["facts"].all()):
        return None
    got = checked.tables.facts
    if rows is None:
        ids = got["id"]
        if len(ids) <= 64:
            for one in ids.tolist():
                try:
                    graph.fact_index([one])
                except UnknownIdError:
                    continue
                return None  # held already: the full check reports it
        elif graph.fact_map.holds_any(ids):
            return None
    out: dict[str, Array] = {}
    for c, a in old.items():
        b = got[c]
        if rows is None:
            out[c] = _concat(a, b, c) if spare is None else _append(a, b, c, spare)
        elif c in (new if columns is None else columns):
            if a.dtype != b.dtype or a.dtype.kind == "U":
                return None
            out[c] = a
            if patch is not None:
                patch[c] = b
            else:
                a = a.copy()
                a[rows] = b
                out[c] = a
        else:
            out[c] = a
    if rows is None and any(out[c].dtype != old[c].dtype for c in old):
        return None  # the stored column's type changes: the full check normalises it
    return out, report


def _entities_referenced(
    base: GraphTables, graph: KnowledgeGraph, facts: dict[str, Array]
) -> GraphTables | None:
    """The tables a few fact rows are checked with: those rows, and the ids and tenants of
    the entities they name only (the stored tables passed their check already, so a
    reference or tenant rule of the rows holds against these as against all entities).
    None when a subject or object is no entity of the graph (the full check reports it)."""
    if "id" not in base.entities:
        return None
    named = [v for c in ("subject", "object") if c in facts for v in facts[c].tolist()]
    try:
        rows = np.unique(graph.entity_index([v for v in named if v is not None]))
    except (GraphRecallError, TypeError, ValueError, OverflowError):
        return None
    entities: dict[str, Array] = {
        c: base.entities[c][rows] for c in ("id", "tenant") if c in base.entities
    }
    return GraphTables(
        entities=entities,
        facts=facts,
        chunks=None,
        statuses=base.statuses,
        sources=base.sources,
    )


def commit_fact_updates(
    cur: sqlite3.Cursor,
    tables: GraphTables,
    rows: npt.NDArray[np.int64],
    names: set[str],
    new_facts: Mapping[str, Array],
) -> None:
    """Write the changed columns of the facts at ``rows``."""
    col_names, values = sql_values(tables, "facts", rows)
    sets = [c for c in col_names if c in names]
    if sets:
        pos = [col_names.index(c) for c in sets]
        cur.executemany(
            f"UPDATE facts SET {', '.join(f'{c} = ?' for c in sets)} WHERE id = ?",
            [
                (*(v[p] for p in pos), i)
                for v, i in zip(values, new_facts["id"][rows].tolist(), strict=True)
            ],
        )


#: Rows written in place: (column, rows, the values they held).
Undo = list[tuple[Array, npt.NDArray[np.int64], Array]]


def write_rows(
    cols: Mapping[str, Array], rows: npt.NDArray[np.int64], patch: Mapping[str, Array]
) -> Undo:
    """Write ``patch[c]`` at ``rows`` of ``cols[c]`` in place (an update's cost is its
    rows, not a copy of the column); returns what :func:`undo_rows` needs to put the old
    values back."""
    undo: Undo = []
    for c, values in patch.items():
        a = cols[c]
        undo.append((a, rows, a[rows].copy()))
        a[rows] = values
    return undo


def undo_rows(undo: Undo) -> None:
    """Put back the values :func:`write_rows` (or an in-place access count) replaced."""
    for a, rows, old in reversed(undo):
        a[rows] = old


def checked_rows_alone(
    base: GraphTables,
    graph: KnowledgeGraph,
    table: str,
    new: dict[str, Array],
    n_new: int,
    op: str,
) -> tuple[dict[str, Array], LoadReport] | None:
    """``table`` (entities, chunks or mentions) with new rows checked alone, against the
    ids and tenants of the entities and chunks they name only (the stored tables passed
    their check already): an add costs its rows, not the table. ``graph`` is the graph of
    ``base``. None when the whole table must be checked instead (a row is refused, an id
    or a mention is held already, a tenant the graph does not hold, a column or a value
    type the stored rows lack, an entity naming a primary chunk): that check decides,
    with its precise report."""
    old = base.table(table)
    if old is None or n_new == 0 or any(c not in old for c in new):
        return None
    if table in ("entities", "chunks") and "id" not in old:
        return None
    rows = {c: new[c] if c in new else _filled(base, table, c, n_new) for c in old}
    if table in ("entities", "chunks") and "tenant" in rows:
        held = set(graph.tenants.names)  # a held tenant is of the graph's tenants' kind
        if any(v not in held for v in rows["tenant"].tolist()):
            return None
    facts = {c: a[:0] for c, a in base.facts.items()}
    ents: dict[str, Array] = {c: a[:0] for c, a in base.entities.items() if c in ("id", "tenant")}
    chunks: dict[str, Array] | None = None
    if table == "entities":
        pc = rows.get("primary_chunk")
        if pc is not None and any(v is not None for v in pc.tolist()):
            return None
        ents = rows
    elif table == "chunks":
        chunks = rows
    elif table == "mentions":
        stored = base.chunks
        if stored is None or "id" not in stored or "id" not in base.entities:
            return None
        try:
            e_rows = np.unique(graph.entity_index(rows["entity"].tolist()))
            c_rows = np.unique(graph.chunk_index(rows["chunk"].tolist()))
        except (GraphRecallError, TypeError, ValueError, OverflowError):
            return None
        ents = {c: a[e_rows] for c, a in base.entities.items() if c in ("id", "tenant")}
        chunks = {c: a[c_rows] for c, a in stored.items() if c in ("id", "tenant")}
    else:
        return None
    view = GraphTables(
        entities=ents,
        facts=facts,
        chunks=chunks,
        mentions=rows if table == "mentions" else None,
        statuses=base.statuses,
        sources=base.sources,
    )
    label = f"{op} records"
    checked = _check(view, "skip", label={table: label})
    mine = tuple(t for t in checked.report.tables if t.table == label)
    report = LoadReport(mine, "raise", "add")
    got = checked.tables.table(table)
    if not report.ok or not bool(checked.keep[table].all()) or got is None:
        return None
    id_map = {"entities": graph.entity_map, "chunks": graph.chunk_map}.get(table)
    if id_map is not None and id_map.holds_any(np.asarray(got["id"])):
        return None  # held already: the full check reports it
    if table == "mentions":
        try:
            graph.core.with_mentions(
                graph.chunk_map.to_index(got["chunk"], "mentions", "chunk").astype(np.uint32),
                graph.entity_map.to_index(got["entity"], "mentions", "entity").astype(np.uint32),
                np.ones(n_new, dtype=np.uint32),
            )
        except GraphRecallError:
            return None  # a mention held already: the full check reports it
    out = {c: _concat(a, got[c], c) for c, a in old.items()}
    if any(out[c].dtype != old[c].dtype for c in old):
        return None  # the stored column's type changes: the full check normalises it
    return out, report


def check_change(
    base: GraphTables,
    table: str,
    combined: dict[str, Array],
    n_old: int,
    on_bad: OnBad,
    op: str,
) -> tuple[GraphTables, LoadReport]:
    """Check a changed table (its first ``n_old`` rows stored, the rest new or changed)
    against the others' ids and tenants; stored rows must stay valid whatever ``on_bad``
    says (an update never drops stored rows)."""
    view = _reference_view(base, table, combined)
    label = f"{op} records"
    checked = _check(view, "skip", base={table: n_old}, label={table: label})
    keep = checked.keep[table]
    operation = "update" if op.startswith("update") else "add"
    if not keep[:n_old].all():  # stored rows are never dropped by an update
        raise BadDataError(LoadReport(checked.report.tables, "raise", operation))
    mine = tuple(t for t in checked.report.tables if t.table == label)
    if on_bad == "raise" and not LoadReport(mine).ok:
        raise BadDataError(LoadReport(mine, "raise", operation))
    return checked.tables, LoadReport(mine, on_bad, operation)
