"""The public Arrow loaders: :func:`load_arrow` (tables by the user's names),
:func:`load_dataframes` (our tables given one by one) and :func:`load_parquet` (files read
column by column)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import DataError, ParameterError
from ...tables import GraphTables
from ...tables.mapping import TABLES, ColumnMapping
from .convert import is_text
from .source import ArrowSource, ArrowTable, Column, LazyColumns, from_memory, import_pyarrow
from .tables import CODE_COLUMNS, tables_from_sources

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_arrow", "load_dataframes", "load_parquet"]


def _mapping(mapping: ColumnMapping | None) -> ColumnMapping:
    if mapping is None:
        return ColumnMapping()
    if not isinstance(mapping, ColumnMapping):
        raise ParameterError(f"invalid parameter mapping: {mapping!r} is not a ColumnMapping")
    return mapping


def _assign(names: Iterable[str], m: ColumnMapping, what: str) -> dict[str, str]:
    """Our table -> the user's name among ``names``: the mapped name, else our own name.

    Raises:
        ParameterError: A name that no table of ours reads (a typo).
        DataError: A table the mapping requires is missing.
    """
    have = list(names)
    out: dict[str, str] = {}
    for ours in TABLES:
        theirs = m.table(ours)
        if theirs in have:
            out[ours] = theirs
        elif ours in have and ours not in m.tables.values():
            out[ours] = ours
        elif m.table_required(ours) and ours not in ("entities", "facts"):
            raise DataError(f"no table {theirs!r} ({ours}) among the {what} {have!r}")
    used = set(out.values())
    unknown = [n for n in have if n not in used]
    if unknown:
        raise ParameterError(
            f"invalid {what}: {unknown!r} is read as no table; tables are read as "
            f"{ {o: m.table(o) for o in TABLES}!r} (name them in ColumnMapping.tables)"
        )
    return out


def load_arrow(
    tables: Mapping[str, ArrowTable | pd.DataFrame],
    mapping: ColumnMapping | None = None,
) -> GraphTables:
    """Load Arrow tables (or pandas DataFrames) keyed by the user's table names.

    Args:
        tables: The user's table name -> ``pyarrow.Table`` / ``RecordBatch`` /
            ``pandas.DataFrame``; names are those of ``mapping.tables`` (or ours:
            ``entities``, ``facts``, ``chunks``, ``mentions``, ``aliases``).
        mapping: The user's table and column names (default: ours).

    Returns:
        The converted tables; call :meth:`GraphTables.check` or :meth:`GraphTables.to_graph`.

    Raises:
        ParameterError: An invalid mapping or a table name that no table of ours reads.
        DataError: A missing table or column (named), or a column that cannot be converted.
    """
    m = _mapping(mapping)
    if not isinstance(tables, Mapping):
        raise ParameterError(f"invalid parameter tables: {type(tables).__name__} is not a mapping")
    assigned = _assign(tables.keys(), m, "tables")
    sources = {ours: from_memory(theirs, tables[theirs]) for ours, theirs in assigned.items()}
    return tables_from_sources(sources, m)


def load_dataframes(
    entities: pd.DataFrame | ArrowTable,
    facts: pd.DataFrame | ArrowTable,
    chunks: pd.DataFrame | ArrowTable | None = None,
    mentions: pd.DataFrame | ArrowTable | None = None,
    aliases: pd.DataFrame | ArrowTable | None = None,
    *,
    mapping: ColumnMapping | None = None,
) -> GraphTables:
    """Load pandas DataFrames (or Arrow tables) given as our tables; ``mapping`` renames
    their columns (its table names are not used).

    ``mentions`` may be the chunks frame itself when a list column holds the mentioned
    entities (map ``mentions.entity`` to it); likewise ``aliases`` and the entities frame.

    Raises:
        ParameterError, DataError: As :func:`load_arrow`.
    """
    m = _mapping(mapping)
    given = {
        "entities": entities,
        "facts": facts,
        "chunks": chunks,
        "mentions": mentions,
        "aliases": aliases,
    }
    sources = {ours: from_memory(ours, df) for ours, df in given.items() if df is not None}
    return tables_from_sources(sources, m)


#: Our text columns with few distinct values, read from Parquet as dictionaries (Parquet
#: stores them so): no string is decoded or hashed per row.
_DICTIONARY_COLUMNS = CODE_COLUMNS | {"entities.type", "chunks.scope", "chunks.category"}


def _parquet_source(name: str, path: Path, table: str) -> ArrowSource:
    pq = importlib.import_module("pyarrow.parquet")
    pa = import_pyarrow()
    try:
        schema = pq.read_schema(path) if path.is_file() else pq.ParquetDataset(path).schema
    except (OSError, pa.ArrowInvalid) as exc:
        raise DataError(f"cannot read Parquet {str(path)!r} ({name}): {exc}") from None

    def read(sel: dict[str, str]) -> LazyColumns:
        coded = [
            theirs
            for ours, theirs in sel.items()
            if f"{table}.{ours}" in _DICTIONARY_COLUMNS and is_text(schema.field(theirs).type)
        ]
        # Column by column (Parquet stores them apart): the conversion then holds one
        # column of Arrow data at a time, not the whole table beside its numpy copy.
        if path.is_file():  # ParquetFile: no pyarrow.dataset (which imports pandas)
            file = pq.ParquetFile(path, read_dictionary=coded)

            def column(ours: str) -> Column:
                return file.read(columns=[sel[ours]]).column(0)

        else:

            def column(ours: str) -> Column:
                data = pq.read_table(path, columns=[sel[ours]], read_dictionary=coded)
                return data.column(0)

        return LazyColumns(sel, column)

    return ArrowSource(name, schema.names, read)


def load_parquet(
    paths: Mapping[str, str | os.PathLike[str]] | str | os.PathLike[str],
    mapping: ColumnMapping | None = None,
) -> GraphTables:
    """Load Parquet files (or directories of them), reading only the mapped columns.

    Args:
        paths: A directory holding ``<table>.parquet`` per table (the user's table names
            of ``mapping``, e.g. ``entities.parquet``, ``facts.parquet``, ``chunks.parquet``;
            ``entities`` and ``facts`` required), or the user's table name -> file.
        mapping: The user's table and column names (default: ours).

    Raises:
        ParameterError: An invalid mapping, or a table name that no table of ours reads.
        DataError: A missing file, table or column (named), or an unreadable file.
    """
    m = _mapping(mapping)
    if isinstance(paths, Mapping):
        files = {str(k): Path(v) for k, v in paths.items()}
    else:
        root = Path(paths)
        if not root.is_dir():
            raise DataError(f"{str(root)!r} is not a directory of Parquet files")
        files = {}
        for ours in TABLES:
            theirs = m.table(ours)
            for cand in (root / f"{theirs}.parquet", root / theirs):
                if cand.exists():
                    files[theirs] = cand
                    break
            else:
                if ours in ("entities", "facts") or m.table_required(ours):
                    raise DataError(
                        f"no {theirs}.parquet ({ours}) in {str(root)!r}; it holds "
                        f"{sorted(p.name for p in root.iterdir())!r}"
                    )
    assigned = _assign(files.keys(), m, "Parquet tables")
    sources = {
        ours: _parquet_source(theirs, files[theirs], ours) for ours, theirs in assigned.items()
    }
    return tables_from_sources(sources, m)
