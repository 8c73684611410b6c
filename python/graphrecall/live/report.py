"""The records a :class:`~graphrecall.live.LiveGraph` hands out: one consistent state and what
one update did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..graph import KnowledgeGraph
from ..tables import GraphTables, LoadReport


@dataclass(frozen=True)
class GraphVersion:
    """One consistent state: the graph, the checked tables it was built from (names,
    literal values, chunk texts for narratives) and its version number."""

    version: int
    graph: KnowledgeGraph
    tables: GraphTables

    @property
    def dead_facts(self) -> npt.NDArray[np.int64]:
        """Rows of the facts deleted since the last compaction (sorted): still rows of
        ``tables`` (so that graph index == table row), reached by no query and no id."""
        return np.asarray(self.graph.core.dead_facts(), dtype=np.int64)

    @property
    def dead_entities(self) -> npt.NDArray[np.int64]:
        """Rows of the entities deleted since the last new base (sorted): still rows of
        ``tables`` (with their mentions and aliases), reached by no query and no id."""
        return np.asarray(self.graph.core.dead_entities(), dtype=np.int64)

    @property
    def dead_chunks(self) -> npt.NDArray[np.int64]:
        """Rows of the chunks deleted since the last new base (sorted): still rows of
        ``tables`` (with their mentions), reached by no query and no id."""
        return np.asarray(self.graph.core.dead_chunks(), dtype=np.int64)


@dataclass(frozen=True)
class UpdateReport:
    """What one committed update did.

    Attributes:
        operation: The method (``"add_facts"``, ``"delete_entities"``...).
        version: The graph version that shows the change.
        rows: Rows written per table: added, updated or deleted, cascades included
            (``entities.primary_chunk`` counts entities whose primary chunk was cleared).
        check: For adds, what the check refused or skipped (its tables and rows are the
            new rows).
    """

    operation: str
    version: int
    rows: Mapping[str, int] = field(default_factory=dict)
    check: LoadReport | None = None

    def __str__(self) -> str:
        parts = ", ".join(f"{t}: {n}" for t, n in self.rows.items()) or "no rows"
        text = f"{self.operation} -> version {self.version} ({parts})"
        if self.check is not None and not self.check.ok:
            text += "\n" + str(self.check)
        return text
