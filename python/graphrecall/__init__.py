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

import sys
import types
from typing import TYPE_CHECKING, Any

from ._core import __version__
from ._threads import get_threads, set_threads
from .errors import (
    CorruptStoreError,
    DataError,
    GraphRecallError,
    NotAStoreError,
    OutOfMemoryError,
    ParameterError,
    QueryError,
    SchemaVersionError,
    StorageError,
    UnknownIdError,
    UnknownTenantError,
)

if TYPE_CHECKING:
    from . import fusion, recipes, scoring, storage
    from .cache import ResultCache
    from .embed import (
        CallableEmbedder,
        E5Embedder,
        Embedder,
        SentenceTransformerEmbedder,
        WordLlamaEmbedder,
    )
    from .explain import explain
    from .graph import DEFAULT_SOURCES, DEFAULT_STATUSES, KnowledgeGraph, RecallPlan, SpreadPlan
    from .index import GraphIndex
    from .live import LiveGraph
    from .rag import GraphRAG
    from .recipes import (
        PPR,
        RECIPES,
        ChunkBoost,
        ChunkHit,
        EntityHit,
        FactHit,
        GraphRecall,
        HybridExpand,
        Recipe,
        RetrievalResult,
        RoutedHybrid,
        SpreadingActivation,
        Step,
        get_recipe,
        list_recipe_names,
        register_recipe,
    )
    from .results import (
        Activation,
        PageRank,
        QueryActivation,
        QueryPageRank,
        QueryRecall,
        Recall,
    )
    from .router import HeuristicRouter, Route
    from .storage import SQLiteStore
    from .tables import GraphTables

#: The module each public name comes from, imported when the name is first used: importing
#: graphrecall loads neither numpy nor any engine.
_LAZY = {
    "ResultCache": "cache",
    "CallableEmbedder": "embed",
    "E5Embedder": "embed",
    "Embedder": "embed",
    "SentenceTransformerEmbedder": "embed",
    "WordLlamaEmbedder": "embed",
    "explain": "explain",
    "DEFAULT_SOURCES": "graph",
    "DEFAULT_STATUSES": "graph",
    "KnowledgeGraph": "graph",
    "RecallPlan": "graph",
    "SpreadPlan": "graph",
    "GraphIndex": "index",
    "LiveGraph": "live",
    "GraphRAG": "rag",
    "RECIPES": "recipes",
    "ChunkHit": "recipes",
    "EntityHit": "recipes",
    "FactHit": "recipes",
    "RetrievalResult": "recipes",
    "Step": "recipes",
    "PPR": "recipes",
    "ChunkBoost": "recipes",
    "GraphRecall": "recipes",
    "HybridExpand": "recipes",
    "Recipe": "recipes",
    "RoutedHybrid": "recipes",
    "SpreadingActivation": "recipes",
    "get_recipe": "recipes",
    "list_recipe_names": "recipes",
    "register_recipe": "recipes",
    "Activation": "results",
    "PageRank": "results",
    "QueryActivation": "results",
    "QueryPageRank": "results",
    "QueryRecall": "results",
    "Recall": "results",
    "HeuristicRouter": "router",
    "Route": "router",
    "GraphTables": "tables",
    "SQLiteStore": "storage",
}
_SUBMODULES = ("fusion", "recipes", "scoring", "storage")


def __getattr__(name: str) -> Any:
    """A public name, from its module (imported on first use)."""
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """Keeps ``graphrecall.explain`` the function: importing the submodule of that name
    would otherwise replace the package attribute with the module."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "explain" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "DEFAULT_SOURCES",
    "DEFAULT_STATUSES",
    "PPR",
    "RECIPES",
    "Activation",
    "CallableEmbedder",
    "ChunkBoost",
    "ChunkHit",
    "CorruptStoreError",
    "DataError",
    "E5Embedder",
    "Embedder",
    "EntityHit",
    "FactHit",
    "GraphIndex",
    "GraphRAG",
    "GraphRecall",
    "GraphRecallError",
    "GraphTables",
    "HeuristicRouter",
    "HybridExpand",
    "KnowledgeGraph",
    "LiveGraph",
    "NotAStoreError",
    "OutOfMemoryError",
    "PageRank",
    "ParameterError",
    "QueryActivation",
    "QueryError",
    "QueryPageRank",
    "QueryRecall",
    "Recall",
    "RecallPlan",
    "Recipe",
    "ResultCache",
    "RetrievalResult",
    "Route",
    "RoutedHybrid",
    "SQLiteStore",
    "SchemaVersionError",
    "SentenceTransformerEmbedder",
    "SpreadPlan",
    "SpreadingActivation",
    "Step",
    "StorageError",
    "UnknownIdError",
    "UnknownTenantError",
    "WordLlamaEmbedder",
    "__version__",
    "explain",
    "fusion",
    "get_recipe",
    "get_threads",
    "list_recipe_names",
    "recipes",
    "register_recipe",
    "scoring",
    "set_threads",
    "storage",
]
