"""Micro-batching: concurrent single queries become ``GraphRAG.retrieve_batch`` calls, run
on a worker thread (the native work releases the GIL, so the event loop keeps parsing
requests meanwhile).

A query joins the open batch of its key (recipe, tenant, parameters...): queries of one key
share one ``retrieve_batch`` call. The batches open at a flush, whatever their keys, go to
the free workers in as few jobs as there are free workers (balanced by query count), so
that a load spread over many tenants takes one thread hop per worker and flush rather than
one per request, and no free worker idles. A flush happens at the end of the event loop's
current turn when a worker is free (a lone query waits for nothing), else after at most
``wait_s``, when a worker frees up, or as soon as a batch holds ``max_size`` queries. If a
batch fails, its queries are run one by one so that one bad query fails alone.

A flush whose batches are all cheap (``cheap(key)``: e.g. their vectors are given, so no
embedding runs) and hold at most ``inline_max`` queries in all runs on the event loop's
thread instead: a query of ~0.5 ms costs less than the hop to a worker and back, and the
queries read from the sockets in one turn of the loop still share one flush.

Each query may carry a ``render`` function applied to its result on the thread that ran
its batch (the service writes the JSON body there); a render error fails that query alone.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from ..recipes import RetrievalResult

__all__ = ["BatchKey", "MicroBatcher", "stack_vectors"]

#: What the queries of one batch share (recipe, tenant, parameters...), hashable.
BatchKey = Hashable
K = TypeVar("K", bound=Hashable)
Vectors = list["npt.NDArray[np.float32]"]
Render = Callable[[RetrievalResult], Any]


@dataclass
class _Pending:
    queries: list[str] = field(default_factory=list)
    vectors: list[npt.NDArray[np.float32]] = field(default_factory=list)
    renders: list[Render | None] = field(default_factory=list)
    futures: list[asyncio.Future[Any]] = field(default_factory=list)


def stack_vectors(vectors: Vectors) -> npt.NDArray[np.float32] | None:
    """The batch's vectors as one (n, d) array (a view for one vector), None for none."""
    if not vectors:
        return None
    return vectors[0][None, :] if len(vectors) == 1 else np.stack(vectors)


