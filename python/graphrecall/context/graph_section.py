"""The "## Knowledge Graph Context" block of the codebase-graph design (seed 003's graph
context formatter)."""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Sequence

from ..errors import ParameterError
from ..recipes.hits import EntityHit, FactHit
from .items import check_unique, checked_items, clean, entity_item, fact_item, object_text
from .packing import ContextBlock, pack_block
from .tokens import TokenCounter, whitespace_tokens

__all__ = ["kg_context"]


def _num(x: float) -> str:
    """A weight: ``8`` for 8.0, ``0.9`` for float32 0.9, at most 3 decimals."""
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{round(x, 3):g}"


def _truncate(s: str, limit: int | None) -> str:
    """``s`` cleaned; if longer than ``limit``, cut at the last space that leaves room for
    "..." (or hard-cut within a single long word), trailing punctuation dropped, "..." added."""
    s = clean(s)
    if limit is None or len(s) <= limit:
        return s
    room = max(limit - 3, 0)
    cut = s[: room + 1]
    sp = cut.rfind(" ")
    head = cut[:sp] if sp > 0 else s[:room]
    head = head.rstrip(" ,;:.-")
    return (head or s[:room]) + "..."


def _check_limit(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 4:
        raise ParameterError(f"{what} must be an int >= 4 or None, got {value!r}")
    return int(value)


def kg_context(
    query_entities: Sequence[EntityHit],
    entities: Sequence[EntityHit],
    facts: Sequence[FactHit],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
    inverse_predicates: dict[str, str] | None = None,
    description_chars: int | None = 100,
) -> ContextBlock:
    """Seed 003's "## Knowledge Graph Context" block (its 5B Graph Context Formatter)::

        ## Knowledge Graph Context
        Query entities: [Auth Service, OAuth Provider]

        ### Auth Service (concept)
        Related: OAuth Provider (depends_on, weight: 8), User Model (implements)
        Description: Core authentication service handling JWT issuance and validation...

        ### Relevant Relationships
        - Auth Service -> OAuth Provider: "depends_on" -- Auth service delegates ... (strength: 8)

    Rules where the seed is silent or inconsistent:

    * One section per entity of ``entities`` (in order); ``(type)`` when the type is known.
    * ``Related:`` lists the chosen facts touching the entity, in ``facts`` order: an outgoing
      fact as ``{object} ({predicate})``, with ``, weight: {strength}`` when its strength is
      known; an incoming one as ``{subject} ({inverse})`` without weight (the weight belongs
      to the edge and is printed under its subject and in the relationships; the seed shows
      ``Auth Service (depended_on_by)`` without it). ``inverse`` is
      ``inverse_predicates[predicate]`` when given (the seed's ``depends_on`` ->
      ``depended_on_by``), else ``<- {predicate}``: a grammatical passive cannot be derived
      from a predicate name ("part_of", "KING_OF"). A self-loop is listed once, outgoing.
    * ``Description:`` cut to ``description_chars`` at a word boundary with "..." (the seed
      shows cut descriptions; how long it cuts them is not said).
    * ``### Relevant Relationships`` lists ``- A -> B: "pred" -- description (strength: w)``
      for the chosen facts that have a description, and for those with neither endpoint
      among the printed sections (so no chosen fact is invisible); other facts appear in the
      ``Related:`` lines only, as in the seed. Lines are not wrapped.
    * Budget items are the entity sections and the facts; both compete on ``score``, so give
      them comparable scales (e.g. seed 003's graph proximity for both). The header (title
      and query entities) always counts; a block with no section and no fact is "".

    Args:
        query_entities: The entities recognised in the query (printed by name).
        entities: The entities that get sections, in order.
        facts: The relationships.
        budget: Most tokens (default 500, seed 003's "~500 tokens"); ``None``: no limit.
        count: The token counter.
        inverse_predicates: Names of inverse relations for incoming edges.
        description_chars: Longest description printed (``None``: no cut; >= 4).

    Returns:
        The block; its items are ``("entity", id)`` and ``("fact", id)`` pairs.

    Raises:
        ParameterError: An argument has the wrong type, ``budget`` is negative or
            ``description_chars`` < 4.
        DataError: Two entities or two facts share an id.
    """
    qents = checked_items(query_entities, "query_entities", EntityHit, entity_item)
    ents = checked_items(entities, "entities", EntityHit, entity_item)
    fs = checked_items(facts, "facts", FactHit, fact_item)
    check_unique((e.id for e in ents), "entities")
    check_unique((f.id for f in fs), "facts")
    limit = _check_limit(description_chars, "description_chars")
    inverse = dict(inverse_predicates or {})
    for k, v in inverse.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ParameterError(f"inverse_predicates must map str to str, got {k!r}: {v!r}")
    ne = len(ents)
    head = (
        "## Knowledge Graph Context\nQuery entities: ["
        + ", ".join(clean(e.name) for e in qents)
        + "]"
    )
    titles = [
        f"### {clean(e.name)} ({clean(e.type)})"
        if e.type and clean(e.type)
        else f"### {clean(e.name)}"
        for e in ents
    ]
    descs = [
        f"Description: {_truncate(e.description, limit)}"
        if e.description and clean(e.description)
        else None
        for e in ents
    ]
    out_entry: list[str] = []
    in_entry: list[str] = []
    rel_line: list[str] = []
    has_desc = [bool(f.description and clean(f.description)) for f in fs]
    for f in fs:
        pred = clean(f.predicate)
        weight = f", weight: {_num(f.strength)}" if f.strength is not None else ""
        out_entry.append(f"{object_text(f)} ({pred}{weight})")
        in_entry.append(f"{clean(f.subject_name)} ({inverse.get(f.predicate, f'<- {pred}')})")
        line = f'- {clean(f.subject_name)} -> {object_text(f)}: "{pred}"'
        if f.description and clean(f.description):
            line += f" -- {_truncate(f.description, limit)}"
        if f.strength is not None:
            line += f" (strength: {_num(f.strength)})"
        rel_line.append(line)

    # Per entity id, the facts touching it in ``facts`` order with the entry it prints (a
    # self-loop once, outgoing): a section reads its own facts, not every chosen fact.
    touching: dict[Hashable, list[tuple[int, str]]] = {}
    for j, f in enumerate(fs):
        touching.setdefault(f.subject_id, []).append((j, out_entry[j]))
        if f.object_id is not None and f.object_id != f.subject_id:
            touching.setdefault(f.object_id, []).append((j, in_entry[j]))

    def render(chosen: Sequence[int]) -> str:
        sec = [i for i in chosen if i < ne]
        fac = [i - ne for i in chosen if i >= ne]
        fac_set = set(fac)
        shown = {ents[i].id for i in sec}
        parts = [head]
        for i in sec:
            eid = ents[i].id
            mine = touching.get(eid, ())
            related: list[str] = []
            if len(mine) <= len(fac):
                related = [entry for j, entry in mine if j in fac_set]
            else:
                for j in fac:
                    f = fs[j]
                    if f.subject_id == eid:
                        related.append(out_entry[j])
                    elif f.object_id is not None and f.object_id == eid:
                        related.append(in_entry[j])
            block = [titles[i]]
            if related:
                block.append("Related: " + ", ".join(related))
            desc = descs[i]
            if desc is not None:
                block.append(desc)
            parts.append("\n".join(block))
        rels = [
            rel_line[j]
            for j in fac
            if has_desc[j]
            or (
                fs[j].subject_id not in shown
                and (fs[j].object_id is None or fs[j].object_id not in shown)
            )
        ]
        if rels:
            parts.append("### Relevant Relationships\n" + "\n".join(rels))
        return "\n\n".join(parts)

    ids: list[Hashable] = [*(("entity", e.id) for e in ents), *(("fact", f.id) for f in fs)]
    scores = [e.score for e in ents] + [f.score for f in fs]
    return pack_block(ids, scores, render, budget, count)
