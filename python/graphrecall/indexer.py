"""``graphrecall index``: read a store, check it, and write a snapshot or a SQLite store.

::

    graphrecall index SOURCE OUT [--from sqlite|duckdb|parquet|postgres]
                      [--to snapshot|sqlite|index] [--tenant T] [--on-bad raise|skip]
                      [--mapping PRESET|JSON|FILE] [--overwrite] [--no-embedder]

``SOURCE`` is a graphrecall SQLite store, a DuckDB file, a directory of ``<table>.parquet``
files, or a PostgreSQL conninfo / ``postgresql://`` URI; without ``--from`` its kind is
told from what it is (a directory of Parquet files, the file's SQLite or DuckDB header,
a URI or ``key=value`` conninfo). It is read with the storage loaders, every row is checked
(:meth:`~graphrecall.tables.GraphTables.check`), and the result is written to
``OUT``: a snapshot directory (:func:`~graphrecall.storage.snapshot.save_snapshot`, the
default; the graph is built first), a SQLite store
(:meth:`~graphrecall.storage.sqlite.SQLiteStore.write`), or a saved retrieval index
(:func:`~graphrecall.index_io.save_index`: tables, vectors and HNSW indexes, what
``graphrecall query`` and :meth:`GraphRAG.load` start from without embedding or building
anything; texts without stored vectors are embedded with the default model unless
``--no-embedder``). The output is written beside
``OUT`` and renamed into place, so a failed run leaves no half-written output; an existing
``OUT`` is replaced only with ``--overwrite``, and only when it is a snapshot or a
graphrecall store (never another file or directory).

Progress (the phases read, check, build, write, each with its time) goes to stderr, the
summary (rows per table, tenants, skipped rows, time per phase, peak memory, output size)
to stdout.

Exit codes:

* 0: the output was written (with ``--on-bad skip``, perhaps without some rows: the summary
  and the report on stderr say which);
* 1: the source or the output could not be used (no such file, not a store, a missing
  table or column, an unknown tenant, an output in the way, a write that failed);
* 2: bad rows were refused (the default ``--on-bad raise``; the report on stderr names
  them and nothing was written). argparse also exits with 2 on a malformed command line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO, get_args

import numpy as np
import numpy.typing as npt

from .errors import GraphRecallError, ParameterError, StorageError, UnknownTenantError
from .tables import TABLES, BadDataError, EmbeddingSet, GraphTables, LoadReport, OnBad
from .tables.mapping import PRESETS, ColumnMapping

__all__ = [
    "EXIT_BAD_DATA",
    "EXIT_FAILED",
    "EXIT_OK",
    "IndexSummary",
    "SourceKind",
    "TargetKind",
    "add_arguments",
    "detect_source",
    "filter_tenant",
    "index",
    "parse_mapping",
    "parse_tenant",
    "run",
]

SourceKind = Literal["sqlite", "duckdb", "parquet", "postgres"]
TargetKind = Literal["snapshot", "sqlite", "index"]

#: The output was written.
EXIT_OK = 0
#: The source or the output could not be used.
EXIT_FAILED = 1
#: Bad rows were refused (``--on-bad raise``); nothing was written.
EXIT_BAD_DATA = 2

PHASES = ("read", "check", "build", "write")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at offset 8 of a DuckDB file
_URI = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
_CONNINFO = re.compile(r"^\s*\w+\s*=")
_INT = re.compile(r"^[+-]?\d+$")


# ---------------------------------------------------------------------------- summary


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


# ---------------------------------------------------------------------------- arguments


def detect_source(source: str) -> SourceKind:
    """The kind of ``source``: a PostgreSQL URI or conninfo, a directory of Parquet files,
    or a SQLite / DuckDB file (by its header).

    Raises:
        StorageError: ``source`` does not exist, or is of no kind graphrecall reads.
    """
    if _URI.match(source):
        return "postgres"
    path = Path(source)
    if not path.exists():
        if _CONNINFO.match(source):
            return "postgres"
        raise StorageError(
            f"{source!r}: no such file or directory (give a SQLite or DuckDB file, a "
            "directory of <table>.parquet files, or a postgresql:// URI)"
        )
    if path.is_dir():
        if any(path.glob("*.parquet")):
            return "parquet"
        raise StorageError(f"{source!r}: a directory without .parquet files")
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise StorageError(f"{source!r}: cannot be read ({exc})") from None
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == _DUCKDB_MAGIC:
        return "duckdb"
    if path.suffix == ".parquet":
        raise StorageError(
            f"{source!r}: a single Parquet file; give the directory that holds "
            "entities.parquet and facts.parquet (and the other tables)"
        )
    raise StorageError(
        f"{source!r}: neither a SQLite nor a DuckDB database (pass --from to say what it is)"
    )


def parse_tenant(text: str) -> int | str:
    """A tenant from the command line: an int when it is written as one, else the text."""
    return int(text) if _INT.match(text) else text


_MAPPING_KEYS = ("preset", "tables", "columns", "values", "optional")


def parse_mapping(text: str) -> ColumnMapping:
    """A :class:`ColumnMapping` from the command line: a preset name (``personal_kg`` ...), a
    JSON object, or a file holding one. The object has the fields of ``ColumnMapping``
    (``tables``, ``columns``, ``values``, ``optional``) and optionally ``preset``, a preset
    that the other fields then adapt.

    Raises:
        ParameterError: Not a preset, unreadable JSON, or an invalid mapping.
    """
    if text in PRESETS:
        return ColumnMapping.preset(text)
    raw = text
    if not text.lstrip().startswith(("{", "[")):
        path = Path(text)
        if not path.is_file():
            raise ParameterError(
                f"invalid parameter --mapping: {text!r} is neither a preset "
                f"({', '.join(sorted(PRESETS))}), a JSON object, nor a JSON file"
            )
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParameterError(
                f"invalid parameter --mapping: cannot read {text!r} ({exc})"
            ) from None
    try:
        spec = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"invalid parameter --mapping: not valid JSON ({exc})") from None
    if not isinstance(spec, dict):
        raise ParameterError("invalid parameter --mapping: the JSON must be an object")
    unknown = [k for k in spec if k not in _MAPPING_KEYS]
    if unknown:
        raise ParameterError(
            f"invalid parameter --mapping: unknown key {unknown[0]!r}; "
            f"known: {list(_MAPPING_KEYS)!r}"
        )
    optional = spec.get("optional", [])
    if not isinstance(optional, list):
        raise ParameterError("invalid parameter --mapping: 'optional' must be a list")
    for key in ("tables", "columns", "values"):
        if not isinstance(spec.get(key, {}), dict):
            raise ParameterError(f"invalid parameter --mapping: {key!r} must be an object")
    if "preset" in spec:
        if not isinstance(spec["preset"], str):
            raise ParameterError("invalid parameter --mapping: 'preset' must be a name")
        return ColumnMapping.preset(spec["preset"]).merged(
            tables=spec.get("tables"),
            columns=spec.get("columns"),
            values=spec.get("values"),
            optional=optional,
        )
    return ColumnMapping(
        tables=spec.get("tables", {}),
        columns=spec.get("columns", {}),
        values=spec.get("values", {}),
        optional=frozenset(optional),
    )


# ---------------------------------------------------------------------------- tenants


def _tenant_mask(col: npt.NDArray[Any], tenant: int | str) -> npt.NDArray[np.bool_]:
    """Rows of a tenant column that hold ``tenant`` (an int matches the int or its text)."""
    text = str(tenant)
    if col.dtype.kind in "iu":
        if isinstance(tenant, int):
            return np.asarray(col == tenant, dtype=bool)
        return np.zeros(len(col), dtype=bool)
    return np.fromiter(
        (
            (type(v) is str and v == text)
            or (isinstance(tenant, int) and isinstance(v, (int, np.integer)) and v == tenant)
            for v in col.tolist()
        ),
        dtype=bool,
        count=len(col),
    )


def _member(values: npt.NDArray[Any], ids: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Which of ``values`` are among ``ids`` (same value and type: ``1`` is not ``"1"``)."""
    if values.dtype.kind in "iu" and ids.dtype.kind in "iu":
        return np.isin(values, ids)
    keys = {(type(v), v) for v in ids.tolist() if v is not None}
    return np.fromiter(
        ((type(v), v) in keys for v in values.tolist()), dtype=bool, count=len(values)
    )


