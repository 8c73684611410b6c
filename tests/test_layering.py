"""The package's layering, read from the source: no import cycle, no room reaching up the flow,
no room using another room's private names.

The rooms, bottom to top, are ``ROOMS`` below (docs/architecture.md draws the same map). A
module may import from its own room and the rooms below it, at module level or inside a
function alike. ``_core`` (the native extension) is the ground floor every room binds to: its
name is private to users, not to the package.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from parse_module import parse

PKG = Path(__file__).resolve().parent.parent / "python" / "graphrecall"

#: Rooms from the bottom up; a module belongs to the first room whose prefix matches it.
ROOMS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("_core", "errors", "_files", "bundle", "_threads")),
    ("tables", ("tables", "_columns")),
    ("kernels", ("arrays", "scoring", "fusion", "results")),
    ("graph", ("graph",)),
    ("storage", ("storage",)),
    ("embed", ("embed", "e5_engines", "e5_native", "e5_onnx", "e5_tokens", "embed_bulk")),
    ("ingest", ("ingest", "presets")),
    ("anchors", ("anchors",)),
    ("index", ("index", "index_io")),
    ("live", ("live",)),
    ("router", ("router",)),
    ("recipes", ("recipes",)),
    ("context", ("context", "narrative", "explain")),
    ("rag", ("cache", "rag", "evaluate")),
    (
        "entry",
        (
            "cli",
            "demo",
            "indexer",
            "__init__",
            "__main__",
            "serve",
            "service",
            "mcp",
            "integrations",
            "distributed",
        ),
    ),
]

#: Room pairs allowed to import upward, each with its reason.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("tables", "graph"): "GraphTables.to_graph() / build_graph(), the shorthand of "
    "KnowledgeGraph.from_tables, import the graph inside the call: the tables room never "
    "loads it at import",
}


def room_of(module: str) -> str:
    """The room of a dotted module name relative to the package (``recipes.ppr``)."""
    for room, prefixes in ROOMS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return room
    raise AssertionError(f"module {module!r} has no room in ROOMS: add it")


RANK = {room: i for i, (room, _) in enumerate(ROOMS)}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name relative to the package."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _package_of(module: str, path: Path) -> list[str]:
    parts = module.split(".")
    return parts if path.name == "__init__.py" and module != "__init__" else parts[:-1]


def imports(module: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or "", line) for every package-internal import."""
    tree = parse(path)
    pkg = _package_of(module, path) if module != "__init__" else []
    # Imports for type checking only carry no data: they are not part of the flow.
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if not (node.module or "").startswith("graphrecall"):
                    continue
                base = (node.module or "").split(".")[1:]
            else:
                up = node.level - 1
                base = pkg[: len(pkg) - up] if up else list(pkg)
                base = base + (node.module.split(".") if node.module else [])
            for alias in node.names:
                target = ".".join(base)
                sub = ".".join([*base, alias.name])
                # `from . import x` names a module when x is one.
                yield (sub if sub in MODULES else target or "__init__"), alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("graphrecall."):
                    yield alias.name.split(".", 1)[1], "", node.lineno


MODULES = modules()
MODULES["_core"] = PKG / "_core.pyi"


def _resolve(target: str) -> str:
    """The nearest module for a dotted target (a name inside a module maps to the module)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or "__init__"


def test_every_module_has_a_room() -> None:
    for m in MODULES:
        room_of(m)


def test_no_room_reaches_up() -> None:
    bad = []
    for m, path in MODULES.items():
        here = room_of(m)
        for target, _, line in imports(m, path):
            there = room_of(_resolve(target))
            if RANK[there] > RANK[here] and (here, there) not in EXCEPTIONS:
                bad.append(f"{path.relative_to(PKG)}:{line}: {here} imports {target} ({there})")
    assert not bad, "imports reaching up the flow:\n" + "\n".join(bad)


def test_no_private_names_across_rooms() -> None:
    bad = []
    for m, path in MODULES.items():
        here = room_of(m)
        for target, name, line in imports(m, path):
            mod = _resolve(target)
            there = room_of(mod)
            private = name.startswith("_") and not name.startswith("__") and name != "_core"
            hidden = any(p.startswith("_") for p in mod.split("."))
            # The base room's private modules (`_core`, `_files`) are the package's own floor.
            if there != here and (private or (hidden and there != "base")):
                bad.append(f"{path.relative_to(PKG)}:{line}: {m} imports {target}:{name}")
    assert not bad, "private names used across rooms:\n" + "\n".join(bad)


def _private_attrs_by_room() -> dict[str, set[str]]:
    """Private attribute names each room assigns on ``self`` (its objects' internals)."""
    out: dict[str, set[str]] = {}
    for m, path in MODULES.items():
        names = out.setdefault(room_of(m), set())
        tree = parse(path)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                names.add(node.attr)
        # __slots__ entries are attributes too.
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
            ):
                for elt in ast.walk(node.value):
                    if isinstance(elt, ast.Constant) and str(elt.value).startswith("_"):
                        names.add(str(elt.value))
    return out


def test_no_private_attributes_across_rooms() -> None:
    owned = _private_attrs_by_room()
    bad = []
    for m, path in MODULES.items():
        here = room_of(m)
        mine = owned.get(here, set())
        others = set().union(*(v for r, v in owned.items() if r != here)) - mine
        for node in ast.walk(parse(path)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in others
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                bad.append(f"{path.relative_to(PKG)}:{node.lineno}: {m} reads .{node.attr}")
    assert not bad, "private attributes of another room read:\n" + "\n".join(sorted(set(bad)))


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, path in MODULES.items():
        for target, _, _ in imports(m, path):
            dep = _resolve(target)
            if dep != m and dep != "__init__":
                graph[m].add(dep)
    # Tarjan's strongly connected components: any component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            # A package importing its own submodules is not a cycle of rooms.
            comp = [c for c in comp if not any(o.startswith(c + ".") for o in comp)]
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize(("limit", "suffix"), [(600, ".py")])
def test_no_oversized_python_module(limit: int, suffix: str) -> None:
    big = {
        str(p.relative_to(PKG)): n
        for p in PKG.rglob("*" + suffix)
        if (n := len(p.read_text().splitlines())) > limit and str(p.relative_to(PKG)) not in LARGE
    }
    assert not big, f"modules over {limit} lines (split them or list them in LARGE): {big}"


#: Modules allowed over the size limit, each with its reason.
LARGE: dict[str, str] = {}


def test_tables_need_only_numpy_and_the_standard_library() -> None:
    """The ground floor loads no third-party package but numpy, at module level."""
    for path in sorted((PKG / "tables").glob("*.py")):
        for node in parse(path).body:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            for name in names:
                top = name.split(".")[0]
                assert top in {"numpy", "__future__"} | set(sys.stdlib_module_names), (path, name)
