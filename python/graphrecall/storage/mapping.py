"""The column mapping of the loaders, :class:`~graphrecall.tables.mapping.ColumnMapping`
(defined with the tables), under the name the loaders have always used."""

from __future__ import annotations

from ..tables.mapping import (
    COLUMNS,
    LIST_COLUMNS,
    MAX_IDENTIFIER_LENGTH,
    PRESETS,
    REQUIRED,
    TABLES,
    TIME_COLUMNS,
    ColumnMapping,
    quote_identifier,
    validate_identifier,
)

__all__ = [
    "COLUMNS",
    "LIST_COLUMNS",
    "MAX_IDENTIFIER_LENGTH",
    "PRESETS",
    "REQUIRED",
    "TABLES",
    "TIME_COLUMNS",
    "ColumnMapping",
    "quote_identifier",
    "validate_identifier",
]
