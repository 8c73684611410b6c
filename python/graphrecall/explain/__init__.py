"""Explain a result: the path that reached each item from its anchor and the parts of its
score, as text (:func:`explain`, :func:`explain_records`) or as a picture (:func:`to_mermaid`,
:func:`to_dot`, :func:`to_svg`, :func:`to_html`). Reads results only; never calls back into
traversal.

Modules: :mod:`.text` (the text explanation), :mod:`.graph` (the one drawable model every
picture draws), :mod:`.svg` (layout and SVG), :mod:`.html` (a self-contained page),
:mod:`.mermaid`, :mod:`.dot`, :mod:`.files` (the ``graphrecall query --explain-*`` options).
"""

from .dot import to_dot
from .graph import DEFAULT_MAX_ITEMS, Edge, ExplainGraph, Node, explain_graph
from .html import to_html
from .mermaid import to_mermaid
from .svg import to_svg
from .text import explain, explain_records, render_steps

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "Edge",
    "ExplainGraph",
    "Node",
    "explain",
    "explain_graph",
    "explain_records",
    "render_steps",
    "to_dot",
    "to_html",
    "to_mermaid",
    "to_svg",
]
