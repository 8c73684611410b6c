"""Exceptions of the storage layer, defined in :mod:`graphrecall.errors` and named here too."""

from __future__ import annotations

from ..errors import CorruptStoreError, NotAStoreError, SchemaVersionError, StorageError

__all__ = ["CorruptStoreError", "NotAStoreError", "SchemaVersionError", "StorageError"]
