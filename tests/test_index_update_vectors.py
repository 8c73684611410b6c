"""``VectorIndex.appended`` answers exactly as a fresh index over all rows."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from graphrecall.anchors.vectors import VectorIndex
from hypothesis import given, settings
from hypothesis import strategies as st

Mode = Literal["auto", "exact", "hnsw", "sketch"]


def _same_answers(a: VectorIndex, b: VectorIndex, queries: np.ndarray, k: int) -> None:
    assert len(a) == len(b)
    assert a.backends == b.backends
    assert a.tenants().tolist() == b.tenants().tolist()
    for code in b.tenants().tolist():
        assert a.tenant_rows(code).tolist() == b.tenant_rows(code).tolist()
        for qs in (queries, queries[0]):  # batch and one-query paths
            x, y = a.search(qs, k, tenant=code), b.search(qs, k, tenant=code)
            assert np.array_equal(x.rows, y.rows)
            assert np.array_equal(x.scores, y.scores, equal_nan=True)
            assert np.array_equal(x.counts, y.counts)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    mode=st.sampled_from(["auto", "exact", "sketch", "hnsw"]),
    seed=st.integers(0, 2**16),
    n0=st.integers(1, 60),
    steps=st.lists(st.integers(0, 25), min_size=1, max_size=3),
    n_tenants=st.sampled_from([None, 3]),
    k=st.integers(1, 12),
)
def test_appended_equals_a_fresh_index(
    mode: Mode, seed: int, n0: int, steps: list[int], n_tenants: int | None, k: int
) -> None:
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(2, 70))
    total = n0 + sum(steps)
    vectors = rng.normal(size=(total, dim)).astype(np.float32)
    vectors[rng.random(total) < 0.1] = vectors[0]  # ties
    tenants = rng.integers(0, 3, total).astype(np.uint32)
    tenants[:3] = [0, 1, 2][: min(3, total)]
    params = dict(backend=mode, exact_below=8, sketch_below=40, build_threads=1)
    index = VectorIndex(vectors[:n0], tenants[:n0], n_tenants=n_tenants, **params)
    n = n0
    queries = rng.normal(size=(4, dim)).astype(np.float32)
    for step in steps:
        before, n_before = index, n
        n += step
        index = index.appended(vectors[:n], tenants[:n], n_tenants=n_tenants, build_threads=1)
        if "hnsw" in before.backends.values():
            # HNSW graphs depend on insertion order: compare with the constructor's path
            # that extends the previous graphs (``reuse``).
            old = np.where(np.arange(n) < n_before, np.arange(n), -1)
            fresh = VectorIndex(
                vectors[:n], tenants[:n], n_tenants=n_tenants, reuse=(before, old), **params
            )
        else:
            fresh = VectorIndex(vectors[:n], tenants[:n], n_tenants=n_tenants, **params)
        _same_answers(index, fresh, queries, k)


def test_appended_keeps_the_old_rows_arrays() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    tenants = np.repeat(np.arange(2, dtype=np.uint32), 250)
    base = VectorIndex(vectors[:499], tenants[:499], backend="exact", n_tenants=2)
    grown = base.appended(vectors, tenants, n_tenants=2)
    fresh = VectorIndex(vectors, tenants, backend="exact", n_tenants=2)
    _same_answers(grown, fresh, rng.normal(size=(3, 16)).astype(np.float32), 5)
    _same_answers(base, VectorIndex(vectors[:499], tenants[:499], backend="exact"), vectors[:2], 5)


def test_appended_with_a_new_tenant_or_bad_rows_uses_the_constructor() -> None:
    vectors = np.eye(4, dtype=np.float32)
    base = VectorIndex(vectors[:2], [0, 0], backend="exact")
    grown = base.appended(vectors[:3], [0, 0, 1])
    assert grown.tenants().tolist() == [0, 1]
    bad = vectors[:3].copy()
    bad[2] = 0
    with pytest.raises(Exception, match="row 2 is a zero vector"):
        base.appended(bad, [0, 0, 0])


@pytest.mark.parametrize("mode", ["exact", "sketch", "hnsw"])
def test_an_appended_index_saves_and_loads(mode: Mode, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(120, 8)).astype(np.float32)
    tenants = (np.arange(120) % 2).astype(np.uint32)
    grown = VectorIndex(vectors[:100], tenants[:100], backend=mode).appended(vectors, tenants)
    loaded = VectorIndex.load(grown.save(tmp_path / "v"))
    _same_answers(loaded, grown, rng.normal(size=(3, 8)).astype(np.float32), 7)