def _rows(cols: Mapping[str, npt.NDArray[Any]], keep: npt.NDArray[np.bool_]) -> dict[str, Any]:
    return {name: col[keep] for name, col in cols.items()}


def filter_tenant(tables: GraphTables, tenant: int | str) -> GraphTables:
    """The rows of one tenant, as :func:`~graphrecall.storage.duckdb.load_duckdb` reads
    them: entities by their tenant column; facts whose subject is one of those entities;
    chunks by their tenant column (without one: those mentioning the tenant's entities);
    mentions and aliases of the tenant's entities; the vectors of the rows kept.

    Raises:
        ParameterError: The entities have no tenant column.
        UnknownTenantError: No entity or chunk is in ``tenant`` (the message lists the
            tenants there are).
    """
    en = tables.entities
    if "tenant" not in en:
        raise ParameterError(
            f"invalid parameter --tenant: {tenant!r} cannot be applied, the entities have "
            "no tenant column"
        )
    keep_e = _tenant_mask(en["tenant"], tenant)
    ch = tables.chunks
    keep_c: npt.NDArray[np.bool_] | None = None
    if ch is not None:
        if "tenant" in ch:
            keep_c = _tenant_mask(ch["tenant"], tenant)
        else:
            me = tables.mentions
            mentioned = (
                me["chunk"][_member(me["entity"], en["id"][keep_e])]
                if me is not None
                else np.zeros(0, dtype=object)
            )
            keep_c = _member(ch["id"], mentioned)
    if not keep_e.any() and (keep_c is None or not keep_c.any()):
        present = {v for v in en["tenant"].tolist() if v is not None}
        if ch is not None and "tenant" in ch:
            present |= {v for v in ch["tenant"].tolist() if v is not None}
        listed = sorted(present, key=lambda v: (type(v).__name__, v))
        raise UnknownTenantError(
            f"tenant {tenant!r} has no entities or chunks; the source's tenants are "
            f"{listed[:20]!r}" + (" ..." if len(listed) > 20 else "")
        )
    ent_ids = en["id"][keep_e]
    entities = _rows(en, keep_e)
    facts = _rows(tables.facts, _member(tables.facts["subject"], ent_ids))
    chunks = None if ch is None or keep_c is None else _rows(ch, keep_c)
    chunk_ids = chunks["id"] if chunks is not None else np.zeros(0, dtype=object)
    mentions = None
    if tables.mentions is not None:
        mentions = _rows(tables.mentions, _member(tables.mentions["entity"], ent_ids))
    aliases = None
    if tables.aliases is not None:
        aliases = _rows(tables.aliases, _member(tables.aliases["entity"], ent_ids))
    alias_texts = aliases["alias"] if aliases is not None else np.zeros(0, dtype=object)
    kept_ids = {"entity": ent_ids, "chunk": chunk_ids, "alias": alias_texts}
    embeddings = []
    for es in tables.embeddings:
        keep = _member(es.ids, kept_ids[es.kind])
        if keep.any():
            embeddings.append(EmbeddingSet(es.kind, es.ids[keep], es.vectors[keep], es.model))
    return GraphTables(
        entities=entities,
        facts=facts,
        chunks=chunks,
        mentions=mentions,
        aliases=aliases,
        embeddings=embeddings,
        statuses=tables.statuses,
        sources=tables.sources,
    )


