"""LiveGraph: validate an update against the current tables, commit it to the store, then
swap in the new graph (a generation of the current one for adds, fact changes and
deletes, a new base made from the current one where a delete cannot be a generation, else
a rebuild)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError, UnknownIdError
from ..graph import KnowledgeGraph
from ..storage import sqlite as _sqlite
from ..storage.sqlite import SQLiteStore
from ..tables import GraphTables, LoadReport, OnBad
from ..tables import check_tables as _check
from . import deletes as _deletes
from .changes import (
    _concat_table,
    _records_to_columns,
    _replace_table,
    _time,
)
from .compaction import compact_in_background, without_tombstones
from .dead import (
    ChunkTombstones,
    EntityTombstones,
    dead_entities_of,
    has_dead_rows,
    live_tables,
    reuses_dead_row,
)
from .delete import Deletion, deletion
from .overlay import Change, FactChange, fact_generation, table_generation
from .pair_deletes import delete_pairs_of
from .report import GraphVersion, UpdateReport
from .row_updates import update_table
from .rows import Undo, check_change, checked_alone, checked_rows_alone, undo_rows
from .tombstones import (
    Tombstones,
    dead_of,
    reuses_deleted_id,
)
from .updates import update_facts as _update_facts
from .usage import record_access

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
        # The store's content count this graph holds; unknown at first (the tables may
        # predate a later count), so the first change seen reloads.
        self._content: int | None = None
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
        self._log: list[Change | Deletion | Tombstones | EntityTombstones | ChunkTombstones] = []
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
        """The tables of the current graph (names, literal values, chunk texts...), without
        deleted rows: a graph holding deleted facts, entities or chunks is compacted first
        (so that a caller who builds from these tables alone gets the same graph)."""
        self._poll()
        with self._update_lock:
            self._drop_tombstones()
            return self.current().tables

    def current(self) -> GraphVersion:
        """The graph, its tables and version, from one consistent state (reloaded first
        when another connection has committed to the store). The tables may still hold
        the rows of facts, entities and chunks deleted since the last compaction
        (:attr:`GraphVersion.dead_facts`, ``dead_entities``, ``dead_chunks``): the graph
        reaches them from nowhere, and ``GraphRAG.update(cur.tables, graph=cur.graph)``
        masks the facts and indexes a new base without the entities and chunks."""
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
                if table == "facts" and reuses_deleted_id(self._current, recs):
                    self._drop_tombstones()  # the id's dead row goes first
                if table in ("entities", "chunks") and reuses_dead_row(
                    self._current.graph, self._current.tables, table, recs
                ):
                    self._drop_tombstones()  # the id's dead row goes first
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
                if fast is None and has_dead_rows(self._current.graph):
                    # The whole table's check and a rebuild read the tables without
                    # dead rows: the new base first.
                    self._drop_tombstones()
                    base = self._tables
                    n_old = base.n_rows(table)
                if fast is not None:
                    cols, report = fast
                    report = LoadReport(report.tables, on_bad, "add")
                else:
                    combined = _concat_table(base, table, new_cols, len(recs))
                    checked, report = check_change(base, table, combined, n_old, on_bad, op)
                    table_cols = checked.table(table)
                    assert table_cols is not None
                    cols = table_cols
                tables = _replace_table(base, table, cols)
                n_new = tables.n_rows(table) - n_old
                change: Change | None
                if table == "facts":
                    graph, change, shown = self._generation(
                        tables, np.arange(n_old, n_old + n_new, dtype=np.int64)
                    )
                else:
                    graph, change, shown = self._table_generation(table, tables)
                if n_new:
                    self.store.insert(
                        cur, tables, table, np.arange(n_old, n_old + n_new, dtype=np.int64)
                    )
            return self._swap(op, graph, shown, {table: n_new}, report, change)

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
            if any("subject" in r or "object" in r for r in recs) and len(
                dead_entities_of(self._current.graph)
            ):
                self._drop_tombstones()  # a fact never moves to a dead entity's row
            try:
                made = _update_facts(self, recs, undo)
            except BaseException:
                undo_rows(undo)  # nothing was committed: the tables hold what they held
                raise
            return self._swap(*made)

    def update_entities(self, records: Iterable[Mapping[str, Any]]) -> UpdateReport:
        """Change columns of existing entities: ``{"id": ..., column: value, ...}``, the
        columns not named kept; every column but ``id`` may change. Checked as a fresh
        build checks them; a generation (no rebuild) unless the tenant vocabulary
        changes (see :mod:`.row_updates`).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is written).
            DataError: A record without an id, with an unknown column, or named twice.
            BadDataError: A new value breaks a rule (the whole update is refused).
        """
        with self._update_lock:
            return self._swap(*update_table(self, "entities", list(records)))

    def update_chunks(self, records: Iterable[Mapping[str, Any]]) -> UpdateReport:
        """Change columns of existing chunks, as :meth:`update_entities`."""
        with self._update_lock:
            return self._swap(*update_table(self, "chunks", list(records)))

    # ------------------------------------------------------------------ deletes

    def delete_entities(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete entities and everything that refers to them: their facts (as subject or
        object), mentions, aliases and embeddings (all counted in the report). Cut out of
        the graph at once as tombstones (their ids unknown from then on), their table rows
        dropped by the next compaction (see :mod:`graphrecall.live.dead`).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            with self._writing() as cur:
                made = _deletes.delete_entities(self, list(ids), cur)
            return self._swap(*made)

    def delete_facts(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete facts by id: cut out of the graph at once as tombstones (their ids are
        unknown from then on), their table rows dropped by the next compaction (see
        :mod:`graphrecall.live.tombstones`).

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            with self._writing() as cur:
                made = _deletes.delete_facts(self, list(ids), cur)
            return self._swap(*made)

    def delete_chunks(self, ids: Iterable[Hashable]) -> UpdateReport:
        """Delete chunks, their mentions and embeddings; entities whose primary chunk was
        deleted keep existing with no primary chunk (counted as
        ``entities.primary_chunk``). Tombstones, as :meth:`delete_entities`.

        Raises:
            UnknownIdError: An id the graph does not hold (nothing is deleted).
        """
        with self._update_lock:
            with self._writing() as cur:
                made = _deletes.delete_chunks(self, list(ids), cur)
            return self._swap(*made)

    def delete_mentions(self, pairs: Iterable[Any]) -> UpdateReport:
        """Delete mentions by ``(chunk, entity)`` (or ``{"chunk": ..., "entity": ...}``):
        mentions have no id, and one row per pair. A generation (the core rewrites the
        touched mention rows; see :mod:`.pair_deletes`).

        Raises:
            UnknownIdError: A chunk or entity the graph does not hold, or a pair it does
                not hold (nothing is deleted).
            DataError: A malformed or repeated pair.
        """
        with self._update_lock:
            return self._swap(*delete_pairs_of(self, "mentions", pairs))

    def delete_aliases(self, pairs: Iterable[Any]) -> UpdateReport:
        """Delete aliases by ``(entity, alias)``, as :meth:`delete_mentions` (and the
        vectors of alias texts no alias holds any more)."""
        with self._update_lock:
            return self._swap(*delete_pairs_of(self, "aliases", pairs))

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
        with self._update_lock:
            graph, change, tables, shown, counts = record_access(
                self, list(fact_ids), list(chunk_ids), t, refresh
            )
            if graph is None:
                self._tables = tables
                return UpdateReport("record_access", self._current.version, counts)
            return self._swap("record_access", graph, shown, counts, None, change)

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
            graph, tables = self._rebuilt(self._tables)
            return self._swap("refresh", graph, tables, {}, None).version

    # ------------------------------------------------------------------ other writers

    @contextmanager
    def _writing(self, *, fold: bool = True) -> Iterator[sqlite3.Cursor]:
        """The store's write transaction, with this graph caught up with the state it
        holds (the caller holds the update lock; ``fold``: the store's)."""
        with self.store.transaction(fold=fold) as cur:
            self._catch_up()
            yield cur
        # Caught up inside the transaction, so the count it committed is this graph's.
        self._content = self.store.written

    def _catch_up(self) -> None:
        """Reload the graph if another connection committed since this one last looked
        (inside a transaction or snapshot of the store, under the update lock)."""
        seen = self.store.data_version()
        if seen == self._data_version:
            return
        content = self.store.content_version()
        if content is not None and content == self._content:
            self._data_version = seen  # a fold by another connection: the same content
            return
        checked = _check(self.store.read(), self._on_bad)
        graph = checked.tables.build_graph()
        self._data_version = seen
        self._content = content
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
    ) -> tuple[KnowledgeGraph, FactChange | None, GraphTables]:
        """The graph of ``tables``, whose facts differ from the current graph's tables at
        ``rows`` only, and the tables it goes with: a generation over the current graph
        (no rebuild) when it can be one, else a rebuild (then no change to log, and
        ``tables`` without the current graph's deleted rows)."""
        cur = self._current
        if self._tables is cur.tables:  # no usage counts waiting for a refresh
            made = fact_generation(cur.graph, cur.tables, tables, rows)
            if made is not None:
                return made[0], made[1], tables
        graph, shown = self._rebuilt(tables)
        return graph, None, shown

    def _deletion(
        self,
        tables: GraphTables,
        *,
        entities: npt.NDArray[np.int64] | None = None,
        facts: npt.NDArray[np.int64] | None = None,
        chunks: npt.NDArray[np.int64] | None = None,
    ) -> tuple[KnowledgeGraph, Deletion | None, GraphTables]:
        """The graph of ``tables``, the current tables (without tombstones) without the
        rows given, and the tables it goes with: made from the current graph when it can
        be (no rebuild), else rebuilt (no change to log)."""
        cur = self._current
        if self._tables is cur.tables:  # no usage counts waiting for a refresh
            made = deletion(cur.graph, cur.tables, tables, entities, facts, chunks)
            if made is not None:
                return made[0], made[1], tables
        return tables.build_graph(), None, tables

    def _table_generation(
        self, table: str, tables: GraphTables
    ) -> tuple[KnowledgeGraph, Change | None, GraphTables]:
        """The graph of ``tables``, whose ``table`` is the current tables' with rows
        appended, and the tables it goes with: a generation over the current graph when it
        can be one, else a rebuild (of the tables without the deleted fact rows)."""
        cur = self._current
        if self._tables is cur.tables:
            made = table_generation(table, cur.graph, cur.tables, tables)
            if made is not None:
                return made[0], made[1], tables
        graph, shown = self._rebuilt(tables)
        return graph, None, shown

    # ------------------------------------------------------------------ tombstones

    def _rebuilt(self, tables: GraphTables) -> tuple[KnowledgeGraph, GraphTables]:
        """A rebuild of ``tables`` (whose fact rows are the current graph's, then any
        appended) without the current graph's deleted fact rows, and those tables."""
        tables = live_tables(tables, self._current.graph)
        return tables.build_graph(), tables

    def _absorbing(self, change: Deletion | None) -> Deletion | None:
        """``change``, a new base made from the current graph, to log; None (a new base that
        no running compaction replays) when it also dropped the current graph's tombstones,
        whose rows the current tables then no longer hold."""
        g = self._current.graph
        return None if len(dead_of(g)) or has_dead_rows(g) else change

    def _drop_tombstones(self) -> None:
        """Compact the current graph now if it holds deleted facts, entities or chunks (the
        latter two by a new base without them), so that the tables hold no dead rows (the
        caller holds the update lock; a path that needs the whole tables, such as a rebuild or a
        new base, calls it first). The version stays: the state is the same; a running
        compaction is dropped."""
        made = without_tombstones(self._current, self._tables)
        if made is None:
            return
        graph, tables, pending = made
        with self._swap_lock:
            self._current = GraphVersion(self._current.version, graph, tables)
            self._tables = pending
        self._log = []
        self._epoch += 1

    def _swap(
        self,
        op: str,
        graph: KnowledgeGraph,
        tables: GraphTables,
        rows: Mapping[str, int],
        check: LoadReport | None,
        change: Change | Deletion | Tombstones | EntityTombstones | ChunkTombstones | None = None,
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
                if has_dead_rows(self._current.graph):
                    self._drop_tombstones()  # dead entities and chunks: a new base, now
                    return
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
        """The background compaction of ``core`` (see :func:`.compaction.compact_in_background`)."""
        compact_in_background(self, core, epoch, n_log)


_sqlite.register_live(LiveGraph)
