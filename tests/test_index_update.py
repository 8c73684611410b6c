"""Incremental index updates: unchanged vectors and vector sub-indexes are kept, only new or
edited texts are embedded, and the result answers as a fresh build does."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphRAG, GraphTables
from graphrecall.anchors.vectors import VectorIndex
from graphrecall.embed import CallableEmbedder
from graphrecall.errors import ParameterError
from graphrecall.index import GraphIndex

DIM = 16


class CountingEmbedder(CallableEmbedder):
    """A deterministic bag-of-characters embedder that counts what it embeds."""

    def __init__(self) -> None:
        super().__init__(self._embed, dim=DIM)
        self.embedded: list[str] = []
        self.model_name = "counting"

    def _embed(self, texts: list[str]) -> Any:
        self.embedded.extend(texts)
        out = np.zeros((len(texts), DIM))
        for i, t in enumerate(texts):
            for j, ch in enumerate(t.encode()):
                out[i, (ch * 7 + j) % DIM] += 1.0 + (j % 3)
            out[i, len(t) % DIM] += 0.5
        return out


def _tables(n_per_tenant: int = 300, extra: int = 0) -> GraphTables:
    """Three tenants of entities in a chain, one chunk per entity."""
    tenants = ["a", "b", "c"]
    ids, names, ten = [], [], []
    for t in tenants:
        for i in range(n_per_tenant + (extra if t == "b" else 0)):
            ids.append(f"{t}{i}")
            names.append(f"entity {t} number {i}")
            ten.append(t)
    pairs = [(x, y) for x, y in itertools.pairwise(ids) if x[0] == y[0]]
    subj = [x for x, _ in pairs]
    obj = [y for _, y in pairs]
    return GraphTables(
        entities={"id": ids, "name": names, "tenant": ten},
        facts={
            "id": list(range(len(subj))),
            "subject": subj,
            "object": obj,
            "predicate": ["next"] * len(subj),
            "confidence": [0.9] * len(subj),
        },
        chunks={
            "id": [f"c-{x}" for x in ids],
            "text": [f"about {n}" for n in names],
            "tenant": ten,
        },
        mentions={"chunk": [f"c-{x}" for x in ids], "entity": ids},
    )


def _append_entity_to_b(tables: GraphTables, k: int) -> GraphTables:
    """``tables`` with k more entities (and chunks) of tenant b appended at the end."""
    e, c, m = tables.entities, tables.chunks, tables.mentions
    assert c is not None and m is not None
    new_ids = [f"bnew{i}" for i in range(k)]
    return GraphTables(
        entities={
            "id": [*e["id"].tolist(), *new_ids],
            "name": [*e["name"].tolist(), *[f"fresh entity {i}" for i in range(k)]],
            "tenant": [*e["tenant"].tolist(), *["b"] * k],
        },
        facts=tables.facts,
        chunks={
            "id": [*c["id"].tolist(), *[f"c-{x}" for x in new_ids]],
            "text": [*c["text"].tolist(), *[f"fresh chunk {i}" for i in range(k)]],
            "tenant": [*c["tenant"].tolist(), *["b"] * k],
        },
        mentions={
            "chunk": [*m["chunk"].tolist(), *[f"c-{x}" for x in new_ids]],
            "entity": [*m["entity"].tolist(), *new_ids],
        },
    )


@pytest.fixture()
def base() -> tuple[GraphIndex, CountingEmbedder]:
    emb = CountingEmbedder()
    return GraphIndex.build(_tables(), embedder=emb, vector_backend="hnsw"), emb


def test_a_fact_only_update_keeps_every_vector_and_sub_index(
    base: tuple[GraphIndex, CountingEmbedder],
) -> None:
    index, emb = base
    t = index.tables
    facts = {k: v.tolist() for k, v in t.facts.items()}
    facts["id"].append(10_000)
    facts["subject"].append("a0")
    facts["object"].append("a5")
    facts["predicate"].append("likes")
    facts["confidence"].append(0.5)
    t2 = GraphTables(entities=t.entities, facts=facts, chunks=t.chunks, mentions=t.mentions)
    emb.embedded.clear()
    new = GraphIndex.build(t2, embedder=emb, vector_backend="hnsw", previous=index)
    assert emb.embedded == []
    assert new.reused["entity"]["vectors_kept"] == new.graph.n_entities
    assert new.reused["entity"]["hnsw_tenants_reused"] == 3
    assert new.reused["chunk"]["hnsw_tenants_reused"] == 3
    assert new.entity_vectors is not None and index.entity_vectors is not None
    for code in new.entity_vectors.tenants().tolist():
        assert new.entity_vectors._parts[code].hnsw is index.entity_vectors._parts[code].hnsw
    assert new.graph.n_facts == index.graph.n_facts + 1


def test_new_entities_extend_one_tenant_and_answer_as_a_fresh_build(
    base: tuple[GraphIndex, CountingEmbedder],
) -> None:
    index, emb = base
    t2 = _append_entity_to_b(index.tables, 5)
    emb.embedded.clear()
    new = GraphIndex.build(t2, embedder=emb, vector_backend="hnsw", previous=index)
    # Only the 5 new names and 5 new chunk texts were embedded.
    assert sorted(emb.embedded) == sorted(
        [f"fresh entity {i}" for i in range(5)] + [f"fresh chunk {i}" for i in range(5)]
    )
    assert new.reused["entity"] == {
        "vectors_kept": 900,
        "vectors_embedded": 5,
        "hnsw_tenants_reused": 2,
        "hnsw_tenants_extended": 1,
    }
    fresh = GraphIndex.build(t2, embedder=CountingEmbedder(), vector_backend="hnsw")
    np.testing.assert_array_equal(new.entity_matrix, fresh.entity_matrix)  # type: ignore[arg-type]
    assert new.entity_vectors is not None and fresh.entity_vectors is not None
    b = new.graph.tenant_code("b")
    for row in range(new.graph.n_entities - 5, new.graph.n_entities):
        q = fresh.entity_matrix[row]  # type: ignore[index]
        got = new.entity_vectors.search(q, 3, tenant=b).query(0)[0]
        want = fresh.entity_vectors.search(q, 3, tenant=b).query(0)[0]
        assert got[0] == want[0] == row
    # HNSW is approximate (and built in threads): recipes are compared where search is
    # exact, an exact-backend index updated the same way against a fresh exact build.
    exact_prev = GraphIndex.build(index.tables, embedder=CountingEmbedder(), vector_backend="exact")
    exact_new = GraphIndex.build(
        t2, embedder=exact_prev.embedder, vector_backend="exact", previous=exact_prev
    )
    exact_fresh = GraphIndex.build(t2, embedder=CountingEmbedder(), vector_backend="exact")
    rag_new, rag_fresh = GraphRAG(exact_new, cache=None), GraphRAG(exact_fresh, cache=None)
    for q in ["fresh entity 3", "entity b number 7", "about entity a number 2"]:
        for recipe in ("spreading_activation", "graph_recall", "chunk_boost"):
            tenant = "b" if "fresh" in q or " b " in q else "a"
            x = rag_new.retrieve(q, recipe=recipe, tenant=tenant, now=0).to_dict()
            y = rag_fresh.retrieve(q, recipe=recipe, tenant=tenant, now=0).to_dict()
            x.pop("timings")
            y.pop("timings")
            assert x == y


def test_edited_and_deleted_rows_rebuild_only_their_tenant(
    base: tuple[GraphIndex, CountingEmbedder],
) -> None:
    index, emb = base
    t = index.tables
    names = t.entities["name"].copy()
    names[0] = "renamed entity"  # tenant a, row 0: its vector changes
    t2 = GraphTables(
        entities={**t.entities, "name": names}, facts=t.facts, chunks=t.chunks, mentions=t.mentions
    )
    emb.embedded.clear()
    new = GraphIndex.build(t2, embedder=emb, vector_backend="hnsw", previous=index)
    assert emb.embedded == ["renamed entity"]
    assert new.reused["entity"]["hnsw_tenants_built"] == 1
    assert new.reused["entity"]["hnsw_tenants_reused"] == 2
    assert new.reused["chunk"]["hnsw_tenants_reused"] == 3
    a = new.graph.tenant_code("a")
    assert new.entity_vectors is not None
    assert new.entity_vectors.search(new.entity_matrix[0], 1, tenant=a).query(0)[0][0] == 0  # type: ignore[index]


def test_stored_vectors_are_compared_not_trusted(
    base: tuple[GraphIndex, CountingEmbedder],
) -> None:
    index, emb = base
    sets = index.embedding_sets()
    ent = sets[0]
    vec = ent.vectors.copy()
    vec[1] = vec[2]  # a stored vector changed under the same id
    from graphrecall.storage import EmbeddingSet

    t = index.tables
    t2 = GraphTables(
        entities=t.entities,
        facts=t.facts,
        chunks=t.chunks,
        mentions=t.mentions,
        embeddings=[EmbeddingSet("entity", ent.ids, vec, ent.model), sets[1]],
    )
    emb.embedded.clear()
    new = GraphIndex.build(t2, embedder=emb, vector_backend="hnsw", previous=index)
    assert emb.embedded == []
    assert new.reused["entity"]["vectors_kept"] == new.graph.n_entities - 1
    assert new.reused["entity"]["hnsw_tenants_built"] == 1


def test_rag_update_swaps_in_the_incremental_index(
    base: tuple[GraphIndex, CountingEmbedder],
) -> None:
    index, emb = base
    rag = GraphRAG(index)
    before = rag.generation
    emb.embedded.clear()
    new = rag.update(_append_entity_to_b(index.tables, 1))
    assert rag.index is new and rag.generation == before + 1
    assert len(emb.embedded) == 2
    res = rag.retrieve("fresh entity 0", recipe="graph_recall", tenant="b", now=0)
    assert res.anchors[0].id == "bnew0"


def test_reuse_arguments_are_checked() -> None:
    x = np.eye(4, dtype=np.float32)
    prev = VectorIndex(x, backend="hnsw")
    with pytest.raises(ParameterError, match="old rows must be 4 integers"):
        VectorIndex(x, backend="hnsw", reuse=(prev, np.zeros(3, np.int64)))
    with pytest.raises(ParameterError, match=r"old rows must be in -1\.\.3"):
        VectorIndex(x, backend="hnsw", reuse=(prev, np.array([0, 1, 2, 9])))
    with pytest.raises(ParameterError, match="is not a VectorIndex"):
        VectorIndex(x, backend="hnsw", reuse=("nope", np.arange(4)))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="previous"):
        GraphIndex.build(_tables(5), embedder=None, previous="nope")  # type: ignore[arg-type]
    # Another HNSW configuration: nothing is shared, everything is built.
    other = VectorIndex(x, backend="hnsw", connectivity=8, reuse=(prev, np.arange(4)))
    assert set(other.hnsw_origin.values()) == {"built"}


def test_an_update_of_a_loaded_index_extends_its_memory_mapped_sub_index(
    base: tuple[GraphIndex, CountingEmbedder], tmp_path: Any
) -> None:
    index, emb = base
    index.save(tmp_path / "idx")
    loaded = GraphIndex.load(tmp_path / "idx", embedder=emb)
    assert loaded.entity_vectors is not None and loaded.entity_vectors.hnsw_origin == {}
    emb.embedded.clear()
    new = GraphIndex.build(
        _append_entity_to_b(loaded.tables, 2), embedder=emb, vector_backend="hnsw", previous=loaded
    )
    assert len(emb.embedded) == 4
    assert new.reused["entity"]["hnsw_tenants_extended"] == 1
    b = new.graph.tenant_code("b")
    row = new.graph.n_entities - 1
    assert new.entity_vectors is not None
    assert new.entity_vectors.search(new.entity_matrix[row], 1, tenant=b).query(0)[0][0] == row  # type: ignore[index]
