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

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from .anchoring import (
    cached_plan,
    chunk_search,
    dense_batch,
    embed_batch,
    entity_search,
    name_anchors,
)
from .base import (
    ChunkHit,
    LazyColumn,
    RetrievalResult,
    Step,
    anchor_hits,
    check_count,
    check_real,
    chunk_hit,
    chunk_hits,
    entity_hits,
    strongest,
)
from .overrides import ChunkBoostOverrides
from .paths import EntityPaths
from .registry import FunctionRecipe
from .stages import begin, resolve_params

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router

__all__ = ["RECIPE", "ChunkBoost", "ChunkBoostParams", "chunk_boost"]

NAME = "chunk_boost"


@dataclass(frozen=True)
class ChunkBoost:
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
        max_related: Related entities listed in the result at most, nearest then strongest
            (32; every one still boosts, and ``stats["related_entities"]`` counts them all):
            the source is silent, and a hub would otherwise list its whole neighbourhood.
    """

    recipe: ClassVar[str] = "chunk_boost"

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
    max_related: int = 32


def _pipeline(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: ChunkBoost,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """ChunkBoost's pipeline (see :func:`chunk_boost`)."""
    batch = begin(NAME, index, queries, tenant=tenant, now=now, params=p)
    qs, t, tenant_name, timer = batch.queries, batch.tenant, batch.tenant_name, batch.timer
    k = check_count("k", p.k)
    factor = check_count("candidate_factor", p.candidate_factor, 1, 1000)
    n_ent = check_count("query_entities", p.query_entities, 1, 1000)
    max_related = check_count("max_related", p.max_related, 0)
    check_real("entity_boost_direct", p.entity_boost_direct)
    check_real("entity_boost_indirect", p.entity_boost_indirect)
    qv, why = embed_batch(index, qs, query_vectors, timer)
    with timer.stage("vector"):
        cands = chunk_search(index, qv, t, k * factor if p.expand_graph else k)
    if cands is None:
        raise ParameterError(
            f"chunk_boost needs chunk vectors and query vectors ({why or 'no chunk vectors'})"
        )
    if not p.expand_graph:
        out = []
        for q in range(len(qs)):
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
            out.append(batch.result(q, chunks=vector_hits))
        return out
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, n_ent)
        fallback = None
        if found is None:
            fallback = why or "no entity vectors"
            found = [name_anchors(index, q, t, n_ent, p.fallback) if p.fallback else [] for q in qs]
    with timer.stage("graph"):
        plan = cached_plan(
            index,
            NAME,
            p,
            t,
            lambda: index.graph.spread_plan(
                max_hops=p.max_hops,
                direction="both",
                predicates=p.relationship_types,
                max_sequence=p.max_sequence_order,
                tenant=tenant_name,
            ),
        )
        anchor_rows, _, anchor_offsets = dense_batch(found)
        act = plan.dense(anchor_rows, anchor_offsets)
    core = act.core
    eo = core.entity_offsets.tolist()
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
        entity_paths: list[EntityPaths] = []
        related_arrays: list[tuple[Any, Any, Any]] = []
        for q in range(len(qs)):
            a, b = eo[q], eo[q + 1]
            e_q, h_q = ents[a:b], ehops[a:b]
            entity_paths.append(EntityPaths.of_reached(index, e_q, epar[a:b]))
            keep = h_q >= 1
            for r, _, _ in found[q]:
                keep &= e_q != r
            rel = (e_q[keep], h_q[keep], estr[a:b][keep].astype(np.float64))
            related_arrays.append(rel)
            related_lists.append(rel[0].tolist())
            dist_lists.append(rel[1].tolist())
            str_lists.append(rel[2].tolist())
        cent = index.centrality(t) if p.use_centrality else None
        boosts = _mention_boost(index, cands, anchor_rows, anchor_offsets, related_arrays, p, cent)
    results = []
    with timer.stage("results"):
        for q in range(len(qs)):
            rows, sims = cands[q]
            bo_d, bo_i, bo_a, bo_order = boosts[q]
            order = bo_order[:k]
            related, dists, strengths = related_lists[q], dist_lists[q], str_lists[q]
            paths_of = entity_paths[q]
            d_l = bo_d[order].tolist()
            i_l = bo_i[order].tolist()
            a_l = bo_a[order].tolist()
            c_l = rows[order].tolist()
            boost_arr = bo_d[order] + bo_i[order]
            boosts_seen = boost_arr.tolist()
            chunks: list[ChunkHit] = chunk_hits(
                index,
                c_l,
                scores=a_l,
                sources=["vector" if b == 0 else "graph" for b in boosts_seen],
                components=LazyColumn(partial(_boost_components, sims[order], d_l, i_l, a_l)),
                paths=LazyColumn(
                    partial(
                        _best_paths,
                        index,
                        c_l,
                        {r for r, _, _ in found[q]},
                        related,
                        dists,
                        strengths,
                        paths_of,
                        p,
                        cent,
                    )
                ),
            )
            expanded = 0
            if p.expand_primary_chunks and len(chunks) < k:
                rel_info = {e: (d, s) for e, d, s in zip(related, dists, strengths, strict=True)}
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
                            path=paths_of(e),
                        )
                    )
                    expanded += 1
                    if len(chunks) >= k:
                        break
            fanout = dict(Counter(dists))  # in first-seen order, as a counting loop
            anchors = anchor_hits(index, found[q])
            listed, l_dists, l_str = related_arrays[q][0], dists, strengths
            kept = strongest(related_arrays[q][1], related_arrays[q][2], max_related)
            if kept is not None:
                listed = listed[kept]
                l_dists = related_arrays[q][1][kept].tolist()
                l_str = related_arrays[q][2][kept].tolist()
            entities = anchors + entity_hits(
                index,
                listed,
                scores=0.0,
                how="graph",
                hops=l_dists,
                strengths=l_str,
                paths=LazyColumn(partial(paths_of.many, listed.tolist())),
            )
            results.append(
                batch.result(
                    q,
                    anchors=anchors,
                    entities=entities,
                    chunks=chunks,
                    stats={
                        "query_entities": len(anchors),
                        "related_entities": len(related),
                        "related_per_hop": fanout,
                        # np.mean's sum and division, without its array conversion.
                        "avg_boost": float(np.add.reduce(boost_arr)) / len(boosts_seen)
                        if boosts_seen
                        else 0.0,
                        "max_boost": float(max(boosts_seen)) if boosts_seen else 0.0,
                        "expanded": expanded,
                    },
                    fallback=fallback,
                )
            )
    return results


