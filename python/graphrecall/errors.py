"""Exceptions raised by graphrecall.

Every error is a :class:`GraphRecallError`; each concrete class also subclasses the builtin
that callers already catch (``ValueError`` for bad data or parameters, ``KeyError`` for an
unknown tenant or id), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "CorruptStoreError",
    "DataError",
    "GraphRecallError",
    "NotAStoreError",
    "ParameterError",
    "QueryError",
    "SchemaVersionError",
    "StorageError",
    "UnknownIdError",
    "UnknownTenantError",
]


class GraphRecallError(Exception):
    """Base class of every graphrecall error."""


class DataError(GraphRecallError, ValueError):
    """Input data is unusable: dangling ids, NaN or out-of-range weights, unknown codes,
    rows crossing tenants, duplicate keys or mismatched column lengths. The message names
    the table, row and column of the first offending value."""


class ParameterError(GraphRecallError, ValueError):
    """A query or kernel parameter is out of range (negative hops, damping >= 1, ...)."""


class QueryError(GraphRecallError, ValueError):
    """One query of a batch is malformed (an anchor outside the graph or in another tenant)."""


class UnknownTenantError(GraphRecallError, KeyError):
    """A tenant the graph does not hold."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable.
        return str(self.args[0]) if self.args else ""


class UnknownIdError(GraphRecallError, KeyError):
    """An external entity, fact or chunk id the graph does not hold."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StorageError(GraphRecallError):
    """A store cannot be created, opened, read or written. The message names the path."""


class SchemaVersionError(StorageError):
    """The store was written with a schema or format version this graphrecall does not know."""


class NotAStoreError(StorageError):
    """The path exists but holds no graphrecall store of the kind asked for."""


class CorruptStoreError(StorageError):
    """A store's file is missing, truncated, corrupted or inconsistent."""
