"""graphrecall: Graph-RAG retrieval in microseconds.

A Rust core (CSR knowledge graph, capped BFS spreading activation, Personalized PageRank,
the scoring formulas of five production Graph-RAG designs, rank fusion) under a thin Python
API. Build a :class:`KnowledgeGraph`, then call its query methods with one query or a batch.

Example:
    >>> import numpy as np
    >>> from graphrecall import KnowledgeGraph
    >>> g = KnowledgeGraph.from_records(
    ...     entities=[{"id": "user"}, {"id": "jacq"}, {"id": "duckdb"}],
    ...     facts=[
    ...         {"subject": "user", "predicate": "works_on", "object": "jacq", "confidence": 0.9},
    ...         {"subject": "jacq", "predicate": "uses", "object": "duckdb", "confidence": 0.8},
    ...     ],
    ... )
    >>> act = g.spread(["user"], max_hops=2, per_entity_limit=10, max_facts=30)
    >>> [g.facts([f])[0]["predicate"] for f in act[0].fact_ids]
    ['works_on', 'uses']
"""

from __future__ import annotations

from . import fusion, recipes, scoring, storage
from ._core import __version__
from .cache import ResultCache
from .embed import (
    CallableEmbedder,
    E5Embedder,
    Embedder,
    SentenceTransformerEmbedder,
    WordLlamaEmbedder,
)
from .errors import (
    DataError,
    GraphRecallError,
    ParameterError,
    QueryError,
    UnknownIdError,
    UnknownTenantError,
)
from .explain import explain
from .graph import DEFAULT_SOURCES, DEFAULT_STATUSES, KnowledgeGraph, RecallPlan, SpreadPlan
from .index import GraphIndex
from .live import LiveGraph
from .rag import GraphRAG
from .recipes import RECIPES, ChunkHit, EntityHit, FactHit, RetrievalResult, Step
from .results import Activation, PageRank, QueryActivation, QueryPageRank, QueryRecall, Recall
from .router import HeuristicRouter, Route
from .storage import GraphTables, SQLiteStore
from .threads import get_threads, set_threads

__all__ = [
    "DEFAULT_SOURCES",
    "DEFAULT_STATUSES",
    "RECIPES",
    "Activation",
    "CallableEmbedder",
    "ChunkHit",
    "DataError",
    "E5Embedder",
    "Embedder",
    "EntityHit",
    "FactHit",
    "GraphIndex",
    "GraphRAG",
    "GraphRecallError",
    "GraphTables",
    "HeuristicRouter",
    "KnowledgeGraph",
    "LiveGraph",
    "PageRank",
    "ParameterError",
    "QueryActivation",
    "QueryError",
    "QueryPageRank",
    "QueryRecall",
    "Recall",
    "RecallPlan",
    "ResultCache",
    "RetrievalResult",
    "Route",
    "SQLiteStore",
    "SentenceTransformerEmbedder",
    "SpreadPlan",
    "Step",
    "UnknownIdError",
    "UnknownTenantError",
    "WordLlamaEmbedder",
    "__version__",
    "explain",
    "fusion",
    "get_threads",
    "recipes",
    "scoring",
    "set_threads",
    "storage",
]
