"""An explanation as one self-contained HTML page: the graph as inline SVG, the anchors, every
drawn item with its score, score components, path and whether it made the context block, and
the block itself. No script, no external asset (it opens offline), and a Content-Security-Policy
that forbids loading anything, so even a name holding markup (always escaped) could not reach
out.
"""

from __future__ import annotations

from html import escape

from ..context import ContextBlock
from ..recipes.hits import RetrievalResult
from .graph import DEFAULT_MAX_ITEMS, clean_text, explain_graph, shorten
from .svg import STYLES, render_svg
from .text import explain_records

__all__ = ["to_html"]

_CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  color: #0f172a; background: #f8fafc; margin: 0; padding: 20px 28px 40px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
.question { font-size: 17px; margin: 0 0 10px; }
.meta { color: #475569; margin: 0; }
.meta b { color: #0f172a; font-weight: 600; }
.graph { overflow: auto; background: #fff; border: 1px solid #e2e8f0; border-radius: 8px;
  padding: 4px; }
.graph svg { max-width: 100%; height: auto; display: block; }
.graph .node:hover rect { stroke-width: 3; }
table { border-collapse: collapse; background: #fff; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px;
  border-bottom: 1px solid #e2e8f0; }
th { background: #f1f5f9; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bar { display: inline-block; height: 8px; background: #60a5fa; border-radius: 2px;
  vertical-align: middle; margin-right: 6px; }
.chip { display: inline-block; background: #f1f5f9; border: 1px solid #e2e8f0;
  border-radius: 10px; padding: 0 7px; margin: 1px 2px; font-size: 12px; white-space: nowrap; }
.path { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
.status { display: inline-block; border-radius: 4px; padding: 0 6px; font-size: 12px;
  white-space: nowrap; }
pre { background: #fff; border: 1px solid #e2e8f0; border-radius: 8px; padding: 12px;
  white-space: pre-wrap; font-size: 12.5px; }
.note { color: #64748b; font-size: 13px; }
"""

_STATUS_TEXT = {
    "context": "in context",
    "dropped": "dropped (budget)",
    "ranked": "not in block",
}


def _e(value: object) -> str:
    return escape(clean_text(value), quote=True)


def _status_chip(status: str, text: str) -> str:
    fill, stroke, _, dash, _ = STYLES[status]
    border = "dashed" if dash else "solid"
    return (
        f'<span class="status" style="background:{fill};border:1px {border} {stroke}">'
        f"{escape(text)}</span>"
    )


def to_html(
    result: RetrievalResult,
    context: ContextBlock | None = None,
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> str:
    """A result's explanation as a self-contained HTML page.

    Args:
        result: The result to explain.
        context: The context block built from it (``GraphRAG.context``): its items are marked
            "in context", its dropped items "dropped", and its text is shown. ``None``: items
            are not marked.
        max_items: The most ranked items drawn and listed.

    Returns:
        The page (UTF-8 text; no script, no external reference).

    Example:
        >>> open("why.html", "w").write(to_html(res, rag.context(res)))  # doctest: +SKIP
    """
    graph = explain_graph(result, context, max_items=max_items)
    status = {(n.kind, n.rank): n.status for n in graph.nodes if n.rank}
    records = [r for r in explain_records(result) if r["kind"] != "entity"]
    facts = [r for r in records if r["kind"] == "fact"][:max_items]
    chunks = [r for r in records if r["kind"] == "chunk"][: max(max_items - len(facts), 0)]
    shown = facts + chunks
    top = {  # bars are relative to the best item of the same kind
        kind: max((abs(r["score"]) for r in rows), default=0.0) or 1.0
        for kind, rows in (("fact", facts), ("chunk", chunks))
    }

    p: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>graphrecall: {_e(shorten(clean_text(result.query), 80))}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Why these results</h1>",
        f'<p class="question">\u201c{_e(result.query)}\u201d</p>',
        f'<p class="meta"><b>recipe</b> {_e(result.recipe)} &#183; <b>tenant</b> '
        f"{_e(result.tenant)} &#183; <b>{len(result.anchors)}</b> anchors &#183; "
        f"<b>{len(result.facts)}</b> facts &#183; <b>{len(result.chunks)}</b> chunks</p>",
    ]
    if result.route is not None:
        reasons = "; ".join(clean_text(r) for r in result.route.reasons)
        qtype = getattr(result.route.query_type, "value", result.route.query_type)
        p.append(
            f'<p class="meta"><b>route</b> {_e(qtype)} &#8594; '
            f"{_e(result.route.recipe)}{(' (' + escape(reasons) + ')') if reasons else ''}</p>"
        )
    if result.fallback:
        p.append(f'<p class="meta"><b>fallback</b> {_e(result.fallback)}</p>')
    if result.timings:
        t = ", ".join(f"{_e(k)} {v * 1e6:.0f} &#181;s" for k, v in result.timings.items())
        p.append(f'<p class="meta"><b>timings</b> {t}</p>')

    p.append("<h2>Paths from the anchors</h2>")
    p.append(f'<div class="graph">{render_svg(graph, standalone=False)}</div>')
    p.append('<p class="note">Hover a box for its full text, score components and path.</p>')
    if graph.shown < graph.total:
        p.append(f'<p class="note">{graph.shown} of {graph.total} ranked items shown.</p>')

    p.append("<h2>Anchors</h2>")
    if result.anchors:
        p.append("<table><tr><th>entity</th><th>id</th><th>found by</th><th>score</th></tr>")
        for a in result.anchors:
            p.append(
                f"<tr><td>{_e(a.name)}</td><td>{_e(a.id)}</td><td>{_e(a.how)}</td>"
                f'<td class="num">{a.score:.4g}</td></tr>'
            )
        p.append("</table>")
    else:
        p.append('<p class="note">No anchors: the recipe entered by vectors or keywords only.</p>')

    p.append("<h2>Ranked items</h2>")
    if shown:
        p.append(
            "<table><tr><th>#</th><th>kind</th><th>item</th><th>score</th>"
            "<th>score components</th><th>path from the anchor</th><th>context</th></tr>"
        )
        for r in shown:
            st = status.get((r["kind"], r["rank"]), "ranked")
            chips = "".join(
                f'<span class="chip">{_e(k)} {float(v):.4g}</span>'
                for k, v in r["components"].items()
            )
            width = max(2.0, 80.0 * abs(r["score"]) / top[r["kind"]])
            via = f'<div class="note">via {_e(r["source"])}</div>' if r["source"] else ""
            p.append(
                f'<tr><td class="num">{r["rank"]}</td><td>{r["kind"]}<div class="note">'
                f"{_e(shorten(clean_text(r['id']), 24))}</div></td>"
                f"<td>{_e(r['label'])}{via}</td>"
                f'<td class="num"><span class="bar" style="width:{width:.0f}px"></span>'
                f"{r['score']:.4g}</td><td>{chips}</td>"
                f'<td class="path">{_e(r["path"])}</td>'
                f"<td>{_status_chip(st, _STATUS_TEXT.get(st, st))}</td></tr>"
            )
        p.append("</table>")
    else:
        p.append('<p class="note">No ranked facts or chunks.</p>')

    p.append("<h2>Context block</h2>")
    if context is None:
        p.append(
            '<p class="note">No context block was given, so items are not marked; pass '
            "<code>to_html(result, rag.context(result))</code> to mark them.</p>"
        )
    else:
        budget = "no limit" if context.budget is None else f"{context.budget} tokens"
        p.append(
            f'<p class="note">{context.tokens} tokens (budget {budget}); '
            f"{len(context.items)} items printed, {len(context.dropped)} dropped.</p>"
        )
        p.append(f"<pre>{escape(clean_text(context.text, lines=True), quote=True)}</pre>")
    p.append("</body></html>")
    return "\n".join(p) + "\n"
