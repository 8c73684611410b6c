"""Recipe ``hybrid_expand``: seed 003, "Hybrid GraphRAG" (sqlite-vec + FTS5).

Phase 1, the hybrid search "unchanged": vector search (cosine) and BM25 keyword search, each
``k x candidate_multiplier`` candidates, merged by ``vector_weight x vectorScore +
text_weight x textScore`` (0.7 / 0.3) into the top-``k`` candidates.

Phase 2, query entity recognition: every 1-3-word n-gram of the query looked up among entity
names (and aliases), at most 5; if none is found, the top 3 entities by embedding similarity
at or above 0.75.

Phase 3, graph expansion: the ``max_hops`` (1) neighbourhood of the recognised entities
(relationship types filterable); every chunk mentioning a related entity scores
``computeGraphScore``: ``weight / 10 x 1 / 2^(hop - 1) x (0.7 + 0.3 x min(log2(mentions + 1)
/ 5, 1))`` (weight: the relation's strength, 1-10 in the source; mentions: how often the chunk
mentions the entity), keeping a chunk's best.

Final merge, additive only: ``combined = 0.7 x hybrid + 0.3 x graph`` for every chunk; every
hybrid result is kept, at most 4 graph-only chunks are added (``maxChunks``). ``use_graph =
False`` returns the hybrid search alone.

Where the source is silent: BM25 scores are made comparable with cosine by dividing by the
query's best BM25 score (``text_score="max"``); OpenClaw's ``1 / (1 + max(0, rank))`` on
FTS5's negative ranks, which gives 1.0 to every keyword hit, is available as
``text_score="openclaw"`` together with its all-terms query (``keyword_mode="and"``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .. import fusion, scoring
from ..errors import ParameterError
from ..index import GraphIndex
from ..scoring import GraphProximityProfile
from .anchoring import Anchor, chunk_search, embed_batch, entity_search, name_anchors, params_of
from .base import (
    ChunkHit,
    EntityPaths,
    RetrievalResult,
    Timer,
    anchor_hits,
    check_count,
    check_queries,
    check_real,
    chunk_hit,
    entity_hits,
    fact_hits,
)

__all__ = ["HybridExpandParams", "hybrid_expand"]

NAME = "hybrid_expand"


@dataclass(frozen=True)
class HybridExpandParams:
    """Seed 003's parameters (and its host's hybrid search), with their defaults.

    Attributes:
        k: Hybrid results before expansion (top-K candidates; 6 as OpenClaw's maxResults).
        candidate_multiplier: Candidates per search = ``k x`` this (4, OpenClaw).
        vector_weight, text_weight: The hybrid merge (0.7 / 0.3).
        text_score: "max" (BM25 / the query's best) or "openclaw".
        keyword_mode: "or" (any term) or "and" (every term, OpenClaw's FTS query).
        recognize_limit: Entities from the n-gram lookup (5).
        max_ngram: Longest n-gram looked up (3).
        embedding_entities: Entities from the embedding fallback (3).
        embedding_min_score: Its threshold (0.75).
        max_hops: Expansion depth (1).
        relationship_types: Only these predicates (None: all).
        alpha, beta: The final combination (0.7 / 0.3).
        max_graph_chunks: Graph-sourced chunks added at most (``maxChunks = 4``).
        use_graph: False: the hybrid search alone.
        profile: computeGraphScore's constants.
    """

    k: int = 6
    candidate_multiplier: int = 4
    vector_weight: float = 0.7
    text_weight: float = 0.3
    text_score: str = "max"
    keyword_mode: Literal["or", "and"] = "or"
    recognize_limit: int = 5
    embedding_entities: int = 3
    embedding_min_score: float = 0.75
    max_hops: int = 1
    relationship_types: tuple[str, ...] | None = None
    alpha: float = 0.7
    beta: float = 0.3
    max_graph_chunks: int = 4
    use_graph: bool = True
    profile: GraphProximityProfile = field(default_factory=GraphProximityProfile)


def hybrid_expand(
    index: GraphIndex,
    queries: str | Sequence[str],
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **params: Any,
) -> list[RetrievalResult]:
    """Run seed 003's hybrid search + graph expansion for a batch of queries.

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unused; accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        **params: Overrides of :class:`HybridExpandParams`.

    Returns:
        One result per query: ``chunks`` (components ``vector``, ``text``, ``hybrid``,
        ``graph``, ``combined``; graph-sourced chunks carry the path from the query entity),
        ``anchors`` (recognised query entities), related ``entities`` and the ``facts``
        linking them (for the Knowledge Graph Context block).
    """
    p = params_of(HybridExpandParams, params)
    qs, _ = check_queries(queries)
    t = index.tenant_code(tenant)
    tenant_name = index.graph.tenants.names[t]
    k = check_count("k", p.k)
    mult = check_count("candidate_multiplier", p.candidate_multiplier, 1, 1000)
    for name in ("vector_weight", "text_weight", "alpha", "beta"):
        check_real(name, getattr(p, name))
    if p.text_score not in ("max", "openclaw"):
        raise ParameterError(f"invalid parameter text_score: {p.text_score!r} (max, openclaw)")
    if p.keyword_mode not in ("or", "and"):
        raise ParameterError(f"invalid parameter keyword_mode: {p.keyword_mode!r} (or, and)")
    max_new = check_count("max_graph_chunks", p.max_graph_chunks, 0)
    timer = Timer()
    qv, why = embed_batch(index, qs, query_vectors, timer)
    n_cand = k * mult
    with timer.stage("vector"):
        vec = chunk_search(index, qv, t, n_cand)
    with timer.stage("keyword"):
        kw = (
            index.chunk_keywords.search_many(qs, n_cand, tenant=t, mode=p.keyword_mode)
            if index.chunk_keywords is not None
            else [(np.zeros(0, np.int64), np.zeros(0))] * len(qs)
        )
    with timer.stage("merge"):
        base_lists = []
        comps: list[dict[int, dict[str, float]]] = []
        for q in range(len(qs)):
            merged: dict[int, dict[str, float]] = {}
            if vec is not None:
                for c, s in zip(vec[q][0].tolist(), vec[q][1].tolist(), strict=True):
                    merged[c] = {"vector": float(s), "text": 0.0}
            rows, bm = kw[q]
            top = float(bm[0]) if len(bm) else 0.0
            for c, s in zip(rows.tolist(), bm.tolist(), strict=True):
                ts = 1.0 if p.text_score == "openclaw" else (s / top if top > 0 else 0.0)
                merged.setdefault(c, {"vector": 0.0, "text": 0.0})["text"] = ts
                merged[c]["bm25"] = float(s)
            for d in merged.values():
                d["hybrid"] = p.vector_weight * d["vector"] + p.text_weight * d["text"]
            ranked = sorted(merged, key=lambda c: (-merged[c]["hybrid"], c))[:k]
            base_lists.append(ranked)
            comps.append(merged)
    anchors: list[list[Anchor]] = [[] for _ in qs]
    results = []
    if p.use_graph:
        with timer.stage("recognize"):
            ent = None
            for q, query in enumerate(qs):
                anchors[q] = name_anchors(
                    index, query, t, check_count("recognize_limit", p.recognize_limit), "recognize"
                )
            missing = [q for q in range(len(qs)) if not anchors[q]]
            if missing and qv is not None:
                ent = entity_search(
                    index, qv[missing], t, p.embedding_entities, p.embedding_min_score
                )
                if ent is not None:
                    for j, q in enumerate(missing):
                        anchors[q] = ent[j]
        ids = index.graph.entity_ids
        with timer.stage("graph"):
            act = index.graph.spread(
                [ids[[a[0] for a in row]] if row else [] for row in anchors],
                max_hops=check_count("max_hops", p.max_hops, 1, 64),
                direction="both",
                predicates=p.relationship_types,
                tenant=tenant_name,
            )
        core = act._core
        eo, fo = core.entity_offsets, core.fact_offsets
        ents, ehops, estr, epar = (
            core.entities,
            core.entity_hops,
            core.entity_strengths,
            core.entity_parents,
        )
    for q, query in enumerate(qs):
        graph_scores: dict[int, float] = {}
        graph_from: dict[int, int] = {}
        parents: dict[int, int] = {}
        related: list[tuple[int, int, float]] = []
        if p.use_graph:
            a, b = int(eo[q]), int(eo[q + 1])
            qset = {r for r, _, _ in anchors[q]}
            with timer.stage("graph_score"):
                chunk_rows, weights, hops_, counts, from_e = [], [], [], [], []
                for e, h, s, par in zip(
                    ents[a:b].tolist(),
                    ehops[a:b].tolist(),
                    estr[a:b].tolist(),
                    epar[a:b].tolist(),
                    strict=True,
                ):
                    if par >= 0:
                        parents[e] = par
                    if h < 1 or e in qset:
                        continue
                    related.append((e, h, s))
                    cs, cn = index.mentions.chunks_of(e)
                    chunk_rows.extend(cs.tolist())
                    counts.extend(cn.tolist())
                    weights.extend([s] * len(cs))
                    hops_.extend([h] * len(cs))
                    from_e.extend([e] * len(cs))
                if chunk_rows:
                    gs = scoring.graph_proximity(weights, hops_, counts, profile=p.profile)
                    for c, s, e in zip(chunk_rows, gs.tolist(), from_e, strict=True):
                        if s > graph_scores.get(c, -1.0):
                            graph_scores[c] = s
                            graph_from[c] = e
            with timer.stage("merge"):
                base = base_lists[q]
                added = fusion.additive_merge(
                    (
                        np.asarray(base, dtype=np.int64),
                        np.asarray([comps[q][c]["hybrid"] for c in base], dtype=np.float64),
                    ),
                    (
                        np.asarray(list(graph_scores), dtype=np.int64),
                        np.asarray(list(graph_scores.values()), dtype=np.float64),
                    ),
                    alpha=p.alpha,
                    beta=p.beta,
                    max_new=max_new,
                )
                final = list(
                    zip(
                        added.ids.tolist(),
                        added.scores.tolist(),
                        added.sources.tolist(),
                        strict=True,
                    )
                )
        else:
            final = [(c, comps[q][c]["hybrid"], 0) for c in base_lists[q]]
        paths_of = EntityPaths(index, parents)
        chunks: list[ChunkHit] = []
        for c, s, src in final:
            comp = dict(comps[q].get(c, {"vector": 0.0, "text": 0.0, "hybrid": 0.0}))
            if p.use_graph:
                comp["graph"] = graph_scores.get(c, 0.0)
                comp["combined"] = float(s)
            source = {0: "hybrid", 1: "graph", 2: "hybrid+graph"}[int(src)]
            path = paths_of(graph_from[c]) if c in graph_from else ()
            chunks.append(
                chunk_hit(index, int(c), score=float(s), source=source, components=comp, path=path)
            )
        anchor_list = anchor_hits(index, anchors[q])
        rel_hits = entity_hits(
            index,
            [e for e, _, _ in related],
            scores=0.0,
            how="graph",
            hops=[h for _, h, _ in related],
            strengths=[s for _, _, s in related],
            paths=paths_of.many([e for e, _, _ in related]),
        )
        facts = []
        if p.use_graph:
            fa, fb = int(fo[q]), int(fo[q + 1])
            q_facts = core.facts[fa:fb]
            q_facts_hops = core.hops[fa:fb]
            linking = index.fact_object[q_facts] >= 0
            q_facts = q_facts[linking]
            strength = index.fact_strength[q_facts]
            facts = fact_hits(
                index,
                q_facts,
                scores=strength,
                hops=q_facts_hops[linking],
                anchors=np.full(len(q_facts), -1, dtype=np.int64),
                components=[{"strength": s} for s in strength.tolist()],
            )
        results.append(
            RetrievalResult(
                recipe=NAME,
                query=query,
                tenant=tenant_name,
                anchors=anchor_list,
                entities=anchor_list + rel_hits,
                facts=facts,
                chunks=chunks,
                stats={
                    "query_entities": len(anchor_list),
                    "related_entities": len(rel_hits),
                    "graph_chunks_scored": len(graph_scores),
                    "graph_chunks_added": sum(1 for ch in chunks if ch.source == "graph"),
                },
                params=dict(p.__dict__),
                fallback=None if vec is not None else (why or "no chunk vectors"),
            )
        )
    for r in results:
        r.timings = dict(timer.seconds)
    return results
