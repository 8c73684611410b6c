"""The native kernels release the GIL: another Python thread keeps running during a call.

Method: a worker thread runs a batched call (hundreds of milliseconds on a 200k-fact graph)
while the main thread counts in a tight loop, noting the time every STRIDE iterations. The
worker notes when its call starts and ends; the main thread's time stamps inside the middle
half of the call show that it ran *during* the call. With the GIL released the main thread
runs through the whole call (even on a loaded 2-core machine where it gets a fraction of a
core); with the GIL held it cannot run at all in the middle of the call (it may run just
before and just after, for a thread switch). The threshold (5% of what the main thread does
alone in the same time) sits far from both. A control runs a GIL-holding builtin (``sum``
over a range) through the same harness and must fail it, so the harness is shown able to
fail.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from graphrecall import KnowledgeGraph

NOW = 1_767_225_600
MIN_SECONDS = 0.25  # each measurement runs the work for at least this long
SHARE = 0.05  # the main thread must get this share of its solo speed during the work


@pytest.fixture(scope="module")
def big() -> tuple[KnowledgeGraph, np.ndarray]:
    rng = np.random.default_rng(2024)
    n_ent, n_facts = 20_000, 200_000
    g = KnowledgeGraph.from_arrays(
        fact_subject=rng.integers(0, n_ent, n_facts),
        fact_object=rng.integers(0, n_ent, n_facts),
        n_entities=n_ent,
        confidence=rng.random(n_facts),
        strength=rng.random(n_facts),
        last_accessed=NOW - rng.integers(0, 365 * 86_400, n_facts),
    )
    return g, rng.integers(0, n_ent, (2000, 3))


@pytest.fixture(autouse=True)
def short_switch_interval() -> Iterator[None]:
    """Shorten the thread switches around a GIL-holding call (default 5 ms)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


STRIDE = 256  # the main thread notes the time every STRIDE iterations


def count(stamps: list[float], stop: threading.Event, limit: int) -> int:
    """The main thread's loop (the same code for the solo measurement and the test)."""
    n = 0
    while not stop.is_set() and n < limit:
        n += 1
        if n % STRIDE == 0:
            stamps.append(time.perf_counter())
    return n


def solo_rate() -> float:
    """Iterations per second of the counting loop with no other thread running."""
    n = 300_000
    t0 = time.perf_counter()
    count([], threading.Event(), n)
    return n / (time.perf_counter() - t0)


def progress_during(work: Callable[[], Any]) -> tuple[int, float, int]:
    """Run ``work`` (repeatedly, for at least MIN_SECONDS) in a worker thread while this
    thread counts; returns (the main thread's time stamps inside the middle half of the
    work, seconds of work, calls).

    Only the middle half counts: a thread holding the GIL lets the main thread run just
    before its call starts and just after it returns (a thread switch: a millisecond, or
    tens of milliseconds on a loaded machine), never in the middle of the call.
    """
    stamps: list[float] = []
    started, done = threading.Event(), threading.Event()
    out: dict[str, Any] = {}

    def worker() -> None:
        started.set()
        try:
            calls = 0
            t0 = time.perf_counter()
            while True:
                work()
                calls += 1
                t1 = time.perf_counter()
                if t1 - t0 >= MIN_SECONDS:
                    break
            out["result"] = (t0, t1, calls)
        except BaseException as exc:  # report in the main thread
            out["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait()
    count(stamps, done, sys.maxsize)
    thread.join()
    if "error" in out:
        raise out["error"]
    t0, t1, calls = out["result"]
    lo, hi = t0 + 0.25 * (t1 - t0), t0 + 0.75 * (t1 - t0)
    return sum(1 for t in stamps if lo < t < hi), t1 - t0, calls


ATTEMPTS = 3  # other processes (a test's leftover cluster) can starve one measurement


def gil_released(work: Callable[[], Any]) -> tuple[bool, str]:
    """Whether the main thread ran during ``work`` in any of ATTEMPTS measurements (a call
    holding the GIL fails every one of them)."""
    details: list[str] = []
    for _ in range(ATTEMPTS):
        rate = solo_rate()
        seen, seconds, calls = progress_during(work)
        need = max(SHARE * rate * (seconds / 2) / STRIDE, 10.0)
        details.append(
            f"main thread noted {seen} times in the middle half of {seconds:.3f} s of work "
            f"({calls} calls); alone it runs {rate:.0f} iterations/s, threshold {need:.0f}"
        )
        if seen > need:
            return True, details[-1]
    return False, "; ".join(details)


def test_spread_releases_the_gil(big: tuple[KnowledgeGraph, np.ndarray]) -> None:
    g, anchors = big
    plan = g.spread_plan(max_hops=2, direction="both", rank="score_fact")
    ok, detail = gil_released(lambda: plan(anchors[:500], now=NOW))
    assert ok, detail


def test_graph_recall_releases_the_gil(big: tuple[KnowledgeGraph, np.ndarray]) -> None:
    g, anchors = big
    plan = g.recall_plan(max_hops=3, top_k=50)
    ok, detail = gil_released(lambda: plan(anchors))
    assert ok, detail


def test_pagerank_releases_the_gil(big: tuple[KnowledgeGraph, np.ndarray]) -> None:
    g, anchors = big
    ok, detail = gil_released(lambda: g.personalized_pagerank(anchors[:8], max_iter=30, tol=1e-300))
    assert ok, detail


@pytest.mark.skipif(
    not getattr(sys, "_is_gil_enabled", lambda: True)(),
    reason="a free-threaded build has no GIL for the control to hold",
)
def test_the_harness_detects_a_held_gil() -> None:
    """Control: ``sum`` over a range runs in C holding the GIL; the harness must see (almost)
    no progress of the main thread during it."""
    # One call must span the whole measurement (between two calls the GIL is free): grow
    # the call until it takes twice MIN_SECONDS, so a machine that gets quieter meanwhile
    # still makes it one call.
    n = 1_000_000
    while True:
        t0 = time.perf_counter()
        sum(range(n))
        if time.perf_counter() - t0 >= 2 * MIN_SECONDS:
            break
        n *= 2
    ok, detail = gil_released(lambda: sum(range(n)))
    assert not ok, detail
