"""Recipe ``ppr``: Personalized PageRank spreading activation (HippoRAG), beyond the seeds.

HippoRAG (Gutiérrez et al., 2024) links the query's entities to graph nodes, runs
Personalized PageRank from them and ranks passages by the probability mass that reaches
them; HippoRAG 2 adds dense passage scores and seeds passages too. Without an LLM in the hot
path, this recipe:

1. **Seeds** PPR with two kinds of mass:

   * *passage seeds* (share ``1 - entity_seed_share``): the top ``seed_chunks`` (3) chunks
     by cosine, weighted by a softmax of their similarity (temperature 0.02), each chunk's
     weight split over the entities it mentions by mention count x node specificity
     (``1 / |chunks mentioning the entity|``, HippoRAG's);
   * *entity seeds* (share ``entity_seed_share``, 0.3): the query's n-gram name / alias
     matches (seed 003's recognition) and the top ``entities`` (5) entities by cosine,
     weighted by their score x specificity.

2. **Spreads**: PPR over the tenant's graph (facts as undirected edges weighted by strength,
   damping 0.5 as HippoRAG).
3. **Scores chunks**: an entity's probability goes to its defining chunk (``primary_chunk``,
   seed 001's "primary source chunk") when it has one, else is spread over the chunks
   mentioning it in proportion to the mention counts (a random walk's entity -> passage
   step). ``final = cosine + graph_weight x graph / max(graph)`` over the top ``dense_k``
   chunks by cosine and every chunk the graph reached.

The defaults were chosen on the two evaluation sets together (MuSiQue and HotpotQA,
``benches/eval_recall.py``), the same for both.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..index import GraphIndex
from .anchoring import Anchor, chunk_search, embed_batch, entity_search, name_anchors, with_params
from .base import (
    RetrievalResult,
    Timer,
    check_count,
    check_queries,
    check_real,
    chunk_hit,
    entity_hit,
)

__all__ = ["PPRParams", "ppr"]

NAME = "ppr"


@dataclass(frozen=True)
class PPRParams:
    """Parameters of the PPR recipe (see the module doc).

    Attributes:
        k: Chunks returned.
        seed_chunks: Top chunks by cosine whose entities seed PPR (0: none).
        seed_temperature: Softmax temperature over those chunks' cosines.
        entities: Entity seeds by cosine (0: none).
        recognize: Also seed the n-gram name / alias matches.
        recognize_limit: At most this many name matches.
        entity_seed_share: Share of the seed mass given to entity seeds (when both kinds
            exist), in [0, 1].
        specificity: Weight seeds by ``1 / |chunks mentioning the entity|`` (HippoRAG).
        damping: Probability of following an edge (HippoRAG: 0.5).
        weight: Edge weights: "strength", "confidence" or "uniform".
        graph_weight: Weight of the normalised graph score added to the cosine.
        dense_k: Chunks by cosine that are ranked with the graph's.
        graph_k: Chunks by graph score that are ranked with the dense ones.
        max_iter, tol: Power iteration limits.
    """

    k: int = 10
    seed_chunks: int = 3
    seed_temperature: float = 0.02
    entities: int = 5
    recognize: bool = True
    recognize_limit: int = 10
    entity_seed_share: float = 0.3
    specificity: bool = True
    damping: float = 0.5
    weight: Literal["strength", "confidence", "uniform"] = "strength"
    graph_weight: float = 0.3
    dense_k: int = 100
    graph_k: int = 100
    max_iter: int = 100
    tol: float = 1e-8


def ppr(
    index: GraphIndex,
    queries: str | Sequence[str],
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **params: Any,
) -> list[RetrievalResult]:
    """Personalized PageRank retrieval of chunks for a batch (one PPR call for the batch).

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unused; accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        **params: Overrides of :class:`PPRParams`.

    Returns:
        One result per query: ``chunks`` (components ``cosine``, ``graph``), ``anchors``
        (the seeds with their weights and kinds) and the top ``entities`` by PPR.
    """
    p = with_params(PPRParams(), params)
    qs, _ = check_queries(queries)
    t = index.tenant_code(tenant)
    tenant_name = index.graph.tenants.names[t]
    k = check_count("k", p.k)
    n_seed_chunks = check_count("seed_chunks", p.seed_chunks, 0, 10_000)
    n_ent = check_count("entities", p.entities, 0, 1000)
    temp = check_real("seed_temperature", p.seed_temperature, 1e-6)
    share = check_real("entity_seed_share", p.entity_seed_share, 0.0, 1.0)
    lam = check_real("graph_weight", p.graph_weight)
    dense_k = check_count("dense_k", p.dense_k)
    graph_k = check_count("graph_k", p.graph_k)
    timer = Timer()
    qv, why = embed_batch(index, qs, query_vectors, timer)
    m = index.mentions
    n_mentions = np.diff(m.entity_offsets)

    def spec(e: int) -> float:
        return 1.0 / max(int(n_mentions[e]), 1) if p.specificity else 1.0

    with timer.stage("vector"):
        dense = chunk_search(index, qv, t, max(dense_k, n_seed_chunks))
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, n_ent) if n_ent else None
        seeds: list[list[Anchor]] = []
        for q, query in enumerate(qs):
            ent_mass: dict[int, tuple[float, str]] = {}
            if p.recognize:
                lim = check_count("recognize_limit", p.recognize_limit)
                for r, s, how in name_anchors(index, query, t, lim, "recognize"):
                    ent_mass[r] = (s * spec(r), how)
            if found is not None:
                for r, s, how in found[q]:
                    v = max(s, 0.0) * spec(r)
                    if v > ent_mass.get(r, (-1.0, how))[0]:
                        ent_mass[r] = (v, how)
            chunk_mass: dict[int, float] = {}
            if n_seed_chunks and dense is not None and len(dense[q][0]):
                rows = dense[q][0][:n_seed_chunks]
                sims = dense[q][1][:n_seed_chunks].astype(np.float64)
                w = np.exp((sims - sims.max()) / temp)
                w /= w.sum()
                for c, wc in zip(rows.tolist(), w.tolist(), strict=True):
                    ents, counts = m.entities_of(c)
                    if not len(ents):
                        continue
                    x = counts / counts.sum()
                    if p.specificity:
                        x = x / np.maximum(n_mentions[ents], 1)
                        x = x / x.sum()
                    for e, xe in zip(ents.tolist(), x.tolist(), strict=True):
                        chunk_mass[e] = chunk_mass.get(e, 0.0) + wc * xe
            te = sum(v for v, _ in ent_mass.values())
            tc = sum(chunk_mass.values())
            we = share if tc > 0 else 1.0
            wc_ = 1.0 - we if te > 0 else 1.0
            mass: dict[int, tuple[float, str]] = {}
            for e, v in chunk_mass.items():
                mass[e] = (wc_ * v / tc, "chunk")
            if te > 0:
                for e, (v, how) in ent_mass.items():
                    mass[e] = (mass.get(e, (0.0, how))[0] + we * v / te, how)
            seeds.append([(e, v, how) for e, (v, how) in mass.items() if v > 0])
    ids = index.graph.entity_ids
    # Queries without seed mass get no graph scores (PPR needs a personalisation).
    seeded = [q for q, row in enumerate(seeds) if row]
    slot = {q: j for j, q in enumerate(seeded)}
    no_ents = np.zeros(0, dtype=np.int64)
    no_scores = np.zeros(0, dtype=np.float64)
    with timer.stage("graph"):
        pr = (
            None
            if not seeded
            else index.graph.personalized_pagerank(
                [ids[[a[0] for a in seeds[q]]] for q in seeded],
                [[a[1] for a in seeds[q]] for q in seeded],
                damping=p.damping,
                weight=p.weight,
                direction="both",
                tenant=tenant_name,
                max_iter=p.max_iter,
                tol=p.tol,
            )
        )
    primary = index.entity_primary_chunk
    # Mention totals per entity, for the walk's entity -> chunk step.
    totals = np.zeros(index.graph.n_entities, dtype=np.float64)
    np.add.at(totals, m.chunk_entities, m.chunk_counts)
    results = []
    with timer.stage("fuse"):
        for q, query in enumerate(qs):
            j = slot.get(q)
            if j is None or pr is None:
                ents, es, iterations = no_ents, no_scores, 0
            else:
                a, b = int(pr.entity_offsets[j]), int(pr.entity_offsets[j + 1])
                ents, es = pr.entity_indices[a:b], pr.entity_scores[a:b]
                iterations = int(pr.iterations[j])
            n_chunks = index.graph.n_chunks
            has = primary[ents] >= 0
            graph = np.bincount(primary[ents[has]], weights=es[has], minlength=n_chunks).astype(
                np.float64
            )
            sel, vals = ents[~has], es[~has]
            lens = n_mentions[sel]
            if lens.sum():
                # Every (entity, chunk) mention of the entities without a defining chunk.
                rep = np.repeat(np.arange(len(sel)), lens)
                pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
                flat = m.entity_offsets[sel][rep] + pos
                w = vals[rep] * m.entity_counts[flat] / np.maximum(totals[sel][rep], 1e-300)
                graph += np.bincount(m.entity_chunks[flat], weights=w, minlength=n_chunks)
            gmax = float(graph.max()) if n_chunks else 0.0
            reached = np.flatnonzero(graph > 0)
            if len(reached) > graph_k:
                reached = reached[np.argpartition(-graph[reached], graph_k - 1)[:graph_k]]
            cand = set(reached.tolist())
            cos: dict[int, float] = {}
            if dense is not None:
                rows, dense_sims = dense[q][0][:dense_k], dense[q][1][:dense_k]
                cos = dict(zip(rows.tolist(), dense_sims.astype(np.float64).tolist(), strict=True))
                cand |= set(cos)
            if qv is not None and index.chunk_matrix is not None:
                missing = np.fromiter((c for c in cand if c not in cos), dtype=np.int64)
                if len(missing):
                    sims_m = (index.chunk_matrix[missing] @ qv[q]).astype(np.float64)
                    cos.update(zip(missing.tolist(), sims_m.tolist(), strict=True))
            norm = lam / gmax if gmax > 0 else 0.0
            final = {c: cos.get(c, 0.0) + norm * float(graph[c]) for c in cand}
            top = sorted(final, key=lambda c: (-final[c], c))[:k]
            chunks = [
                chunk_hit(
                    index,
                    c,
                    score=final[c],
                    source="ppr" if graph[c] > 0 else "vector",
                    components={
                        "cosine": cos.get(c, 0.0),
                        "graph": float(graph[c]) / gmax if gmax > 0 else 0.0,
                    },
                )
                for c in top
            ]
            anchor_hits = [entity_hit(index, r, score=s, how=how) for r, s, how in seeds[q]]
            order = np.argsort(-es, kind="stable")[:10]
            ent_hits = [
                entity_hit(index, int(ents[j]), score=float(es[j]), how="ppr")
                for j in order.tolist()
            ]
            results.append(
                RetrievalResult(
                    recipe=NAME,
                    query=query,
                    tenant=tenant_name,
                    anchors=anchor_hits,
                    entities=ent_hits,
                    chunks=chunks,
                    stats={
                        "seeds": len(anchor_hits),
                        "iterations": iterations,
                        "graph_chunks": int((graph > 0).sum()),
                    },
                    params=dict(p.__dict__),
                    fallback=None if qv is not None else (why or "no vectors"),
                )
            )
    for res in results:
        res.timings = dict(timer.seconds)
    return results
