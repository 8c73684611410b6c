"""What an index update reuses from the previous index: which leading rows of each table
are the previous rows unchanged (``appended_rows``), whether a previous vector index only
grew, and the fact columns of the changed rows written over the previous ones (or the
deleted rows dropped from them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..anchors.vectors import VectorIndex
from ..errors import ParameterError
from ..graph import KnowledgeGraph
from ..tables import GraphTables
from .columns import _texts
from .fact_changes import FACT_TEXT_INPUTS, FactRows, fact_rows_of

if TYPE_CHECKING:
    from .graph_index import GraphIndex

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]


def check_graph_of(graph: KnowledgeGraph, tables: GraphTables) -> None:
    """Refuse a caller's graph whose row counts are not those of ``tables``."""
    if not isinstance(graph, KnowledgeGraph):
        raise ParameterError(
            f"invalid parameter graph: {type(graph).__name__} is not a KnowledgeGraph"
        )
    ch = tables.chunks
    want = (
        len(tables.entities["id"]),
        len(tables.facts["id"]),
        0 if ch is None else len(ch["id"]),
    )
    got = (graph.n_entities, graph.n_facts, graph.n_chunks)
    if got != want:
        raise ParameterError(
            f"invalid parameter graph: (entities, facts, chunks) {got} are not the tables' {want}"
        )


FactColumns = tuple[I64, I64, list[str], list[str | None], list[str | None]]


def changed_fact_rows(
    previous: GraphIndex | None, tables: GraphTables, graph: KnowledgeGraph
) -> I64 | None:
    """The fact rows whose derived columns ``previous`` does not hold (rows changed in
    place, then appended rows), or None when they must all be computed (no previous index,
    fewer facts or other fact columns than before, entity rows not a prefix-extension).
    Rows are compared through ``previous.tables`` (``LiveGraph`` never writes these input
    columns in place, so the previous tables still hold the old values)."""
    if previous is None:
        return None
    old_f, f = previous.tables.facts, tables.facts
    n_old, n_new = previous.graph.n_facts, graph.n_facts
    old_e, new_e = previous.graph.entity_ids, graph.entity_ids
    if (
        n_old > n_new
        or not n_old
        or len(old_e) > len(new_e)
        or any((c in old_f) != (c in f) for c in FACT_TEXT_INPUTS)
        or not np.array_equal(old_e, new_e[: len(old_e)])
    ):
        return None
    changed = np.zeros(n_old, dtype=bool)
    for c in FACT_TEXT_INPUTS:
        if c in f:
            if old_f[c] is f[c]:
                continue
            a, b = np.asarray(old_f[c]), np.asarray(f[c])[:n_old]
            if a.dtype != b.dtype or a.shape != b.shape:
                return None
            changed |= np.asarray(a != b, dtype=bool)
    rows = np.concatenate([np.flatnonzero(changed), np.arange(n_old, n_new)])
    return rows.astype(np.int64) if len(rows) <= n_new // 2 else None


def fact_columns(f: dict[str, Array], graph: KnowledgeGraph, rows: I64 | None) -> FactColumns:
    """(subject, object, predicate, value, description) of fact ``rows`` (all when None):
    endpoints as dense entity indices (-1: a literal), texts as lists."""

    def col(name: str) -> Array | None:
        v = f.get(name)
        return None if v is None or rows is None else np.asarray(v)[rows]

    n = graph.n_facts if rows is None else len(rows)
    subj_ids = f["subject"] if rows is None else np.asarray(f["subject"])[rows]
    subject = graph.entity_index(subj_ids.tolist()) if n else np.zeros(0, np.int64)
    obj = f.get("object") if rows is None else col("object")
    obj_rows: I64 = np.full(n, -1, dtype=np.int64)
    if obj is not None and n:
        has = np.array([v is not None for v in obj.tolist()], dtype=bool)
        if has.any():
            obj_rows[has] = graph.entity_index(obj[has].tolist())
    pred = f.get("predicate") if rows is None else col("predicate")
    predicate = [str(p) for p in pred.tolist()] if pred is not None else [""] * n
    val = f.get("object_value") if rows is None else col("object_value")
    value = [
        None if v is None else str(v) for v in (val.tolist() if val is not None else [None] * n)
    ]
    desc = f.get("description") if rows is None else col("description")
    return subject, obj_rows, predicate, value, _texts(desc, n)


