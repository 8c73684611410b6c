"""The sharded service on Ray Serve: one application per shard (a deployment whose
replicas are :class:`~graphrecall.distributed.shard.ShardServer` s, with Serve's batching),
and a front application that routes each request by tenant.

Which requests span shards: a tenant lives on exactly one shard, and every retrieval runs
within one tenant, so a query (or a batch of queries for one tenant) goes to one shard and
never spans shards. Only a batch that mixes tenants (:meth:`DistributedRAG.retrieve_many`)
and the listing of tenants scatter to several shards and gather the answers in order. A
query without a tenant is refused when the service holds several tenants (there is no
cross-tenant retrieval to gather), as :class:`~graphrecall.GraphRAG` refuses it.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..embed import Embedder
from ..errors import GraphRecallError, ParameterError
from ..recipes import RecipeParams, RetrievalResult
from .layout import ShardLayout
from .shard import ShardReply, ShardRequest, ShardServer, in_thread

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..recipes import RecipeOverrides

__all__ = ["DistributedRAG", "ShardUnavailableError"]

#: Requests a shard replica gathers into one ``retrieve_batch`` at most, and how long the
#: first one waits for company.
MAX_BATCH_SIZE = 64
BATCH_WAIT_S = 0.002


class ShardUnavailableError(GraphRecallError):
    """The shard holding the tenant did not answer (down, restarting, or too slow); other
    shards' tenants are not affected. ``ctx`` holds ``shard`` and ``tenant``."""


def _ray() -> Any:
    try:
        import ray
        from ray import serve  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "graphrecall.distributed needs Ray: pip install 'graphrecall[distributed]'"
        ) from exc
    return ray


def _unwrap(exc: BaseException) -> BaseException:
    """The user error inside a Ray task error (the graphrecall error a shard raised)."""
    seen = 0
    while seen < 8:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException) and cause is not exc:
            exc = cause
            seen += 1
            continue
        break
    return exc


def shard_deployment(
    max_batch_size: int = MAX_BATCH_SIZE, batch_wait_s: float = BATCH_WAIT_S
) -> Any:
    """The Serve deployment class of a shard replica (made on call, so that importing this
    module needs no Ray)."""
    _ray()
    from ray import cloudpickle, serve

    @serve.deployment(name="Shard", max_ongoing_requests=256)
    class Shard:
        def __init__(self, directory: str, shard: int, embedder: Embedder | str | None) -> None:
            self.server = ShardServer(directory, shard, embedder)

        @serve.batch(max_batch_size=max_batch_size, batch_wait_timeout_s=batch_wait_s)
        async def _batched(self, requests: list[ShardRequest]) -> list[Any]:
            out: list[Any] = await in_thread(self.server.run_batch, requests)
            return out

        async def retrieve(self, request: ShardRequest) -> bytes:
            # Pickled once here: the front passes the bytes on without unpickling them.
            got = await self._batched(request)
            if isinstance(got, Exception):
                raise got
            packed = cloudpickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[no-untyped-call]
            return bytes(packed)

        async def add_facts(self, tenant: Hashable | None, records: list[dict[str, Any]]) -> Any:
            return await in_thread(self.server.add_facts, tenant, records)

        async def record_usage(
            self, tenant: Hashable | None, facts: list[Any], chunks: list[Any], at: int | None
        ) -> Any:
            return await in_thread(self.server.record_usage, tenant, facts, chunks, at)

        def tenants(self) -> list[Hashable]:
            return sorted(self.server.tenants, key=repr)

        def check_health(self) -> None:
            if self.server.backend.live is None or self.server.backend.live.store.closed:
                raise RuntimeError(f"shard {self.server.shard}: its store is closed")

    return Shard


