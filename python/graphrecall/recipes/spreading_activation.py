"""Recipe ``spreading_activation``: seed 000, "Graph-RAG Retrieval Strategy" (ADR 3).

1. **Vector anchor**: the top 3 entities of the user's tenant by cosine similarity to the
   query (``findAnchorEntities(..., limit = 3)``); if embedding fails, keyword search on
   entity names ("Adopted as fallback").
2. **Spreading activation**: BFS from the anchors, ``maxHops = 2``; each entity expanded
   once, its first 10 facts by confidence among status ``staged`` / ``confirmed``; the
   traversal stops before a hop once ``maxFacts = 30`` facts were collected (checked between
   hops only, as the source does, so a query can return more than 30).
3. **Relevance scoring**: every collected fact ranked by ``scoreFact`` at ``now``:
   ``confidence x sourceWeight x decay x usageBoost x statusWeight`` (source weights
   user_edit 2.0, file 1.5, system 1.2, conversation 1.0; 5 % per week after a one-week
   grace period on ``last_accessed``; ``1 + log10(accessCount + 1) x 0.5``; confirmed 1.2).
4. **Narrative**: facts grouped by subject under "### 👤 USER CONTEXT" /
   "### 💡 CONTEXT: name" headers (:func:`graphrecall.context.narrative`), with the
   object entity's *name* where the source printed ``...`` (its TODO).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from ..index import GraphIndex
from ..scoring import NULL_TIME, FactScoreProfile
from .anchoring import (
    cached_plan,
    chunk_search,
    dense_batch,
    embed_batch,
    entity_search,
    name_anchors,
)
from .base import (
    LazyColumn,
    anchor_columns,
    check_count,
    chunk_columns,
    entity_columns,
    fact_columns,
)
from .columns import HitChain, HitColumns
from .hits import RetrievalResult
from .overrides import SpreadingActivationOverrides
from .registry import FunctionRecipe
from .stages import begin, resolve_params
from .support import supporting_chunks_batch

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router

__all__ = ["RECIPE", "SpreadingActivation", "SpreadingActivationParams", "spreading_activation"]

NAME = "spreading_activation"
_T = TypeVar("_T")


@dataclass(frozen=True)
class SpreadingActivation:
    """Seed 000's parameters, with its defaults.

    Attributes:
        anchors: Anchor entities per query (``limit = 3``).
        max_hops: BFS rounds (``maxHops = 2``).
        per_entity_limit: Facts per expanded entity by confidence (``LIMIT 10``).
        max_facts: The stop rule checked between hops (``maxFacts = 30``).
        statuses: Admitted fact statuses (``IN ('staged', 'confirmed')``).
        direction: "out" (the source reads outgoing facts), "in" or "both".
        min_anchor_score: Drop vector anchors below this cosine (None: keep the top 3).
        fallback: Name search when embedding fails: "keyword" (the source), "fuzzy",
            "recognize" or None (no anchors).
        top_k: Keep only the best k facts after ranking (None: all, as the source).
        profile: scoreFact's constants.
        passages: The chunks supporting the ranked facts returned in ``chunks`` at most
            (:mod:`.support`); when no fact reaches any, the top chunks by cosine, with
            ``result.fallback`` saying so (0: no chunks).
    """

    recipe: ClassVar[str] = "spreading_activation"

    anchors: int = 3
    max_hops: int = 2
    per_entity_limit: int | None = 10
    max_facts: int | None = 30
    statuses: tuple[str, ...] | None = ("staged", "confirmed")
    direction: str = "out"
    min_anchor_score: float | None = None
    fallback: str | None = "keyword"
    top_k: int | None = None
    profile: FactScoreProfile = field(default_factory=FactScoreProfile)
    passages: int = 10


def _components(
    index: GraphIndex, facts: npt.NDArray[np.int64], now: int, p: FactScoreProfile
) -> list[dict[str, float]]:
    """scoreFact's factors per fact (for explain), computed as the source writes them."""
    if not len(facts):
        return []
    cols = index.graph.core.fact_rows(facts)
    conf, status, source, access, last = cols[3], cols[5], cols[6], cols[7], cols[8]
    # Vectorised; each factor as the source computes it (the score itself comes from the
    # core, bit-exact; these are its explanation).
    sw_table = np.asarray([*p.source_weights, p.default_source_weight], dtype=np.float64)
    st_table = np.asarray([*p.status_weights, p.default_status_weight], dtype=np.float64)
    sw = sw_table[np.minimum(source.astype(np.int64), len(p.source_weights))]
    stw = st_table[np.minimum(status.astype(np.int64), len(p.status_weights))]
    last64 = last.astype(np.int64)
    known = last64 != NULL_TIME
    weeks = np.where(known, (now - last64) * 1000 / (1000 * 60 * 60 * 24 * 7), 0.0)
    decay = np.where(known & (weeks > p.grace_weeks), p.decay_base ** (weeks - p.grace_weeks), 1.0)
    usage = 1 + np.log10(access.astype(np.float64) + 1) * p.usage_log_factor
    return [
        {
            "confidence": c,
            "source_weight": a,
            "decay": d,
            "usage_boost": u,
            "status_weight": b,
        }
        for c, a, d, u, b in zip(
            conf.astype(np.float64).tolist(),
            sw.tolist(),
            decay.tolist(),
            usage.tolist(),
            stw.tolist(),
            strict=True,
        )
    ]