def _tenant_count(tables: GraphTables) -> int:
    values = [
        t["tenant"] for t in (tables.entities, tables.chunks) if t is not None and "tenant" in t
    ]
    if not values:
        return 1
    if all(v.dtype.kind in "iu" for v in values):
        return len(np.unique(np.concatenate(values)))
    distinct: set[Hashable] = set()
    for v in values:
        distinct.update((type(x), x) for x in v.tolist())
    return len(distinct)


# ---------------------------------------------------------------------------- reading


def _read(
    source: str,
    kind: SourceKind,
    mapping: ColumnMapping | None,
    tenant: int | str | None,
    on_bad: OnBad,
) -> tuple[GraphTables, LoadReport | None]:
    """The source's tables, and the check's report when the loader checked them itself."""
    if kind == "sqlite":
        if mapping is not None:
            raise ParameterError(
                "invalid parameter --mapping: a SQLite store has graphrecall's own schema; "
                "mappings apply to duckdb, parquet and postgres sources"
            )
        from .storage.sqlite import SQLiteStore

        with SQLiteStore.open(source) as store:
            tables = store.read()
        return (tables if tenant is None else filter_tenant(tables, tenant)), None
    if kind == "parquet":
        from .storage.arrow import load_parquet

        tables = load_parquet(source, mapping)
        return (tables if tenant is None else filter_tenant(tables, tenant)), None
    if kind == "duckdb":
        from .storage.duckdb import load_duckdb

        return load_duckdb(source, mapping, tenant=tenant), None
    try:
        from .storage.postgres import load_postgres
    except ImportError as exc:
        raise StorageError(
            f"postgres sources need graphrecall.storage.postgres.load_postgres and psycopg "
            f"(pip install 'psycopg[binary]'): {exc}"
        ) from None
    checked = load_postgres(source, mapping=mapping, tenant=tenant, on_bad=on_bad)
    report = getattr(checked, "report", None)
    return checked, report if isinstance(report, LoadReport) else None


