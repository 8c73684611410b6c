"""An explanation as a Mermaid flowchart (``flowchart LR``), for Markdown that renders Mermaid
(GitHub, GitLab, many wikis). Labels are written with Mermaid's numeric entity codes for every
character but letters, digits and a few safe marks, so no name can break the syntax."""

from __future__ import annotations

import json

from ..context import ContextBlock
from ..recipes.hits import RetrievalResult
from .graph import DEFAULT_MAX_ITEMS, ExplainGraph, explain_graph
from .svg import STYLES

__all__ = ["mermaid_label", "render_mermaid", "to_mermaid"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:_-+/()")


def mermaid_label(text: str) -> str:
    """``text`` for a quoted Mermaid label: ``#<code>;`` for every character outside a safe
    set (quotes, brackets, pipes, markup, ``#`` and non-ASCII included)."""
    return "".join(c if c in _SAFE else f"#{ord(c)};" for c in text)


def render_mermaid(graph: ExplainGraph) -> str:
    """The graph as Mermaid flowchart text."""
    title = json.dumps("".join(" " if c in "<>&" else c for c in graph.title))  # YAML string
    out = ["---", f"title: {title}", "---", "flowchart LR"]
    shape = {"query": ('(["', '"])'), "entity": ('("', '")')}
    for n in graph.nodes:
        left, right = shape.get(n.kind, ('["', '"]'))
        out.append(f"  {n.key}{left}{mermaid_label(n.title)}<br/>{mermaid_label(n.detail)}{right}")
    for e in graph.edges:
        label = f'|"{mermaid_label(e.label)}"|' if e.label else ""
        out.append(f"  {e.source} -->{label} {e.target}")
    used = sorted({n.status for n in graph.nodes})
    for status in used:
        fill, stroke, sw, dash, ink = STYLES[status]
        extra = f",stroke-dasharray:{dash}" if dash else ""
        out.append(
            f"  classDef {status} fill:{fill},stroke:{stroke},stroke-width:{sw}px,"
            f"color:{ink}{extra}"
        )
        keys = ",".join(n.key for n in graph.nodes if n.status == status)
        out.append(f"  class {keys} {status}")
    return "\n".join(out) + "\n"


def to_mermaid(
    result: RetrievalResult,
    context: ContextBlock | None = None,
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> str:
    """A result's explanation as a Mermaid flowchart (see :func:`~.svg.to_svg` for the
    arguments)."""
    return render_mermaid(explain_graph(result, context, max_items=max_items))
