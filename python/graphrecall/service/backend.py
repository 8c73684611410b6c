"""What the service serves: a :class:`~graphrecall.GraphRAG` over a saved index or a SQLite
store, the tenant checks, and the write side (SQLite only) through
:class:`~graphrecall.live.LiveGraph`.

A write is validated, committed to SQLite (``synchronous = FULL``: durable when the commit
returns), then the retrieval index is updated incrementally and swapped in, all before the
response: an acknowledged write is durable and the next query sees it. Writes run one at a
time (the live graph's lock); reads keep the index they started with.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..embed import Embedder
from ..errors import UnknownIdError
from ..index import GraphIndex
from ..index_io import is_saved_index
from ..live import LiveGraph, UpdateReport
from ..rag import GraphRAG
from ..storage import SQLiteStore
from .errors import RequestError

__all__ = ["Backend"]


class Backend:
    """A :class:`GraphRAG` with the tenant checks and writes the service needs.

    Args:
        rag: What answers queries.
        live: The live graph of a SQLite store (None: read-only, e.g. a saved index).
        source: Where it was opened from (for ``/readyz``).
    """

    def __init__(self, rag: GraphRAG, live: LiveGraph | None = None, source: str = "") -> None:
        self.rag = rag
        self.live = live
        self.source = source
        self._write_lock = threading.Lock()
        self._closed = False

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, embedder: Embedder | str | None = "default"
    ) -> Backend:
        """Open a saved index directory (read-only) or a graphrecall SQLite store (writable).

        Raises:
            RequestError: ``path`` is neither (status 404, kind ``not_found``).
        """
        p = Path(path)
        if p.is_dir() and is_saved_index(p):
            return cls(GraphRAG.load(p, embedder=embedder), None, str(p))
        if not p.is_file():
            raise RequestError(
                404,
                f"{str(p)!r} is neither a graphrecall SQLite store nor a saved index",
                kind="not_found",
                input=str(p),
            )
        store = SQLiteStore.open(p)
        try:
            live = store.load()
            index = GraphIndex.build(live.tables, embedder=embedder, checked=True)
        except BaseException:
            store.close()
            raise
        return cls(GraphRAG(index), live, str(p))

    # ------------------------------------------------------------------ tenants

    @property
    def tenants(self) -> tuple[Hashable, ...]:
        """The tenants of the index, by name."""
        return tuple(self.rag.index.graph.tenants.names)

    def tenant(self, value: Any) -> Hashable | None:
        """The request's tenant, checked: required when the index holds several, and one
        the index holds (a digit string names an int tenant).

        Raises:
            RequestError: Missing on a multi-tenant index (422, kind ``missing``) or not a
                str / int (422).
            UnknownTenantError: A tenant the index does not hold.
        """
        graph = self.rag.index.graph
        names = graph.tenants.names
        if value is None:
            if len(names) > 1:
                raise RequestError(
                    422,
                    f"tenant is required: the index holds {len(names)} tenants",
                    kind="missing",
                    column="tenant",
                    parameter="tenant",
                )
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise RequestError(
                422,
                f"invalid parameter tenant: {type(value).__name__} is not a str or int",
                kind="invalid_parameter",
                parameter="tenant",
                column="tenant",
                input=repr(value),
            )
        if isinstance(value, str) and value not in names and value.isdigit():
            if int(value) in names:
                value = int(value)
        graph.tenant_code(value)  # UnknownTenantError
        checked: Hashable = value
        return checked

    # ------------------------------------------------------------------ writes

    def _live(self) -> LiveGraph:
        if self.live is None:
            raise RequestError(
                405,
                "this service serves a saved index, which is read-only: serve a SQLite store "
                "to write",
                kind="read_only",
            )
        if self._closed:
            raise RequestError(503, "the service is shutting down", kind="shutting_down")
        return self.live

    def _check_ids(
        self, live: LiveGraph, table: str, ids: Sequence[Hashable], tenant: Hashable | None
    ) -> None:
        """Every id names a row of ``table`` in ``tenant`` (another tenant's id reads as
        unknown, so that a tenant learns nothing about the others' ids).

        Raises:
            UnknownIdError: An id the tenant does not hold.
        """
        if not ids:
            return
        one_of = {"facts": "fact", "chunks": "chunk", "entities": "entity"}[table]
        cur = live.current()
        g, tables = cur.graph, cur.tables
        for pos, one in enumerate(ids):
            if isinstance(one, (list, dict)) or one is None:
                raise RequestError(
                    422,
                    f"invalid id in {table}: {one!r}",
                    kind="invalid_value",
                    table=table,
                    row=pos,
                    input=repr(one),
                )
        try:
            if table == "facts":
                rows = g.fact_index(ids)
            elif table == "chunks":
                rows = g.chunk_index(ids)
            else:
                rows = g.entity_index(ids)
        except UnknownIdError as exc:
            missing = exc.input if exc.input is not None else ids[0]
            raise UnknownIdError(
                f"no {one_of} {missing!r} in tenant {tenant!r}",
                kind="unknown_id",
                table=table,
                input=missing,
            ) from None
        if tenant is None or len(self.tenants) <= 1:
            return
        if table == "facts":
            subjects = tables.facts["subject"][rows]
            owner = np.asarray(tables.entities["tenant"], dtype=object)[g.entity_index(subjects)]
        elif table == "chunks":
            assert tables.chunks is not None  # rows were found, so chunks exist
            owner = np.asarray(tables.chunks["tenant"], dtype=object)[rows]
        else:
            owner = np.asarray(tables.entities["tenant"], dtype=object)[rows]
        bad = [i for i, t in enumerate(owner.tolist()) if t != tenant]
        if bad:
            raise UnknownIdError(
                f"no {one_of} {ids[bad[0]]!r} in tenant {tenant!r}",
                kind="unknown_id",
                table=table,
                row=bad[0],
                input=ids[bad[0]],
            )

    def _records(self, records: Any, table: str) -> list[dict[str, Any]]:
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise RequestError(
                422, f"{table} must be a list of objects", kind="invalid_value", table=table
            )
        return records

    def _apply(self, report: UpdateReport, live: LiveGraph) -> dict[str, Any]:
        """Swap in the index of the committed tables; the acknowledgement's body."""
        self.rag.update((cur := live.current()).tables, graph=cur.graph, checked=True)
        return {
            "operation": report.operation,
            "version": report.version,
            "rows": dict(report.rows),
            "refused": None if report.check is None or report.check.ok else str(report.check),
        }

    def add_facts(self, tenant: Hashable | None, records: Any) -> dict[str, Any]:
        """Add facts whose subject (and object) belong to ``tenant``; durable and visible
        when it returns."""
        live = self._live()
        recs = self._records(records, "facts")
        with self._write_lock:
            ents: list[Hashable] = []
            for r in recs:
                for col in ("subject", "object"):
                    v = r.get(col)
                    if v is not None:
                        ents.append(v)
            self._check_ids(live, "entities", ents, tenant)
            return self._apply(live.add_facts(recs), live)

    def update_facts(self, tenant: Hashable | None, records: Any) -> dict[str, Any]:
        """Change columns of ``tenant``'s facts (``{"id": ..., column: value}``)."""
        live = self._live()
        recs = self._records(records, "facts")
        with self._write_lock:
            ids = [r.get("id") for r in recs]
            self._check_ids(live, "facts", ids, tenant)
            moved = [r.get(c) for r in recs for c in ("subject", "object") if r.get(c) is not None]
            self._check_ids(live, "entities", moved, tenant)
            return self._apply(live.update_facts(recs), live)

    def record_usage(
        self,
        tenant: Hashable | None,
        facts: Iterable[Hashable],
        chunks: Iterable[Hashable],
        at: Any,
    ) -> dict[str, Any]:
        """Record that ``tenant``'s facts and chunks were used at ``at`` (unix seconds)."""
        live = self._live()
        fids, cids = list(facts), list(chunks)
        with self._write_lock:
            self._check_ids(live, "facts", fids, tenant)
            self._check_ids(live, "chunks", cids, tenant)
            return self._apply(live.record_access(fids, cids, at=at), live)

    def close(self) -> None:
        """Finish the write in progress, refuse later ones and close the store."""
        with self._write_lock:
            self._closed = True
            if self.live is not None:
                self.live.store.close()

    def ready(self) -> Mapping[str, Any]:
        """What ``/readyz`` reports."""
        g = self.rag.index.graph
        return {
            "source": self.source,
            "writable": self.live is not None and not self._closed,
            "entities": g.n_entities,
            "facts": g.n_facts,
            "chunks": g.n_chunks,
            "tenants": len(g.tenants.names),
            "version": None if self.live is None else self.live.version,
        }
