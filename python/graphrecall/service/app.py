"""The ASGI application of ``graphrecall serve`` (Starlette).

Endpoints (JSON in, JSON out; errors as in :mod:`.errors`):

==========================  ==============================================================
``POST /retrieve``          ``query`` (one) or ``queries`` (a batch); ``recipe`` (a name, or
                            absent for the router), ``tenant``, ``params`` (the recipe's
                            parameters by name), ``now``, ``context``, ``query_vector`` /
                            ``query_vectors``, ``use_cache`` -> ``result`` / ``results``
``POST /context``           one query as above, plus ``format`` and ``budget`` -> the block
``POST /explain``           one query as above -> ``text`` and ``items`` (paths, scores);
                            ``?format=html`` -> the explanation as an HTML page
``POST /facts``             add facts (SQLite store only): ``tenant``, ``facts``
``PATCH /facts``            change facts' columns: ``tenant``, ``facts`` (each with ``id``)
``POST /usage``             record usage: ``tenant``, ``facts``, ``chunks``, ``at``
``GET /healthz``            the process is up
``GET /readyz``             the index is loaded (and what it holds)
``GET /metrics``            Prometheus metrics (:mod:`.metrics`)
==========================  ==============================================================

Single queries with the same recipe, tenant and parameters are coalesced into one
``retrieve_batch`` call, and the batches open at once, whatever their tenants, go to the
free worker threads together (:mod:`.batcher`); every retrieval, and the writing of its
JSON body, runs on a worker thread, never on the event loop. ``POST /retrieve`` is served
by a thin ASGI handler ahead of Starlette's router and middleware (the same checks, errors
and metrics, less Python per request); the other endpoints go through Starlette. Writes
respond after the SQLite commit and the index swap.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import ParameterError
from ..explain import explain as explain_text
from ..explain import explain_records
from ..recipes import RetrievalResult, get_recipe
from ..recipes.stages import resolve_params
from .backend import Backend
from .batcher import MicroBatcher
from .bodies import (
    CONTEXT_FIELDS,
    QUERY_FIELDS,
    Spec,
    dumps,
    int_field,
    loads,
    results_body,
    tuples,
)
from .config import ServiceConfig
from .errors import RequestError, error_body, status_of
from .metrics import CONTENT_TYPE, Metrics

__all__ = ["Service", "create_app"]

log = logging.getLogger("graphrecall.service")

T = TypeVar("T")
_timeout = getattr(asyncio, "timeout", None)  # Python >= 3.11: no task per deadline


async def _within(work: Coroutine[Any, Any, T], seconds: float) -> T:
    """``await work``, cancelled after ``seconds`` (``asyncio.TimeoutError``)."""
    if _timeout is None:  # pragma: no cover - Python 3.10
        return await asyncio.wait_for(work, seconds)
    async with _timeout(seconds):
        return await work


def _one_body(result: RetrievalResult) -> bytes:
    """The ``/retrieve`` body of one query's result."""
    return results_body("result", [result])


