"""A GraphML file, or networkx node-link JSON, as tables.

GraphML is read with the standard library's XML parser (no networkx needed): ``<key>``
declarations give each ``<data>`` its attribute name and type (``int`` / ``long``,
``float`` / ``double``, ``boolean``, else text). Node-link JSON is what
``networkx.node_link_data`` writes: ``{"nodes": [{"id": ...}, ...], "links"`` (or
``"edges"``) ``: [{"source": ..., "target": ...}, ...]}``.

Nodes become entities and edges facts; attributes are read by name:

=================  ==================================================================
graphrecall        attribute (the first present; ``attributes=`` names another)
=================  ==================================================================
entities.id        the node id
entities.name      ``name``, ``label``, ``title``, ``entity_id``, ``entity_name``
                   (else the node id)
entities.type      ``type``, ``entity_type``, ``category``, ``kind``
entities.desc...   ``description``
facts.subject      the edge's ``source``
facts.object       the edge's ``target``
facts.predicate    ``predicate``, ``relation``, ``relationship``, ``label``, ``type``
facts.description  ``description``
facts.strength     ``weight``, ``strength`` (else 1.0)
=================  ==================================================================
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError, ParameterError
from ..tables import GraphTables
from ._common import TableBuilder, bad_value, missing_column, missing_file, read_json, text_or_none

#: The attributes each of our columns is read from, first present first.
ATTRIBUTES: Mapping[str, tuple[str, ...]] = {
    "entities.name": ("name", "label", "title", "entity_id", "entity_name"),
    "entities.type": ("type", "entity_type", "category", "kind"),
    "entities.description": ("description",),
    "facts.predicate": ("predicate", "relation", "relationship", "label", "type"),
    "facts.description": ("description",),
    "facts.strength": ("weight", "strength"),
}


@dataclass
class Graph:
    """Nodes and edges with their attributes, as read from a file."""

    path: Path
    directed: bool = True
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _typed(text: str | None, kind: str) -> Any:
    if text is None:
        return None
    try:
        if kind in ("int", "long"):
            return int(text)
        if kind in ("float", "double"):
            return float(text)
    except ValueError:
        return text
    if kind == "boolean":
        return text.strip().lower() in ("true", "1")
    return text


def read_graphml(path: str | os.PathLike[str]) -> Graph:
    """Nodes and edges of a GraphML file (the first ``<graph>``).

    Raises:
        StorageError: No such file.
        DataError: Not XML, no ``<graph>``, or a node / edge without its id / endpoints.
    """
    p = Path(path)
    if not p.is_file():
        raise missing_file(p, "GraphML")
    try:
        root = ET.parse(p).getroot()
    except ET.ParseError as exc:
        raise DataError(f"{p}: not GraphML ({exc})", table=p.name, kind="invalid_value") from None
    keys: dict[str, tuple[str, str, Any]] = {}
    for el in root:
        if _local(el.tag) == "key":
            kid = el.get("id") or ""
            kind = el.get("attr.type", "string")
            default = next((d.text for d in el if _local(d.tag) == "default"), None)
            keys[kid] = (el.get("attr.name") or kid, kind, _typed(default, kind))
    graph_el = next((el for el in root if _local(el.tag) == "graph"), None)
    if graph_el is None:
        raise missing_column(p, "<graph>", sorted({_local(el.tag) for el in root}))
    g = Graph(p, directed=graph_el.get("edgedefault", "directed") == "directed")

    keys_for = {el.get("id") or "": el.get("for", "all") for el in root if _local(el.tag) == "key"}

    def attrs(el: ET.Element, what: str) -> dict[str, Any]:
        out = {
            name: default
            for kid, (name, _, default) in keys.items()
            if default is not None and keys_for.get(kid, "all") in (what, "all")
        }
        for d in el:
            if _local(d.tag) == "data":
                kid = d.get("key") or ""
                name, kind, _ = keys.get(kid, (kid, "string", None))
                out[name] = _typed(d.text, kind)
        return out

    n_edges = 0
    for el in graph_el:
        tag = _local(el.tag)
        if tag == "node":
            nid = el.get("id")
            if nid is None:
                raise bad_value(p, len(g.nodes), "node.id", "a node without an id", None)
            g.nodes[nid] = attrs(el, "node")
        elif tag == "edge":
            s, t = el.get("source"), el.get("target")
            if s is None or t is None:
                raise bad_value(p, n_edges, "edge.source", "an edge without both ends", (s, t))
            g.edges.append((s, t, attrs(el, "edge")))
            n_edges += 1
    return g


def read_node_link(path: str | os.PathLike[str]) -> Graph:
    """Nodes and edges of networkx node-link JSON.

    Raises:
        StorageError: No such file.
        DataError: Not JSON, or no ``nodes`` / ``links`` (``edges``) lists or ids.
    """
    p = Path(path)
    raw = read_json(p, "node-link JSON")
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
        raise missing_column(p, "nodes", raw if isinstance(raw, dict) else [])
    links = raw.get("links", raw.get("edges", []))
    if not isinstance(links, list):
        raise missing_column(p, "links", raw)
    g = Graph(p, directed=bool(raw.get("directed", True)))
    for i, node in enumerate(raw["nodes"]):
        if not isinstance(node, dict) or "id" not in node:
            raise bad_value(p, i, "nodes.id", "a node without an id", node)
        g.nodes[str(node["id"])] = {k: v for k, v in node.items() if k != "id"}
    for i, link in enumerate(links):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise bad_value(p, i, "links.source", "a link without source and target", link)
        rest = {k: v for k, v in link.items() if k not in ("source", "target")}
        g.edges.append((str(link["source"]), str(link["target"]), rest))
    return g


def _pick(names: Mapping[str, tuple[str, ...]], key: str, row: Mapping[str, Any]) -> Any:
    for name in names[key]:
        v = row.get(name)
        if v is not None:
            return v
    return None


def resolve_attributes(
    attributes: Mapping[str, str | None] | None, present: Iterable[str], path: Path
) -> dict[str, tuple[str, ...]]:
    """The attributes each column is read from: :data:`ATTRIBUTES` with the caller's
    ``{"entities.name": "label", ...}`` (None: never read) in their place.

    Raises:
        ParameterError: An unknown key.
        DataError: A named attribute no node / edge has (naming the file and attribute).
    """
    names = {k: tuple(v) for k, v in ATTRIBUTES.items()}
    have = set(present)
    for key, name in (attributes or {}).items():
        if key not in names:
            raise ParameterError(
                f"invalid parameter attributes: {key!r} is not one of {sorted(names)!r}"
            )
        if name is not None and name not in have:
            raise missing_column(path, name, have)
        names[key] = () if name is None else (name,)
    return names


def graph_tables(
    g: Graph,
    attributes: Mapping[str, str | None] | None = None,
    *,
    builder: TableBuilder | None = None,
) -> TableBuilder:
    """Entities and facts of a read graph, into ``builder`` (a new one by default)."""
    present = {k for a in g.nodes.values() for k in a} | {k for *_, a in g.edges for k in a}
    names = resolve_attributes(attributes, present, g.path)
    b = builder if builder is not None else TableBuilder()
    for nid, a in g.nodes.items():
        name = _pick(names, "entities.name", a)
        b.entity(
            nid,
            text_or_none(name) or nid,
            text_or_none(_pick(names, "entities.type", a)),
            text_or_none(_pick(names, "entities.description", a)),
        )
    for i, (s, t, a) in enumerate(g.edges):
        for end in (s, t):
            if end not in b:
                b.entity(end, end)
        w = _pick(names, "facts.strength", a)
        if w is not None and not isinstance(w, (int, float)):
            try:
                w = float(w)
            except ValueError:
                raise bad_value(g.path, i, "weight", "not a number", w) from None
        b.fact(
            s,
            t,
            predicate=text_or_none(_pick(names, "facts.predicate", a)),
            description=text_or_none(_pick(names, "facts.description", a)),
            strength=w,
        )
    return b


def load_graphml(
    path: str | os.PathLike[str], *, attributes: Mapping[str, str | None] | None = None
) -> GraphTables:
    """Read a GraphML file (``.graphml``) or networkx node-link JSON (``.json``).

    Args:
        path: The file.
        attributes: Which attribute each column is read from, e.g. ``{"entities.name":
            "label", "facts.predicate": "rel"}`` (None: never read); the defaults are
            :data:`ATTRIBUTES`.

    Returns:
        The tables (unchecked): nodes as entities, edges as facts.

    Raises:
        StorageError: No such file.
        DataError: Not GraphML / JSON, a node without an id, or a named attribute that no
            node or edge has (the error names the file and the attribute).
        ParameterError: An unknown key in ``attributes``.
    """
    p = Path(path)
    g = read_node_link(p) if p.suffix.lower() == ".json" else read_graphml(p)
    return graph_tables(g, attributes).tables()
