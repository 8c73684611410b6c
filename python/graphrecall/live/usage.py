"""Usage write-back: the access counts and times that :meth:`LiveGraph.record_access` adds
to the tables, and the SQL that makes them durable."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from ..tables import NULL_TIME, GraphTables
from .rows import undo_rows

if TYPE_CHECKING:
    from ..graph import KnowledgeGraph
    from .graph import LiveGraph

#: The largest ``facts.access_count`` accepted (chunks take any int64).
_MAX_ACCESS = 2**32 - 2

#: One SQL statement and the parameter rows it runs with.
Statement = tuple[str, list[tuple[Any, ...]]]
Array = npt.NDArray[Any]


def access_changes(
    base: GraphTables,
    batches: Sequence[tuple[str, Sequence[Hashable]]],
    rows_of: Callable[[str, Sequence[Hashable]], npt.NDArray[np.int64]],
    t: int,
    undo: list[tuple[Array, npt.NDArray[np.int64], Array]] | None = None,
    *,
    fact_tables: Sequence[str] = ("facts",),
) -> tuple[GraphTables, list[Statement], dict[str, int]]:
    """The tables after recording one access batch, the updates to commit, and the rows
    touched per table.

    Args:
        base: The committed tables.
        batches: ``(table, ids)`` for ``facts`` and ``chunks``: the accessed ids (an id
            may repeat).
        rows_of: The rows of ``ids`` in a table (raises for an unknown id).
        t: The access time (int seconds).
        undo: Given, the counts and times are written in place where the columns can
            hold them (the cost is the accessed rows, not copies of the columns), and
            ``(column, rows, old values)`` are appended to it to put them back should the
            commit fail; the columns are copied otherwise.
        fact_tables: The store's tables that hold facts (each gets the facts' update:
            a fact is in exactly one of them).

    Raises:
        DataError: A count would overflow its column.
        UnknownIdError: From ``rows_of``, for an id the graph does not hold.
    """
    out: dict[str, Any] = {}
    sql: list[tuple[str, list[tuple[Any, ...]]]] = []
    counts: dict[str, int] = {}
    for table, ids in batches:
        if not ids:
            continue
        rows = rows_of(table, ids)
        uniq, times = np.unique(rows, return_counts=True)
        cols = base.table(table)
        assert cols is not None
        n = base.n_rows(table)
        limit = _MAX_ACCESS if table == "facts" else 2**63 - 1
        held_acc, held_last = cols.get("access_count"), cols.get("last_accessed")
        if undo is not None and held_acc is not None and held_last is not None:
            got = held_acc[uniq].astype(np.int64) + times
            if (got > limit).any():
                raise DataError(f"record_access: {table}.access_count would exceed {limit}")
            if held_acc.dtype == np.int64 and held_last.dtype == np.int64:
                was = held_last[uniq]
                undo.append((held_acc, uniq, held_acc[uniq].copy()))
                undo.append((held_last, uniq, was.copy()))
                held_acc[uniq] = got
                held_last[uniq] = np.maximum(np.where(was == NULL_TIME, t, was), t)
                out[table] = cols
                sql += _statements(table, cols, uniq, times, t, fact_tables)
                counts[table] = len(uniq)
                continue
        acc = cols.get("access_count", np.zeros(n, dtype=np.int64)).astype(np.int64)
        new_acc = acc.copy()
        new_acc[uniq] += times
        if (new_acc[uniq] > limit).any():
            raise DataError(f"record_access: {table}.access_count would exceed {limit}")
        last = cols.get("last_accessed", np.full(n, NULL_TIME, dtype=np.int64))
        new_last = last.copy()
        new_last[uniq] = np.maximum(np.where(last[uniq] == NULL_TIME, t, last[uniq]), t)
        out[table] = {**cols, "access_count": new_acc, "last_accessed": new_last}
        sql += _statements(table, cols, uniq, times, t, fact_tables)
        counts[table] = len(uniq)
    return replace(base, **out), sql, counts


def _statements(
    table: str,
    cols: dict[str, Array],
    uniq: npt.NDArray[np.int64],
    times: Array,
    t: int,
    fact_tables: Sequence[str],
) -> list[Statement]:
    """The SQL adding ``times`` accesses at ``t`` to the rows ``uniq`` (for facts, in each
    of ``fact_tables``)."""
    key_ids = cols["id"][uniq].tolist() if "id" in cols else uniq.tolist()
    params = [(int(c), t, t, i) for c, i in zip(times.tolist(), key_ids, strict=True)]
    return [
        (
            f"UPDATE {name} SET access_count = access_count + ?, "
            "last_accessed = max(coalesce(last_accessed, ?), ?) WHERE id = ?",
            params,
        )
        for name in (fact_tables if table == "facts" else (table,))
    ]


def record_access(
    live: LiveGraph, fids: list[Hashable], cids: list[Hashable], t: int, refresh: bool
) -> tuple[KnowledgeGraph | None, Any, GraphTables, GraphTables, dict[str, int]]:
    """:meth:`LiveGraph.record_access` inside the store's transaction (the caller holds
    the update lock): the graph to swap in (None without ``refresh``), its change, the
    committed tables, the tables shown and the counts. Counts written in place are undone
    if the commit fails."""
    undo: list[tuple[Array, npt.NDArray[np.int64], Array]] = []
    try:
        with live._writing(fold=False) as cur:  # the updates name the fact log too
            tables, sql, counts = access_changes(
                live._tables,
                (("facts", fids), ("chunks", cids)),
                live._rows_of,
                t,
                undo
                if live.write_in_place and refresh and live._tables is live._current.tables
                else None,
                fact_tables=live.store.fact_tables,
            )
            graph, change = None, None
            shown = tables
            if refresh:
                rows = live._rows_of("facts", fids) if fids else np.zeros(0, np.int64)
                graph, change, shown = live._generation(tables, np.unique(rows))
            for statement, params in sql:
                cur.executemany(statement, params)
    except BaseException:
        undo_rows(undo)
        raise
    return graph, change, tables, shown, counts
