"""A JSON document of a result's items, for programs."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Hashable, Sequence
from typing import Any

from ..errors import DataError, ParameterError
from ..recipes.hits import ChunkHit, EntityHit, FactHit
from .items import (
    PathStep,
    check_steps,
    check_unique,
    checked_items,
    chunk_item,
    entity_item,
    fact_item,
)
from .packing import ContextBlock, pack_block
from .tokens import TokenCounter, whitespace_tokens

__all__ = ["json_block"]


def _json_id(value: Hashable, what: str) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    raise DataError(f"{what} {value!r} is not a JSON scalar (str, int, finite float, bool)")


def _json_num(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"  # JSON has no infinities


def _json_path(steps: Sequence[PathStep]) -> list[list[str | None]]:
    return [list(s) for s in check_steps(steps, "path", DataError)]


def json_block(
    entities: Sequence[EntityHit] = (),
    facts: Sequence[FactHit] = (),
    chunks: Sequence[ChunkHit] = (),
    *,
    budget: int | None = None,
    count: TokenCounter = whitespace_tokens,
    indent: int | None = None,
) -> ContextBlock:
    """A JSON document for programs: ``{"entities": [...], "facts": [...], "chunks": [...]}``.

    Every record holds its id, text fields and score; facts also subject / object ids and
    names, ``value`` (the literal), confidence, strength, description, since, hop; chunks
    their source. A record given a provenance path has ``"path": [[name, predicate,
    direction], ...]``. The three lists keep the given order; the budget keeps the highest
    scores across the three kinds. Compact separators unless ``indent`` is given; non-ASCII
    text is written as is. Infinite scores are written as the strings "inf" / "-inf".

    Args:
        entities: Entities.
        facts: Facts.
        chunks: Chunks (passages).
        budget: Most tokens (``None``: no limit, the default).
        count: The token counter.
        indent: ``json.dumps`` indent (``None``: one compact line).

    Returns:
        The block; its items are ``("entity" | "fact" | "chunk", id)`` pairs; its text is ""
        when nothing was given or nothing fits.

    Raises:
        ParameterError: An argument has the wrong type or ``budget`` is negative.
        DataError: Two records of one kind share an id, or an id is not a JSON scalar.
    """
    ents = checked_items(entities, "entities", EntityHit, entity_item)
    fs = checked_items(facts, "facts", FactHit, fact_item)
    cs = checked_items(chunks, "chunks", ChunkHit, chunk_item)
    check_unique((e.id for e in ents), "entities")
    check_unique((f.id for f in fs), "facts")
    check_unique((c.id for c in cs), "chunks")
    if indent is not None and (
        isinstance(indent, bool) or not isinstance(indent, int) or indent < 0
    ):
        raise ParameterError(f"indent must be an int >= 0 or None, got {indent!r}")
    records: list[tuple[str, dict[str, Any]]] = []
    for i, e in enumerate(ents):
        r: dict[str, Any] = {
            "id": _json_id(e.id, f"entities[{i}].id"),
            "name": e.name,
            "type": e.type,
            "description": e.description,
            "score": _json_num(e.score),
        }
        if e.path:
            r["path"] = _json_path(e.path)
        records.append(("entities", r))
    for i, f in enumerate(fs):
        r = {
            "id": _json_id(f.id, f"facts[{i}].id"),
            "subject_id": _json_id(f.subject_id, f"facts[{i}].subject_id"),
            "subject": f.subject_name,
            "predicate": f.predicate,
            "object_id": _json_id(f.object_id, f"facts[{i}].object_id"),
            "object": f.object_name,
            "value": f.object_value,
            "confidence": f.confidence,
            "strength": f.strength,
            "description": f.description,
            "since": f.since,
            "hop": f.hop,
            "score": _json_num(f.score),
        }
        if f.path:
            r["path"] = _json_path(f.path)
        records.append(("facts", r))
    for i, c in enumerate(cs):
        r = {
            "id": _json_id(c.id, f"chunks[{i}].id"),
            "text": c.text,
            "source": c.source,
            "score": _json_num(c.score),
        }
        if c.path:
            r["path"] = _json_path(c.path)
        records.append(("chunks", r))
    seps = (",", ":") if indent is None else (",", ": ")

    def render(chosen: Sequence[int]) -> str:
        doc: dict[str, list[dict[str, Any]]] = {"entities": [], "facts": [], "chunks": []}
        for i in chosen:
            kind, rec = records[i]
            doc[kind].append(rec)
        return json.dumps(doc, ensure_ascii=False, indent=indent, separators=seps)

    ids: list[Hashable] = [
        *(("entity", e.id) for e in ents),
        *(("fact", f.id) for f in fs),
        *(("chunk", c.id) for c in cs),
    ]
    scores = [e.score for e in ents] + [f.score for f in fs] + [c.score for c in cs]
    return pack_block(ids, scores, render, budget, count)
