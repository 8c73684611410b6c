"""LightRAG's stored graph as tables.

LightRAG's default storages (``NetworkXStorage``, ``JsonKVStorage``) keep, in its working
folder:

* ``graph_chunk_entity_relation.graphml``: an undirected networkx graph whose node id is
  the entity name, with node attributes ``entity_id``, ``entity_type``, ``description``,
  ``source_id``, ``file_path``, ``created_at`` and edge attributes ``weight``,
  ``description``, ``keywords``, ``source_id``, ``file_path``, ``created_at``; merged
  descriptions and chunk ids are joined with ``<SEP>``;
* ``kv_store_text_chunks.json``: ``{chunk id: {"content", "tokens", "chunk_order_index",
  "full_doc_id", "file_path", ...}}``;
* ``kv_store_full_docs.json``: ``{doc id: {"content", "file_path", ...}}``.

=========================  ============================================================
LightRAG                   graphrecall
=========================  ============================================================
node id / ``entity_id``    entity id / name (older versions' ``"QUOTED"`` names are
                           unquoted)
``entity_type``            entities.type
``description``            entities.description / facts.description (``<SEP>`` parts
                           on separate lines)
node ``source_id``         mentions: the entity in each chunk listed
edge ``keywords``          facts.predicate
edge ``weight``            facts.strength
text chunk ``content``     chunks.text; ``full_doc_id``, ``file_path`` and
                           ``chunk_order_index`` into the chunk's metadata
=========================  ============================================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..tables import GraphTables
from ._common import TableBuilder, logger, missing_column, missing_file, read_json, text_or_none
from .graphml import graph_tables, read_graphml

#: LightRAG's separator of merged values (``lightrag.constants.GRAPH_FIELD_SEP``).
SEP = "<SEP>"
GRAPH_FILE = "graph_chunk_entity_relation.graphml"
CHUNKS_FILE = "kv_store_text_chunks.json"
DOCS_FILE = "kv_store_full_docs.json"

_ATTRIBUTES: dict[str, str | None] = {
    "entities.name": None,
    "entities.type": "entity_type",
    "entities.description": "description",
    "facts.predicate": "keywords",
    "facts.description": "description",
    "facts.strength": "weight",
}


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _joined(value: Any) -> str | None:
    text = text_or_none(value)
    return None if text is None else "\n".join(p for p in text.split(SEP) if p)


def load_lightrag(directory: str | os.PathLike[str]) -> GraphTables:
    """Read a LightRAG working folder (``graph_chunk_entity_relation.graphml``, and when
    present ``kv_store_text_chunks.json`` and ``kv_store_full_docs.json``).

    Args:
        directory: LightRAG's ``working_dir``.

    Returns:
        The tables (unchecked): entities, facts, chunks and the entity-chunk mentions of
        each node's ``source_id``.

    Raises:
        StorageError: No GraphML file.
        DataError: A file that is not GraphML / JSON, a text chunk without ``content``,
            or GraphML without LightRAG's attributes (the error names the file and
            attribute).
    """
    root = Path(directory)
    gpath = root / GRAPH_FILE
    if not gpath.is_file():
        raise missing_file(gpath, "LightRAG's graph")
    g = read_graphml(gpath)
    attrs = dict(_ATTRIBUTES)
    present = {k for a in g.nodes.values() for k in a} | {k for *_, a in g.edges for k in a}
    if not g.edges:
        for key in ("facts.predicate", "facts.description", "facts.strength"):
            attrs[key] = None
    if not g.nodes:
        attrs["entities.type"] = attrs["entities.description"] = None
    for name in attrs.values():
        if name is not None and name not in present:
            raise missing_column(gpath, name, present)
    b = TableBuilder()
    docs: dict[str, Any] = {}
    dpath = root / DOCS_FILE
    if dpath.is_file():
        raw = read_json(dpath, "LightRAG's full documents")
        docs = raw if isinstance(raw, dict) else {}
    cpath = root / CHUNKS_FILE
    if cpath.is_file():
        chunks = read_json(cpath, "LightRAG's text chunks")
        if not isinstance(chunks, dict):
            raise missing_column(cpath, "<chunk id>", [])
        for cid, row in chunks.items():
            if not isinstance(row, dict) or "content" not in row:
                raise missing_column(cpath, f"{cid}.content", row if isinstance(row, dict) else [])
            meta = {
                k: row[k]
                for k in ("full_doc_id", "file_path", "chunk_order_index")
                if row.get(k) is not None
            }
            doc = docs.get(str(row.get("full_doc_id")))
            if "file_path" not in meta and isinstance(doc, dict) and doc.get("file_path"):
                meta["file_path"] = doc["file_path"]
            b.chunk(cid, text_or_none(row["content"]), metadata=meta or None)
    for nid, a in g.nodes.items():
        name = _unquote(text_or_none(a.get("entity_id")) or nid)
        b.entity(nid, name, text_or_none(a.get("entity_type")), _joined(a.get("description")))
    for *_, a in g.edges:
        if isinstance(a.get("description"), str):
            a["description"] = _joined(a["description"])
    graph_tables(g, attrs, builder=b)
    missing = 0
    for nid, a in g.nodes.items():
        for cid in (text_or_none(a.get("source_id")) or "").split(SEP):
            if not cid:
                continue
            if b.has_chunk(cid):
                b.mention(cid, nid)
            else:
                missing += 1
    if missing and cpath.is_file():
        logger.warning(
            "lightrag: %d source_id chunk ids are not in %s; not read", missing, CHUNKS_FILE
        )
    return b.tables()
