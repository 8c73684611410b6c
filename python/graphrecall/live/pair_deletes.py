"""``LiveGraph.delete_mentions`` and ``delete_aliases``: rows of the two tables without ids,
named by their key pair (a mention by ``(chunk, entity)``, an alias by ``(entity,
alias)``; the tables' check keeps one row per pair, so a pair names one row).

A mention delete is a generation of the current graph: the core rewrites the mention rows
of the touched chunks and entities without the pairs (``CoreGraph.without_mentions``), the
cost those rows; the core holds no aliases, so an alias delete keeps the core. The table
rows go at once (found by a vectorised pass over the key column of the table, then the
pairs among the candidates), in the store's transaction with the SQL deletes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError, GraphRecallError, UnknownIdError
from ..graph import KnowledgeGraph
from ..storage.sqlite import delete_pairs
from ..tables import GraphTables
from .changes import _drop_orphan_embeddings, _keep_rows, _member
from .overlay import MentionDrop, NoChange, with_core

if TYPE_CHECKING:
    from .graph import LiveGraph

Array = npt.NDArray[Any]
#: The arguments of ``LiveGraph._swap``: operation, graph, tables, rows, check, change.
Swap = tuple[str, KnowledgeGraph, GraphTables, dict[str, int], None, MentionDrop | NoChange | None]

#: The key pair of each table without ids.
KEYS = {"mentions": ("chunk", "entity"), "aliases": ("entity", "alias")}


def pairs_of(table: str, items: Iterable[Any]) -> list[tuple[Hashable, Hashable]]:
    """The key pairs of ``items``: mappings with the two key columns, or 2-tuples in the
    key order (DataError for anything else, or a pair named twice)."""
    a, b = KEYS[table]
    op = f"delete_{table}"
    out: list[tuple[Hashable, Hashable]] = []
    for i, item in enumerate(items):
        if isinstance(item, Mapping):
            extra = [k for k in item if k not in (a, b)]
            if a not in item or b not in item or extra:
                raise DataError(
                    f"{op} row {i}: give {a!r} and {b!r} only, got {sorted(map(str, item))!r}",
                    table=table,
                    row=i,
                    kind="invalid_value",
                )
            out.append((item[a], item[b]))
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            out.append((item[0], item[1]))
        else:
            raise DataError(
                f"{op} row {i}: {item!r} is not a ({a}, {b}) pair or a mapping of them",
                table=table,
                row=i,
                kind="invalid_value",
            )
    seen: set[tuple[Hashable, Hashable]] = set()
    for i, p in enumerate(out):
        if p in seen:
            raise DataError(
                f"{op} row {i}: {p!r} is named twice", table=table, row=i, kind="duplicate"
            )
        seen.add(p)
    return out


def _rows(cols: Mapping[str, Array], keys: tuple[str, str], pairs: list[Any]) -> dict[Any, int]:
    """The row of each pair found in ``cols`` (first its key column's candidates)."""
    first = cols[keys[0]]
    wanted = [p[0] for p in pairs]
    ids = np.asarray(wanted, dtype=np.int64) if first.dtype == np.int64 else _object(wanted)
    try:
        cand = np.flatnonzero(_member(first, ids))
    except (TypeError, ValueError, OverflowError):  # an id of another kind: no row
        return {}
    want = set(pairs)
    second = cols[keys[1]]
    out: dict[Any, int] = {}
    for r, x, y in zip(cand.tolist(), first[cand].tolist(), second[cand].tolist(), strict=True):
        if (x, y) in want:
            out[(x, y)] = r
    return out


def _object(values: list[Any]) -> Array:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _missing(table: str, pair: tuple[Any, Any]) -> UnknownIdError:
    if table == "mentions":
        what = f"chunk {pair[0]!r} does not mention entity {pair[1]!r}"
    else:
        what = f"entity {pair[0]!r} has no alias {pair[1]!r}"
    return UnknownIdError(f"delete_{table}: {what}", table=table, input=pair, kind="unknown_id")


def delete_pairs_of(live: LiveGraph, table: str, items: Iterable[Any]) -> Swap:
    """:meth:`LiveGraph.delete_mentions` (``table`` "mentions") or ``delete_aliases``
    ("aliases") on ``live``'s current state (the caller holds the update lock and swaps
    the result in): the rows found, committed to the store, and the arguments of the
    swap."""
    pairs = pairs_of(table, items)
    op = f"delete_{table}"
    with live._writing(fold=False) as cur:  # no statement on facts
        base = live._tables
        cols = base.table(table)
        graph = live._current.graph
        if not pairs:
            return op, with_core(graph, graph.core), base, {table: 0}, None, NoChange()
        # Entities and chunks of the graph (else UnknownIdError: also a deleted one).
        if table == "mentions":
            c_idx = live._rows_of("chunks", [p[0] for p in pairs])
            e_idx = live._rows_of("entities", [p[1] for p in pairs])
        else:
            c_idx = np.zeros(0, dtype=np.int64)
            e_idx = live._rows_of("entities", [p[0] for p in pairs])
        if cols is None:
            raise _missing(table, pairs[0])
        found = _rows(cols, KEYS[table], pairs)
        for p in pairs:
            if p not in found:
                raise _missing(table, p)
        keep = np.ones(base.n_rows(table), dtype=bool)
        keep[list(found.values())] = False
        tables = replace(base, **{table: _keep_rows(cols, keep)})  # type: ignore[arg-type]
        counts = {table: len(pairs)}
        if table == "aliases":
            tables, n_emb = _drop_orphan_embeddings(tables)
            counts["embeddings"] = n_emb
        change: MentionDrop | NoChange | None = NoChange()
        made = None
        if live._tables is live._current.tables:  # no usage counts waiting for a refresh
            if table == "mentions":
                change = MentionDrop(
                    np.ascontiguousarray(c_idx, dtype=np.uint32),
                    np.ascontiguousarray(e_idx, dtype=np.uint32),
                )
                try:
                    made = with_core(graph, change.apply(graph.core))
                except GraphRecallError:
                    made = None  # refused by the core: a rebuild shows the tables
            else:
                made = with_core(graph, graph.core)
        if made is None:
            made, tables = live._rebuilt(tables)
            change = None
        delete_pairs(cur, table, KEYS[table], pairs)
        if table == "aliases":
            cur.execute(
                "DELETE FROM embeddings WHERE kind = 'alias' "
                "AND id NOT IN (SELECT alias FROM aliases)"
            )
    return op, made, tables, counts, None, change
