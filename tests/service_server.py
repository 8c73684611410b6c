"""A ``graphrecall serve`` process for the service tests: the demo graph in a SQLite store,
started on a free loopback port, stopped (or killed) by the test."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def demo_store(path: Path) -> Path:
    """The packaged demo graph, embedded once and written to a SQLite store at ``path``."""
    from graphrecall.demo import demo_data, demo_tables
    from graphrecall.index import GraphIndex
    from graphrecall.storage import SQLiteStore

    tables, _ = demo_tables(demo_data()).check()
    index = GraphIndex.build(tables, embedder="default", checked=True)
    tables.embeddings = index.embedding_sets()
    with SQLiteStore.create(path, overwrite=True) as store:
        store.write(tables)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``graphrecall serve INDEX ARGS...`` in a subprocess; ``url`` once it is ready.

    Raises:
        RuntimeError: The process exited or did not answer ``/healthz`` within 60 s.
    """

    def __init__(self, index: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()
        penv = {**os.environ, **(env or {})}
        penv["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "graphrecall.cli",
                "serve",
                str(index),
                "--port",
                str(self.port),
                *args,
            ],
            env=penv,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                self.log.seek(0)
                out = self.log.read().decode(errors="replace")
                self.log.close()
                raise RuntimeError(f"graphrecall serve exited: {out}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("graphrecall serve did not start in 60 s")
            time.sleep(0.05)  # polling for startup, not timing anything

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` and wait for the exit; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(30)
        finally:
            self.log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
