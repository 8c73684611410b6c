"""graphrecall.cache.ResultCache: keys, exact expiry on an injected clock, LRU eviction,
tenant invalidation, generations, single-flight, threads, and a model-based property test."""

from __future__ import annotations

import datetime as dt
import enum
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY
from graphrecall.cache import CacheStats, ResultCache
from graphrecall.errors import ParameterError
from hypothesis import given
from hypothesis import strategies as st


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _const(value: Any) -> Callable[[], Any]:
    return lambda: value


def make(ttl: float = 60.0, maxsize: int = 100, now: float = 0.0) -> tuple[ResultCache, FakeClock]:
    clock = FakeClock(now)
    return ResultCache(ttl, maxsize, clock=clock), clock


# ------------------------------------------------------------------------------------------
# Construction.


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan"), float("inf"), "60", True, None])
def test_bad_ttl(ttl: Any) -> None:
    with pytest.raises(ParameterError, match="ttl"):
        ResultCache(ttl)


@pytest.mark.parametrize("maxsize", [0, -5, 1.5, True, "10"])
def test_bad_maxsize(maxsize: Any) -> None:
    with pytest.raises(ParameterError, match="maxsize"):
        ResultCache(60.0, maxsize)


def test_bad_clock() -> None:
    with pytest.raises(ParameterError, match="clock must be callable"):
        ResultCache(clock=3.0)  # type: ignore[arg-type]


def test_defaults_and_numpy_arguments() -> None:
    cache = ResultCache()
    assert (cache.ttl, cache.maxsize) == (60.0, 10_000)
    cache = ResultCache(np.float32(0.5), np.int64(2))  # type: ignore[arg-type]
    assert (cache.ttl, cache.maxsize) == (0.5, 2)
    assert "ResultCache(ttl=0.5, maxsize=2, size=0)" == repr(cache)


# ------------------------------------------------------------------------------------------
# Keys.


def test_key_is_stable_across_runs() -> None:
    # A golden value: keys must not change between processes, runs or versions of Python.
    key = ResultCache().key("alice", "who is bob?", {"max_hops": 2, "anchors": (1, 2)}, 3)
    assert key == "rc1:2b99772604e836ec:9c1e5f9a28d2ad8745db3c989a803502"


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 2


def test_key_canonicalises_equal_parameters() -> None:
    cache = ResultCache()

    def k(params: dict[str, Any], tenant: Any = "t") -> str:
        return cache.key(tenant, "q", params, 1)

    base = k({"a": [1, 2], "b": {"x": 1.5, "y": "s"}, "c": [3, 1]})
    same: list[dict[str, Any]] = [
        {"b": {"y": "s", "x": 1.5}, "c": [3, 1], "a": (1, 2)},  # key order, tuple
        {"a": np.array([1, 2], dtype=np.int32), "b": {"x": np.float64(1.5), "y": "s"}, "c": [3, 1]},
        {"a": [np.int64(1), np.uint8(2)], "b": OrderedDict(y="s", x=1.5), "c": (3, 1)},
        {"a": [1, 2], "b": {"x": 1.5, "y": np.str_("s")}, "c": np.array([3, 1])},
    ]
    for params in same:
        assert k(params) == base, params
    assert k({"s": {3, 1, 2}}) == k({"s": frozenset([2, 3, 1])}) == k({"s": [1, 2, 3]})
    assert k({"s": {"b", 1, None}}) == k({"s": {None, "b", 1}})
    assert k({"c": Colour.RED, "l": Level.HIGH}) == k({"c": "red", "l": 2})
    assert k({"f": np.float32(0.1)}) == k({"f": float(np.float32(0.1))})
    assert k({"b": np.bool_(True)}) == k({"b": True})
    assert k({}, tenant=np.int64(3)) == k({}, tenant=3)
    assert k({}, tenant=("a", 1)) == k({}, tenant=("a", np.int16(1)))


