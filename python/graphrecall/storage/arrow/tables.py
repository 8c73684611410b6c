"""Our tables from Arrow sources: each table's columns converted by kind, list columns
exploded, user values mapped, vector columns gathered into embedding sets."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import DataError
from ...tables import EmbeddingKind, EmbeddingSet, GraphTables
from ...tables.mapping import LIST_COLUMNS, TABLES, TIME_COLUMNS, ColumnMapping
from .convert import (
    codes,
    floats,
    from_dictionary,
    ids,
    ints,
    is_arrow,
    is_text_dictionary,
    objects,
    plain,
    times,
)
from .source import ArrowSource, Column, import_compute, import_pyarrow

__all__ = ["CODE_COLUMNS", "read_table", "tables_from_sources"]

_ID_COLUMNS = frozenset(
    {
        "entities.id",
        "entities.tenant",
        "entities.primary_chunk",
        "facts.id",
        "facts.subject",
        "facts.object",
        "chunks.id",
        "chunks.tenant",
        "mentions.chunk",
        "mentions.entity",
        "aliases.entity",
    }
)
_FLOAT_COLUMNS = frozenset({"facts.confidence", "facts.strength", "chunks.confidence"})
_INT_COLUMNS = frozenset(
    {"facts.access_count", "facts.sequence", "chunks.access_count", "mentions.count"}
)
#: Names or codes: kept as text, or as int64 codes when the column is numeric.
CODE_COLUMNS = frozenset({"facts.predicate", "facts.status", "facts.source"})
_EMBEDDING = ("embedding", "embedding_model")
_KIND: dict[str, EmbeddingKind] = {"entities": "entity", "chunks": "chunk"}


def _apply_values(col: Column, vmap: Mapping[Any, Any]) -> Column:
    """Replace values through ``vmap`` (the user's -> ours), vectorised over the distinct
    values; values not in the map pass through."""
    pa = import_pyarrow()
    if is_arrow(col):
        arr = plain(col).combine_chunks()
        try:
            enc = arr.dictionary_encode()
        except pa.ArrowNotImplementedError:  # lists, structs: map row by row
            col = objects(arr)
    if not is_arrow(col):
        out = np.empty(len(col), dtype=object)
        out[:] = [vmap.get(v, v) if _hashable(v) else v for v in col.tolist()]
        return out
    distinct = enc.dictionary.to_pylist()
    mapped = [vmap.get(v, v) for v in distinct]
    fill = vmap.get(None) if None in vmap else None
    try:
        new_dict = pa.array([*mapped, fill])
        indices = enc.indices.fill_null(len(mapped))
        return pa.chunked_array([new_dict.take(indices)])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        objs = np.empty(len(mapped) + 1, dtype=object)
        objs[:] = [*mapped, fill]
        idx = enc.indices.fill_null(len(mapped)).to_numpy(zero_copy_only=False)
        return objs[idx]


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _explode(
    cols: MutableMapping[str, Column], table: str, where: str
) -> MutableMapping[str, Column]:
    """Rows whose list column (``mentions.entity`` ...) holds several values become one row
    per value (an empty or null list gives none); other columns repeat."""
    pa = import_pyarrow()
    pc = import_compute()
    lists = [
        ours
        for ours in cols
        if f"{table}.{ours}" in LIST_COLUMNS
        and is_arrow(cols[ours])
        and (pa.types.is_list(cols[ours].type) or pa.types.is_large_list(cols[ours].type))
    ]
    if not lists:
        return cols
    if len(lists) > 1:
        raise DataError(f"{where}: only one list column can be exploded, got {lists!r}")
    key = lists[0]
    arr = cols[key].combine_chunks()
    parents = pc.list_parent_indices(arr)
    out: dict[str, Column] = {key: pa.chunked_array([pc.list_flatten(arr)])}
    idx = parents.to_numpy(zero_copy_only=False)
    for ours, col in cols.items():
        if ours == key:
            continue
        out[ours] = col.take(parents) if is_arrow(col) else np.asarray(col)[idx]
    return out


def _embedding_sets(
    table: str,
    ids: npt.NDArray[Any],
    vectors: Column,
    models: Column | None,
    where: str,
) -> list[EmbeddingSet]:
    """``(n, d)`` float32 matrices of the rows that have a vector, one set per model.

    Vectors are lists / fixed-size lists of numbers, or blobs of little-endian float32
    (sqlite-vec's format); rows with a null vector are not embedded.
    """
    pa = import_pyarrow()
    pc = import_compute()
    if not is_arrow(vectors):
        vectors = pa.chunked_array([pa.array(list(vectors), from_pandas=True)])
    vec = plain(vectors).combine_chunks()
    t = vec.type
    has = pa.array(~vec.is_null().to_numpy(zero_copy_only=False))
    rows = np.flatnonzero(has.to_numpy(zero_copy_only=False))
    if len(rows) == 0:
        return []
    kept = vec.filter(has)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        nbytes = pc.binary_length(kept).to_numpy(zero_copy_only=False).astype(np.int64)
        if (nbytes % 4).any():
            i = int(rows[int(np.argmax(nbytes % 4))])
            raise DataError(f"{where} row {i}: embedding blob is not a float32 vector")
        lens = nbytes // 4
        if not len(lens):
            return []
        flat: npt.NDArray[Any] = np.frombuffer(b"".join(kept.to_pylist()), dtype="<f4")
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        lens = pc.list_value_length(kept).to_numpy(zero_copy_only=False).astype(np.int64)
        values = pc.list_flatten(kept)
        if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
            raise DataError(f"{where}.embedding must hold numbers, got Arrow type {t}")
        # A null inside a vector becomes NaN, which GraphTables.check refuses.
        flat = values.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    else:
        raise DataError(f"{where}.embedding must be a list of numbers, got Arrow type {t}")
    flat32 = np.asarray(flat, dtype=np.float32)
    matrix: npt.NDArray[Any]
    if (lens == lens[0]).all():
        matrix = np.ascontiguousarray(flat32.reshape(len(rows), int(lens[0])))
    else:  # ragged: GraphTables.check refuses the rows of the wrong dimension
        matrix = np.empty(len(rows), dtype=object)
        matrix[:] = np.split(flat32, np.cumsum(lens)[:-1])
    kind = _KIND[table]
    if models is None:
        return [EmbeddingSet(kind, ids[rows], matrix, None)]
    if not is_arrow(models):
        models = pa.chunked_array([pa.array(objects(models).tolist())])
    enc = plain(models).combine_chunks().filter(has).dictionary_encode()
    names = enc.dictionary.to_pylist()
    code = enc.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
    sets = []
    for c, name in enumerate([*names, None]):
        sel = np.flatnonzero(code == c)
        if len(sel):
            sets.append(EmbeddingSet(kind, ids[rows[sel]], matrix[sel], name))
    return sets


def _convert(
    table: str, cols: MutableMapping[str, Column], mapping: ColumnMapping, where: str
) -> tuple[dict[str, npt.NDArray[Any]], list[EmbeddingSet]]:
    """Our table's columns (by our names, Arrow) -> numpy columns and embedding sets."""
    for ours in list(cols):
        vmap = mapping.value_map(table, ours)
        if vmap:
            cols[ours] = _apply_values(cols[ours], vmap)
    cols = _explode(cols, table, where)
    out: dict[str, npt.NDArray[Any]] = {}
    vectors = {k: cols.pop(k) for k in _EMBEDDING if k in cols}
    for ours in list(cols):
        col = cols.pop(ours)  # Arrow's copy of each column is freed once converted
        key = f"{table}.{ours}"
        if key in _ID_COLUMNS:
            out[ours] = ids(col, where, ours)
        elif ours in TIME_COLUMNS:
            out[ours] = times(col, where, ours)
        elif key in _FLOAT_COLUMNS:
            out[ours] = floats(col, where, ours)
        elif key in _INT_COLUMNS:
            out[ours] = ints(col, where, ours)
        elif key in CODE_COLUMNS:
            out[ours] = codes(col, where, ours)
        elif is_text_dictionary(col):
            out[ours] = from_dictionary(col)
        else:
            out[ours] = objects(plain(col) if is_arrow(col) else col)
        del col
        if out[ours].dtype != object:
            # Nothing else holds the new array: read-only lets the check share it (a
            # fully valid column is then never copied) and keeps it as loaded.
            out[ours].flags.writeable = False
    embeddings: list[EmbeddingSet] = []
    if "embedding" in vectors:
        embeddings = _embedding_sets(
            table, out["id"], vectors["embedding"], vectors.get("embedding_model"), where
        )
    return out, embeddings


def read_table(
    table: str, source: ArrowSource, mapping: ColumnMapping
) -> tuple[dict[str, npt.NDArray[Any]], list[EmbeddingSet]]:
    """Resolve, read and convert one of our tables from a source.

    Raises:
        DataError: A mapped or required column is missing (naming the user's table and
            column), or a column cannot be converted.
    """
    selected = mapping.resolve(table, source.columns)
    if table == "facts":  # a filter column only: the core takes the subject's tenant
        selected.pop("tenant", None)
    where = source.name if source.name == table else f"{source.name} ({table})"
    return _convert(table, source.read(selected), mapping, where)


def tables_from_sources(
    sources: Mapping[str, ArrowSource], mapping: ColumnMapping | None
) -> GraphTables:
    """Build :class:`GraphTables` from one :class:`ArrowSource` per table of ours present
    (``entities`` and ``facts`` required)."""
    m = mapping if mapping is not None else ColumnMapping()
    for ours in ("entities", "facts"):
        if ours not in sources:
            raise DataError(f"no {ours} table: expected one named {m.table(ours)!r}")
    data: dict[str, dict[str, npt.NDArray[Any]] | None] = {}
    embeddings: list[EmbeddingSet] = []
    for ours in TABLES:
        if ours not in sources:
            data[ours] = None
            continue
        cols, sets = read_table(ours, sources[ours], m)
        data[ours] = cols
        embeddings.extend(sets)
        # Arrow's allocator keeps freed memory for reuse, which numpy never makes: give
        # the pages of the table just converted back to the system.
        import_pyarrow().default_memory_pool().release_unused()
    entities = data["entities"]
    facts = data["facts"]
    if entities is None or facts is None:  # pragma: no cover - checked above
        raise DataError("entities and facts are required")
    return GraphTables(
        entities=entities,
        facts=facts,
        chunks=data["chunks"],
        mentions=data["mentions"],
        aliases=data["aliases"],
        embeddings=embeddings,
    )