def patched(previous: GraphIndex, got: FactColumns, rows: I64, n: int) -> FactColumns:
    """``previous``'s fact columns extended to ``n`` rows with ``got`` (the columns of
    ``rows``) written in; new arrays and lists, so readers of ``previous`` see no change."""
    n_old = previous.graph.n_facts
    olds: tuple[Any, ...] = (
        previous.fact_subject,
        previous.fact_object,
        previous.fact_predicate,
        previous.fact_value,
        previous.fact_description,
    )
    if not len(rows) and n == n_old:  # nothing changed: the previous columns, shared
        return olds[0], olds[1], olds[2], olds[3], olds[4]
    out: list[Any] = []
    at = rows.tolist()
    news: tuple[Any, ...] = got
    for old, new in zip(olds, news, strict=True):
        if isinstance(old, np.ndarray):
            arr = np.empty(n, dtype=old.dtype)
            arr[:n_old] = old
            arr[rows] = new
            out.append(arr)
        else:
            lst = old + [None] * (n - n_old)  # one copy (``list(old) + ...`` is two)
            for r, v in zip(at, new, strict=True):
                lst[r] = v
            out.append(lst)
    return out[0], out[1], out[2], out[3], out[4]


def fact_columns_after(
    previous: GraphIndex | None, tables: GraphTables, graph: KnowledgeGraph
) -> FactColumns:
    """The fact columns of ``tables`` (whose graph is ``graph``), from ``previous``'s where
    it can: the rows a recorded change names (:mod:`.fact_changes`) are computed or dropped,
    O(change) but for one copy of each column; else the rows whose inputs differ from
    ``previous.tables``' (a comparison of every row); else all rows."""
    f = tables.facts
    if previous is not None:
        rows = fact_rows_of(graph, previous.graph, previous.tables.facts, f)
        if rows is not None:
            got = _from_change(previous, f, graph, rows)
            if got is not None:
                return got
    redo = changed_fact_rows(previous, tables, graph)
    cols = fact_columns(f, graph, redo)
    if redo is not None and previous is not None:
        cols = patched(previous, cols, redo, graph.n_facts)
    return cols


def _from_change(
    previous: GraphIndex, f: dict[str, Array], graph: KnowledgeGraph, rows: FactRows
) -> FactColumns | None:
    """``previous``'s fact columns with the recorded change applied (None: the counts do
    not add up, so the record cannot describe these tables)."""
    n_old, n = previous.graph.n_facts, graph.n_facts
    if len(rows.deleted) or len(rows.deleted_entities):
        if len(rows.changed) or n != n_old - len(rows.deleted):
            return None
        n_e_old = previous.graph.n_entities
        if graph.n_entities != n_e_old - len(rows.deleted_entities):
            return None
        return _without(previous, rows.deleted, rows.deleted_entities)
    changed = rows.changed
    if n < n_old or (len(changed) and (changed[0] < 0 or changed[-1] >= n)):
        return None
    if graph.n_entities != previous.graph.n_entities:
        return None
    redo = np.union1d(changed, np.arange(n_old, n, dtype=np.int64))
    return patched(previous, fact_columns(f, graph, redo), redo, n)


def _without(previous: GraphIndex, facts: I64, entities: I64) -> FactColumns | None:
    """``previous``'s fact columns without the rows ``facts`` (sorted), the rows that stay
    in order, endpoints renumbered without the entity rows ``entities`` (sorted); None when
    a fact that stays names a deleted entity."""
    n_old = previous.graph.n_facts
    if len(facts) and (facts[0] < 0 or facts[-1] >= n_old):
        return None
    subject = np.delete(previous.fact_subject, facts)
    obj = np.delete(previous.fact_object, facts)
    if len(entities):
        n_e = previous.graph.n_entities
        if entities[0] < 0 or entities[-1] >= n_e:
            return None
        alive = np.ones(n_e, dtype=bool)
        alive[entities] = False
        remap = np.cumsum(alive, dtype=np.int64) - 1
        remap[~alive] = -1
        subject = remap[subject]
        has = obj >= 0
        obj = np.where(has, remap[np.where(has, obj, 0)], -1)
        if (subject < 0).any() or (obj[has] < 0).any():
            return None
    return (
        subject,
        obj,
        _dropped(previous.fact_predicate, facts),
        _dropped(previous.fact_value, facts),
        _dropped(previous.fact_description, facts),
    )


#: Up to this many deleted rows, a list is copied and the rows deleted from the copy (one
#: copy and a memmove per row); more are dropped by copying the runs between them.
_DEL_IN_PLACE = 32


def _dropped(col: list[Any], gone: I64) -> list[Any]:
    """A new list of ``col`` without the sorted rows ``gone``."""
    if len(gone) <= _DEL_IN_PLACE:
        out = col.copy()
        for g in reversed(gone.tolist()):
            del out[g]
        return out
    kept: list[Any] = []
    for a, z in _stays(len(col), gone):
        kept += col[a:z]
    return kept