def test_key_separates_what_differs() -> None:
    cache = ResultCache()
    keys = {
        cache.key("t", "q", {}, 0),
        cache.key("u", "q", {}, 0),
        cache.key(1, "q", {}, 0),
        cache.key("1", "q", {}, 0),
        cache.key(True, "q", {}, 0),
        cache.key("t", "Q", {}, 0),
        cache.key("t", "q", {}, 1),
        cache.key("t", "q", {"a": 1}, 0),
        cache.key("t", "q", {"a": 1.0}, 0),
        cache.key("t", "q", {"a": "1"}, 0),
        cache.key("t", "q", {"a": [2, 1]}, 0),
        cache.key("t", "q", {"a": [1, 2]}, 0),
        cache.key("t", "q", {"a": None}, 0),
        cache.key("t", "q", {"a": float("nan")}, 0),
        cache.key("t", "q:{}", {}, 0),  # no delimiter games as with "user:query:context"
        cache.key("t", "\ud800", {}, 0),  # a lone surrogate is fine
    }
    assert len(keys) == 16
    # The tenant part of the key depends on the tenant only.
    assert len({key.split(":")[1] for key in keys}) == 5


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"a": object()}, r"params\['a'\] is a object"),
        ({"a": [1, b"x"]}, r"params\['a'\]\[1\] is a bytes"),
        ({"a": {"b": dt.date(2026, 1, 1)}}, r"params\['a'\]\['b'\] is a date"),
        ({"a": 1j}, "is a complex"),
        ({"a": {1: "x"}}, r"params\['a'\] has a key 1 of type int"),
        ({"a": np.array(["x"])}, "dtype <U1"),
        ({"a": np.datetime64("2026-01-01")}, "datetime64"),
        ({"a": enum.Enum("E", "A").A}, "enum member"),  # type: ignore[attr-defined]
    ],
)
def test_key_rejects_unjsonable(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        ResultCache().key("t", "q", params)


def test_key_rejects_cycles_and_deep_nesting() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(ParameterError, match="contains itself"):
        ResultCache().key("t", "q", {"a": loop})
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(ParameterError, match="nested deeper"):
        ResultCache().key("t", "q", {"a": deep})
    shared = [1, 2]  # the same object twice is not a cycle
    cache = ResultCache()
    assert cache.key("t", "q", {"a": [shared, shared]}) == cache.key("t", "q", {"a": [[1, 2]] * 2})


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((None, "q", {}), "tenant must not be None"),
        ((["t"], "q", {}), "tenant must be hashable"),
        (("t", b"q", {}), "query must be a str"),
        (("t", "q", [("a", 1)]), "params must be a Mapping"),
        (("t", "q", {}, -1), "generation must be >= 0"),
        (("t", "q", {}, 1.0), "generation must be an int"),
        (("t", "q", {}, True), "generation must be an int"),
    ],
)
def test_key_argument_validation(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        ResultCache().key(*args)


def test_keys_must_be_str() -> None:
    cache = ResultCache()
    for call in (
        lambda: cache.get(3),  # type: ignore[arg-type]
        lambda: cache.put(b"k", 1),  # type: ignore[arg-type]
        lambda: cache.get_or_compute(None, lambda: 1),  # type: ignore[arg-type]
    ):
        with pytest.raises(ParameterError, match="key must be a str"):
            call()
    with pytest.raises(ParameterError, match="fn must be callable"):
        cache.get_or_compute("k", 3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Expiry, eviction, invalidation.


def test_expiry_is_exact_at_the_boundary() -> None:
    cache, clock = make(ttl=60.0, now=100.0)
    cache.put("k", "v")
    clock.now = 159.999999
    assert cache.get("k") == "v"
    clock.now = 160.0  # clock() - t == ttl: expired
    assert cache.get("k") is None
    assert cache.stats == CacheStats(hits=1, misses=1, evictions=0, expirations=1, size=0)


def test_put_restarts_the_ttl_and_get_does_not() -> None:
    cache, clock = make(ttl=10.0)
    cache.put("k", 1)
    clock.now = 9.0
    assert cache.get("k") == 1
    cache.put("k", 2)
    clock.now = 18.0
    assert cache.get("k") == 2
    clock.now = 19.0
    assert cache.get("k") is None


def test_expired_entries_leave_size_without_a_lookup() -> None:
    cache, clock = make(ttl=5.0)
    for i in range(4):
        clock.now = float(i)
        cache.put(f"k{i}", i)
    clock.now = 6.5  # k0 (t=0) and k1 (t=1) expired
    assert cache.stats.size == 2
    assert len(cache) == 2
    assert cache.stats.expirations == 2
    assert cache.stats.misses == 0


def test_lru_eviction() -> None:
    cache, _ = make(maxsize=3)
    for k in "abc":
        cache.put(k, k)
    assert cache.get("a") == "a"  # a is now the most recent: b is the LRU
    cache.put("d", "d")
    assert cache.get("b") is None
    cache.put("c", "c2")  # replacing refreshes c: a is the LRU now
    cache.put("e", "e")
    assert [cache.get(k) for k in "acde"] == [None, "c2", "d", "e"]
    stats = cache.stats
    assert (stats.evictions, stats.size, stats.expirations) == (2, 3, 0)


def test_maxsize_one() -> None:
    cache, _ = make(maxsize=1)
    cache.put("a", 1)
    cache.put("b", 2)
    assert (cache.get("a"), cache.get("b")) == (None, 2)


def test_none_values_and_default() -> None:
    cache, _ = make()
    cache.put("k", None)
    missing = object()
    assert cache.get("k", missing) is None
    assert cache.get("other", missing) is missing
    assert cache.get_or_compute("k", lambda: 1) is None  # the stored None is a hit


def test_invalidate_one_tenant_or_all() -> None:
    cache, _ = make()
    keys = {t: [cache.key(t, f"q{i}", {}) for i in range(3)] for t in ("alice", "bob", 7)}
    for tenant_keys in keys.values():
        for key in tenant_keys:
            cache.put(key, key)
    cache.put("custom-key", 1)  # not made by key(): no tenant
    assert cache.invalidate("alice") == 3
    assert cache.invalidate("alice") == 0
    assert cache.invalidate("nobody") == 0
    assert all(cache.get(k) is None for k in keys["alice"])
    assert all(cache.get(k) == k for k in keys["bob"] + keys[7])
    assert cache.invalidate(np.int32(7)) == 3
    assert cache.get("custom-key") == 1
    assert cache.invalidate() == 4
    assert cache.stats.size == 0
    with pytest.raises(ParameterError, match="tenant must be hashable"):
        cache.invalidate(["alice"])  # type: ignore[arg-type]


def test_invalidate_counts_live_entries_only() -> None:
    cache, clock = make(ttl=5.0)
    cache.put(cache.key("t", "a", {}), 1)
    clock.now = 3.0
    cache.put(cache.key("t", "b", {}), 2)
    clock.now = 5.0
    assert cache.invalidate("t") == 1
    assert cache.stats.expirations == 1


def test_generation_never_serves_stale_results() -> None:
    cache, _ = make()
    old = cache.key("t", "who is bob?", {"hops": 2}, generation=4)
    cache.put(old, "result on graph 4")
    new = cache.key("t", "who is bob?", {"hops": 2}, generation=5)
    assert cache.get(new) is None
    assert cache.get_or_compute(new, lambda: "result on graph 5") == "result on graph 5"
    assert cache.get(old) == "result on graph 4"  # still there for readers of generation 4


def test_clear_resets_counters() -> None:
    cache, _ = make(maxsize=1)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("b")
    cache.get("a")
    cache.clear()
    assert cache.stats == CacheStats(0, 0, 0, 0, 0)
    assert cache.stats.hit_rate == 0.0


def test_hit_rate() -> None:
    cache, _ = make()
    cache.put("a", 1)
    for k in ("a", "a", "a", "b"):
        cache.get(k)
    assert cache.stats.hit_rate == 0.75


# ------------------------------------------------------------------------------------------
# get_or_compute.


def test_get_or_compute_caches() -> None:
    cache, clock = make(ttl=10.0)
    calls: list[int] = []

    def fn() -> list[int]:
        calls.append(1)
        return [len(calls)]

    assert cache.get_or_compute("k", fn) == [1]
    assert cache.get_or_compute("k", fn) == [1]
    clock.now = 10.0
    assert cache.get_or_compute("k", fn) == [2]
    assert cache.stats == CacheStats(hits=1, misses=2, evictions=0, expirations=1, size=1)


def test_get_or_compute_does_not_cache_exceptions() -> None:
    cache, _ = make()

    def boom() -> int:
        raise RuntimeError("backend down")

    with pytest.raises(RuntimeError, match="backend down"):
        cache.get_or_compute("k", boom)
    assert cache.get_or_compute("k", lambda: 5) == 5


def test_get_or_compute_reentrant_same_key_raises() -> None:
    cache, _ = make()

    def fn() -> int:
        return cache.get_or_compute("k", lambda: 1) + 1

    with pytest.raises(ParameterError, match="called again from its own fn"):
        cache.get_or_compute("k", fn)
    # Another key from inside fn is fine, and nothing was left in flight.
    assert cache.get_or_compute("k", lambda: cache.get_or_compute("j", lambda: 1) + 1) == 2
    assert (cache.get("j"), cache.get("k")) == (1, 2)


def test_result_invalidated_while_computing_is_not_stored() -> None:
    cache, _ = make()
    key = cache.key("t", "q", {})
    other = cache.key("u", "q", {})

    def fn() -> str:
        cache.invalidate("t")
        return "computed before the invalidation"

    assert cache.get_or_compute(key, fn) == "computed before the invalidation"
    assert cache.get(key) is None

    # Invalidating another tenant does not discard it; clear() does.
    def invalidates_t() -> str:
        cache.invalidate("t")
        return "v"

    assert cache.get_or_compute(other, invalidates_t) == "v"
    assert cache.get(other) == "v"

    def clears() -> str:
        cache.clear()
        return "w"

    assert cache.get_or_compute(cache.key("u", "r", {}), clears) == "w"
    assert cache.stats.size == 0


# ------------------------------------------------------------------------------------------
# Threads (no sleeping: barriers and events only).


def _run_threads(n: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def wrapped(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors


def test_single_flight() -> None:
    cache = ResultCache(ttl=1e9)
    n = 8
    start = threading.Barrier(n + 1)
    release = threading.Event()
    calls: list[int] = []
    results: list[object] = [None] * n
    value = object()

    def fn() -> object:
        calls.append(1)
        release.wait(timeout=10)  # hold the computation while the others arrive
        return value

    def worker(i: int) -> None:
        start.wait()
        results[i] = cache.get_or_compute("k", fn)

    def main() -> None:
        start.wait()
        release.set()

    threads = [threading.Thread(target=main)]
    threads[0].start()
    _run_threads(n, worker)
    threads[0].join()
    # Whether the others waited on the computation or arrived after it, fn ran once.
    assert calls == [1]
    assert all(r is value for r in results)
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.size) == (n - 1, 1, 1)


def test_waiters_retry_after_a_failed_computation() -> None:
    cache = ResultCache(ttl=1e9)
    started = threading.Event()
    release = threading.Event()
    outcome: dict[str, object] = {}

    def failing() -> int:
        started.set()
        release.wait(timeout=10)
        raise RuntimeError("leader failed")

    def leader() -> None:
        try:
            cache.get_or_compute("k", failing)
        except RuntimeError as exc:
            outcome["leader"] = str(exc)

    def follower() -> None:
        started.wait(timeout=10)
        release.set()
        outcome["follower"] = cache.get_or_compute("k", lambda: 42)

    lt, ft = threading.Thread(target=leader), threading.Thread(target=follower)
    lt.start()
    ft.start()
    lt.join(timeout=30)
    ft.join(timeout=30)
    assert outcome == {"leader": "leader failed", "follower": 42}
    assert cache.get("k") == 42


def test_concurrent_mixed_operations_keep_invariants() -> None:
    maxsize = 16
    cache = ResultCache(ttl=1e9, maxsize=maxsize)
    n, rounds = 6, 400
    start = threading.Barrier(n)
    lookups = [0] * n

    def worker(i: int) -> None:
        start.wait()
        for r in range(rounds):
            tenant = ("a", "b", "c")[(i + r) % 3]
            key = cache.key(tenant, f"q{r % 24}", {"i": r % 5})
            op = (i * 7 + r) % 5
            if op == 0:
                cache.put(key, (tenant, r))
            elif op in (1, 2):
                value = cache.get(key)
                lookups[i] += 1
                assert value is None or value[0] == tenant
            elif op == 3:
                value = cache.get_or_compute(key, _const((tenant, r)))
                assert value[0] == tenant
            elif r % 50 == 4:
                cache.invalidate(tenant)
            assert len(cache) <= maxsize

    _run_threads(n, worker)
    stats = cache.stats
    assert stats.size <= maxsize
    assert stats.hits + stats.misses >= sum(lookups)
    assert stats.expirations == 0
    # Everything left belongs to the tenant its key names.
    for tenant in ("a", "b", "c"):
        for q in range(24):
            for p in range(5):
                value = cache.get(cache.key(tenant, f"q{q}", {"i": p}))
                assert value is None or value[0] == tenant


# ------------------------------------------------------------------------------------------
# Model-based property test: the cache against a slow, obviously-correct model.


class ModelCache:
    """Every entry with its put time; a list in LRU order; purge everything expired first."""

    def __init__(self, ttl: float, maxsize: int) -> None:
        self.ttl, self.maxsize = ttl, maxsize
        self.entries: dict[str, tuple[Any, float, str]] = {}
        self.lru: list[str] = []
        self.hits = self.misses = self.evictions = self.expirations = 0

    def purge(self, now: float) -> None:
        for key in [k for k, (_, t, _) in self.entries.items() if now - t >= self.ttl]:
            del self.entries[key]
            self.lru.remove(key)
            self.expirations += 1

    def put(self, key: str, tenant: str, value: Any, now: float) -> None:
        self.purge(now)
        if key in self.entries:
            self.lru.remove(key)
        self.entries[key] = (value, now, tenant)
        self.lru.append(key)
        while len(self.lru) > self.maxsize:
            del self.entries[self.lru.pop(0)]
            self.evictions += 1

    def get(self, key: str, now: float) -> Any:
        self.purge(now)
        if key in self.entries:
            self.hits += 1
            self.lru.remove(key)
            self.lru.append(key)
            return self.entries[key][0]
        self.misses += 1
        return None

    def invalidate(self, tenant: str | None, now: float) -> int:
        self.purge(now)
        drop = [k for k, (_, _, t) in self.entries.items() if tenant is None or t == tenant]
        for key in drop:
            del self.entries[key]
            self.lru.remove(key)
        return len(drop)


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from("ab"), st.integers(0, 4), st.integers()),
        st.tuples(st.just("get"), st.sampled_from("ab"), st.integers(0, 4), st.just(0)),
        st.tuples(st.just("compute"), st.sampled_from("ab"), st.integers(0, 4), st.integers()),
        st.tuples(
            st.just("advance"), st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.just(0), st.just(0)
        ),
        st.tuples(st.just("invalidate"), st.sampled_from(["a", "b", None]), st.just(0), st.just(0)),
    ),
    max_size=60,
)


@PROPERTY
@given(ops=_OPS, maxsize=st.integers(1, 6))
def test_cache_matches_model(ops: list[tuple[Any, Any, int, int]], maxsize: int) -> None:
    cache, clock = make(ttl=2.0, maxsize=maxsize)
    model = ModelCache(2.0, maxsize)
    for op, a, q, v in ops:
        if op == "advance":
            clock.now += a
            continue
        if op == "invalidate":
            assert cache.invalidate(a) == model.invalidate(a, clock.now)
            continue
        key = cache.key(a, f"q{q}", {})
        if op == "put":
            cache.put(key, v)
            model.put(key, a, v, clock.now)
        elif op == "get":
            assert cache.get(key) == model.get(key, clock.now)
        else:
            got = cache.get_or_compute(key, _const(v))
            expected = model.get(key, clock.now)
            if expected is None:
                model.put(key, a, v, clock.now)
                expected = v
            assert got == expected
    model.purge(clock.now)
    assert cache.stats == CacheStats(
        model.hits, model.misses, model.evictions, model.expirations, len(model.entries)
    )
