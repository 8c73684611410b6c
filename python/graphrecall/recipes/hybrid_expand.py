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
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import ParameterError
from ..index import GraphIndex
from ..scoring import GraphProximityProfile
from .anchoring import (
    Anchor,
    cached_plan,
    checked_once,
    chunk_search,
    dense_batch,
    embed_batch,
    entity_search,
    name_anchors,
)
from .base import (
    LazyColumn,
    RetrievalResult,
    Step,
    anchor_hits,
    check_count,
    check_real,
    chunk_hits,
    entity_hits,
    fact_hits,
    strongest,
)
from .overrides import HybridExpandOverrides
from .paths import EntityPaths
from .registry import FunctionRecipe
from .stages import begin, resolve_params

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router

__all__ = ["RECIPE", "HybridExpand", "HybridExpandParams", "hybrid_expand"]

NAME = "hybrid_expand"


@dataclass(frozen=True)
class HybridExpand:
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
        max_related: Related entities listed in the result at most, nearest then strongest
            (32; every one still scores its chunks, and ``stats["related_entities"]`` counts
            them all).
        max_facts: Traversed relationships listed at most, nearest then strongest (32).
            The source is silent on both; without them a hub lists its whole neighbourhood.
        profile: computeGraphScore's constants.
    """

    recipe: ClassVar[str] = "hybrid_expand"

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
    max_related: int = 32
    max_facts: int = 32
    profile: GraphProximityProfile = field(default_factory=GraphProximityProfile)


def _pipeline(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: HybridExpand,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """HybridExpand's pipeline (see :func:`hybrid_expand`)."""
    batch = begin(NAME, index, queries, tenant=tenant, now=now, params=p)
    qs, t, tenant_name, timer = batch.queries, batch.tenant, batch.tenant_name, batch.timer
    c = checked_once(p, _check)
    k, alpha, beta, max_new = c.k, c.alpha, c.beta, c.max_new
    qv, why = embed_batch(index, qs, query_vectors, timer)
    n_cand = k * c.candidate_multiplier
    with timer.stage("vector"):
        vec = chunk_search(index, qv, t, n_cand)
    with timer.stage("keyword"):
        kw = (
            index.chunk_keywords.search_many(qs, n_cand, tenant=t, mode=p.keyword_mode)
            if index.chunk_keywords is not None
            else [(np.zeros(0, np.int64), np.zeros(0))] * len(qs)
        )
    with timer.stage("merge"):
        openclaw, vw, tw = c.openclaw, c.vector_weight, c.text_weight
        hybrid_in: list[_HybridIn] = [
            (None if vec is None else vec[q], kw[q], openclaw, vw, tw) for q in range(len(qs))
        ]
        base = _hybrid_top(hybrid_in, k)
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
        max_hops = check_count("max_hops", p.max_hops, 1, 64)
        with timer.stage("graph"):
            plan = cached_plan(
                index,
                NAME,
                p,
                t,
                lambda: index.graph.spread_plan(
                    max_hops=max_hops,
                    direction="both",
                    predicates=p.relationship_types,
                    tenant=tenant_name,
                ),
            )
            rows, _, offsets = dense_batch(anchors)
            act = plan.dense(rows, offsets)
        core = act.core
        eo, fo = core.entity_offsets, core.fact_offsets
        ents, ehops, estr, epar = (
            core.entities,
            core.entity_hops,
            core.entity_strengths,
            core.entity_parents,
        )
        q_facts_all, q_hops_all = core.facts, core.hops
        pf = p.profile
        profile = {
            "weight_scale": float(pf.weight_scale),
            "hop_base": float(pf.hop_base),
            "mention_floor": float(pf.mention_floor),
            "mention_log_divisor": float(pf.mention_log_divisor),
        }
    mentions = index.mentions
    no_graph = (_EMPTY_I64, _EMPTY_F64, _EMPTY_I64)
    for q in range(len(qs)):
        b_ids, b_scores = base[q]
        related: npt.NDArray[np.int64]
        rel_hops: npt.NDArray[Any]
        rel_str: npt.NDArray[Any]
        if p.use_graph:
            a, b = int(eo[q]), int(eo[q + 1])
            with timer.stage("graph_score"):
                e_q, h_q = ents[a:b], ehops[a:b]
                paths_of = EntityPaths.of_reached(index, e_q, epar[a:b])
                # The related entities: all but the anchors, which are exactly the hop-0
                # ones (the shared BFS keys an anchor 0.0 and any other entity -(hop + 1),
                # so an anchor keeps hop 0; activation::tests checks it).
                keep = h_q >= 1
                related, rel_hops, rel_str = e_q[keep], h_q[keep], estr[a:b][keep]
                # Every chunk mentioning a related entity, each at its best score (the first
                # entity reaching it on ties), in one native call over the mention CSR.
                graph = _core.graph_proximity_chunks(
                    mentions.entity_offsets,
                    mentions.entity_chunks,
                    mentions.entity_counts,
                    related,
                    rel_str.astype(np.float64),
                    rel_hops,
                    **profile,
                )
            with timer.stage("merge"):
                # One query's arrays straight to the kernel (fusion.additive_merge's checks
                # and conversions cost more than the merge; these are checked here).
                a_ids, a_scores, a_sources, _ = _core.additive_merge(
                    b_ids,
                    b_scores,
                    np.array([0, len(b_ids)], dtype=np.uintp),
                    graph[0],
                    graph[1],
                    np.array([0, len(graph[0])], dtype=np.uintp),
                    alpha=alpha,
                    beta=beta,
                    max_new=max_new,
                )
                ids_l = a_ids.tolist()
                scores_l = a_scores.tolist()
                sources = [_SOURCES[x] for x in a_sources.tolist()]
        else:
            related = rel_hops = rel_str = _EMPTY_I64
            paths_of = EntityPaths(index, {})
            graph = no_graph
            ids_l = b_ids.tolist()
            scores_l = b_scores.tolist()
            sources = ["hybrid"] * len(ids_l)
        with timer.stage("results"):
            chunks = chunk_hits(
                index,
                ids_l,
                scores=scores_l,
                sources=sources,
                components=LazyColumn(
                    partial(_chunk_components, ids_l, scores_l, hybrid_in[q], graph, p.use_graph)
                ),
                paths=LazyColumn(partial(_chunk_paths, ids_l, graph, paths_of)),
            )
            anchor_list = anchor_hits(index, anchors[q])
            listed, l_hops, l_str = related, rel_hops, rel_str
            kept = strongest(rel_hops, rel_str, c.max_related)
            if kept is not None:
                listed, l_hops, l_str = related[kept], rel_hops[kept], rel_str[kept]
            rel_hits = entity_hits(
                index,
                listed,
                scores=0.0,
                how="graph",
                hops=l_hops.tolist(),
                strengths=l_str.tolist(),
                paths=LazyColumn(partial(paths_of.many, listed.tolist())),
            )
            facts = []
            if p.use_graph:
                fa, fb = int(fo[q]), int(fo[q + 1])
                q_facts = q_facts_all[fa:fb]
                q_facts_hops = q_hops_all[fa:fb]
                linking = index.fact_object[q_facts] >= 0
                q_facts, q_facts_hops = q_facts[linking], q_facts_hops[linking]
                strength = index.fact_strength[q_facts]
                kept = strongest(q_facts_hops, strength, c.max_facts)
                if kept is not None:
                    q_facts, q_facts_hops, strength = (
                        q_facts[kept],
                        q_facts_hops[kept],
                        strength[kept],
                    )
                facts = fact_hits(
                    index,
                    q_facts,
                    scores=strength,
                    hops=q_facts_hops,
                    anchors=None,
                    components=LazyColumn(partial(_strength_components, strength)),
                )
            results.append(
                batch.result(
                    q,
                    anchors=anchor_list,
                    entities=anchor_list + rel_hits,
                    facts=facts,
                    chunks=chunks,
                    stats={
                        "query_entities": len(anchor_list),
                        "related_entities": len(related),
                        "graph_chunks_scored": len(graph[0]),
                        "graph_chunks_added": sources.count("graph"),
                    },
                    fallback=None if vec is not None else (why or "no chunk vectors"),
                )
            )
    return results


