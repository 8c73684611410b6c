"""An in-process, thread-safe TTL + LRU cache of retrieval results.

Seed 000 caches repeated similar queries for 60 s; seed 002 keys a Redis cache on
``md5(user_id:query:json.dumps(context, sort_keys=True))`` with a 300 s TTL. :class:`ResultCache`
does the same in process, with three additions:

* the key covers the **tenant** and a **graph generation**: bump the generation when the
  graph changes and no result computed on the old graph is ever served again;
* :meth:`ResultCache.invalidate` drops one tenant's entries (or all);
* :meth:`ResultCache.get_or_compute` is single-flight: concurrent misses on one key run the
  computation once and share its result.

Expiry is exact against the injected clock: an entry put at ``t`` is served while
``clock() - t < ttl`` and is gone from ``clock() - t == ttl`` on. At ``maxsize`` the least
recently used entry (a hit or a put refreshes it) is evicted.

Keys are ``blake2b`` digests of canonical JSON, not md5: md5 is not broken for accidental
collisions, but colliding md5 inputs can be built on purpose, and a key is built from query
text a user controls; md5 is also refused by ``hashlib`` on FIPS-mode Pythons. blake2b is in the
standard library, at least as fast as md5 in CPython, and is personalised here so that its
digests cannot be confused with any other use of the hash.

Example:
    >>> from graphrecall.cache import ResultCache
    >>> now = [0.0]
    >>> cache = ResultCache(ttl=60.0, clock=lambda: now[0])
    >>> key = cache.key("alice", "who is bob?", {"max_hops": 2}, generation=7)
    >>> cache.get_or_compute(key, lambda: ["fact 1", "fact 2"])
    ['fact 1', 'fact 2']
    >>> cache.get(key)
    ['fact 1', 'fact 2']
    >>> now[0] = 60.0
    >>> cache.get(key) is None
    True
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, TypeVar

import numpy as np

from .errors import ParameterError

__all__ = ["CacheStats", "ResultCache"]

_T = TypeVar("_T")

#: Key layout version: ``rc1:<tenant digest, 16 hex>:<key digest, 32 hex>``.
_KEY_PREFIX: Final = "rc1"
_KEY_RE: Final = re.compile(r"rc1:([0-9a-f]{16}):[0-9a-f]{32}")
_PERSON: Final = b"graphrecall.rc1"  # blake2b personalisation (at most 16 bytes)
#: Deepest nesting of containers accepted in a key's parameters.
_MAX_DEPTH: Final = 64
_MISSING: Final = object()


@dataclass(frozen=True)
class CacheStats:
    """Counters of a :class:`ResultCache` since it was made or last cleared.

    Attributes:
        hits: Lookups served from the cache (a caller that waited on another's
            computation in :meth:`ResultCache.get_or_compute` counts as a hit).
        misses: Lookups that found nothing (or only an expired entry).
        evictions: Entries dropped to stay within ``maxsize``.
        expirations: Entries dropped because their TTL had run out.
        size: Live entries now.
    """

    hits: int
    misses: int
    evictions: int
    expirations: int
    size: int

    @property
    def hit_rate(self) -> float:
        """``hits / (hits + misses)``, 0.0 before any lookup."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass
class _Entry:
    value: Any
    stored_at: float
    tenant: str | None  # tenant digest, None for keys not made by ResultCache.key


@dataclass
class _Flight:
    """One computation in progress in :meth:`ResultCache.get_or_compute`."""

    owner: int  # thread ident of the computing caller
    tenant: str | None
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = False
    value: Any = None
    discard: bool = False  # invalidated while computing: do not store the result


# ------------------------------------------------------------------------------------------
# Canonical JSON.


