"""Kill -9 of ``graphrecall serve`` during writes, then a restart: every acknowledged write
is in the store and served; SIGTERM finishes the writes in flight before the exit."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

from service_server import Server, demo_store  # noqa: E402


def _writer(url: str, first_id: int, acked: list[int], enough: threading.Event) -> None:
    """Add one fact per request until the server goes away; ``acked`` gets the ids whose
    write was acknowledged (200)."""
    with httpx.Client(base_url=url, timeout=30.0) as c:
        fid = first_id
        while True:
            fact = {"id": fid, "subject": "jacq", "predicate": "note", "object_value": f"n{fid}"}
            try:
                r = c.post("/facts", json={"tenant": "alice", "facts": [fact]})
            except httpx.TransportError:
                return
            if r.status_code != 200:
                return
            acked.append(fid)
            if len(acked) >= 5:
                enough.set()
            fid += 1


def _stored_fact_ids(path: Path) -> set[int]:
    from graphrecall.storage import SQLiteStore

    with SQLiteStore.open(path) as store:
        return {int(i) for i in store.read().facts["id"].tolist()}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_acknowledged_writes_survive(tmp_path: Path, sig: int) -> None:
    path = demo_store(tmp_path / "demo.sqlite")
    before = len(_stored_fact_ids(path))
    acked: list[int] = []
    enough = threading.Event()
    with Server(path) as srv:
        t = threading.Thread(target=_writer, args=(srv.url, 10_000, acked, enough))
        t.start()
        assert enough.wait(120), "no writes acknowledged"
        code = srv.stop(sig)
        t.join(60)
    assert not t.is_alive()
    # uvicorn re-raises SIGTERM after its graceful shutdown, so both end by their signal.
    assert code == -sig
    assert len(acked) >= 5
    assert set(acked) <= _stored_fact_ids(path)
    with Server(path) as again:
        ready = httpx.get(again.url + "/readyz").json()
        assert ready["facts"] >= before + len(acked)
        got = httpx.post(
            again.url + "/usage", json={"tenant": "alice", "facts": acked, "at": 1767225600}
        )
        assert got.status_code == 200, got.text
