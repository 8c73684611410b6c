"""Facts grouped by subject, one section per subject (the personal-knowledge-graph design,
seed 000's ``constructNarrative``)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from ..recipes.hits import EntityHit, FactHit
from .items import FactItem, check_unique, checked_items, clean, entity_item, fact_item, object_text
from .packing import ContextBlock, Piece, pack_block
from .tokens import TokenCounter, whitespace_tokens

__all__ = ["narrative"]


def narrative(
    entities: Sequence[EntityHit],
    facts: Sequence[FactHit],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
) -> ContextBlock:
    """Seed 000's narrative: facts grouped by subject, one section per subject.

    Sections follow ``entities`` in the given order (the seed iterates its entity list and
    skips entities without facts). Facts whose subject is not in ``entities`` are not lost:
    their subjects get sections after those, in the order the subjects first appear in
    ``facts``, named by the fact's ``subject_name``. Within a section facts keep their order
    in ``facts``. Header ``### 👤 USER CONTEXT`` when the name is "user" (any case), else
    ``### 💡 CONTEXT: {name}``; lines ``- {predicate}: {value}`` with the literal value, else
    the object entity's name (the seed's TODO "resolve object names"), else the seed's
    ``...``; sections joined by a blank line.

    Args:
        entities: The entities, in the order their sections are printed.
        facts: The facts; their scores decide what the budget keeps.
        budget: Most tokens the block may hold (``None``: no limit).
        count: The token counter.

    Returns:
        The block; its items are fact ids in printed order.

    Raises:
        ParameterError: An argument has the wrong type or ``budget`` is negative.
        DataError: Two entities or two facts share an id.
    """
    ents = checked_items(entities, "entities", EntityHit, entity_item)
    fs = checked_items(facts, "facts", FactHit, fact_item)
    check_unique((e.id for e in ents), "entities")
    check_unique((f.id for f in fs), "facts")
    by_subject: dict[Hashable, list[FactItem]] = {}
    for f in fs:
        by_subject.setdefault(f.subject_id, []).append(f)
    names: dict[Hashable, str] = {}
    for e in ents:
        names.setdefault(e.id, e.name)
    order = [e.id for e in ents if e.id in by_subject]
    order += [s for s in by_subject if s not in names]
    ordered: list[FactItem] = []
    for s in order:
        names.setdefault(s, by_subject[s][0].subject_name)
        ordered.extend(by_subject[s])
    lines = [f"- {clean(f.predicate)}: {object_text(f)}" for f in ordered]
    headers: dict[Hashable, str] = {}
    for s in order:
        name = clean(names[s])
        headers[s] = "### 👤 USER CONTEXT" if name.lower() == "user" else f"### 💡 CONTEXT: {name}"

    def render(chosen: Sequence[int]) -> str:
        sections: list[str] = []
        current: Hashable = object()
        for i in chosen:
            s = ordered[i].subject_id
            if not sections or s != current:
                sections.append(headers[s])
                current = s
            sections[-1] += "\n" + lines[i]
        return "\n\n".join(sections)

    def pieces(i: int) -> list[Piece]:
        return [
            (("subject", ordered[i].subject_id), headers[ordered[i].subject_id], 2),
            (i, lines[i], 1),
        ]

    ids, scores = [f.id for f in ordered], [f.score for f in ordered]
    return pack_block(ids, scores, render, budget, count, pieces)
