"""An explanation as a small drawable graph: the query, its anchors, the entities on the paths
from the anchors, and the ranked items those paths reached, each marked by whether it made the
context block. Every picture format (:mod:`.mermaid`, :mod:`.dot`, :mod:`.svg`, :mod:`.html`)
draws this one model, so they all show the same thing.

Layers run left to right by hop distance: the query (layer 0), the anchors (layer 1), an
entity ``i`` steps down a path (layer ``1 + i``), and every ranked item in the last layer.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..context import ContextBlock, render_path
from ..errors import ParameterError
from ..recipes.hits import ChunkHit, FactHit, RetrievalResult, Step

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "Edge",
    "ExplainGraph",
    "Node",
    "clean_text",
    "explain_graph",
    "shorten",
]

NodeKind = Literal["query", "entity", "fact", "chunk"]
#: How a node is drawn: the query; an anchor; an entity on a path; an item in the context
#: block; an item the block's budget dropped; a ranked item with no block to judge it by.
Status = Literal["query", "anchor", "entity", "context", "dropped", "ranked"]

#: The most ranked items drawn by default (facts first, then chunks, each by rank).
DEFAULT_MAX_ITEMS = 30

# Characters XML 1.0 forbids (and DOT / Mermaid cannot carry): C0 controls but tab and
# newline, and lone surrogates.
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_SPACE = re.compile(r"\s+")


def clean_text(text: object, *, lines: bool = False) -> str:
    """``text`` with XML-forbidden characters removed and, unless ``lines``, whitespace runs
    collapsed to one space (one printable line; user data may hold anything)."""
    text = _BAD_CHARS.sub("", str(text))
    return text if lines else _SPACE.sub(" ", text).strip()


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "\u2026"


def _num(x: float) -> str:
    return f"{x:.4g}"


@dataclass(frozen=True, slots=True)
class Node:
    """One box of the picture.

    Attributes:
        key: Its id in the picture (``n0``, ``n1``, ...), safe in every format.
        kind: "query", "entity", "fact" or "chunk".
        title: The first line (a name, or the rank and the item's text).
        detail: The second line (how an anchor was found, a hop, an item's score).
        layer: Its column, left to right.
        status: How it is drawn (see :data:`Status`).
        tooltip: The full text: untruncated label, score components, path.
        rank: An item's rank among its kind (1 = best); 0 for the query and entities.
    """

    key: str
    kind: NodeKind
    title: str
    detail: str
    layer: int
    status: Status
    tooltip: str
    rank: int = 0


@dataclass(frozen=True, slots=True)
class Edge:
    """An arrow from ``source`` to ``target`` (node keys) with an optional label."""

    source: str
    target: str
    label: str


@dataclass(frozen=True, slots=True)
class ExplainGraph:
    """A result's explanation as nodes in layers and labelled edges.

    Attributes:
        title: ``recipe: "query"``.
        nodes: Query, anchors, path entities, then items (facts, then chunks, by rank).
        edges: Query to anchor, entity to entity along paths, path end to item.
        shown: Ranked items drawn.
        total: Ranked items in the result (``total - shown`` were left out of the picture).
        has_context: Whether a context block marked the items.
    """

    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    shown: int
    total: int
    has_context: bool

    def layers(self) -> list[list[Node]]:
        """The nodes by layer, left to right, each layer in drawing order."""
        out: list[list[Node]] = [
            [] for _ in range(1 + max((n.layer for n in self.nodes), default=0))
        ]
        for n in self.nodes:
            out[n.layer].append(n)
        return out


def _block_sets(
    context: ContextBlock | None,
) -> tuple[set[tuple[str, Hashable]], set[tuple[str, Hashable]]]:
    """The items printed and dropped by a block, each as ``(kind, id)`` (kind ``"*"`` for the
    plain ids of single-kind blocks)."""

    def keys(ids: Sequence[Hashable]) -> set[tuple[str, Hashable]]:
        out: set[tuple[str, Hashable]] = set()
        for i in ids:
            if isinstance(i, tuple) and len(i) == 2 and i[0] in ("entity", "fact", "chunk"):
                out.add((i[0], i[1]))
            else:
                out.add(("*", i))
        return out

    if context is None:
        return set(), set()
    return keys(context.items), keys(context.dropped)


def explain_graph(
    result: RetrievalResult,
    context: ContextBlock | None = None,
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> ExplainGraph:
    """The drawable graph of a result.

    Args:
        result: The result to explain.
        context: The context block built from ``result`` (``GraphRAG.context``); its items are
            marked "in context" and its dropped items "dropped". ``None``: items are unmarked.
        max_items: The most ranked items to draw (facts first, then chunks, each by rank).

    Returns:
        The :class:`ExplainGraph`.

    Raises:
        ParameterError: ``max_items`` is not a positive int.
    """
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
        raise ParameterError(f"max_items must be a positive int, got {max_items!r}")
    printed, dropped = _block_sets(context)
    nodes: list[Node] = []
    edges: dict[tuple[str, str, str], Edge] = {}
    entity_key: dict[Hashable, str] = {}
    entity_layer: dict[Hashable, int] = {}
    entity_info: dict[Hashable, tuple[str, str, Status, str]] = {}

    def new_key() -> str:
        return f"n{len(nodes) + len(entity_info)}"

    def add_edge(source: str, target: str, label: str) -> None:
        edges.setdefault((source, target, label), Edge(source, target, label))

    def entity_status(eid: Hashable, default: Status) -> Status:
        return "context" if ("entity", eid) in printed else default

    query = clean_text(result.query)
    route = f" \u00b7 routed ({clean_text(result.route.recipe)})" if result.route else ""
    nodes.append(
        Node(
            key="n0",
            kind="query",
            title=shorten(query, 60) or "(empty query)",
            detail=shorten(
                f"{clean_text(result.recipe)} \u00b7 tenant {clean_text(result.tenant)}{route}", 60
            ),
            layer=0,
            status="query",
            tooltip=query,
        )
    )

    def add_entity(eid: Hashable, name: str, layer: int, detail: str, status: Status) -> str:
        key = entity_key.get(eid)
        if key is None:
            key = entity_key[eid] = new_key()
            name = clean_text(name)
            entity_info[eid] = (name, detail, entity_status(eid, status), name)
            entity_layer[eid] = layer
        else:
            entity_layer[eid] = min(entity_layer[eid], layer)
        return key

    anchors = {a.id for a in result.anchors}
    for a in result.anchors:
        key = add_entity(
            a.id, a.name, 1, f"anchor \u00b7 {clean_text(a.how)} {_num(a.score)}", "anchor"
        )
        add_edge("n0", key, f"{clean_text(a.how)} {_num(a.score)}")

    def walk(path: Sequence[Step]) -> str | None:
        """Adds a path's entities and steps; returns the key of its last entity."""
        prev: str | None = None
        prev_step: Step | None = None
        for i, step in enumerate(path):
            key = add_entity(step.entity, step.name, 1 + i, f"hop {i}", "entity")
            if prev is not None and prev_step is not None and prev_step.predicate is not None:
                add_edge(prev, key, _step_label(prev_step))
            prev, prev_step = key, step
        return prev

    facts = list(enumerate(result.facts, 1))[:max_items]
    chunks = list(enumerate(result.chunks, 1))[: max(max_items - len(facts), 0)]
    items: list[_Item] = []
    for rank, f in facts:
        items.append(("fact", rank, f, _attach(f, walk(f.path), entity_key), _last_label(f.path)))
    for rank, c in chunks:
        src = walk(c.path)
        items.append(("chunk", rank, c, src or "n0", _last_label(c.path) or clean_text(c.source)))

    for eid, key in entity_key.items():
        name, detail, status, tooltip = entity_info[eid]
        layer = entity_layer[eid]
        if eid not in anchors:
            detail = f"hop {layer - 1}"
        nodes.append(Node(key, "entity", shorten(name, 40), detail, layer, status, tooltip))
    item_layer = 1 + max(entity_layer.values(), default=0)
    for kind, rank, hit, src, label in items:
        key = f"n{len(nodes)}"
        nodes.append(_item_node(key, kind, rank, hit, item_layer, printed, dropped))
        add_edge(src, key, label)
    order = {n.key: i for i, n in enumerate(nodes)}
    nodes.sort(key=lambda n: (n.layer, order[n.key]))
    return ExplainGraph(
        title=f"{clean_text(result.recipe)}: \u201c{shorten(query, 80)}\u201d",
        nodes=tuple(nodes),
        edges=tuple(edges.values()),
        shown=len(items),
        total=len(result.facts) + len(result.chunks),
        has_context=context is not None,
    )


#: A drawn item: kind, rank, hit, the key of the node it hangs from, its edge's label.
_Item = tuple[Literal["fact", "chunk"], int, FactHit | ChunkHit, str, str]


def _step_label(step: Step) -> str:
    pred = clean_text(step.predicate)
    return f"{pred} \u2192" if step.direction == "out" else f"\u2190 {pred}"


def _last_label(path: Sequence[Step]) -> str:
    """The label of an item's edge: the last step's predicate when the path ends on one."""
    if path and path[-1].predicate is not None:
        return _step_label(path[-1])
    return ""


def _attach(fact: FactHit, path_end: str | None, entity_key: dict[Hashable, str]) -> str:
    """The node a fact hangs from: its path's end, else its anchor, subject or object when
    drawn, else the query."""
    if path_end is not None:
        return path_end
    for eid in (fact.anchor, fact.subject, fact.object):
        if eid is not None and eid in entity_key:
            return entity_key[eid]
    return "n0"


def _item_node(
    key: str,
    kind: Literal["fact", "chunk"],
    rank: int,
    hit: FactHit | ChunkHit,
    layer: int,
    printed: set[tuple[str, Hashable]],
    dropped: set[tuple[str, Hashable]],
) -> Node:
    if isinstance(hit, FactHit):
        label = clean_text(f"{hit.subject_name} {hit.predicate} {hit.value}")
    else:
        label = clean_text(hit.text)
    status: Status = "ranked"
    if (kind, hit.id) in printed or ("*", hit.id) in printed:
        status = "context"
    elif (kind, hit.id) in dropped or ("*", hit.id) in dropped:
        status = "dropped"
    mark = {"context": " \u00b7 in context", "dropped": " \u00b7 dropped by budget"}.get(status, "")
    comps = ", ".join(f"{clean_text(k)} {_num(float(v))}" for k, v in dict(hit.components).items())
    path = clean_text(render_path(hit.path)) if hit.path else ""
    tip = [f"#{rank} {kind} {clean_text(hit.id)}: {label}", f"score {_num(hit.score)}"]
    if comps:
        tip.append(comps)
    if path:
        tip.append(f"path: {path}")
    if isinstance(hit, ChunkHit):
        tip.append(
            f"via {clean_text(hit.source)}" + (f", tier {clean_text(hit.tier)}" if hit.tier else "")
        )
    return Node(
        key=key,
        kind=kind,
        title=shorten(f"#{rank} {label}", 56),
        detail=f"{kind} {shorten(clean_text(hit.id), 16)} \u00b7 score {_num(hit.score)}{mark}",
        layer=layer,
        status=status,
        tooltip="\n".join(tip),
        rank=rank,
    )
