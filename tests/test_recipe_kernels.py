"""The recipes' unchecked fast paths give what the checked public functions give."""

from __future__ import annotations

import numpy as np
import pytest
from graphrecall import fusion


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
