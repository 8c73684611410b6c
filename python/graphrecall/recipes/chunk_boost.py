"""Recipe ``chunk_boost``: seed 001, "Graph-Enhanced Retrieval" (fiction analysis, pgvector).

1. Vector search of ``k x 2`` chunks (cosine similarity).
2. Query entities: the top 3 entities by vector search on the entity table.
3. Multi-hop traversal (``max_hops = 1``) over relationships in both directions ("neighbor
   = rel.target or rel.source"), tracking each related entity's distance and the strength of
   the relation that reached it (the smallest distance, and the strongest relation at it: the
   source overwrote both with whatever it saw last, which its formula cannot have meant).
4. Boosts: ``direct = |mentioned ∩ query entities| x 0.3``; ``indirect = sum over mentioned
   related entities of 0.1 x (1 / distance) x strength`` (strength 1.0 without
   ``use_relationship_strength``; x the entity's centrality with ``use_centrality``, the
   source's "PageRank-style entity importance"); ``adjusted = similarity + direct +
   indirect``.
5. Re-rank by ``adjusted`` (stable), keep ``k``.
6. Expansion: with fewer than ``k`` chunks, add the primary source chunks of the related
   entities, strongest relation first.

Filters of the source's "future enhancements": ``relationship_types`` (predicates) and
``max_sequence_order`` (``Relationship.established_at_sequence``). ``expand_graph=False`` is
the pure vector baseline (top ``k`` by similarity). Every chunk carries its ``graph_path``:
from a query entity to the related entity that contributed the most to its boost.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from .anchoring import chunk_search, embed_batch, entity_search, name_anchors, with_params
from .base import (
    ChunkHit,
    RetrievalResult,
    Step,
    Timer,
    check_count,
    check_queries,
    check_real,
    chunk_hit,
    entity_hit,
    entity_path,
)

__all__ = ["ChunkBoostParams", "chunk_boost"]

NAME = "chunk_boost"


@dataclass(frozen=True)
class ChunkBoostParams:
    """Seed 001's parameters, with its defaults.

    Attributes:
        k: Chunks returned (the source's examples use 5).
        candidate_factor: Vector candidates are ``k x candidate_factor`` (2).
        query_entities: Query entities by vector search (3).
        max_hops: Relationship hops (1).
        entity_boost_direct: Boost per mentioned query entity (0.3).
        entity_boost_indirect: Boost per mentioned related entity (0.1) before
            ``1 / distance x strength``.
        use_relationship_strength: Weight indirect boosts by strength (True).
        use_centrality: Multiply indirect boosts by entity centrality (False).
        relationship_types: Only traverse these predicates (None: all).
        max_sequence_order: Only relationships established at or before this sequence.
        expand_graph: False: the pure vector baseline.
        expand_primary_chunks: Add related entities' primary source chunks when fewer
            than ``k`` chunks were found (True).
        fallback: Name matching for query entities when there are no vectors
            ("recognize", "fuzzy", "keyword" or None).
    """

    k: int = 5
    candidate_factor: int = 2
    query_entities: int = 3
    max_hops: int = 1
    entity_boost_direct: float = 0.3
    entity_boost_indirect: float = 0.1
    use_relationship_strength: bool = True
    use_centrality: bool = False
    relationship_types: tuple[str, ...] | None = None
    max_sequence_order: int | None = None
    expand_graph: bool = True
    expand_primary_chunks: bool = True
    fallback: str | None = "recognize"


def chunk_boost(
    index: GraphIndex,
    queries: str | Sequence[str],
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **params: Any,
) -> list[RetrievalResult]:
    """Run seed 001's graph-enhanced chunk retrieval for a batch of queries.

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The vault / tenant (may be omitted when the graph holds one).
        now: Unused (the source does not score by time); accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        **params: Overrides of :class:`ChunkBoostParams`.

    Returns:
        One result per query with ranked ``chunks`` (components ``similarity``,
        ``direct``, ``indirect``, ``adjusted``; ``path``), ``anchors`` (the query entities)
        and the related ``entities`` with distance and strength; ``stats`` has the
        source's logged numbers (related entities, fan-out per hop, avg / max boost,
        whether expansion triggered).
    """
    p = with_params(ChunkBoostParams(), params)
    qs, _ = check_queries(queries)
    t = index.tenant_code(tenant)
    tenant_name = index.graph.tenants.names[t]
    k = check_count("k", p.k)
    factor = check_count("candidate_factor", p.candidate_factor, 1, 1000)
    n_ent = check_count("query_entities", p.query_entities, 1, 1000)
    check_real("entity_boost_direct", p.entity_boost_direct)
    check_real("entity_boost_indirect", p.entity_boost_indirect)
    timer = Timer()
    qv, why = embed_batch(index, qs, query_vectors, timer)
    with timer.stage("vector"):
        cands = chunk_search(index, qv, t, k * factor if p.expand_graph else k)
    if cands is None:
        raise ParameterError(
            f"chunk_boost needs chunk vectors and query vectors ({why or 'no chunk vectors'})"
        )
    if not p.expand_graph:
        out = []
        for q, query in enumerate(qs):
            rows, sims = cands[q]
            vector_hits = [
                chunk_hit(
                    index,
                    int(c),
                    score=float(s),
                    source="vector",
                    components={"similarity": float(s)},
                )
                for c, s in zip(rows.tolist(), sims.tolist(), strict=True)
            ]
            out.append(
                RetrievalResult(
                    NAME,
                    query,
                    tenant_name,
                    chunks=vector_hits,
                    timings=dict(timer.seconds),
                    params=dict(p.__dict__),
                )
            )
        return out
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, n_ent)
        fallback = None
        if found is None:
            fallback = why or "no entity vectors"
            found = [name_anchors(index, q, t, n_ent, p.fallback) if p.fallback else [] for q in qs]
    ids = index.graph.entity_ids
    with timer.stage("graph"):
        act = index.graph.spread(
            [ids[[a[0] for a in row]] if row else [] for row in found],
            max_hops=p.max_hops,
            direction="both",
            predicates=p.relationship_types,
            max_sequence=p.max_sequence_order,
            tenant=tenant_name,
        )
    core = act._core
    eo = core.entity_offsets
    ents, ehops, estr, epar = (
        core.entities,
        core.entity_hops,
        core.entity_strengths,
        core.entity_parents,
    )
    with timer.stage("boost"):
        related_lists: list[list[int]] = []
        dist_lists: list[list[int]] = []
        str_lists: list[list[float]] = []
        parent_maps: list[dict[int, int]] = []
        for q in range(len(qs)):
            a, b = int(eo[q]), int(eo[q + 1])
            qset = {r for r, _, _ in found[q]}
            rel, dist, stren = [], [], []
            pm: dict[int, int] = {}
            for e, h, s, par in zip(
                ents[a:b].tolist(),
                ehops[a:b].tolist(),
                estr[a:b].tolist(),
                epar[a:b].tolist(),
                strict=True,
            ):
                if par >= 0:
                    pm[e] = par
                if e in qset or h < 1:
                    continue
                rel.append(e)
                dist.append(h)
                stren.append(s)
            related_lists.append(rel)
            dist_lists.append(dist)
            str_lists.append(stren)
            parent_maps.append(pm)
        cent = index.centrality(t) if p.use_centrality else None
        boosts = index.graph.mention_boost(
            [index.graph.chunk_ids[c[0]].tolist() for c in cands],
            [c[1].astype(np.float64).tolist() for c in cands],
            [ids[[a[0] for a in row]].tolist() if row else [] for row in found],
            [ids[r].tolist() if r else [] for r in related_lists],
            dist_lists,
            str_lists,
            direct=p.entity_boost_direct,
            indirect=p.entity_boost_indirect,
            use_strength=p.use_relationship_strength,
            centrality=cent,
        )
    results = []
    with timer.stage("results"):
        for q, query in enumerate(qs):
            rows, sims = cands[q]
            bo = boosts[q]
            order = bo["order"].tolist()[:k]
            qset = {r for r, _, _ in found[q]}
            rel_info = {
                e: (d, s)
                for e, d, s in zip(related_lists[q], dist_lists[q], str_lists[q], strict=True)
            }
            chunks: list[ChunkHit] = []
            boosts_seen = []
            for i in order:
                c = int(rows[i])
                d_, i_, adj = (
                    float(bo["direct"][i]),
                    float(bo["indirect"][i]),
                    float(bo["adjusted"][i]),
                )
                boosts_seen.append(d_ + i_)
                path = _best_path(index, c, qset, rel_info, parent_maps[q], p, cent)
                chunks.append(
                    chunk_hit(
                        index,
                        c,
                        score=adj,
                        source="vector" if d_ + i_ == 0 else "graph",
                        components={
                            "similarity": float(sims[i]),
                            "direct": d_,
                            "indirect": i_,
                            "adjusted": adj,
                        },
                        path=path,
                    )
                )
            expanded = 0
            if p.expand_primary_chunks and len(chunks) < k:
                have = {ch.id for ch in chunks}
                for e in sorted(rel_info, key=lambda e: (-rel_info[e][1], e)):
                    pc = int(index.entity_primary_chunk[e])
                    if pc < 0 or index.graph.chunk_ids[pc] in have:
                        continue
                    have.add(index.graph.chunk_ids[pc])
                    chunks.append(
                        chunk_hit(
                            index,
                            pc,
                            score=0.0,
                            source="expansion",
                            components={
                                "strength": rel_info[e][1],
                                "distance": float(rel_info[e][0]),
                            },
                            path=entity_path(index, e, parent_maps[q]),
                        )
                    )
                    expanded += 1
                    if len(chunks) >= k:
                        break
            fanout: dict[int, int] = {}
            for d in dist_lists[q]:
                fanout[d] = fanout.get(d, 0) + 1
            anchors = [entity_hit(index, r, score=s, how=how) for r, s, how in found[q]]
            entities = anchors + [
                entity_hit(
                    index,
                    e,
                    score=0.0,
                    how="graph",
                    hop=d,
                    strength=s,
                    path=entity_path(index, e, parent_maps[q]),
                )
                for e, (d, s) in rel_info.items()
            ]
            results.append(
                RetrievalResult(
                    recipe=NAME,
                    query=query,
                    tenant=tenant_name,
                    anchors=anchors,
                    entities=entities,
                    chunks=chunks,
                    stats={
                        "query_entities": len(anchors),
                        "related_entities": len(rel_info),
                        "related_per_hop": fanout,
                        "avg_boost": float(np.mean(boosts_seen)) if boosts_seen else 0.0,
                        "max_boost": float(max(boosts_seen)) if boosts_seen else 0.0,
                        "expanded": expanded,
                    },
                    params=dict(p.__dict__),
                    fallback=fallback,
                )
            )
    for r in results:
        r.timings = dict(timer.seconds)
    return results


def _best_path(
    index: GraphIndex,
    chunk: int,
    query_entities: set[int],
    related: dict[int, tuple[int, float]],
    parents: dict[int, int],
    p: ChunkBoostParams,
    centrality: npt.NDArray[np.float64] | None,
) -> tuple[Step, ...]:
    """The path explaining a chunk's boost: a mentioned query entity (direct boost), else the
    mentioned related entity with the largest indirect boost, from its query entity."""
    mentioned, _ = index.mentions.entities_of(chunk)
    best, best_val = -1, -1.0
    for e in mentioned.tolist():
        if e in query_entities:
            return entity_path(index, e, parents)
        info = related.get(e)
        if info is None:
            continue
        val = (1.0 / info[0]) * (info[1] if p.use_relationship_strength else 1.0)
        if centrality is not None:
            val *= float(centrality[e])
        if val > best_val:
            best, best_val = e, val
    return entity_path(index, best, parents) if best >= 0 else ()
