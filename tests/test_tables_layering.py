"""The tables room is the ground floor and the graph is reached through one encoder: read
the imports of the modules, so that this stays true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import graphrecall

PACKAGE = Path(graphrecall.__file__).parent


def module_imports(path: Path) -> list[tuple[str, int]]:
    """(module, level) of every module-level import of a file (deferred imports inside
    functions are not counted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[str, int]] = []
    for node in tree.body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks import for types only
            continue
        if isinstance(node, ast.Import):
            out.extend((a.name, 0) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module or "", node.level))
    return out


def test_tables_depend_only_on_numpy_errors_and_themselves() -> None:
    for path in sorted((PACKAGE / "tables").glob("*.py")):
        for module, level in module_imports(path):
            if level == 0:
                top = module.split(".")[0]
                assert top in {"__future__", "numpy", *_STDLIB}, (path.name, module)
            elif level == 2:
                assert module == "errors", (path.name, module)
            else:
                assert level == 1, (path.name, module)


def test_the_graph_reads_tables_not_storage() -> None:
    for path in sorted((PACKAGE / "graph").glob("*.py")):
        for module, level in module_imports(path):
            if level == 2:
                assert module.split(".")[0] in {"", "tables", "errors", "results", "scoring"}, (
                    path.name,
                    module,
                )


def test_nobody_takes_the_tables_through_storage() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "storage" and path.name == "__init__.py":
            continue
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if line.startswith(("from", "import")) or line.startswith("    from"):
                assert "storage.tables" not in line, (path, line)
                assert not re.search(r"(?<![A-Za-z0-9])_columns\b", line), (path, line)
                if "storage import" in line:
                    assert "GraphTables" not in line and "EmbeddingSet" not in line, (path, line)


_STDLIB = {
    "collections",
    "copy",
    "dataclasses",
    "datetime",
    "itertools",
    "json",
    "operator",
    "re",
    "sys",
    "types",
    "typing",
    "weakref",
}
