"""Recipe ``ppr``: Personalized PageRank spreading activation (HippoRAG), beyond the seeds.

HippoRAG (Gutiérrez et al., 2024) links the query's entities to graph nodes, runs
Personalized PageRank from them and ranks passages by the probability mass that reaches
them; HippoRAG 2 adds dense passage scores and seeds passages too. Without an LLM in the hot
path, this recipe:

1. **Seeds** PPR with two kinds of mass:

   * *passage seeds* (share ``1 - entity_seed_share``, 0.9): the top ``seed_chunks`` (2)
     chunks by cosine, weighted by a softmax of their similarity (temperature 0.02), each
     chunk's weight split over the entities it mentions by mention count x node specificity
     (``1 / |chunks mentioning the entity|``, HippoRAG's);
   * *entity seeds* (share ``entity_seed_share``, 0.1): the query's n-gram name / alias
     matches (seed 003's recognition) and the top ``entities`` (default 0: none) entities by
     cosine, weighted by their score x specificity.

2. **Spreads**: PPR over the tenant's graph (facts as undirected edges, ``weight``
   "uniform", damping 0.5 as HippoRAG), by local forward push with residual threshold
   ``epsilon`` (5e-5; None = exact power iteration over the whole tenant graph).
3. **Scores chunks**: an entity's probability goes to its defining chunk (``primary_chunk``,
   seed 001's "primary source chunk") when it has one, else is spread over the chunks
   mentioning it in proportion to the mention counts (a random walk's entity -> passage
   step). ``final = cosine + graph_weight x graph / max(graph)`` (``graph_weight`` 1.0)
   over the top ``dense_k`` (``max(k, 10)``) chunks by cosine and the top ``graph_k`` (20)
   chunks the graph reached.
4. **Boosts named passages**: a chunk whose subject the query names (the primary chunk of
   a recognised entity) gains ``name_boost`` (0.3) x the match score
   (``benches/results/router.md``).
5. **Re-ranks from the top passage** (a multi-hop step without an LLM) among the best
   ``max(k, 10)`` candidates: each chunk below the top one gains

   * ``bridge`` (0.4) x ``1 / sqrt(|chunks mentioning it|)`` for the rarest entity it
     shares with the top chunk (a second hop's passage names the first hop's answer, which
     few other passages mention; the square root, flatter than HippoRAG's specificity,
     lets an answer that a handful of passages mention still bridge);
   * ``cover`` (0.4) x its name match score when the query names it by an entity the top
     chunk does not mention (the second passage covers what the first misses: "Are X and
     Y ...");
   * ``terms`` (0.6) x the share of the query's words (stopwords aside) it holds and the
     top chunk lacks.

   The top chunk gains the most each step can give, so it stays first
   (``benches/results/router.md``).

The defaults were chosen on the two evaluation sets together (MuSiQue and HotpotQA,
``benches/eval_recall.py``), the same for both; the search and each parameter's effect on
recall are in ``benches/results/ppr-defaults.md``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import ParameterError
from ..index import GraphIndex
from .anchoring import (
    checked_once,
    chunk_search,
    embed_batch,
    entity_search,
    index_cache,
    name_anchors,
)
from .base import (
    RetrievalResult,
    check_count,
    check_real,
    chunk_hits,
    entity_hits,
)
from .overrides import PPROverrides
from .ppr_rerank import POOL, Cover, bridge_weights, query_terms, rerank_from_top
from .registry import FunctionRecipe
from .stages import begin, resolve_params

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router

__all__ = ["PPR", "RECIPE", "PPRParams", "ppr"]

NAME = "ppr"

#: Empty entities and scores (shared, read-only): a query without seeds or vectors.
_NO_ENTS = np.zeros(0, dtype=np.int64)
_NO_MASS = np.zeros(0, dtype=np.float64)
_NO_ENTS.flags.writeable = False
_NO_MASS.flags.writeable = False


@dataclass(frozen=True)
class PPR:
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
        name_boost: Added (times the name match's score) to the final score of a chunk
            whose subject the query names: the primary chunk of a recognised entity
            (0: none; needs ``recognize``).
        bridge: Added (times ``1 / sqrt(|chunks mentioning it|)`` for the rarest entity
            shared with the top chunk) to the score of each of the best ``max(k, 10)``
            candidates: the multi-hop bridge step (0: none).
        cover: Added (times the name match's score) to the score of each of those
            candidates whose subject the query names by an entity the top chunk does not
            mention: the second passage covers what the first misses (0: none; needs
            ``recognize``).
        terms: Added (times the share of the query's words, stopwords aside, that a
            candidate holds and the top chunk does not) to the score of each of those
            candidates (0: none).
        dense_k: Chunks by cosine that are ranked with the graph's (None: the re-ranking
            pool ``max(k, 10)``, or ``k`` with ``bridge``, ``cover`` and ``terms`` all 0; more
            never changed R@2 / R@5 on the evaluation sets, and each costs a rerank).
        graph_k: Chunks by graph score that are ranked with the dense ones (20; 10 to
            100 scored the same on both evaluation sets).
        epsilon: Forward-push residual threshold (approximate local PPR, see
            :meth:`~graphrecall.KnowledgeGraph.personalized_pagerank`); None = exact power
            iteration over the whole tenant graph.
        max_iter, tol: Power iteration limits (exact mode only).
    """

    recipe: ClassVar[str] = "ppr"

    k: int = 10
    seed_chunks: int = 2
    seed_temperature: float = 0.02
    entities: int = 0
    recognize: bool = True
    recognize_limit: int = 10
    entity_seed_share: float = 0.1
    specificity: bool = True
    damping: float = 0.5
    weight: Literal["strength", "confidence", "uniform"] = "uniform"
    graph_weight: float = 1.0
    name_boost: float = 0.3
    bridge: float = 0.4
    cover: float = 0.4
    terms: float = 0.6
    dense_k: int | None = None
    graph_k: int = 20
    epsilon: float | None = 5e-5
    max_iter: int = 100
    tol: float = 1e-8