# ---------------------------------------------------------------------------- writing


def _output_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    total = 0
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.is_file():
            total += p.stat().st_size
    return total


def _is_snapshot(path: Path) -> bool:
    try:
        head = json.loads((path / "header.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    from .storage.snapshot import MAGIC

    return isinstance(head, dict) and head.get("magic") == MAGIC


def _is_store(path: Path) -> bool:
    from .storage.sqlite import SQLiteStore

    try:
        with SQLiteStore.open(path):
            return True
    except GraphRecallError:
        return False


def _check_output(out: Path, target: TargetKind, overwrite: bool, source: str) -> None:
    """Refuse an output that is the source, or that exists and may not be replaced."""
    try:
        if out.exists() and Path(source).exists() and out.resolve() == Path(source).resolve():
            raise StorageError(f"{str(out)!r}: the output is the source")
    except OSError:  # pragma: no cover - unresolvable paths: nothing to compare
        pass
    if not out.exists():
        if not out.parent.exists():
            raise StorageError(f"{str(out)!r}: the directory {str(out.parent)!r} does not exist")
        return
    if not overwrite:
        raise StorageError(f"{str(out)!r} exists; pass --overwrite to replace it")
    if target in ("snapshot", "index"):  # directories: empty or one of ours
        from .index_io import is_saved_index

        ours, what = (
            (_is_snapshot, "graphrecall snapshot")
            if target == "snapshot"
            else (is_saved_index, "saved graphrecall index")
        )
        empty = out.is_dir() and not any(out.iterdir())
        if not (out.is_dir() and (empty or ours(out))):
            raise StorageError(
                f"{str(out)!r} is not a {what}; --overwrite replaces only "
                f"{'snapshots' if target == 'snapshot' else 'saved indexes'} "
                "(remove it yourself if it should go)"
            )
    elif not (out.is_file() and (out.stat().st_size == 0 or _is_store(out))):
        raise StorageError(
            f"{str(out)!r} is not a graphrecall SQLite store; --overwrite replaces only "
            "stores (remove it yourself if it should go)"
        )


def _replace(tmp: Path, out: Path) -> None:
    """Move the finished output into place (replacing what ``_check_output`` allowed)."""
    if out.is_dir():
        shutil.rmtree(out)
    elif out.exists():
        out.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    os.replace(tmp, out)


def _write_sqlite(tables: GraphTables, out: Path, on_bad: OnBad) -> None:
    from .storage.sqlite import SQLiteStore

    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    try:
        with SQLiteStore.create(tmp) as store:
            store.write(tables, on_bad=on_bad)
        _replace(tmp, out)
    finally:
        for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            p.unlink(missing_ok=True)


def _write_snapshot(graph: Any, out: Path) -> None:
    from .storage.snapshot import save_snapshot

    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        save_snapshot(graph, tmp)
        _replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------- the command


def index(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    source_kind: SourceKind | None = None,
    target: TargetKind = "snapshot",
    tenant: int | str | None = None,
    on_bad: OnBad = "raise",
    mapping: ColumnMapping | None = None,
    overwrite: bool = False,
    progress: TextIO | None = None,
    clock: Callable[[], float] = time.perf_counter,
    embedder: Any = "default",
) -> IndexSummary:
    """Read a store, check every row, and write a snapshot or a SQLite store.

    Args:
        source: A SQLite store, a DuckDB file, a directory of ``<table>.parquet`` files, or
            a PostgreSQL conninfo / URI.
        out: The snapshot directory or SQLite file to write.
        source_kind: What ``source`` is (default: told by :func:`detect_source`).
        target: ``"snapshot"`` (the graph is built, then saved), ``"sqlite"`` or
            ``"index"`` (a saved retrieval index, see :mod:`graphrecall.index_io`).
        tenant: Read only this tenant's rows.
        on_bad: ``"raise"`` refuses bad rows (nothing is written); ``"skip"`` drops them
            and the rows depending on them (the summary's report counts them).
        mapping: The source's table and column names (not for SQLite stores).
        overwrite: Replace an existing output (only a snapshot or a graphrecall store).
        progress: Where the phases are shown (None: nowhere).
        clock: Seconds, for the phase times.
        embedder: For ``target="index"``: embeds the entity names and chunk texts that have
            no stored vectors (``"default"``, an Embedder, or None for stored vectors only).

    Returns:
        The summary of the run.

    Raises:
        ParameterError: An invalid argument.
        StorageError: The source cannot be read, or the output cannot be written.
        UnknownTenantError: ``tenant`` has no rows in the source.
        DataError: A missing table or column, or a column that cannot be converted.
        BadDataError: ``on_bad="raise"`` and some row is bad (``.report`` names them).
    """
    src = os.fspath(source)
    if source_kind is not None and source_kind not in get_args(SourceKind):
        raise ParameterError(
            f"invalid parameter source_kind: {source_kind!r} is not one of "
            f"{list(get_args(SourceKind))!r}"
        )
    if target not in get_args(TargetKind):
        raise ParameterError(
            f"invalid parameter target: {target!r} is not one of {list(get_args(TargetKind))!r}"
        )
    if on_bad not in ("raise", "skip"):
        raise ParameterError(f"invalid parameter on_bad: {on_bad!r} is not 'raise' or 'skip'")
    kind: SourceKind = source_kind or detect_source(src)
    dest = Path(out)
    _check_output(dest, target, overwrite, src)
    bar = _Progress(progress, clock)
    where = f" (tenant {tenant!r})" if tenant is not None else ""
    bar.say(f"graphrecall index: {kind} {src}{where} -> {target} {dest}")
    with bar.phase("read") as note:
        tables, report = _read(src, kind, mapping, tenant, on_bad)
        note["text"] = (
            f"{tables.n_rows('entities'):,} entities, {tables.n_rows('facts'):,} facts, "
            f"{tables.n_rows('chunks'):,} chunks"
        )
    if tenant is not None and tables.n_rows("entities") == 0 and tables.n_rows("chunks") == 0:
        raise UnknownTenantError(f"tenant {tenant!r} has no entities or chunks in {src!r}")
    if report is None:
        with bar.phase("check") as note:
            tables, report = tables.check(on_bad)
            note["text"] = (
                "every row passed"
                if report.ok
                else ", ".join(f"{n:,} {t} skipped" for t, n in report.skipped.items())
            )
    rows = {name: tables.n_rows(name) for name in TABLES}
    rows["embeddings"] = sum(len(e) for e in tables.embeddings)
    n_tenants = _tenant_count(tables)
    if target == "snapshot":
        with bar.phase("build") as note:
            # The checked tables are this run's own: hand their columns over as they are
            # encoded, so that tables and graph are never in memory together.
            graph = tables.build_graph(release=True)
            note["text"] = repr(graph)
        with bar.phase("write") as note:
            _write_snapshot(graph, dest)
            del graph
            note["text"] = _size(_output_bytes(dest))
    elif target == "index":
        from .index import GraphIndex
        from .index_io import save_index

        with bar.phase("build") as note:
            gi = GraphIndex.build(tables, embedder=embedder, checked=True)
            vecs = [
                f"{kind} vectors {len(v):,} ({v.backend})"
                for kind, v in (("entity", gi.entity_vectors), ("chunk", gi.chunk_vectors))
                if v is not None
            ]
            note["text"] = ", ".join([repr(gi.graph), *vecs]) if vecs else repr(gi.graph)
        with bar.phase("write") as note:
            save_index(gi, dest)
            del gi
            note["text"] = _size(_output_bytes(dest))
    else:
        with bar.phase("write") as note:
            _write_sqlite(tables, dest, on_bad)
            note["text"] = _size(_output_bytes(dest))
    return IndexSummary(
        source=src,
        source_kind=kind,
        output=dest,
        target=target,
        rows=rows,
        tenants=n_tenants,
        report=report,
        seconds=dict(bar.seconds),
        peak_mib=_peak_mib(),
        output_bytes=_output_bytes(dest),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``index`` command's arguments to ``parser``."""
    parser.add_argument("source", help="a SQLite or DuckDB file, a Parquet directory, a URI")
    parser.add_argument("out", help="the snapshot directory or SQLite file to write")
    parser.add_argument(
        "--from",
        dest="source_kind",
        choices=get_args(SourceKind),
        help="what SOURCE is (default: told from the file, directory or URI)",
    )
    parser.add_argument(
        "--to",
        dest="target",
        choices=get_args(TargetKind),
        default="snapshot",
        help="what to write (default: snapshot)",
    )
    parser.add_argument("--tenant", help="read only this tenant's rows (digits: an int tenant)")
    parser.add_argument(
        "--on-bad",
        dest="on_bad",
        choices=("raise", "skip"),
        default="raise",
        help="refuse bad rows (raise, the default: exit code 2) or drop them (skip)",
    )
    parser.add_argument(
        "--mapping",
        help=f"the source's names: a preset ({', '.join(sorted(PRESETS))}), a JSON object "
        "with tables / columns / values / optional (and preset), or a JSON file",
    )
    parser.add_argument(
        "--no-embedder",
        dest="no_embedder",
        action="store_true",
        help="--to index: use stored vectors only (texts without them get no vectors)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUT if it is a snapshot or a graphrecall store",
    )


def run(
    args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``graphrecall index`` with parsed arguments; print the summary (stdout), the
    progress and any report or error (stderr).

    Returns:
        The exit code: :data:`EXIT_OK`, :data:`EXIT_FAILED` or :data:`EXIT_BAD_DATA`.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        summary = index(
            args.source,
            args.out,
            source_kind=args.source_kind,
            target=args.target,
            tenant=None if args.tenant is None else parse_tenant(args.tenant),
            on_bad=args.on_bad,
            mapping=None if args.mapping is None else parse_mapping(args.mapping),
            overwrite=args.overwrite,
            progress=err,
            embedder=None if getattr(args, "no_embedder", False) else "default",
        )
    except BadDataError as exc:
        print(
            f"graphrecall index: the source has bad rows; nothing was written\n{exc.report}\n"
            "(pass --on-bad skip to drop them and the rows depending on them)",
            file=err,
        )
        return EXIT_BAD_DATA
    except (GraphRecallError, ImportError, OSError) as exc:
        print(f"graphrecall index: error: {exc}", file=err)
        return EXIT_FAILED
    if not summary.report.ok:
        print(summary.report, file=err)
    print(summary, file=out)
    return EXIT_OK
