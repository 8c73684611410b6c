"""The recipes' per-process caches under threads: eviction must never raise."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest
from graphrecall.recipes import ChunkBoost, anchoring


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows (races show within a second)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _hammer(work: Callable[[int, int], object], threads: int = 8, calls: int = 3000) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(t: int) -> None:
        start.wait()
        try:
            for i in range(calls):
                work(t, i)
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors[:3]


def test_params_cache_evicts_atomically_under_threads(fast_switching: None) -> None:
    # Every call a new parameter set: the 256-entry cache evicts on almost every call.
    _hammer(lambda t, i: anchoring.params_of(ChunkBoost, {"k": 1 + (t * 100_000 + i)}))


def test_plan_cache_evicts_atomically_under_threads(fast_switching: None) -> None:
    class Index:  # weak-referenceable stand-in: cached_plan only keys on it
        pass

    index = Index()
    sets = [ChunkBoost(k=k) for k in range(1, 2001)]
    _hammer(
        lambda t, i: anchoring.cached_plan(
            index,  # type: ignore[arg-type]
            "x",
            sets[(t * 7919 + i) % len(sets)],
            0,
            lambda: i,
        ),
        calls=20_000,
    )
