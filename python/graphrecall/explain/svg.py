"""An explanation as SVG, laid out here (no Graphviz needed): one column per layer of the
:class:`~.graph.ExplainGraph`, left to right; entities in a column ordered by the mean row of
the nodes that lead to them (fewer crossings), items kept in rank order. Every text is escaped,
so names holding markup stay text.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from ..context import ContextBlock
from ..recipes.hits import RetrievalResult
from .graph import DEFAULT_MAX_ITEMS, ExplainGraph, Node, explain_graph

__all__ = ["STYLES", "Box", "layout", "render_svg", "to_svg"]

#: Fill, stroke, stroke width, dash, text colour per node status (shared with the legend).
STYLES: dict[str, tuple[str, str, float, str, str]] = {
    "query": ("#334155", "#0f172a", 1.5, "", "#ffffff"),
    "anchor": ("#dbeafe", "#2563eb", 1.5, "", "#0f172a"),
    "entity": ("#f1f5f9", "#64748b", 1.0, "", "#0f172a"),
    "context": ("#dcfce7", "#16a34a", 2.0, "", "#0f172a"),
    "dropped": ("#fef3c7", "#d97706", 1.5, "5 3", "#0f172a"),
    "ranked": ("#ffffff", "#94a3b8", 1.0, "", "#0f172a"),
}
#: What each status means, for legends.
LEGEND: tuple[tuple[str, str], ...] = (
    ("query", "query"),
    ("anchor", "anchor"),
    ("entity", "entity on a path"),
    ("context", "in the context block"),
    ("dropped", "dropped by the budget"),
    ("ranked", "ranked (no block given)"),
)

_BOLD_W = 7.4  # mean width of a bold 12 px sans-serif character (titles)
_SMALL_W = 6.2  # mean width of a 10.5 px character (details)
_NODE_H = 40.0
_ROW_GAP = 12.0
_COL_GAP = 140.0
_MARGIN = 16.0
_TOP = 64.0  # title and legend


@dataclass(frozen=True, slots=True)
class Box:
    """Where a node is drawn: its top-left corner and size, in SVG units."""

    node: Node
    x: float
    y: float
    w: float
    h: float


def _width(n: Node) -> float:
    return min(max(len(n.title) * _BOLD_W, len(n.detail) * _SMALL_W) + 22.0, 440.0)


def layout(graph: ExplainGraph) -> tuple[dict[str, Box], float, float]:
    """Boxes for every node, and the drawing's width and height.

    Columns are the graph's layers; a column's width is its widest node's. Entity columns are
    ordered by the mean row of their predecessors, item columns keep rank order; every column is
    centred vertically.
    """
    layers = graph.layers()
    preds: dict[str, list[str]] = {}
    for e in graph.edges:
        preds.setdefault(e.target, []).append(e.source)
    row: dict[str, float] = {}
    ordered: list[list[Node]] = []
    for col in layers:
        if col and col[0].kind == "entity":
            first = {n.key: i for i, n in enumerate(col)}

            def bary(n: Node, first: dict[str, int] = first) -> tuple[float, int]:
                rows = [row[p] for p in preds.get(n.key, ()) if p in row]
                return (sum(rows) / len(rows) if rows else float(first[n.key]), first[n.key])

            col = sorted(col, key=bary)
        for i, n in enumerate(col):
            row[n.key] = float(i)
        ordered.append(col)
    heights = [len(c) * (_NODE_H + _ROW_GAP) - _ROW_GAP for c in ordered]
    tallest = max(heights, default=0.0)
    boxes: dict[str, Box] = {}
    x = _MARGIN
    for col, h in zip(ordered, heights, strict=True):
        if not col:
            continue
        w = max(_width(n) for n in col)
        y = _TOP + (tallest - h) / 2
        for n in col:
            boxes[n.key] = Box(n, x, y, w, _NODE_H)
            y += _NODE_H + _ROW_GAP
        x += w + _COL_GAP
    width = max(x - _COL_GAP + _MARGIN, 640.0)
    return boxes, width, _TOP + tallest + _MARGIN


def _free_spot(
    placed: list[tuple[float, float, float]], x: float, y: float, half: float
) -> tuple[float, float]:
    """A spot near ``(x, y)`` where a label of half width ``half`` overlaps no placed one
    (tried downwards, then upwards, in 12-unit steps); records it."""
    for k in range(12):
        ty = y + 12 * ((k + 1) // 2) * (1 if k % 2 else -1) if k else y
        if all(abs(ty - py) >= 12 or abs(x - px) >= half + ph for px, py, ph in placed):
            placed.append((x, ty, half))
            return x, ty
    placed.append((x, y, half))
    return x, y


def _a(value: object) -> str:
    return escape(str(value), quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}"


def render_svg(graph: ExplainGraph, *, standalone: bool = True) -> str:
    """The graph as an SVG document.

    Args:
        graph: The explanation graph.
        standalone: Include the XML namespace (a file of its own); ``False`` for SVG inlined in
            HTML, which needs none.
    """
    boxes, width, height = layout(graph)
    ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    out = [
        f'<svg{ns} class="gr-explain" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" role="img" '
        'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" '
        'font-size="12">',
        f"<title>{_a(graph.title)}</title>",
        '<defs><marker id="gr-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#64748b"/></marker></defs>',
        f'<rect width="{_f(width)}" height="{_f(height)}" fill="#ffffff"/>',
        f'<text x="{_f(_MARGIN)}" y="22" font-size="15" font-weight="600" fill="#0f172a">'
        f"{_a(graph.title)}</text>",
    ]
    lx = _MARGIN
    for status, label in LEGEND:
        if status == "ranked" and graph.has_context:
            label = "ranked, not in the block"
        fill, stroke, sw, dash, _ = STYLES[status]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<rect x="{_f(lx)}" y="34" width="14" height="12" rx="3" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{sw}"{dash_attr}/>'
            f'<text x="{_f(lx + 19)}" y="44" font-size="11" fill="#334155">{_a(label)}</text>'
        )
        lx += 19 + len(label) * 5.9 + 18
    if graph.shown < graph.total:
        out.append(
            f'<text x="{_f(lx)}" y="44" font-size="11" fill="#b91c1c">'
            f"{graph.shown} of {graph.total} items drawn</text>"
        )
    out.append('<g class="edges" fill="none" stroke="#64748b" stroke-width="1.2">')
    labels: list[str] = []
    placed: list[tuple[float, float, float]] = []  # label centre x, baseline y, half width
    for e in graph.edges:
        s, t = boxes[e.source], boxes[e.target]
        y1, y2 = s.y + s.h / 2, t.y + t.h / 2
        if t.x > s.x:
            x1, x2 = s.x + s.w, t.x
            dx = (x2 - x1) / 2
            d = (
                f"M{_f(x1)},{_f(y1)} C{_f(x1 + dx)},{_f(y1)} "
                f"{_f(x2 - dx)},{_f(y2)} {_f(x2)},{_f(y2)}"
            )
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2
            if t.node.layer - s.node.layer > 1:  # a long edge: label it by its target
                mx, my = x2 - len(e.label) * 3.0 - 14, y2
        else:  # same column (or back): a bow out to the right
            x1, x2 = s.x + s.w, t.x + t.w
            bulge = max(x1, x2) + 40 + abs(y2 - y1) / 4
            d = f"M{_f(x1)},{_f(y1)} C{_f(bulge)},{_f(y1)} {_f(bulge)},{_f(y2)} {_f(x2)},{_f(y2)}"
            mx, my = max(x1, x2) + 30 + abs(y2 - y1) / 8, (y1 + y2) / 2
        out.append(f'<path d="{d}" marker-end="url(#gr-arrow)"/>')
        if e.label:
            mx, my = _free_spot(placed, mx, my, len(e.label) * 3.0 + 4)
            labels.append(
                f'<text x="{_f(mx)}" y="{_f(my - 3)}" text-anchor="middle" font-size="10.5" '
                'fill="#475569" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                f"{_a(e.label)}</text>"
            )
    out.append("</g>")
    out.append('<g class="edge-labels">')
    out.extend(labels)
    out.append("</g>")
    out.append('<g class="nodes">')
    for b in boxes.values():
        n = b.node
        fill, stroke, sw, dash, ink = STYLES[n.status]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        rx = 20 if n.kind == "query" else (12 if n.kind == "entity" else 4)
        out.append(
            f'<g class="node {n.kind} {n.status}" id="gr-{n.key}"><title>{_a(n.tooltip)}</title>'
            f'<rect x="{_f(b.x)}" y="{_f(b.y)}" width="{_f(b.w)}" height="{_f(b.h)}" '
            f'rx="{rx}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash_attr}/>'
            f'<text x="{_f(b.x + 10)}" y="{_f(b.y + 16)}" font-weight="600" fill="{ink}">'
            f"{_a(n.title)}</text>"
            f'<text x="{_f(b.x + 10)}" y="{_f(b.y + 31)}" font-size="10.5" fill="{ink}" '
            f'fill-opacity="0.8">{_a(n.detail)}</text></g>'
        )
    out.append("</g></svg>")
    return "\n".join(out)


def to_svg(
    result: RetrievalResult,
    context: ContextBlock | None = None,
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> str:
    """A result's explanation as a standalone SVG document.

    Args:
        result: The result to explain.
        context: The context block built from it: its items are drawn as "in context", its
            dropped items as "dropped" (``None``: unmarked).
        max_items: The most ranked items to draw.

    Returns:
        The SVG text (UTF-8, no external references but the SVG namespace).

    Example:
        >>> open("why.svg", "w").write(to_svg(res, rag.context(res)))  # doctest: +SKIP
    """
    return render_svg(explain_graph(result, context, max_items=max_items))
