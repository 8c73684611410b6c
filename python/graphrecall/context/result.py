"""A whole :class:`~graphrecall.recipes.RetrievalResult` as a context block for an LLM.

Renders a result's hits (the items the formats of :mod:`graphrecall.context` read) in a source
design's format, packed by score within a token budget (never cutting an item):

============================  ==============================================================
format                        block
============================  ==============================================================
``"narrative"``               seed 000: facts grouped by subject, "### 💡 CONTEXT: name"
``"knowledge_graph"``         seed 003: passages, then "## Knowledge Graph Context" (query
                              entities, related entities with relation and weight,
                              relevant relationships); the graph block gets at most half
                              the budget, the passages the rest
``"known_facts"``             seed 004: "## Known Facts" with since-date and confidence
``"chunks"``                  "## Relevant passages": ranked chunks (seeds 001, PPR)
``"tiers"``                   seed 002: "## Memories" by tier (personal / project / task)
``"json"``                    a JSON document for programs (entities, facts, chunks, paths)
============================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from ..errors import ParameterError
from ..recipes.hits import ChunkHit, EntityHit, RetrievalResult
from .by_subject import narrative
from .fact_lines import known_facts
from .graph_section import kg_context
from .json_doc import json_block
from .packing import ContextBlock, Piece, pack_block
from .tokens import TokenCounter, check_budget, whitespace_tokens

__all__ = ["FORMATS", "chunks_block", "render", "tiers_block"]

FORMATS = ("narrative", "knowledge_graph", "known_facts", "chunks", "tiers", "json")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def chunks_block(
    chunks: Sequence[ChunkHit], *, budget: int | None = 500, count: TokenCounter = whitespace_tokens
) -> ContextBlock:
    """ "## Relevant passages" with one ranked line per chunk, packed by score."""

    def render(idx: Sequence[int]) -> str:
        if not idx:
            return ""
        lines = ["## Relevant passages"]
        lines += [f"- {_one_line(chunks[i].text)}" for i in idx]
        return "\n".join(lines)

    def pieces(i: int) -> list[Piece]:
        return [("head", "## Relevant passages", 1), (i, f"- {_one_line(chunks[i].text)}", 1)]

    ids, scores = [c.id for c in chunks], [c.score for c in chunks]
    return pack_block(ids, scores, render, budget, count, pieces)


def tiers_block(
    tiers: Mapping[str, Sequence[ChunkHit]],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
) -> ContextBlock:
    """Seed 002's results by tier: "## Memories", then "### tier" sections, packed by score."""
    flat: list[tuple[str, ChunkHit]] = [(t, c) for t, cs in tiers.items() for c in cs]

    def render(idx: Sequence[int]) -> str:
        if not idx:
            return ""
        lines = ["## Memories"]
        current = None
        for i in idx:
            tier, c = flat[i]
            if tier != current:
                lines.append(f"### {tier}")
                current = tier
            lines.append(f"- {_one_line(c.text)}")
        return "\n".join(lines)

    def pieces(i: int) -> list[Piece]:
        tier, c = flat[i]
        return [
            ("head", "## Memories", 1),
            (("tier", tier), f"### {tier}", 1),
            (i, f"- {_one_line(c.text)}", 1),
        ]

    ids, scores = [c.id for _, c in flat], [c.score for _, c in flat]
    return pack_block(ids, scores, render, budget, count, pieces)


def render(
    result: RetrievalResult,
    format: str,
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
) -> ContextBlock:
    """Render ``result`` as a context block of ``format`` (see the module doc).

    Raises:
        ParameterError: An unknown format or a bad budget.
    """
    b = check_budget(budget)
    if format == "narrative":
        return narrative(_distinct(result.entities), result.facts, budget=b, count=count)
    if format == "known_facts":
        return known_facts(result.facts, budget=b, count=count)
    if format == "chunks":
        return chunks_block(result.chunks, budget=b, count=count)
    if format == "tiers":
        return tiers_block(result.tiers or {"results": result.chunks}, budget=b, count=count)
    if format == "json":
        return json_block(
            _distinct(result.entities), result.facts, result.chunks, budget=b, count=count
        )
    if format == "knowledge_graph":
        ents = list(_distinct(result.entities))
        graph_budget = None if b is None else b // 2
        kg = kg_context(
            result.anchors,
            ents,
            result.facts,
            budget=graph_budget,
            count=count,
        )
        if not result.chunks:
            return kg
        sep = "\n\n" if kg.text else ""
        rest = None if b is None else max(b - kg.tokens - count(sep) - 1, 0)
        passages = chunks_block(result.chunks, budget=rest, count=count)
        text = passages.text + (sep + kg.text if passages.text else kg.text)
        tokens = count(text) if text else 0
        if b is not None and tokens > b:  # the two parts did not add up: keep the graph block
            return kg
        return ContextBlock(
            text=text,
            tokens=tokens,
            items=tuple(("chunk", i) for i in passages.items) + kg.items,
            dropped=tuple(("chunk", i) for i in passages.dropped) + kg.dropped,
            budget=b,
        )
    raise ParameterError(f"invalid parameter format: {format!r}; known: {list(FORMATS)}")


def _distinct(entities: Sequence[EntityHit]) -> list[EntityHit]:
    seen: set[Hashable] = set()
    out = []
    for e in entities:
        if e.id not in seen:
            seen.add(e.id)
            out.append(e)
    return out
