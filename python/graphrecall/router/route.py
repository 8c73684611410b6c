"""The routing result and protocol: the two designs' query types and memory backends, the
:class:`Route` a router returns, and the :class:`Router` protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = ["MemoryRoute", "QueryType", "RecipeKey", "Route", "Router"]


class QueryType(str, Enum):
    """Seed 002's query context types (its ``QueryContext`` enum, same values)."""

    GOAL_SPECIFIC = "goal_specific"
    MISSION_SPECIFIC = "mission_specific"
    GENERAL = "general"
    CHARACTER = "character"
    RECENT_ACTIVITY = "recent_activity"


class MemoryRoute(str, Enum):
    """Seed 004's memory backends (zeph's ``MemoryRoute``).

    ``KEYWORD``: full-text search only. ``SEMANTIC``: vector search only. ``HYBRID``: both, fused.
    ``GRAPH``: graph traversal (issue #1226). ``EPISODIC``: full-text search within a time range
    (added to zeph after #1226; produced only by ``HeuristicRouter(episodic=True)``).
    """

    KEYWORD = "keyword"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"
    GRAPH = "graph"
    EPISODIC = "episodic"


#: What a router's recipe table is keyed by: a scoped query type or a memory route.
RecipeKey: TypeAlias = QueryType | MemoryRoute


@dataclass(frozen=True)
class Route:
    """Where and how to search for one query.

    Attributes:
        query_type: Seed 002's query type.
        graph_path: Seed 002's graph path for that type, e.g.
            ``("users", "goals", "project_memories")``.
        filters: Seed 002's metadata filters (read-only): ``goal_id`` / ``mission_id`` /
            ``character_id`` taken from the context (``None`` when the type was chosen by a
            keyword and the context has no id, as in the seed), ``days`` for a time window.
        search_scope: Seed 002's memory tiers to search, e.g. ``("project", "task")``.
        memory_route: Seed 004's backend choice.
        recipe: Name of the graphrecall recipe that should run the query.
        reasons: One line per decision: which rule fired and on what (for explain / logs).
    """

    query_type: QueryType
    graph_path: tuple[str, ...]
    filters: Mapping[str, Any]
    search_scope: tuple[str, ...]
    memory_route: MemoryRoute
    recipe: str
    reasons: tuple[str, ...]

    def __hash__(self) -> int:
        # ``filters`` may hold unhashable context values; equal routes still hash equal.
        return hash(
            (
                self.query_type,
                self.graph_path,
                self.search_scope,
                self.memory_route,
                self.recipe,
                self.reasons,
            )
        )

    def as_dict(self) -> dict[str, Any]:
        """The route as plain data: seed 002's return dict plus the other fields.

        Returns:
            ``{"query_type", "graph_path", "filters", "search_scope", "memory_route",
            "recipe", "reasons"}``; enums as their string values, sequences as lists.
        """
        return {
            "query_type": self.query_type.value,
            "graph_path": list(self.graph_path),
            "filters": dict(self.filters),
            "search_scope": list(self.search_scope),
            "memory_route": self.memory_route.value,
            "recipe": self.recipe,
            "reasons": list(self.reasons),
        }


@runtime_checkable
class Router(Protocol):
    """Anything that routes a query: ``route(query, context) -> Route``."""

    def route(self, query: str, context: Mapping[str, Any] | None = None) -> Route:
        """Route one query.

        Args:
            query: The query text.
            context: Caller context (``goal_id``, ``mission_id``, ``character_id``, ...).

        Returns:
            The :class:`Route`.
        """
        ...
