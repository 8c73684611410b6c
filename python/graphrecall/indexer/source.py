"""Reading the source of ``graphrecall index``: telling its kind, loading its tables, and
keeping one tenant's rows."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError, StorageError, UnknownTenantError
from ..tables import EmbeddingSet, GraphTables, LoadReport, OnBad
from ..tables.mapping import ColumnMapping

SourceKind = Literal[
    "sqlite",
    "duckdb",
    "parquet",
    "postgres",
    "text",
    "graphrag",
    "hipporag",
    "lightrag",
    "graphml",
    "neo4j",
]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at offset 8 of a DuckDB file
_URI = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
_CONNINFO = re.compile(r"^\s*\w+\s*=")


def detect_source(source: str) -> SourceKind:
    """The kind of ``source``: a PostgreSQL URI or conninfo, another tool's output whose
    file names tell it (:func:`graphrecall.presets.detect_preset`), a directory of Parquet
    files, or a SQLite / DuckDB file (by its header).

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
    from ..presets import detect_preset

    preset = detect_preset(path)
    if preset is not None:
        return preset
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


def _read_text(
    source: str,
    mapping: ColumnMapping | None,
    tenant: int | str | None,
    on_bad: OnBad,
    extractor: Any = None,
) -> GraphTables:
    """Documents (a text / Markdown / JSONL / Parquet file or a folder of them) through
    :func:`graphrecall.ingest.ingest` with its default options; skipped documents are
    counted on stderr."""
    import sys

    from ..ingest import IngestReport, ingest

    if mapping is not None:
        raise ParameterError(
            "invalid parameter --mapping: text sources take the columns text, title, id, "
            "tenant (other columns become chunk metadata)"
        )
    rep = IngestReport()
    tables = ingest(source, on_bad=on_bad, report=rep, extractor=extractor)
    if extractor is not None:
        print(f"llm {getattr(extractor, 'model', extractor.name)}: {rep.usage}", file=sys.stderr)
    skipped = ", ".join(f"{len(v):,} {k}" for k, v in sorted(rep.skipped.items()))
    print(
        f"ingest: {rep.documents:,} documents, {rep.chunks:,} chunks"
        + (f"; skipped documents: {skipped}" if skipped else ""),
        file=sys.stderr,
    )
    return tables if tenant is None else filter_tenant(tables, tenant)


def _read(
    source: str,
    kind: SourceKind,
    mapping: ColumnMapping | None,
    tenant: int | str | None,
    on_bad: OnBad,
    extractor: Any = None,
) -> tuple[GraphTables, LoadReport | None]:
    """The source's tables, and the check's report when the loader checked them itself."""
    if kind == "text":
        return _read_text(source, mapping, tenant, on_bad, extractor), None
    if kind in ("graphrag", "hipporag", "lightrag", "graphml", "neo4j"):
        from ..presets import load_preset

        if mapping is not None:
            raise ParameterError(
                f"invalid parameter --mapping: --from {kind} reads its own columns"
            )
        tables = load_preset(kind, source)
        return (tables if tenant is None else filter_tenant(tables, tenant)), None
    if kind == "sqlite":
        if mapping is not None:
            raise ParameterError(
                "invalid parameter --mapping: a SQLite store has graphrecall's own schema; "
                "mappings apply to duckdb, parquet and postgres sources"
            )
        from ..storage.sqlite import SQLiteStore

        with SQLiteStore.open(source) as store:
            tables = store.read()
        return (tables if tenant is None else filter_tenant(tables, tenant)), None
    if kind == "parquet":
        from ..storage.arrow import load_parquet

        tables = load_parquet(source, mapping)
        return (tables if tenant is None else filter_tenant(tables, tenant)), None
    if kind == "duckdb":
        from ..storage.duckdb import load_duckdb

        return load_duckdb(source, mapping, tenant=tenant), None
    try:
        from ..storage.postgres import load_postgres
    except ImportError as exc:
        raise StorageError(
            f"postgres sources need graphrecall.storage.postgres.load_postgres and psycopg "
            f"(pip install 'psycopg[binary]'): {exc}"
        ) from None
    checked = load_postgres(source, mapping=mapping, tenant=tenant, on_bad=on_bad)
    report = getattr(checked, "report", None)
    return checked, report if isinstance(report, LoadReport) else None
