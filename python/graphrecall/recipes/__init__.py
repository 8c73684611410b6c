"""The retrieval recipes: the five source designs and HippoRAG's PPR, on one engine.

=========================  ====  =========================================================
recipe                     seed  pipeline
=========================  ====  =========================================================
``spreading_activation``   000   top-3 vector anchors -> 2-hop BFS (10 facts per entity,
                                 staged/confirmed, max 30) -> scoreFact -> narrative
``chunk_boost``            001   k x 2 chunks + top-3 query entities -> traversal ->
                                 direct / indirect mention boosts -> re-rank -> expansion
``routed_hybrid``          002   routing -> metadata filters -> per-tier vector top-k ->
                                 rerank (rank, recency, confidence, access)
``hybrid_expand``          003   vector + BM25 merge -> n-gram entity recognition -> graph
                                 expansion via mentions -> 0.7 / 0.3 additive merge
``graph_recall``           004   top-5 entity matches (+ fuzzy) -> BFS both ways ->
                                 composite score -> dedupe -> top 10; RRF with vectors
``ppr``                    --    Personalized PageRank from recognised entities, fused with
                                 dense chunk scores (HippoRAG)
=========================  ====  =========================================================

Every recipe is a function ``recipe(index, queries, *, tenant=None, now=None,
query_vectors=None, **params) -> list[RetrievalResult]``: one query or a batch, the batch
embedded in one call and its graph phase run in one native call; ``params`` override the
recipe's parameter dataclass, whose defaults are the source's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import ChunkHit, EntityHit, FactHit, RetrievalResult, Step
from .chunk_boost import ChunkBoostParams, chunk_boost
from .graph_recall import GraphRecallParams, graph_recall
from .hybrid_expand import HybridExpandParams, hybrid_expand
from .ppr import PPRParams, ppr
from .routed_hybrid import RoutedHybridParams, routed_hybrid
from .spreading_activation import SpreadingActivationParams, spreading_activation

__all__ = [
    "PARAMS",
    "RECIPES",
    "ChunkBoostParams",
    "ChunkHit",
    "EntityHit",
    "FactHit",
    "GraphRecallParams",
    "HybridExpandParams",
    "PPRParams",
    "RetrievalResult",
    "RoutedHybridParams",
    "SpreadingActivationParams",
    "Step",
    "chunk_boost",
    "graph_recall",
    "hybrid_expand",
    "ppr",
    "routed_hybrid",
    "spreading_activation",
]

#: The recipes by name.
RECIPES: dict[str, Callable[..., list[RetrievalResult]]] = {
    "spreading_activation": spreading_activation,
    "chunk_boost": chunk_boost,
    "routed_hybrid": routed_hybrid,
    "hybrid_expand": hybrid_expand,
    "graph_recall": graph_recall,
    "ppr": ppr,
}

#: Each recipe's parameter dataclass (its defaults are the source's).
PARAMS: dict[str, Any] = {
    "spreading_activation": SpreadingActivationParams,
    "chunk_boost": ChunkBoostParams,
    "routed_hybrid": RoutedHybridParams,
    "hybrid_expand": HybridExpandParams,
    "graph_recall": GraphRecallParams,
    "ppr": PPRParams,
}
