"""The knowledge graph: :class:`KnowledgeGraph` (built from tables by one encoder,
:func:`~graphrecall.graph.build.encode`) and its prepared queries."""

from __future__ import annotations

from ..tables.constants import DEFAULT_SOURCES, DEFAULT_STATUSES
from .knowledge import KnowledgeGraph
from .params import freeze
from .plans import RecallPlan, SpreadPlan

__all__ = [
    "DEFAULT_SOURCES",
    "DEFAULT_STATUSES",
    "KnowledgeGraph",
    "RecallPlan",
    "SpreadPlan",
    "freeze",
]
