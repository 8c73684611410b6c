"""The ground floor: :class:`GraphTables`, a knowledge graph as columns, with its row rules
(:meth:`GraphTables.check`) and load reports. Depends only on numpy and :mod:`graphrecall.errors`;
every room above (storage adapters, the graph build, the index) reads and writes these tables.

Modules: :mod:`.constants` (table and column names, nulls, default vocabularies),
:mod:`.columns` (column conversion with errors naming table, row and column), :mod:`.ids`
(:class:`IdMap`, :class:`Vocab`), :mod:`.model` (the tables), :mod:`.report`, and the rules
(:mod:`.work`, :mod:`.tenants`, :mod:`.rules`).
"""

from __future__ import annotations

from .constants import (
    COLUMNS,
    DEFAULT_SOURCES,
    DEFAULT_STATUSES,
    MAX_REPORTED_ROWS,
    NULL_SEQUENCE,
    NULL_TIME,
    REQUIRED,
    SOURCES,
    STATUSES,
    TABLES,
    EmbeddingKind,
    OnBad,
)
from .embeddings import EmbeddingSet, to_column
from .ids import IdMap, Vocab
from .model import CheckedTables, GraphTables, check_tables
from .report import BadDataError, BadRow, LoadReport, TableReport

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
    "BadDataError",
    "BadRow",
    "CheckedTables",
    "EmbeddingKind",
    "EmbeddingSet",
    "GraphTables",
    "IdMap",
    "LoadReport",
    "OnBad",
    "TableReport",
    "Vocab",
    "check_tables",
    "to_column",
]
