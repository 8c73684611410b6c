"""Tenants get dense codes whatever their type: an int tenant is a name, so one tenant
``16_000_000`` is code 0 of a one-tenant graph (no index sized by the tenant's value)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from graphrecall import (
    GraphIndex,
    GraphRAG,
    GraphTables,
    KnowledgeGraph,
    UnknownTenantError,
)
from graphrecall.tables import EmbeddingSet

BIG = 16_000_000


def big_tenant_tables(*, vectors: bool) -> GraphTables:
    """Two entities and one chunk, all in tenant 16,000,000."""
    embeddings = []
    if vectors:
        rng = np.random.default_rng(0)
        embeddings = [
            EmbeddingSet("entity", ["ada", "bob"], rng.standard_normal((2, 8)).astype("f4")),
            EmbeddingSet("chunk", ["c1"], rng.standard_normal((1, 8)).astype("f4")),
        ]
    return GraphTables(
        entities={"id": ["ada", "bob"], "tenant": [BIG, BIG], "name": ["Ada", "Bob"]},
        facts={"subject": ["ada"], "object": ["bob"], "predicate": ["knows"]},
        chunks={"id": ["c1"], "tenant": [BIG], "text": ["Ada knows Bob."]},
        mentions={"chunk": ["c1", "c1"], "entity": ["ada", "bob"]},
        embeddings=embeddings,
    )


@pytest.mark.parametrize("vectors", [False, True], ids=["no vectors", "given vectors"])
def test_one_large_int_tenant_builds_quickly_and_answers(vectors: bool) -> None:
    t0 = time.perf_counter()
    index = GraphIndex.build(big_tenant_tables(vectors=vectors), embedder=None)
    assert time.perf_counter() - t0 < 10.0  # codes sized by the value took minutes
    assert index.graph.tenants.names == (BIG,)
    assert index.tenant_code(BIG) == 0
    assert index.entity_tenant.tolist() == [0, 0] and index.chunk_tenant.tolist() == [0]
    rag = GraphRAG(index, cache=None)
    qv = None if not vectors else index.entity_matrix[0]  # type: ignore[index]
    res = rag.retrieve("Ada", tenant=BIG, query_vector=qv)
    assert res.facts or res.chunks
    assert index.graph.spread(["ada"], tenant=BIG)[0].fact_ids.tolist() == [0]
    with pytest.raises(UnknownTenantError):
        rag.retrieve("Ada", tenant=1, query_vector=qv)
    with pytest.raises(UnknownTenantError):
        index.graph.spread(["ada"], tenant=0)


def test_int_tenants_from_every_entry_point_are_coded_densely() -> None:
    """from_arrays, from_records and tables agree: names sorted, codes dense, chunks'
    tenants encoded by name."""
    by_arrays = KnowledgeGraph.from_arrays(
        fact_subject=[0, 2],
        fact_object=[1, 2],
        entity_tenant=[BIG, BIG, 7],
        chunk_tenant=[7, BIG],
        mention_chunk=[0, 1],
        mention_entity=[2, 0],
    )
    by_records = KnowledgeGraph.from_records(
        [{"id": 0, "tenant": BIG}, {"id": 1, "tenant": BIG}, {"id": 2, "tenant": 7}],
        [{"subject": 0, "object": 1}, {"subject": 2, "object": 2}],
        [{"id": 0, "tenant": 7}, {"id": 1, "tenant": BIG}],
        [{"chunk": 0, "entity": 2}, {"chunk": 1, "entity": 0}],
    )
    by_tables, _ = GraphTables(
        entities={"id": [0, 1, 2], "tenant": [BIG, BIG, 7]},
        facts={"subject": [0, 2], "object": [1, 2]},
        chunks={"id": [0, 1], "tenant": [7, BIG]},
        mentions={"chunk": [0, 1], "entity": [2, 0]},
    ).to_graph()
    for g in (by_arrays, by_records, by_tables):
        assert g.tenants.names == (7, BIG)
        assert g.core.entity_tenants().tolist() == [1, 1, 0]
        assert g.core.chunk_tenants().tolist() == [0, 1]
        assert g.spread([2], tenant=7)[0].fact_ids.tolist() == [1]


def test_a_chunk_tenant_int_is_a_name_not_a_code() -> None:
    """Entities in tenants 5 and 9: a chunk in tenant 1 names no tenant (code 1 is 9)."""
    with pytest.raises(Exception, match=r"^chunks row 0: tenant = 1 is an unknown tenant"):
        KnowledgeGraph.from_arrays(
            fact_subject=[0], fact_object=[None], entity_tenant=[5, 9], chunk_tenant=[1]
        )
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0], fact_object=[None], entity_tenant=[5, 9], chunk_tenant=[9]
    )
    assert g.core.chunk_tenants().tolist() == [1]


def test_given_tenant_vocabulary_still_takes_codes() -> None:
    """With ``tenants=`` the caller says the column holds codes of that vocabulary."""
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0], fact_object=[1], entity_tenant=[1, 1], tenants=["a", "b"]
    )
    assert g.tenants.names == ("a", "b") and g.tenant_code("b") == 1


def test_saved_index_keeps_the_tenant_names(tmp_path: Path) -> None:
    """A saved index stores the tenant names: loaded back, 16,000,000 is still code 0."""
    index = GraphIndex.build(big_tenant_tables(vectors=True), embedder=None)
    index.save(tmp_path / "idx")
    loaded = GraphIndex.load(tmp_path / "idx", embedder=None)
    assert loaded.graph.tenants.names == (BIG,) and loaded.tenant_code(BIG) == 0
    assert loaded.graph.spread(["ada"], tenant=BIG)[0].fact_ids.tolist() == [0]
    with pytest.raises(UnknownTenantError):
        loaded.tenant_code(1)


def test_sparse_int_tenant_names_of_older_graphs_still_resolve() -> None:
    """Graphs built with int tenants as their own codes (names 0..max, as snapshots written
    before hold them) resolve each tenant by name to the same code."""
    old = KnowledgeGraph.from_arrays(
        fact_subject=[0], fact_object=[1], entity_tenant=[2, 2, 0], tenants=[0, 1, 2]
    )
    assert old.tenants.names == (0, 1, 2) and old.tenant_code(2) == 2
    assert old.spread(np.array([0]), tenant=2)[0].fact_ids.tolist() == [0]


def test_vocabulary_codes_look_up_int_names_first() -> None:
    """``Vocab.code`` takes a name before an int code: tenant 7 of ``(7, BIG)`` is code 0."""
    g = KnowledgeGraph.from_arrays(fact_subject=[0], fact_object=[None], entity_tenant=[7, BIG])
    assert g.tenants.code(7) == 0 and g.tenants.code(BIG) == 1
    assert g.tenants.code(1) == 1  # no tenant is named 1: the code, as for other vocabularies
