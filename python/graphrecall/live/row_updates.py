"""``LiveGraph.update_entities`` and ``update_chunks``: changed columns of existing entities
and chunks, by id.

Every column of :data:`~graphrecall.tables.COLUMNS` but ``id`` may change (the id is the
row's identity: delete the row and add a new one to change it). The changed rows are
checked on their own against the ids and tenants they name (an entity's
``primary_chunk``), as a fresh build's check of the whole tables would check them, and the
new values land in copies of the changed columns (a reader's older tables keep theirs, and
the retrieval index sees them change). The core holds no column of an entity or chunk but
its tenant, so such a change is a new graph over the same core (the entity names replaced):
O(changed columns), no rebuild.

A **tenant change** (a value other than the row's tenant) is a generation too
(:mod:`.tenant_moves`: the core's ``with_tenants``), checked against the rows that name the
moved rows (a fact, mention or primary chunk must not join two tenants afterwards). A move
to a tenant the graph does not hold, or one that leaves a tenant without entities, changes
the tenant vocabulary (the codes are the places of the sorted tenants): it is checked with
the whole tables and rebuilds the graph, as does any change while usage counts wait for a
refresh. A value the stored column cannot hold as it is typed (another kind of value) also
takes the whole table's check, which normalises the column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError, GraphRecallError
from ..graph import KnowledgeGraph
from ..storage.sqlite import update_rows
from ..tables import NULL_TIME, BadDataError, GraphTables, LoadReport
from ..tables import check_tables as _check
from .changes import _filled, changed_last, put_back, record_changes
from .overlay import NoChange, TenantChange, with_core
from .tenant_moves import check_moves, tenant_change

if TYPE_CHECKING:
    from .graph import LiveGraph

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]
#: The arguments of ``LiveGraph._swap``: operation, graph, tables, rows, check, change.
Swap = tuple[
    str, KnowledgeGraph, GraphTables, dict[str, int], LoadReport, NoChange | TenantChange | None
]


def update_table(live: LiveGraph, table: str, recs: list[Mapping[str, Any]]) -> Swap:
    """:meth:`LiveGraph.update_entities` (``table`` "entities") or ``update_chunks``
    ("chunks") on ``live``'s current state (the caller holds the update lock and swaps
    the result in): checked, committed to the store, and the arguments of the swap."""
    op = f"update_{table}"
    ids, names = record_changes(table, recs, op)
    with live._writing(fold=False) as cur:  # no statement on facts
        rows = live._rows_of(table, ids)
        if len(np.unique(rows)) != len(rows):
            raise DataError(
                f"{op}: a row is named twice in one update", table=table, kind="duplicate"
            )
        base = live._tables
        moves = _moves_tenant(base, table, rows, recs)
        fast = None
        if not moves or live._tables is live._current.tables:
            fast = _checked_rows(live, base, table, rows, recs, names, op)
        moved = None
        if fast is not None and moves:
            moved = _moved(live, base, table, rows, fast[0], op)
        if fast is not None and (moved is not None or not moves):
            cols, report = fast
            tables = replace(base, **{table: cols})  # type: ignore[arg-type]
            graph, change, shown = _same_core(live, table, tables, moved)
        else:
            live._drop_tombstones()  # the whole tables' check reads no dead rows
            base = live._tables
            rows = live._rows_of(table, ids)
            cols, report = _checked_table(base, table, rows, recs, names, op)
            tables = replace(base, **{table: cols})  # type: ignore[arg-type]
            graph, shown = live._rebuilt(tables)
            change = None
        update_rows(cur, tables, table, rows, names)
    return op, graph, shown, {table: len(rows)}, report, change


def _moves_tenant(base: GraphTables, table: str, rows: I64, recs: list[Mapping[str, Any]]) -> bool:
    """Whether a record gives a row another tenant than it has (or the table a tenant
    column it lacks)."""
    cols = base.table(table)
    assert cols is not None  # the rows were found
    held = cols.get("tenant")
    for row, r in zip(rows.tolist(), recs, strict=True):
        if "tenant" not in r:
            continue
        try:
            if held is None or bool(held[row] != r["tenant"]):
                return True
        except (TypeError, ValueError):  # not a tenant value: the whole check reports it
            return True
    return False


def _with_values(
    cols: Mapping[str, Array], rows: I64, recs: list[Mapping[str, Any]], names: set[str]
) -> dict[str, Array]:
    """The columns ``cols`` (one value per row of ``rows``) with the records' values
    written (changed columns as objects)."""
    out: dict[str, Array] = {}
    for col, arr in cols.items():
        if col in names:
            arr = arr.astype(object)
            for k, r in enumerate(recs):
                if col in r:
                    arr[k] = r[col]
        out[col] = arr
    return out


def _checked_rows(
    live: LiveGraph,
    base: GraphTables,
    table: str,
    rows: I64,
    recs: list[Mapping[str, Any]],
    names: set[str],
    op: str,
) -> tuple[dict[str, Array], LoadReport] | None:
    """The table with the changed rows checked alone (against the chunks an entity's
    ``primary_chunk`` names) and written into copies of the changed columns; None when
    the whole tables' check must decide (a value the stored column's type cannot hold, a
    primary chunk the graph does not hold)."""
    stored = base.table(table)
    assert stored is not None
    n = base.n_rows(table)
    # A column the table lacks (a store reads a column null everywhere as absent) is
    # added with its default: O(rows) of numpy, no rebuild.
    absent = {c for c in names if c not in stored}
    stored = {**stored, **{c: _filled(base, table, c, n) for c in absent}}
    mini = _with_values({c: a[rows] for c, a in stored.items()}, rows, recs, names)
    label = f"{op} records"
    empty_facts = {c: a[:0] for c, a in base.facts.items()}
    graph = live._current.graph
    if table == "entities":
        if not names & {"primary_chunk", "tenant"}:  # unchanged, and so is the tenant
            mini.pop("primary_chunk", None)
        chunks = None
        named = [v for v in mini.get("primary_chunk", np.zeros(0)).tolist() if v is not None]
        if named:
            if base.chunks is None:
                return None
            try:
                c_rows = np.unique(graph.chunk_index(named))
            except (GraphRecallError, TypeError, ValueError, OverflowError):
                return None  # not a chunk of the graph: the whole check reports it
            chunks = {c: a[c_rows] for c, a in base.chunks.items() if c in ("id", "tenant")}
        elif base.chunks is not None:
            chunks = {c: a[:0] for c, a in base.chunks.items() if c in ("id", "tenant")}
        view = GraphTables(entities=mini, facts=empty_facts, chunks=chunks)
    else:
        ents = {c: a[:0] for c, a in base.entities.items() if c in ("id", "tenant")}
        view = GraphTables(entities=ents, facts=empty_facts, chunks=mini)
    view = replace(view, statuses=base.statuses, sources=base.sources)
    checked = _check(view, "skip", label={table: label})
    mine = tuple(t for t in checked.report.tables if t.table == label)
    if not LoadReport(mine).ok:
        raise BadDataError(LoadReport(mine, "raise", "update"))
    got = checked.tables.table(table)
    if got is None or not bool(checked.keep[table].all()):
        return None
    out = dict(stored)
    for c in names:
        a, b = stored[c], got[c]
        if c in absent and a.dtype != b.dtype:
            a = _null_column(a, b.dtype)
        if a.dtype != b.dtype or a.dtype.kind == "U":
            return None  # the stored column's type changes: the whole check normalises it
        a = a.copy()  # readers of the older tables keep their values
        a[rows] = b
        out[c] = a
    return out, LoadReport(mine, "raise", "update")


def _null_column(filled: Array, dtype: np.dtype[Any]) -> Array:
    """A column of nulls (``filled``: Nones) as the check types it: a null time in an int
    column, NaN in a float one; else ``filled`` (the whole check decides)."""
    if filled.dtype != object or any(v is not None for v in filled[:1].tolist()):
        return filled
    if dtype == np.int64:
        return np.full(len(filled), NULL_TIME, dtype=np.int64)
    if dtype.kind == "f":
        return np.full(len(filled), np.nan, dtype=dtype)
    return filled


def _checked_table(
    base: GraphTables,
    table: str,
    rows: I64,
    recs: list[Mapping[str, Any]],
    names: set[str],
    op: str,
) -> tuple[dict[str, Array], LoadReport]:
    """The table with the records' values, checked with the whole tables (``base`` holds
    no dead rows): the changed rows are reported as the records' rows, and a stored row
    of any table that the change would make bad (a fact or mention joining two tenants)
    refuses the update with the whole report."""
    stored = base.table(table)
    assert stored is not None
    n = base.n_rows(table)
    # The changed rows are checked (and reported) as the new ones: moved to the end.
    moved, order = changed_last(stored, base, table, rows, recs, names)
    label = f"{op} records"
    view = replace(base, **{table: moved})  # type: ignore[arg-type]
    checked = _check(view, "skip", base={table: n - len(rows)}, label={table: label})
    mine = tuple(t for t in checked.report.tables if t.table == label)
    if not LoadReport(mine).ok:
        raise BadDataError(LoadReport(mine, "raise", "update"))
    if not all(bool(k.all()) for k in checked.keep.values()):
        # A stored row (of this table or one naming it) breaks a rule with the change.
        raise BadDataError(LoadReport(checked.report.tables, "raise", "update"))
    got = checked.tables.table(table)
    assert got is not None
    return put_back(got, order), LoadReport(mine, "raise", "update")


def _moved(
    live: LiveGraph, base: GraphTables, table: str, rows: I64, cols: dict[str, Array], op: str
) -> TenantChange | None:
    """The core's change for rows moved to other tenants (``cols``: the checked table),
    after checking the rows that name them; None when the tenant vocabulary changes (then
    the whole tables' check and a rebuild decide)."""
    graph = live._current.graph
    tenants = cols["tenant"][rows]
    change = tenant_change(graph, table, rows, tenants)
    if change is not None:
        check_moves(graph, base, table, rows, tenants, op)
    return change


def _same_core(
    live: LiveGraph, table: str, tables: GraphTables, moved: TenantChange | None = None
) -> tuple[KnowledgeGraph, NoChange | TenantChange | None, GraphTables]:
    """The graph of ``tables``, whose ``table`` changed in columns the core does not hold
    (or in tenants, ``moved``): the current graph's core (with the moves) and the new
    entity names; a rebuild when usage counts wait for a refresh (the current graph does
    not show them)."""
    cur = live._current
    if live._tables is not cur.tables:
        graph, shown = live._rebuilt(tables)
        return graph, None, shown
    g = cur.graph
    core = g.core if moved is None else moved.apply(g.core)
    change: NoChange | TenantChange = NoChange() if moved is None else moved
    if table == "entities" and "name" in tables.entities:
        names = np.asarray(tables.entities["name"], dtype=object)
        return with_core(g, core, entity_names=names), change, tables
    return with_core(g, core), change, tables