def front_deployment() -> Any:
    """The Serve deployment class of the front: routes by tenant, scatters mixed batches."""
    _ray()
    from ray import serve

    @serve.deployment(name="Front", max_ongoing_requests=1024)
    class Front:
        def __init__(self, directory: str, apps: dict[int, str], timeout_s: float) -> None:
            self.layout = ShardLayout.open(directory)
            self.apps = apps
            self.timeout_s = timeout_s
            self.handles = {
                s: serve.get_deployment_handle("Shard", app_name=a) for s, a in apps.items()
            }

        async def _call(self, shard: int, tenant: Hashable | None, method: str, *args: Any) -> Any:
            async def call() -> Any:
                return await getattr(self.handles[shard], method).remote(*args)

            try:
                return await asyncio.wait_for(call(), self.timeout_s)
            except GraphRecallError:
                raise
            except Exception as exc:
                inner = _unwrap(exc)
                if isinstance(inner, GraphRecallError):
                    raise inner from None
                raise ShardUnavailableError(
                    f"shard {shard} (application {self.apps[shard]!r}) holding tenant "
                    f"{tenant!r} is unavailable: {type(inner).__name__}: {inner}",
                    kind="shard_unavailable",
                    input=tenant,
                    ctx={"shard": shard, "tenant": tenant},
                ) from None

        def _route(self, request: ShardRequest) -> tuple[int, ShardRequest]:
            shard = self.layout.shard_of(request.tenant)
            if request.tenant is None:
                request = replace(request, tenant=self.layout.all_tenants()[0])
            return shard, request

        async def retrieve(self, request: ShardRequest) -> bytes:
            """The pickled :class:`ShardReply` of the tenant's shard."""
            shard, request = self._route(request)
            packed: bytes = await self._call(shard, request.tenant, "retrieve", request)
            return packed

        async def retrieve_many(self, requests: list[ShardRequest]) -> list[Any]:
            async def one(r: ShardRequest) -> Any:
                try:
                    return await self.retrieve(r)
                except Exception as exc:
                    return exc

            return list(await asyncio.gather(*(one(r) for r in requests)))

        async def add_facts(self, tenant: Hashable | None, records: list[dict[str, Any]]) -> Any:
            shard = self.layout.shard_of(tenant)
            return await self._call(shard, tenant, "add_facts", tenant, records)

        async def record_usage(
            self, tenant: Hashable | None, facts: list[Any], chunks: list[Any], at: int | None
        ) -> Any:
            shard = self.layout.shard_of(tenant)
            return await self._call(shard, tenant, "record_usage", tenant, facts, chunks, at)

        async def tenants(self) -> dict[int, Any]:
            async def one(s: int) -> Any:
                try:
                    return await self._call(s, None, "tenants")
                except ShardUnavailableError as exc:
                    return exc

            shards = sorted(self.handles)
            got = await asyncio.gather(*(one(s) for s in shards))
            return dict(zip(shards, got, strict=True))

    return Front


