"""Shared first stages of the recipes: embed the batch once, find vector anchors, fall back.

Every recipe embeds its whole batch of queries in one call (or takes the caller's
``query_vectors``, as users with their own embedding service do), then searches the vector
indexes per tenant. When there is no embedder or it fails, the recipes degrade as the
sources say: seed 000 to keyword search on entity names, seed 004 to fuzzy name matching.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

import numpy as np
import numpy.typing as npt

from ..embed import EmbeddingError
from ..errors import ParameterError, UnknownTenantError
from ..graph import freeze as _freeze
from ..index import GraphIndex
from .base import Timer

log = logging.getLogger("graphrecall")

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "Anchor",
    "cached_plan",
    "chunk_search",
    "dense_batch",
    "embed_batch",
    "entity_search",
    "index_cache",
    "name_anchors",
    "params_of",
    "with_params",
]

#: (dense row, score, how it was found)
Anchor = tuple[int, float, str]
P = TypeVar("P", bound="DataclassInstance")
T = TypeVar("T")


def with_params(defaults: P, overrides: Mapping[str, Any]) -> P:
    """``defaults`` with ``overrides`` applied; an unknown name is a ParameterError."""
    names = {f.name for f in dataclasses.fields(defaults)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ParameterError(
            f"invalid parameter {unknown[0]!r} for {type(defaults).__name__}; "
            f"known: {sorted(names)}"
        )
    return dataclasses.replace(defaults, **overrides)


#: Parameter instances by (class, overrides), at most 256 (see :func:`params_of`).
_PARAMS: dict[Hashable, Any] = {}


def params_of(cls: Callable[[], P], overrides: Mapping[str, Any]) -> P:
    """``cls()``'s defaults with ``overrides`` applied, as :func:`with_params`, and one
    instance per distinct overrides: a frozen parameter set is built (and validated) once,
    and per-index state derived from it (:func:`cached_plan`) is found by its identity."""
    try:
        key = (cls, *sorted((k, _freeze(v)) for k, v in overrides.items()))
        got = _PARAMS.get(key)
    except TypeError:  # unhashable values: a fresh instance
        return with_params(cls(), overrides)
    if got is None:
        got = with_params(cls(), overrides)
        if len(_PARAMS) >= 256:
            _PARAMS.clear()  # atomic, unlike evicting one entry while other threads insert
        got = _PARAMS.setdefault(key, got)
    return got  # type: ignore[no-any-return]


#: (check, params identity) -> (params, checked values), at most 128 entries.
_CHECKED: dict[tuple[Callable[[Any], Any], int], tuple[Any, Any]] = {}


def checked_once(params: P, check: Callable[[P], T]) -> T:
    """``check(params)``, computed once per parameter set (an instance from
    :func:`params_of`; a frozen set never changes): a recipe's dozen range checks cost
    several microseconds per call otherwise. Only sets that passed are kept, so a bad value
    is refused on every call."""
    key = (check, id(params))
    got = _CHECKED.get(key)
    if got is not None and got[0] is params:
        return got[1]  # type: ignore[no-any-return]
    value = check(params)
    if len(_CHECKED) >= 128:
        _CHECKED.clear()  # atomic, unlike evicting one entry while other threads insert
    _CHECKED[key] = (params, value)
    return value


#: Per index: (what, params identity, tenant) -> (params, plan), at most 64 per index.
_PLANS: WeakKeyDictionary[GraphIndex, dict[Hashable, tuple[Any, Any]]] = WeakKeyDictionary()


def cached_plan(
    index: GraphIndex, what: str, params: Any, tenant: int, build: Callable[[], T]
) -> T:
    """The plan ``build()`` gives for ``params`` (an instance from :func:`params_of`) and
    ``tenant`` on ``index``, built once: the graph's own plan cache keys on every parameter
    value, which costs tens of microseconds per query."""
    plans = _PLANS.get(index)
    if plans is None:
        plans = _PLANS.setdefault(index, {})
    key = (what, id(params), tenant)
    got = plans.get(key)
    if got is not None and got[0] is params:
        return got[1]  # type: ignore[no-any-return]
    plan = build()
    if len(plans) >= 64:
        plans.clear()  # atomic, unlike evicting one entry while other threads insert
    plans[key] = (params, plan)
    return plan


_MISSING = object()

#: Per index: derived arrays the recipes build once (see :func:`index_cache`).
_DERIVED: WeakKeyDictionary[GraphIndex, dict[Hashable, Any]] = WeakKeyDictionary()


def index_cache(index: GraphIndex, key: Hashable, build: Callable[[], T]) -> T:
    """``build()`` for ``key`` on ``index``, computed once per index (an index never
    changes after its build)."""
    got = _DERIVED.get(index)
    if got is None:
        got = _DERIVED.setdefault(index, {})
    value = got.get(key, _MISSING)
    if value is _MISSING:
        value = got.setdefault(key, build())
    return value  # type: ignore[no-any-return]


def dense_batch(
    rows: Sequence[Sequence[Anchor]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """A batch's anchors as the graph kernels take them: dense rows, scores and per-query
    offsets."""
    if len(rows) == 1:
        flat = rows[0]
        offsets = np.array([0, len(flat)], dtype=np.int64)
    else:
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
        flat = [a for r in rows for a in r]
    return (
        np.array([a[0] for a in flat], dtype=np.int64),
        np.array([a[1] for a in flat], dtype=np.float64),
        offsets,
    )


def embed_batch(
    index: GraphIndex,
    queries: Sequence[str],
    query_vectors: npt.ArrayLike | None,
    timer: Timer,
) -> tuple[npt.NDArray[np.float32] | None, str | None]:
    """The batch's query vectors (one embedder call), or None and why not.

    ``query_vectors`` (n, d) given by the caller are used as they are (after a shape and
    finiteness check). Any ``Exception`` the embedder raises (its own classes included) is
    caught here and logged as a warning on the ``graphrecall`` logger: the recipes fall back
    to names, and the result's ``fallback`` names the exception's type and message.
    """
    if query_vectors is not None:
        qv = np.asarray(query_vectors, dtype=np.float32)
        if qv.ndim == 1:
            qv = qv.reshape(1, -1)
        if qv.ndim != 2 or qv.shape[0] != len(queries):
            raise ParameterError(
                f"invalid parameter query_vectors: shape {qv.shape} for {len(queries)} queries"
            )
        # np.linalg.norm's own arithmetic: finite norms mean finite values (a NaN or inf
        # value makes its row's norm NaN or inf), so the full scan runs only otherwise.
        # The norms are checked as a list (a batch's handful: cheaper than two numpy
        # reductions).
        norms = np.sqrt(np.add.reduce(qv * qv, axis=1, keepdims=True))
        nl = norms.ravel().tolist()
        if not all(map(math.isfinite, nl)) and not np.isfinite(qv).all():
            raise ParameterError("invalid parameter query_vectors: NaN or inf values")
        if 0.0 in nl:
            raise ParameterError("invalid parameter query_vectors: a zero vector")
        return np.ascontiguousarray(qv / norms, dtype=np.float32), None
    if index.embedder is None:
        return None, "no embedder"
    with timer.stage("embed"):
        try:
            return index.embed_queries(queries), None
        except Exception as exc:  # an embedder may raise anything: the recipes fall back
            why = f"embedding failed: {type(exc).__name__}: {exc}"
            log.warning("%s (falling back to name matching)", why)
            return None, why


def _search(
    vectors: Any, qv: npt.NDArray[np.float32], k: int, tenant: int, min_score: float | None
) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    try:
        m = vectors.search(qv, k, tenant=tenant, min_score=min_score)
    except UnknownTenantError:
        # A tenant of the graph without rows of this kind (e.g. no chunks): nothing to find.
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float32))
        return [empty for _ in range(qv.shape[0])]
    rows, scores, counts = m.rows, m.scores, m.counts.tolist()
    return [(rows[i, :c], scores[i, :c]) for i, c in enumerate(counts)]


def entity_search(
    index: GraphIndex,
    qv: npt.NDArray[np.float32] | None,
    tenant: int,
    k: int,
    min_score: float | None = None,
) -> list[list[Anchor]] | None:
    """Top-k entities by cosine per query (None when there are no entity vectors)."""
    if qv is None or index.entity_vectors is None:
        return None
    if qv.shape[1] != index.entity_vectors.dim:
        raise EmbeddingError(
            f"query vectors have dimension {qv.shape[1]}, entity vectors {index.entity_vectors.dim}"
        )
    return [
        [(int(r), float(s), "vector") for r, s in zip(rows.tolist(), sc.tolist(), strict=True)]
        for rows, sc in _search(index.entity_vectors, qv, k, tenant, min_score)
    ]


def chunk_search(
    index: GraphIndex,
    qv: npt.NDArray[np.float32] | None,
    tenant: int,
    k: int,
    min_score: float | None = None,
) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] | None:
    """Top-k chunks by cosine per query (None when there are no chunk vectors)."""
    if qv is None or index.chunk_vectors is None:
        return None
    if qv.shape[1] != index.chunk_vectors.dim:
        raise EmbeddingError(
            f"query vectors have dimension {qv.shape[1]}, chunk vectors {index.chunk_vectors.dim}"
        )
    return _search(index.chunk_vectors, qv, k, tenant, min_score)


def name_anchors(index: GraphIndex, query: str, tenant: int, k: int, how: str) -> list[Anchor]:
    """Anchors by name: "recognize" (n-grams, seed 003), "fuzzy" (seed 004) or "keyword"
    (seed 000's fallback), as (row, score, how)."""
    if how == "recognize":
        found = index.names.recognize(query, tenant=tenant, limit=k)
    elif how == "fuzzy":
        found = index.names.fuzzy(query, tenant=tenant, limit=k)
    elif how == "keyword":
        found = index.names.keyword(query, tenant=tenant, limit=k)
    else:
        raise ParameterError(f"invalid parameter fallback: {how!r}")
    out: list[Anchor] = []
    seen: set[int] = set()
    for m in found:
        if m.row not in seen:
            seen.add(m.row)
            out.append((int(m.row), float(m.score), str(m.kind)))
    return out
