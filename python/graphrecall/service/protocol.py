"""uvicorn's httptools protocol with a header read timeout: a client that has not sent a
complete request head within the timeout gets a 408 JSON error and is disconnected, so a
slow or stalled client cannot hold a connection open forever (uvicorn times out idle
keep-alive connections, not half-sent requests).

Each response also leaves in one write: uvicorn writes the status line and headers at
``http.response.start`` and the body at ``http.response.body``, two sends and two segments
on the socket; here the head is held and sent with the body's first bytes (one system call
on each side of a loopback connection, one wake-up of the client).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from .errors import RequestError, error_body

__all__ = ["HeaderTimeoutProtocol", "with_header_timeout"]


class _HeldHead:
    """Where uvicorn writes a response head: kept until the body goes."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


class _WithHead:
    """The connection's transport for the body's first write: the held head goes with it
    (and before anything else: a close, or the end of a response without body bytes)."""

    __slots__ = ("head", "transport")

    def __init__(self, transport: asyncio.Transport, head: bytes) -> None:
        self.transport = transport
        self.head = head

    def flush(self) -> None:
        if self.head and not self.transport.is_closing():
            self.transport.write(self.head)
            self.head = b""

    def write(self, data: bytes) -> None:
        head, self.head = self.head, b""
        self.transport.write(head + data if head else data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _OneWriteCycle(RequestResponseCycle):
    """uvicorn's request-response cycle with the head and the body's first bytes in one
    write (see the module docstring)."""

    _head = b""

    async def send(self, message: Any) -> None:
        if message["type"] == "http.response.start" and not self.response_started:
            real, held = self.transport, _HeldHead()
            self.transport = held  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = real
            self._head = held.data
            return
        if not self._head:
            await super().send(message)
            return
        real, first = self.transport, _WithHead(self.transport, self._head)
        self._head = b""
        self.transport = first  # type: ignore[assignment]
        try:
            await super().send(message)
        finally:
            self.transport = real
            first.flush()


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
        # The cycle's task has not started yet: it sends through the subclass.
        if type(self.cycle) is RequestResponseCycle:
            self.cycle.__class__ = _OneWriteCycle

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
