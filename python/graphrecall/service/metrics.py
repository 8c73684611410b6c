"""Prometheus metrics of the service (``GET /metrics``), on a registry of its own.

* ``graphrecall_request_seconds{endpoint, recipe}``: latency histograms per endpoint and
  recipe (HTTP handling included);
* ``graphrecall_batch_size``: queries per ``retrieve_batch`` call of the micro-batcher;
* ``graphrecall_errors_total{type, status}``: error responses by exception type;
* ``graphrecall_writes_total{operation}``: acknowledged writes;
* ``graphrecall_cache_hits_total`` / ``graphrecall_cache_misses_total`` /
  ``graphrecall_cache_size``: the result cache's counters, read at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..cache import CacheStats

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    1.0,
    2.5,
    10.0,
)


class _CacheCollector(Collector):
    def __init__(self, stats: Callable[[], CacheStats | None]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Any]:
        s = self._stats()
        hits = CounterMetricFamily("graphrecall_cache_hits", "Result cache hits")
        misses = CounterMetricFamily("graphrecall_cache_misses", "Result cache misses")
        size = GaugeMetricFamily("graphrecall_cache_size", "Live entries of the result cache")
        hits.add_metric([], 0 if s is None else s.hits)
        misses.add_metric([], 0 if s is None else s.misses)
        size.add_metric([], 0 if s is None else s.size)
        yield hits
        yield misses
        yield size


class Metrics:
    """The service's metrics (see the module docstring).

    Args:
        cache_stats: Returns the result cache's counters (None: no cache).
    """

    def __init__(self, cache_stats: Callable[[], CacheStats | None]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.latency = Histogram(
            "graphrecall_request_seconds",
            "Request latency by endpoint and recipe",
            ["endpoint", "recipe"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.batch = Histogram(
            "graphrecall_batch_size",
            "Queries per retrieve_batch call of the micro-batcher",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=self.registry,
        )
        self.errors = Counter(
            "graphrecall_errors",
            "Error responses by exception type and HTTP status",
            ["type", "status"],
            registry=self.registry,
        )
        self.writes = Counter(
            "graphrecall_writes",
            "Acknowledged (committed) writes by operation",
            ["operation"],
            registry=self.registry,
        )
        self.registry.register(_CacheCollector(cache_stats))
        self._children: dict[tuple[str, str], Any] = {}

    def observe(self, endpoint: str, recipe: str, seconds: float) -> None:
        """Record one request's latency."""
        key = (endpoint, recipe)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.latency.labels(endpoint, recipe)
        child.observe(seconds)

    def render(self) -> bytes:
        """The exposition text of every metric."""
        return generate_latest(self.registry)