def _canon(obj: object, path: str, depth: int, active: set[int]) -> Any:
    """``obj`` as plain JSON data: equal parameters give equal data.

    Tuples and lists become lists; sets become lists sorted by their elements' canonical JSON;
    numpy scalars become Python scalars and numpy arrays nested lists (``tolist``); str-valued
    enums become their string. Anything else JSON cannot express raises.
    """
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return str.__str__(obj)  # a plain str, also for str subclasses and str enums
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if depth >= _MAX_DEPTH:
        raise ParameterError(f"{path} is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufO":
            raise ParameterError(
                f"{path} is a numpy array of dtype {obj.dtype}; only bool, integer, float "
                "and object arrays can be part of a cache key"
            )
        return _canon(obj.tolist(), path, depth, active)
    if isinstance(obj, (Mapping, list, tuple, set, frozenset)):
        ident = id(obj)
        if ident in active:
            raise ParameterError(f"{path} contains itself")
        active.add(ident)
        try:
            if isinstance(obj, Mapping):
                out: dict[str, Any] = {}
                for k, v in obj.items():
                    if not isinstance(k, str):
                        raise ParameterError(
                            f"{path} has a key {k!r} of type {type(k).__name__}; mapping keys "
                            "in a cache key must be str"
                        )
                    out[str.__str__(k)] = _canon(v, f"{path}[{k!r}]", depth + 1, active)
                return out
            if isinstance(obj, (set, frozenset)):
                items = [_canon(v, f"{path}{{...}}", depth + 1, active) for v in obj]
                return sorted(items, key=_dumps)
            return [_canon(v, f"{path}[{i}]", depth + 1, active) for i, v in enumerate(obj)]
        finally:
            active.discard(ident)
    if isinstance(obj, Enum):
        raise ParameterError(
            f"{path} is the enum member {obj!r}; pass its value (only str and int enums "
            "are accepted as they are)"
        )
    raise ParameterError(
        f"{path} is a {type(obj).__name__}, which cannot be part of a cache key "
        "(use None, bool, int, float, str, numpy scalars and arrays, and lists, tuples, "
        "sets and str-keyed mappings of these)"
    )


def _dumps(data: Any) -> str:
    # ensure_ascii: lone surrogates in query text are escaped instead of failing to encode.
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _digest(text: str, size: int) -> str:
    return hashlib.blake2b(text.encode("ascii"), digest_size=size, person=_PERSON).hexdigest()


def _tenant_digest(tenant: object) -> str:
    if tenant is None:
        raise ParameterError(
            "tenant must not be None (invalidate(None) means every tenant); "
            "use the graph's tenant name, e.g. 0"
        )
    if not isinstance(tenant, Hashable):
        raise ParameterError(f"tenant must be hashable, got {type(tenant).__name__}")
    return _digest(_dumps(_canon(tenant, "tenant", 0, set())), 8)


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise ParameterError(f"key must be a str (see ResultCache.key), got {type(key).__name__}")
    return key


# ------------------------------------------------------------------------------------------
# The cache.


class ResultCache:
    """Thread-safe in-process TTL cache with LRU eviction, tenant invalidation and generations.

    One lock guards the entries; computations in :meth:`get_or_compute` run outside it. Values
    are stored as given (not copied): treat cached results as read-only.

    Args:
        ttl: Seconds an entry is served after it was put (seed 000: 60; seed 002: 300).
        maxsize: Most entries held; the least recently used is evicted beyond it.
        clock: Monotonic time in seconds (inject a fake clock in tests).

    Raises:
        ParameterError: ``ttl`` is not a finite number > 0, ``maxsize`` not an int >= 1, or
            ``clock`` not callable.
    """

    def __init__(
        self,
        ttl: float = 60.0,
        maxsize: int = 10_000,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float, np.integer, np.floating)):
            raise ParameterError(f"ttl must be a number of seconds, got {type(ttl).__name__}")
        ttl_f = float(ttl)
        if not math.isfinite(ttl_f) or ttl_f <= 0.0:
            raise ParameterError(f"ttl must be finite and > 0, got {ttl!r}")
        if isinstance(maxsize, bool):
            raise ParameterError("maxsize must be an int >= 1, got a bool")
        try:
            size = operator.index(maxsize)
        except TypeError:
            raise ParameterError(
                f"maxsize must be an int >= 1, got {type(maxsize).__name__}"
            ) from None
        if size < 1:
            raise ParameterError(f"maxsize must be >= 1, got {size}")
        if not callable(clock):
            raise ParameterError(f"clock must be callable, got {type(clock).__name__}")
        self._ttl = ttl_f
        self._maxsize = size
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._by_time: OrderedDict[str, None] = OrderedDict()  # oldest put first
        self._by_tenant: dict[str, set[str]] = {}
        self._flights: dict[str, _Flight] = {}
        self._hits = self._misses = self._evictions = self._expirations = 0

    @property
    def ttl(self) -> float:
        """Seconds an entry is served after it was put."""
        return self._ttl

    @property
    def maxsize(self) -> int:
        """Most entries held."""
        return self._maxsize

    def __repr__(self) -> str:
        return f"ResultCache(ttl={self._ttl!r}, maxsize={self._maxsize}, size={len(self)})"

    def __len__(self) -> int:
        with self._lock:
            self._purge(self._clock())
            return len(self._entries)

    # -- keys --------------------------------------------------------------------------------

    def key(
        self, tenant: Hashable, query: str, params: Mapping[str, Any], generation: int = 0
    ) -> str:
        """A stable cache key for one query of one tenant on one graph generation.

        The key is ``rc1:<tenant digest>:<digest>``, both blake2b digests of canonical JSON
        (sorted keys, no whitespace): ``params`` with tuples as lists, sets sorted, numpy
        scalars as numbers and numpy arrays as nested lists (``[1, 2]`` and ``(1, 2)`` and
        ``np.array([1, 2])`` give one key). Keys are equal across processes and runs.

        Args:
            tenant: The tenant (any hashable JSON-like value but None: str, int, tuples...).
            query: The query text.
            params: Every parameter the result depends on (recipe, hops, limits, context...),
                str-keyed.
            generation: The graph's generation (>= 0); bump it on every graph update.

        Returns:
            The key.

        Raises:
            ParameterError: An argument has the wrong type, or ``params`` holds a value JSON
                cannot express (the message gives its path), a cycle, or non-str mapping keys.
        """
        tenant_hex = _tenant_digest(tenant)
        if not isinstance(query, str):
            raise ParameterError(f"query must be a str, got {type(query).__name__}")
        if not isinstance(params, Mapping):
            raise ParameterError(f"params must be a Mapping, got {type(params).__name__}")
        if isinstance(generation, bool):
            raise ParameterError("generation must be an int >= 0, got a bool")
        try:
            gen = operator.index(generation)
        except TypeError:
            raise ParameterError(
                f"generation must be an int >= 0, got {type(generation).__name__}"
            ) from None
        if gen < 0:
            raise ParameterError(f"generation must be >= 0, got {gen}")
        payload = {
            "tenant": _canon(tenant, "tenant", 0, set()),
            "query": str.__str__(query),
            "params": _canon(params, "params", 0, set()),
            "generation": gen,
        }
        return f"{_KEY_PREFIX}:{tenant_hex}:{_digest(_dumps(payload), 16)}"

    # -- internals (lock held) -----------------------------------------------------------------

    def _purge(self, now: float) -> None:
        """Drop expired entries, oldest first (puts are in clock order)."""
        while self._by_time:
            key = next(iter(self._by_time))
            if now - self._entries[key].stored_at < self._ttl:
                return
            self._drop(key)
            self._expirations += 1

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        del self._by_time[key]
        if entry.tenant is not None:
            keys = self._by_tenant[entry.tenant]
            keys.discard(key)
            if not keys:
                del self._by_tenant[entry.tenant]

    def _lookup(self, key: str, now: float) -> Any:
        """The live value under ``key`` (refreshing its recency) or ``_MISSING``; counts."""
        entry = self._entries.get(key)
        if entry is not None and now - entry.stored_at < self._ttl:
            self._entries.move_to_end(key)
            self._hits += 1
            return entry.value
        if entry is not None:  # expired (possibly behind a clock that went back)
            self._drop(key)
            self._expirations += 1
        self._misses += 1
        return _MISSING

    def _store(self, key: str, value: Any, now: float) -> None:
        match = _KEY_RE.fullmatch(key)
        tenant = match.group(1) if match is not None else None
        if key in self._entries:
            self._drop(key)
        self._entries[key] = _Entry(value, now, tenant)
        self._by_time[key] = None
        if tenant is not None:
            self._by_tenant.setdefault(tenant, set()).add(key)
        while len(self._entries) > self._maxsize:
            self._drop(next(iter(self._entries)))
            self._evictions += 1

    # -- public operations -------------------------------------------------------------------

    def get(self, key: str, default: Any = None) -> Any:
        """The cached value under ``key``, or ``default`` when absent or expired.

        A hit makes the entry the most recently used. (A stored ``None`` is indistinguishable
        from a miss here unless another ``default`` is given; :meth:`get_or_compute` tells
        them apart.)

        Args:
            key: A key, normally from :meth:`key`.
            default: Returned on a miss.

        Returns:
            The value or ``default``.

        Raises:
            ParameterError: ``key`` is not a str.
        """
        key = _check_key(key)
        with self._lock:
            now = self._clock()
            self._purge(now)
            value = self._lookup(key, now)
        return default if value is _MISSING else value

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (replacing any entry) as of now; evict LRU at maxsize.

        Keys made by :meth:`key` are indexed by tenant for :meth:`invalidate`; other str keys
        are accepted and dropped only by ``invalidate()`` (all), :meth:`clear`, expiry or
        eviction.

        Args:
            key: A key, normally from :meth:`key`.
            value: The value (stored as is, not copied).

        Raises:
            ParameterError: ``key`` is not a str.
        """
        key = _check_key(key)
        with self._lock:
            now = self._clock()
            self._purge(now)
            self._store(key, value, now)

    def get_or_compute(self, key: str, fn: Callable[[], _T]) -> _T:
        """The cached value under ``key``, or ``fn()`` computed once, stored and returned.

        Single-flight: while one caller computes a key, other callers of the same key wait
        for it and get its result (counted as hits). If ``fn`` raises, the exception goes to
        its caller, nothing is stored, and each waiting caller then tries again itself. A
        result whose key was invalidated (:meth:`invalidate`, :meth:`clear`) while it was
        being computed is returned to its callers but not stored. ``fn`` runs without the
        cache's lock held, so it may use the cache, except to ask for the same key (which
        would wait on itself and so raises).

        Args:
            key: A key, normally from :meth:`key`.
            fn: Computes the value; called with no arguments.

        Returns:
            The cached or computed value.

        Raises:
            ParameterError: ``key`` is not a str, ``fn`` is not callable, or ``fn`` asks for
                the key it is computing.
        """
        key = _check_key(key)
        if not callable(fn):
            raise ParameterError(f"fn must be callable, got {type(fn).__name__}")
        me = threading.get_ident()
        while True:
            with self._lock:
                now = self._clock()
                self._purge(now)
                flight = self._flights.get(key)
                if flight is None:
                    value = self._lookup(key, now)
                    if value is not _MISSING:
                        return value  # type: ignore[no-any-return]
                    match = _KEY_RE.fullmatch(key)
                    flight = _Flight(me, match.group(1) if match is not None else None)
                    self._flights[key] = flight
                    leader = True
                elif flight.owner == me:
                    raise ParameterError(
                        f"get_or_compute({key!r}) was called again from its own fn; "
                        "it would wait for itself"
                    )
                else:
                    leader = False
            if not leader:
                flight.done.wait()
                if flight.ok:
                    with self._lock:
                        self._hits += 1
                    return flight.value  # type: ignore[no-any-return]
                continue  # the computation failed: try again (perhaps as the leader)
            try:
                result = fn()
            except BaseException:
                with self._lock:
                    del self._flights[key]
                flight.done.set()
                raise
            with self._lock:
                del self._flights[key]
                if not flight.discard:
                    self._store(key, result, self._clock())
                flight.value = result
                flight.ok = True
            flight.done.set()
            return result

    def invalidate(self, tenant: Hashable | None = None) -> int:
        """Drop every entry, or every entry of one tenant.

        Computations in flight for the dropped keys still return their results to their
        callers but do not store them. Counters are kept.

        Args:
            tenant: The tenant whose entries to drop (as given to :meth:`key`); None for all.

        Returns:
            Number of live entries dropped (expired ones are counted as expirations instead).

        Raises:
            ParameterError: ``tenant`` is not hashable JSON-like data.
        """
        tenant_hex = None if tenant is None else _tenant_digest(tenant)
        with self._lock:
            self._purge(self._clock())
            if tenant_hex is None:
                dropped = len(self._entries)
                self._entries.clear()
                self._by_time.clear()
                self._by_tenant.clear()
                for flight in self._flights.values():
                    flight.discard = True
                return dropped
            keys = self._by_tenant.get(tenant_hex, set())
            dropped = len(keys)
            for key in list(keys):
                self._drop(key)
            for flight in self._flights.values():
                if flight.tenant == tenant_hex:
                    flight.discard = True
            return dropped

    def clear(self) -> None:
        """Drop every entry and reset the counters (computations in flight are not stored)."""
        with self._lock:
            self._entries.clear()
            self._by_time.clear()
            self._by_tenant.clear()
            for flight in self._flights.values():
                flight.discard = True
            self._hits = self._misses = self._evictions = self._expirations = 0

    @property
    def stats(self) -> CacheStats:
        """The counters and the live size (expired entries are purged first)."""
        with self._lock:
            self._purge(self._clock())
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                expirations=self._expirations,
                size=len(self._entries),
            )
