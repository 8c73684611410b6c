"""Keyword overrides of each recipe's parameters, for the type checker.

``recipe="chunk_boost", k=10`` is the by-name shorthand of ``recipe=ChunkBoost(k=10)``: these
``TypedDict`` s type its keywords (``**overrides: Unpack[ChunkBoostOverrides]``), so that a
misspelt parameter fails in mypy as it fails at run time. :class:`RecipeOverrides` is the
union of every recipe's names (a parameter of another recipe is refused at run time).
``tests/test_recipes.py`` checks that each one lists its dataclass's fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from ..scoring import FactScoreProfile, GraphProximityProfile, RerankProfile

__all__ = [
    "BM25Overrides",
    "ChunkBoostOverrides",
    "GraphRecallOverrides",
    "HybridExpandOverrides",
    "HybridOverrides",
    "PPROverrides",
    "RecipeOverrides",
    "RoutedHybridOverrides",
    "SpreadingActivationOverrides",
    "VectorOverrides",
]


class SpreadingActivationOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`SpreadingActivation`."""

    anchors: int
    max_hops: int
    per_entity_limit: int | None
    max_facts: int | None
    statuses: tuple[str, ...] | None
    direction: str
    min_anchor_score: float | None
    fallback: str | None
    top_k: int | None
    profile: FactScoreProfile
    passages: int


class ChunkBoostOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`ChunkBoost`."""

    k: int
    candidate_factor: int
    query_entities: int
    max_hops: int
    entity_boost_direct: float
    entity_boost_indirect: float
    use_relationship_strength: bool
    use_centrality: bool
    relationship_types: tuple[str, ...] | None
    max_sequence_order: int | None
    expand_graph: bool
    expand_primary_chunks: bool
    fallback: str | None
    max_related: int


class RoutedHybridOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`RoutedHybrid`."""

    limit: int
    profile: RerankProfile
    context_filters: bool


class HybridExpandOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`HybridExpand`."""

    k: int
    candidate_multiplier: int
    vector_weight: float
    text_weight: float
    text_score: str
    keyword_mode: Literal["or", "and"]
    recognize_limit: int
    embedding_entities: int
    embedding_min_score: float
    max_hops: int
    relationship_types: tuple[str, ...] | None
    alpha: float
    beta: float
    max_graph_chunks: int
    max_related: int
    max_facts: int
    use_graph: bool
    profile: GraphProximityProfile


class GraphRecallOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`GraphRecall`."""

    entities: int
    min_match: float | None
    fuzzy: bool
    max_hops: int
    recall_limit: int
    dedupe: str
    chunks: int
    vector_chunks: int
    rrf_k: float


class PPROverrides(TypedDict, total=False):
    """Keyword overrides of :class:`PPR`."""

    k: int
    seed_chunks: int
    seed_temperature: float
    entities: int
    recognize: bool
    recognize_limit: int
    entity_seed_share: float
    specificity: bool
    damping: float
    weight: Literal["strength", "confidence", "uniform"]
    graph_weight: float
    name_boost: float
    bridge: float
    cover: float
    terms: float
    dense_k: int | None
    graph_k: int
    epsilon: float | None
    max_iter: int
    tol: float


class VectorOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`Vector`."""

    k: int


class BM25Overrides(TypedDict, total=False):
    """Keyword overrides of :class:`BM25`."""

    k: int
    keyword_mode: Literal["or", "and"]


class HybridOverrides(TypedDict, total=False):
    """Keyword overrides of :class:`Hybrid`."""

    k: int
    candidates: int
    rrf_k: float
    keyword_mode: Literal["or", "and"]


class RecipeOverrides(TypedDict, total=False):
    """Keyword overrides of any recipe (the by-name form of ``GraphRAG.retrieve``)."""

    anchors: int
    max_hops: int
    per_entity_limit: int | None
    max_facts: int | None
    statuses: tuple[str, ...] | None
    direction: str
    min_anchor_score: float | None
    fallback: str | None
    top_k: int | None
    profile: FactScoreProfile | RerankProfile | GraphProximityProfile
    k: int
    candidate_factor: int
    query_entities: int
    entity_boost_direct: float
    entity_boost_indirect: float
    use_relationship_strength: bool
    use_centrality: bool
    relationship_types: tuple[str, ...] | None
    max_sequence_order: int | None
    expand_graph: bool
    expand_primary_chunks: bool
    limit: int
    context_filters: bool
    candidate_multiplier: int
    vector_weight: float
    text_weight: float
    text_score: str
    keyword_mode: Literal["or", "and"]
    recognize_limit: int
    embedding_entities: int
    embedding_min_score: float
    alpha: float
    beta: float
    max_graph_chunks: int
    max_related: int
    use_graph: bool
    entities: int
    min_match: float | None
    fuzzy: bool
    recall_limit: int
    dedupe: str
    chunks: int
    vector_chunks: int
    rrf_k: float
    seed_chunks: int
    seed_temperature: float
    recognize: bool
    entity_seed_share: float
    specificity: bool
    damping: float
    weight: Literal["strength", "confidence", "uniform"]
    graph_weight: float
    name_boost: float
    bridge: float
    cover: float
    terms: float
    dense_k: int | None
    graph_k: int
    epsilon: float | None
    max_iter: int
    tol: float
    candidates: int
    passages: int