def _stays(n: int, gone: I64) -> list[tuple[int, int]]:
    """The runs ``[a, z)`` of ``0..n`` around the sorted rows ``gone``."""
    runs = []
    a = 0
    for g in gone.tolist():
        if g > a:
            runs.append((a, g))
        a = g + 1
    if a < n:
        runs.append((a, n))
    return runs


def tail(col: Array | None, start: int) -> Array | None:
    """``col[start:]`` (None stays None)."""
    return col if col is None or not start else col[start:]


#: The columns each table's derived index rows read: an update keeps a row's derived
#: values when these are unchanged (ids and tenants are compared through the graphs).
APPEND_INPUTS: dict[str, tuple[str, ...]] = {
    "entities": ("name", "type", "description", "primary_chunk"),
    "chunks": ("text", "scope", "category", "tags", "metadata"),
    "mentions": ("chunk", "entity", "count"),
    "aliases": ("entity", "alias"),
}


#: The table of each vector kind.
TABLE_OF = {"entity": "entities", "chunk": "chunks"}


def grown_from(reuse: tuple[VectorIndex, I64] | None, n_old: int | None) -> VectorIndex | None:
    """The previous vector index when the new rows are exactly its rows (same vectors and,
    as ``appended_rows`` found, tenants) plus appended ones: then
    :meth:`VectorIndex.appended` gives the new index."""
    if reuse is None or n_old is None:
        return None
    previous, old_rows = reuse
    if len(previous) != n_old or len(old_rows) < n_old:
        return None
    head = old_rows[:n_old]
    if not np.array_equal(head, np.arange(n_old)) or (old_rows[n_old:] != -1).any():
        return None
    return previous


def appended_rows(
    previous: GraphIndex | None, tables: GraphTables, graph: KnowledgeGraph
) -> dict[str, int]:
    """Per table (``entities``, ``chunks``, ``mentions``, ``aliases``), the number of
    leading rows that are ``previous``'s rows unchanged (same ids, tenants and
    :data:`APPEND_INPUTS` columns) when the table only grew: what an update after
    appends (how :class:`~graphrecall.LiveGraph` adds rows) reuses. A table whose old
    rows changed, moved or went is left out (its derived rows are computed again), and
    nothing is kept when ``previous`` masks deleted rows that ``graph`` holds live.

    The comparison is numpy over the old rows (an object column compares each value,
    with the identity shortcut when the new tables share the old values, as LiveGraph's
    appends do); a column that is the previous tables' own array counts as unchanged
    (LiveGraph writes none of these columns in place: only facts' numeric columns and
    chunks' usage counters)."""
    out: dict[str, int] = {}
    if previous is None:
        return out
    old_g = previous.graph
    for dead in ("dead_entities", "dead_chunks"):
        masked = np.asarray(getattr(old_g.core, dead)())
        if len(masked) and len(np.setdiff1d(masked, getattr(graph.core, dead)())):
            return out  # ``previous`` masks rows ``graph`` holds: its rooms are not kept
    checks = (
        (
            "entities",
            old_g.entity_ids,
            graph.entity_ids,
            old_g.core.entity_tenants(),
            graph.core.entity_tenants,
        ),
        (
            "chunks",
            old_g.chunk_ids,
            graph.chunk_ids,
            old_g.core.chunk_tenants(),
            graph.core.chunk_tenants,
        ),
    )
    for table, old_ids, new_ids, old_t, new_t in checks:
        k = len(old_ids)
        if len(new_ids) < k or not np.array_equal(old_ids, new_ids[:k]):
            continue
        if not np.array_equal(old_t, new_t()[:k]):
            continue
        if _prefix_same(previous.tables.table(table), tables.table(table), table, k):
            out[table] = k
    for table in ("mentions", "aliases"):
        a, b = previous.tables.table(table), tables.table(table)
        k = 0 if a is None else len(next(iter(a.values()), ()))
        if k == 0:
            out[table] = 0
        elif b is not None and len(next(iter(b.values()), ())) >= k:
            if _prefix_same(a, b, table, k):
                out[table] = k
    return out


def _prefix_same(
    old: dict[str, Array] | None, new: dict[str, Array] | None, table: str, k: int
) -> bool:
    """The first ``k`` rows of ``new`` hold ``old``'s values in the input columns."""
    if k == 0:
        return True
    if old is None or new is None:
        return False
    for c in APPEND_INPUTS[table]:
        a, b = old.get(c), new.get(c)
        if (a is None) != (b is None):
            return False
        if a is None or b is None or a is b:
            continue
        if len(a) != k or len(b) < k or a.dtype != b.dtype:
            return False
        head = b[:k]
        if a.dtype.kind == "O":
            try:
                same = bool(np.all(a == head))
            except (TypeError, ValueError):
                return False
        else:
            same = bool(np.array_equal(a, head))
        if not same:
            return False
    return True
