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

import functools
import operator
import re
import string
import types
from collections.abc import Callable, Iterable, Mapping, Sized
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

from .errors import ParameterError

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


# ------------------------------------------------------------------------------------------
# Seed 002's tables and keyword lists, verbatim.

#: Seed 002's ``contains_goal_reference`` keywords.
GOAL_KEYWORDS: Final[tuple[str, ...]] = ("goal", "marathon", "piano", "project", "ambition")
#: Seed 002's ``contains_mission_reference`` keywords.
MISSION_KEYWORDS: Final[tuple[str, ...]] = ("today", "now", "current", "this mission")
#: Seed 002's ``is_temporal_query`` keywords.
TEMPORAL_KEYWORDS: Final[tuple[str, ...]] = ("yesterday", "last week", "recently", "past", "ago")
#: Character names recognised in query text. Seed 002 calls ``contains_character_reference``
#: but never defines it, so by default only a ``character_id`` in the context selects CHARACTER;
#: pass the names of your characters (``character_keywords=``) to recognise them in queries.
CHARACTER_KEYWORDS: Final[tuple[str, ...]] = ()
#: Seed 002's ``extract_time_window``: (phrase, days), first match wins; 7 days otherwise.
TIME_WINDOWS: Final[tuple[tuple[str, int], ...]] = (
    ("yesterday", 1),
    ("last week", 7),
    ("last month", 30),
)
#: Seed 002's graph path per query type.
GRAPH_PATHS: Final[Mapping[QueryType, tuple[str, ...]]] = types.MappingProxyType(
    {
        QueryType.GOAL_SPECIFIC: ("users", "goals", "project_memories"),
        QueryType.MISSION_SPECIFIC: ("users", "missions", "task_memories"),
        QueryType.CHARACTER: ("users", "characters", "conversations"),
        QueryType.RECENT_ACTIVITY: ("users", "missions", "task_memories"),
        QueryType.GENERAL: ("users", "personal_memories"),
    }
)
#: Seed 002's memory tiers to search per query type.
SEARCH_SCOPES: Final[Mapping[QueryType, tuple[str, ...]]] = types.MappingProxyType(
    {
        QueryType.GOAL_SPECIFIC: ("project", "task"),
        QueryType.MISSION_SPECIFIC: ("task",),
        QueryType.CHARACTER: ("character_conversations",),
        QueryType.RECENT_ACTIVITY: ("task",),
        QueryType.GENERAL: ("personal",),
    }
)

# ------------------------------------------------------------------------------------------
# Seed 004's (zeph's) lists, verbatim.

#: zeph's ``QUESTION_WORDS``: a query whose first word is one of these is a question.
QUESTION_WORDS: Final[tuple[str, ...]] = (
    "what",
    "how",
    "why",
    "when",
    "where",
    "who",
    "which",
    "explain",
    "describe",
)
#: zeph's ``RELATIONSHIP_PATTERNS`` (substrings of the ASCII-lowercased query) plus
#: ``"think about"``, so that the issue's own example "What does the user think about X?"
#: routes to GRAPH (zeph's list has only "thinks about", which that sentence lacks).
RELATIONSHIP_PATTERNS: Final[tuple[str, ...]] = (
    "related to",
    "relates to",
    "connection between",
    "relationship",
    "opinion on",
    "thinks about",
    "think about",
    "preference for",
    "history of",
    "know about",
)
#: zeph's later ``TEMPORAL_PATTERNS`` (substrings), used only with ``episodic=True``.
EPISODIC_PATTERNS: Final[tuple[str, ...]] = (
    "yesterday",
    "today",
    "this morning",
    "tonight",
    "last night",
    "last week",
    "this week",
    "past week",
    "last month",
    "this month",
    "past month",
    "when did",
    "remember when",
    "last time",
    "how long ago",
    "few days ago",
    "few hours ago",
    "earlier today",
)
#: zeph's later ``WORD_BOUNDARY_TEMPORAL`` (whole words), used only with ``episodic=True``.
EPISODIC_WORDS: Final[tuple[str, ...]] = ("ago",)