def _pipeline(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: SpreadingActivation,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """SpreadingActivation's pipeline (see :func:`spreading_activation`)."""
    batch = begin(
        NAME,
        index,
        queries,
        tenant=tenant,
        now=now,
        params=p,
        now_needed="scoreFact needs the current time (unix seconds)",
    )
    qs, t, tenant_name, timer = batch.queries, batch.tenant, batch.tenant_name, batch.timer
    k = check_count("anchors", p.anchors, 1, 1000)
    n_passages = check_count("passages", p.passages, 0, 10_000)
    qv, why = embed_batch(index, qs, query_vectors, timer)
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, k, p.min_anchor_score)
        fallback = None
        if found is None:
            fallback = why or "no entity vectors"
            found = [name_anchors(index, q, t, k, p.fallback) if p.fallback else [] for q in qs]
    with timer.stage("graph"):
        plan = cached_plan(
            index,
            NAME,
            p,
            t,
            lambda: index.graph.spread_plan(
                max_hops=p.max_hops,
                per_entity_limit=p.per_entity_limit,
                max_facts=p.max_facts,
                direction=p.direction,  # type: ignore[arg-type]
                statuses=p.statuses,
                tenant=tenant_name,
                rank="score_fact",
                top_k=p.top_k,
                profile=p.profile,
            ),
        )
        rows, _, offsets = dense_batch(found)
        act = plan.dense(rows, offsets, now=now)
    results = []
    with timer.stage("results"):
        core = act.core
        fo_arr = core.fact_offsets
        fo, eo = fo_arr.tolist(), core.entity_offsets.tolist()
        all_facts, all_anchors, all_parents = core.facts, core.anchors, core.parents
        # Per-fact and per-entity columns as lists once per batch: a query's are list slices.
        all_hops = core.hops.tolist()
        scores = core.scores
        if scores is None:
            scores = np.zeros(len(all_facts), dtype=np.float64)
        ents, ehops, eanch, estr = (
            core.entities,
            core.entity_hops,
            core.entity_anchors,
            core.entity_strengths,
        )
        ents_l, ehops_l = ents.tolist(), ehops.tolist()
        estr_l = estr.astype(np.float64).tolist()
        # Every query's supporting chunks in one native call.
        support = (
            supporting_chunks_batch(index, all_facts, scores, fo_arr, n_passages)
            if n_passages
            else None
        )
        if support is not None:
            so = support.offsets.tolist()
            s_rows, s_scores, s_counts = (
                support.rows.tolist(),
                support.scores.tolist(),
                support.counts.tolist(),
            )
        # scoreFact's factors, for the whole batch on the first read of any of them.
        comps = LazyColumn(partial(_components, index, all_facts, int(now or 0), p.profile))
        for q in range(len(qs)):
            a, b = fo[q], fo[q + 1]
            hops = all_hops[a:b]
            hits = fact_columns(
                index,
                all_facts[a:b],
                scores=scores[a:b],
                hops=hops,
                anchors=all_anchors[a:b],
                components=LazyColumn(partial(_slice, comps, a, b)),
                parents=all_parents[a:b],
            )
            found_q = found[q]
            anchor_list = anchor_columns(index, found_q)
            ea, eb = eo[q], eo[q + 1]
            # Reached entities but the anchors: the graph call lists each entity once, the
            # anchors usually first (then a slice), else a few comparisons.
            na = len(found_q)
            first = ents_l[ea : ea + na]
            if first == [r for r, _, _ in found_q] and not set(first).intersection(
                ents_l[ea + na : eb]
            ):
                reached = entity_columns(
                    index,
                    ents[ea + na : eb],
                    scores=0.0,
                    how="graph",
                    hops=ehops_l[ea + na : eb],
                    anchors=eanch[ea + na : eb],
                    strengths=estr_l[ea + na : eb],
                )
            else:
                e_rows = ents[ea:eb]
                mask = np.ones(eb - ea, dtype=bool)
                for r, _, _ in found_q:
                    mask &= e_rows != r
                keep = np.flatnonzero(mask)
                kept = keep.tolist()
                reached = entity_columns(
                    index,
                    e_rows[keep],
                    scores=0.0,
                    how="graph",
                    hops=[ehops_l[ea + i] for i in kept],
                    anchors=eanch[ea:eb][keep],
                    strengths=[estr_l[ea + i] for i in kept],
                )
            # Facts per hop, in first-seen order.
            hops_fanout: dict[int, int] = {}
            for h in hops:
                hops_fanout[h] = hops_fanout.get(h, 0) + 1
            if support is None:
                chunks, why_chunks = None, None
            else:
                sa, sb = so[q], so[q + 1]
                chunks, why_chunks = _passages(
                    index,
                    s_rows[sa:sb],
                    s_scores[sa:sb],
                    s_counts[sa:sb],
                    n_passages,
                    qv,
                    q,
                    t,
                )
            results.append(
                batch.result(
                    q,
                    anchors=anchor_list,
                    entities=HitChain(anchor_list, reached),
                    facts=hits,
                    chunks=() if chunks is None else chunks,
                    stats={"facts_per_hop": hops_fanout, "entities_reached": eb - ea},
                    fallback=fallback if why_chunks is None else why_chunks,
                )
            )
    return results


