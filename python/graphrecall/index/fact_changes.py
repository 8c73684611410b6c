"""Which fact rows a graph generation changed, recorded by whoever made it, so that an index
update derives the fact columns of those rows only.

:class:`~graphrecall.LiveGraph` makes a graph from the current one for an add, a change or
a delete of facts (:mod:`graphrecall.live`) and knows its rows; it records them here with
:func:`note_fact_rows`. ``GraphIndex.build(previous=..., graph=...)`` asks
:func:`fact_rows_of` and, when ``graph`` was made from ``previous.graph`` and the tables are
the ones the change was recorded with, writes the changed rows over the previous columns
(or drops the deleted ones) instead of comparing every fact's text columns. Without a
record (a rebuilt graph, generations skipped, other tables) it compares as before.

The record holds weak references only (to the parent graph and to the tables' fact text
columns): it never keeps an old generation's columns alive, and it is dropped with the
graph.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..graph import KnowledgeGraph
from ..tables import GraphTables

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]

#: The fact columns the index derives its per-fact columns from (what an update compares
#: with the previous tables; LiveGraph never writes them in place).
FACT_TEXT_INPUTS = ("subject", "object", "predicate", "object_value", "description")

_NO_ROWS: I64 = np.zeros(0, dtype=np.int64)

#: One weak reference per text input column (None: the table has no such column).
_Refs = tuple[Callable[[], Any] | None, ...]


@dataclass(frozen=True)
class FactRows:
    """How the facts of a graph's tables differ from its parent graph's tables.

    Attributes:
        changed: Rows of the new facts whose text inputs may differ from the parent's
            (changed in place, then appended), sorted; every other row up to the parent's
            count holds the parent's values.
        deleted: Rows of the parent's facts that are gone (sorted); the rows that stay
            keep their order.
        deleted_entities: Rows of the parent's entities that are gone (sorted); the
            entity rows that stay keep their order, and ``deleted`` holds their facts.
    """

    changed: I64
    deleted: I64
    deleted_entities: I64


@dataclass(frozen=True)
class _Record:
    parent: Callable[[], KnowledgeGraph | None]
    before: _Refs
    after: _Refs
    rows: FactRows


_LOCK = threading.Lock()
_MADE: weakref.WeakKeyDictionary[KnowledgeGraph, _Record] = weakref.WeakKeyDictionary()


def _refs(facts: dict[str, Array]) -> _Refs | None:
    """Weak references to the text input columns (None: one cannot be referenced)."""
    out: list[Callable[[], Any] | None] = []
    for c in FACT_TEXT_INPUTS:
        col = facts.get(c)
        if col is None:
            out.append(None)
            continue
        try:
            out.append(weakref.ref(col))
        except TypeError:  # a column type without weak references: no record
            return None
    return tuple(out)


def _same(refs: _Refs, facts: dict[str, Array]) -> bool:
    """Whether ``facts``' text input columns are the very objects ``refs`` point at."""
    for ref, c in zip(refs, FACT_TEXT_INPUTS, strict=True):
        col = facts.get(c)
        if (ref is None) != (col is None):
            return False
        if ref is not None and ref() is not col:
            return False
    return True


def _rows(rows: npt.ArrayLike | None) -> I64:
    if rows is None:
        return _NO_ROWS
    return np.unique(np.asarray(rows, dtype=np.int64))


def note_fact_rows(
    graph: KnowledgeGraph,
    parent: KnowledgeGraph,
    before: GraphTables,
    after: GraphTables,
    *,
    changed: npt.ArrayLike | None = None,
    deleted: npt.ArrayLike | None = None,
    deleted_entities: npt.ArrayLike | None = None,
) -> None:
    """Record that ``graph`` (the graph of ``after``) was made from ``parent`` (the graph of
    ``before``) by changing or appending the fact rows ``changed``, or by deleting the fact
    rows ``deleted`` and entity rows ``deleted_entities`` (rows of ``before``).

    The caller vouches that ``after``'s fact text columns (:data:`FACT_TEXT_INPUTS`) equal
    ``before``'s outside those rows and that neither table's columns are written in place.

    Args:
        graph: The new graph.
        parent: The graph it was made from.
        before, after: Their tables.
        changed: Fact rows of ``after`` changed or appended (any order, repeats allowed).
        deleted: Fact rows of ``before`` deleted.
        deleted_entities: Entity rows of ``before`` deleted (their facts among ``deleted``).
    """
    refs_before, refs_after = _refs(before.facts), _refs(after.facts)
    if refs_before is None or refs_after is None:
        return
    rows = FactRows(_rows(changed), _rows(deleted), _rows(deleted_entities))
    record = _Record(weakref.ref(parent), refs_before, refs_after, rows)
    with _LOCK:
        _MADE[graph] = record


def fact_rows_of(
    graph: KnowledgeGraph,
    parent: KnowledgeGraph,
    before: dict[str, Array],
    after: dict[str, Array],
) -> FactRows | None:
    """The rows recorded for ``graph`` made from ``parent``, when the recorded tables' fact
    text columns are ``before``'s and ``after``'s (the same objects); else None."""
    with _LOCK:
        record = _MADE.get(graph)
    if record is None or record.parent() is not parent:
        return None
    if not (_same(record.before, before) and _same(record.after, after)):
        return None
    return record.rows
