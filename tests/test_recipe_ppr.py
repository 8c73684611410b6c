"""The ``ppr`` recipe against a slow reference built from the PageRank reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY, GraphData, graph_data
from graphrecall.recipes import ppr
from hypothesis import given
from hypothesis import strategies as st
from reference import graph_ref, recipes_ref
from test_recipes import _query, build


def reference(
    data: GraphData,
    ent_vec: np.ndarray,
    chunk_vec: np.ndarray,
    tenant: Any,
    q: np.ndarray,
    k: int,
    *,
    seed_chunks: int = 2,
    entities: int = 0,
    share: float = 0.1,
    graph_weight: float = 1.0,
    weight: str = "uniform",
) -> list[tuple[Any, float]]:
    """The recipe's module doc, literally, with names recognised from nothing (query "q");
    the keyword defaults are the recipe's."""
    ents = data.entities
    chunks = data.chunks
    mentions = data.mentions
    n_chunks_of: dict[Any, int] = {}
    for m in mentions:
        n_chunks_of[m["entity"]] = n_chunks_of.get(m["entity"], 0) + 1

    def spec(e: Any) -> float:
        return 1.0 / max(n_chunks_of.get(e, 0), 1)

    # Entity seeds: top `entities` by cosine x specificity.
    ent_mass = {
        ents[r]["id"]: max(s, 0.0) * spec(ents[r]["id"])
        for r, s in recipes_ref.top_cosine(
            ent_vec, [e["tenant"] for e in ents], tenant, q, entities
        )
    }
    # Passage seeds: top `seed_chunks` chunks, softmax(cos / 0.02), split by count x
    # specificity.
    top = recipes_ref.top_cosine(chunk_vec, [c["tenant"] for c in chunks], tenant, q, seed_chunks)
    chunk_mass: dict[Any, float] = {}
    if top:
        best = max(s for _, s in top)
        w = [math.exp((s - best) / 0.02) for _, s in top]
        for (r, _), wc in zip(top, w, strict=True):
            ms = [m for m in mentions if m["chunk"] == chunks[r]["id"]]
            tot = sum(m["count"] for m in ms)
            x = [m["count"] / tot / max(n_chunks_of[m["entity"]], 1) for m in ms]
            for m, xe in zip(ms, x, strict=True):
                chunk_mass[m["entity"]] = chunk_mass.get(m["entity"], 0.0) + wc / sum(w) * xe / sum(
                    x
                )
    te, tc = sum(ent_mass.values()), sum(chunk_mass.values())
    we = share if tc > 0 else 1.0
    wc_ = 1.0 - share if te > 0 else 1.0
    seeds: dict[Any, float] = {e: wc_ * v / tc for e, v in chunk_mass.items()}
    for e, v in ent_mass.items():
        if te > 0:
            seeds[e] = seeds.get(e, 0.0) + we * v / te
    seeds = {e: v for e, v in seeds.items() if v > 0}
    cos_all = {c["id"]: float(s) for c, s in zip(chunks, (chunk_vec @ q).tolist(), strict=True)}
    graph: dict[Any, float] = {}
    if seeds:
        pr = graph_ref.pagerank(
            ents,
            data.facts,
            list(seeds),
            list(seeds.values()),
            damping=0.5,
            weight=weight,
            tenant=tenant,
        )
        for e, v in pr.items():
            ms = [m for m in mentions if m["entity"] == e]
            tot = sum(m["count"] for m in ms)
            for m in ms:
                graph[m["chunk"]] = graph.get(m["chunk"], 0.0) + v * m["count"] / tot
    gmax = max(graph.values(), default=0.0)
    cand = [c["id"] for c in chunks if c["tenant"] == tenant]
    final = {
        c: cos_all[c] + (graph_weight * graph.get(c, 0.0) / gmax if gmax > 0 else 0.0) for c in cand
    }
    order = sorted(final, key=lambda c: -final[c])
    return [(c, final[c]) for c in order[:k]]


# The defaults, and the pre-tuning settings (entity seeds by cosine, strength weights) so that
# every seeding path stays covered.
SETTINGS = [
    ({}, {}),
    (
        {
            "seed_chunks": 3,
            "entities": 5,
            "entity_seed_share": 0.3,
            "graph_weight": 0.3,
            "weight": "strength",
        },
        {"seed_chunks": 3, "entities": 5, "share": 0.3, "graph_weight": 0.3, "weight": "strength"},
    ),
]


@PROPERTY
@given(
    graph_data(max_entities=10, max_facts=30),
    st.integers(0, 2**16),
    st.sampled_from(SETTINGS),
    st.sampled_from([None, 1e-13]),
    st.data(),
)
def test_ppr_matches_reference(
    data: GraphData,
    seed: int,
    setting: tuple[dict[str, Any], dict[str, Any]],
    epsilon: float | None,
    d: st.DataObject,
) -> None:
    """Exact power iteration, and forward push with a tiny epsilon, against the reference."""
    tenants = [c["tenant"] for c in data.chunks]
    if not tenants:
        return
    index, ent_vec, chunk_vec, _ = build(data, seed)
    tenant = d.draw(st.sampled_from(tenants))
    q = _query(seed)
    params, ref_params = setting
    res = ppr(
        index,
        "q",
        tenant=tenant,
        query_vectors=q,
        k=3,
        recognize=False,
        tol=1e-13,
        max_iter=10_000,
        epsilon=epsilon,
        **params,
    )[0]
    expected = reference(data, ent_vec, chunk_vec, tenant, q, 3, **ref_params)
    # Scores equal; ids equal except where two scores tie within rounding.
    assert [c.score for c in res.chunks] == pytest.approx([s for _, s in expected], abs=1e-5)
    for got, (want, s) in zip(res.chunks, expected, strict=True):
        if got.id != want:
            assert got.score == pytest.approx(s, abs=1e-5)
