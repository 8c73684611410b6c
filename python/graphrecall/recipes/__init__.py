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
                                 dense chunk scores (HippoRAG) -> re-rank from the top
                                 passage (bridge entities, names, missing words)
``vector``                 --    baseline: top chunks by cosine
``bm25``                   --    baseline: top chunks by BM25
``hybrid``                 --    baseline: cosine and BM25 rankings fused by RRF, no graph
=========================  ====  =========================================================

Each recipe is a pipeline of shared stages (:mod:`.stages`, :mod:`.anchoring`, :mod:`.base`)
registered by name (:func:`get_recipe`, :func:`list_recipe_names`, :func:`register_recipe`;
third-party packages add theirs through the ``graphrecall.recipes`` entry-point group). A
recipe's frozen parameter dataclass is its argument: ``chunk_boost(index, q, ChunkBoost(k=10))``
or, by name, ``chunk_boost(index, q, k=10)``; one query or a batch, the batch embedded in one
call and its graph phase run in one native call.
"""

from __future__ import annotations

import sys as _sys

from .baselines import (
    BM25,
    BM25_RECIPE,
    HYBRID_RECIPE,
    VECTOR_RECIPE,
    Hybrid,
    Vector,
    bm25,
    hybrid,
    vector,
)
from .chunk_boost import ChunkBoost, ChunkBoostParams, chunk_boost
from .graph_recall import GraphRecall, GraphRecallParams, graph_recall
from .hits import ChunkHit, EntityHit, FactHit, RetrievalResult, Step
from .hybrid_expand import HybridExpand, HybridExpandParams, hybrid_expand
from .overrides import RecipeOverrides
from .ppr import PPR, PPRParams, ppr
from .registry import (
    ENTRY_POINT_GROUP,
    PARAMS,
    RECIPES,
    FunctionRecipe,
    Recipe,
    RecipeParams,
    get_recipe,
    list_recipe_names,
    register_recipe,
)
from .routed_hybrid import RoutedHybrid, RoutedHybridParams, routed_hybrid
from .spreading_activation import (
    SpreadingActivation,
    SpreadingActivationParams,
    spreading_activation,
)

__all__ = [
    "BM25",
    "ENTRY_POINT_GROUP",
    "PARAMS",
    "PPR",
    "RECIPES",
    "ChunkBoost",
    "ChunkBoostParams",
    "ChunkHit",
    "EntityHit",
    "FactHit",
    "FunctionRecipe",
    "GraphRecall",
    "GraphRecallParams",
    "Hybrid",
    "HybridExpand",
    "HybridExpandParams",
    "PPRParams",
    "Recipe",
    "RecipeOverrides",
    "RecipeParams",
    "RetrievalResult",
    "RoutedHybrid",
    "RoutedHybridParams",
    "SpreadingActivation",
    "SpreadingActivationParams",
    "Step",
    "Vector",
    "bm25",
    "chunk_boost",
    "get_recipe",
    "graph_recall",
    "hybrid",
    "hybrid_expand",
    "list_recipe_names",
    "ppr",
    "register_recipe",
    "routed_hybrid",
    "spreading_activation",
    "vector",
]

# The built-in recipes, in the order of the source designs.
for _name in (
    "spreading_activation",
    "chunk_boost",
    "routed_hybrid",
    "hybrid_expand",
    "graph_recall",
    "ppr",
):
    register_recipe(_sys.modules[f"{__name__}.{_name}"].RECIPE)
del _name
# The baselines, after the designs.
for _recipe in (VECTOR_RECIPE, BM25_RECIPE, HYBRID_RECIPE):
    register_recipe(_recipe)
del _recipe
