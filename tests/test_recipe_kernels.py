"""The recipes' vectorised helpers against the plain scans they replace."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from graphrecall import fusion

# The module, not the recipe function the package exports under the same name.
hybrid_module = importlib.import_module("graphrecall.recipes.hybrid_expand")


def _scan(
    chunks: np.ndarray, scores: np.ndarray, entities: np.ndarray
) -> tuple[dict[int, float], dict[int, int]]:
    best: dict[int, float] = {}
    origin: dict[int, int] = {}
    for c, s, e in zip(chunks.tolist(), scores.tolist(), entities.tolist(), strict=True):
        if s > best.get(c, -1.0):
            best[c] = s
            origin[c] = e
    return best, origin


@pytest.mark.parametrize("seed", range(20))
def test_best_per_chunk_is_the_scan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(0, 40))
        chunks = rng.integers(0, 10, n).astype(np.int64)
        scores = rng.choice([0.0, -0.0, 0.25, 0.5, 1.0, -1.0, -3.0, np.nan], n)
        entities = rng.integers(0, 50, n).astype(np.int64)
        want = _scan(chunks, scores, entities)
        got = hybrid_module._best_per_chunk(chunks, scores, entities)
        # Same keys in the same order, same values to the bit (0.0 vs -0.0 included).
        assert list(got[1].items()) == list(want[1].items())
        assert [(c, repr(s)) for c, s in got[0].items()] == [
            (c, repr(s)) for c, s in want[0].items()
        ]


@pytest.mark.parametrize("n_lists", [0, 1, 2, 3])
def test_rrf_arrays_is_rrf(n_lists: int) -> None:
    rng = np.random.default_rng(n_lists)
    lists = [
        rng.permutation(30)[: int(rng.integers(0, 20))].astype(np.int64) for _ in range(n_lists)
    ]
    for top_k in (None, 5):
        got = fusion.rrf_arrays(lists, k=60.0, top_k=top_k)
        want = fusion.rrf(lists, k=60.0, top_k=top_k)
        assert got.ids.tolist() == want.ids.tolist()
        assert got.scores.tolist() == want.scores.tolist()
        assert got.offsets.tolist() == want.offsets.tolist()
