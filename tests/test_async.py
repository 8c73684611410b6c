"""``GraphRAG.aretrieve`` / ``aretrieve_batch``: the same results as the sync calls, and the
event loop keeps running while a query is in progress.

The second is shown without timing: the query's embedder (called inside the retrieval, on
the worker thread) waits until the loop has run a number of its callbacks *after* the query
started. If the call blocked the loop, no callback could run and the wait would time out.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from graphrecall import CallableEmbedder, GraphRAG, ParameterError
from graphrecall.demo import EXAMPLES, demo_data, demo_tables

NOW = 1_767_225_600
DIM = 32
TICKS = 50  # loop callbacks that must run while one query is in progress


def hashed(texts: list[str]) -> np.ndarray:
    """A deterministic bag-of-words embedding (no model needed)."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().split():
            h = hashlib.blake2b(word.encode(), digest_size=4).digest()
            out[i, int.from_bytes(h, "little") % DIM] += 1.0
        out[i, 0] += 0.01
    return out


class Gate:
    """The query embedder: when armed, it notes the loop's tick count on entry and blocks
    until the loop has ticked TICKS more times (or a generous timeout passes)."""

    def __init__(self) -> None:
        self.ticks = 0
        self.armed = False
        self.entered_at: int | None = None
        self.seen_while_blocked = 0
        self.opened = threading.Event()

    def tick(self) -> None:
        self.ticks += 1
        if self.entered_at is not None and self.ticks - self.entered_at >= TICKS:
            self.opened.set()

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.armed:
            self.entered_at = self.ticks
            self.opened.wait(timeout=30)
            self.seen_while_blocked = self.ticks - self.entered_at
        return hashed(texts)


@pytest.fixture(scope="module")
def made() -> tuple[GraphRAG, Gate]:
    gate = Gate()
    emb = CallableEmbedder(gate, dim=DIM, passage_fn=hashed)
    return GraphRAG.from_tables(demo_tables(demo_data()), embedder=emb, cache=None), gate


def test_results_equal_the_sync_calls(made: tuple[GraphRAG, Gate]) -> None:
    rag, _ = made
    for recipe, tenant, question, context in EXAMPLES:
        sync = rag.retrieve(question, recipe=recipe, tenant=tenant, now=NOW, context=context)
        got = asyncio.run(
            rag.aretrieve(question, recipe=recipe, tenant=tenant, now=NOW, context=context)
        )
        assert _same(got.to_dict(), sync.to_dict()), recipe
    questions = [q for _, t, q, _ in EXAMPLES if t == "stark"]
    sync_batch = rag.retrieve_batch(questions, tenant="stark", now=NOW)
    async_batch = asyncio.run(rag.aretrieve_batch(questions, tenant="stark", now=NOW))
    assert [r.recipe for r in async_batch] == [r.recipe for r in sync_batch]
    assert all(
        _same(a.to_dict(), s.to_dict()) for a, s in zip(async_batch, sync_batch, strict=True)
    )


def _same(a: Any, b: Any) -> bool:
    """Equal results, timings apart."""
    return {k: v for k, v in a.items() if k != "timings"} == {
        k: v for k, v in b.items() if k != "timings"
    }


def test_the_loop_keeps_running_during_a_batch(made: tuple[GraphRAG, Gate]) -> None:
    rag, gate = made
    questions = [q for _, t, q, _ in EXAMPLES if t == "stark"] * 50

    async def main() -> int:
        stop = False

        async def ticker() -> None:
            while not stop:
                gate.tick()
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        gate.armed = True
        try:
            results = await rag.aretrieve_batch(questions, recipe="chunk_boost", tenant="stark")
        finally:
            gate.armed = False
            stop = True
            await task
        return len(results)

    assert asyncio.run(main()) == len(questions)
    assert gate.opened.is_set() and gate.seen_while_blocked >= TICKS


def test_errors_raise_at_the_await(made: tuple[GraphRAG, Gate]) -> None:
    rag, _ = made
    with pytest.raises(ParameterError, match="recipe"):
        asyncio.run(rag.aretrieve("x", recipe="no_such_recipe", tenant="stark"))
    with pytest.raises(ParameterError, match="queries"):
        asyncio.run(rag.aretrieve_batch("not a list", tenant="stark"))


def test_many_awaits_at_once(made: tuple[GraphRAG, Gate]) -> None:
    rag, _ = made
    run: Callable[[str], Any] = lambda q: rag.aretrieve(  # noqa: E731
        q, recipe="ppr", tenant="stark", now=NOW
    )
    questions = [q for _, t, q, _ in EXAMPLES if t == "stark"] * 8

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(run(q) for q in questions)))

    got = asyncio.run(main())
    want = [rag.retrieve(q, recipe="ppr", tenant="stark", now=NOW) for q in questions]
    assert [r.chunk_ids for r in got] == [r.chunk_ids for r in want]