class MicroBatcher(Generic[K]):
    """Coalesces single queries into batch calls (see the module docstring).

    Args:
        run: Runs one batch: ``run(key, queries, vectors_or_None)`` -> one result per query
            (called on a worker thread).
        executor: The worker threads.
        workers: How many jobs may run at once (the executor's size).
        wait_s: The longest a query waits for company while every worker is busy.
        max_size: The most queries in one batch.
        on_batch: Called with each batch's size (metrics).
        cheap: Whether a key's queries may run on the event loop's thread (None: never).
        inline_max: The most queries a flush runs on the event loop's thread.
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
        cheap: Callable[[K], bool] | None = None,
        inline_max: int = 0,
    ) -> None:
        self._run = run
        self._executor = executor
        self._workers = max(1, workers)
        self._wait_s = max(0.0, wait_s)
        self._max = max(1, max_size)
        self._on_batch = on_batch
        self._cheap = cheap
        self._inline_max = inline_max if cheap is not None else 0
        self._open: dict[K, _Pending] = {}
        self._handle: asyncio.Handle | asyncio.TimerHandle | None = None
        self._running = 0

    async def submit(
        self,
        key: K,
        query: str,
        vector: npt.NDArray[np.float32] | None,
        render: Render | None = None,
    ) -> Any:
        """The result of one query (``render(result)`` when given), computed in a batch with
        others of the same key."""
        loop = asyncio.get_running_loop()
        pending = self._open.get(key)
        if pending is None:
            pending = self._open[key] = _Pending()
        if self._handle is None:
            if self._running < self._workers or self._wait_s == 0.0:
                self._handle = loop.call_soon(self._flush)
            else:
                self._handle = loop.call_later(self._wait_s, self._flush)
        fut: asyncio.Future[Any] = loop.create_future()
        pending.queries.append(query)
        if vector is not None:
            pending.vectors.append(vector)
        pending.renders.append(render)
        pending.futures.append(fut)
        if len(pending.queries) >= self._max:
            self._flush()
        return await fut

    def _flush(self) -> None:
        """Send every open batch to the free workers (at least one job)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        batches = [(k, p) for k, p in self._open.items() if p.queries]
        self._open = {}
        if not batches:
            return
        if self._on_batch is not None:
            for _, p in batches:
                self._on_batch(len(p.queries))
        if self._inline_max and self._inline(batches):
            return
        n_jobs = min(len(batches), max(1, self._workers - self._running))
        groups: list[list[tuple[K, _Pending]]]
        if n_jobs == 1:
            groups = [batches]
        else:
            groups = [[] for _ in range(n_jobs)]
            sizes = [0] * n_jobs
            for k, p in sorted(batches, key=lambda kp: -len(kp[1].queries)):
                j = sizes.index(min(sizes))
                groups[j].append((k, p))
                sizes[j] += len(p.queries)
        loop = asyncio.get_running_loop()
        for jobs in groups:
            self._running += 1
            task = loop.run_in_executor(self._executor, self._run_all, jobs)
            task.add_done_callback(functools.partial(self._done, jobs=jobs))

    def _inline(self, batches: list[tuple[K, _Pending]]) -> bool:
        """Run ``batches`` here, on the event loop's thread, when they are cheap and
        small enough; whether they ran."""
        cheap = self._cheap
        if cheap is None or sum(len(p.queries) for _, p in batches) > self._inline_max:
            return False
        if not all(cheap(k) for k, _ in batches):
            return False
        try:
            outs: Any = self._run_all(batches)
            exc: BaseException | None = None
        except Exception as e:  # handed to the waiting requests
            outs, exc = None, e
        self._settle(batches, outs, exc)
        return True

    def _run_all(self, jobs: list[tuple[K, _Pending]]) -> list[list[Any]]:
        """Each batch's rendered results or errors (on a worker thread)."""
        out: list[list[Any]] = []
        for key, p in jobs:
            results = self._run_safe(key, p.queries, p.vectors)
            for i, render in enumerate(p.renders):
                r = results[i]
                if render is not None and not isinstance(r, BaseException):
                    try:
                        results[i] = render(r)
                    except Exception as exc:
                        results[i] = exc
            out.append(results)
        return out

    def _run_safe(self, key: K, queries: list[str], vectors: Vectors) -> list[Any]:
        """The batch's results, or each query's own result or error when the batch fails
        (run on a worker thread)."""
        try:
            return list(self._run(key, queries, stack_vectors(vectors)))
        except Exception as exc:
            if len(queries) == 1:
                return [exc]
        out: list[Any] = []
        for i, q in enumerate(queries):
            try:
                out.extend(self._run(key, [q], vectors[i][None, :] if vectors else None))
            except Exception as exc:
                out.append(exc)
        return out

    def _done(self, task: asyncio.Future[Any], *, jobs: list[tuple[K, _Pending]]) -> None:
        self._running -= 1
        exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
        self._settle(jobs, None if exc is not None else task.result(), exc)
        # Queries that gathered while every worker was busy go now.
        if self._open and self._running < self._workers:
            self._flush()

    @staticmethod
    def _settle(jobs: list[tuple[K, _Pending]], outs: Any, exc: BaseException | None) -> None:
        """Hand each waiting query its result, its own error, or the job's error."""
        for j, (_, pending) in enumerate(jobs):
            for i, fut in enumerate(pending.futures):
                if fut.done():  # the request timed out or its client left
                    continue
                if exc is not None:
                    fut.set_exception(exc)
                    continue
                r = outs[j][i]
                if isinstance(r, BaseException):
                    fut.set_exception(r)
                else:
                    fut.set_result(r)
