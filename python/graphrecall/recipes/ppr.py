"""Recipe ``ppr``: Personalized PageRank spreading activation (HippoRAG), beyond the seeds.

HippoRAG (Gutiérrez et al., 2024) links the query's named entities to graph nodes and runs
Personalized PageRank from them; a passage scores the sum of the probabilities of the
entities it mentions. Without an LLM in the hot path, the query's entities here are the
n-gram name / alias matches (seed 003's recognition, weight 1.0) together with the top
``entities`` entities by embedding similarity (weight: the cosine), each seed weighted by
HippoRAG's node specificity ``1 / |passages mentioning it|``. PPR runs on the tenant's graph
(facts as undirected edges, weighted by strength; damping 0.5 as HippoRAG), and the passage
scores are fused with the dense passage scores (HippoRAG 2's lesson: graph and dense
evidence together) by a weighted sum of min-max normalised scores.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import fusion
from ..errors import ParameterError
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
    """Parameters of the PPR recipe.

    Attributes:
        k: Chunks returned.
        entities: Seed entities by embedding similarity per query.
        recognize: Also seed the n-gram name / alias matches (weight 1.0).
        recognize_limit: At most this many name matches.
        specificity: Weight seeds by ``1 / |chunks mentioning the entity|`` (HippoRAG).
        damping: Probability of following an edge (HippoRAG: 0.5).
        weight: Edge weights: "strength", "confidence" or "uniform".
        dense_weight: Weight of the dense chunk scores in the fusion (0: PPR alone).
        ppr_weight: Weight of the PPR chunk scores.
        dense_k: Dense candidates fused (by cosine).
        seed_chunks: Also seed the entities mentioned by the top ``seed_chunks`` dense
            chunks, each chunk's share (its cosine over the sum) split over its mentions
            by count (HippoRAG 2 seeds passage nodes; passages are not nodes here).
        entity_seed_weight, chunk_seed_weight: Relative mass of the two kinds of seeds.
        max_iter, tol: Power iteration limits.
    """

    k: int = 10
    entities: int = 5
    recognize: bool = True
    recognize_limit: int = 10
    specificity: bool = True
    damping: float = 0.5
    weight: str = "strength"
    dense_weight: float = 0.5
    ppr_weight: float = 0.5
    dense_k: int = 100
    seed_chunks: int = 0
    entity_seed_weight: float = 1.0
    chunk_seed_weight: float = 1.0
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
        One result per query: ``chunks`` (components ``ppr``, ``dense``, ``fused``),
        ``anchors`` (the seeds with their weights) and the top ``entities`` by PPR.
    """
    p = with_params(PPRParams(), params)
    qs, _ = check_queries(queries)
    t = index.tenant_code(tenant)
    tenant_name = index.graph.tenants.names[t]
    k = check_count("k", p.k)
    n_ent = check_count("entities", p.entities, 0, 1000)
    wd = check_real("dense_weight", p.dense_weight)
    wp = check_real("ppr_weight", p.ppr_weight)
    if wd == 0 and wp == 0:
        raise ParameterError("invalid parameters: dense_weight and ppr_weight are both 0")
    timer = Timer()
    qv, why = embed_batch(index, qs, query_vectors, timer)
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, n_ent) if n_ent else None
        seeds: list[list[Anchor]] = []
        for q, query in enumerate(qs):
            best: dict[int, tuple[float, str]] = {}
            if p.recognize:
                for r, s, how in name_anchors(index, query, t, check_count("recognize_limit", p.recognize_limit), "recognize"):
                    best[r] = max(best.get(r, (0.0, how)), (s, how))
            if found is not None:
                for r, s, how in found[q]:
                    if s > best.get(r, (-1.0, how))[0]:
                        best[r] = (max(s, 0.0), how)
            seeds.append([(r, s, how) for r, (s, how) in best.items()])
    ids = index.graph.entity_ids
    offs = index.mentions.entity_offsets
    n_seed_chunks = check_count("seed_chunks", p.seed_chunks, 0, 10_000)
    with timer.stage("vector"):
        depth = max(check_count("dense_k", p.dense_k), n_seed_chunks)
        dense = chunk_search(index, qv, t, depth) if wd > 0 or n_seed_chunks else None
    with timer.stage("graph"):
        weights = []
        for q, row in enumerate(seeds):
            mass: dict[int, float] = {}
            for r, s, _ in row:
                n = int(offs[r + 1] - offs[r])
                mass[r] = mass.get(r, 0.0) + (s / n if p.specificity and n > 0 else s)
            total = sum(mass.values())
            if total > 0:
                mass = {r: p.entity_seed_weight * v / total for r, v in mass.items()}
            if n_seed_chunks and dense is not None:
                crows, csims = dense[q][0][:n_seed_chunks], dense[q][1][:n_seed_chunks]
                pos = np.maximum(csims.astype(np.float64), 0.0)
                if pos.sum() > 0:
                    share = pos / pos.sum()
                    for c, w in zip(crows.tolist(), share.tolist(), strict=True):
                        ents, counts = index.mentions.entities_of(c)
                        if not len(ents):
                            continue
                        cw = counts / counts.sum()
                        for e, x in zip(ents.tolist(), cw.tolist(), strict=True):
                            mass[e] = mass.get(e, 0.0) + p.chunk_seed_weight * w * x
            seeds[q] = [(r, mass[r], how) for r, _, how in row if r in mass] + [
                (e, mass[e], "chunk") for e in mass if e not in {r for r, _, _ in row}
            ]
            # PPR needs some positive mass; a query without any gets no graph scores.
            weights.append([s for _, s, _ in seeds[q]] if sum(mass.values()) > 0 else [])
        seeded = [ids[[a[0] for a in row]] if row and weights[q] else [] for q, row in enumerate(seeds)]
        pr = index.graph.personalized_pagerank(
            seeded,
            [w for w in weights],
            damping=p.damping,
            weight=p.weight,  # type: ignore[arg-type]
            direction="both",
            tenant=tenant_name,
            max_iter=p.max_iter,
            tol=p.tol,
        )
    results = []
    with timer.stage("fuse"):
        for q, query in enumerate(qs):
            qp = pr[q]
            crow = index.graph.chunk_index(qp.chunk_ids.tolist()) if len(qp.chunk_ids) else np.zeros(0, np.int64)
            ppr_scores = dict(zip(crow.tolist(), qp.chunk_scores.tolist(), strict=True))
            dense_scores: dict[int, float] = {}
            if dense is not None and wd > 0:
                dense_scores = dict(
                    zip(dense[q][0][: p.dense_k].tolist(), dense[q][1][: p.dense_k].astype(np.float64).tolist(), strict=True)
                )
            lists, w = [], []
            if ppr_scores and wp > 0:
                lists.append((np.asarray(list(ppr_scores), np.int64), np.asarray(list(ppr_scores.values()))))
                w.append(wp)
            if dense_scores:
                lists.append((np.asarray(list(dense_scores), np.int64), np.asarray(list(dense_scores.values()))))
                w.append(wd)
            chunks = []
            if lists:
                fused = fusion.weighted(lists, weights=w, normalize=True, top_k=k)
                for c, s in zip(fused.ids.tolist(), fused.scores.tolist(), strict=True):
                    comp = {"fused": float(s)}
                    if c in ppr_scores:
                        comp["ppr"] = float(ppr_scores[c])
                    if c in dense_scores:
                        comp["dense"] = float(dense_scores[c])
                    src = "fused" if c in ppr_scores and c in dense_scores else ("ppr" if c in ppr_scores else "vector")
                    chunks.append(chunk_hit(index, int(c), score=float(s), source=src, components=comp))
            anchor_hits = [entity_hit(index, r, score=s, how=how) for r, s, how in seeds[q]]
            top_e = np.argsort(-qp.entity_scores, kind="stable")[:10]
            erow = index.graph.entity_index(qp.entity_ids[top_e].tolist()) if len(top_e) else np.zeros(0, np.int64)
            ent_hits = [
                entity_hit(index, int(e), score=float(qp.entity_scores[j]), how="ppr")
                for e, j in zip(erow.tolist(), top_e.tolist(), strict=True)
            ]
            results.append(
                RetrievalResult(
                    recipe=NAME,
                    query=query,
                    tenant=tenant_name,
                    anchors=anchor_hits,
                    entities=ent_hits,
                    chunks=chunks,
                    stats={"seeds": len(anchor_hits), "iterations": qp.iterations},
                    params=dict(p.__dict__),
                    fallback=None if qv is not None else (why or "no vectors"),
                )
            )
    for r in results:
        r.timings = dict(timer.seconds)
    return results
