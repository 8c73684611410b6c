"""The state behind ``graphrecall serve``'s app: the backend, the worker threads, the
micro-batcher, the metrics, and the request checks every endpoint shares (API key, body
size and read timeout, query fields, request timeout, error responses)."""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import logging
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ParameterError
from ..recipes import RetrievalResult, get_recipe
from ..recipes.stages import resolve_params
from .backend import Backend
from .batcher import MicroBatcher, stack_vectors
from .bodies import (
    RETRIEVE_FIELDS,
    Spec,
    canonical,
    dumps,
    int_field,
    loads,
    results_body,
    tuples,
)
from .config import ServiceConfig
from .errors import RequestError, error_body, status_of
from .metrics import Metrics

__all__ = ["Service"]

log = logging.getLogger("graphrecall.service")

T = TypeVar("T")
_timeout = getattr(asyncio, "timeout", None)  # Python >= 3.11: no task per deadline


async def _within(work: Coroutine[Any, Any, T], seconds: float) -> T:
    """``await work``, cancelled after ``seconds`` (``asyncio.TimeoutError``)."""
    if _timeout is None:  # pragma: no cover - Python 3.10
        return await asyncio.wait_for(work, seconds)
    async with _timeout(seconds):
        return await work


@functools.lru_cache(maxsize=256)
def _params_of(canonical: str) -> dict[str, Any]:
    """The recipe parameters of a batch key's canonical JSON (a batch's keyword arguments:
    unpacked into a new dict by each call, their values tuples and numbers)."""
    params: dict[str, Any] = tuples(json.loads(canonical))
    return params


def _one_body(result: RetrievalResult) -> bytes:
    """The full ``/retrieve`` body of one query's result (``"explain": true``)."""
    return results_body("result", [result])


def _lean_body(result: RetrievalResult) -> bytes:
    """The default, lean ``/retrieve`` body of one query's result."""
    return results_body("result", [result], explain=False)


def _cheap(spec: Spec) -> bool:
    """Whether a batch may run on the event loop's thread: its vectors are given (no
    embedding runs, nor the result cache) and its recipe is named (no routing)."""
    return spec.vectors and spec.recipe is not None


