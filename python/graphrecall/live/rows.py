"""Fact rows checked and committed on their own: an add or update of a few facts costs
those rows (their values, what they refer to, their ids against the graph's), not a check of
the whole facts table."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import UnknownIdError
from ..graph import KnowledgeGraph
from ..storage.sqlite import sql_values
from ..tables import GraphTables, LoadReport
from ..tables import check_tables as _check
from .changes import _append, _concat, _filled, _member, _reference_view

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
) -> tuple[dict[str, Array], LoadReport] | None:
    """The facts table with new or changed rows checked alone (their values and what
    they refer to), so that the cost is theirs, not the table's: new rows go after the
    stored ones, or replace ``rows``. None when the whole table must be checked instead
    (a row is refused, a new id is held already, a column or a value type the stored
    rows lack): that check decides, with its precise report. ``spare``: buffers with room
    for appended rows (see ``_append``), kept by the caller from one add to the next.
    ``columns``: the columns an update changes (the others are given to be checked)."""
    old = base.facts
    if "id" not in old or any(c not in old for c in new) or n_new == 0:
        return None
    mini = {c: new[c] if c in new else _filled(base, "facts", c, n_new) for c in old}
    label = f"{op} records"
    checked = _check(_reference_view(base, "facts", mini), "skip", label={"facts": label})
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
        elif bool(_member(ids, old["id"]).any()):
            return None
    out: dict[str, Array] = {}
    for c, a in old.items():
        b = got[c]
        if rows is None:
            out[c] = _concat(a, b, c) if spare is None else _append(a, b, c, spare)
        elif c in (new if columns is None else columns):
            if a.dtype != b.dtype or a.dtype.kind == "U":
                return None
            a = a.copy()
            a[rows] = b
            out[c] = a
        else:
            out[c] = a
    if rows is None and any(out[c].dtype != old[c].dtype for c in old):
        return None  # the stored column's type changes: the full check normalises it
    return out, report


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
