"""The JSON side of the service: bodies in and out, and what a batch of queries shares.

A ``/retrieve`` result body is lean by default: the JSON of :meth:`RetrievalResult.to_dict`
without the hits' ``path`` and ``components`` (ids, scores, text and provenance: what a
caller ranks and cites), which are most of a full body's bytes and of its writing time.
``"explain": true`` in the request asks for the full ``to_dict`` body. orjson writes the
bodies when installed, the stdlib ``json`` otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import ParameterError
from ..recipes import ChunkHit, EntityHit, FactHit, RetrievalResult
from ..recipes.hits import hit_columns

__all__ = [
    "CONTEXT_FIELDS",
    "EXPLAIN_FIELDS",
    "QUERY_FIELDS",
    "RESULT_FIELDS",
    "RETRIEVE_FIELDS",
    "Spec",
    "canonical",
    "dumps",
    "int_field",
    "lean_dict",
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


def _stdlib_dumps(obj: Any) -> bytes:
    return json.dumps(obj, default=str, ensure_ascii=False).encode()


#: What a lean body leaves out of every hit (``"explain": true`` keeps them).
EXPLAIN_FIELDS = ("path", "components")


def _lean_rows(cls: type) -> Callable[[Sequence[Any]], list[dict[str, Any]]]:
    """A writer of ``cls`` hits as dicts of their fields but :data:`EXPLAIN_FIELDS`, in
    ``to_dict``'s order. Generated as one dict display per hit (a few times faster than
    ``dict(zip(...))``); the lazy paths and components are never built."""
    keys = [f.name for f in fields(cls) if f.name not in EXPLAIN_FIELDS]
    row = ", ".join(f"{k!r}: h.{k}" for k in keys)
    scope: dict[str, Any] = {}
    exec(f"def rows(hits):\n    return [{{{row}}} for h in hits]\n", scope)
    rows: Callable[[Sequence[Any]], list[dict[str, Any]]] = scope["rows"]
    rows.__qualname__ = rows.__name__ = f"lean_{cls.__name__}_rows"
    return rows


_LEAN_ENTITIES = _lean_rows(EntityHit)
_LEAN_FACTS = _lean_rows(FactHit)
_LEAN_CHUNKS = _lean_rows(ChunkHit)


#: The fields of a lean body's hits, per hit class.
_LEAN_FIELDS: dict[type, tuple[str, ...]] = {
    c: tuple(f.name for f in fields(c) if f.name not in EXPLAIN_FIELDS)
    for c in (EntityHit, FactHit, ChunkHit)
}


def _lean_hits(r: RetrievalResult, name: str, rows: Callable[[Any], list[dict[str, Any]]]) -> Any:
    """The lean dicts of ``r``'s hit list ``name``, from its columns while it has not been
    built (the same dicts either way)."""
    lazy = hit_columns(r, name)
    if lazy is None:
        return rows(getattr(r, name))
    parts = lazy.parts()
    if len(parts) == 1:
        return parts[0].dicts(_LEAN_FIELDS[parts[0].cls])
    out: list[dict[str, Any]] = []
    for part in parts:
        out += part.dicts(_LEAN_FIELDS[part.cls])
    return out


def _plain(value: Any) -> Any:
    """``value`` with every mapping as a dict (nested ones too)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _str_keys(value: Any) -> Any:
    """``value`` with the int keys of its dicts (nested ones too) as the decimal strings
    JSON writes for them; a dict where that would merge two keys is kept as it is."""
    if type(value) is not dict:
        return value
    out = {str(k) if type(k) is int else k: _str_keys(v) for k, v in value.items()}
    return out if len(out) == len(value) else value


def lean_dict(r: RetrievalResult) -> dict[str, Any]:
    """``r.to_dict()`` without the hits' ``path`` and ``components``: the default
    ``/retrieve`` body of one result (hit lists still held as columns are written from
    them, without building the hits)."""
    return {
        "recipe": r.recipe,
        "query": r.query,
        "tenant": r.tenant,
        "anchors": _lean_hits(r, "anchors", _LEAN_ENTITIES),
        "entities": _lean_hits(r, "entities", _LEAN_ENTITIES),
        "facts": _lean_hits(r, "facts", _LEAN_FACTS),
        "chunks": _lean_hits(r, "chunks", _LEAN_CHUNKS),
        "tiers": None if r.tiers is None else {t: _LEAN_CHUNKS(cs) for t, cs in r.tiers.items()},
        "timings": dict(r.timings),
        "stats": _plain(r.stats),
        "fallback": r.fallback,
    }


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

    def canonical(obj: Any) -> str:
        """``obj`` as JSON with sorted keys: the same text for equal objects (a batch key)."""
        try:
            return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:  # values orjson does not write (ints over 64 bits): the stdlib's
            return json.dumps(obj, sort_keys=True)

    def results_body(key: str, results: list[RetrievalResult], explain: bool = True) -> bytes:
        """``{key: result.to_dict()}`` (a list for ``"results"``), with orjson writing the
        hit dataclasses directly (the same JSON as ``to_dict``, without the Python dicts);
        :func:`lean_dict` instead of ``to_dict`` unless ``explain``."""
        if not explain:
            lean = [lean_dict(r) for r in results]
            for row in lean:
                row["stats"] = _str_keys(row["stats"])
            body = {key: lean if key == "results" else lean[0]}
            try:  # str keys only: orjson's fast path (non-str keys cost it ~25% more)
                return orjson.dumps(body, default=str, option=orjson.OPT_SERIALIZE_NUMPY)
            except TypeError:
                pass
            try:
                return orjson.dumps(body, default=str, option=_OPT)
            except TypeError:  # pragma: no cover - keys orjson cannot write: the stdlib's
                return _stdlib_dumps(body)
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
        return _stdlib_dumps(obj)

    def loads(data: bytes) -> Any:
        return json.loads(data)

    def canonical(obj: Any) -> str:
        return json.dumps(obj, sort_keys=True)

    def results_body(key: str, results: list[RetrievalResult], explain: bool = True) -> bytes:
        dicts = [r.to_dict() if explain else lean_dict(r) for r in results]
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
#: ``/retrieve``'s fields: ``explain`` asks for the hits' paths and score components.
RETRIEVE_FIELDS = QUERY_FIELDS | {"explain"}


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
    #: Full result bodies (paths, components); not part of the batch key: the batch's
    #: results are the same, only each request's body differs.
    explain: bool = field(default=False, compare=False)


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