@dataclass(frozen=True, slots=True)
class _Checked:
    """A parameter set's values after the checks every call makes (see :func:`_checked`)."""

    k: int
    candidate_multiplier: int
    vector_weight: float
    text_weight: float
    openclaw: bool
    alpha: float
    beta: float
    max_new: int
    max_related: int
    max_facts: int


def _check(p: HybridExpandParams) -> _Checked:
    """``p``'s checked values (computed once per set: :func:`checked_once`)."""
    k = check_count("k", p.k)
    mult = check_count("candidate_multiplier", p.candidate_multiplier, 1, 1000)
    vw, tw = (check_real(name, getattr(p, name)) for name in ("vector_weight", "text_weight"))
    alpha, beta = check_real("alpha", p.alpha), check_real("beta", p.beta)
    if p.text_score not in ("max", "openclaw"):
        raise ParameterError(f"invalid parameter text_score: {p.text_score!r} (max, openclaw)")
    if p.keyword_mode not in ("or", "and"):
        raise ParameterError(f"invalid parameter keyword_mode: {p.keyword_mode!r} (or, and)")
    max_new = check_count("max_graph_chunks", p.max_graph_chunks, 0)
    max_related = check_count("max_related", p.max_related, 0)
    max_facts = check_count("max_facts", p.max_facts, 0)
    return _Checked(
        k, mult, vw, tw, p.text_score == "openclaw", alpha, beta, max_new, max_related, max_facts
    )


