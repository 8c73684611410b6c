"""The references in ``tests/reference/`` stay independent of the code they check: they import
the standard library, numpy and each other only (regression oracles that may call the code
under test live in ``tests/oracles/``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from parse_module import parse

REFERENCE = Path(__file__).parent / "reference"
#: The standard library modules and numpy; "." (each other) is allowed apart.
ALLOWED = {"__future__", "collections", "datetime", "math", "numpy", "re", "struct", "typing"}


def imported_roots(path: Path) -> set[str]:
    """Top-level names of the modules ``path`` imports (relative imports as ``.``)."""
    roots = set()
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add("." if node.level else (node.module or "").split(".")[0])
    return roots


@pytest.mark.parametrize("path", sorted(REFERENCE.glob("*.py")), ids=lambda p: p.name)
def test_reference_imports_no_code_under_test(path: Path) -> None:
    assert imported_roots(path) - ALLOWED - {"."} == set()
