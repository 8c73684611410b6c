"""The progress lines and the summary of one ``graphrecall index`` run."""

from __future__ import annotations

import resource
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ..tables import LoadReport
from .output import TargetKind
from .source import SourceKind

#: The phases of a run, in order.
PHASES = ("read", "check", "build", "write")


@dataclass
class IndexSummary:
    """What one ``graphrecall index`` run read and wrote.

    Attributes:
        source: The source as given.
        source_kind: How it was read.
        output: The output path.
        target: What was written.
        rows: Rows written per table (``entities``, ``facts``, ``chunks``, ``mentions``,
            ``aliases``) and ``embeddings`` (vectors of every set).
        tenants: Distinct tenants of the written entities and chunks (1 without tenants).
        report: The check's report (what was skipped with ``on_bad="skip"``).
        seconds: Wall time per phase (``read``, ``check``, ``build``, ``write``; a phase
            that did not run is absent).
        peak_mib: The process's peak resident memory, in MiB.
        output_bytes: The size of the output (every file of a snapshot; a SQLite file
            with its journal files).
    """

    source: str
    source_kind: SourceKind
    output: Path
    target: TargetKind
    rows: dict[str, int]
    tenants: int
    report: LoadReport
    seconds: dict[str, float] = field(default_factory=dict)
    peak_mib: float = 0.0
    output_bytes: int = 0

    def __str__(self) -> str:
        skipped = self.report.skipped
        lines = [
            f"indexed {self.source} ({self.source_kind}) -> {self.output} ({self.target}, "
            f"{_size(self.output_bytes)})"
        ]
        for name in ("entities", "facts", "chunks", "mentions", "aliases", "embeddings"):
            lines.append(f"  {name:<11}{self.rows.get(name, 0):>14,}")
        lines.append(f"  {'tenants':<11}{self.tenants:>14,}")
        lines.append(
            "  skipped    "
            + (", ".join(f"{n:,} {table}" for table, n in skipped.items()) if skipped else "none")
        )
        times = ", ".join(f"{p} {s:.2f} s" for p, s in self.seconds.items())
        lines.append(f"  time       {times} (total {sum(self.seconds.values()):.2f} s)")
        lines.append(f"  peak RSS   {self.peak_mib:,.0f} MiB")
        return "\n".join(lines)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024**2:
        return f"{n / 1024:.1f} KiB"
    if n < 1024**3:
        return f"{n / 1024**2:.1f} MiB"
    return f"{n / 1024**3:.2f} GiB"


def _peak_mib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024**2 if sys.platform == "darwin" else kib / 1024


# ---------------------------------------------------------------------------- progress


class _Progress:
    """One line per phase on ``stream``; on a terminal the line shows the elapsed time
    while the phase runs."""

    def __init__(self, stream: TextIO | None, clock: Callable[[], float]):
        self.stream = stream
        self.clock = clock
        self.seconds: dict[str, float] = {}
        self.live = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def say(self, text: str) -> None:
        if self.stream is not None:
            print(text, file=self.stream, flush=True)

    @contextmanager
    def phase(self, name: str) -> Iterator[dict[str, str]]:
        """Time a phase; the caller may set ``note["text"]`` to show after its time."""
        note: dict[str, str] = {}
        start = self.clock()
        stop = threading.Event()
        ticker: threading.Thread | None = None
        if self.live and self.stream is not None:
            stream = self.stream

            def tick() -> None:
                while not stop.wait(0.2):
                    stream.write(f"\r  {name:<6} {self.clock() - start:7.1f} s ...")
                    stream.flush()

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
        elif self.stream is not None:
            self.say(f"  {name:<6} ...")
        try:
            yield note
        finally:
            stop.set()
            if ticker is not None:
                ticker.join()
            elapsed = self.clock() - start
            self.seconds[name] = elapsed
            if self.stream is not None:
                end = f"  {note['text']}" if note.get("text") else ""
                prefix = "\r" if self.live else ""
                self.say(f"{prefix}  {name:<6} {elapsed:7.2f} s{end}" + " " * 8 * self.live)
