"""The vocabulary of the tables: table and column names, nulls and the default status /
source names, shared by every room above."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

__all__ = [
    "COLUMNS",
    "DEFAULT_SOURCES",
    "DEFAULT_STATUSES",
    "MAX_REPORTED_ROWS",
    "NULL_SEQUENCE",
    "NULL_TIME",
    "REQUIRED",
    "SOURCES",
    "STATUSES",
    "TABLES",
    "EmbeddingKind",
    "OnBad",
]

#: A null timestamp ("age unknown"): the smallest ``int64``, which is also numpy's ``NaT``.
NULL_TIME: Final[int] = -(2**63)
#: Fact source names by code (seed 000).
SOURCES: Final[tuple[str, ...]] = ("user_edit", "file", "system", "conversation")
#: Fact status names by code (seed 000).
STATUSES: Final[tuple[str, ...]] = ("staged", "confirmed", "rejected", "archived")
#: Fact statuses of the source designs, by code.
DEFAULT_STATUSES: tuple[str, ...] = STATUSES
#: Fact sources of the source designs, by code.
DEFAULT_SOURCES: tuple[str, ...] = SOURCES

OnBad = Literal["raise", "skip"]
EmbeddingKind = Literal["entity", "chunk", "alias"]

#: The tables, in dependency order (a table refers only to tables before it).
TABLES: tuple[str, ...] = ("chunks", "entities", "facts", "mentions", "aliases")

#: The columns of each table.
COLUMNS: Mapping[str, tuple[str, ...]] = {
    "entities": ("id", "tenant", "name", "type", "description", "primary_chunk", "created_at"),
    "facts": (
        "id",
        "subject",
        "object",
        "predicate",
        "object_value",
        "description",
        "confidence",
        "strength",
        "status",
        "source",
        "access_count",
        "last_accessed",
        "created_at",
        "valid_from",
        "valid_to",
        "sequence",
    ),
    "chunks": (
        "id",
        "tenant",
        "text",
        "scope",
        "category",
        "tags",
        "metadata",
        "created_at",
        "expires_at",
        "confidence",
        "access_count",
        "last_accessed",
    ),
    "mentions": ("chunk", "entity", "count"),
    "aliases": ("entity", "alias"),
}

#: The columns a table cannot be without.
REQUIRED: Mapping[str, tuple[str, ...]] = {
    "entities": ("id",),
    "facts": ("subject",),
    "chunks": ("id",),
    "mentions": ("chunk", "entity"),
    "aliases": ("entity", "alias"),
}

#: How many offending rows a report names per table.
MAX_REPORTED_ROWS = 10
#: The null of ``facts.sequence`` (as in the core).
NULL_SEQUENCE = -(2**63)