#: additive_merge's source codes.
_SOURCES = ("hybrid", "graph", "hybrid+graph")

_EMPTY_I64: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
_EMPTY_F64: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
_EMPTY_I64.flags.writeable = False
_EMPTY_F64.flags.writeable = False

_Pair = tuple[npt.NDArray[Any], npt.NDArray[Any]]

#: A query's hybrid search inputs: its vector hits (rows, cosines; None without chunk
#: vectors), its keyword hits (rows, BM25 scores, best first), whether text scores are
#: OpenClaw's (1.0 per hit) and the vector and text weights.
_HybridIn = tuple[_Pair | None, _Pair, bool, float, float]

#: A query's graph-sourced chunks: (chunks, best scores, the related entity of each).
_Graph = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]


def _hybrid_top(queries: list[_HybridIn], k: int) -> list[tuple[npt.NDArray[np.int64], Any]]:
    """Each query's ``k`` best hybrid results ``(rows, vector_weight x vector + text_weight x
    text)``, best first, ties by row: the source's merge by one native call for the batch
    (``_core.hybrid_merge``, the formula as written, what :func:`_merged` computes)."""
    if not queries:
        return []
    _, _, openclaw, vw, tw = queries[0]
    v_ids: list[npt.NDArray[Any]] = []
    v_scores: list[npt.NDArray[Any]] = []
    t_ids: list[npt.NDArray[Any]] = []
    t_bm25: list[npt.NDArray[Any]] = []
    for vector, (rows, bm), _, _, _ in queries:
        v_ids.append(_EMPTY_I64 if vector is None else vector[0])
        v_scores.append(_EMPTY_F64 if vector is None else vector[1])
        t_ids.append(rows)
        t_bm25.append(bm)
    f_ids, f_scores, offsets = _core.hybrid_merge(
        *_flat(v_ids, v_scores),
        *_flat(t_ids, t_bm25),
        vector_weight=vw,
        text_weight=tw,
        text_score="openclaw" if openclaw else "max",
        k=k,
    )
    if len(queries) == 1:
        return [(f_ids, f_scores)]
    o = offsets.tolist()
    return [(f_ids[o[q] : o[q + 1]], f_scores[o[q] : o[q + 1]]) for q in range(len(queries))]


def _flat(
    ids: list[npt.NDArray[Any]], scores: list[npt.NDArray[Any]]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uintp]]:
    """Per-query lists as one int64 array, one float64 array (float32 widened, exactly)
    and the query offsets."""
    if len(ids) == 1:
        return (
            np.ascontiguousarray(ids[0], dtype=np.int64),
            np.ascontiguousarray(scores[0], dtype=np.float64),
            np.array((0, len(ids[0])), dtype=np.uintp),
        )
    ends = [0]
    for x in ids:
        ends.append(ends[-1] + len(x))
    return (
        np.concatenate(ids, dtype=np.int64),
        np.concatenate(scores, dtype=np.float64),
        np.array(ends, dtype=np.uintp),
    )