def _pipeline(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: PPR,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """PPR's pipeline (see :func:`ppr`)."""
    batch = begin(NAME, index, queries, tenant=tenant, now=now, params=p)
    qs, t, timer = batch.queries, batch.tenant, batch.timer
    if not index_cache(index, ("chunks-of", t), lambda: bool((index.chunk_tenant == t).any())):
        raise ParameterError(
            f"recipe ppr ranks chunks: tenant {batch.tenant_name!r} has none (use a fact "
            "recipe such as graph_recall)"
        )
    c = checked_once(p, _check)
    k, n_seed_chunks, temp, share, lam = c.k, c.seed_chunks, c.temp, c.share, c.lam
    dense_k, graph_k, eps = c.dense_k, c.graph_k, c.eps
    qv, why = embed_batch(index, qs, query_vectors, timer)
    m = index.mentions
    spec_of, spec_l, primary = index_cache(
        index, ("ppr", p.specificity), lambda: (*_spec(m, p.specificity), _primary(index))
    )

    with timer.stage("vector"):
        dense = chunk_search(index, qv, t, max(dense_k, n_seed_chunks))
    with timer.stage("anchors"):
        found = entity_search(index, qv, t, c.entities) if c.entities else None
        seeds: list[tuple[list[int], list[float], list[str]]] = []
        # Per query, the chunks whose subject it names (primary chunk -> match score) and
        # the entities naming them (primary chunk -> entity rows).
        named: list[dict[int, float] | None] = [None] * len(qs)
        named_ents: list[dict[int, list[int]] | None] = [None] * len(qs)
        for q, query in enumerate(qs):
            ent_mass: dict[int, tuple[float, str]] = {}
            if p.recognize:
                for r, s, how in name_anchors(index, query, t, c.lim, "recognize"):
                    ent_mass[r] = (s * spec_l[r], how)
                    if (c.name_boost or c.cover) and primary is not None and primary[r] >= 0:
                        got = named[q]
                        if got is None:
                            got = named[q] = {}
                        pc = int(primary[r])
                        got[pc] = max(got.get(pc, 0.0), s)
                        if c.cover:
                            by = named_ents[q]
                            if by is None:
                                by = named_ents[q] = {}
                            by.setdefault(pc, []).append(r)
            if found is not None:
                for r, s, how in found[q]:
                    v = max(s, 0.0) * spec_l[r]
                    if v > ent_mass.get(r, (-1.0, how))[0]:
                        ent_mass[r] = (v, how)
            c_ents, c_mass = _passage_seeds(
                m, spec_of if p.specificity else None, dense, q, n_seed_chunks, temp
            )
            te = sum(v for v, _ in ent_mass.values())
            tc = float(c_mass.sum()) if len(c_mass) else 0.0
            we = share if tc > 0 else 1.0
            wc_ = 1.0 - we if te > 0 else 1.0
            mass: dict[int, tuple[float, str]] = {}
            if tc > 0:
                f = wc_ / tc
                for e, v in zip(c_ents.tolist(), c_mass.tolist(), strict=True):
                    mass[e] = (v * f, "chunk")
            if te > 0:
                for e, (v, how) in ent_mass.items():
                    mass[e] = (mass.get(e, (0.0, how))[0] + we * v / te, how)
            rows_l: list[int] = []
            vals_l: list[float] = []
            hows_l: list[str] = []
            for e, (v, how) in mass.items():
                if v > 0:
                    rows_l.append(e)
                    vals_l.append(v)
                    hows_l.append(how)
            seeds.append((rows_l, vals_l, hows_l))
    # Queries without seed mass get no graph scores (PPR needs a personalisation).
    seeded = [q for q, row in enumerate(seeds) if row[0]]
    slot = {q: j for j, q in enumerate(seeded)}
    pr_offsets = pr_ents = pr_scores = pr_iters = None
    with timer.stage("graph"):
        if seeded:
            # One kernel call for the batch, straight to the core: the seeds already are
            # dense indices, so the public wrapper's id lookups (in and out) are skipped.
            offsets: npt.NDArray[np.int64] | None = None  # None: one query
            if len(seeded) == 1:  # a single query: no offsets, no concatenation
                s_rows, s_vals, _ = seeds[seeded[0]]
            else:
                offsets = np.zeros(len(seeded) + 1, dtype=np.int64)
                np.cumsum([len(seeds[q][0]) for q in seeded], out=offsets[1:])
                s_rows = [e for q in seeded for e in seeds[q][0]]
                s_vals = [v for q in seeded for v in seeds[q][1]]
            pr_offsets, pr_ents, pr_scores, _, _, _, pr_iters = (
                index.graph.core.personalized_pagerank(
                    np.array(s_rows, dtype=np.int64),
                    np.array(s_vals, dtype=np.float64),
                    offsets,
                    damping=c.damping,
                    tol=c.tol,
                    max_iter=c.max_iter,
                    weight=p.weight,
                    direction="both",
                    statuses=None,
                    predicates=None,
                    min_confidence=None,
                    as_of=None,
                    max_sequence=None,
                    tenant=t,
                    top_k=None,
                    top_k_chunks=None,
                    weight_by_count=False,
                    epsilon=eps,
                    score_chunks=False,
                )
            )
    matrix = index.chunk_matrix if qv is not None else None
    # The re-ranking steps take a pool of at least POOL candidates; the bridge
    # weighs shared entities by 1 / sqrt(chunks mentioning them), whatever
    # ``specificity`` says for the seeds.
    rerank = bool(c.bridge or c.cover or c.terms)
    pool = max(k, POOL) if rerank else k
    keywords = index.chunk_keywords if c.terms else None
    bridge_of = (
        index_cache(index, ("ppr-bridge",), lambda: bridge_weights(m)) if c.bridge else _NO_MASS
    )
    results = []
    with timer.stage("fuse"):
        for q in range(len(qs)):
            j = slot.get(q)
            if j is None or pr_offsets is None or pr_ents is None or pr_scores is None:
                ents, es, iterations = _NO_ENTS, _NO_MASS, 0
            else:
                a, b = int(pr_offsets[j]), int(pr_offsets[j + 1])
                ents, es = pr_ents[a:b], pr_scores[a:b]
                iterations = 0 if pr_iters is None else int(pr_iters[j])
            # Sparse over the chunks the graph reached (sorted): what a dense vector over
            # every chunk would hold there, without touching the others.
            g_rows, g_vals, n_graph = _chunk_scores(m, primary, ents, es)
            sims: npt.NDArray[Any]
            if dense is not None:
                rows, sims = dense[q][0][:dense_k], dense[q][1][:dense_k]
            else:
                rows, sims = _NO_ENTS, _NO_MASS
            names_q = named[q]
            top_c, top_f, top_cos, top_g, gmax = _fuse(
                g_rows,
                g_vals,
                n_graph,
                rows,
                sims,
                graph_k,
                pool if names_q is None else pool + len(names_q),
                lam,
                matrix,
                qv[q] if qv is not None else None,
            )
            top_gl = top_g.tolist()
            components = [
                {"cosine": c, "graph": g / gmax if gmax > 0 else 0.0}
                for c, g in zip(top_cos.tolist(), top_gl, strict=True)
            ]
            top_cl, top_fl = top_c.tolist(), top_f.tolist()
            if names_q is not None and c.name_boost:
                top_cl, top_fl, top_gl, components = _name_boost(
                    top_cl, top_fl, top_gl, components, names_q, c.name_boost, pool
                )
            if rerank:
                top_cl, top_fl, top_gl, components = rerank_from_top(
                    top_cl,
                    top_fl,
                    top_gl,
                    components,
                    m,
                    bridge_of,
                    c.bridge,
                    Cover(c.cover, names_q, named_ents[q]),
                    query_terms(keywords, qs[q], t, c.terms),
                    k,
                )
            chunks = chunk_hits(
                index,
                top_cl,
                scores=top_fl,
                sources=["ppr" if g > 0 else "vector" for g in top_gl],
                components=components,
            )
            s_rows, s_vals, s_hows = seeds[q]
            anchor_list = entity_hits(index, s_rows, scores=s_vals, how=s_hows)
            # The PPR kernel returns entities by score descending, ties by entity ascending
            # (a stable argsort of -es is the identity): the top ten are its first ten.
            ent_hits = entity_hits(index, ents[:10], scores=es[:10].tolist(), how="ppr")
            results.append(
                batch.result(
                    q,
                    anchors=anchor_list,
                    entities=ent_hits,
                    chunks=chunks,
                    stats={
                        "seeds": len(anchor_list),
                        "iterations": iterations,
                        "graph_chunks": n_graph,
                    },
                    fallback=None if qv is not None else (why or "no vectors"),
                )
            )
    return results


def _name_boost(
    rows: list[int],
    scores: list[float],
    graph: list[float],
    components: list[dict[str, float]],
    named: dict[int, float],
    boost: float,
    k: int,
) -> tuple[list[int], list[float], list[float], list[dict[str, float]]]:
    """The fused candidates re-ranked with ``boost x match score`` added to the chunks whose
    subject the query names (``named``: primary chunk -> name match score), best ``k``
    first, ties by chunk row; a boosted chunk's components gain ``name``."""
    final = [s + boost * named.get(r, 0.0) for r, s in zip(rows, scores, strict=True)]
    order = sorted(range(len(rows)), key=lambda i: (-final[i], rows[i]))[:k]
    comps = []
    for i in order:
        m = named.get(rows[i])
        comps.append(components[i] if m is None else {**components[i], "name": boost * m})
    return [rows[i] for i in order], [final[i] for i in order], [graph[i] for i in order], comps


def _passage_seeds(
    m: Any,
    spec: npt.NDArray[np.float64] | None,
    dense: Any,
    q: int,
    n_seed_chunks: int,
    temp: float,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Passage seeds of query ``q``: (entities ascending, mass), the top chunks' softmax
    weights split over their entities by mention count (x specificity ``spec``, None for
    none); empty without seed chunks.

    The softmax is numpy's ``exp`` and ``sum`` (their results to the bit) over the Python
    differences; the split is one native call (``_core.passage_seed_mass``) that takes
    each sum in the order the plain Python did."""
    if not n_seed_chunks or dense is None or not len(dense[q][0]):
        return _NO_ENTS, _NO_MASS
    sims = dense[q][1][:n_seed_chunks].tolist()
    top = max(sims)
    w = np.exp([(x - top) / temp for x in sims])
    w /= w.sum()
    return _core.passage_seed_mass(
        m.chunk_offsets,
        m.chunk_entities,
        m.chunk_counts,
        spec,
        dense[q][0][:n_seed_chunks],
        w,
    )


def _spec(m: Any, specificity: bool) -> tuple[npt.NDArray[np.float64], list[float]]:
    """Each entity's seed weight: HippoRAG's node specificity ``1 / |chunks mentioning
    it|`` with ``specificity``, else 1; as an array and as a list (a name match reads one
    entry: a list item costs a tenth of a numpy scalar)."""
    n_mentions = np.diff(m.entity_offsets)
    spec = (1.0 / np.maximum(n_mentions, 1)) if specificity else np.ones(len(n_mentions))
    return spec, spec.tolist()


@dataclass(frozen=True, slots=True)
class _Checked:
    """A parameter set's values after the checks every call makes (see :func:`_checked`)."""

    k: int
    seed_chunks: int
    entities: int
    temp: float
    share: float
    lam: float
    dense_k: int
    graph_k: int
    eps: float | None
    damping: float
    tol: float
    max_iter: int
    #: Name matches at most (0 without recognition).
    lim: int
    name_boost: float
    bridge: float
    cover: float
    terms: float


def _check(p: PPRParams) -> _Checked:
    """``p``'s checked values (computed once per set: :func:`checked_once`, not per call)."""
    k = check_count("k", p.k)
    bridge = check_real("bridge", p.bridge)
    cover = check_real("cover", p.cover)
    terms = check_real("terms", p.terms)
    return _Checked(
        k=k,
        seed_chunks=check_count("seed_chunks", p.seed_chunks, 0, 10_000),
        entities=check_count("entities", p.entities, 0, 1000),
        temp=check_real("seed_temperature", p.seed_temperature, 1e-6),
        share=check_real("entity_seed_share", p.entity_seed_share, 0.0, 1.0),
        lam=check_real("graph_weight", p.graph_weight),
        dense_k=(max(k, POOL) if bridge or cover or terms else k)
        if p.dense_k is None
        else check_count("dense_k", p.dense_k),
        graph_k=check_count("graph_k", p.graph_k),
        eps=None if p.epsilon is None else check_real("epsilon", p.epsilon, 1e-300, 1.0),
        damping=check_real("damping", p.damping, 1e-12, 1.0 - 1e-12),
        tol=check_real("tol", p.tol, 1e-300),
        max_iter=check_count("max_iter", p.max_iter, 1, 100_000),
        lim=check_count("recognize_limit", p.recognize_limit) if p.recognize else 0,
        name_boost=check_real("name_boost", p.name_boost),
        bridge=bridge,
        cover=cover,
        terms=terms,
    )


def _primary(index: GraphIndex) -> npt.NDArray[np.int64] | None:
    """The entities' primary chunks, None when no entity has one."""
    primary = index.entity_primary_chunk
    return primary if bool((primary >= 0).any()) else None


def _fuse(
    g_rows: npt.NDArray[np.int64],
    g_vals: npt.NDArray[np.float64],
    n_graph: int,
    rows: npt.NDArray[np.int64],
    sims: npt.NDArray[Any],
    graph_k: int,
    k: int,
    lam: float,
    matrix: npt.NDArray[np.float32] | None,
    qvec: npt.NDArray[np.float32] | None,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    float,
]:
    """One query's fusion: ``final = cosine + lam x graph / max(graph)`` over the dense
    candidates and the top ``graph_k`` chunks by graph score (``n_graph`` of ``g_vals``
    are positive), best ``k`` first (ties by chunk row).

    The cut to ``graph_k`` stays numpy's ``argpartition`` (its introselect decides which
    chunks tied at the cut are kept, and ties there are the rule: chunks reached through
    one entity share its score), and so do the cosines of the graph's chunks outside the
    dense ones (one BLAS product over the same rows as before: a row's dot product
    depends on the rows computed with it); scoring and ranking the few dozen candidates
    is one native call (``_core.cosine_graph_top``).

    Returns the top chunks, their final scores, cosines and graph scores, and the graph's
    maximum."""
    if n_graph == len(g_vals):
        reached, r_vals = g_rows, g_vals
    else:
        pos = g_vals > 0
        reached, r_vals = g_rows[pos], g_vals[pos]
    if n_graph > graph_k:
        reached = reached[np.argpartition(-r_vals, graph_k - 1)[:graph_k]]
    more = np.array(sorted(set(reached.tolist()).difference(rows.tolist())), dtype=np.int64)
    if len(more) and matrix is not None and qvec is not None:
        more_cos = matrix[more] @ qvec
    else:
        more_cos = np.zeros(len(more))
    return _core.cosine_graph_top(rows, sims, more, more_cos, g_rows, g_vals, graph_weight=lam, k=k)


def _chunk_scores(
    m: Any,
    primary: npt.NDArray[np.int64] | None,
    ents: npt.NDArray[np.int64],
    es: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], int]:
    """Graph score per chunk as (chunks, scores, how many are positive), the chunks
    sorted: an entity's score goes to its primary chunk (``primary``: None when no entity
    has one), else is spread over the chunks mentioning it by mention count.

    One native call (``_core.entity_chunk_scores``), sparse over the chunks reached; per
    chunk the primary shares, then the mention shares, each summed in input order, as a
    dense numpy form would (``tests/test_recipe_ppr.py`` checks it to the bit). ``ents``
    and ``es`` are the PPR kernel's int64 / float64 output (or empty arrays of those)."""
    return _core.entity_chunk_scores(
        m.entity_offsets, m.entity_chunks, m.entity_counts, primary, ents, es
    )


PPRParams = PPR
"""The former name of :class:`PPR`."""

#: The registry entry.
RECIPE = FunctionRecipe(NAME, PPR, _pipeline, default_format="chunks", takes_context=False)


def ppr(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: PPR | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[PPROverrides],
) -> list[RetrievalResult]:
    """Personalized PageRank retrieval of chunks for a batch (one PPR call for the batch).

    Args:
        index: The retrieval index.
        queries: One query or a batch.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unused; accepted for a uniform API.
        query_vectors: Pre-computed query embeddings (n, d).
        params: The parameter set (default: :class:`PPR`'s defaults).
        **overrides: Parameters to change in it, by name.

    Returns:
        One result per query: ``chunks`` (components ``cosine``, ``graph``), ``anchors``
        (the seeds with their weights and kinds) and the top ``entities`` by PPR.
    """
    p = resolve_params(PPR, params, overrides)
    return _pipeline(index, queries, p, tenant, now, query_vectors, None, None)
