"""Micro-batching: concurrent single queries with the same recipe, tenant and parameters
become one ``GraphRAG.retrieve_batch`` call, run on a worker thread (the native work
releases the GIL, so the event loop keeps parsing requests meanwhile).

A query joins the open batch of its key. The batch is sent at the end of the event loop's
current turn when a worker is free (a lone query waits for nothing), else after at most
``wait_s`` or as soon as it holds ``max_size`` queries. If a batch fails, its queries are
run one by one so that one bad query fails alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from ..recipes import RetrievalResult

__all__ = ["BatchKey", "MicroBatcher"]

#: What the queries of one batch share (recipe, tenant, parameters...), hashable.
BatchKey = Hashable
K = TypeVar("K", bound=Hashable)
Vectors = list["npt.NDArray[np.float32]"]


@dataclass
class _Pending:
    queries: list[str] = field(default_factory=list)
    vectors: list[npt.NDArray[np.float32]] = field(default_factory=list)
    futures: list[asyncio.Future[RetrievalResult]] = field(default_factory=list)
    handle: asyncio.Handle | asyncio.TimerHandle | None = None


class MicroBatcher(Generic[K]):
    """Coalesces single queries into batch calls (see the module docstring).

    Args:
        run: Runs one batch: ``run(key, queries, vectors_or_None)`` -> one result per query
            (called on a worker thread).
        executor: The worker threads.
        workers: How many batches may run at once (the executor's size).
        wait_s: The longest a query waits for company while every worker is busy.
        max_size: The most queries in one batch.
        on_batch: Called with each batch's size (metrics).
    """

    def __init__(
        self,
        run: Callable[[K, list[str], npt.NDArray[np.float32] | None], list[RetrievalResult]],
        executor: Executor,
        *,
        workers: int,
        wait_s: float,
        max_size: int,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        self._run = run
        self._executor = executor
        self._workers = max(1, workers)
        self._wait_s = max(0.0, wait_s)
        self._max = max(1, max_size)
        self._on_batch = on_batch
        self._open: dict[K, _Pending] = {}
        self._running = 0

    async def submit(
        self, key: K, query: str, vector: npt.NDArray[np.float32] | None
    ) -> RetrievalResult:
        """The result of one query, computed in a batch with others of the same key."""
        loop = asyncio.get_running_loop()
        pending = self._open.get(key)
        if pending is None:
            pending = self._open[key] = _Pending()
            if self._running < self._workers or self._wait_s == 0.0:
                pending.handle = loop.call_soon(self._flush, key)
            else:
                pending.handle = loop.call_later(self._wait_s, self._flush, key)
        fut: asyncio.Future[RetrievalResult] = loop.create_future()
        pending.queries.append(query)
        if vector is not None:
            pending.vectors.append(vector)
        pending.futures.append(fut)
        if len(pending.queries) >= self._max:
            if pending.handle is not None:
                pending.handle.cancel()
            self._flush(key)
        return await fut

    def _flush(self, key: K) -> None:
        pending = self._open.pop(key, None)
        if pending is None or not pending.queries:
            return
        if self._on_batch is not None:
            self._on_batch(len(pending.queries))
        self._running += 1
        loop = asyncio.get_running_loop()
        task = loop.run_in_executor(
            self._executor, self._run_safe, key, pending.queries, pending.vectors
        )
        task.add_done_callback(lambda t: self._done(t, pending.futures))

    def _run_safe(
        self, key: K, queries: list[str], vectors: Vectors
    ) -> list[RetrievalResult | BaseException]:
        """The batch's results, or each query's own result or error when the batch fails
        (run on a worker thread)."""
        try:
            return list(self._run(key, queries, np.stack(vectors) if vectors else None))
        except Exception as exc:
            if len(queries) == 1:
                return [exc]
        out: list[RetrievalResult | BaseException] = []
        for i, q in enumerate(queries):
            try:
                out.extend(self._run(key, [q], vectors[i][None, :] if vectors else None))
            except Exception as exc:
                out.append(exc)
        return out

    def _done(self, task: asyncio.Future[Any], futures: list[asyncio.Future[Any]]) -> None:
        self._running -= 1
        exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
        results = None if exc is not None else task.result()
        for i, fut in enumerate(futures):
            if fut.done():  # the request timed out or its client left
                continue
            if exc is not None:
                fut.set_exception(exc)
                continue
            r = results[i]  # type: ignore[index]
            if isinstance(r, BaseException):
                fut.set_exception(r)
            else:
                fut.set_result(r)
        # Queries that gathered while every worker was busy go now.
        for key, pending in list(self._open.items()):
            if self._running >= self._workers:
                break
            if pending.handle is not None:
                pending.handle.cancel()
            self._flush(key)
