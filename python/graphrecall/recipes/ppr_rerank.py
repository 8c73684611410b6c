"""The ``ppr`` recipe's re-ranking from its top passage: bridge, cover and terms.

A multi-hop question's second passage rarely looks like the question: it names the first
hop's answer. After fusion, ``ppr`` keeps its best chunk first and re-ranks the next ones by
what they add to it (:func:`rerank_from_top`): a rare entity shared with it (``bridge``), a
name the query gives that it does not mention (``cover``), and query words it lacks
(``terms``, read from the BM25 postings), in one native call per query. Numbers and the variants
tried: ``benches/results/router.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..anchors.names import DEFAULT_STOPWORDS
from ..anchors.tokens import tokenize

__all__ = ["GAINS", "POOL", "Cover", "Terms", "bridge_weights", "query_terms", "rerank_from_top"]

#: Candidates the re-ranking steps (bridge, cover, terms) take at least: more than ``k``
#: when ``k`` is small, so the top two do not depend on ``k`` (5 to 40 scored the same).
POOL = 10


@dataclass(frozen=True, slots=True)
class Cover:
    """One query's name coverage: the weight, and the chunks it names (primary chunk ->
    match score, and -> the entity rows naming it; None when it names none)."""

    weight: float
    named: dict[int, float] | None
    entities: dict[int, list[int]] | None


def rerank_from_top(
    rows: list[int],
    scores: list[float],
    graph: list[float],
    components: list[dict[str, float]],
    m: Any,
    spec: npt.NDArray[np.float64],
    bridge: float,
    cover: Cover,
    terms: Terms | None,
    k: int,
) -> tuple[list[int], list[float], list[float], list[dict[str, float]]]:
    """The candidates (best first) re-ranked from the top one: each other chunk gains
    ``bridge x`` the largest weight ``spec`` (:func:`bridge_weights`) of an entity it
    shares with the top one, and ``cover.weight x`` its name match score
    when the query names it by an entity the top chunk does not mention, and ``terms.weight
    x`` the share of the query's words it holds and the top chunk does not (None: no terms
    step); the top chunk gains the most each step can give (``bridge``, ``cover.weight`` x
    the best match score when the query names a chunk, and ``terms.weight``), so it stays
    first. Best ``k`` first, ties by chunk row; a chunk's gains show as ``bridge``,
    ``cover`` and ``terms`` components. One native call (``_core.ppr_rerank_from_top``)."""
    if not rows:
        return rows, scores, graph, components
    named, by = cover.named, cover.entities
    n_chunks: list[int] = []
    n_scores: list[float] = []
    n_offsets: list[int] = [0]
    n_ents: list[int] = []
    if named is not None and by is not None:  # the chunks a candidate's cover gain reads
        for r, s in named.items():
            if r in by:
                n_chunks.append(r)
                n_scores.append(s)
                n_ents += by[r]
                n_offsets.append(len(n_ents))
    term_args: dict[str, Any] = {}
    if terms is not None and len(rows) >= 2:
        t_rows, t_terms, t_offsets, postings = terms.view
        term_args = {
            "term_rows": t_rows,
            "terms": t_terms,
            "term_offsets": t_offsets,
            "postings": postings,
            "query_terms": terms.ids,
            "n_words": terms.n_words,
            "term_weight": terms.weight,
        }
    order, final, g_bridge, g_cover, g_terms = _core.ppr_rerank_from_top(
        rows,
        scores,
        m.chunk_offsets,
        m.chunk_entities,
        spec,
        bridge=bridge,
        named_chunks=n_chunks,
        named_scores=n_scores,
        named_offsets=n_offsets,
        named_entities=n_ents,
        cover=cover.weight,
        top_cover=cover.weight * max(named.values()) if named else 0.0,
        k=k,
        **term_args,
    )
    picks = order.tolist()
    comps = []
    for i, b, n, w in zip(
        picks, g_bridge.tolist(), g_cover.tolist(), g_terms.tolist(), strict=True
    ):
        extra = {name: v for name, v in zip(GAINS, (b, n, w), strict=True) if v > 0}
        comps.append({**components[i], **extra} if extra else components[i])
    return [rows[i] for i in picks], final.tolist(), [graph[i] for i in picks], comps


#: The re-ranking steps' component names, in the order :func:`rerank_from_top` keeps their gains.
GAINS = ("bridge", "cover", "terms")


@dataclass(frozen=True, slots=True)
class Terms:
    """One query's terms step: the weight, the term ids of the query's distinct words
    (stopwords aside; -1 for a word no chunk holds), how many words those are, and the
    tenant's postings (:meth:`~graphrecall.anchors.keyword.BM25Index.term_view`)."""

    weight: float
    ids: list[int]
    n_words: int
    view: tuple[Any, Any, Any, Any]


def query_terms(keywords: Any, query: str, tenant: int, weight: float) -> Terms | None:
    """The terms step of ``query`` (:class:`Terms`); None without a keyword index or a
    word outside the stopwords."""
    if keywords is None:
        return None
    words = [w for w in dict.fromkeys(tokenize(query)) if w not in DEFAULT_STOPWORDS]
    if not words:
        return None
    return Terms(weight, keywords.term_ids(words), len(words), keywords.term_view(tenant))


def bridge_weights(m: Any) -> npt.NDArray[np.float64]:
    """Each entity's bridge weight, ``1 / sqrt(|chunks mentioning it|)`` (1 for none)."""
    n_mentions = np.diff(m.entity_offsets)
    return np.ascontiguousarray(1.0 / np.sqrt(np.maximum(n_mentions, 1)), dtype=np.float64)
