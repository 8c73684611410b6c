"""Query routing: which memories a query searches and which recipe runs it.

Two source designs route queries, and a :class:`Route` carries both decisions:

* **Seed 002** ("Graph Routing Strategy", companion-app memory) sorts a query into a
  :class:`QueryType` by its context ids and keywords, and gives each type a graph path, metadata
  filters and the memory tiers to search (:attr:`Route.query_type`, :attr:`Route.graph_path`,
  :attr:`Route.filters`, :attr:`Route.search_scope`). Its rules, in the seed's order::

      context goal_id      or a goal keyword     -> GOAL_SPECIFIC    {"goal_id": ...}
      context mission_id   or a mission keyword  -> MISSION_SPECIFIC {"mission_id": ..., "days": 1}
      context character_id or a character name   -> CHARACTER        {"character_id": ...}
      a temporal keyword                          -> RECENT_ACTIVITY  {"days": extract_time_window}
      anything else                               -> GENERAL          {}

* **Seed 004** (zeph, issue #1226) picks a backend, a :class:`MemoryRoute`. Its
  ``HeuristicRouter`` (``crates/zeph-memory/src/router.rs`` of bug-ops/zeph as of that issue)
  is reproduced rule for rule, in its order::

      a relationship pattern ("related to", "opinion on", "know about", ...)  -> GRAPH
      a known entity name in the query (the issue's rule; zeph's code lacks it) -> GRAPH
      '/' or '::' in the query, and no leading question word                  -> KEYWORD
      a pure snake_case word, and no leading question word                    -> KEYWORD
      at most 3 words, and no leading question word                           -> KEYWORD
      a leading question word, or at least 6 words                            -> SEMANTIC
      anything else                                                           -> HYBRID

  When the graph is disabled (``graph_enabled=False``) a GRAPH decision becomes HYBRID, as the
  issue says callers treat it. ``episodic=True`` adds zeph's later first rule (temporal cues such
  as "yesterday" or "last week" -> EPISODIC, with "ago" matched as a whole word).

The recipe (:attr:`Route.recipe`) is then chosen by this precedence:

1. a seed-002 type selected by an explicit context id (``goal_id``, ``mission_id``,
   ``character_id``): the caller has scoped the search, so ``recipes[query_type]``;
2. memory route GRAPH: ``recipes[MemoryRoute.GRAPH]`` (``"graph_recall"``);
3. any other seed-002 type but GENERAL (selected by keywords): ``recipes[query_type]``;
4. GENERAL: ``recipes[memory_route]``.

See :data:`DEFAULT_RECIPES` for the default mapping; ``HeuristicRouter(recipes=...)`` overrides
any part of it.

:class:`GraphRAG` routes with :class:`IndexRouter` (:mod:`.data`): it keeps the seed router's
decision but picks the recipe by what the tenant's data holds as well (tiers, facts, dates,
passages linked to a graph), so passage questions run the strongest passage recipe.

Modules: :mod:`.route` (the result types and the :class:`Router` protocol), :mod:`.keywords`
(both designs' keyword lists and tables), :mod:`.scopes` (seed 002's keyword tests),
:mod:`.matching` (argument checks, keyword matching), :mod:`.heuristic` (the seeds' router)
and :mod:`.data` (the data-aware router).

Example:
    >>> from graphrecall.router import HeuristicRouter
    >>> r = HeuristicRouter().route(
    ...     "How do I usually feel about running?", {"goal_id": "goal_marathon_123"}
    ... )
    >>> r.query_type.value, r.search_scope, dict(r.filters), r.recipe
    ('goal_specific', ('project', 'task'), {'goal_id': 'goal_marathon_123'}, 'routed_hybrid')
    >>> HeuristicRouter().route("How is Rust related to this project?").memory_route.value
    'graph'
"""

from __future__ import annotations

from .data import IndexProfile, IndexRouter
from .heuristic import DEFAULT_RECIPES, RECIPES, HeuristicRouter, route_query
from .keywords import (
    CHARACTER_KEYWORDS,
    EPISODIC_PATTERNS,
    EPISODIC_WORDS,
    GOAL_KEYWORDS,
    GRAPH_PATHS,
    MISSION_KEYWORDS,
    QUESTION_WORDS,
    RELATIONSHIP_PATTERNS,
    SEARCH_SCOPES,
    TEMPORAL_KEYWORDS,
    TIME_WINDOWS,
)
from .route import MemoryRoute, QueryType, Route, Router
from .scopes import (
    contains_character_reference,
    contains_goal_reference,
    contains_mission_reference,
    extract_time_window,
    is_temporal_query,
)

__all__ = [
    "CHARACTER_KEYWORDS",
    "DEFAULT_RECIPES",
    "EPISODIC_PATTERNS",
    "EPISODIC_WORDS",
    "GOAL_KEYWORDS",
    "GRAPH_PATHS",
    "MISSION_KEYWORDS",
    "QUESTION_WORDS",
    "RECIPES",
    "RELATIONSHIP_PATTERNS",
    "SEARCH_SCOPES",
    "TEMPORAL_KEYWORDS",
    "TIME_WINDOWS",
    "HeuristicRouter",
    "IndexProfile",
    "IndexRouter",
    "MemoryRoute",
    "QueryType",
    "Route",
    "Router",
    "contains_character_reference",
    "contains_goal_reference",
    "contains_mission_reference",
    "extract_time_window",
    "is_temporal_query",
    "route_query",
]