def _json(body: Any, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


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
        params = tuples(json.loads(spec.params))
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
        params_json = json.dumps(params, sort_keys=True)
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
        spec = Spec(
            recipe=recipe,
            tenant=self.backend.tenant(body.get("tenant")),
            params=params_json,
            context=None if context is None else json.dumps(context, sort_keys=True),
            now=int_field(body, "now", 0, 2**62),
            use_cache=use_cache,
            vectors=vectors is not None,
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
        stacked = None if vectors is None else np.stack(vectors)
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
        worker thread (``{"result": ...}``, or ``{"results": [...]}`` for a batch)."""
        if not batch and self.config.batching:
            vec = None if vectors is None else vectors[0]
            body: bytes = await self.batcher.submit(spec, queries[0], vec, _one_body)
            return body
        stacked = None if vectors is None else np.stack(vectors)
        key = "results" if batch else "result"

        def run() -> bytes:
            return results_body(key, self._run(spec, queries, stacked))

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

        async def read() -> bytes:
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
            return b"".join(parts)

        try:
            data = await _within(read(), self.config.read_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(
                408, "request body not received in time", kind="timeout", ctx={"phase": "body"}
            ) from None
        try:
            return loads(data)
        except ValueError as exc:
            raise RequestError(
                400,
                f"malformed JSON: {exc}",
                kind="json_invalid",
                input=data[:100].decode("utf-8", "replace"),
            ) from None

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
            raise RequestError(
                503,
                f"the request took longer than {self.config.request_timeout_s} s",
                kind="timeout",
                ctx={"limit_s": self.config.request_timeout_s},
            ) from None


Handler = Callable[[Service, Request], Awaitable[tuple[Response, str]]]


def _endpoint(service: Service, name: str, handler: Handler, *, auth: bool = True) -> Any:
    async def endpoint(request: Request) -> Response:
        t0 = time.perf_counter()
        recipe = "-"
        try:
            if auth:
                service.check_key(request)
            response, recipe = await handler(service, request)
        except Exception as exc:
            response = service.error(exc)
        service.metrics.observe(name, recipe, time.perf_counter() - t0)
        return response

    return endpoint


async def _retrieve(s: Service, request: Request) -> tuple[Response, str]:
    body = await s.body(request)
    spec, queries, vectors, batch = s.parse(body, QUERY_FIELDS)
    data = await s.timed(s.retrieve_body(spec, queries, vectors, batch))
    return Response(data, media_type="application/json"), spec.recipe or "router"


async def _body_chunks(receive: Receive) -> AsyncIterator[bytes]:
    """The request body's chunks from ASGI ``receive`` (what ``Request.stream`` yields)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _retrieve_asgi(s: Service, scope: Scope, receive: Receive, send: Send) -> None:
    """``POST /retrieve`` as a plain ASGI handler: what :func:`_retrieve` does behind
    :func:`_endpoint`, without the router, the middleware and the request object."""
    t0 = time.perf_counter()
    recipe = "-"
    length = api_key = auth = None
    for name, value in scope["headers"]:
        if name == b"content-length":
            length = value.decode("latin-1") if length is None else length
        elif name == b"x-api-key":
            api_key = value.decode("latin-1") if api_key is None else api_key
        elif name == b"authorization":
            auth = value.decode("latin-1") if auth is None else auth
    extra: dict[str, str] = {}
    try:
        s.check_key_of(api_key, auth)
        body = await s.read_json(length, _body_chunks(receive))
        spec, queries, vectors, batch = s.parse(body, QUERY_FIELDS)
        data = await s.timed(s.retrieve_body(spec, queries, vectors, batch))
        status, recipe = 200, spec.recipe or "router"
    except Exception as exc:
        status, data, extra = s.error_parts(exc)
    s.metrics.observe("retrieve", recipe, time.perf_counter() - t0)
    headers = [
        (b"content-length", str(len(data)).encode()),
        (b"content-type", b"application/json"),
    ]
    headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _single(s: Service, body: Any, allowed: frozenset[str]) -> tuple[Spec, list[str], Any]:
    spec, queries, vectors, batch = s.parse(body, allowed)
    if batch:
        raise RequestError(422, "give one 'query'", kind="invalid_value", column="queries")
    return spec, queries, vectors


async def _context(s: Service, request: Request) -> tuple[Response, str]:
    body = await s.body(request)
    spec, queries, vectors = _single(s, body, CONTEXT_FIELDS)
    fmt = body.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise ParameterError("invalid parameter format: give a name", parameter="format")
    budget = int_field(body, "budget", 1, 1_000_000) if "budget" in body else 500

    async def work() -> Response:
        res = (await s.retrieve(spec, queries, vectors))[0]

        def render() -> bytes:
            block = s.backend.rag.context(res, format=fmt, budget=budget)
            return dumps(
                {
                    "recipe": res.recipe,
                    "text": block.text,
                    "tokens": block.tokens,
                    "items": list(block.items),
                    "dropped": list(block.dropped),
                    "budget": block.budget,
                }
            )

        loop = asyncio.get_running_loop()
        body = await loop.run_in_executor(s.executor, render)
        return Response(body, media_type="application/json")

    return await s.timed(work()), spec.recipe or "router"


async def _explain_endpoint(s: Service, request: Request) -> tuple[Response, str]:
    fmt = request.query_params.get("format", "json")
    if fmt not in ("json", "html"):
        raise RequestError(
            422, f"unknown format {fmt!r}; known: ['html', 'json']", kind="invalid_value"
        )
    body = await s.body(request)
    spec, queries, vectors = _single(s, body, QUERY_FIELDS)

    async def work() -> Response:
        res = (await s.retrieve(spec, queries, vectors))[0]
        loop = asyncio.get_running_loop()
        if fmt == "html":
            # ---- The explanation as a picture (HTML page): graphrecall.explain's renderer,
            # given the context block so that the page marks the items that made it.
            to_html = getattr(importlib.import_module("graphrecall.explain"), "to_html", None)
            if to_html is None:
                raise RequestError(
                    406,
                    "this graphrecall has no HTML explanation renderer",
                    kind="unsupported_format",
                )
            takes_context = "context" in inspect.signature(to_html).parameters

            def page() -> str:
                if takes_context:
                    return str(to_html(res, s.backend.rag.context(res)))
                return str(to_html(res))

            html = await loop.run_in_executor(s.executor, page)
            return Response(html, media_type="text/html; charset=utf-8")

        def text() -> bytes:
            return dumps(
                {"recipe": res.recipe, "text": explain_text(res), "items": explain_records(res)}
            )

        body = await loop.run_in_executor(s.executor, text)
        return Response(body, media_type="application/json")

    return await s.timed(work()), spec.recipe or "router"


def _write_body(s: Service, body: Any, allowed: set[str], rows: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RequestError(422, "the body must be a JSON object", kind="invalid_value")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise RequestError(
            422,
            f"unknown field {unknown[0]!r}; known: {sorted(allowed)}",
            kind="unknown_field",
            column=unknown[0],
        )
    n = sum(len(v) for k, v in body.items() if k in (rows, "chunks") and isinstance(v, list))
    if n > s.config.max_write_rows:
        raise RequestError(
            413,
            f"{n} records in one write, more than the limit {s.config.max_write_rows}",
            kind="batch_too_large",
            ctx={"limit": s.config.max_write_rows, "got": n},
        )
    return body


async def _write(s: Service, fn: Callable[[], dict[str, Any]], op: str) -> Response:
    # Writes are never cut short by the request timeout: the response waits for the commit.
    loop = asyncio.get_running_loop()
    ack = await asyncio.shield(loop.run_in_executor(s.write_executor, fn))
    s.metrics.writes.labels(op).inc()
    return _json(ack)


async def _add_facts(s: Service, request: Request) -> tuple[Response, str]:
    body = _write_body(s, await s.body(request), {"tenant", "facts"}, "facts")
    tenant = s.backend.tenant(body.get("tenant"))
    return await _write(s, lambda: s.backend.add_facts(tenant, body.get("facts")), "add_facts"), "-"


async def _update_facts(s: Service, request: Request) -> tuple[Response, str]:
    body = _write_body(s, await s.body(request), {"tenant", "facts"}, "facts")
    tenant = s.backend.tenant(body.get("tenant"))
    return await _write(
        s, lambda: s.backend.update_facts(tenant, body.get("facts")), "update_facts"
    ), "-"


async def _usage(s: Service, request: Request) -> tuple[Response, str]:
    body = _write_body(s, await s.body(request), {"tenant", "facts", "chunks", "at"}, "facts")
    tenant = s.backend.tenant(body.get("tenant"))
    facts, chunks = body.get("facts") or [], body.get("chunks") or []
    if not isinstance(facts, list) or not isinstance(chunks, list):
        raise RequestError(422, "facts and chunks must be lists of ids", kind="invalid_value")
    at = int_field(body, "at", 0, 2**62)
    when = int(time.time()) if at is None else at
    return await _write(
        s, lambda: s.backend.record_usage(tenant, facts, chunks, when), "record_usage"
    ), "-"


async def _healthz(s: Service, request: Request) -> tuple[Response, str]:
    return _json({"status": "ok"}), "-"


async def _readyz(s: Service, request: Request) -> tuple[Response, str]:
    return _json({"status": "ready", **s.backend.ready()}), "-"


async def _metrics(s: Service, request: Request) -> tuple[Response, str]:
    return Response(s.metrics.render(), media_type=CONTENT_TYPE), "-"


class ServiceApp(Starlette):
    """Starlette with ``POST /retrieve`` answered by :func:`_retrieve_asgi` ahead of the
    router (the load path); every other request goes through Starlette."""

    service: Service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == "/retrieve"
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            await _retrieve_asgi(self.service, scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(backend: Backend, config: ServiceConfig | None = None) -> ServiceApp:
    """The ASGI app serving ``backend`` (see the module docstring); ``app.state.service``
    is its :class:`Service`."""
    service = Service(backend, config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        # Shutdown: uvicorn has answered the requests in flight; finish the queued writes,
        # then close the store.
        service.write_executor.shutdown(wait=True)
        service.executor.shutdown(wait=True)
        backend.close()

    def ep(name: str, h: Handler, auth: bool = True) -> Any:
        return _endpoint(service, name, h, auth=auth)

    routes = [
        Route("/retrieve", ep("retrieve", _retrieve), methods=["POST"]),
        Route("/context", ep("context", _context), methods=["POST"]),
        Route("/explain", ep("explain", _explain_endpoint), methods=["POST"]),
        Route("/facts", ep("add_facts", _add_facts), methods=["POST"]),
        Route("/facts", ep("update_facts", _update_facts), methods=["PATCH"]),
        Route("/usage", ep("usage", _usage), methods=["POST"]),
        Route("/healthz", ep("healthz", _healthz, auth=False), methods=["GET"]),
        Route("/readyz", ep("readyz", _readyz, auth=False), methods=["GET"]),
        Route("/metrics", ep("metrics", _metrics), methods=["GET"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
        return service.error(RequestError(status, f"{detail}: {request.url.path}", kind=kind))

    app = ServiceApp(
        routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error}
    )
    app.state.service = app.service = service
    return app
