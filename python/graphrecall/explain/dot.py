"""An explanation as Graphviz DOT (``dot -Tsvg why.dot``), same layers as the SVG: the query,
anchors, path entities and ranked items left to right. Strings are quoted with ``\\`` and
``"`` escaped, so no name can break the syntax or smuggle a Graphviz escape."""

from __future__ import annotations

from ..context import ContextBlock
from ..recipes.hits import RetrievalResult
from .graph import DEFAULT_MAX_ITEMS, ExplainGraph, explain_graph
from .svg import STYLES

__all__ = ["dot_string", "render_dot", "to_dot"]


def dot_string(text: str) -> str:
    """``text`` as a quoted DOT string (newlines become ``\\n`` line breaks)."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def render_dot(graph: ExplainGraph) -> str:
    """The graph as DOT text."""
    out = [
        "digraph explanation {",
        f"  graph [rankdir=LR, labelloc=t, fontname=Helvetica, label={dot_string(graph.title)}];",
        '  node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10];',
        '  edge [fontname=Helvetica, fontsize=9, color="#64748b"];',
    ]
    for n in graph.nodes:
        fill, stroke, sw, dash, ink = STYLES[n.status]
        style = '"rounded,filled,dashed"' if dash else '"rounded,filled"'
        out.append(
            f"  {n.key} [label={dot_string(n.title + chr(10) + n.detail)}, "
            f'tooltip={dot_string(n.tooltip)}, style={style}, fillcolor="{fill}", '
            f'color="{stroke}", penwidth={sw}, fontcolor="{ink}"];'
        )
    for e in graph.edges:
        label = f" [label={dot_string(e.label)}]" if e.label else ""
        out.append(f"  {e.source} -> {e.target}{label};")
    for layer in graph.layers():
        if layer:
            out.append("  { rank=same; " + " ".join(f"{n.key};" for n in layer) + " }")
    out.append("}")
    return "\n".join(out) + "\n"


def to_dot(
    result: RetrievalResult,
    context: ContextBlock | None = None,
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> str:
    """A result's explanation as Graphviz DOT (see :func:`~.svg.to_svg` for the arguments)."""
    return render_dot(explain_graph(result, context, max_items=max_items))
