"""Explain a result: for each item, the path that reached it from its anchor and the parts of
its score. Reads results only; never calls back into traversal.

Example output line::

    2. fact f2 "JACQ Project uses DuckDB" score 1.7112 = confidence 0.92 x source_weight 1.5
       x decay 1 x usage_boost 1.4771 x status_weight 1 | path: User -works_on-> JACQ Project
       -uses-> DuckDB
"""

from __future__ import annotations

from typing import Any

from ..context import render_path
from ..recipes.hits import ChunkHit, EntityHit, FactHit, RetrievalResult

__all__ = ["explain", "explain_records", "render_steps"]


#: The path renderer (one for context blocks and explanations).
render_steps = render_path


def _num(x: float) -> str:
    return f"{x:.4g}"


def _components(c: dict[str, float] | Any) -> str:
    return ", ".join(f"{k} {_num(float(v))}" for k, v in dict(c).items())


def explain_records(result: RetrievalResult) -> list[dict[str, Any]]:
    """One dict per ranked item (facts, then chunks, then reached entities): kind, rank,
    id, score, components, path (as text and as steps)."""
    out: list[dict[str, Any]] = []

    def rec(kind: str, rank: int, item: FactHit | ChunkHit | EntityHit, label: str) -> None:
        comps = dict(getattr(item, "components", {}) or {})
        out.append(
            {
                "kind": kind,
                "rank": rank,
                "id": item.id,
                "label": label,
                "score": float(item.score),
                "components": comps,
                "path": render_path(item.path),
                "steps": list(item.path),
                "source": getattr(item, "source", getattr(item, "how", None)),
            }
        )

    for i, f in enumerate(result.facts, 1):
        rec("fact", i, f, f"{f.subject_name} {f.predicate} {f.value}")
    for i, c in enumerate(result.chunks, 1):
        text = c.text if len(c.text) <= 80 else c.text[:77] + "..."
        rec("chunk", i, c, text)
    for i, e in enumerate(result.entities, 1):
        rec("entity", i, e, e.name)
    return out


def explain(result: RetrievalResult) -> str:
    """A readable explanation: the anchors, then every fact and chunk with its score, the
    components of the score and its path from the anchor."""
    lines = [f"{result.recipe}: {result.query!r} (tenant {result.tenant!r})"]
    if result.route is not None:
        rt = result.route
        lines.append(
            f"route: {getattr(rt, 'query_type', rt)} scope={list(getattr(rt, 'search_scope', ()))} "
            f"filters={dict(getattr(rt, 'filters', {}))}"
        )
    if result.fallback:
        lines.append(f"fallback: {result.fallback}")
    if result.anchors:
        lines.append(
            "anchors: " + ", ".join(f"{a.name} ({a.how} {_num(a.score)})" for a in result.anchors)
        )
    for r in explain_records(result):
        if r["kind"] == "entity":
            continue
        line = f"{r['rank']:>3}. {r['kind']} {r['id']!r} {r['label']!r} score {_num(r['score'])}"
        if r["components"]:
            line += f" [{_components(r['components'])}]"
        if r["source"]:
            line += f" via {r['source']}"
        if r["path"]:
            line += f" | path: {r['path']}"
        lines.append(line)
    if result.timings:
        lines.append(
            "timings: " + ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in result.timings.items())
        )
    return "\n".join(lines)
