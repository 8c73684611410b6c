"""The ``graphrecall query`` options that write an explanation picture to a file."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ..context import ContextBlock
from ..recipes.hits import RetrievalResult
from .dot import to_dot
from .html import to_html
from .mermaid import to_mermaid
from .svg import to_svg

__all__ = ["FORMATS", "add_arguments", "requested", "write"]

#: Option suffix -> renderer.
FORMATS: dict[str, Callable[[RetrievalResult, ContextBlock | None], str]] = {
    "html": to_html,
    "svg": to_svg,
    "dot": to_dot,
    "mermaid": to_mermaid,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--explain-html`` / ``--explain-svg`` / ``--explain-dot`` / ``--explain-mermaid``."""
    what = {
        "html": "a self-contained HTML page (opens offline)",
        "svg": "an SVG picture",
        "dot": "Graphviz DOT",
        "mermaid": "a Mermaid flowchart",
    }
    for fmt, text in what.items():
        parser.add_argument(
            f"--explain-{fmt}",
            metavar="FILE",
            help=f"also write the explanation (anchors, paths, scores, context items) as {text}",
        )


def requested(args: argparse.Namespace) -> bool:
    """Whether any ``--explain-*`` file was asked for."""
    return any(getattr(args, f"explain_{fmt}", None) for fmt in FORMATS)


def write(args: argparse.Namespace, result: RetrievalResult, context: ContextBlock | None) -> None:
    """Writes every requested picture of ``result`` (UTF-8)."""
    for fmt, render in FORMATS.items():
        path = getattr(args, f"explain_{fmt}", None)
        if path:
            Path(path).write_text(render(result, context), encoding="utf-8")
