"""Exceptions of the storage layer (all :class:`graphrecall.GraphRecallError`)."""

from __future__ import annotations

from ..errors import GraphRecallError

__all__ = ["CorruptStoreError", "NotAStoreError", "SchemaVersionError", "StorageError"]


class StorageError(GraphRecallError):
    """A store cannot be created, opened, read or written. The message names the path."""


class SchemaVersionError(StorageError):
    """The store was written with a schema version this graphrecall does not know."""


class NotAStoreError(StorageError):
    """The file is a database, but not a graphrecall store (no ``meta`` table)."""


class CorruptStoreError(StorageError):
    """The file is not a SQLite database, or is truncated or corrupted."""