def _mention_boost(
    index: GraphIndex,
    cands: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]],
    anchor_rows: npt.NDArray[np.int64],
    anchor_offsets: npt.NDArray[np.int64],
    related: list[tuple[Any, Any, Any]],
    p: ChunkBoostParams,
    centrality: npt.NDArray[np.float64] | None,
) -> list[tuple[Any, Any, Any, npt.NDArray[np.int64]]]:
    """:meth:`~graphrecall.KnowledgeGraph.mention_boost` on dense rows (one native call for
    the batch, no id lookups): per query (direct, indirect, adjusted, order); ``related``
    holds per query its related entities, their distances and strengths (float64)."""

    def offsets(lens: list[int]) -> npt.NDArray[np.uintp]:
        if len(lens) == 1:  # a single query: no cumulative sum needed
            return np.array((0, lens[0]), dtype=np.uintp)
        off = np.zeros(len(lens) + 1, dtype=np.uintp)
        np.cumsum(lens, out=off[1:])
        return off

    def flat(parts: list[Any], dtype: type[np.generic]) -> npt.NDArray[Any]:
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)).astype(dtype)

    co = offsets([len(c[0]) for c in cands])
    ro = offsets([len(r[0]) for r in related])
    d, i, a, order = index.graph.core.mention_boost(
        flat([c[0] for c in cands], np.uint32),
        flat([c[1] for c in cands], np.float64),
        co,
        anchor_rows.astype(np.uint32),
        anchor_offsets.astype(np.uintp),
        flat([r[0] for r in related], np.uint32),
        flat([r[1] for r in related], np.uint32),
        flat([r[2] for r in related], np.float64),
        ro,
        direct=float(p.entity_boost_direct),
        indirect=float(p.entity_boost_indirect),
        use_strength=bool(p.use_relationship_strength),
        centrality=None
        if centrality is None
        else np.ascontiguousarray(centrality, dtype=np.float64),
    )
    out = []
    for q in range(len(cands)):
        lo, hi = int(co[q]), int(co[q + 1])
        out.append((d[lo:hi], i[lo:hi], a[lo:hi], order[lo:hi].astype(np.int64)))
    return out


