"""The ``ppr`` recipe's re-ranking from its top passage: bridge, cover and terms.

A multi-hop question's second passage rarely looks like the question: it names the first
hop's answer. After fusion, ``ppr`` keeps its best chunk first and re-ranks the next ones by
what they add to it (:func:`rerank_from_top`): a rare entity shared with it (``bridge``), a
name the query gives that it does not mention (``cover``), and query words it lacks
(``terms``, read from the BM25 postings by :func:`term_gains`). Numbers and the variants
tried: ``benches/results/router.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..anchors.names import DEFAULT_STOPWORDS
from ..anchors.tokens import tokenize

__all__ = ["GAINS", "POOL", "Cover", "bridge_weights", "rerank_from_top", "term_gains"]

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
    spec: list[float],
    bridge: float,
    cover: Cover,
    terms: list[float] | None,
    k: int,
) -> tuple[list[int], list[float], list[float], list[dict[str, float]]]:
    """The candidates (best first) re-ranked from the top one: each other chunk gains
    ``bridge x`` the largest weight ``spec`` (:func:`bridge_weights`) of an entity it
    shares with the top one, and ``cover.weight x`` its name match score
    when the query names it by an entity the top chunk does not mention, and its ``terms``
    gain (per row, from :func:`term_gains`; None for none); the top chunk gains the most
    each step can give (``bridge``, ``cover.weight`` x the best match score when the query
    names a chunk, and its ``terms`` entry), so it stays first. Best ``k`` first, ties by
    chunk row; a chunk's gains show as ``bridge``, ``cover`` and ``terms`` components."""
    if not rows:
        return rows, scores, graph, components
    co, ce = m.chunk_offsets, m.chunk_entities
    t = rows[0]
    top_ents = set(ce[int(co[t]) : int(co[t + 1])].tolist())
    named, by = cover.named, cover.entities
    top_cover = cover.weight * max(named.values()) if named else 0.0
    gains: list[tuple[float, float, float]] = [(bridge, top_cover, terms[0] if terms else 0.0)]
    for i, r in enumerate(rows[1:], 1):
        best = 0.0
        if bridge and top_ents:
            for e in ce[int(co[r]) : int(co[r + 1])].tolist():
                if e in top_ents and spec[e] > best:
                    best = spec[e]
        covers = 0.0
        if named is not None and by is not None and r in by:
            if not any(e in top_ents for e in by[r]):
                covers = cover.weight * named[r]
        gains.append((bridge * best, covers, terms[i] if terms else 0.0))
    final = [s + b + n + w for s, (b, n, w) in zip(scores, gains, strict=True)]
    order = sorted(range(len(rows)), key=lambda i: (-final[i], rows[i]))[:k]
    comps = []
    for i in order:
        extra = {name: v for name, v in zip(GAINS, gains[i], strict=True) if v > 0}
        comps.append({**components[i], **extra} if extra else components[i])
    return [rows[i] for i in order], [final[i] for i in order], [graph[i] for i in order], comps


#: The re-ranking steps' component names, in the order :func:`rerank_from_top` keeps their gains.
GAINS = ("bridge", "cover", "terms")


def term_gains(
    keywords: Any, query: str, rows: list[int], tenant: int, weight: float
) -> list[float] | None:
    """Per candidate (the top one first), ``weight x`` the share of the query's distinct
    words (stopwords aside) it holds and the top chunk does not, the top chunk's entry
    being ``weight`` itself; None without a keyword index, a word or a second candidate.
    Which words a chunk holds comes from the BM25 postings (``BM25Index.holds``)."""
    if keywords is None or len(rows) < 2:
        return None
    words = [w for w in dict.fromkeys(tokenize(query)) if w not in DEFAULT_STOPWORDS]
    if not words:
        return None
    held = keywords.holds(words, rows, tenant=tenant)
    new = held[1:, ~held[0]].sum(axis=1) * (weight / len(words))
    return [weight, *new.tolist()]


def bridge_weights(m: Any) -> list[float]:
    """Each entity's bridge weight, ``1 / sqrt(|chunks mentioning it|)`` (1 for none), as
    a list (the bridge step reads a few entries per candidate)."""
    n_mentions = np.diff(m.entity_offsets)
    return (1.0 / np.sqrt(np.maximum(n_mentions, 1))).tolist()  # type: ignore[no-any-return]
