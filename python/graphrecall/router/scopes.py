"""Seed 002's keyword tests as functions: does a query mention a goal, the current mission,
a character or a time, and which time window it names."""

from __future__ import annotations

from collections.abc import Iterable

from .keywords import (
    CHARACTER_KEYWORDS,
    GOAL_KEYWORDS,
    MISSION_KEYWORDS,
    TEMPORAL_KEYWORDS,
    TIME_WINDOWS,
)
from .matching import check_days, check_flag, check_keywords, check_query, first_match

__all__ = [
    "contains_character_reference",
    "contains_goal_reference",
    "contains_mission_reference",
    "extract_time_window",
    "is_temporal_query",
    "time_window",
]


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
    lower = check_query(query).lower()
    kws = check_keywords(keywords, "keywords")
    return first_match(lower, kws, check_flag(word_boundaries, "word_boundaries")) is not None


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
    lower = check_query(query).lower()
    kws = check_keywords(keywords, "keywords")
    return first_match(lower, kws, check_flag(word_boundaries, "word_boundaries")) is not None


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
    lower = check_query(query).lower()
    kws = check_keywords(names, "names")
    return first_match(lower, kws, check_flag(word_boundaries, "word_boundaries")) is not None


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
    lower = check_query(query).lower()
    kws = check_keywords(keywords, "keywords")
    return first_match(lower, kws, check_flag(word_boundaries, "word_boundaries")) is not None


def time_window(lower: str, default: int, word_boundaries: bool) -> int:
    """:func:`extract_time_window` on a lowercased query and checked arguments."""
    for phrase, days in TIME_WINDOWS:
        if first_match(lower, (phrase,), word_boundaries) is not None:
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
    lower = check_query(query).lower()
    days = check_days(default, "default")
    return time_window(lower, days, check_flag(word_boundaries, "word_boundaries"))