def _boost_components(
    sims: npt.NDArray[np.float32], direct: list[float], indirect: list[float], adjusted: list[float]
) -> list[dict[str, float]]:
    """Each ranked chunk's score components."""
    return [
        {"similarity": s_, "direct": d_, "indirect": i_, "adjusted": a_}
        for s_, d_, i_, a_ in zip(
            sims.astype(np.float64).tolist(), direct, indirect, adjusted, strict=True
        )
    ]


def _best_paths(
    index: GraphIndex,
    chunks: list[int],
    query_entities: set[int],
    related: list[int],
    distances: list[int],
    strengths: list[float],
    paths_of: EntityPaths,
    p: ChunkBoostParams,
    centrality: npt.NDArray[np.float64] | None,
) -> list[tuple[Step, ...]]:
    """:func:`_best_path` of each ranked chunk."""
    rel_info = {e: (d, s) for e, d, s in zip(related, distances, strengths, strict=True)}
    return [_best_path(index, c, query_entities, rel_info, paths_of, p, centrality) for c in chunks]


def _best_path(
    index: GraphIndex,
    chunk: int,
    query_entities: set[int],
    related: dict[int, tuple[int, float]],
    paths_of: EntityPaths,
    p: ChunkBoostParams,
    centrality: npt.NDArray[np.float64] | None,
) -> tuple[Step, ...]:
    """The path explaining a chunk's boost: a mentioned query entity (direct boost), else the
    mentioned related entity with the largest indirect boost, from its query entity."""
    mentioned, _ = index.mentions.entities_of(chunk)
    best, best_val = -1, -1.0
    for e in mentioned.tolist():
        if e in query_entities:
            return paths_of(e)
        info = related.get(e)
        if info is None:
            continue
        val = (1.0 / info[0]) * (info[1] if p.use_relationship_strength else 1.0)
        if centrality is not None:
            val *= float(centrality[e])
        if val > best_val:
            best, best_val = e, val
    return paths_of(best) if best >= 0 else ()


ChunkBoostParams = ChunkBoost
"""The former name of :class:`ChunkBoost`."""

#: The registry entry.
RECIPE = FunctionRecipe(NAME, ChunkBoost, _pipeline, default_format="chunks", takes_context=False)


def chunk_boost(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: ChunkBoost | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[ChunkBoostOverrides],
) -> list[RetrievalResult]:
    """Run seed 001's graph-enhanced chunk retrieval for a batch of queries.

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The vault / tenant (may be omitted when the graph holds one).
        now: Unused (the source does not score by time); accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        params: The parameter set (default: :class:`ChunkBoost`'s defaults).
        **overrides: Parameters to change in it, by name.

    Returns:
        One result per query with ranked ``chunks`` (components ``similarity``,
        ``direct``, ``indirect``, ``adjusted``; ``path``), ``anchors`` (the query entities)
        and the related ``entities`` with distance and strength; ``stats`` has the
        source's logged numbers (related entities, fan-out per hop, avg / max boost,
        whether expansion triggered).
    """
    p = resolve_params(ChunkBoost, params, overrides)
    return _pipeline(index, queries, p, tenant, now, query_vectors, None, None)
