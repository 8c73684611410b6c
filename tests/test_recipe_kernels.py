"""The recipes' unchecked fast paths give what the checked public functions give."""

from __future__ import annotations

import numpy as np
import pytest
from graphrecall import _core, fusion
from graphrecall.recipes.graph_recall import rrf_arrays


@pytest.mark.parametrize("n_lists", [0, 1, 2, 3])
def test_rrf_arrays_is_rrf(n_lists: int) -> None:
    rng = np.random.default_rng(n_lists)
    lists = [
        rng.permutation(30)[: int(rng.integers(0, 20))].astype(np.int64) for _ in range(n_lists)
    ]
    for top_k in (None, 5):
        ids, scores = rrf_arrays(lists, k=60.0, top_k=top_k)
        want = fusion.rrf(lists, k=60.0, top_k=top_k)
        assert ids.tolist() == want.ids.tolist()
        assert scores.tolist() == want.scores.tolist()


def test_hybrid_expand_merge_call_is_additive_merge() -> None:
    rng = np.random.default_rng(3)
    b_ids = rng.permutation(20)[:8].astype(np.int64)
    g_ids = rng.permutation(20)[:9].astype(np.int64)
    b_s, g_s = rng.random(8), rng.random(9)
    ids, scores, sources, _ = _core.additive_merge(
        b_ids,
        b_s,
        np.array([0, 8], dtype=np.uintp),
        g_ids,
        g_s,
        np.array([0, 9], dtype=np.uintp),
        alpha=0.7,
        beta=0.3,
        max_new=4,
    )
    want = fusion.additive_merge((b_ids, b_s), (g_ids, g_s), alpha=0.7, beta=0.3, max_new=4)
    assert ids.tolist() == want.ids.tolist()
    assert scores.tolist() == want.scores.tolist()
    assert sources.tolist() == want.sources.tolist()
