"""A result as flat, JSON-ready items: the one shape every integration hands out.

Each ranked fact and chunk of a :class:`~graphrecall.recipes.RetrievalResult` becomes an
:class:`Item` with its text (a chunk's passage, a fact as a sentence), its score and its
provenance: the recipe, the kind and id of the hit, its rank, the tenant, the parts of its
score and the graph path that reached it. LangChain documents, LlamaIndex nodes and the MCP
server's answers are built from these, so all of them carry the same metadata.

Example:
    >>> from graphrecall.integrations.items import result_items
    >>> items = result_items(rag.retrieve("What is JACQ?", tenant="alice"))  # doctest: +SKIP
    >>> items[0].text, items[0].metadata["kind"]  # doctest: +SKIP
    ('JACQ Project uses DuckDB', 'fact')
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ParameterError

if TYPE_CHECKING:
    from ..rag import GraphRAG
    from ..recipes import ChunkHit, FactHit, RetrievalResult, Step

__all__ = [
    "KINDS",
    "Item",
    "Kind",
    "aretrieve_items",
    "check_kinds",
    "item_id",
    "result_items",
    "retrieve_items",
]

Kind = Literal["fact", "chunk"]
#: The kinds of hit that become items, in the order they are listed.
KINDS: tuple[Kind, ...] = ("fact", "chunk")


@dataclass(frozen=True, slots=True)
class Item:
    """One ranked hit as text, score and JSON-ready provenance.

    Attributes:
        text: The chunk's passage, or the fact as "subject predicate object".
        score: The hit's score under its recipe (comparable within one kind of one result).
        metadata: ``recipe``, ``query``, ``tenant``, ``kind`` ("fact" / "chunk"), ``id``,
            ``rank`` (0-based within its kind), ``score``, ``components`` (the parts of the
            score), ``path`` (steps from the anchor: entity, name, predicate, fact,
            direction) and ``path_text``; facts add ``subject``, ``predicate``, ``object``,
            ``confidence``, ``hop`` and ``anchor``; chunks add ``source`` and ``tier``.
    """

    text: str
    score: float
    metadata: dict[str, Any]


def check_kinds(kinds: Sequence[str]) -> tuple[Kind, ...]:
    """``kinds`` as a tuple of known kinds.

    Raises:
        ParameterError: An unknown kind, or none.
    """
    if isinstance(kinds, str):
        kinds = (kinds,)
    out = tuple(kinds)
    bad = [k for k in out if k not in KINDS]
    if bad or not out:
        raise ParameterError(f"invalid parameter kinds: {list(out)!r} (give some of {KINDS})")
    return out  # type: ignore[return-value]


def item_id(metadata: Mapping[str, Any]) -> str:
    """A string id unique within a graph: ``"<tenant>:<kind>:<id>"``."""
    return f"{metadata['tenant']}:{metadata['kind']}:{metadata['id']}"


def result_items(
    result: RetrievalResult, *, kinds: Sequence[str] = KINDS, k: int | None = None
) -> list[Item]:
    """The ranked facts and chunks of ``result`` as items, facts first, each in rank order.

    Args:
        result: One query's result.
        kinds: Which hits to include ("fact", "chunk").
        k: At most this many items (None: all).

    Raises:
        ParameterError: An unknown kind, or ``k`` not a non-negative int.
    """
    wanted = check_kinds(kinds)
    if k is not None and (type(k) is not int or k < 0):
        raise ParameterError(f"invalid parameter k: {k!r} (give a non-negative int or None)")
    base = {"recipe": result.recipe, "query": result.query, "tenant": _plain(result.tenant)}
    out: list[Item] = []
    if "fact" in wanted:
        out.extend(_fact_item(f, rank, base) for rank, f in enumerate(result.facts))
    if "chunk" in wanted:
        out.extend(_chunk_item(c, rank, base) for rank, c in enumerate(result.chunks))
    return out if k is None else out[:k]


def retrieve_items(
    rag: GraphRAG,
    query: str,
    *,
    recipe: str | None = None,
    tenant: Hashable | None = None,
    now: int | None = None,
    context: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    kinds: Sequence[str] = KINDS,
    k: int | None = None,
    use_cache: bool = True,
) -> list[Item]:
    """Retrieve for one query and return its items (:meth:`GraphRAG.retrieve`, then
    :func:`result_items`); ``params`` are the recipe's parameters by name."""
    check_kinds(kinds)
    res = rag.retrieve(
        query,
        recipe=recipe,
        tenant=tenant,
        now=now,
        context=context,
        use_cache=use_cache,
        **dict(params or {}),
    )
    return result_items(res, kinds=kinds, k=k)


async def aretrieve_items(
    rag: GraphRAG,
    query: str,
    *,
    recipe: str | None = None,
    tenant: Hashable | None = None,
    now: int | None = None,
    context: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    kinds: Sequence[str] = KINDS,
    k: int | None = None,
    use_cache: bool = True,
) -> list[Item]:
    """:func:`retrieve_items` without blocking the event loop (:meth:`GraphRAG.aretrieve`)."""
    check_kinds(kinds)
    res = await rag.aretrieve(
        query,
        recipe=recipe,
        tenant=tenant,
        now=now,
        context=context,
        use_cache=use_cache,
        **dict(params or {}),
    )
    return result_items(res, kinds=kinds, k=k)


def _fact_item(hit: FactHit, rank: int, base: Mapping[str, Any]) -> Item:
    text = f"{hit.subject_name} {hit.predicate.replace('_', ' ')} {hit.value}"
    if hit.description:
        text += f": {hit.description}"
    meta = {
        **base,
        "kind": "fact",
        "id": _plain(hit.id),
        "rank": rank,
        "score": float(hit.score),
        "subject": _plain(hit.subject),
        "predicate": hit.predicate,
        "object": _plain(hit.object) if hit.object is not None else hit.object_value,
        "confidence": float(hit.confidence),
        "hop": int(hit.hop),
        "anchor": _plain(hit.anchor),
        **_provenance(hit.components, hit.path),
    }
    return Item(text, float(hit.score), meta)


def _chunk_item(hit: ChunkHit, rank: int, base: Mapping[str, Any]) -> Item:
    meta = {
        **base,
        "kind": "chunk",
        "id": _plain(hit.id),
        "rank": rank,
        "score": float(hit.score),
        "source": hit.source,
        "tier": hit.tier,
        **_provenance(hit.components, hit.path),
    }
    return Item(hit.text, float(hit.score), meta)


def _provenance(components: Mapping[str, float], path: Sequence[Step]) -> dict[str, Any]:
    steps = [
        {
            "entity": _plain(s.entity),
            "name": s.name,
            "predicate": s.predicate,
            "fact": _plain(s.fact),
            "direction": s.direction,
        }
        for s in path
    ]
    text = " -> ".join(
        s.name if s.predicate is None else f"{s.name} -[{s.predicate}]" for s in path
    )
    return {
        "components": {str(k): float(v) for k, v in components.items()},
        "path": steps,
        "path_text": text,
    }


def _plain(v: Hashable | None) -> Any:
    """An id as a JSON value (numpy scalars as Python numbers, other objects as str)."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    item = getattr(v, "item", None)
    return item() if callable(item) else str(v)
