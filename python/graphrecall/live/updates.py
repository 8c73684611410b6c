"""``LiveGraph.update_facts``: changed columns of existing facts, checked on their own
rows and written in place when they can be (else the whole facts table is checked)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from ..graph import KnowledgeGraph
from ..index.graph_index import FACT_TEXT_INPUTS
from ..tables import GraphTables
from .changes import changed_last, put_back, record_changes
from .overlay import FactChange
from .rows import Undo, check_change, checked_alone, commit_fact_updates, write_rows

if TYPE_CHECKING:
    from .graph import LiveGraph

Array = npt.NDArray[Any]

# The columns the retrieval index derives text from are never written in place, so an
# index updated from the previous tables (``GraphIndex.build(previous=...)``) sees them change.
TEXT_COLUMNS = frozenset(FACT_TEXT_INPUTS)


def update_facts(
    live: LiveGraph, recs: list[Mapping[str, Any]], undo: Undo
) -> tuple[str, KnowledgeGraph, GraphTables, dict[str, int], None, FactChange | None]:
    """Check and commit an update (the caller holds the update lock and swaps the graph
    in once this returns, after the commit); rows written in place go to ``undo``."""
    with live._writing() as cur:
        base = live._tables
        facts = base.facts
        if "id" not in facts:  # ids are the rows
            facts = {**facts, "id": np.arange(base.n_rows("facts"), dtype=np.int64)}
        ids, names = record_changes("facts", recs, "update_facts")
        rows = live._rows_of("facts", ids)
        if len(np.unique(rows)) != len(rows):
            raise DataError("update_facts: a fact is named twice in one update")
        n = base.n_rows("facts")
        fast = None
        if names <= set(facts):
            changed: dict[str, Array] = {}
            for col, arr in facts.items():
                part = arr[rows]
                if col in names:
                    part = part.astype(object)
                    for i, r in enumerate(recs):
                        if col in r:
                            part[i] = r[col]
                changed[col] = part
            g, op = live._current.graph, "update_facts"
            in_place = live.write_in_place and not names & TEXT_COLUMNS
            patch: dict[str, Array] | None = {} if in_place else None
            fast = checked_alone(base, g, changed, len(rows), op, rows, columns=names, patch=patch)
        if fast is not None:
            # With write_in_place the changed rows are written into the committed
            # columns (undone if the commit fails); otherwise checked_alone copied them.
            tables = replace(base, facts=fast[0])
            new_facts = tables.facts
            if patch is not None:
                undo.extend(write_rows(new_facts, rows, patch))
            graph, change, shown = live._generation(tables, np.sort(rows))
            commit_fact_updates(cur, tables, rows, names, new_facts)
            return "update_facts", graph, shown, {"facts": len(rows)}, None, change
        # Only the updated rows are re-checked as "new": moved to the end.
        moved, order = changed_last(facts, base, "facts", rows, recs, names)
        checked, _ = check_change(base, "facts", moved, n - len(rows), "raise", "update_facts")
        new_facts = put_back(checked.facts, order)
        tables = replace(base, facts=new_facts)
        graph, change, shown = live._generation(tables, np.sort(rows))

        commit_fact_updates(cur, tables, rows, names, new_facts)
    return "update_facts", graph, shown, {"facts": len(rows)}, None, change
