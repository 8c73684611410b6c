"""The rule-based router: seed 002's query scopes, zeph's (seed 004's) memory backends,
and the recipe each route runs."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..errors import ParameterError
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
)
from .matching import (
    ASCII_LOWER,
    check_context,
    check_days,
    check_flag,
    check_keywords,
    check_query,
    first_match,
    is_pure_snake_case,
    present,
)
from .route import MemoryRoute, QueryType, RecipeKey, Route
from .scopes import time_window

__all__ = ["DEFAULT_RECIPES", "RECIPES", "HeuristicRouter", "route_query"]

#: The recipe names a route may name by default, one per source design and PPR.
RECIPES: Final[tuple[str, ...]] = (
    "spreading_activation",  # seed 000
    "chunk_boost",  # seed 001
    "routed_hybrid",  # seed 002
    "hybrid_expand",  # seed 003
    "graph_recall",  # seed 004
    "ppr",
)

#: The default recipe of each scoped query type and each memory route (GENERAL queries take
#: their memory route's recipe). Seed 002's scoped types run seed 002's pipeline
#: (``routed_hybrid``: filters and per-tier search). GRAPH runs seed 004's ``graph_recall``.
#: KEYWORD and HYBRID run seed 003's ``hybrid_expand``, the only design with full-text (BM25)
#: search, merged with vectors. SEMANTIC runs seed 000's ``spreading_activation`` (vector
#: anchors, then the graph). EPISODIC runs ``routed_hybrid``, the design with time windows.
DEFAULT_RECIPES: Final[Mapping[RecipeKey, str]] = types.MappingProxyType(
    {
        QueryType.GOAL_SPECIFIC: "routed_hybrid",
        QueryType.MISSION_SPECIFIC: "routed_hybrid",
        QueryType.CHARACTER: "routed_hybrid",
        QueryType.RECENT_ACTIVITY: "routed_hybrid",
        MemoryRoute.KEYWORD: "hybrid_expand",
        MemoryRoute.SEMANTIC: "spreading_activation",
        MemoryRoute.HYBRID: "hybrid_expand",
        MemoryRoute.GRAPH: "graph_recall",
        MemoryRoute.EPISODIC: "routed_hybrid",
    }
)


def _recipe_key(key: object) -> RecipeKey:
    if isinstance(key, (QueryType, MemoryRoute)):
        member: RecipeKey = key
    elif isinstance(key, str):
        found: RecipeKey | None = None
        for enum in (QueryType, MemoryRoute):
            try:
                found = enum(key)
                break
            except ValueError:
                continue
        if found is None:
            raise ParameterError(
                f"recipes has an unknown key {key!r}; keys are QueryType or MemoryRoute values"
            )
        member = found
    else:
        raise ParameterError(
            f"recipes keys must be QueryType or MemoryRoute, got {type(key).__name__}"
        )
    if member is QueryType.GENERAL:
        raise ParameterError(
            "recipes cannot map QueryType.GENERAL: general queries take their memory route's "
            "recipe; map the MemoryRoute values instead"
        )
    return member


def _check_recipes(recipes: object) -> Mapping[RecipeKey, str]:
    merged: dict[RecipeKey, str] = dict(DEFAULT_RECIPES)
    if recipes is None:
        return types.MappingProxyType(merged)
    if not isinstance(recipes, Mapping):
        raise ParameterError(f"recipes must be a Mapping or None, got {type(recipes).__name__}")
    for key, name in recipes.items():
        member = _recipe_key(key)
        if not isinstance(name, str) or not name.strip():
            raise ParameterError(f"recipes[{key!r}] must be a non-empty recipe name, got {name!r}")
        merged[member] = name
    return types.MappingProxyType(merged)


class HeuristicRouter:
    """Rule-based router combining seed 002's scopes and seed 004's (zeph's) backends.

    The rules and the recipe precedence are listed in :mod:`graphrecall.router`. The router holds
    no mutable state: :meth:`route` is deterministic and safe to call from many threads.

    Seed 002's keyword tests match substrings of the lowercased query, as the seed does, with
    its quirks ("now" matches "know", "past" matches "pasta", "ago" matches "Chicago");
    ``word_boundaries=True`` matches them as whole words instead. zeph's relationship patterns
    are always substrings of the ASCII-lowercased query, as in zeph.

    Args:
        known_entity: Called with the query text; returns True when the query names an entity
            the graph knows (e.g. a name index's recognition). Such queries route to GRAPH
            (issue #1226's "entity-centric" rule). Exceptions it raises propagate.
        graph_enabled: When False, every GRAPH decision becomes HYBRID.
        episodic: Enable zeph's later first rule: temporal cues route to EPISODIC.
        word_boundaries: Match seed 002's keywords as whole words instead of substrings.
        goal_keywords: Seed 002's goal keywords (default :data:`GOAL_KEYWORDS`).
        mission_keywords: Seed 002's mission keywords (default :data:`MISSION_KEYWORDS`).
        character_keywords: Character names recognised in queries (default none).
        temporal_keywords: Seed 002's temporal keywords (default :data:`TEMPORAL_KEYWORDS`).
        relationship_patterns: Substrings that make a GRAPH query (default
            :data:`RELATIONSHIP_PATTERNS`).
        default_days: Time window of a temporal query naming no known window (seed: 7).
        mission_days: ``days`` filter of a mission-specific query (seed: 1, "last 24 hours").
        recipes: Overrides of :data:`DEFAULT_RECIPES`, keyed by :class:`QueryType` (not
            GENERAL) or :class:`MemoryRoute` members or their string values.

    Raises:
        ParameterError: An argument has the wrong type or value.
    """

    def __init__(
        self,
        *,
        known_entity: Callable[[str], bool] | None = None,
        graph_enabled: bool = True,
        episodic: bool = False,
        word_boundaries: bool = False,
        goal_keywords: Iterable[str] = GOAL_KEYWORDS,
        mission_keywords: Iterable[str] = MISSION_KEYWORDS,
        character_keywords: Iterable[str] = CHARACTER_KEYWORDS,
        temporal_keywords: Iterable[str] = TEMPORAL_KEYWORDS,
        relationship_patterns: Iterable[str] = RELATIONSHIP_PATTERNS,
        default_days: int = 7,
        mission_days: int = 1,
        recipes: Mapping[QueryType | MemoryRoute | str, str] | None = None,
    ) -> None:
        if known_entity is not None and not callable(known_entity):
            raise ParameterError(
                f"known_entity must be callable or None, got {type(known_entity).__name__}"
            )
        self._known_entity = known_entity
        self.graph_enabled = check_flag(graph_enabled, "graph_enabled")
        self.episodic = check_flag(episodic, "episodic")
        self.word_boundaries = check_flag(word_boundaries, "word_boundaries")
        self.goal_keywords = check_keywords(goal_keywords, "goal_keywords")
        self.mission_keywords = check_keywords(mission_keywords, "mission_keywords")
        self.character_keywords = check_keywords(character_keywords, "character_keywords")
        self.temporal_keywords = check_keywords(temporal_keywords, "temporal_keywords")
        self.relationship_patterns = check_keywords(relationship_patterns, "relationship_patterns")
        self.default_days = check_days(default_days, "default_days")
        self.mission_days = check_days(mission_days, "mission_days")
        self.recipes: Mapping[RecipeKey, str] = _check_recipes(recipes)

    def __repr__(self) -> str:
        return (
            f"HeuristicRouter(graph_enabled={self.graph_enabled}, episodic={self.episodic}, "
            f"word_boundaries={self.word_boundaries}, "
            f"known_entity={'set' if self._known_entity else None})"
        )

    def route(self, query: str, context: Mapping[str, Any] | None = None) -> Route:
        """Route one query.

        Args:
            query: The query text (any str, empty included).
            context: Caller context; ``goal_id``, ``mission_id`` and ``character_id`` are
                read (an id counts unless None, False or empty). Other keys are ignored.

        Returns:
            The :class:`Route`.

        Raises:
            ParameterError: ``query`` is not a str or ``context`` is not a Mapping.
        """
        query = check_query(query)
        ctx = check_context(context)
        reasons: list[str] = []
        query_type, filters, explicit = self._classify(query, ctx, reasons)
        memory_route = self._memory_route(query, reasons)

        if explicit:
            recipe = self.recipes[query_type]
            why = f"{query_type.value} scope given by the context"
        elif memory_route is MemoryRoute.GRAPH:
            recipe = self.recipes[MemoryRoute.GRAPH]
            why = "graph route"
        elif query_type is not QueryType.GENERAL:
            recipe = self.recipes[query_type]
            why = f"{query_type.value} scope found in the query"
        else:
            recipe = self.recipes[memory_route]
            why = f"general query, {memory_route.value} route"
        reasons.append(f"recipe={recipe}: {why}")

        return Route(
            query_type=query_type,
            graph_path=GRAPH_PATHS[query_type],
            filters=types.MappingProxyType(filters),
            search_scope=SEARCH_SCOPES[query_type],
            memory_route=memory_route,
            recipe=recipe,
            reasons=tuple(reasons),
        )

    def _keyword(self, lower: str, keywords: tuple[str, ...]) -> str | None:
        return first_match(lower, keywords, self.word_boundaries)

    def _classify(
        self, query: str, ctx: Mapping[str, Any], reasons: list[str]
    ) -> tuple[QueryType, dict[str, Any], bool]:
        """Seed 002's ``route_query``: type, filters, and whether a context id chose it."""
        lower = query.lower()

        goal_id = ctx.get("goal_id")
        if present(goal_id) or (kw := self._keyword(lower, self.goal_keywords)) is not None:
            explicit = present(goal_id)
            why = "context goal_id" if explicit else f"goal keyword {kw!r}"
            reasons.append(f"query_type=goal_specific: {why}")
            return QueryType.GOAL_SPECIFIC, {"goal_id": goal_id}, explicit

        mission_id = ctx.get("mission_id")
        if present(mission_id) or (kw := self._keyword(lower, self.mission_keywords)) is not None:
            explicit = present(mission_id)
            why = "context mission_id" if explicit else f"mission keyword {kw!r}"
            reasons.append(f"query_type=mission_specific: {why}")
            filters = {"mission_id": mission_id, "days": self.mission_days}
            return QueryType.MISSION_SPECIFIC, filters, explicit

        character_id = ctx.get("character_id")
        if (
            present(character_id)
            or (kw := self._keyword(lower, self.character_keywords)) is not None
        ):
            explicit = present(character_id)
            why = "context character_id" if explicit else f"character name {kw!r}"
            reasons.append(f"query_type=character: {why}")
            return QueryType.CHARACTER, {"character_id": character_id}, explicit

        if (kw := self._keyword(lower, self.temporal_keywords)) is not None:
            days = time_window(lower, self.default_days, self.word_boundaries)
            reasons.append(f"query_type=recent_activity: temporal keyword {kw!r}, {days} days")
            return QueryType.RECENT_ACTIVITY, {"days": days}, False

        reasons.append("query_type=general: no scope in the context or the query")
        return QueryType.GENERAL, {}, False

    def _graph(self, why: str, reasons: list[str]) -> MemoryRoute:
        if self.graph_enabled:
            reasons.append(f"memory_route=graph: {why}")
            return MemoryRoute.GRAPH
        reasons.append(f"memory_route=hybrid: {why}, but the graph is disabled")
        return MemoryRoute.HYBRID

    def _memory_route(self, query: str, reasons: list[str]) -> MemoryRoute:
        """Seed 004's ``HeuristicRouter::route`` (zeph), plus the issue's entity rule."""
        lower = query.translate(ASCII_LOWER)  # zeph: to_ascii_lowercase

        if self.episodic:
            cue = first_match(lower, EPISODIC_PATTERNS, False) or first_match(
                lower, EPISODIC_WORDS, True
            )
            if cue is not None:
                reasons.append(f"memory_route=episodic: temporal cue {cue!r}")
                return MemoryRoute.EPISODIC

        pattern = first_match(lower, self.relationship_patterns, False)
        if pattern is not None:
            return self._graph(f"relationship pattern {pattern!r}", reasons)
        if self._known_entity is not None and bool(self._known_entity(query)):
            return self._graph("the query names a known entity", reasons)

        words = query.split()
        question = bool(words) and words[0].translate(ASCII_LOWER) in QUESTION_WORDS
        if not question:
            if "/" in query or "::" in query:
                reasons.append("memory_route=keyword: code path ('/' or '::')")
                return MemoryRoute.KEYWORD
            snake = next((w for w in words if is_pure_snake_case(w)), None)
            if snake is not None:
                reasons.append(f"memory_route=keyword: snake_case identifier {snake!r}")
                return MemoryRoute.KEYWORD
            if len(words) <= 3:
                reasons.append(f"memory_route=keyword: short query ({len(words)} words)")
                return MemoryRoute.KEYWORD
        if question:
            reasons.append(f"memory_route=semantic: question word {words[0]!r}")
            return MemoryRoute.SEMANTIC
        if len(words) >= 6:
            reasons.append(f"memory_route=semantic: long query ({len(words)} words)")
            return MemoryRoute.SEMANTIC
        reasons.append(f"memory_route=hybrid: {len(words)} words, no question, no code")
        return MemoryRoute.HYBRID


_DEFAULT_ROUTER: Final = HeuristicRouter()


def route_query(query: str, context: Mapping[str, Any] | None = None) -> Route:
    """Seed 002's ``route_query`` with the default :class:`HeuristicRouter`.

    Args:
        query: The query text.
        context: Caller context (``goal_id``, ``mission_id``, ``character_id``).

    Returns:
        The :class:`Route`.

    Raises:
        ParameterError: ``query`` is not a str or ``context`` is not a Mapping.
    """
    return _DEFAULT_ROUTER.route(query, context)
