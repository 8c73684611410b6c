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
formats the edges (:func:`graphrecall.context.known_facts_004`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import fusion
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
    fact_hit,
)

__all__ = ["GraphRecallParams", "graph_recall"]

NAME = "graph_recall"


@dataclass(frozen=True)
class GraphRecallParams:
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

    entities: int = 5
    min_match: float | None = None
    fuzzy: bool = True
    max_hops: int = 2
    recall_limit: int = 10
    dedupe: str = "triple"
    chunks: int = 10
    vector_chunks: int = 20
    rrf_k: float = 60.0


def graph_recall(
    index: GraphIndex,
    queries: str | Sequence[str],
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **params: Any,
) -> list[RetrievalResult]:
    """Run seed 004's graph recall (and its RRF fusion with vector recall) for a batch.

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unused by the formula; accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        **params: Overrides of :class:`GraphRecallParams`.

    Returns:
        One result per query: ``facts`` (composite score, hop, anchor), ``anchors`` with
        their match scores, and ``chunks`` fused by RRF (components: the vector and graph
        ranks).
    """
    p = with_params(GraphRecallParams(), params)
    qs, _ = check_queries(queries)
    t = index.tenant_code(tenant)
    tenant_name = index.graph.tenants.names[t]
    n_match = check_count("entities", p.entities, 1, 1000)
    limit = check_count("recall_limit", p.recall_limit)
    n_chunks = check_count("chunks", p.chunks, 0)
    check_real("rrf_k", p.rrf_k)
    timer = Timer()
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
    ids = index.graph.entity_ids
    with timer.stage("graph"):
        rec = index.graph.graph_recall(
            [ids[[a[0] for a in row]] if row else [] for row in anchors],
            [[a[1] for a in row] for row in anchors],
            max_hops=p.max_hops,
            direction="both",
            top_k=limit,
            dedupe=p.dedupe,
            tenant=tenant_name,
        )
    vec = None
    if n_chunks:
        with timer.stage("vector"):
            vec = chunk_search(index, qv, t, check_count("vector_chunks", p.vector_chunks))
    results = []
    core = rec._core
    off, facts, scores, hops, anch = core.offsets, core.facts, core.scores, core.hops, core.anchors
    with timer.stage("results"):
        for q, query in enumerate(qs):
            a, b = int(off[q]), int(off[q + 1])
            match = {r: s for r, s, _ in anchors[q]}
            hits = []
            for i in range(a, b):
                f = int(facts[i])
                an = int(anch[i])
                hits.append(
                    fact_hit(
                        index,
                        f,
                        score=float(scores[i]),
                        hop=int(hops[i]),
                        anchor=an,
                        components={
                            "match": float(match.get(an, 0.0)),
                            "hop_factor": 1.0 / (1 + int(hops[i])),
                            "confidence": float(index.fact_confidence[f]),
                        },
                    )
                )
            chunks = []
            if n_chunks:
                chunks = _fused_chunks(
                    index, hits, facts[a:b], scores[a:b], vec[q] if vec else None, n_chunks, p.rrf_k
                )
            anchor_hits = [entity_hit(index, r, score=s, how=how) for r, s, how in anchors[q]]
            results.append(
                RetrievalResult(
                    recipe=NAME,
                    query=query,
                    tenant=tenant_name,
                    anchors=anchor_hits,
                    entities=list(anchor_hits),
                    facts=hits,
                    chunks=chunks,
                    stats={"edges": b - a},
                    params=dict(p.__dict__),
                    fallback=fallback,
                )
            )
    for r in results:
        r.timings = dict(timer.seconds)
    return results


def _fused_chunks(
    index: GraphIndex,
    hits: list[Any],
    facts: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    vec: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None,
    n: int,
    rrf_k: float,
) -> list[Any]:
    """RRF of the vector ranking and the graph ranking of chunks."""
    best: dict[int, float] = {}
    for f, s in zip(facts.tolist(), scores.tolist(), strict=True):
        for e in (int(index.fact_subject[f]), int(index.fact_object[f])):
            if e < 0:
                continue
            for c in index.mentions.chunks_of(e)[0].tolist():
                if s > best.get(c, -1.0):
                    best[c] = s
    graph_rank = sorted(best, key=lambda c: (-best[c], c))
    lists = [graph_rank]
    vec_rank: list[int] = []
    if vec is not None:
        vec_rank = vec[0].tolist()
        lists.append(vec_rank)
    if not any(lists):
        return []
    fused = fusion.rrf([np.asarray(x, dtype=np.int64) for x in lists], k=rrf_k, top_k=n)
    gpos = {c: i + 1 for i, c in enumerate(graph_rank)}
    vpos = {c: i + 1 for i, c in enumerate(vec_rank)}
    out = []
    for c, s in zip(fused.ids.tolist(), fused.scores.tolist(), strict=True):
        comp = {"rrf": float(s)}
        if c in gpos:
            comp["graph_rank"] = float(gpos[c])
        if c in vpos:
            comp["vector_rank"] = float(vpos[c])
        source = "fused" if c in gpos and c in vpos else ("graph" if c in gpos else "vector")
        out.append(chunk_hit(index, int(c), score=float(s), source=source, components=comp))
    return out
