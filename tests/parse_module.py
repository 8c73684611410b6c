"""A module's syntax tree for the tests that read the source (layering, reference imports)."""

from __future__ import annotations

import ast
from pathlib import Path


def parse(path: Path) -> ast.Module:
    """``ast.parse`` of a module, tried again on CPython 3.11's spurious "AST constructor
    recursion depth mismatch" (python/cpython#106905, seen with threads left running by an
    earlier test, e.g. a Ray cluster's); the file itself is fine."""
    for attempt in range(3):
        try:
            return ast.parse(path.read_text("utf-8"), str(path))
        except SystemError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
