"""W1 / W4 (WORKLOADS.md) through every peer on a 10k-entity workload.

The ``benchmark`` tests run once as correctness tests in the normal run (``--benchmark-disable``
in ``addopts``); time them with ``pytest tests/benchmarks --benchmark-enable``. The side-by-side
comparison with ratios is ``benches/compare.py``.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import peers as P  # benches/ is put on sys.path by conftest.py
import pytest
import workload as W

# graph libraries and SQLite are slow: check them on a prefix of the queries
FAST = ("graphrecall", "graphrecall-call", "dict", "scipy")
SLOW_QUERIES = 100


# ------------------------------------------------------------------------------------------
# the data matches WORKLOADS.md
# ------------------------------------------------------------------------------------------


def test_generator_distribution(graph: W.Graph) -> None:
    s = W.summary(graph)
    assert 9.0 < s["facts_per_entity"] < 11.0
    assert abs(s["literal_share"] - 0.20) < 0.01
    assert abs(s["no_facts_share"] - 0.166) < 0.015
    assert s["out_degree_median"] == 4
    assert 75 <= s["out_degree_p99"] <= 115
    assert s["out_degree_max"] <= W.DEGREE_CAP
    assert 25 <= s["in_degree_p99"] <= 40
    assert s["self_loops"] == 0
    assert s["cross_tenant"] == 0
    assert abs(s["access_count_zero_share"] - 0.61) < 0.01
    shares = np.bincount(graph.status, minlength=4) / graph.n_facts
    np.testing.assert_allclose(shares, W.STATUS_P, atol=0.01)
    shares = np.bincount(graph.source, minlength=4) / graph.n_facts
    np.testing.assert_allclose(shares, W.SOURCE_P, atol=0.01)
    assert graph.confidence.dtype == np.float32
    assert graph.strength.dtype == np.float32
    age = W.NOW - graph.last_accessed
    assert age.min() >= 0
    assert age.max() <= 365 * 86400


def test_queries(graph: W.Graph) -> None:
    q = graph.queries
    assert q.shape == (W.N_QUERIES, 3)
    assert all(len(set(row)) == 3 for row in q.tolist())
    tenants = graph.entity_tenant[q]
    assert (tenants == graph.query_tenant[:, None]).all()


def test_generator_is_deterministic(graph: W.Graph, workload_params: tuple[int, int]) -> None:
    again = W.generate(*workload_params)
    for name in ("subject", "object", "confidence", "status", "last_accessed", "queries"):
        np.testing.assert_array_equal(getattr(again, name), getattr(graph, name))


def test_sqlite_has_the_same_numbers(workload_dir: Path, graph: W.Graph) -> None:
    con = sqlite3.connect(workload_dir / "graph.sqlite")
    try:
        rows = con.execute(
            "SELECT id, subject_id, object_id, confidence, strength, status, source, "
            "last_accessed, access_count FROM facts WHERE id % 97 = 0 ORDER BY id"
        ).fetchall()
        indexes = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    finally:
        con.close()
    assert {"facts_subject", "facts_object"} <= indexes
    ids = np.array([r[0] for r in rows])
    np.testing.assert_array_equal(ids, np.arange(0, graph.n_facts, 97))
    assert [r[1] for r in rows] == graph.subject[ids].tolist()
    assert [-1 if r[2] is None else r[2] for r in rows] == graph.object[ids].tolist()
    assert [r[3] for r in rows] == graph.confidence[ids].tolist()  # float32 stored exactly
    assert [r[4] for r in rows] == graph.strength[ids].tolist()
    assert [r[5] for r in rows] == [W.STATUSES[s] for s in graph.status[ids]]
    assert [r[6] for r in rows] == [W.SOURCES[s] for s in graph.source[ids]]
    assert [r[7] for r in rows] == graph.last_accessed[ids].tolist()
    assert [r[8] for r in rows] == graph.access_count[ids].tolist()


# ------------------------------------------------------------------------------------------
# every peer returns exactly the oracle's ids
# ------------------------------------------------------------------------------------------


def test_w4_closed_form_equals_literal_bfs(
    make_peer: Callable[[str], P.Peer], oracle: P.Reference, queries: np.ndarray
) -> None:
    """WORKLOADS.md: the closed form gives bit-identical scores to the per-anchor BFS."""
    closed = make_peer("dict")
    assert isinstance(closed, P.DictPeer)
    for q in queries[:200].tolist():
        assert closed.w4_scores(q) == oracle.w4_scores(q)


@pytest.mark.parametrize("name", list(P.PEERS))
def test_peer_matches_oracle(
    name: str,
    make_peer: Callable[[str], P.Peer],
    queries: np.ndarray,
    expected: dict[str, list[list[int]]],
) -> None:
    peer = make_peer(name)
    n = len(queries) if name in FAST else SLOW_QUERIES
    args = peer.prepare(queries[:n])
    for i, a in enumerate(args):
        assert P.as_list(peer.w1(a, W.NOW)) == expected["W1"][i], f"W1 query {i}"
        assert P.as_list(peer.w4(a)) == expected["W4"][i], f"W4 query {i}"
    if hasattr(peer, "w1_batch"):
        ids, offsets = peer.w1_batch(queries, W.NOW)
        assert P.split_batch(ids, offsets) == expected["W1"]
    if hasattr(peer, "w4_batch"):
        ids, offsets = peer.w4_batch(queries)
        assert P.split_batch(ids, offsets) == expected["W4"]


# ------------------------------------------------------------------------------------------
# pytest-benchmark: single queries (cycling through the 1000) and whole batches
# ------------------------------------------------------------------------------------------


def _bench_single(
    benchmark: Any, fn: Callable[[Any], Any], args: list[Any], want: list[list[int]]
) -> None:
    counter = itertools.count()
    n = len(args)

    def one_query() -> tuple[int, Any]:
        i = next(counter) % n
        return i, fn(args[i])

    i, got = benchmark(one_query)
    assert P.as_list(got) == want[i]


def _bench_batch(benchmark: Any, fn: Callable[[], Any], want: list[list[int]]) -> None:
    ids, offsets = benchmark(fn)
    assert P.split_batch(ids, offsets) == want


SINGLE = [
    pytest.param(name, wl, id=f"{name}-{wl}")
    for name in ("graphrecall", "dict", "scipy")
    for wl in ("W1", "W4")
]


@pytest.mark.parametrize(("name", "wl"), SINGLE)
def test_bench_single(
    benchmark: Any,
    name: str,
    wl: str,
    make_peer: Callable[[str], P.Peer],
    queries: np.ndarray,
    expected: dict[str, list[list[int]]],
) -> None:
    peer = make_peer(name)
    benchmark.group = f"{wl} single query, 10k entities"
    fn = (lambda a: peer.w1(a, W.NOW)) if wl == "W1" else peer.w4
    _bench_single(benchmark, fn, peer.prepare(queries), expected[wl])


BATCH = [
    pytest.param(name, wl, id=f"{name}-{wl}")
    for name in ("graphrecall", "scipy")
    for wl in ("W1", "W4")
]


@pytest.mark.parametrize(("name", "wl"), BATCH)
def test_bench_batch(
    benchmark: Any,
    name: str,
    wl: str,
    make_peer: Callable[[str], P.Peer],
    queries: np.ndarray,
    expected: dict[str, list[list[int]]],
) -> None:
    peer = make_peer(name)
    benchmark.group = f"{wl} batch of {len(queries)} queries, 10k entities"
    if wl == "W1":
        _bench_batch(benchmark, lambda: peer.w1_batch(queries, W.NOW), expected[wl])
    else:
        _bench_batch(benchmark, lambda: peer.w4_batch(queries), expected[wl])