class Service:
    """The state behind the app: the backend, the worker threads, the batcher, metrics.

    Args:
        backend: What answers and writes.
        config: Limits and knobs.
    """

    def __init__(self, backend: Backend, config: ServiceConfig | None = None) -> None:
        self.backend = backend
        self.config = config or ServiceConfig()
        self.executor = ThreadPoolExecutor(
            max_workers=max(1, self.config.workers), thread_name_prefix="graphrecall-read"
        )
        self.write_executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="graphrecall-write"
        )
        self.metrics = Metrics(
            lambda: None if backend.rag.cache is None else backend.rag.cache.stats
        )
        self.batcher = MicroBatcher(
            self._run,
            self.executor,
            workers=max(1, self.config.workers),
            wait_s=self.config.batch_wait_ms / 1e3,
            max_size=self.config.batch_max,
            on_batch=self.metrics.batch.observe,
            cheap=_cheap,
            inline_max=self.config.inline_max,
        )
        self._key = None if self.config.api_key is None else self.config.api_key.encode()
        self._dim = self._vector_dim()
        #: (recipe, parameters as JSON) sets already checked by the recipe's class.
        self._checked: set[tuple[str, str]] = set()

    def _vector_dim(self) -> int | None:
        ix = self.backend.rag.index
        for vs in (ix.entity_vectors, ix.chunk_vectors):
            dim = getattr(vs, "dim", None)
            if isinstance(dim, int):
                return dim
        return getattr(ix.embedder, "dim", None)

    # ------------------------------------------------------------------ retrieval

    def _run(
        self, spec: Spec, queries: list[str], vectors: npt.NDArray[np.float32] | None
    ) -> list[RetrievalResult]:
        """One ``retrieve_batch`` call (on a worker thread)."""
        params = _params_of(spec.params)
        context = None if spec.context is None else json.loads(spec.context)
        return self.backend.rag.retrieve_batch(
            queries,
            recipe=spec.recipe,
            tenant=spec.tenant,
            now=spec.now,
            context=context,
            query_vectors=vectors,
            use_cache=spec.use_cache,
            **params,
        )

    def _vector(self, v: Any, where: str) -> npt.NDArray[np.float32]:
        try:
            arr = np.asarray(v, dtype=np.float32)
        except (TypeError, ValueError):
            arr = None
        if (
            arr is None
            or arr.ndim != 1
            or (self._dim is not None and arr.shape[0] != self._dim)
            or not np.isfinite(arr).all()
        ):
            raise ParameterError(
                f"invalid parameter {where}: give {self._dim or 'd'} finite numbers",
                kind="invalid_parameter",
                parameter=where,
                column=where,
                ctx={"expected": self._dim},
            )
        return arr

    def parse(
        self, body: Any, allowed: frozenset[str]
    ) -> tuple[Spec, list[str], list[npt.NDArray[np.float32]] | None, bool]:
        """The checked query fields of a request: spec, queries, vectors, whether a batch."""
        if not isinstance(body, dict):
            raise RequestError(422, "the body must be a JSON object", kind="invalid_value")
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise RequestError(
                422,
                f"unknown field {unknown[0]!r}; known: {sorted(allowed)}",
                kind="unknown_field",
                column=unknown[0],
                input=unknown[0],
            )
        batch = "queries" in body
        if batch == ("query" in body):
            raise RequestError(
                422, "give one of 'query' (one) or 'queries' (a batch)", kind="missing"
            )
        queries = body["queries"] if batch else [body["query"]]
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise RequestError(
                422, "queries must be strings", kind="invalid_value", column="queries"
            )
        if not queries:
            raise RequestError(422, "queries is empty", kind="invalid_value", column="queries")
        if len(queries) > self.config.max_batch:
            raise RequestError(
                413,
                f"{len(queries)} queries in one request, more than the limit "
                f"{self.config.max_batch}",
                kind="batch_too_large",
                column="queries",
                ctx={"limit": self.config.max_batch, "got": len(queries)},
            )
        limit = self.backend.rag.max_query_chars
        for i, q in enumerate(queries):
            if len(q) > limit:
                raise ParameterError(
                    f"invalid parameter queries: query {i} has {len(q):,} characters, more "
                    f"than max_query_chars = {limit:,}",
                    kind="invalid_parameter",
                    parameter="queries",
                    row=i,
                    ctx={"limit": limit},
                )
        recipe = body.get("recipe")
        if recipe is not None:
            if not isinstance(recipe, str):
                raise ParameterError(
                    "invalid parameter recipe: give a recipe name",
                    kind="invalid_parameter",
                    parameter="recipe",
                )
            recipe = get_recipe(recipe).name  # ParameterError naming the known ones
        params = body.get("params") or {}
        if not isinstance(params, dict):
            raise ParameterError(
                "invalid parameter params: give an object of parameters by name",
                kind="invalid_parameter",
                parameter="params",
            )
        params_json = canonical(params)
        if recipe is not None and (recipe, params_json) not in self._checked:
            # The recipe's own parameter class checks names and ranges (k, max_hops...).
            resolve_params(get_recipe(recipe).params, None, tuples(params))
            if len(self._checked) >= 1024:
                self._checked.clear()
            self._checked.add((recipe, params_json))
        context = body.get("context")
        if context is not None and not isinstance(context, dict):
            raise ParameterError(
                "invalid parameter context: give an object",
                kind="invalid_parameter",
                parameter="context",
            )
        use_cache = body.get("use_cache", self.config.use_cache)
        if not isinstance(use_cache, bool):
            raise ParameterError(
                "invalid parameter use_cache: give true or false",
                kind="invalid_parameter",
                parameter="use_cache",
            )
        vectors: list[npt.NDArray[np.float32]] | None = None
        if batch and body.get("query_vectors") is not None:
            raw = body["query_vectors"]
            if not isinstance(raw, list) or len(raw) != len(queries):
                raise ParameterError(
                    f"invalid parameter query_vectors: give one per query ({len(queries)})",
                    kind="invalid_parameter",
                    parameter="query_vectors",
                )
            vectors = [self._vector(v, "query_vectors") for v in raw]
        elif not batch and body.get("query_vector") is not None:
            vectors = [self._vector(body["query_vector"], "query_vector")]
        explain = body.get("explain", False)
        if not isinstance(explain, bool):
            raise ParameterError(
                "invalid parameter explain: give true or false",
                kind="invalid_parameter",
                parameter="explain",
            )
        spec = Spec(
            recipe=recipe,
            tenant=self.backend.tenant(body.get("tenant")),
            params=params_json,
            context=None if context is None else canonical(context),
            now=int_field(body, "now", 0, 2**62),
            use_cache=use_cache,
            vectors=vectors is not None,
            explain=explain,
        )
        return spec, queries, vectors, batch

    async def retrieve(
        self, spec: Spec, queries: list[str], vectors: list[npt.NDArray[np.float32]] | None
    ) -> list[RetrievalResult]:
        """Results of a request's queries: a single one through the batcher (or alone
        when batching is off), a batch in one call; on a worker thread either way."""
        if len(queries) == 1 and self.config.batching:
            vec = None if vectors is None else vectors[0]
            return [await self.batcher.submit(spec, queries[0], vec)]
        stacked = None if vectors is None else stack_vectors(vectors)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._run, spec, queries, stacked)

    async def retrieve_body(
        self,
        spec: Spec,
        queries: list[str],
        vectors: list[npt.NDArray[np.float32]] | None,
        batch: bool,
    ) -> bytes:
        """The JSON body answering a ``/retrieve`` request, retrieved and written on a
        worker thread (``{"result": ...}``, or ``{"results": [...]}`` for a batch; lean
        unless ``spec.explain``)."""
        if not batch and self.config.batching:
            vec = None if vectors is None else vectors[0]
            render = _one_body if spec.explain else _lean_body
            body: bytes = await self.batcher.submit(spec, queries[0], vec, render)
            return body
        stacked = None if vectors is None else stack_vectors(vectors)
        key = "results" if batch else "result"

        def run() -> bytes:
            return results_body(key, self._run(spec, queries, stacked), spec.explain)

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, run)

    # ------------------------------------------------------------------ HTTP plumbing

    def check_key(self, request: Request) -> None:
        """Refuse a request without the API key (constant-time compare)."""
        if self._key is not None:
            self.check_key_of(
                request.headers.get("x-api-key"), request.headers.get("authorization")
            )

    def check_key_of(self, api_key: str | None, authorization: str | None) -> None:
        """Refuse a request whose ``X-API-Key`` / ``Authorization: Bearer`` headers do not
        hold the API key (constant-time compare)."""
        if self._key is None:
            return
        got = api_key
        if got is None:
            auth = authorization or ""
            if auth[:7].lower() == "bearer ":
                got = auth[7:]
        if got is None or not hmac.compare_digest(got.encode(), self._key):
            raise RequestError(401, "missing or wrong API key", kind="unauthorized")

    async def body(self, request: Request) -> Any:
        """The request's JSON body, within the size limit and the read timeout."""
        return await self.read_json(request.headers.get("content-length"), request.stream())

    async def read_json(self, declared: str | None, stream: AsyncIterator[bytes]) -> Any:
        """The JSON body of ``stream`` (its ``content-length`` header: ``declared``),
        within the size limit and the read timeout."""
        self._check_length(declared)
        try:
            data = await _within(self._read(stream), self.config.read_timeout_s)
        except asyncio.TimeoutError:
            raise _body_timeout() from None
        return _decode(data)

    async def answer_retrieve(
        self, declared: str | None, stream: AsyncIterator[bytes]
    ) -> tuple[bytes, Spec]:
        """The JSON body answering a ``POST /retrieve`` whose body is ``stream`` (and its
        spec): :meth:`read_json`, :meth:`parse` and :meth:`retrieve_body` within
        :meth:`timed`, under one timer (the read timeout while the body is read, then the
        request timeout)."""
        if _timeout is None:  # pragma: no cover - Python 3.10
            body = await self.read_json(declared, stream)
            spec, queries, vectors, batch = self.parse(body, RETRIEVE_FIELDS)
            return await self.timed(self.retrieve_body(spec, queries, vectors, batch)), spec
        self._check_length(declared)
        reading = True
        try:
            async with _timeout(self.config.read_timeout_s) as deadline:
                data = await self._read(stream)
                reading = False
                spec, queries, vectors, batch = self.parse(_decode(data), RETRIEVE_FIELDS)
                loop = asyncio.get_running_loop()
                deadline.reschedule(loop.time() + self.config.request_timeout_s)
                return await self.retrieve_body(spec, queries, vectors, batch), spec
        except asyncio.TimeoutError:
            raise (_body_timeout() if reading else self._late()) from None

    def _check_length(self, declared: str | None) -> None:
        """Refuse a declared body length over the limit (413) or not a number (400)."""
        limit = self.config.max_body_bytes
        if declared is not None:
            if not declared.isdigit():
                raise RequestError(400, "invalid content-length", kind="invalid_value")
            if int(declared) > limit:
                raise RequestError(
                    413,
                    f"the body has {int(declared):,} bytes, more than the limit {limit:,}",
                    kind="body_too_large",
                    ctx={"limit": limit, "got": int(declared)},
                )

    async def _read(self, stream: AsyncIterator[bytes]) -> bytes:
        """The body's bytes, refused (413) past the size limit."""
        limit = self.config.max_body_bytes
        parts: list[bytes] = []
        size = 0
        async for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise RequestError(
                    413,
                    f"the body is longer than the limit {limit:,} bytes",
                    kind="body_too_large",
                    ctx={"limit": limit},
                )
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def error(self, exc: BaseException) -> Response:
        """The JSON error response of ``exc`` (counted in the metrics)."""
        status, body, headers = self.error_parts(exc)
        return Response(body, status_code=status, media_type="application/json", headers=headers)

    def error_parts(self, exc: BaseException) -> tuple[int, bytes, dict[str, str]]:
        """Status, JSON body and extra headers of the error response of ``exc`` (counted in
        the metrics)."""
        status = status_of(exc)
        if status >= 500 and not isinstance(exc, RequestError):
            log.exception("request failed", exc_info=exc)
        self.metrics.errors.labels(type(exc).__name__, str(status)).inc()
        headers: dict[str, str] = {}
        if status == 401:
            headers["www-authenticate"] = "Bearer"
        if status in (408, 413):  # the rest of the body is not read: end the connection
            headers["connection"] = "close"
        return status, dumps(error_body(exc)), headers

    async def timed(self, work: Coroutine[Any, Any, T], timeout: bool = True) -> T:
        """``await work`` within the request timeout (503 after it)."""
        if not timeout:
            return await work
        try:
            return await _within(work, self.config.request_timeout_s)
        except asyncio.TimeoutError:
            raise self._late() from None

    def _late(self) -> RequestError:
        """The error of a request past the request timeout (503)."""
        return RequestError(
            503,
            f"the request took longer than {self.config.request_timeout_s} s",
            kind="timeout",
            ctx={"limit_s": self.config.request_timeout_s},
        )


def _body_timeout() -> RequestError:
    """The error of a body not received within the read timeout (408)."""
    return RequestError(
        408, "request body not received in time", kind="timeout", ctx={"phase": "body"}
    )


def _decode(data: bytes) -> Any:
    """The JSON of a request body (400 when malformed)."""
    try:
        return loads(data)
    except ValueError as exc:
        raise RequestError(
            400,
            f"malformed JSON: {exc}",
            kind="json_invalid",
            input=data[:100].decode("utf-8", "replace"),
        ) from None
