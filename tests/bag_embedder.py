"""A deterministic bag-of-characters embedder shared by the index-update tests."""

from __future__ import annotations

from typing import Any

import numpy as np
from graphrecall.embed import CallableEmbedder

DIM = 16


class BagEmbedder(CallableEmbedder):
    """A deterministic bag-of-characters embedder."""

    def __init__(self) -> None:
        super().__init__(self._embed, dim=DIM)
        self.model_name = "bag"

    def _embed(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), DIM))
        for i, t in enumerate(texts):
            for j, ch in enumerate(t.encode()):
                out[i, (ch * 7 + j) % DIM] += 1.0 + (j % 3)
            out[i, len(t) % DIM] += 0.5
        return out