class DistributedRAG:
    """:class:`~graphrecall.GraphRAG`'s retrieval and writes over a sharded Ray Serve
    service: same arguments, same result objects.

    Made by :meth:`deploy` (start the service on the connected Ray cluster) or
    :meth:`connect` (an already deployed one).

    Example:
        >>> from graphrecall.distributed import DistributedRAG, write_shards
        >>> write_shards(tables, "shards", 2)  # doctest: +SKIP
        >>> rag = DistributedRAG.deploy("shards", replicas=2)  # doctest: +SKIP
        >>> res = rag.retrieve("What is JACQ?", tenant="alice", recipe="ppr")  # doctest: +SKIP
    """

    def __init__(self, front: Any, layout: ShardLayout, name: str = "graphrecall") -> None:
        self.front = front
        self.layout = layout
        self.name = name
        #: The Serve run target of a shard (known when this object deployed the service).
        self._target: Callable[[int], Any] | None = None

    @classmethod
    def deploy(
        cls,
        directory: str | os.PathLike[str],
        *,
        replicas: int = 1,
        embedder: Embedder | str | None = "default",
        name: str = "graphrecall",
        num_cpus: float = 1.0,
        max_batch_size: int = MAX_BATCH_SIZE,
        batch_wait_s: float = BATCH_WAIT_S,
        timeout_s: float = 30.0,
    ) -> DistributedRAG:
        """Deploy one application per shard of the layout at ``directory`` (``replicas``
        replicas each, ``num_cpus`` each) and the front, on the Ray cluster this process is
        connected to (``ray.init``); return once every replica is running.

        Args:
            directory: A layout written by :func:`~graphrecall.distributed.write_shards`
                (every node must see it at the same path: a shared volume across machines).
            replicas: Replicas per shard.
            embedder: The embedder of the shards' indexes (pickled to every replica).
            name: The front application's name; shard ``s``'s is ``"{name}-shard-{s}"``.
            num_cpus: CPUs per shard replica.
            max_batch_size: Requests batched into one ``retrieve_batch`` at most.
            batch_wait_s: How long a replica waits to fill a batch.
            timeout_s: A shard that does not answer within this is unavailable.
        """
        _ray()
        from ray import serve
        from ray.serve.api import RunTarget

        layout = ShardLayout.open(directory)
        if type(replicas) is not int or replicas < 1:
            raise ParameterError(f"invalid parameter replicas: {replicas!r}; expected >= 1")
        shard_cls = shard_deployment(max_batch_size, batch_wait_s)
        # Shards that hold no tenant (more shards than tenants) are not deployed.
        apps = {s: f"{name}-shard-{s}" for s in range(layout.shards) if layout.tenants[s]}
        options = {"num_replicas": replicas, "ray_actor_options": {"num_cpus": num_cpus}}

        def target(s: int) -> Any:
            return RunTarget(
                target=shard_cls.options(**options).bind(str(layout.directory), s, embedder),
                name=apps[s],
                route_prefix=None,
            )

        serve.run_many([target(s) for s in apps])
        front = serve.run(
            front_deployment()
            .options(ray_actor_options={"num_cpus": 0})
            .bind(str(layout.directory), apps, timeout_s),
            name=name,
            route_prefix=None,
        )
        rag = cls(front, layout, name)
        rag._target = target
        return rag

    @classmethod
    def connect(
        cls, directory: str | os.PathLike[str], name: str = "graphrecall"
    ) -> DistributedRAG:
        """The service deployed under ``name`` for the layout at ``directory``."""
        _ray()
        from ray import serve

        return cls(serve.get_app_handle(name), ShardLayout.open(directory), name)

    def shutdown(self) -> None:
        """Delete the front and shard applications."""
        from ray import serve

        serve.delete(self.name)
        for s in range(self.layout.shards):
            if self.layout.tenants[s]:
                serve.delete(f"{self.name}-shard-{s}")

    def stop_shard(self, shard: int) -> None:
        """Take ``shard`` down (delete its application): its tenants get
        :class:`ShardUnavailableError` until :meth:`start_shard`; other shards keep serving."""
        from ray import serve

        serve.delete(f"{self.name}-shard-{shard}")

    def start_shard(self, shard: int) -> None:
        """Deploy ``shard`` again with the options of :meth:`deploy`; returns once it runs.

        Raises:
            ParameterError: This object did not deploy the service (see :meth:`connect`).
        """
        from ray import serve

        if self._target is None:
            raise ParameterError("start_shard needs the DistributedRAG that deploy() returned")
        serve.run_many([self._target(shard)])

    # ------------------------------------------------------------------ calls

    def _result(self, response: Any) -> Any:
        try:
            return response.result()
        except Exception as exc:
            inner = _unwrap(exc)
            if inner is not exc:
                raise inner from None
            raise

    @staticmethod
    def _request(
        queries: Sequence[str],
        recipe: str | RecipeParams | None,
        tenant: Hashable | None,
        now: int | None,
        context: Mapping[str, Any] | None,
        query_vectors: npt.ArrayLike | None,
        use_cache: bool,
        params: Mapping[str, Any],
    ) -> ShardRequest:
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise ParameterError(
                "invalid parameter queries: give a sequence of str (retrieve() takes one)"
            )
        qv = None
        if query_vectors is not None:
            qv = np.asarray(query_vectors, dtype=np.float32)
            if qv.ndim == 1:
                qv = qv.reshape(1, -1)
        return ShardRequest(
            queries=tuple(queries),
            tenant=tenant,
            recipe=recipe,
            now=int(time.time()) if now is None else int(now),
            context=None if context is None else dict(context),
            query_vectors=qv,
            params=dict(params),
            use_cache=use_cache,
        )

    def retrieve_reply(
        self,
        queries: Sequence[str],
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vectors: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> ShardReply:
        """:meth:`retrieve_batch` with the shard and replica that answered."""
        req = self._request(queries, recipe, tenant, now, context, query_vectors, use_cache, params)
        reply: ShardReply = pickle.loads(self._result(self.front.retrieve.remote(req)))
        return reply

    def retrieve_batch(
        self,
        queries: Sequence[str],
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vectors: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> list[RetrievalResult]:
        """:meth:`GraphRAG.retrieve_batch <graphrecall.GraphRAG.retrieve_batch>` on the
        tenant's shard (one request; batched there with other callers' requests).

        Raises:
            ShardUnavailableError: The tenant's shard did not answer.
            UnknownTenantError: No shard holds ``tenant``.
            ParameterError: As ``GraphRAG.retrieve_batch``; or no tenant on a
                multi-tenant service.
        """
        reply = self.retrieve_reply(
            queries,
            recipe=recipe,
            tenant=tenant,
            now=now,
            context=context,
            query_vectors=query_vectors,
            use_cache=use_cache,
            **params,
        )
        return list(reply.results)

    def retrieve(
        self,
        query: str,
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vector: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> RetrievalResult:
        """:meth:`GraphRAG.retrieve <graphrecall.GraphRAG.retrieve>` on the tenant's shard."""
        if not isinstance(query, str):
            raise ParameterError(f"invalid parameter query: {type(query).__name__} is not a str")
        return self.retrieve_batch(
            [query],
            recipe=recipe,
            tenant=tenant,
            now=now,
            context=context,
            query_vectors=query_vector,
            use_cache=use_cache,
            **params,
        )[0]

    def retrieve_many(
        self,
        items: Sequence[tuple[str, Hashable | None]],
        *,
        recipe: str | RecipeParams | None = None,
        now: int | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> list[RetrievalResult | Exception]:
        """``(query, tenant)`` pairs of several tenants: scattered to their shards at once,
        gathered in order. A shard's error answers its own items only (returned in place of
        their results, e.g. :class:`ShardUnavailableError`)."""
        at = int(time.time()) if now is None else int(now)
        reqs = [self._request([q], recipe, t, at, None, None, use_cache, params) for q, t in items]
        got = self._result(self.front.retrieve_many.remote(reqs))
        out: list[RetrievalResult | Exception] = []
        for g in got:
            if isinstance(g, bytes):
                out.append(pickle.loads(g).results[0])
            else:
                err = _unwrap(g)
                out.append(err if isinstance(err, Exception) else RuntimeError(str(err)))
        return out

    def add_facts(
        self, records: Sequence[Mapping[str, Any]], *, tenant: Hashable | None = None
    ) -> dict[str, Any]:
        """Add facts of ``tenant`` on its shard; returns once they are committed to the
        shard's store (durable) and visible to the next query. The acknowledgement holds
        ``operation``, ``version``, ``rows``, ``shard`` and ``replica``."""
        ack: dict[str, Any] = self._result(
            self.front.add_facts.remote(tenant, [dict(r) for r in records])
        )
        return ack

    def record_usage(
        self,
        *,
        tenant: Hashable | None = None,
        facts: Sequence[Hashable] = (),
        chunks: Sequence[Hashable] = (),
        at: int | None = None,
    ) -> dict[str, Any]:
        """Record that ``tenant``'s facts and chunks were used at ``at`` (default: now), on
        its shard; durable when it returns."""
        ack: dict[str, Any] = self._result(
            self.front.record_usage.remote(
                tenant, list(facts), list(chunks), int(time.time()) if at is None else at
            )
        )
        return ack

    def tenants(self) -> dict[int, list[Hashable] | Exception]:
        """Every shard's tenants as its replicas report them (scatter-gather; a shard that
        is down answers with its error)."""
        got: dict[int, list[Hashable] | Exception] = self._result(self.front.tenants.remote())
        return got
