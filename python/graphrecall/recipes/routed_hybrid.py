"""Recipe ``routed_hybrid``: seed 002, "Graph-Based Hierarchical Retrieval" (companion memory).

1. **Graph routing**: a router (:class:`graphrecall.router.HeuristicRouter` by default: the
   seed's ``route_query`` rules, in its order) picks the query type, the filters (goal_id,
   mission_id + last day, character_id, time window) and the tiers to search
   (``search_scope``: personal / project / task / character_conversations).
2. **Metadata filtering**, per tier as the seed's SQL does: personal by category and tags
   overlap; project by goal_id and tags overlap; task: not expired, by mission_id, goal_id
   and ``created_at >= now - days``; character conversations by character_id. A chunk's tier
   is its ``scope`` column; goal_id / mission_id / character_id are read from its metadata.
3. **Vector search** within each tier: the ``limit`` (10) most similar by cosine, exact
   over the rows that pass the filters (the SQL's ``WHERE ... ORDER BY ... LIMIT``): one
   BLAS matrix-vector product over the tier, then the filtered rows' top ``limit``.
4. **Rerank** each tier: ``0.5 x 1/(rank+1) + 0.3 x 0.95^days_old + 0.15 x confidence +
   0.05 x access`` (confidence 1.0 when unknown, access a constant 1.0 as the seed).

Choices where the seed is silent or loses data: the seed's routes never pass the caller's
``tags`` / ``category`` / ``days`` on to the filters (its use cases 2-4 give them in the
context and they are dropped): here a context's ``tags``, ``category`` and ``days`` apply
to the tiers whose SQL filters on them. A task memory without ``expires_at`` never expires
(SQL's ``NULL > now()`` would silently hide it). Results come by tier (``result.tiers``)
and merged by final score in ``result.chunks``.

An index without tiers (no chunk of the tenant has a ``scope``, e.g. a passage corpus):
every chunk of the tenant is searched as one tier ``all`` with the route's filters, a
warning is logged and ``result.fallback`` says so. A tenant without chunks is a
:class:`~graphrecall.errors.ParameterError`.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from ..scoring import RerankProfile, rerank_memories_batch
from ..tables import NULL_TIME
from .anchoring import embed_batch, index_cache
from .base import ChunkHit, check_count, chunk_hit
from .hits import RetrievalResult
from .overrides import RoutedHybridOverrides
from .registry import FunctionRecipe
from .stages import begin, resolve_params

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router

__all__ = ["RECIPE", "TIER_FILTERS", "RoutedHybrid", "RoutedHybridParams", "routed_hybrid"]

NAME = "routed_hybrid"

log = logging.getLogger("graphrecall")

#: Which filters each tier's SQL applies (seed 002's search_*_memories); other tiers apply
#: every filter given.
TIER_FILTERS: Mapping[str, tuple[str, ...]] = {
    "personal": ("category", "tags"),
    "project": ("goal_id", "tags"),
    "task": ("expires", "mission_id", "goal_id", "days"),
    "character_conversations": ("character_id", "days"),
}
_ALL_FILTERS = ("category", "tags", "goal_id", "mission_id", "character_id", "days", "expires")


@dataclass(frozen=True)
class RoutedHybrid:
    """Seed 002's parameters, with its defaults.

    Attributes:
        limit: Results per tier (10).
        profile: rerank_memories' constants.
        context_filters: Apply the context's tags / category / days (see the module doc).
    """

    recipe: ClassVar[str] = "routed_hybrid"

    limit: int = 10
    profile: RerankProfile = field(default_factory=RerankProfile)
    context_filters: bool = True


class _Tier:
    """One tenant's tier, its filter columns laid out for vectorised masks."""

    def __init__(self, index: GraphIndex, rows: npt.NDArray[np.int64]):
        self.rows = rows
        self.matrix = None if index.chunk_matrix is None else index.chunk_matrix[rows]
        self.expires = index.chunk_expires_at[rows]
        self.created = index.chunk_created_at[rows]
        rl = rows.tolist()
        self.category = np.array([index.chunk_category[r] for r in rl], dtype=object)
        self.meta = {
            key: np.array([index.chunk_metadata[r].get(key) for r in rl], dtype=object)
            for key in ("goal_id", "mission_id", "character_id")
        }
        tags: dict[str, list[int]] = {}
        for i, r in enumerate(rl):
            for tag in index.chunk_tags[r]:
                tags.setdefault(tag, []).append(i)
        self.tags = {tag: np.asarray(pos, dtype=np.int64) for tag, pos in tags.items()}

    def mask(self, tier: str, f: Mapping[str, Any], now: int) -> npt.NDArray[np.bool_]:
        """Which rows pass the tier's filters (seed 002's WHERE clauses)."""
        keep = np.ones(len(self.rows), dtype=bool)
        for name in TIER_FILTERS.get(tier, _ALL_FILTERS):
            if name == "expires":
                keep &= (self.expires == NULL_TIME) | (self.expires > now)
                continue
            want = f.get(name)
            if want is None:
                continue
            if name == "category":
                keep &= self.category == want
            elif name == "tags":
                hit = np.zeros(len(self.rows), dtype=bool)
                for tag in want:
                    pos = self.tags.get(tag)
                    if pos is not None:
                        hit[pos] = True
                keep &= hit
            elif name == "days":
                keep &= (self.created != NULL_TIME) & (self.created >= now - int(want) * 86_400)
            else:
                keep &= self.meta[name] == want
        return keep


