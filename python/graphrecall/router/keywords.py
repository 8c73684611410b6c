"""The keyword lists and per-type tables of the two routing designs, verbatim from their
sources: seed 002's keywords, graph paths and memory tiers; zeph's (seed 004's) question
words, relationship and temporal patterns."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

from .route import QueryType

__all__ = [
    "CHARACTER_KEYWORDS",
    "EPISODIC_PATTERNS",
    "EPISODIC_WORDS",
    "GOAL_KEYWORDS",
    "GRAPH_PATHS",
    "MISSION_KEYWORDS",
    "QUESTION_WORDS",
    "RELATIONSHIP_PATTERNS",
    "SEARCH_SCOPES",
    "TEMPORAL_KEYWORDS",
    "TIME_WINDOWS",
]

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
