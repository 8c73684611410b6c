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
JSON body, runs on a worker thread, but for a flush of a few queries that carry their
vectors (``ServiceConfig.inline_max``), which runs on the event loop's thread: cheaper
than the hop. ``POST /retrieve`` is served
by a thin ASGI handler ahead of Starlette's router and middleware (the same checks, errors
and metrics, less Python per request); the other endpoints go through Starlette. Writes
respond after the SQLite commit and the index swap.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import ParameterError
from ..explain import explain as explain_text
from ..explain import explain_records
from .backend import Backend
from .bodies import (
    CONTEXT_FIELDS,
    QUERY_FIELDS,
    RETRIEVE_FIELDS,
    Spec,
    dumps,
    int_field,
)
from .config import ServiceConfig
from .errors import RequestError
from .metrics import CONTENT_TYPE
from .state import Service

__all__ = ["Service", "create_app"]


def _json(body: Any, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


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
    spec, queries, vectors, batch = s.parse(body, RETRIEVE_FIELDS)
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
        data, spec = await s.answer_retrieve(length, _body_chunks(receive))
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
