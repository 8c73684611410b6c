"""`LiveGraph`: a graph that takes incremental updates, durable first, then visible at once.

Every update (add / update / delete, usage write-back) runs in three steps:

1. **validate**: the changed table is checked against the current state with
   :meth:`GraphTables.check`'s rules (nothing is written when anything is refused, unless
   an add says ``on_bad="skip"``) and the new :class:`~graphrecall.KnowledgeGraph` is built,
   not yet visible;
2. **commit**: the change is written to the store in one transaction (durable when it
   returns, see :mod:`graphrecall.storage.sqlite`);
3. **swap**: the new graph, with the tables it was built from, replaces the current one
   under a lock, and ``version`` increments.

If any step fails, nothing changes: neither the file nor the graph. Readers call
:attr:`LiveGraph.graph` (or :meth:`LiveGraph.current` for the graph *and* its tables and
version) and keep the object they got: it is immutable, so a query never sees half an
update, and readers never wait for an update to finish (updates run one at a time).

The new graph is a fast rebuild from the tables (O(graph) per update, numpy and the Rust
build), not a delta merged at query time.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import DataError, ParameterError, UnknownIdError
from .graph import KnowledgeGraph
from .storage import sqlite as _sqlite
from .storage.sqlite import SQLiteStore, fill_value, sql_values
from .tables import COLUMNS, NULL_TIME, BadDataError, EmbeddingSet, GraphTables, LoadReport, OnBad
from .tables import check_tables as _check
from .tables import to_column as _column
from .tables.columns import time_value

__all__ = ["GraphVersion", "LiveGraph", "UpdateReport"]

Array = npt.NDArray[Any]
_MAX_ACCESS = 2**32 - 2


@dataclass(frozen=True)
class GraphVersion:
    """One consistent state: the graph, the checked tables it was built from (names,
    literal values, chunk texts for narratives) and its version number."""

    version: int
    graph: KnowledgeGraph
    tables: GraphTables


@dataclass(frozen=True)
class UpdateReport:
    """What one committed update did.

    Attributes:
        operation: The method (``"add_facts"``, ``"delete_entities"``...).
        version: The graph version that shows the change.
        rows: Rows written per table: added, updated or deleted, cascades included
            (``entities.primary_chunk`` counts entities whose primary chunk was cleared).
        check: For adds, what the check refused or skipped (its tables and rows are the
            new rows).
    """

    operation: str
    version: int
    rows: Mapping[str, int] = field(default_factory=dict)
    check: LoadReport | None = None

    def __str__(self) -> str:
        parts = ", ".join(f"{t}: {n}" for t, n in self.rows.items()) or "no rows"
        text = f"{self.operation} -> version {self.version} ({parts})"
        if self.check is not None and not self.check.ok:
            text += "\n" + str(self.check)
        return text


class LiveGraph:
    """The current graph of a store, updated incrementally (see the module doc).

    Made by :meth:`SQLiteStore.load`. Records are dicts with the columns of
    :class:`GraphTables` (a missing key takes the column's default: confidence 1.0,
    status "confirmed", no time...).

    Attributes:
        store: The store updates are committed to.
        report: What the load's check refused or skipped.
    """

    def __init__(self, store: SQLiteStore, tables: GraphTables, *, on_bad: OnBad = "raise"):
        checked = _check(tables, on_bad)
        self.store = store
        self.report = checked.report
        graph = checked.tables.build_graph()
        self._update_lock = threading.RLock()
        self._swap_lock = threading.Lock()
        self._current = GraphVersion(0, graph, checked.tables)
        self._tables = checked.tables  # the committed state (ahead of the graph when
        # record_access(refresh=False) left counts to show)

    # ------------------------------------------------------------------ readers

    @property
    def graph(self) -> KnowledgeGraph:
        """The current graph: complete and immutable; keep it for a whole query."""
        with self._swap_lock:
            return self._current.graph

    @property
    def version(self) -> int:
        """The number of updates swapped in since the load."""
        with self._swap_lock:
            return self._current.version

    @property
    def tables(self) -> GraphTables:
        """The tables of the current graph (names, literal values, chunk texts...)."""
        with self._swap_lock:
            return self._current.tables

    def current(self) -> GraphVersion:
        """The graph, its tables and version, from one consistent state."""
        with self._swap_lock:
            return self._current

    def __repr__(self) -> str:
        cur = self.current()
        return f"LiveGraph(version={cur.version}, {cur.graph!r}, store={self.store!r})"

    # ------------------------------------------------------------------ adds

    def add_entities(
        self, records: Iterable[Mapping[str, Any]], *, on_bad: OnBad = "raise"
    ) -> UpdateReport:
        """Add entities (``id`` required; ``tenant``, ``name``, ``type``, ...)."""
        return self._add("entities", records, on_bad)

    def add_facts(
        self, records: Iterable[Mapping[str, Any]], *, on_bad: OnBad = "raise"
    ) -> UpdateReport:
        """Add facts (``subject`` required). Without an ``id``, a fact gets the next int id
        (when the facts' ids are ints)."""
        return self._add("facts", records, on_bad)

    def add_chunks(
        self, records: Iterable[Mapping[str, Any]], *, on_bad: OnBad = "raise"
    ) -> UpdateReport:
        """Add chunks (``id`` required; ``text``, ``tags``, ``metadata``, ...)."""
        return self._add("chunks", records, on_bad)

    def add_mentions(
        self, records: Iterable[Mapping[str, Any]], *, on_bad: OnBad = "raise"
    ) -> UpdateReport:
        """Add chunk-entity mentions (``chunk``, ``entity``, ``count``)."""
        return self._add("mentions", records, on_bad)

    def add_aliases(
        self, records: Iterable[Mapping[str, Any]], *, on_bad: OnBad = "raise"
    ) -> UpdateReport:
        """Add entity aliases (``entity``, ``alias``)."""
        return self._add("aliases", records, on_bad)

    def _add(self, table: str, records: Iterable[Mapping[str, Any]], on_bad: OnBad) -> UpdateReport:
        recs = list(records)
        op = f"add_{table}"
        with self._update_lock:
            base = self._tables
            n_old = base.n_rows(table)
            new_cols = _records_to_columns(recs, table, base)
            combined = _concat_table(base, table, new_cols, len(recs))
            checked, report = self._check_change(base, table, combined, n_old, on_bad, op)
            cols = checked.table(table)
            assert cols is not None
            n_new = checked.n_rows(table) - n_old
            tables = _replace_table(base, table, cols)
            graph = tables.build_graph()
            with self.store.transaction() as cur:
                if n_new:
                    self.store.insert(
                        cur, tables, table, np.arange(n_old, n_old + n_new, dtype=np.int64)
                    )
            return self._swap(op, graph, tables, {table: n_new}, report)

    def _check_change(
        self,
        base: GraphTables,
        table: str,
        combined: dict[str, Array],
        n_old: int,
        on_bad: OnBad,
        op: str,
    ) -> tuple[GraphTables, LoadReport]:
        """Check a changed table against the others' ids and tenants; existing rows must
        stay valid whatever ``on_bad`` says (an update never drops stored rows)."""
        view = _reference_view(base, table, combined)
        label = f"{op} records"
        checked = _check(view, "skip", base={table: n_old}, label={table: label})
        keep = checked.keep[table]
        operation = "update" if op.startswith("update") else "add"
        if not keep[:n_old].all():  # stored rows are never dropped by an update
            raise BadDataError(LoadReport(checked.report.tables, "raise", operation))
        mine = tuple(t for t in checked.report.tables if t.table == label)
        if on_bad == "raise" and not LoadReport(mine).ok:
            raise BadDataError(LoadReport(mine, "raise", operation))
        return checked.tables, LoadReport(mine, on_bad, operation)

    # ------------------------------------------------------------------ updates

    def update_facts(self, records: Iterable[Mapping[str, Any]]) -> UpdateReport:
        """Change columns of existing facts: each record is ``{"id": ..., column: value,
        ...}``; the columns not named keep their values. Checked like an add (a bad value
        refuses the whole update).

        Raises:
            UnknownIdError: A record names a fact the graph does not hold.
            BadDataError: A new value breaks a rule.
        """
        recs = list(records)
        with self._update_lock:
            base = self._tables
            facts = base.facts
            if "id" not in facts:  # ids are the rows
                facts = {**facts, "id": np.arange(base.n_rows("facts"), dtype=np.int64)}
            ids = []
            for i, r in enumerate(recs):
                if "id" not in r:
                    raise DataError(f"update_facts records row {i}: has no 'id'")
                unknown = [k for k in r if k not in COLUMNS["facts"]]
                if unknown:
                    raise DataError(
                        f"update_facts records row {i}: unknown column {unknown[0]!r}; "
                        f"known: {list(COLUMNS['facts'])!r}"
                    )
                ids.append(r["id"])
            rows = self._rows_of("facts", ids)
            if len(np.unique(rows)) != len(rows):
                raise DataError("update_facts: a fact is named twice in one update")
            n = base.n_rows("facts")
            cols: dict[str, Array] = {}
            names = {k for r in recs for k in r} - {"id"}
            for col in COLUMNS["facts"]:
                if col in facts:
                    arr = facts[col]
                    cols[col] = arr.astype(object) if col in names else arr
                elif col in names:
                    cols[col] = _filled(base, "facts", col, n)
            for row, r in zip(rows.tolist(), recs, strict=True):
                for k, v in r.items():
                    if k != "id":
                        cols[k][row] = v
            # Only the updated rows are re-checked as "new": move them to the end.
            order = np.concatenate([np.setdiff1d(np.arange(n), rows), rows])
            moved = {c: a[order] for c, a in cols.items()}
            checked, _ = self._check_change(
                base, "facts", moved, n - len(rows), "raise", "update_facts"
            )
            checked_facts = checked.facts
            inverse = np.empty(n, dtype=np.int64)
            inverse[order] = np.arange(n)
            new_facts = {c: a[inverse] for c, a in checked_facts.items()}
            tables = replace(base, facts=new_facts)
            graph = tables.build_graph()

            with self.store.transaction() as cur:
                col_names, values = sql_values(tables, "facts", rows)
                sets = [c for c in col_names if c in names]
                if sets:
                    pos = [col_names.index(c) for c in sets]
                    cur.executemany(
                        f"UPDATE facts SET {', '.join(f'{c} = ?' for c in sets)} WHERE id = ?",
                        [
                            (*(v[p] for p in pos), i)
                            for v, i in zip(values, new_facts["id"][rows].tolist(), strict=True)
                        ],
                    )
            return self._swap("update_facts", graph, tables, {"facts": len(rows)}, None)

    # ------------------------------------------------------------------ deletes

    def delete_entities(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete entities and everything that refers to them: their facts (as subject or
        object), mentions, aliases and embeddings (all counted in the report).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            base = self._tables
            rows = self._rows_of("entities", list(ids))
            dead = np.zeros(base.n_rows("entities"), dtype=bool)
            dead[rows] = True
            dead_ids = base.entities["id"][rows]
            facts = base.facts
            f_dead = _member(facts["subject"], dead_ids)
            if "object" in facts:
                f_dead |= _member(facts["object"], dead_ids)
            out: dict[str, dict[str, Array] | None] = {
                "entities": _keep_rows(base.entities, ~dead),
                "facts": _keep_rows(facts, ~f_dead),
            }
            counts = {"entities": int(dead.sum()), "facts": int(f_dead.sum())}
            for table in ("mentions", "aliases"):
                cols = base.table(table)
                if cols is not None:
                    gone = _member(cols["entity"], dead_ids)
                    out[table] = _keep_rows(cols, ~gone)
                    counts[table] = int(gone.sum())
            tables = replace(base, **out)  # type: ignore[arg-type]
            tables, n_emb = _drop_orphan_embeddings(tables)
            counts["embeddings"] = n_emb
            graph = tables.build_graph()
            key = [(i,) for i in dead_ids.tolist()]
            with self.store.transaction() as cur:
                cur.executemany("DELETE FROM embeddings WHERE kind = 'entity' AND id = ?", key)
                cur.executemany("DELETE FROM mentions WHERE entity = ?", key)
                cur.executemany("DELETE FROM aliases WHERE entity = ?", key)
                cur.execute(
                    "DELETE FROM embeddings WHERE kind = 'alias' "
                    "AND id NOT IN (SELECT alias FROM aliases)"
                )
                cur.executemany(
                    "DELETE FROM facts WHERE subject = ? OR object = ?", [(i, i) for (i,) in key]
                )
                cur.executemany("DELETE FROM entities WHERE id = ?", key)
            return self._swap("delete_entities", graph, tables, counts, None)

    def delete_facts(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete facts by id.

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            base = self._tables
            id_list = list(ids)
            rows = self._rows_of("facts", id_list)
            dead = np.zeros(base.n_rows("facts"), dtype=bool)
            dead[rows] = True
            tables = replace(base, facts=_keep_rows(base.facts, ~dead))
            graph = tables.build_graph()
            fact_ids = base.facts["id"][rows].tolist() if "id" in base.facts else rows.tolist()
            with self.store.transaction() as cur:
                cur.executemany("DELETE FROM facts WHERE id = ?", [(i,) for i in fact_ids])
            return self._swap("delete_facts", graph, tables, {"facts": int(dead.sum())}, None)

    def delete_chunks(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete chunks, their mentions and embeddings; entities whose primary chunk was
        deleted keep existing with no primary chunk (counted as
        ``entities.primary_chunk``).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            base = self._tables
            rows = self._rows_of("chunks", list(ids))
            chunks = base.chunks
            assert chunks is not None  # _rows_of found the rows
            dead = np.zeros(base.n_rows("chunks"), dtype=bool)
            dead[rows] = True
            dead_ids = chunks["id"][rows]
            out: dict[str, Any] = {"chunks": _keep_rows(chunks, ~dead)}
            counts = {"chunks": int(dead.sum())}
            if base.mentions is not None:
                gone = _member(base.mentions["chunk"], dead_ids)
                out["mentions"] = _keep_rows(base.mentions, ~gone)
                counts["mentions"] = int(gone.sum())
            if "primary_chunk" in base.entities:
                pc = base.entities["primary_chunk"]
                cleared = _member(pc, dead_ids)
                if cleared.any():
                    pc = pc.copy()
                    pc[cleared] = None
                    out["entities"] = {**base.entities, "primary_chunk": pc}
                counts["entities.primary_chunk"] = int(cleared.sum())
            tables = replace(base, **out)
            tables, n_emb = _drop_orphan_embeddings(tables)
            counts["embeddings"] = n_emb
            graph = tables.build_graph()
            key = [(i,) for i in dead_ids.tolist()]
            with self.store.transaction() as cur:
                cur.executemany("DELETE FROM embeddings WHERE kind = 'chunk' AND id = ?", key)
                cur.executemany("DELETE FROM mentions WHERE chunk = ?", key)
                cur.executemany(
                    "UPDATE entities SET primary_chunk = NULL WHERE primary_chunk = ?", key
                )
                cur.executemany("DELETE FROM chunks WHERE id = ?", key)
            return self._swap("delete_chunks", graph, tables, counts, None)

    # ------------------------------------------------------------------ usage write-back

    def record_access(
        self,
        fact_ids: Iterable[Hashable] = (),
        chunk_ids: Iterable[Hashable] = (),
        *,
        at: Any,
        refresh: bool = True,
    ) -> UpdateReport:
        """Record that facts and chunks were returned: ``access_count`` += the number of
        times an id is given, ``last_accessed`` = ``at`` (never moved backwards), for all of
        them in one transaction. Returns after the commit, so an acknowledged batch is
        durable (``synchronous = FULL``).

        Args:
            fact_ids, chunk_ids: The accessed rows (an id may repeat).
            at: The access time (int seconds, datetime or datetime64).
            refresh: Swap in a graph with the new counts now (the usage boost of scoring
                reads them). With False the counts are durable at once and shown by the
                next update or :meth:`refresh` (no rebuild per batch).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is written).
        """
        t = _time(at)
        fids, cids = list(fact_ids), list(chunk_ids)
        with self._update_lock:
            base = self._tables
            out: dict[str, Any] = {}
            sql: list[tuple[str, list[tuple[Any, ...]]]] = []
            counts: dict[str, int] = {}
            for table, ids in (("facts", fids), ("chunks", cids)):
                if not ids:
                    continue
                rows = self._rows_of(table, ids)
                uniq, times = np.unique(rows, return_counts=True)
                cols = base.table(table)
                assert cols is not None
                n = base.n_rows(table)
                acc = cols.get("access_count", np.zeros(n, dtype=np.int64)).astype(np.int64)
                new_acc = acc.copy()
                new_acc[uniq] += times
                limit = _MAX_ACCESS if table == "facts" else 2**63 - 1
                if (new_acc[uniq] > limit).any():
                    raise DataError(f"record_access: {table}.access_count would exceed {limit}")
                last = cols.get("last_accessed", np.full(n, NULL_TIME, dtype=np.int64))
                new_last = last.copy()
                new_last[uniq] = np.maximum(np.where(last[uniq] == NULL_TIME, t, last[uniq]), t)
                out[table] = {**cols, "access_count": new_acc, "last_accessed": new_last}
                key_ids = cols["id"][uniq].tolist() if "id" in cols else uniq.tolist()
                sql.append(
                    (
                        f"UPDATE {table} SET access_count = access_count + ?, "
                        "last_accessed = max(coalesce(last_accessed, ?), ?) WHERE id = ?",
                        [(int(c), t, t, i) for c, i in zip(times.tolist(), key_ids, strict=True)],
                    )
                )
                counts[table] = len(uniq)
            tables = replace(base, **out)
            graph = tables.build_graph() if refresh else None
            with self.store.transaction() as cur:
                for statement, params in sql:
                    cur.executemany(statement, params)
            if graph is None:
                self._tables = tables
                return UpdateReport("record_access", self.version, counts)
            return self._swap("record_access", graph, tables, counts, None)

    def refresh(self) -> int:
        """Swap in a graph showing the counts of ``record_access(refresh=False)``; returns
        the version (unchanged if nothing was pending)."""
        with self._update_lock:
            if self._tables is self.tables:
                return self.version
            graph = self._tables.build_graph()
            return self._swap("refresh", graph, self._tables, {}, None).version

    # ------------------------------------------------------------------ helpers

    def _rows_of(self, table: str, ids: Sequence[Hashable]) -> npt.NDArray[np.int64]:
        """Rows of the committed tables holding ``ids`` (UnknownIdError otherwise)."""
        g = self.graph  # rows of the graph == rows of the tables (same row sets)
        if table == "entities":
            return g.entity_index(ids)
        if table == "facts":
            return g.fact_index(ids)
        if table == "chunks":
            if self._tables.chunks is None:
                raise UnknownIdError("chunks: the graph holds no chunks")
            return g.chunk_index(ids)
        raise ParameterError(f"no ids in {table}")  # pragma: no cover

    def _swap(
        self,
        op: str,
        graph: KnowledgeGraph,
        tables: GraphTables,
        rows: Mapping[str, int],
        check: LoadReport | None,
    ) -> UpdateReport:
        with self._swap_lock:
            version = self._current.version + 1
            self._current = GraphVersion(version, graph, tables)
            self._tables = tables
        return UpdateReport(op, version, dict(rows), check)


# ------------------------------------------------------------------------------ helpers


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


def _records_to_columns(
    recs: list[Mapping[str, Any]], table: str, base: GraphTables
) -> dict[str, Array]:
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
        if col == "tenant":
            default: Any = _default_tenant(base, table)
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
            start = int(existing.max()) + 1 if len(existing) else 0
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


def _keep_rows(cols: dict[str, Array], keep: npt.NDArray[np.bool_]) -> dict[str, Array]:
    return {c: a[keep] for c, a in cols.items()}


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


_sqlite.register_live(LiveGraph)
