"""The ``graphrecall index`` pipeline: read, check, build and write, one timed phase each."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, get_args

from ..errors import ParameterError, UnknownTenantError
from ..tables import TABLES, OnBad
from ..tables.mapping import ColumnMapping
from .output import TargetKind, _check_output, _output_bytes, _write_snapshot, _write_sqlite
from .progress import IndexSummary, _peak_mib, _Progress, _size
from .source import SourceKind, _read, _tenant_count, detect_source


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
    embed_workers: int | None = None,
    extractor: Any = None,
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
        embed_workers: Threads embedding texts (None: the core count); finished batches
            are kept in ``OUT.embed-work/`` until OUT is written, so a killed run resumes
            (see :func:`graphrecall.embed_bulk.embed_bulk`).
        extractor: For ``source_kind="text"``: an :class:`~graphrecall.ingest.Extractor`
            whose triples are added to the offline graph.

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
    if extractor is not None and kind != "text":
        raise ParameterError(
            f"invalid parameter --extractor: it reads documents (--from text), not {kind}"
        )
    dest = Path(out)
    _check_output(dest, target, overwrite, src)
    bar = _Progress(progress, clock)
    where = f" (tenant {tenant!r})" if tenant is not None else ""
    bar.say(f"graphrecall index: {kind} {src}{where} -> {target} {dest}")
    with bar.phase("read") as note:
        tables, report = _read(src, kind, mapping, tenant, on_bad, extractor)
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
        from ..embed_bulk import bulk_options
        from ..index import GraphIndex
        from ..index_io import save_index

        work = dest.with_name(dest.name + ".embed-work")
        with (
            bar.phase("build") as note,
            bulk_options(workers=embed_workers, work_dir=work, progress=progress),
        ):
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
            shutil.rmtree(work, ignore_errors=True)  # written: the embedded batches are done
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
