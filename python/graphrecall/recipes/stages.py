"""The stage every recipe starts with: check the batch, resolve tenant and parameters, time.

A recipe is a pipeline ``begin -> anchor -> expand -> score -> fuse -> hits``; :func:`begin`
is its first stage, shared by all of them, and :meth:`Batch.result` its last (one
:class:`RetrievalResult` per query with the batch's timings and parameters). The anchoring
stages live in :mod:`.anchoring`, the hit builders in :mod:`.base`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import ParameterError
from ..index import GraphIndex
from .anchoring import params_of, with_params
from .base import Timer, check_queries
from .hits import (
    ChunkHit,
    EntityHit,
    FactHit,
    LazyHits,
    RetrievalResult,
    freeze_stats,
    make_result,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from ..router import Route

__all__ = ["Batch", "begin", "resolve_params"]

P = TypeVar("P")

#: Canonical parameter instances (equal sets share one instance: per-index plans and
#: checked values are found by identity), at most 256.
_CANON: dict[Any, Any] = {}
_NO_STATS: Mapping[str, Any] = MappingProxyType({})
#: Read-only views of parameter sets (by identity of the canonical instance), at most 256.
_VIEWS: dict[int, tuple[Any, Mapping[str, Any]]] = {}


def resolve_params(cls: type[P], params: P | None, overrides: Mapping[str, Any]) -> P:
    """The parameter set a call runs with: ``params`` (an instance of ``cls``, default its
    defaults) with ``overrides`` applied, as one canonical instance per distinct set.

    Raises:
        ParameterError: ``params`` of another recipe, or an unknown override.
    """
    if params is None:
        return params_of(cast("type[DataclassInstance]", cls), overrides)  # type: ignore[return-value]
    if type(params) is not cls:
        raise ParameterError(
            f"invalid parameter params: {type(params).__name__}, expected {cls.__name__}"
        )
    if overrides:
        params = with_params(cast("DataclassInstance", params), overrides)  # type: ignore[assignment]
    try:
        got = _CANON.get(params)
    except TypeError:  # unhashable values: used as it is
        return params
    if got is None:
        if len(_CANON) >= 256:
            _CANON.clear()  # atomic, unlike evicting one entry while other threads insert
        got = _CANON.setdefault(params, params)
    return got  # type: ignore[no-any-return]


def _view(params: Any) -> Mapping[str, Any]:
    """A read-only mapping of ``params``' fields, one per parameter set."""
    got = _VIEWS.get(id(params))
    if got is not None and got[0] is params:
        return got[1]
    view = MappingProxyType(dict(params.__dict__))
    if len(_VIEWS) >= 256:
        _VIEWS.clear()
    _VIEWS[id(params)] = (params, view)
    return view


@dataclass(slots=True)
class Batch:
    """A checked batch of queries: what every later stage of a recipe reads.

    Attributes:
        recipe: The recipe's name.
        index: The retrieval index.
        queries: The query strings.
        tenant: The tenant's code in the graph.
        tenant_name: The tenant as results report it.
        now: Unix seconds (None when the recipe does not score by time).
        timer: The batch's stage timer.
        params: The parameter set's fields, read-only (shared by the batch's results).
    """

    recipe: str
    index: GraphIndex
    queries: list[str]
    tenant: int
    tenant_name: Hashable | None
    now: int | None
    timer: Timer
    params: Mapping[str, Any]

    def result(
        self,
        q: int,
        *,
        anchors: Sequence[EntityHit] | LazyHits = (),
        entities: Sequence[EntityHit] | LazyHits = (),
        facts: Sequence[FactHit] | LazyHits = (),
        chunks: Sequence[ChunkHit] | LazyHits = (),
        tiers: Mapping[str, Sequence[ChunkHit]] | None = None,
        stats: Mapping[str, Any] | None = None,
        route: Route | None = None,
        fallback: str | None = None,
    ) -> RetrievalResult:
        """Query ``q``'s result with the batch's recipe, tenant, timings and parameters (hit
        lists given as :class:`~.hits.LazyHits` are built on first read)."""
        return make_result(
            self.recipe,
            self.queries[q],
            self.tenant_name,
            _hits(anchors),
            _hits(entities),
            _hits(facts),
            _hits(chunks),
            None if tiers is None else MappingProxyType({t: tuple(c) for t, c in tiers.items()}),
            self.timer.view,
            _NO_STATS if stats is None else freeze_stats(stats),
            route,
            self.params,
            fallback,
        )


def _hits(v: Any) -> Any:
    """A result's hit list as its slot holds it: a tuple, or columns built on first read."""
    return v if type(v) is tuple or isinstance(v, LazyHits) else tuple(v)


def begin(
    recipe: str,
    index: GraphIndex,
    queries: str | Sequence[str],
    *,
    tenant: Hashable | None,
    now: int | None,
    params: Any,
    now_needed: str | None = None,
) -> Batch:
    """The first stage of every recipe: the batch's queries checked, the tenant resolved, the
    clock checked when the recipe scores by time (``now_needed``: why it is needed).

    Raises:
        ParameterError: Bad queries, or ``now`` missing where needed.
        UnknownTenantError: An unknown tenant.
    """
    qs, _ = check_queries(queries)
    t = index.tenant_code(tenant)
    graph = index.graph
    tenant_name = graph.tenants.names[t] if graph.n_tenants else tenant
    if now_needed is not None and now is None:
        raise ParameterError(f"invalid parameter now: {now_needed}")
    return Batch(recipe, index, qs, t, tenant_name, now, Timer(), _view(params))