#: A query's hybrid search: chunk -> vector score, normalised text score, BM25 score and
#: their merge (insertion order: the vector hits, then the keyword-only hits).
_Merged = tuple[dict[int, float], dict[int, float], dict[int, float], dict[int, float]]


def _merged(inputs: _HybridIn) -> _Merged:
    """A query's hybrid search as the source's per-chunk dicts (read by the components)."""
    vec, (rows, bm), openclaw, vw, tw = inputs
    # Last one wins within a list, as a dict of per-chunk dicts would.
    vector: dict[int, float] = (
        dict(zip(vec[0].tolist(), vec[1].tolist(), strict=True)) if vec is not None else {}
    )
    bm25 = dict(zip(rows.tolist(), bm.tolist(), strict=True))
    top = float(bm[0]) if len(bm) else 0.0
    if openclaw:
        text = dict.fromkeys(bm25, 1.0)
    elif top > 0:
        text = {c: s_ / top for c, s_ in bm25.items()}
    else:
        text = dict.fromkeys(bm25, 0.0)
    hybrid = {c: vw * v + tw * text.get(c, 0.0) for c, v in vector.items()}
    for c, ts in text.items():
        if c not in vector:
            hybrid[c] = vw * 0.0 + tw * ts
    return vector, text, bm25, hybrid


def _chunk_components(
    ids: list[int],
    scores: list[float],
    inputs: _HybridIn,
    graph_hits: _Graph,
    use_graph: bool,
) -> list[dict[str, float]]:
    """Each final chunk's score components: the hybrid search's, then the graph's and the
    combination's."""
    vector, text, bm25, hybrid = _merged(inputs)
    graph = dict(zip(graph_hits[0].tolist(), graph_hits[1].tolist(), strict=True))
    out = []
    for c, s in zip(ids, scores, strict=True):
        comp = {"vector": vector.get(c, 0.0), "text": text.get(c, 0.0)}
        if c in bm25:
            comp["bm25"] = bm25[c]
        comp["hybrid"] = hybrid.get(c, 0.0)
        if use_graph:
            comp["graph"] = graph.get(c, 0.0)
            comp["combined"] = float(s)
        out.append(comp)
    return out


def _chunk_paths(
    ids: list[int], graph_hits: _Graph, paths_of: EntityPaths
) -> list[tuple[Step, ...]]:
    """Each final chunk's path: to the related entity that gave its graph score."""
    graph_from = dict(zip(graph_hits[0].tolist(), graph_hits[2].tolist(), strict=True))
    return [paths_of(graph_from[c]) if c in graph_from else () for c in ids]


def _strength_components(strength: npt.NDArray[Any]) -> list[dict[str, float]]:
    return [{"strength": s} for s in strength.tolist()]


HybridExpandParams = HybridExpand
"""The former name of :class:`HybridExpand`."""

#: The registry entry.
RECIPE = FunctionRecipe(
    NAME, HybridExpand, _pipeline, default_format="knowledge_graph", takes_context=False
)


def hybrid_expand(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: HybridExpand | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[HybridExpandOverrides],
) -> list[RetrievalResult]:
    """Run seed 003's hybrid search + graph expansion for a batch of queries.

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unused; accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        params: The parameter set (default: :class:`HybridExpand`'s defaults).
        **overrides: Parameters to change in it, by name.

    Returns:
        One result per query: ``chunks`` (components ``vector``, ``text``, ``hybrid``,
        ``graph``, ``combined``; graph-sourced chunks carry the path from the query entity),
        ``anchors`` (recognised query entities), related ``entities`` and the ``facts``
        linking them (for the Knowledge Graph Context block).
    """
    p = resolve_params(HybridExpand, params, overrides)
    return _pipeline(index, queries, p, tenant, now, query_vectors, None, None)
