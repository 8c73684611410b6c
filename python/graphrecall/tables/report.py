"""What a check refused: :class:`LoadReport`, per table :class:`TableReport`, per row
:class:`BadRow`, and :class:`BadDataError` carrying the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DataError, ErrorDetails
from .constants import OnBad


@dataclass(frozen=True)
class BadRow:
    """One refused row: where it is, its id (when it has one) and why.

    Attributes:
        table, row: Where the row is.
        id: The row's id, when its table has ids.
        reason: Why it was refused (the first rule it breaks), as text.
        dependent: Refused only because a row it refers to was refused.
        column: The column of the offending value.
        kind: What went wrong, as the errors' ``kind`` codes (``"dangling"``,
            ``"invalid_value"``, ``"duplicate"``, ``"missing"``, ``"dependent"``, ...).
        input: The offending value, where known.
    """

    table: str
    row: int
    id: Any
    reason: str
    dependent: bool = False
    column: str | None = None
    kind: str | None = None
    input: Any = None

    def details(self) -> ErrorDetails:
        """The row as one entry of :meth:`BadDataError.errors`."""
        ctx: dict[str, Any] = {"reason": self.reason, "dependent": self.dependent}
        if self.id is not None:
            ctx["id"] = self.id
        return {
            "type": self.kind,
            "loc": (self.table, self.row, self.column),
            "msg": f"{self.table} row {self.row}: {self.reason}",
            "input": self.input,
            "ctx": ctx,
        }

    def __str__(self) -> str:
        where = f"row {self.row}" + ("" if self.id is None else f" (id {self.id!r})")
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class TableReport:
    """What a check refused in one table.

    Attributes:
        table: The table (``embeddings[i]`` for the i-th embedding set).
        rows: Rows given.
        bad: Rows refused by a rule.
        dependent: Rows refused only because a row they refer to was refused.
        first: The first offending rows (at most :data:`MAX_REPORTED_ROWS`), by row.
    """

    table: str
    rows: int
    bad: int
    dependent: int
    first: tuple[BadRow, ...] = ()

    @property
    def refused(self) -> int:
        return self.bad + self.dependent


@dataclass(frozen=True)
class LoadReport:
    """What a load refused or skipped, per table.

    ``ok`` is True when every row passed. With ``on_bad="skip"`` the refused rows were
    dropped (``skipped`` counts them per table); with ``"raise"`` the load was refused.
    ``str(report)`` is a readable multi-line report; ``operation`` names what was
    checked in it (``"load"``, ``"add"``, ``"update"``).
    """

    tables: tuple[TableReport, ...]
    on_bad: OnBad = "raise"
    operation: str = "load"

    @property
    def ok(self) -> bool:
        return all(t.refused == 0 for t in self.tables)

    @property
    def refused(self) -> dict[str, int]:
        """Bad rows (by a rule or dependent) per table, tables without any left out."""
        return {t.table: t.refused for t in self.tables if t.refused}

    @property
    def skipped(self) -> dict[str, int]:
        """Rows dropped per table (empty unless ``on_bad="skip"``)."""
        return self.refused if self.on_bad == "skip" else {}

    def table(self, name: str) -> TableReport:
        """The report of one table (KeyError if the check saw no such table)."""
        for t in self.tables:
            if t.table == name:
                return t
        raise KeyError(name)

    def __str__(self) -> str:
        sizes = ", ".join(f"{t.rows} {t.table}" for t in self.tables)
        if self.ok:
            return f"graphrecall load report: every row passed ({sizes})"
        total = sum(t.refused for t in self.tables)
        n_tables = sum(1 for t in self.tables if t.refused)
        if self.on_bad == "skip":
            verdict = "skipped them"
        elif self.operation == "update":
            verdict = "refused the update"
        else:
            verdict = f'refused the {self.operation}; pass on_bad="skip" to drop them'

        lines = [
            f"graphrecall load report: {total} bad row{'s' * (total != 1)} in {n_tables} "
            f"table{'s' * (n_tables != 1)} ({verdict})"
        ]
        for t in self.tables:
            if not t.refused:
                continue
            parts = [f"{t.bad} by a rule"] if t.bad else []
            if t.dependent:
                parts.append(f"{t.dependent} depending on refused rows")
            lines.append(f"  {t.table}: {t.refused} of {t.rows} rows ({', '.join(parts)})")
            lines.extend(f"    {r}" for r in t.first)
            if t.refused > len(t.first):
                lines.append(f"    ... and {t.refused - len(t.first)} more")
        return "\n".join(lines)


class BadDataError(DataError):
    """A load refused because of bad rows; ``report`` holds the :class:`LoadReport` and the
    message is its text (the first offending rows of each table and the count of all).

    ``table`` / ``row`` / ``column`` / ``kind`` / ``input`` are those of the first refused
    row; :meth:`errors` gives one entry per refused row the report lists (the first
    :data:`~graphrecall.tables.MAX_REPORTED_ROWS` of each table)."""

    def __init__(self, report: LoadReport):
        rows = [r for t in report.tables for r in t.first] if isinstance(report, LoadReport) else []
        first = rows[0] if rows else None
        super().__init__(
            str(report),
            table=None if first is None else first.table,
            row=None if first is None else first.row,
            column=None if first is None else first.column,
            kind=None if first is None else first.kind,
            input=None if first is None else first.input,
            ctx={"refused": report.refused} if isinstance(report, LoadReport) else None,
        )
        self.report = report

    def errors(self) -> list[ErrorDetails]:
        """One entry per refused row of the report (see :meth:`BadRow.details`)."""
        if not isinstance(self.report, LoadReport):
            return super().errors()
        return [r.details() for t in self.report.tables for r in t.first]
