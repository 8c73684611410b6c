"""A module's syntax tree for the tests that read the source (layering, reference imports)."""

from __future__ import annotations

import ast
from pathlib import Path


def parse(path: Path) -> ast.Module:
    """``ast.parse`` of a module, tried again on CPython 3.11's "AST constructor recursion
    depth mismatch": a race with a thread of an earlier test (a cluster's) that changes the
    recursion limit while the tree is converted; the file is fine."""
    for attempt in range(3):
        try:
            return ast.parse(path.read_text("utf-8"), str(path))
        except SystemError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
