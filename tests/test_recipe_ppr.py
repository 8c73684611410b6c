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


def _chunk_scores_numpy(
    offsets: np.ndarray,
    chunks: np.ndarray,
    counts: np.ndarray,
    primary: np.ndarray | None,
    ents: np.ndarray,
    es: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The entity -> chunk step written with dense numpy vectors: primary shares summed by
    ``bincount`` in entity order, mention shares likewise, then added."""
    n = int(chunks.max()) + 1 if len(chunks) else 0
    if primary is not None and len(primary):
        n = max(n, int(primary.max()) + 1)
    pc = primary[ents] if primary is not None else np.full(len(ents), -1)
    has = pc >= 0
    p_sum = np.bincount(pc[has], weights=es[has], minlength=n)
    rows: list[int] = []
    w: list[float] = []
    for e, s in zip(ents[~has].tolist(), es[~has].tolist(), strict=True):
        a, b = int(offsets[e]), int(offsets[e + 1])
        total = np.bincount(
            np.zeros(b - a, np.int64), weights=counts[a:b].astype(float), minlength=1
        )
        for j in range(a, b):
            rows.append(int(chunks[j]))
            w.append(s * float(counts[j]) / max(float(total[0]), 1e-300))
    m_sum = np.bincount(np.asarray(rows, np.int64), weights=np.asarray(w), minlength=n)
    touched = np.union1d(pc[has], np.asarray(rows, np.int64)).astype(np.int64)
    both = has.any() and len(rows) > 0
    total_sum = p_sum + m_sum if both else (p_sum if has.any() else m_sum)
    return touched, total_sum[touched]


@PROPERTY
@given(st.data())
def test_entity_chunk_scores_matches_dense_numpy(d: st.DataObject) -> None:
    """The native entity -> chunk step equals the dense numpy form to the bit."""
    from graphrecall import _core

    n_e = d.draw(st.integers(1, 8))
    n_c = d.draw(st.integers(1, 8))
    deg = d.draw(st.lists(st.integers(0, 4), min_size=n_e, max_size=n_e))
    offsets = np.zeros(n_e + 1, np.int64)
    np.cumsum(deg, out=offsets[1:])
    chunks = np.asarray(
        d.draw(st.lists(st.integers(0, n_c - 1), min_size=sum(deg), max_size=sum(deg))), np.int64
    )
    counts = np.asarray(
        d.draw(st.lists(st.integers(1, 5), min_size=sum(deg), max_size=sum(deg))), np.int64
    )
    primary = None
    if d.draw(st.booleans()):
        primary = np.asarray(
            d.draw(st.lists(st.integers(-1, n_c - 1), min_size=n_e, max_size=n_e)), np.int64
        )
    ents = np.asarray(d.draw(st.lists(st.integers(0, n_e - 1), max_size=10)), np.int64)
    floats = st.floats(1e-6, 1.0, allow_nan=False)
    es = np.asarray(d.draw(st.lists(floats, min_size=len(ents), max_size=len(ents))), np.float64)
    got = _core.entity_chunk_scores(offsets, chunks, counts, primary, ents, es)
    want = _chunk_scores_numpy(offsets, chunks, counts, primary, ents, es)
    assert got[0].tolist() == want[0].tolist()
    assert got[1].tolist() == want[1].tolist()


def test_entity_chunk_scores_refuses_bad_input() -> None:
    from graphrecall import _core
    from graphrecall.errors import DataError

    off = np.array([0, 1, 2], np.int64)
    ch = np.array([0, 1], np.int64)
    cnt = np.array([1, 1], np.int64)
    one = np.array([1.0])
    with pytest.raises(DataError, match="entities row 0: entity = 5 is outside the mention index"):
        _core.entity_chunk_scores(off, ch, cnt, None, np.array([5], np.int64), one)
    with pytest.raises(DataError, match="scores"):
        _core.entity_chunk_scores(off, ch, cnt, None, np.array([0, 1], np.int64), one)
    with pytest.raises(DataError, match="primary"):
        _core.entity_chunk_scores(
            off, ch, cnt, np.array([0], np.int64), np.array([0], np.int64), one
        )
    broken = np.array([0, 5, 2], np.int64)
    with pytest.raises(DataError, match="out of bounds"):
        _core.entity_chunk_scores(broken, ch, cnt, None, np.array([0], np.int64), one)
    with pytest.raises(DataError, match="negative"):
        _core.entity_chunk_scores(
            off, np.array([-3, 1], np.int64), cnt, None, np.array([0], np.int64), one
        )


@PROPERTY
@given(
    st.lists(st.integers(0, 4), max_size=40),
    st.integers(1, 15),
)
def test_top_stable_is_a_stable_argsort_prefix(values: list[int], n: int) -> None:
    """The entity cut equals ``argsort(-x, stable)[:n]``, ties by position, many ties."""
    from graphrecall.recipes.ppr import _top_stable

    x = np.asarray(values, np.float64) / 4
    assert _top_stable(x, n).tolist() == np.argsort(-x, kind="stable")[:n].tolist()
