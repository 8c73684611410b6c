"""Argument checks and keyword matching shared by the routing functions and the router:
substring or whole-word search of keyword lists in a lowercased query."""

from __future__ import annotations

import functools
import operator
import re
import string
import types
from collections.abc import Iterable, Mapping, Sized
from typing import Any, Final

from ..errors import ParameterError

__all__ = [
    "ASCII_LOWER",
    "check_context",
    "check_days",
    "check_flag",
    "check_keywords",
    "check_query",
    "first_match",
    "is_pure_snake_case",
    "present",
]

#: ``str.translate`` table lowering ASCII letters only (zeph's ``to_ascii_lowercase``).
ASCII_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_SNAKE_CHARS: Final = frozenset(string.ascii_lowercase + string.digits + "_")
_DIGITS_UNDERSCORE: Final = frozenset(string.digits + "_")


def check_query(query: object) -> str:
    """``query`` when it is a str, else :class:`ParameterError`."""
    if not isinstance(query, str):
        raise ParameterError(f"query must be a str, got {type(query).__name__}")
    return query


def check_context(context: object) -> Mapping[str, Any]:
    """``context`` as a Mapping (None: an empty one), else :class:`ParameterError`."""
    if context is None:
        return types.MappingProxyType({})
    if not isinstance(context, Mapping):
        raise ParameterError(f"context must be a Mapping or None, got {type(context).__name__}")
    return context


def check_keywords(value: object, name: str) -> tuple[str, ...]:
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


def check_flag(value: object, name: str) -> bool:
    """``value`` when it is a bool, else :class:`ParameterError` naming ``name``."""
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def check_days(value: object, name: str) -> int:
    """``value`` as an int >= 1 (bools refused), else :class:`ParameterError`."""
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


def first_match(lower: str, keywords: tuple[str, ...], word_boundaries: bool) -> str | None:
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


def present(value: object) -> bool:
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


def is_pure_snake_case(word: str) -> bool:
    """zeph's ``is_pure_snake_case``: ASCII lowercase, digits and '_', at least one '_', and
    not only digits and underscores."""
    return (
        "_" in word
        and all(c in _SNAKE_CHARS for c in word)
        and not all(c in _DIGITS_UNDERSCORE for c in word)
    )
