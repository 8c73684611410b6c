"""uvicorn's httptools protocol with a header read timeout: a client that has not sent a
complete request head within the timeout gets a 408 JSON error and is disconnected, so a
slow or stalled client cannot hold a connection open forever (uvicorn times out idle
keep-alive connections, not half-sent requests)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .errors import RequestError, error_body

__all__ = ["HeaderTimeoutProtocol", "with_header_timeout"]


def _timeout_response() -> bytes:
    body = json.dumps(
        error_body(
            RequestError(
                408,
                "request head not received in time",
                kind="timeout",
                ctx={"phase": "headers"},
            )
        )
    ).encode()
    head = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n"
    )
    return head + body


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that answers 408 when a request head is late."""

    header_timeout_s: float = 10.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self._disarm()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expire(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered; the app's body timeout covers it
        if not self.transport.is_closing():
            self.transport.write(_timeout_response())
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    """A :class:`HeaderTimeoutProtocol` subclass with ``seconds`` as its timeout."""
    attrs: dict[str, Any] = {"header_timeout_s": float(seconds)}
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), attrs)
