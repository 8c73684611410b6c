"""A Neo4j CSV export as tables.

Two shapes are read:

* **neo4j-admin import files** (what ``neo4j-admin database import`` reads and APOC's
  ``bulkImport: true`` export writes): node files with an ``:ID`` column (``:ID``,
  ``name:ID`` or ``:ID(space)``) and a ``:LABEL`` column (labels joined by ``;``),
  relationship files with ``:START_ID``, ``:END_ID`` and ``:TYPE``; other columns are
  properties, ``name:type`` (``:IGNORE`` columns are not read). A folder of such CSV files
  is read, each file told by its header. As ``neo4j-admin`` allows, the header may sit in a
  file of its own: ``persons_header.csv`` (or ``persons-header.csv``) holds only the header
  line, and every other file of the folder named ``persons.csv`` or ``persons<sep>...csv``
  (``<sep>`` one of ``-_.``, e.g. ``persons-part1.csv``) holds rows only; the longest such
  prefix wins.
* **APOC's ``apoc.export.csv.all``** file: one CSV with ``_id``, ``_labels`` (``:A:B``) and
  the properties for nodes, ``_start``, ``_end``, ``_type`` for relationships.

=====================================  ==============================================
Neo4j                                  graphrecall
=====================================  ==============================================
node ``:ID`` / ``_id``                 entity or chunk id (``space:value`` for an
                                       ``:ID(space)``)
node labelled ``Chunk`` or with a      a chunk: ``text`` its text
``text`` property
other nodes                            entities: ``name`` (else ``title``, else the id)
                                       as name, the first label (but
                                       ``__Entity__``-like ones) as type,
                                       ``description``
relationship between two entities     a fact: ``:TYPE`` / ``_type`` as predicate,
                                       ``weight`` (or ``strength``) as strength,
                                       ``description``
relationship between a chunk and an   a mention (neo4j-graphrag's ``FROM_CHUNK``)
entity
=====================================  ==============================================

Relationships between two chunks (``NEXT_CHUNK``) are not read; their count is logged.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..tables import GraphTables
from ._common import TableBuilder, bad_value, logger, missing_column, missing_file, text_or_none


@dataclass
class _Node:
    labels: list[str]
    props: dict[str, Any]
    id_prop: str | None


def _rows(path: Path) -> Iterator[list[str]]:
    try:
        with path.open(encoding="utf-8", newline="") as f:
            yield from csv.reader(f)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not UTF-8 ({exc})", table=path.name, kind="invalid_value"
        ) from None


_HEADER_SUFFIXES = ("_header", "-header")


def _header_files(files: list[Path]) -> tuple[dict[Path, Path], list[Path]]:
    """Pair each data file with its separate header file (if any) and list the data files.

    Raises:
        DataError: A header file no data file belongs to, or one with more than one line.
    """
    prefixes: dict[str, Path] = {}
    for f in files:
        for suffix in _HEADER_SUFFIXES:
            if f.stem.lower().endswith(suffix) and len(f.stem) > len(suffix):
                prefixes[f.stem[: -len(suffix)]] = f
    data = [f for f in files if f not in prefixes.values()]
    pairs: dict[Path, Path] = {}
    for f in data:
        fits = [
            p for p in prefixes if f.stem == p or (f.stem.startswith(p) and f.stem[len(p)] in "-_.")
        ]
        if fits:
            pairs[f] = prefixes[max(fits, key=len)]
    for prefix, h in prefixes.items():
        if h not in pairs.values():
            raise DataError(
                f"{h}: a header file, but no data file named {prefix}.csv or "
                f"{prefix}-<part>.csv sits beside it",
                table=h.name,
                kind="missing",
            )
        lines = list(_rows(h))
        if len(lines) != 1:
            raise DataError(
                f"{h}: a header file holds exactly one line (the header), found {len(lines)}",
                table=h.name,
                kind="invalid_value",
            )
    return pairs, data


def _split(field: str) -> tuple[str, str]:
    """``name:type`` -> (name, type); ``:ID(space)`` -> ("", "ID(space)")."""
    name, _, kind = field.rpartition(":") if ":" in field else (field, "", "")
    return name, kind


def _value(text: str, kind: str) -> Any:
    if text == "":
        return None
    base = kind.lower()
    if base.endswith("[]"):
        return [_value(t, base[:-2]) for t in text.split(";")]
    try:
        if base in ("int", "long", "short", "byte"):
            return int(text)
        if base in ("float", "double"):
            return float(text)
    except ValueError:
        return text
    if base == "boolean":
        return text.lower() == "true"
    return text


def _space(kind: str, prefix: str) -> tuple[bool, str | None]:
    """Whether ``kind`` is ``prefix`` or ``prefix(space)``, and the space."""
    if kind == prefix:
        return True, None
    if kind.startswith(prefix + "(") and kind.endswith(")"):
        return True, kind[len(prefix) + 1 : -1] or None
    return False, None


def _key(value: str, space: str | None) -> str:
    return value if space is None else f"{space}:{value}"


class _Reader:
    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {}
        self.rels: list[tuple[Path, int, str, str, str | None, dict[str, Any]]] = []

    def admin(self, path: Path, header: list[str], rows: Iterator[list[str]]) -> None:
        fields = [_split(h) for h in header]
        kinds = [k for _, k in fields]
        start = next((i for i, k in enumerate(kinds) if _space(k, "START_ID")[0]), None)
        if start is not None:
            end = next((i for i, k in enumerate(kinds) if _space(k, "END_ID")[0]), None)
            if end is None:
                raise missing_column(path, ":END_ID", header)
            typ = next((i for i, k in enumerate(kinds) if k == "TYPE"), None)
            s_space, e_space = _space(kinds[start], "START_ID")[1], _space(kinds[end], "END_ID")[1]
            special = {start, end, typ}
            for r, row in enumerate(rows, start=1):
                if max(start, end) >= len(row):
                    raise bad_value(path, r, header[end], "a relationship without both ends", row)
                props = {
                    n: _value(row[i], k)
                    for i, (n, k) in enumerate(fields)
                    if i not in special and i < len(row) and k != "IGNORE" and n
                }
                self.rels.append(
                    (
                        path,
                        r,
                        _key(row[start], s_space),
                        _key(row[end], e_space),
                        row[typ] if typ is not None and typ < len(row) else None,
                        props,
                    )
                )
            return
        idx = next((i for i, k in enumerate(kinds) if _space(k, "ID")[0]), None)
        if idx is None:
            raise missing_column(path, ":ID or :START_ID", header)
        space = _space(kinds[idx], "ID")[1]
        id_prop = fields[idx][0] or None
        lab = next((i for i, k in enumerate(kinds) if k == "LABEL"), None)
        for r, row in enumerate(rows, start=1):
            if idx >= len(row) or row[idx] == "":
                raise bad_value(path, r, header[idx], "a node without an id", row)
            props = {
                n: _value(row[i], k)
                for i, (n, k) in enumerate(fields)
                if i != lab and i < len(row) and k != "IGNORE" and n
            }
            if id_prop is not None:
                props[id_prop] = row[idx]
            labels = [x for x in row[lab].split(";") if x] if lab is not None else []
            self.nodes[_key(row[idx], space)] = _Node(labels, props, id_prop)

    def apoc(self, path: Path, header: list[str], rows: Iterator[list[str]]) -> None:
        col = {h: i for i, h in enumerate(header)}
        for need in ("_id", "_labels", "_start", "_end", "_type"):
            if need not in col:
                raise missing_column(path, need, header)
        special = {col[k] for k in ("_id", "_labels", "_start", "_end", "_type")}
        width = max(col.values()) + 1
        for r, row in enumerate(rows, start=1):
            if len(row) < width:
                raise bad_value(path, r, header[-1], f"{len(row)} fields of {len(header)}", row)
            props = {
                h: row[i]
                for i, h in enumerate(header)
                if i not in special and i < len(row) and row[i] != ""
            }
            if row[col["_id"]] != "":
                labels = [x for x in row[col["_labels"]].split(":") if x]
                self.nodes[row[col["_id"]]] = _Node(labels, props, None)
            elif row[col["_start"]] != "" and row[col["_end"]] != "":
                self.rels.append(
                    (
                        path,
                        r,
                        row[col["_start"]],
                        row[col["_end"]],
                        row[col["_type"]] or None,
                        props,
                    )
                )
            else:
                raise bad_value(path, r, "_id", "neither a node (_id) nor a relationship", row)


def _is_chunk(node: _Node) -> bool:
    return any(x.lower() == "chunk" for x in node.labels) or bool(node.props.get("text"))


def load_neo4j(path: str | os.PathLike[str]) -> GraphTables:
    """Read a Neo4j CSV export: a folder of neo4j-admin import files, or an APOC
    ``export.csv.all`` file (or a folder holding one).

    Args:
        path: The CSV file or the folder of CSV files.

    Returns:
        The tables (unchecked): entities, facts, and the chunks and mentions of
        ``Chunk`` nodes.

    Raises:
        StorageError: No such file, or a folder without CSV files.
        DataError: A separate header file that no data file follows or that holds more
            than the header line; a file with neither ``:ID`` nor ``:START_ID`` (nor APOC's ``_id``
            and ``_start``), a relationship file without ``:END_ID``, a node without
            an id, or a relationship naming no node (each error names the file and
            column).
    """
    root = Path(path)
    files = sorted(root.glob("*.csv")) if root.is_dir() else [root]
    if not root.exists():
        raise missing_file(root, "Neo4j CSV export")
    if not files:
        raise missing_file(root / "*.csv", "Neo4j CSV export: no CSV files")
    reader = _Reader()
    headers, data = _header_files(files) if root.is_dir() else ({}, files)
    for f in data:
        rows = _rows(f)
        header = next(_rows(headers[f])) if f in headers else next(rows, None)
        if header is None:
            raise missing_column(f, ":ID or :START_ID", [])
        if "_id" in header and "_start" in header:
            reader.apoc(f, header, rows)
        else:
            reader.admin(f, header, rows)
    b = TableBuilder()
    for nid, node in reader.nodes.items():
        if _is_chunk(node):
            b.chunk(nid, text_or_none(node.props.get("text")), tags=node.labels)
            continue
        p = node.props
        name = p.get("name") or p.get("title") or (p.get(node.id_prop) if node.id_prop else None)
        b.entity(
            nid,
            text_or_none(name) or nid,
            next((x for x in node.labels if not (x.startswith("__") and x.endswith("__"))), None),
            text_or_none(p.get("description")),
        )
    skipped = 0
    for f, r, s, e, typ, props in reader.rels:
        for col, end in ((":START_ID", s), (":END_ID", e)):
            if end not in reader.nodes:
                raise bad_value(f, r, col, "names no node of the export", end)
        s_chunk, e_chunk = b.has_chunk(s), b.has_chunk(e)
        if s_chunk and e_chunk:
            skipped += 1
        elif s_chunk or e_chunk:
            b.mention(s if s_chunk else e, e if s_chunk else s)
        else:
            w = props.get("weight", props.get("strength"))
            try:
                strength = None if w is None else float(w)
            except (TypeError, ValueError):
                raise bad_value(f, r, "weight", "not a number", w) from None
            b.fact(
                s,
                e,
                predicate=typ,
                description=text_or_none(props.get("description")),
                strength=strength,
            )
    if skipped:
        logger.warning("neo4j: %d relationships between two chunks are not read", skipped)
    return b.tables()
