"""Exceptions raised by graphrecall.

Every error is a :class:`GraphRecallError`; each concrete class also subclasses the builtin
that callers already catch (``ValueError`` for bad data or parameters, ``KeyError`` for an
unknown tenant or id), so ``except ValueError`` keeps working.

Errors carry where and what went wrong as attributes, so callers act on fields instead of
parsing messages: ``table``, ``row``, ``column``, ``kind``, ``input`` (the offending value
where known), ``parameter`` (the argument a :class:`ParameterError` names) and ``ctx``
(the rest of what the core knows, e.g. ``expected`` and ``got`` of a length mismatch).
Fields that do not apply are ``None``. :meth:`GraphRecallError.errors` gives the same as a
list of dicts, in the shape of pydantic-core's ``ValidationError.errors()``. Errors raised
in Python take the same keyword fields::

    raise DataError("facts row 3: subject = 'zz' refers to no entity",
                    table="facts", row=3, column="subject", kind="dangling", input="zz")

Kinds are the core's (``length_mismatch``, ``dangling``, ``invalid_value``,
``cross_tenant``, ``duplicate``, ``invalid_parameter``, ``unknown_tenant``,
``invalid_query``, ``corrupt``, ``capacity``, ``out_of_memory``) and those of the Python
checks: ``missing`` (a required value, key or column is absent), ``unknown_id`` (a
query-time id the graph does not hold) and, for the rows of a refused load, ``dependent``
(a row refers to a refused row). A refused load (``BadDataError``) lists one entry per
reported row in ``errors()``.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "CorruptStoreError",
    "DataError",
    "ErrorDetails",
    "GraphRecallError",
    "NotAStoreError",
    "OutOfMemoryError",
    "ParameterError",
    "QueryError",
    "SchemaVersionError",
    "StorageError",
    "UnknownIdError",
    "UnknownTenantError",
]


class ErrorDetails(TypedDict):
    """One entry of :meth:`GraphRecallError.errors`."""

    type: str | None
    loc: tuple[str | None, int | None, str | None]
    msg: str
    input: Any
    ctx: dict[str, Any]


class GraphRecallError(Exception):
    """Base class of every graphrecall error.

    Args:
        *args: The message (``str(err)``), as for any exception.
        table: The table of the offending value (``"facts"``, ``"mentions"``, ...).
        row: Its row in that table (for a batch of queries, the query's position).
        column: Its column.
        kind: What went wrong, as a stable snake_case code (``"dangling"``,
            ``"invalid_value"``, ``"length_mismatch"``, ``"invalid_parameter"``, ...).
        input: The offending value, where known.
        parameter: The argument at fault, for parameter errors.
        ctx: Further facts about the error (``expected``, ``got``, ``limit``, ...).
    """

    table: str | None
    row: int | None
    column: str | None
    kind: str | None
    input: Any
    parameter: str | None
    ctx: dict[str, Any]

    def __init__(
        self,
        *args: object,
        table: str | None = None,
        row: int | None = None,
        column: str | None = None,
        kind: str | None = None,
        input: Any = None,
        parameter: str | None = None,
        ctx: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(*args)
        self.table = table
        self.row = row
        self.column = column
        self.kind = kind
        self.input = input
        self.parameter = parameter
        self.ctx = dict(ctx) if ctx else {}

    @property
    def loc(self) -> tuple[str | None, int | None, str | None]:
        """Where the error is: ``(table, row, column)``."""
        return (self.table, self.row, self.column)

    def errors(self) -> list[ErrorDetails]:
        """The error as a one-entry list of dicts, like pydantic-core's
        ``ValidationError.errors()``: ``type`` (the kind), ``loc`` (table, row, column),
        ``msg``, ``input`` and ``ctx`` (with ``parameter`` for a parameter error)."""
        ctx = dict(self.ctx)
        if self.parameter is not None:
            ctx.setdefault("parameter", self.parameter)
        return [
            {
                "type": self.kind,
                "loc": self.loc,
                "msg": str(self),
                "input": self.input,
                "ctx": ctx,
            }
        ]


class DataError(GraphRecallError, ValueError):
    """Input data is unusable: dangling ids, NaN or out-of-range weights, unknown codes,
    rows crossing tenants, duplicate keys or mismatched column lengths. The message and the
    ``table`` / ``row`` / ``column`` fields name the first offending value."""


class ParameterError(GraphRecallError, ValueError):
    """A query or kernel parameter is out of range (negative hops, damping >= 1, ...);
    ``parameter`` names it."""


class QueryError(GraphRecallError, ValueError):
    """One query of a batch is malformed (an anchor outside the graph or in another tenant);
    ``row`` is the query's position in the batch."""


class OutOfMemoryError(GraphRecallError, MemoryError):
    """An array the input needs cannot be allocated (the machine's memory or the process's
    limit is exhausted); ``ctx["what"]`` names the array and ``ctx["bytes"]`` its size. A
    ``MemoryError``, so ``except MemoryError`` catches it."""


class UnknownTenantError(GraphRecallError, KeyError):
    """A tenant the graph does not hold; ``input`` is the tenant."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable.
        return str(self.args[0]) if self.args else ""


class UnknownIdError(GraphRecallError, KeyError):
    """An external entity, fact or chunk id the graph does not hold; ``input`` is the id
    where known."""

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
