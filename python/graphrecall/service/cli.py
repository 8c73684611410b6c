"""``graphrecall serve INDEX``: the HTTP service on uvicorn (httptools parser, uvloop when
installed), bound to 127.0.0.1 unless told otherwise.

``--processes N`` (a saved index only) forks N server processes; the parent accepts on the
port and hands the connections to them in turn (:mod:`.handoff`): the recipes' Python holds the GIL,
so one process tops out near one core; a saved index is memory-mapped, so the processes
share its pages. A SQLite store is served by one process, so that a write is visible to
the next query whichever process answers it."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from .config import ServiceConfig

__all__ = ["add_parser", "run", "serve"]


def serve(
    path: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: ServiceConfig | None = None,
    embedder: str | None = "default",
    log_level: str = "warning",
    loop: str = "auto",
    http: str = "auto",
    processes: int = 1,
) -> None:
    """Open ``path`` (a saved index or a SQLite store) and serve it until SIGINT / SIGTERM;
    requests in flight, writes included, are finished before the process exits.

    ``loop`` ("auto": uvloop when installed, or "asyncio") and ``http`` ("auto": httptools
    with the header read timeout, or "h11") choose uvicorn's stack (the benchmark compares
    them). ``processes`` > 1 serves a saved index from that many forked processes on one
    socket (see the module docstring).

    Raises:
        ParameterError: ``processes`` > 1 for a SQLite store, or where ``os.fork`` is
            missing.
    """
    if processes > 1:
        _serve_forked(path, host, port, processes, config, embedder, log_level, loop, http)
        return
    _serve_one(path, host, port, config, embedder, log_level, loop, http, None)


def _serve_one(
    path: str | os.PathLike[str],
    host: str,
    port: int,
    config: ServiceConfig | None,
    embedder: str | None,
    log_level: str,
    loop: str,
    http: str,
    channel: socket.socket | None,
) -> None:
    """One server process: bound to ``host:port``, or serving the connections its parent
    hands over ``channel`` when given."""
    import uvicorn

    from .app import create_app
    from .backend import Backend
    from .protocol import with_header_timeout

    cfg = config or ServiceConfig()
    backend = Backend.open(path, embedder=embedder)
    app = create_app(backend, cfg)
    if loop == "auto":
        try:
            import uvloop  # noqa: F401

            loop = "uvloop"
        except ImportError:  # pragma: no cover - depends on the environment
            loop = "asyncio"
    uv = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop=loop,
        http=with_header_timeout(cfg.read_timeout_s) if http == "auto" else http,
        lifespan="on",
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=None,
        limit_concurrency=None,
        backlog=2048,
    )
    if channel is None:
        uvicorn.Server(uv).run()
    else:
        from .handoff import HandoffServer

        HandoffServer(uv, channel).run()


def _serve_forked(
    path: str | os.PathLike[str],
    host: str,
    port: int,
    processes: int,
    config: ServiceConfig | None,
    embedder: str | None,
    log_level: str,
    loop: str,
    http: str,
) -> None:
    """``processes`` children serving a saved index on one port (a socket each); SIGINT /
    SIGTERM are passed on to them, and when one exits the others are stopped.

    Raises:
        ChildProcessError: A child exited with an error before any stop signal.
    """
    from ..errors import ParameterError
    from ..index_io import is_saved_index

    if not hasattr(os, "fork"):
        raise ParameterError(
            "invalid parameter processes: this platform cannot fork; serve with one process",
            kind="invalid_parameter",
            parameter="processes",
        )
    if not (Path(path).is_dir() and is_saved_index(Path(path))):
        raise ParameterError(
            "invalid parameter processes: only a saved index (read-only) is served by several "
            "processes; a SQLite store takes writes, which one process must see",
            kind="invalid_parameter",
            parameter="processes",
        )
    # The parent accepts and hands each connection to the next child in turn: the kernel's
    # hash over per-child listeners (SO_REUSEPORT) often gives one child most of a few
    # keep-alive clients, and children sharing one listener let the first to wake take a
    # whole burst.
    from .handoff import hand_out

    listener = socket.create_server((host, port), backlog=2048)
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(processes)]
    children: list[int] = []
    for _, theirs in pairs:
        pid = os.fork()
        if pid == 0:  # the child: load the index here (no threads were started before)
            code = 1
            try:
                listener.close()
                for a, b in pairs:
                    a.close()
                    if b is not theirs:
                        b.close()
                _die_with_parent()
                _serve_one(path, host, port, config, embedder, log_level, loop, http, theirs)
                code = 0
            except BaseException as exc:  # a child never returns into the parent's code
                print(f"graphrecall serve: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    for _, theirs in pairs:
        theirs.close()
    stop = threading.Event()
    hand_out(listener, [ours for ours, _ in pairs], stop)
    stopping: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        stopping.append(signum)
        stop.set()  # no new connections: the children finish the ones they hold
        for pid in children:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    pid, status = os.wait()
    asked = bool(stopping)  # SIGTERM / SIGINT came first: a shutdown, not a failure
    children.remove(pid)
    if not asked:
        forward(signal.SIGTERM, None)
    for child in children:
        os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    if not asked and code != 0:
        raise ChildProcessError(f"a server process exited with status {code}")


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent dies (no-op elsewhere), so that a
    killed ``graphrecall serve`` leaves no server behind."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``serve`` on the ``graphrecall`` command's subparsers."""
    d = ServiceConfig()
    p: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="serve a saved index or a SQLite store over HTTP",
        description=__doc__,
    )
    p.add_argument("index", help="a saved index directory or a graphrecall SQLite store")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (8000)")
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="require the API key held in this environment variable",
    )
    p.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes)
    p.add_argument("--max-batch", type=int, default=d.max_batch, help="queries per request")
    p.add_argument("--timeout", type=float, default=d.request_timeout_s, help="seconds")
    p.add_argument(
        "--read-timeout", type=float, default=d.read_timeout_s, help="header/body seconds"
    )
    p.add_argument("--batch-wait-ms", type=float, default=d.batch_wait_ms)
    p.add_argument("--batch-max", type=int, default=d.batch_max)
    p.add_argument("--no-batching", action="store_true", help="one call per request")
    p.add_argument("--workers", type=int, default=d.workers, help="retrieval threads")
    p.add_argument(
        "--inline-max",
        type=int,
        default=d.inline_max,
        help="run a flush of at most this many queries with vectors on the event loop "
        "(0: always on a retrieval thread)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="server processes on one port (a saved index only; 1)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not use the result cache")
    p.add_argument("--no-embedder", action="store_true", help="queries must carry vectors")
    p.add_argument("--log-level", default="warning")
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``graphrecall serve``; returns the exit code."""
    from ..errors import GraphRecallError

    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            print(f"graphrecall serve: ${args.api_key_env} is empty or unset", file=sys.stderr)
            return 1
    try:
        cfg = ServiceConfig(
            api_key=key,
            max_body_bytes=args.max_body_bytes,
            max_batch=args.max_batch,
            request_timeout_s=args.timeout,
            read_timeout_s=args.read_timeout,
            batch_wait_ms=args.batch_wait_ms,
            batch_max=args.batch_max,
            batching=not args.no_batching,
            workers=args.workers,
            inline_max=args.inline_max,
            use_cache=not args.no_cache,
        )
        serve(
            args.index,
            host=args.host,
            port=args.port,
            config=cfg,
            embedder=None if args.no_embedder else "default",
            log_level=args.log_level,
            processes=args.processes,
        )
    except ImportError as exc:
        print(
            f"graphrecall serve: {exc}; install the service's packages with "
            "`pip install 'graphrecall[serve]'`",
            file=sys.stderr,
        )
        return 1
    except (GraphRecallError, OSError) as exc:
        print(f"graphrecall serve: {exc}", file=sys.stderr)
        return 1
    return 0
