"""LiveGraph: validate an update against the current tables, commit it to the store, then
swap in the new graph (a generation of the current one for adds and fact changes, a new
base made from the current one for deletes, else a rebuild)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError, UnknownIdError
from ..graph import KnowledgeGraph
from ..storage import sqlite as _sqlite
from ..storage.sqlite import SQLiteStore
from ..tables import BadDataError, GraphTables, LoadReport, OnBad
from ..tables import check_tables as _check
from .changes import (
    _concat_table,
    _drop_orphan_embeddings,
    _keep_rows,
    _member,
    _records_to_columns,
    _reference_view,
    _replace_table,
    _time,
)
from .delete import Deletion, deletion, entity_facts
from .overlay import Change, FactChange, fact_generation, table_generation, with_core
from .report import GraphVersion, UpdateReport
from .rows import Undo, checked_alone, checked_rows_alone, undo_rows
from .updates import update_facts as _update_facts
from .usage import access_changes

Array = npt.NDArray[Any]


class LiveGraph:
    """The current graph of a store, updated incrementally (see :mod:`graphrecall.live`).

    Made by :meth:`SQLiteStore.load`. Records are dicts with the columns of
    :class:`GraphTables` (a missing key takes the column's default: confidence 1.0,
    status "confirmed", no time...).

    Several writers (live graphs in other processes, or over other connections to the same
    file) may share a store: each update runs inside the store's write transaction on the
    latest committed state (a graph first catches up with what others committed, so a new
    fact's id is the next one in the file, not in this process's older view), and a reader
    that finds another connection's commit (SQLite's ``data_version``) reloads the graph
    before it answers.

    Attributes:
        store: The store updates are committed to.
        report: What the load's check refused or skipped.
    """

    def __init__(
        self,
        store: SQLiteStore,
        tables: GraphTables,
        *,
        on_bad: OnBad = "raise",
        data_version: int | None = None,
        compact_at: float = 0.02,
    ):
        """Use :meth:`SQLiteStore.load` (``data_version``: the store's data version when
        ``tables`` were read; read now when None; ``compact_at``: the overlay size, as a
        fraction of the facts, that starts a background compaction)."""
        checked = _check(tables, on_bad)
        self.store = store
        self._on_bad: OnBad = on_bad
        self._data_version = store.data_version() if data_version is None else data_version
        self.report = checked.report
        graph = checked.tables.build_graph()
        self._update_lock = threading.RLock()
        self._swap_lock = threading.Lock()
        self._current = GraphVersion(0, graph, checked.tables)
        self._tables = checked.tables  # the committed state (ahead of the graph when
        # record_access(refresh=False) left counts to show)
        self.compact_at = compact_at
        # Fact changes since the graph's base (replayed on a compaction's new base), and
        # the number of rebuilds (a compaction of an older base is dropped).
        self._log: list[Change | Deletion] = []
        self._epoch = 0
        self._compactor: threading.Thread | None = None
        self._spare: dict[str, Array] = {}  # fact columns with room to append (rows.py)
        self.compaction_error: BaseException | None = None
        #: Write ``update_facts`` / ``record_access`` rows into the committed fact columns
        #: in place (O(change) instead of a copy of each changed column), so the tables a
        #: reader got with an older graph show the later values (see :mod:`graphrecall.live`).
        self.write_in_place = False

    # ------------------------------------------------------------------ readers

    @property
    def graph(self) -> KnowledgeGraph:
        """The current graph: complete and immutable; keep it for a whole query."""
        return self.current().graph

    @property
    def version(self) -> int:
        """The number of updates (and reloads after other writers' commits) swapped in
        since the load."""
        return self.current().version

    @property
    def tables(self) -> GraphTables:
        """The tables of the current graph (names, literal values, chunk texts...)."""
        return self.current().tables

    def current(self) -> GraphVersion:
        """The graph, its tables and version, from one consistent state (reloaded first
        when another connection has committed to the store)."""
        self._poll()
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
            with self._writing(fold=False) as cur:  # appends: the fact log may stay
                base = self._tables
                n_old = base.n_rows(table)
                largest = None
                if table == "facts" and self._tables is self._current.tables:
                    largest = self._current.graph.fact_map.largest  # not a scan of the ids
                new_cols = _records_to_columns(recs, table, base, largest)
                fast = None
                if table == "facts":
                    fast = checked_alone(
                        base, self._current.graph, new_cols, len(recs), op, spare=self._spare
                    )
                elif base is self._current.tables:  # rows of the graph == rows of the tables
                    fast = checked_rows_alone(
                        base, self._current.graph, table, new_cols, len(recs), op
                    )
                if fast is not None:
                    cols, report = fast
                    report = LoadReport(report.tables, on_bad, "add")
                else:
                    combined = _concat_table(base, table, new_cols, len(recs))
                    checked, report = self._check_change(base, table, combined, n_old, on_bad, op)
                    table_cols = checked.table(table)
                    assert table_cols is not None
                    cols = table_cols
                tables = _replace_table(base, table, cols)
                n_new = tables.n_rows(table) - n_old
                change: Change | None
                if table == "facts":
                    graph, change = self._generation(
                        tables, np.arange(n_old, n_old + n_new, dtype=np.int64)
                    )
                else:
                    graph, change = self._table_generation(table, tables)
                if n_new:
                    self.store.insert(
                        cur, tables, table, np.arange(n_old, n_old + n_new, dtype=np.int64)
                    )
            return self._swap(op, graph, tables, {table: n_new}, report, change)

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
        undo: Undo = []
        with self._update_lock:
            try:
                made = _update_facts(self, recs, undo)
            except BaseException:
                undo_rows(undo)  # nothing was committed: the tables hold what they held
                raise
            return self._swap(*made)

    # ------------------------------------------------------------------ deletes

    def delete_entities(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete entities and everything that refers to them: their facts (as subject or
        object), mentions, aliases and embeddings (all counted in the report).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            with self._writing() as cur:
                base = self._tables
                rows = self._rows_of("entities", list(ids))
                dead = np.zeros(base.n_rows("entities"), dtype=bool)
                dead[rows] = True
                dead_ids = base.entities["id"][rows]
                facts = base.facts
                f_dead = np.zeros(base.n_rows("facts"), dtype=bool)
                f_dead[entity_facts(self._current.graph, rows)] = True
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
                graph, change = self._deletion(
                    tables, entities=rows, facts=np.flatnonzero(f_dead).astype(np.int64)
                )
                key = [(i,) for i in dead_ids.tolist()]
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
            return self._swap("delete_entities", graph, tables, counts, None, change)

    def delete_facts(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete facts by id.

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            with self._writing() as cur:
                base = self._tables
                id_list = list(ids)
                rows = self._rows_of("facts", id_list)
                dead = np.zeros(base.n_rows("facts"), dtype=bool)
                dead[rows] = True
                tables = replace(base, facts=_keep_rows(base.facts, ~dead))
                graph, change = self._deletion(tables, facts=rows)
                fact_ids = base.facts["id"][rows].tolist() if "id" in base.facts else rows.tolist()
                cur.executemany("DELETE FROM facts WHERE id = ?", [(i,) for i in fact_ids])
            return self._swap(
                "delete_facts", graph, tables, {"facts": int(dead.sum())}, None, change
            )

    def delete_chunks(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete chunks, their mentions and embeddings; entities whose primary chunk was
        deleted keep existing with no primary chunk (counted as
        ``entities.primary_chunk``).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            with self._writing() as cur:
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
                graph, change = self._deletion(tables, chunks=rows)
                key = [(i,) for i in dead_ids.tolist()]
                cur.executemany("DELETE FROM embeddings WHERE kind = 'chunk' AND id = ?", key)
                cur.executemany("DELETE FROM mentions WHERE chunk = ?", key)
                cur.executemany(
                    "UPDATE entities SET primary_chunk = NULL WHERE primary_chunk = ?", key
                )
                cur.executemany("DELETE FROM chunks WHERE id = ?", key)
            return self._swap("delete_chunks", graph, tables, counts, None, change)

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
        undo: Undo = []
        with self._update_lock:
            try:
                with self._writing(fold=False) as cur:  # the updates name the fact log too
                    # Shown at once: counts written in place (undone if the commit fails).
                    tables, sql, counts = access_changes(
                        self._tables,
                        (("facts", fids), ("chunks", cids)),
                        self._rows_of,
                        t,
                        undo
                        if self.write_in_place and refresh and self._tables is self._current.tables
                        else None,
                        fact_tables=self.store.fact_tables,
                    )
                    graph, change = None, None
                    if refresh:
                        rows = self._rows_of("facts", fids) if fids else np.zeros(0, np.int64)
                        graph, change = self._generation(tables, np.unique(rows))
                    for statement, params in sql:
                        cur.executemany(statement, params)
            except BaseException:
                undo_rows(undo)
                raise
            if graph is None:
                self._tables = tables
                return UpdateReport("record_access", self._current.version, counts)
            return self._swap("record_access", graph, tables, counts, None, change)

    def refresh(self) -> int:
        """Swap in a graph showing the counts of ``record_access(refresh=False)`` and what
        other connections committed; returns the version (unchanged if nothing was
        pending)."""
        with self._update_lock:
            if not self.store.closed:
                with self.store.snapshot():
                    self._catch_up()
            with self._swap_lock:
                if self._tables is self._current.tables:
                    return self._current.version
            graph = self._tables.build_graph()
            return self._swap("refresh", graph, self._tables, {}, None).version

    # ------------------------------------------------------------------ other writers

    @contextmanager
    def _writing(self, *, fold: bool = True) -> Iterator[sqlite3.Cursor]:
        """The store's write transaction, with this graph caught up with the state it
        holds (the caller holds the update lock; ``fold``: the store's)."""
        with self.store.transaction(fold=fold) as cur:
            self._catch_up()
            yield cur

    def _catch_up(self) -> None:
        """Reload the graph if another connection committed since this one last looked
        (inside a transaction or snapshot of the store, under the update lock)."""
        seen = self.store.data_version()
        if seen == self._data_version:
            return
        checked = _check(self.store.read(), self._on_bad)
        graph = checked.tables.build_graph()
        self._data_version = seen
        self._swap("reload", graph, checked.tables, {}, None)

    def _poll(self) -> None:
        """Catch up before a read, unless an update is running (it catches up itself) or
        the store is closed (the graph then stays as it is)."""
        if self.store.closed or not self._update_lock.acquire(blocking=False):
            return
        try:
            if self.store.data_version() != self._data_version:
                with self.store.snapshot():
                    self._catch_up()
        finally:
            self._update_lock.release()

    # ------------------------------------------------------------------ helpers

    def _rows_of(self, table: str, ids: Sequence[Hashable]) -> npt.NDArray[np.int64]:
        """Rows of the committed tables holding ``ids`` (UnknownIdError otherwise)."""
        g = self._current.graph  # rows of the graph == rows of the tables (same row sets)
        if table == "entities":
            return g.entity_index(ids)
        if table == "facts":
            return g.fact_index(ids)
        if table == "chunks":
            if self._tables.chunks is None:
                raise UnknownIdError("chunks: the graph holds no chunks")
            return g.chunk_index(ids)
        raise ParameterError(f"no ids in {table}")  # pragma: no cover

    def _generation(
        self, tables: GraphTables, rows: npt.NDArray[np.int64]
    ) -> tuple[KnowledgeGraph, FactChange | None]:
        """The graph of ``tables``, whose facts differ from the current graph's tables at
        ``rows`` only: a generation over the current graph (no rebuild) when it can be
        one, else a rebuild (then no change to log)."""
        cur = self._current
        if self._tables is cur.tables:  # no usage counts waiting for a refresh
            made = fact_generation(cur.graph, cur.tables, tables, rows)
            if made is not None:
                return made
        return tables.build_graph(), None

    def _deletion(
        self,
        tables: GraphTables,
        *,
        entities: npt.NDArray[np.int64] | None = None,
        facts: npt.NDArray[np.int64] | None = None,
        chunks: npt.NDArray[np.int64] | None = None,
    ) -> tuple[KnowledgeGraph, Deletion | None]:
        """The graph of ``tables``, the current tables without the rows given: made from
        the current graph when it can be (no rebuild), else rebuilt (no change to log)."""
        cur = self._current
        if self._tables is cur.tables:  # no usage counts waiting for a refresh
            made = deletion(cur.graph, cur.tables, tables, entities, facts, chunks)
            if made is not None:
                return made
        return tables.build_graph(), None

    def _table_generation(
        self, table: str, tables: GraphTables
    ) -> tuple[KnowledgeGraph, Change | None]:
        """The graph of ``tables``, whose ``table`` is the current tables' with rows
        appended: a generation over the current graph when it can be one, else a
        rebuild."""
        cur = self._current
        if self._tables is cur.tables:
            made = table_generation(table, cur.graph, cur.tables, tables)
            if made is not None:
                return made
        return tables.build_graph(), None

    def _swap(
        self,
        op: str,
        graph: KnowledgeGraph,
        tables: GraphTables,
        rows: Mapping[str, int],
        check: LoadReport | None,
        change: Change | Deletion | None = None,
    ) -> UpdateReport:
        """Publish a new state (the caller holds the update lock, or is the constructor's
        load). ``change``: the change that made ``graph`` from the current graph (a
        generation, or a delete's new base), replayed on a running compaction's base;
        None for a rebuilt graph (a new base)."""
        with self._swap_lock:
            version = self._current.version + 1
            self._current = GraphVersion(version, graph, tables)
            self._tables = tables
        if change is None:
            self._log = []
            self._epoch += 1
        else:
            self._log.append(change)
            core = graph.core
            if core.overlay_len > max(1024, self.compact_at * core.n_facts):
                self.compact(wait=False)
        return UpdateReport(op, version, dict(rows), check)

    # ------------------------------------------------------------------ compaction

    @property
    def overlay_len(self) -> int:
        """Fact positions in the current graph's overlay (0 after a rebuild or compaction)."""
        return int(self.current().graph.core.overlay_len)

    def compact(self, *, wait: bool = True) -> None:
        """Merge the overlay of fact changes into a new base and swap it in; readers are
        never blocked, and updates made meanwhile are replayed on the new base. ``wait``:
        return once it is swapped in (False: only start it, unless one is running)."""
        with self._update_lock:
            running = self._compactor
            if running is None or not running.is_alive():
                core = self._current.graph.core
                if core.overlay_len == 0:
                    self._log = []  # entities appended to a base: nothing to merge
                    return
                running = threading.Thread(
                    target=self._compact,
                    args=(core, self._epoch, len(self._log)),
                    name="graphrecall-compaction",
                    daemon=True,
                )
                self._compactor = running
                running.start()
        if wait:
            running.join()

    def _compact(self, core: Any, epoch: int, n_log: int) -> None:
        """Build the new base of ``core`` (without any lock), then replay the changes logged
        since and swap it in, unless a rebuild made a new base meanwhile."""
        try:
            base = core.compacted()
            with self._update_lock:
                if epoch != self._epoch:
                    return
                for change in self._log[n_log:]:
                    base = change.apply(base)
                with self._swap_lock:
                    cur = self._current
                    self._current = GraphVersion(
                        cur.version, with_core(cur.graph, base), cur.tables
                    )
                self._log = self._log[n_log:]
        except Exception as exc:
            self.compaction_error = exc


_sqlite.register_live(LiveGraph)
