"""No silent fallbacks: an embedder failure is logged and named in the result, and stored
vectors of another dimension are an error rather than silently re-embedded (issue 17.12)."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphRAG, GraphTables
from graphrecall.demo import demo_data, demo_tables
from graphrecall.embed import CallableEmbedder, EmbeddingError
from graphrecall.index import GraphIndex
from graphrecall.tables import EmbeddingSet

NOW = 1_767_225_600


def _hash_vectors(texts: list[str]) -> Any:
    """8 numbers from each text's hash: a tiny deterministic embedder."""
    out = np.empty((len(texts), 8), dtype=np.float32)
    for i, t in enumerate(texts):
        out[i] = np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) + 1.0
    return out


class VendorError(Exception):
    """An embedding service's own exception class."""


@pytest.fixture(scope="module")
def tables() -> GraphTables:
    return demo_tables(demo_data())


@pytest.mark.parametrize("exc", [VendorError("quota exceeded"), KeyError("token"), OSError("x")])
def test_an_embedder_failure_falls_back_with_a_warning(
    tables: GraphTables, exc: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(texts: list[str]) -> Any:
        raise exc

    emb = CallableEmbedder(fail, dim=8, passage_fn=_hash_vectors)
    rag = GraphRAG(GraphIndex.build(tables, embedder=emb), cache=None)
    with caplog.at_level(logging.WARNING, logger="graphrecall"):
        res = rag.retrieve("What is JACQ?", recipe="spreading_activation", tenant="alice", now=NOW)
    name = type(exc).__name__
    assert res.fallback is not None and res.fallback.startswith(f"embedding failed: {name}")
    assert any(name in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_stored_vectors_of_another_dimension_are_an_error(tables: GraphTables) -> None:
    ids = tables.entities["id"]
    stored = EmbeddingSet("entity", ids, np.ones((len(ids), 4), dtype=np.float32), "m4")
    t = GraphTables(
        entities=tables.entities,
        facts=tables.facts,
        chunks=tables.chunks,
        mentions=tables.mentions,
        embeddings=[stored],
    )
    emb = CallableEmbedder(_hash_vectors, dim=8)
    with pytest.raises(EmbeddingError, match=r"stored entity vectors are 4-d \(made by m4\).*8-d"):
        GraphIndex.build(t, embedder=emb)
    # Without stored vectors the rows are embedded, as asked.
    t.embeddings = []
    assert GraphIndex.build(t, embedder=emb).entity_vectors is not None
