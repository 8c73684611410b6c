"""The JSON side of the service: bodies in and out, and what a batch of queries shares.

Result bodies are the JSON of :meth:`RetrievalResult.to_dict` (orjson writes the hit
dataclasses directly when installed, the stdlib ``json`` otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from ..recipes import RetrievalResult

__all__ = [
    "CONTEXT_FIELDS",
    "QUERY_FIELDS",
    "RESULT_FIELDS",
    "Spec",
    "dumps",
    "int_field",
    "loads",
    "results_body",
    "tuples",
]

#: The fields of ``RetrievalResult.to_dict()``, in its order.
RESULT_FIELDS = (
    "recipe",
    "query",
    "tenant",
    "anchors",
    "entities",
    "facts",
    "chunks",
    "tiers",
    "timings",
    "stats",
    "fallback",
)

try:  # orjson writes result bodies several times faster; the stdlib serves without it.
    import orjson

    _OPT = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS

    def _mapping(obj: Any) -> Any:
        if isinstance(obj, Mapping):
            return dict(obj)
        raise TypeError(type(obj).__name__)

    def dumps(obj: Any) -> bytes:
        """``obj`` as JSON (numpy values as numbers, other unknown values as ``str``)."""
        return orjson.dumps(obj, default=str, option=_OPT)

    def loads(data: bytes) -> Any:
        """The JSON ``data`` (``ValueError`` when malformed)."""
        return orjson.loads(data)

    def results_body(key: str, results: list[RetrievalResult]) -> bytes:
        """``{key: result.to_dict()}`` (a list for ``"results"``), with orjson writing the
        hit dataclasses directly (the same JSON as ``to_dict``, without the Python dicts)."""
        rows = [{k: getattr(r, k) for k in RESULT_FIELDS} for r in results]
        try:
            return orjson.dumps(
                {key: rows if key == "results" else rows[0]}, default=_mapping, option=_OPT
            )
        except TypeError:  # a value orjson cannot write as to_dict does: take to_dict's
            dicts = [r.to_dict() for r in results]
            return dumps({key: dicts if key == "results" else dicts[0]})

except ImportError:  # pragma: no cover - depends on the environment

    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, default=str, ensure_ascii=False).encode()

    def loads(data: bytes) -> Any:
        return json.loads(data)

    def results_body(key: str, results: list[RetrievalResult]) -> bytes:
        dicts = [r.to_dict() for r in results]
        return dumps({key: dicts if key == "results" else dicts[0]})


QUERY_FIELDS = frozenset(
    {
        "query",
        "queries",
        "recipe",
        "tenant",
        "params",
        "now",
        "context",
        "query_vector",
        "query_vectors",
        "use_cache",
    }
)
CONTEXT_FIELDS = QUERY_FIELDS | {"format", "budget"}


@dataclass(frozen=True)
class Spec:
    """What the queries of one batch share (the micro-batcher's key)."""

    recipe: str | None
    tenant: Hashable | None
    params: str  # canonical JSON of the parameters
    context: str | None  # canonical JSON of the context
    now: int | None
    use_cache: bool
    vectors: bool


def tuples(v: Any) -> Any:
    """JSON lists as tuples (the recipes' sequence parameters are tuples)."""
    if isinstance(v, list):
        return tuple(tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: tuples(x) for k, x in v.items()}
    return v


def int_field(body: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ParameterError(
            f"invalid parameter {name}: {v!r} is not an integer in [{lo}, {hi}]",
            kind="invalid_parameter",
            parameter=name,
            column=name,
            input=v if isinstance(v, (int, float, str)) else repr(v),
        )
    return v
