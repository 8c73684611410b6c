"""Column edits on :class:`~graphrecall.tables.GraphTables` that the live updates share:
records to columns, concatenation, row removal and the tables a change is checked against."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError
from ..storage.sqlite import fill_value
from ..tables import COLUMNS, NULL_TIME, EmbeddingSet, GraphTables
from ..tables import to_column as _column
from ..tables.columns import time_value

Array = npt.NDArray[Any]


def _time(at: Any) -> int:
    try:
        t = time_value(at, "record_access", "at", 0)
    except DataError:
        raise ParameterError(f"invalid parameter at: {at!r} is not a time") from None
    if t == NULL_TIME:
        raise ParameterError(f"invalid parameter at: {at!r} is not a time")
    return t


def _object(values: list[Any]) -> Array:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _default_tenant(tables: GraphTables, table: str) -> Any:
    """The tenant of rows that give none: the table's single tenant, or the other table's
    (entities / chunks), or 0; None (refused: "tenant is missing") when there are several."""
    own = tables.table(table)
    if own is not None and "tenant" in own:
        distinct = set(own["tenant"].tolist())
        return distinct.pop() if len(distinct) == 1 else None
    other = tables.table("chunks" if table == "entities" else "entities")
    if other is not None and "tenant" in other:
        distinct = set(other["tenant"].tolist())
        return distinct.pop() if len(distinct) == 1 else None
    return 0


def _filled(tables: GraphTables, table: str, col: str, n: int) -> Array:

    if col == "tenant":
        value = _default_tenant(tables, table)
    else:
        value = fill_value(tables, table, col)
    return _column([value] * n, table, col)


def record_changes(
    table: str, recs: list[Mapping[str, Any]], op: str
) -> tuple[list[Any], set[str]]:
    """The ids that update records name and the columns they change (a DataError for a
    record without an id or with a column the table does not have)."""
    ids: list[Any] = []
    names: set[str] = set()
    for i, r in enumerate(recs):
        if not isinstance(r, Mapping) or "id" not in r:
            raise DataError(
                f"{op} records row {i}: has no 'id' (the id names the row to change; "
                "it cannot change itself)",
                table=table,
                row=i,
                kind="missing_id",
            )
        unknown = [k for k in r if k not in COLUMNS[table]]
        if unknown:
            raise DataError(
                f"{op} records row {i}: unknown column {unknown[0]!r}; "
                f"known: {list(COLUMNS[table])!r}",
                table=table,
                row=i,
                column=str(unknown[0]),
                kind="unknown_column",
            )
        ids.append(r["id"])
        names.update(k for k in r if k != "id")
    return ids, names


def changed_last(
    stored: Mapping[str, Array],
    base: GraphTables,
    table: str,
    rows: npt.NDArray[np.int64],
    recs: list[Mapping[str, Any]],
    names: set[str],
) -> tuple[dict[str, Array], npt.NDArray[np.int64]]:
    """``table``'s columns (``stored``) with the records' values written into copies of the
    changed columns (a column the table lacks is filled first), the changed rows moved to
    the end so that a check reports them as the new rows, and the order that moved them."""
    n = base.n_rows(table)
    cols: dict[str, Array] = {}
    for col in COLUMNS[table]:
        if col in stored:
            cols[col] = stored[col].astype(object) if col in names else stored[col]
        elif col in names:
            cols[col] = _filled(base, table, col, n)
    for row, r in zip(rows.tolist(), recs, strict=True):
        for c, v in r.items():
            if c != "id":
                cols[c][row] = v
    order = np.concatenate([np.setdiff1d(np.arange(n), rows), rows])
    return {c: a[order] for c, a in cols.items()}, order


def put_back(cols: Mapping[str, Array], order: npt.NDArray[np.int64]) -> dict[str, Array]:
    """Columns moved by :func:`changed_last`'s ``order``, in their rows' places again."""
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.arange(len(order))
    return {c: a[inverse] for c, a in cols.items()}


def _records_to_columns(
    recs: list[Mapping[str, Any]], table: str, base: GraphTables, largest: int | None = None
) -> dict[str, Array]:
    """The columns of new records (absent keys take the column's default; facts without
    an id get the next ints after the largest, ``largest`` when the caller knows it)."""
    known = COLUMNS[table]
    keys: set[str] = set()
    for i, r in enumerate(recs):
        unknown = [k for k in r if k not in known]
        if unknown:
            raise DataError(
                f"add_{table} records row {i}: unknown column {unknown[0]!r}; "
                f"known: {list(known)!r}"
            )
        keys.update(r)
    cols: dict[str, Array] = {}
    for col in known:
        if col not in keys:
            continue
        if col == "tenant":  # the default scans the tenants: only when a record lacks one
            default: Any = _default_tenant(base, table) if any(col not in r for r in recs) else None
        else:
            default = fill_value(base, table, col)
        cols[col] = _column([r.get(col, default) for r in recs], table, col)
    if table == "facts" and "id" in base.facts:
        existing = base.facts["id"]
        need = [i for i, r in enumerate(recs) if "id" not in r]
        if need:
            if existing.dtype != np.int64 and len(existing):
                raise DataError(
                    f"add_facts records row {need[0]}: has no 'id' (the facts' ids are not "
                    "all ints, so give every new fact an id)"
                )
            top = largest if largest is not None else int(existing.max()) if len(existing) else -1
            start = top + 1
            ids = cols.get("id", _object([None] * len(recs)))
            for k, i in enumerate(need):
                ids[i] = start + k
            cols["id"] = ids
    return cols


_NULLABLE_INTS = frozenset(
    {"created_at", "expires_at", "last_accessed", "valid_from", "valid_to", "sequence"}
)


def _concat(a: Array, b: Array, col: str) -> Array:
    """Stored rows + new rows. New values are typed like the stored column when they can
    be (so that the check stays vectorised); otherwise both become objects."""
    if b.dtype == object and a.dtype.kind in "if" and len(b):
        kinds = set(map(type, b.tolist()))
        if a.dtype.kind == "f" and kinds <= {int, float}:
            b = np.asarray(b.tolist(), dtype=a.dtype)
        elif a.dtype == np.int64 and col in _NULLABLE_INTS and kinds <= {int, type(None)}:
            b = np.array([NULL_TIME if v is None else v for v in b.tolist()], dtype=np.int64)
    if a.dtype == b.dtype and a.dtype.kind != "U":
        return np.concatenate([a, b])
    return np.concatenate([a.astype(object), b.astype(object)])


def _append(a: Array, b: Array, col: str, spare: dict[str, Array]) -> Array:
    """``_concat(a, b)`` in amortised O(len(b)): when ``a`` is the front of the buffer
    ``spare[col]`` with room after it, ``b`` is written there and the longer front returned
    (rows a published view holds are never written); otherwise a buffer twice the size is
    made. Views of older lengths stay valid."""
    typed = _concat(a[:0], b, col)
    if typed.dtype != a.dtype:
        return _concat(a, b, col)
    n, k = len(a), len(b)
    buf = spare.get(col)
    if buf is None or a.base is not buf or n + k > len(buf) or buf.dtype != a.dtype:
        buf = np.empty(max(2 * (n + k), 1024), dtype=a.dtype)
        buf[:n] = a
        spare[col] = buf
    buf[n : n + k] = typed
    return buf[: n + k]


def _concat_table(
    base: GraphTables, table: str, new: dict[str, Array], n_new: int
) -> dict[str, Array]:
    old = base.table(table) or {}
    n_old = base.n_rows(table)
    if table == "facts" and "id" not in old and "id" in new:
        old = {**old, "id": np.arange(n_old, dtype=np.int64)}
    out: dict[str, Array] = {}
    for col in COLUMNS[table]:
        if col not in old and col not in new:
            continue
        a = old[col] if col in old else _filled(base, table, col, n_old)
        b = new[col] if col in new else _filled(base, table, col, n_new)
        out[col] = _concat(a, b, col)
    return out


def _reference_view(base: GraphTables, table: str, changed: dict[str, Array]) -> GraphTables:
    """The tables a changed table is checked with: itself, and the ids and tenants of the
    tables it refers to (entities and chunks); the other tables are left out."""

    def ids_only(name: str) -> dict[str, Array] | None:
        cols = base.table(name)
        if cols is None:
            return None
        return {c: cols[c] for c in ("id", "tenant") if c in cols}

    entities = changed if table == "entities" else ids_only("entities")
    assert entities is not None
    facts = changed if table == "facts" else {"subject": np.zeros(0, dtype=np.int64)}
    return GraphTables(
        entities=entities,
        facts=facts,
        chunks=changed if table == "chunks" else ids_only("chunks"),
        mentions=changed if table == "mentions" else None,
        aliases=changed if table == "aliases" else None,
        statuses=base.statuses,
        sources=base.sources,
    )


def _replace_table(tables: GraphTables, table: str, cols: dict[str, Array]) -> GraphTables:
    changes: dict[str, Any] = {table: cols}
    return replace(tables, **changes)


#: Rows dropped at most for which :func:`_keep_rows` copies the runs between them (a
#: slice copy is a memcpy; a boolean mask reads every row of it, and costs most on
#: object columns).
_FEW = 64


def _keep_rows(cols: dict[str, Array], keep: npt.NDArray[np.bool_]) -> dict[str, Array]:
    """The rows of ``cols`` where ``keep`` is True (new arrays)."""
    gone = np.flatnonzero(~keep)
    if not len(gone) or len(gone) > _FEW:
        return {c: a[keep] for c, a in cols.items()}
    starts = [0, *(gone + 1).tolist()]
    ends = [*gone.tolist(), len(keep)]
    runs = [(s, e) for s, e in zip(starts, ends, strict=True) if e > s]
    return {c: np.concatenate([a[s:e] for s, e in runs] or [a[:0]]) for c, a in cols.items()}


def _member(values: Array, ids: Array) -> npt.NDArray[np.bool_]:
    """values[i] in ids, for id columns (int64 or object; None never matches)."""
    if values.dtype == np.int64 and ids.dtype == np.int64:
        return np.isin(values, ids)
    wanted = set(ids.tolist())
    return np.fromiter((v in wanted for v in values.tolist()), dtype=bool, count=len(values))


def _drop_orphan_embeddings(tables: GraphTables) -> tuple[GraphTables, int]:
    """Drop the vectors of entities, chunks and alias texts no longer present (and sets
    left empty)."""
    if not tables.embeddings:
        return tables, 0
    present = {
        "entity": tables.entities["id"],
        "chunk": tables.chunks["id"] if tables.chunks is not None else np.zeros(0, np.int64),
        "alias": tables.aliases["alias"] if tables.aliases is not None else _object([]),
    }
    out: list[EmbeddingSet] = []
    dropped = 0
    for es in tables.embeddings:
        keep = _member(es.ids, present[es.kind])
        dropped += int((~keep).sum())
        if keep.any():  # a set left empty is no set (as a store reads it back)
            out.append(EmbeddingSet(es.kind, es.ids[keep], es.vectors[keep], es.model))
    return replace(tables, embeddings=out), dropped