def _passages(
    index: GraphIndex,
    rows: list[int],
    sc: list[float],
    counts: list[int],
    n: int,
    qv: npt.NDArray[np.float32] | None,
    q: int,
    tenant: int,
) -> tuple[HitColumns | None, str | None]:
    """Query ``q``'s passages: the chunks supporting its facts (``rows`` with their scores
    and mention counts), else (no fact reaches a chunk) its top chunks by cosine and why."""
    if rows:
        return chunk_columns(
            index,
            rows,
            scores=sc,
            sources="facts",
            components=LazyColumn(partial(_support_components, sc, counts)),
        ), None
    found = chunk_search(index, None if qv is None else qv[q : q + 1], tenant, n)
    if not found or not len(found[0][0]):
        return None, None
    r, cos = found[0]
    cl = [float(x) for x in cos.tolist()]
    hits = chunk_columns(
        index,
        r.tolist(),
        scores=cl,
        sources="vector",
        components=LazyColumn(partial(_cosine_components, cl)),
    )
    return hits, "no ranked fact is mentioned by a chunk: passages by cosine"


def _support_components(scores: list[float], counts: list[int]) -> list[dict[str, float]]:
    """A supporting chunk's score components: its fact's score and its mentions."""
    return [{"fact_score": s, "mentions": float(c)} for s, c in zip(scores, counts, strict=True)]


def _cosine_components(cosines: list[float]) -> list[dict[str, float]]:
    return [{"cosine": x} for x in cosines]


def _slice(column: LazyColumn[_T], a: int, b: int) -> Sequence[_T]:
    return column.values()[a:b]


SpreadingActivationParams = SpreadingActivation
"""The former name of :class:`SpreadingActivation`."""

#: The registry entry.
RECIPE = FunctionRecipe(
    NAME, SpreadingActivation, _pipeline, default_format="narrative", takes_context=False
)


def spreading_activation(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: SpreadingActivation | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[SpreadingActivationOverrides],
) -> list[RetrievalResult]:
    """Run seed 000's pipeline for a batch of queries (one embedding call, one graph call).

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The user / tenant (may be omitted when the graph holds one).
        now: Unix seconds to score at (scoreFact's ``Date.now()``); required.
        query_vectors: Pre-computed query embeddings (n, d), skipping the embedder.
        params: The parameter set (default: :class:`SpreadingActivation`'s defaults).
        **overrides: Parameters to change in it, by name.

    Returns:
        One :class:`RetrievalResult` per query: ranked ``facts`` (scoreFact, components,
        path from the anchor), ``anchors``, reached ``entities`` in narrative order, and
        the ``chunks`` supporting the facts (see ``passages``).

    Raises:
        ParameterError, UnknownTenantError: Bad parameters or tenant.
    """
    p = resolve_params(SpreadingActivation, params, overrides)
    return _pipeline(index, queries, p, tenant, now, query_vectors, None, None)
