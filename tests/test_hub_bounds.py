"""A hub does not make results grow with its degree: every recipe's output is bounded by its
parameters, and what is kept of a hub's neighbourhood is its nearest, then strongest, part."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from graphrecall import GraphRAG
from graphrecall.errors import ParameterError
from graphrecall.index import GraphIndex
from graphrecall.recipes import HybridExpand, RetrievalResult, list_recipe_names
from graphrecall.tables import EmbeddingSet, GraphTables

N = 2000  # leaves around one hub


@dataclass
class Star:
    rag: GraphRAG
    hub_vector: npt.NDArray[np.float32]
    strength: dict[str, float]

    def retrieve(self, recipe: Any, **params: Any) -> RetrievalResult:
        return self.rag.retrieve(
            "Hub", recipe=recipe, tenant="t", query_vector=self.hub_vector, **params
        )


@pytest.fixture(scope="module")
def star() -> Star:
    rng = np.random.default_rng(7)
    leaves = [f"e{i}" for i in range(N)]
    ents = {
        "id": ["hub", *leaves],
        "tenant": ["t"] * (N + 1),
        "name": ["Hub"] + [f"Leaf {i}" for i in range(N)],
    }
    # Strengths 1..10 in a shuffled order: the strongest leaves are not the first ones.
    strength = rng.permutation(np.linspace(1.0, 10.0, N)).tolist()
    facts = {
        "subject": ["hub"] * N,
        "object": leaves,
        "predicate": ["links"] * N,
        "strength": strength,
    }
    chunks = {
        "id": [f"c{i}" for i in range(N)],
        "tenant": ["t"] * N,
        "text": [f"Hub links Leaf {i}." for i in range(N)],
    }
    mentions = {"chunk": chunks["id"] * 2, "entity": ["hub"] * N + leaves}
    ev = rng.normal(size=(N + 1, 16)).astype(np.float32)
    cv = rng.normal(size=(N, 16)).astype(np.float32)
    tables = GraphTables(
        entities=ents,
        facts=facts,
        chunks=chunks,
        mentions=mentions,
        embeddings=[
            EmbeddingSet("entity", ents["id"], ev, "r"),
            EmbeddingSet("chunk", chunks["id"], cv, "r"),
        ],
    )
    rag = GraphRAG(GraphIndex.build(tables, embedder=None), cache=None)
    return Star(rag, ev[0], dict(zip(leaves, strength, strict=True)))


def _top(values: Any, n: int) -> list[float]:
    return sorted(values, reverse=True)[:n]


@pytest.mark.parametrize("recipe", list_recipe_names())
def test_every_recipe_is_bounded_on_a_hub(star: Star, recipe: str) -> None:
    res = star.retrieve(recipe)
    for what in (res.entities, res.facts, res.chunks):
        assert len(what) <= 64, (recipe, len(res.entities), len(res.facts), len(res.chunks))
    block = star.rag.context(res)
    assert len(block.items) <= 64 + len(res.entities)


def test_hybrid_expand_keeps_the_strongest_relationships(star: Star) -> None:
    res = star.retrieve(HybridExpand(max_facts=5, max_related=7))
    assert _top((f.strength for f in res.facts), 5) == pytest.approx(
        _top(star.strength.values(), 5)
    )
    related = [e for e in res.entities if e.hop > 0]
    assert len(related) == 7 and res.stats["related_entities"] == N
    assert _top((star.strength[e.id] for e in related), 7) == pytest.approx(
        _top(star.strength.values(), 7)
    )
    # The whole neighbourhood on request.
    full = star.retrieve(HybridExpand(max_facts=N, max_related=N))
    assert len(full.facts) == N and len([e for e in full.entities if e.hop > 0]) == N


def test_chunk_boost_lists_the_strongest_related(star: Star) -> None:
    res = star.retrieve("chunk_boost", max_related=3)
    anchors = {e.id for e in res.anchors}
    related = [e for e in res.entities if e.hop > 0]
    others = [w for e, w in star.strength.items() if e not in anchors]
    assert res.stats["related_entities"] == len(others) and len(related) == 3
    assert _top((star.strength[e.id] for e in related), 3) == pytest.approx(_top(others, 3))
    with pytest.raises(ParameterError, match="max_related"):
        star.retrieve("chunk_boost", max_related=-1)