def _tiers(index: GraphIndex, tenant: int) -> dict[str, _Tier]:
    """The tenant's tiers (chunks by ``scope``), built on first use and kept per index."""

    def build() -> dict[str, _Tier]:
        got: dict[str, _Tier] = {}
        rows = np.flatnonzero(index.chunk_tenant == tenant)
        scopes = np.array([index.chunk_scope[r] for r in rows.tolist()], dtype=object)
        for scope in set(scopes.tolist()):
            if scope is not None:
                got[scope] = _Tier(index, rows[scopes == scope])
        return got

    return index_cache(index, ("tiers", tenant), build)


def _untiered(index: GraphIndex, tenant: int) -> dict[str, _Tier]:
    """The tenant's chunks as one tier ``all`` (the fallback of an index without tiers).

    Raises:
        ParameterError: The tenant has no chunks at all.
    """

    def build() -> dict[str, _Tier]:
        rows = np.flatnonzero(index.chunk_tenant == tenant)
        if not len(rows):
            raise ParameterError(
                "recipe routed_hybrid searches chunks by tier: this tenant has no chunks"
            )
        return {"all": _Tier(index, rows)}

    return index_cache(index, ("tiers-all", tenant), build)


def _pipeline(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: RoutedHybrid,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """RoutedHybrid's pipeline (see :func:`routed_hybrid`)."""
    batch = begin(
        NAME,
        index,
        queries,
        tenant=tenant,
        now=now,
        params=p,
        now_needed="recency and expiry need the current time",
    )
    qs, t, timer = batch.queries, batch.tenant, batch.timer
    limit = check_count("limit", p.limit)
    now = int(now or 0)
    if context is None or isinstance(context, Mapping):
        contexts: list[Mapping[str, Any]] = [context or {}] * len(qs)
    else:
        contexts = [c or {} for c in context]
        if len(contexts) != len(qs):
            raise ParameterError(
                f"invalid parameter context: {len(contexts)} contexts for {len(qs)} queries"
            )
    if router is None:
        from ..router import HeuristicRouter

        router = HeuristicRouter()
    with timer.stage("route"):
        routes = [router.route(q, c) for q, c in zip(qs, contexts, strict=True)]
    qv, why = embed_batch(index, qs, query_vectors, timer)
    if qv is None or index.chunk_matrix is None:
        raise ParameterError(
            f"routed_hybrid needs chunk vectors and query vectors ({why or 'no chunk vectors'})"
        )
    tiers_of = _tiers(index, t)
    fallback = None
    if not tiers_of:
        tiers_of = _untiered(index, t)
        fallback = (
            "no tiers: no chunk of this tenant has a scope, so all its chunks were searched "
            "as one tier 'all'"
        )
        log.warning("recipe routed_hybrid: %s", fallback)
    per: list[tuple[int, str, npt.NDArray[np.int64], npt.NDArray[np.float32]]] = []
    with timer.stage("search"):
        for q in range(len(qs)):
            f = dict(routes[q].filters)
            if p.context_filters:
                for name in ("tags", "category", "days"):
                    if contexts[q].get(name) is not None and f.get(name) is None:
                        f[name] = contexts[q][name]
            for tier in ("all",) if fallback else routes[q].search_scope:
                tr = tiers_of.get(tier)
                if tr is None or tr.matrix is None or not len(tr.rows):
                    per.append((q, tier, np.zeros(0, np.int64), np.zeros(0, np.float32)))
                    continue
                keep = tr.mask(tier, f, now)
                # Exact cosine over the tier's rows (the SQL's ORDER BY ... LIMIT), one
                # matrix-vector product; filtered rows are then dropped. numpy's BLAS is
                # twice as fast per core here as graphrecall's SSE scan (AVX2 and FMA); see
                # the README on BLAS threads in a service.
                all_sims = tr.matrix @ qv[q]
                cands, sims = tr.rows[keep], all_sims[keep]
                top = (
                    np.argpartition(-sims, limit - 1)[:limit]
                    if len(sims) > limit
                    else np.arange(len(sims))
                )
                order = top[np.lexsort((cands[top], -sims[top]))]
                per.append((q, tier, cands[order], sims[order]))
    with timer.stage("rerank"):
        rr = rerank_memories_batch(
            [index.chunk_created_at[c] for _, _, c, _ in per],
            now=now,
            confidence=[
                [None if np.isnan(x) else float(x) for x in index.chunk_confidence[c].tolist()]
                for _, _, c, _ in per
            ],
            profile=p.profile,
        )
    tiers: list[dict[str, list[ChunkHit]]] = [{} for _ in qs]
    prof = p.profile
    for j, (q, tier, cands, sims) in enumerate(per):
        r = rr[j]
        hits: list[ChunkHit] = []
        for pos in r.order.tolist():
            c = int(cands[pos])
            created = int(index.chunk_created_at[c])
            days_old = (now - created) // prof.day_seconds if created != NULL_TIME else None
            conf = float(index.chunk_confidence[c])
            hits.append(
                chunk_hit(
                    index,
                    c,
                    score=float(r.scores[pos]),
                    source="vector",
                    components={
                        "cosine": float(sims[pos]),
                        "similarity": 1.0 / (pos + 1),
                        "recency": 1.0 if days_old is None else prof.recency_base**days_old,
                        "confidence": 1.0 if np.isnan(conf) else conf,
                        "access": 1.0,
                    },
                )
            )
        tiers[q][tier] = hits
    results = []
    for q, by_tier in enumerate(tiers):
        merged = [(h, i) for i, hs in enumerate(by_tier.values()) for h in hs]
        merged.sort(key=lambda x: (-x[0].score, x[1]))
        results.append(
            batch.result(
                q,
                chunks=[h for h, _ in merged],
                tiers=by_tier,
                route=routes[q],
                fallback=fallback,
            )
        )
    return results


RoutedHybridParams = RoutedHybrid
"""The former name of :class:`RoutedHybrid`."""

#: The registry entry.
RECIPE = FunctionRecipe(NAME, RoutedHybrid, _pipeline, default_format="tiers", takes_context=True)


def routed_hybrid(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: RoutedHybrid | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    context: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
    router: Router | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[RoutedHybridOverrides],
) -> list[RetrievalResult]:
    """Run seed 002's routed, filtered, per-tier search and rerank for a batch of queries.

    Args:
        index: The retrieval index (chunks with a ``scope`` column are the tiers).
        queries: One query or a batch.
        tenant: The user / tenant (may be omitted when the graph holds one).
        now: Unix seconds (recency, expiry, time windows); required.
        context: The caller's context (goal_id, mission_id, character_id, tags, days, ...),
            one for the batch or one per query.
        router: Anything with ``route(query, context) -> Route`` (default
            :class:`~graphrecall.router.HeuristicRouter`).
        query_vectors: Pre-computed query embeddings (n, d).
        params: The parameter set (default: :class:`RoutedHybrid`'s defaults).
        **overrides: Parameters to change in it, by name.

    Returns:
        One result per query: ``tiers`` (tier -> reranked chunks), ``chunks`` (all tiers
        by final score), ``route``.
    """
    p = resolve_params(RoutedHybrid, params, overrides)
    return _pipeline(index, queries, p, tenant, now, query_vectors, context, router)