# ------------------------------------------------------------------------------------------
# Recipes.

#: The recipe names a route may name by default, one per source design and PPR.
RECIPES: Final[tuple[str, ...]] = (
    "spreading_activation",  # seed 000
    "chunk_boost",  # seed 001
    "routed_hybrid",  # seed 002
    "hybrid_expand",  # seed 003
    "graph_recall",  # seed 004
    "ppr",
)

RecipeKey: TypeAlias = QueryType | MemoryRoute

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


# ------------------------------------------------------------------------------------------
# The result and the protocol.


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


# ------------------------------------------------------------------------------------------
# Validation and matching helpers.

_ASCII_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_SNAKE_CHARS: Final = frozenset(string.ascii_lowercase + string.digits + "_")
_DIGITS_UNDERSCORE: Final = frozenset(string.digits + "_")


def _check_query(query: object) -> str:
    if not isinstance(query, str):
        raise ParameterError(f"query must be a str, got {type(query).__name__}")
    return query


def _check_context(context: object) -> Mapping[str, Any]:
    if context is None:
        return types.MappingProxyType({})
    if not isinstance(context, Mapping):
        raise ParameterError(f"context must be a Mapping or None, got {type(context).__name__}")
    return context


def _check_keywords(value: object, name: str) -> tuple[str, ...]:
    """Validate a keyword list; returns it lowercased (queries are matched lowercased)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ParameterError(
            f"{name} must be a sequence of strings, got {type(value).__name__}"
            + (" (wrap a single keyword in a tuple)" if isinstance(value, str) else "")
        )
    out: list[str] = []
    for i, kw in enumerate(value):
        if not isinstance(kw, str):
            raise ParameterError(f"{name}[{i}] must be a str, got {type(kw).__name__}")
        if not kw.strip():
            raise ParameterError(f"{name}[{i}] is blank; it would match every query")
        out.append(kw.lower())
    return tuple(out)


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _check_days(value: object, name: str) -> int:
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a positive int, got a bool")
    try:
        days = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ParameterError(f"{name} must be a positive int, got {type(value).__name__}") from None
    if days < 1:
        raise ParameterError(f"{name} must be >= 1, got {days}")
    return days


@functools.lru_cache(maxsize=1024)
def _boundary_pattern(keyword: str) -> re.Pattern[str]:
    """``keyword`` as whole words: no word character either side; inner spaces match runs."""
    body = r"\s+".join(re.escape(part) for part in keyword.split())
    return re.compile(rf"(?<!\w){body}(?!\w)")


def _first_match(lower: str, keywords: tuple[str, ...], word_boundaries: bool) -> str | None:
    """The first keyword (in list order) found in ``lower``, or None."""
    if word_boundaries:
        for kw in keywords:
            if _boundary_pattern(kw).search(lower) is not None:
                return kw
        return None
    for kw in keywords:
        if kw in lower:
            return kw
    return None


def _present(value: object) -> bool:
    """Whether a context id counts as given.

    Seed 002 tests truthiness; here an id counts unless it is None, False or an empty
    string / collection, so the numeric id 0 selects its scope (truthiness would ignore it)
    and array-like ids never raise.
    """
    if value is None or value is False:
        return False
    if isinstance(value, Sized):
        try:
            return len(value) > 0
        except TypeError:  # e.g. a 0-d numpy array
            return True
    return True


def _is_pure_snake_case(word: str) -> bool:
    """zeph's ``is_pure_snake_case``: ASCII lowercase, digits and '_', at least one '_', and
    not only digits and underscores."""
    return (
        "_" in word
        and all(c in _SNAKE_CHARS for c in word)
        and not all(c in _DIGITS_UNDERSCORE for c in word)
    )


# ------------------------------------------------------------------------------------------
# Seed 002's functions.


def contains_goal_reference(
    query: str, keywords: Iterable[str] = GOAL_KEYWORDS, *, word_boundaries: bool = False
) -> bool:
    """Seed 002's ``contains_goal_reference``: does the query mention a goal?

    As in the seed, a keyword matches as a substring of the lowercased query ("project"
    matches "projects" and "projector"). ``word_boundaries=True`` matches whole words only.

    Args:
        query: The query text.
        keywords: Goal keywords (default :data:`GOAL_KEYWORDS`), matched lowercased.
        word_boundaries: Match keywords as whole words instead of substrings.

    Returns:
        True when any keyword occurs in the query.

    Raises:
        ParameterError: ``query`` is not a str, or a keyword is not a non-blank str.
    """
    lower = _check_query(query).lower()
    kws = _check_keywords(keywords, "keywords")
    return _first_match(lower, kws, _check_flag(word_boundaries, "word_boundaries")) is not None


def contains_mission_reference(
    query: str, keywords: Iterable[str] = MISSION_KEYWORDS, *, word_boundaries: bool = False
) -> bool:
    """Seed 002's ``contains_mission_reference``: does the query mention the current mission?

    As in the seed, keywords match as substrings of the lowercased query, so "now" matches
    "know" and "snow". ``word_boundaries=True`` matches whole words only.

    Args:
        query: The query text.
        keywords: Mission keywords (default :data:`MISSION_KEYWORDS`), matched lowercased.
        word_boundaries: Match keywords as whole words instead of substrings.

    Returns:
        True when any keyword occurs in the query.

    Raises:
        ParameterError: ``query`` is not a str, or a keyword is not a non-blank str.
    """
    lower = _check_query(query).lower()
    kws = _check_keywords(keywords, "keywords")
    return _first_match(lower, kws, _check_flag(word_boundaries, "word_boundaries")) is not None


def contains_character_reference(
    query: str, names: Iterable[str] = CHARACTER_KEYWORDS, *, word_boundaries: bool = False
) -> bool:
    """Does the query name a character? (Called but not defined by seed 002.)

    Defined here like the seed's other keyword tests: any of ``names`` as a substring of the
    lowercased query (whole words with ``word_boundaries=True``). With the default empty
    list it is always False, so only a ``character_id`` in the context selects CHARACTER.

    Args:
        query: The query text.
        names: Character names (default :data:`CHARACTER_KEYWORDS`, empty), matched lowercased.
        word_boundaries: Match names as whole words instead of substrings.

    Returns:
        True when any name occurs in the query.

    Raises:
        ParameterError: ``query`` is not a str, or a name is not a non-blank str.
    """
    lower = _check_query(query).lower()
    kws = _check_keywords(names, "names")
    return _first_match(lower, kws, _check_flag(word_boundaries, "word_boundaries")) is not None


def is_temporal_query(
    query: str, keywords: Iterable[str] = TEMPORAL_KEYWORDS, *, word_boundaries: bool = False
) -> bool:
    """Seed 002's ``is_temporal_query``: does the query refer to a time?

    As in the seed, keywords match as substrings of the lowercased query, so "past" matches
    "pasta" and "ago" matches "Chicago"; "last month" is not a keyword (though
    :func:`extract_time_window` knows it). ``word_boundaries=True`` matches whole words only.

    Args:
        query: The query text.
        keywords: Temporal keywords (default :data:`TEMPORAL_KEYWORDS`), matched lowercased.
        word_boundaries: Match keywords as whole words instead of substrings.

    Returns:
        True when any keyword occurs in the query.

    Raises:
        ParameterError: ``query`` is not a str, or a keyword is not a non-blank str.
    """
    lower = _check_query(query).lower()
    kws = _check_keywords(keywords, "keywords")
    return _first_match(lower, kws, _check_flag(word_boundaries, "word_boundaries")) is not None


def _time_window(lower: str, default: int, word_boundaries: bool) -> int:
    for phrase, days in TIME_WINDOWS:
        if _first_match(lower, (phrase,), word_boundaries) is not None:
            return days
    return default


def extract_time_window(query: str, default: int = 7, *, word_boundaries: bool = False) -> int:
    """Seed 002's ``extract_time_window``: the time window of a query, in days.

    "yesterday" -> 1, else "last week" -> 7, else "last month" -> 30, else ``default``
    (the seed's 7, "past week"); substrings of the lowercased query as in the seed.

    Args:
        query: The query text.
        default: Days when no phrase matches (>= 1).
        word_boundaries: Match the phrases as whole words instead of substrings.

    Returns:
        The window in days.

    Raises:
        ParameterError: ``query`` is not a str or ``default`` is not an int >= 1.
    """
    lower = _check_query(query).lower()
    days = _check_days(default, "default")
    return _time_window(lower, days, _check_flag(word_boundaries, "word_boundaries"))


# ------------------------------------------------------------------------------------------
# The router.


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

    The rules and the recipe precedence are listed in the module docstring. The router holds
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
        self.graph_enabled = _check_flag(graph_enabled, "graph_enabled")
        self.episodic = _check_flag(episodic, "episodic")
        self.word_boundaries = _check_flag(word_boundaries, "word_boundaries")
        self.goal_keywords = _check_keywords(goal_keywords, "goal_keywords")
        self.mission_keywords = _check_keywords(mission_keywords, "mission_keywords")
        self.character_keywords = _check_keywords(character_keywords, "character_keywords")
        self.temporal_keywords = _check_keywords(temporal_keywords, "temporal_keywords")
        self.relationship_patterns = _check_keywords(relationship_patterns, "relationship_patterns")
        self.default_days = _check_days(default_days, "default_days")
        self.mission_days = _check_days(mission_days, "mission_days")
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
        query = _check_query(query)
        ctx = _check_context(context)
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
        return _first_match(lower, keywords, self.word_boundaries)

    def _classify(
        self, query: str, ctx: Mapping[str, Any], reasons: list[str]
    ) -> tuple[QueryType, dict[str, Any], bool]:
        """Seed 002's ``route_query``: type, filters, and whether a context id chose it."""
        lower = query.lower()

        goal_id = ctx.get("goal_id")
        if _present(goal_id) or (kw := self._keyword(lower, self.goal_keywords)) is not None:
            explicit = _present(goal_id)
            why = "context goal_id" if explicit else f"goal keyword {kw!r}"
            reasons.append(f"query_type=goal_specific: {why}")
            return QueryType.GOAL_SPECIFIC, {"goal_id": goal_id}, explicit

        mission_id = ctx.get("mission_id")
        if _present(mission_id) or (kw := self._keyword(lower, self.mission_keywords)) is not None:
            explicit = _present(mission_id)
            why = "context mission_id" if explicit else f"mission keyword {kw!r}"
            reasons.append(f"query_type=mission_specific: {why}")
            filters = {"mission_id": mission_id, "days": self.mission_days}
            return QueryType.MISSION_SPECIFIC, filters, explicit

        character_id = ctx.get("character_id")
        if (
            _present(character_id)
            or (kw := self._keyword(lower, self.character_keywords)) is not None
        ):
            explicit = _present(character_id)
            why = "context character_id" if explicit else f"character name {kw!r}"
            reasons.append(f"query_type=character: {why}")
            return QueryType.CHARACTER, {"character_id": character_id}, explicit

        if (kw := self._keyword(lower, self.temporal_keywords)) is not None:
            days = _time_window(lower, self.default_days, self.word_boundaries)
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
        lower = query.translate(_ASCII_LOWER)  # zeph: to_ascii_lowercase

        if self.episodic:
            cue = _first_match(lower, EPISODIC_PATTERNS, False) or _first_match(
                lower, EPISODIC_WORDS, True
            )
            if cue is not None:
                reasons.append(f"memory_route=episodic: temporal cue {cue!r}")
                return MemoryRoute.EPISODIC

        pattern = _first_match(lower, self.relationship_patterns, False)
        if pattern is not None:
            return self._graph(f"relationship pattern {pattern!r}", reasons)
        if self._known_entity is not None and bool(self._known_entity(query)):
            return self._graph("the query names a known entity", reasons)

        words = query.split()
        question = bool(words) and words[0].translate(_ASCII_LOWER) in QUESTION_WORDS
        if not question:
            if "/" in query or "::" in query:
                reasons.append("memory_route=keyword: code path ('/' or '::')")
                return MemoryRoute.KEYWORD
            snake = next((w for w in words if _is_pure_snake_case(w)), None)
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
