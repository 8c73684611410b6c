"""The data-aware router: the recipe that suits both the question and what the index holds.

The seeds' routers (:class:`~.heuristic.HeuristicRouter`) choose by the query's words only,
so on a passage corpus they send most questions to fact recipes and the rest to tiers the
index may not have. :class:`IndexRouter` first reads what one tenant's data holds
(:class:`IndexProfile`: tiers, facts, dated facts, passages linked to the graph, chunk
vectors, BM25), keeps the seed router's decision (query type, filters, tiers, memory route)
for explain and for ``routed_hybrid``, and then picks the recipe by this precedence:

1. a scoped query (a context id, or a seed-002 scope keyword) on an index with tiers
   (chunks with a ``scope``): the seed router's recipe (``routed_hybrid`` by default);
2. a relationship question (zeph's patterns: "related to", "opinion on", ...) on an index
   with facts: the seed router's recipe (``graph_recall`` by default: facts answer it);
3. passages linked to a graph (chunks, mentions and facts): ``ppr``, the strongest passage
   recipe on the evaluation sets (``benches/results/recall.md``);
4. passages without a graph: ``hybrid`` (dense + BM25) when both exist, else ``vector`` or
   ``bm25``;
5. facts without passages: ``spreading_activation`` when facts carry dates (its score decays
   with age), else ``graph_recall``.

Example:
    >>> from graphrecall.router import IndexProfile, IndexRouter
    >>> profile = IndexProfile(tiers=False, facts=True, dated_facts=False, chunks=True,
    ...                        linked_chunks=True, chunk_vectors=True, keywords=True)
    >>> IndexRouter(profile).route("Who founded the band?").recipe
    'ppr'
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError
from .heuristic import HeuristicRouter
from .route import QueryType, Route, Router

if TYPE_CHECKING:
    from ..index import GraphIndex

__all__ = ["IndexProfile", "IndexRouter"]

#: How :class:`HeuristicRouter` words its relationship-pattern rule (zeph's first rule).
_RELATIONSHIP = "memory_route=graph: relationship pattern"


@dataclass(frozen=True)
class IndexProfile:
    """What one tenant's part of an index holds (what :class:`IndexRouter` decides on).

    Attributes:
        tiers: Some chunk has a ``scope`` (seed 002's memory tiers).
        facts: The tenant has facts.
        dated_facts: Some fact has a ``since`` time.
        chunks: The tenant has chunks (passages).
        linked_chunks: Some chunk mentions an entity, and the tenant has facts: passages
            with a graph over them.
        chunk_vectors: The index holds chunk vectors.
        keywords: The index holds a BM25 index over the chunks.
    """

    tiers: bool
    facts: bool
    dated_facts: bool
    chunks: bool
    linked_chunks: bool
    chunk_vectors: bool
    keywords: bool

    @classmethod
    def of(cls, index: GraphIndex, tenant: int = 0) -> IndexProfile:
        """The profile of tenant code ``tenant`` in ``index``.

        Args:
            index: The retrieval index.
            tenant: The tenant's code (``index.tenant_code(name)``).

        Returns:
            The profile.
        """
        chunk_rows = np.flatnonzero(index.chunk_tenant == tenant)
        if len(index.fact_subject):
            fact_tenant = index.entity_tenant[index.fact_subject]
            fact_rows = np.flatnonzero(fact_tenant == tenant)
        else:
            fact_rows = np.zeros(0, dtype=np.int64)
        m = index.mentions
        linked = bool(len(chunk_rows)) and bool(
            (m.chunk_offsets[chunk_rows + 1] > m.chunk_offsets[chunk_rows]).any()
        )
        return cls(
            tiers=any(index.chunk_scope[r] is not None for r in chunk_rows.tolist()),
            facts=bool(len(fact_rows)),
            dated_facts=bool((index.fact_since[fact_rows] != -(2**63)).any()),
            chunks=bool(len(chunk_rows)),
            linked_chunks=linked and bool(len(fact_rows)),
            chunk_vectors=index.chunk_vectors is not None,
            keywords=index.chunk_keywords is not None,
        )


class IndexRouter:
    """Routes by the question and by what the index holds (rules in :mod:`.data`).

    Args:
        profile: What the tenant's data holds (:meth:`IndexProfile.of`).
        seed_router: The seed router whose query type, filters, tiers and memory route
            the routes keep (default :class:`HeuristicRouter`); its recipe is taken for
            scoped queries on an index with tiers.
        passage_recipe: The recipe for passages linked to a graph (default ``ppr``).

    Raises:
        ParameterError: An argument has the wrong type.
    """

    def __init__(
        self,
        profile: IndexProfile,
        *,
        seed_router: Router | None = None,
        passage_recipe: str = "ppr",
    ) -> None:
        if not isinstance(profile, IndexProfile):
            raise ParameterError(
                f"invalid parameter profile: {type(profile).__name__} is not an IndexProfile"
            )
        if not isinstance(passage_recipe, str) or not passage_recipe:
            raise ParameterError(f"invalid parameter passage_recipe: {passage_recipe!r}")
        self.profile = profile
        self.seed_router: Router = HeuristicRouter() if seed_router is None else seed_router
        self.passage_recipe = passage_recipe

    def __repr__(self) -> str:
        return f"IndexRouter({self.profile}, passage_recipe={self.passage_recipe!r})"

    def route(self, query: str, context: Mapping[str, Any] | None = None) -> Route:
        """Route one query.

        Args:
            query: The query text.
            context: Caller context (``goal_id``, ``mission_id``, ``character_id``, ...).

        Returns:
            The seed router's :class:`Route` with the recipe chosen for this data, and a
            last reason saying why.

        Raises:
            ParameterError: ``query`` is not a str or ``context`` is not a Mapping.
        """
        seed = self.seed_router.route(query, context)
        recipe, why = self._recipe(seed)
        return replace(
            seed,
            filters=types.MappingProxyType(dict(seed.filters)),
            recipe=recipe,
            reasons=(*seed.reasons, f"data: recipe={recipe}: {why}"),
        )

    def _recipe(self, seed: Route) -> tuple[str, str]:
        p = self.profile
        if seed.query_type is not QueryType.GENERAL and p.tiers:
            return seed.recipe, f"{seed.query_type.value} scope on an index with tiers"
        if p.facts and any(r.startswith(_RELATIONSHIP) for r in seed.reasons):
            return seed.recipe, "a question about relationships: facts answer it"
        if p.linked_chunks and p.chunk_vectors:
            return self.passage_recipe, "passages linked to a graph"
        if p.chunks and p.chunk_vectors and p.keywords:
            return "hybrid", "passages without a graph (dense + BM25)"
        if p.chunks and p.chunk_vectors:
            return "vector", "passages with vectors only"
        if p.chunks and p.keywords:
            return "bm25", "passages without vectors"
        if p.facts and p.dated_facts:
            return "spreading_activation", "facts with dates, no passages"
        if p.facts:
            return "graph_recall", "facts without dates, no passages"
        return seed.recipe, "nothing the data rules apply to: the seed router's choice"
