"""Recipe ``graph_recall``: seed 004, "graph-aware retrieval with BFS traversal and RRF fusion".

1. Entity matching: embed the query, the top 5 entities by cosine (the match scores); the
   fuzzy name match as the fallback (when there are no vectors, embedding fails, or no
   entity reaches ``min_match``).
2. BFS from every matched entity, ``max_hops`` (2) in both directions (the recursive CTE
   walks edges either way).
3. ``composite_score = entity_match_score x (1 / (1 + hop_distance)) x confidence`` per
   collected edge (its best over anchors and hops).
4. Dedup edges with the same (source, target, relation).
5. Sort by composite desc, keep ``recall_limit`` (10).

RRF fusion with vector recall (k = 60): the chunks of the tenant ranked by vector similarity
and the chunks ranked by the graph (a chunk takes the best composite of the recalled edges
whose endpoints it mentions) are fused by reciprocal rank. The "## Known Facts" block
formats the edges (:func:`graphrecall.context.known_facts`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from .. import _core
from ..index import GraphIndex
from .anchoring import (
    Anchor,
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
    anchor_hits,
    check_count,
    check_real,
    chunk_hits,
    fact_hits,
)
from .overrides import GraphRecallOverrides
from .registry import FunctionRecipe
from .stages import begin, resolve_params

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router

__all__ = ["RECIPE", "GraphRecall", "GraphRecallParams", "graph_recall"]

NAME = "graph_recall"


@dataclass(frozen=True)
class GraphRecall:
    """Seed 004's parameters, with its defaults.

    Attributes:
        entities: Matched entities by cosine (top 5).
        min_match: Vector matches below this cosine are dropped (None: keep the top 5).
        fuzzy: Run the fuzzy name match as the fallback (True).
        max_hops: BFS depth (2, the source's ``config.max_hops`` default).
        recall_limit: Edges returned (10).
        dedupe: "triple" (same source, target, relation: the source) or "fact".
        chunks: Chunks returned after RRF fusion (0: no chunk recall).
        vector_chunks: Vector recall depth fused by RRF.
        rrf_k: RRF constant (60).
    """

    recipe: ClassVar[str] = "graph_recall"

    entities: int = 5
    min_match: float | None = None
    fuzzy: bool = True
    max_hops: int = 2
    recall_limit: int = 10
    dedupe: str = "triple"
    chunks: int = 10
    vector_chunks: int = 20
    rrf_k: float = 60.0


def _pipeline(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: GraphRecall,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """GraphRecall's pipeline (see :func:`graph_recall`)."""
    batch = begin(NAME, index, queries, tenant=tenant, now=now, params=p)
    qs, t, tenant_name, timer = batch.queries, batch.tenant, batch.tenant_name, batch.timer
    n_match = check_count("entities", p.entities, 1, 1000)
    limit = check_count("recall_limit", p.recall_limit)
    n_chunks = check_count("chunks", p.chunks, 0)
    rrf_k = check_real("rrf_k", p.rrf_k)
    qv, why = embed_batch(index, qs, query_vectors, timer)
    fallback = None
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, n_match, p.min_match)
        if found is None:
            fallback = why or "no entity vectors"
            found = [[] for _ in qs]
        anchors: list[list[Anchor]] = []
        for q, query in enumerate(qs):
            row = found[q]
            if not row and p.fuzzy:
                row = name_anchors(index, query, t, n_match, "fuzzy")
            anchors.append(row)
    with timer.stage("graph"):
        plan = cached_plan(
            index,
            NAME,
            p,
            t,
            lambda: index.graph.recall_plan(
                max_hops=p.max_hops,
                direction="both",
                top_k=limit,
                dedupe=p.dedupe,  # type: ignore[arg-type]
                tenant=tenant_name,
            ),
        )
        rows, match_scores, offsets = dense_batch(anchors)
        rec = plan.dense(rows, match_scores, offsets)
    vec = None
    if n_chunks:
        with timer.stage("vector"):
            vec = chunk_search(index, qv, t, check_count("vector_chunks", p.vector_chunks))
    results = []
    core = rec.core
    off, facts, scores, hops, anch = core.offsets, core.facts, core.scores, core.hops, core.anchors
    with timer.stage("results"):
        off_l = off.tolist()
        for q in range(len(qs)):
            a, b = off_l[q], off_l[q + 1]
            q_facts = facts[a:b]
            hop_l = hops[a:b].tolist()
            hits = fact_hits(
                index,
                q_facts,
                scores=scores[a:b],
                hops=hop_l,
                anchors=anch[a:b],
                components=LazyColumn(
                    partial(_components, index, anchors[q], q_facts, anch[a:b], hop_l)
                ),
            )
            chunks = []
            if n_chunks:
                chunks = _fused_chunks(
                    index, q_facts, scores[a:b], vec[q] if vec else None, n_chunks, rrf_k
                )
            anchor_list = anchor_hits(index, anchors[q])
            results.append(
                batch.result(
                    q,
                    anchors=anchor_list,
                    entities=list(anchor_list),
                    facts=hits,
                    chunks=chunks,
                    stats={"edges": b - a},
                    fallback=fallback,
                )
            )
    return results


