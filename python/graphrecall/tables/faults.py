"""The errors of the table checks and the graph build, made in one place: the message
names the table, row and column, and the same values are the error's fields
(``table``, ``row``, ``column``, ``kind``, ``input``), so the two never disagree.

Kinds are the core's codes (``dangling``, ``invalid_value``, ``length_mismatch``,
``duplicate``, ``cross_tenant``, ``capacity``) plus ``missing`` (a required value, key or
column is absent) and, in load reports, ``dependent`` (a row refers to a refused row).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataError, ParameterError

__all__ = ["column_error", "parameter_error", "plain", "row_error"]


def plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (what an error's ``input`` carries)."""
    return value.item() if isinstance(value, np.generic) else value


def row_error(
    table: str,
    row: int,
    column: str | None,
    problem: str,
    *,
    kind: str,
    input: Any = None,
    ctx: dict[str, Any] | None = None,
) -> DataError:
    """``DataError("{table} row {row}: {problem}")`` located at ``(table, row, column)``."""
    return DataError(
        f"{table} row {row}: {problem}",
        table=table,
        row=int(row),
        column=column,
        kind=kind,
        input=plain(input),
        ctx=ctx,
    )


def column_error(
    table: str,
    column: str | None,
    problem: str,
    *,
    kind: str,
    input: Any = None,
    ctx: dict[str, Any] | None = None,
) -> DataError:
    """``DataError("{table}.{column} {problem}")`` (``"{table} {problem}"`` without a
    column) about a whole column: its shape, dtype or length."""
    where = table if column is None else f"{table}.{column}"
    return DataError(
        f"{where} {problem}", table=table, column=column, kind=kind, input=plain(input), ctx=ctx
    )


def parameter_error(name: str, problem: str, *, input: Any = None) -> ParameterError:
    """``ParameterError("invalid parameter {name}: {problem}")`` naming the parameter."""
    return ParameterError(
        f"invalid parameter {name}: {problem}",
        parameter=name,
        kind="invalid_parameter",
        input=plain(input),
    )
