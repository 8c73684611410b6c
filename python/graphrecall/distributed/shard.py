"""One shard's replica: its tenants' saved index and durable store, answering batched
retrievals and taking the writes of its tenants.

Every replica of a shard opens the shard's SQLite store (the source of truth) and its saved
index, then brings the index up to the store's state incrementally (only rows written since
the save are embedded). Writes go through :class:`~graphrecall.service.Backend`: checked
against the tenant, committed to SQLite (durable when the commit returns), then swapped into
this replica's index before the acknowledgement. Replicas of one shard share the store file:
before a batch, a replica whose store has moved on (another replica's commit) updates its
index first, so an acknowledged write is visible to every later query on any replica.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..embed import Embedder
from ..errors import UnknownTenantError
from ..rag import GraphRAG
from ..recipes import RecipeParams, RetrievalResult
from ..service.backend import Backend
from ..storage import SQLiteStore
from ..tables import GraphTables
from .layout import ShardLayout, tenant_key

__all__ = ["ShardReply", "ShardRequest", "ShardServer"]


@dataclass(frozen=True)
class ShardRequest:
    """One caller's queries for one tenant (what the front sends a shard).

    Attributes:
        queries: The query strings.
        tenant: The tenant they run in.
        recipe: A recipe name, a parameter set, or None (the router picks).
        now: Unix seconds, fixed by the front so that batched requests agree.
        context: Caller context for routing and the recipes that take it.
        query_vectors: Pre-computed query embeddings ``(len(queries), d)``, or None.
        params: Recipe parameters by name.
        use_cache: Serve / store results in the shard's TTL cache.
    """

    queries: tuple[str, ...]
    tenant: Hashable | None
    recipe: str | RecipeParams | None = None
    now: int = 0
    context: Mapping[str, Any] | None = None
    query_vectors: npt.NDArray[np.float32] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    use_cache: bool = True

    def group(self) -> tuple[Any, ...]:
        """Requests with equal groups run as one ``retrieve_batch`` call."""
        return (
            tenant_key(self.tenant),
            repr(self.recipe),
            self.now,
            json.dumps(dict(self.params), sort_keys=True, default=repr),
            json.dumps(self.context, sort_keys=True, default=repr),
            self.query_vectors is None,
            self.use_cache,
        )


@dataclass(frozen=True)
class ShardReply:
    """A shard's answer: which shard and replica answered, and one result per query."""

    shard: int
    replica: str
    results: tuple[RetrievalResult, ...]


class ShardServer:
    """The replica of one shard (wrapped as a Ray Serve deployment by
    :func:`graphrecall.distributed.serving.shard_deployment`).

    Args:
        directory: The layout's root (see :func:`~graphrecall.distributed.write_shards`).
        shard: Which shard this replica serves.
        embedder: Embeds queries and new rows (the one the index was built with).
    """

    def __init__(
        self, directory: str, shard: int, embedder: Embedder | str | None = "default"
    ) -> None:
        layout = ShardLayout.open(directory)
        self.shard = shard
        self.tenants = frozenset(layout.tenants[shard])
        store = SQLiteStore.open(layout.store_path(shard))
        try:
            live = store.load()
            rag = GraphRAG.load(layout.index_dir(shard), embedder=embedder)
            rag.update(live.tables, checked=True)
        except BaseException:
            store.close()
            raise
        self.backend = Backend(rag, live, str(layout.shard_dir(shard)))
        self._indexed: GraphTables = live.tables
        self._lock = threading.Lock()
        self.replica = f"{shard}:{os.getpid()}:{threading.get_ident()}"
        try:
            from ray import serve

            self.replica = f"{shard}:{serve.get_replica_context().replica_id.unique_id}"
        except Exception:  # outside a Serve replica (tests of the class itself)
            pass

    # ------------------------------------------------------------------ reads

    def _sync(self) -> GraphRAG:
        """The index, updated first when the store holds commits it has not seen."""
        with self._lock:
            live = self.backend.live
            if live is not None:
                cur = live.current()
                if cur.tables is not self._indexed:
                    self.backend.rag.update(cur.tables, checked=True)
                    self._indexed = cur.tables
            return self.backend.rag

    def _own(self, tenant: Hashable | None) -> Hashable | None:
        """``tenant``, checked to live on this shard (a shard never answers for another's).

        Raises:
            UnknownTenantError: The tenant is not one of this shard's.
        """
        if tenant not in self.tenants:
            raise UnknownTenantError(
                f"unknown tenant {tenant!r} on shard {self.shard}",
                kind="unknown_tenant",
                input=tenant,
            )
        return self.backend.tenant(tenant)

    def run_batch(self, requests: Sequence[ShardRequest]) -> list[ShardReply | Exception]:
        """Answer ``requests``: those that agree on everything but the queries run as one
        ``retrieve_batch``; an error answers only the requests of its group."""
        rag = self._sync()
        out: list[ShardReply | Exception | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.group(), []).append(i)
        for members in groups.values():
            first = requests[members[0]]
            queries = [q for i in members for q in requests[i].queries]
            vectors = None
            if first.query_vectors is not None:
                vectors = np.vstack([requests[i].query_vectors for i in members])  # type: ignore[misc]
            try:
                tenant = self._own(first.tenant)
                results = rag.retrieve_batch(
                    queries,
                    recipe=first.recipe,
                    tenant=tenant,
                    now=first.now,
                    context=first.context,
                    query_vectors=vectors,
                    use_cache=first.use_cache,
                    **first.params,
                )
            except Exception as exc:
                for i in members:
                    out[i] = exc
                continue
            at = 0
            for i in members:
                n = len(requests[i].queries)
                out[i] = ShardReply(self.shard, self.replica, tuple(results[at : at + n]))
                at += n
        return [r if r is not None else RuntimeError("no answer") for r in out]

    # ------------------------------------------------------------------ writes

    def add_facts(self, tenant: Hashable | None, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Add ``tenant``'s facts; durable (committed to the shard's store) and visible to
        the next query when it returns."""
        self._sync()
        with self._lock:
            ack = self.backend.add_facts(self._own(tenant), records)
            self._indexed = self.backend.live.tables if self.backend.live else self._indexed
        return {**ack, "shard": self.shard, "replica": self.replica}

    def record_usage(
        self,
        tenant: Hashable | None,
        facts: list[Hashable],
        chunks: list[Hashable],
        at: int | None,
    ) -> dict[str, Any]:
        """Record that ``tenant``'s facts and chunks were used at ``at``; durable when it
        returns."""
        self._sync()
        with self._lock:
            ack = self.backend.record_usage(self._own(tenant), facts, chunks, at)
            self._indexed = self.backend.live.tables if self.backend.live else self._indexed
        return {**ack, "shard": self.shard, "replica": self.replica}

    def close(self) -> None:
        """Close the shard's store."""
        self.backend.close()


async def in_thread(call: Any, *args: Any) -> Any:
    """Run a blocking call off the replica's event loop."""
    return await asyncio.get_running_loop().run_in_executor(None, call, *args)