def _components(
    index: GraphIndex,
    anchors: list[Anchor],
    facts: npt.NDArray[np.int64],
    fact_anchors: npt.NDArray[np.int64],
    hops: list[int],
) -> list[dict[str, float]]:
    """Each recalled edge's composite factors: its anchor's match, 1 / (1 + hop), its
    confidence."""
    match = {r: s for r, s, _ in anchors}
    return [
        {"match": float(match.get(an, 0.0)), "hop_factor": 1.0 / (1 + h), "confidence": c}
        for an, h, c in zip(
            fact_anchors.tolist(), hops, index.fact_confidence[facts].tolist(), strict=True
        )
    ]


def _fused_chunks(
    index: GraphIndex,
    facts: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    vec: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None,
    n: int,
    rrf_k: float,
) -> list[ChunkHit]:
    """RRF of the vector ranking and the graph ranking of chunks (a chunk's graph score: the
    best composite of the recalled edges whose endpoints it mentions)."""
    ends = np.concatenate((index.fact_subject[facts], index.fact_object[facts]))
    m = index.mentions
    # Chunks by their best mention score (only scores above -1 count; NaN never does), ties
    # by chunk: one native call over the mention CSR.
    ranked, _ = _core.best_mentioned_chunks(
        m.entity_offsets,
        m.entity_chunks,
        m.entity_counts,
        ends,
        np.concatenate((scores, scores)).astype(np.float64, copy=False),
    )
    graph_rank: list[int] = ranked.tolist()
    vec_rank: list[int] = vec[0].tolist() if vec is not None else []
    if not graph_rank and not vec_rank:
        return []
    lists = [np.array(graph_rank, dtype=np.int64)]
    if vec is not None:
        lists.append(np.ascontiguousarray(vec[0], dtype=np.int64))
    fused_ids, fused_scores = rrf_arrays(lists, k=rrf_k, top_k=n)
    ids = fused_ids.tolist()
    fscores = fused_scores.tolist()
    in_graph = set(graph_rank)
    in_vec = set(vec_rank)
    sources = [("fused" if c in in_vec else "graph") if c in in_graph else "vector" for c in ids]
    return chunk_hits(
        index,
        ids,
        scores=fscores,
        sources=sources,
        components=LazyColumn(partial(_rrf_components, ids, fscores, graph_rank, vec_rank)),
    )


def rrf_arrays(
    lists: Sequence[npt.NDArray[np.int64]], *, k: float, top_k: int | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """:func:`graphrecall.fusion.rrf` of one query's ranked lists given as contiguous int64
    arrays, weights 1, unchecked (``k`` finite and ``>= 0``, ``top_k`` checked by the
    recipe): the public function's checks and conversions cost more than the fusion.

    Returns:
        The fused ids and scores.
    """
    n = len(lists)
    lens = [0]
    for x in lists:
        lens.append(lens[-1] + len(x))
    query_offsets, weights = _RRF_ONE.get(n) or _rrf_one(n)
    ids, scores, _ = _core.rrf_fuse(
        lists[0] if n == 1 else np.concatenate(lists) if n else np.empty(0, np.int64),
        np.array(lens, dtype=np.uintp),
        query_offsets,
        weights,
        k=k,
        top_k=top_k,
    )
    return ids, scores


#: Per number of lists: the query offsets and unit weights of one query (read-only).
_RRF_ONE: dict[int, tuple[npt.NDArray[np.uintp], npt.NDArray[np.float64]]] = {}


def _rrf_one(n: int) -> tuple[npt.NDArray[np.uintp], npt.NDArray[np.float64]]:
    offsets = np.array([0, n], dtype=np.uintp)
    weights = np.ones(n, dtype=np.float64)
    offsets.flags.writeable = False
    weights.flags.writeable = False
    if n <= 16:
        _RRF_ONE[n] = (offsets, weights)
    return offsets, weights


def _rrf_components(
    ids: list[int], scores: list[float], graph_rank: list[int], vec_rank: list[int]
) -> list[dict[str, float]]:
    """Each fused chunk's RRF score and its ranks in the graph and vector lists (1-based)."""
    gpos = {c: i + 1 for i, c in enumerate(graph_rank)}
    vpos = {c: i + 1 for i, c in enumerate(vec_rank)}
    comps = []
    for c, s in zip(ids, scores, strict=True):
        comp = {"rrf": s}
        g = gpos.get(c)
        v = vpos.get(c)
        if g is not None:
            comp["graph_rank"] = float(g)
        if v is not None:
            comp["vector_rank"] = float(v)
        comps.append(comp)
    return comps


GraphRecallParams = GraphRecall
"""The former name of :class:`GraphRecall`."""

#: The registry entry.
RECIPE = FunctionRecipe(
    NAME, GraphRecall, _pipeline, default_format="known_facts", takes_context=False
)


def graph_recall(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: GraphRecall | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[GraphRecallOverrides],
) -> list[RetrievalResult]:
    """Run seed 004's graph recall (and its RRF fusion with vector recall) for a batch.

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unused by the formula; accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        params: The parameter set (default: :class:`GraphRecall`'s defaults).
        **overrides: Parameters to change in it, by name.

    Returns:
        One result per query: ``facts`` (composite score, hop, anchor), ``anchors`` with
        their match scores, and ``chunks`` fused by RRF (components: the vector and graph
        ranks).
    """
    p = resolve_params(GraphRecall, params, overrides)
    return _pipeline(index, queries, p, tenant, now, query_vectors, None, None)
