"""Connections handed out in turn: ``graphrecall serve --processes N`` accepts in the parent
and passes each accepted socket to the next child over a Unix socket pair (``SCM_RIGHTS``).

Listening sockets per child (``SO_REUSEPORT``) let the kernel hash each connection to a
child: 8 keep-alive clients land 4:4 on two children only about a quarter of the time, and
the busier child then caps the throughput. Handing connections out in turn keeps the
children's shares within one connection of each other; a connection costs one extra hop
when it opens, none per request.
"""

from __future__ import annotations

import asyncio
import socket
import threading

import uvicorn

__all__ = ["HandoffServer", "hand_out"]


class HandoffServer(uvicorn.Server):
    """A uvicorn server that listens on nothing itself and serves the connections its
    parent passes over ``channel`` (one accepted TCP socket per message)."""

    def __init__(self, config: uvicorn.Config, channel: socket.socket) -> None:
        super().__init__(config)
        self._channel = channel
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's startup with no listener, then read handed-out connections."""
        await super().startup(sockets=[])
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._channel.setblocking(False)
        loop.add_reader(self._channel.fileno(), self._receive)

    def _protocol(self) -> asyncio.Protocol:
        """The protocol uvicorn's own listener would make for a new connection."""
        proto: asyncio.Protocol = self.config.http_protocol_class(  # type: ignore[call-arg]
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
        )
        return proto

    def _receive(self) -> None:
        """Adopt every connection waiting on the channel (closed channel: stop reading)."""
        loop = self._loop
        assert loop is not None
        while True:
            try:
                msg, fds, _flags, _addr = socket.recv_fds(self._channel, 64, 64)
            except BlockingIOError:
                return
            except OSError:
                msg, fds = b"", []
            if not msg and not fds:  # the parent is gone: no more connections
                loop.remove_reader(self._channel.fileno())
                return
            for fd in fds:
                conn = socket.socket(fileno=fd)
                if self.should_exit:  # shutting down: take no new connection
                    conn.close()
                    continue
                loop.create_task(self._adopt(conn))

    async def _adopt(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(self._protocol, conn)
        except OSError:  # the client left before it was adopted
            conn.close()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop reading handed-out connections, then uvicorn's graceful shutdown."""
        if self._loop is not None:
            try:
                self._loop.remove_reader(self._channel.fileno())
            except (ValueError, OSError):  # already removed
                pass
        await super().shutdown(sockets=sockets)


def hand_out(
    listener: socket.socket, channels: list[socket.socket], stop: threading.Event
) -> threading.Thread:
    """Start a thread that accepts on ``listener`` and passes each connection to the next
    of ``channels`` in turn (a child whose channel is closed is skipped) until ``stop``."""

    def run() -> None:
        listener.settimeout(0.2)  # wake to see ``stop``
        live = list(channels)
        turn = 0
        while live and not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                while live:
                    ch = live[turn % len(live)]
                    turn += 1
                    try:
                        socket.send_fds(ch, [b"c"], [conn.fileno()])
                        break
                    except OSError:  # that child is gone
                        live.remove(ch)

    thread = threading.Thread(target=run, name="graphrecall-hand-out", daemon=True)
    thread.start()
    return thread
