"""Microsoft GraphRAG's output Parquet as tables.

GraphRAG (``graphrag index``) writes its knowledge model as Parquet files in its output
folder; the column names are those of ``graphrag/data_model/schemas.py``. Both layouts are
read: the current names (``entities.parquet``, ``relationships.parquet``,
``text_units.parquet``, ``communities.parquet``, ``documents.parquet``) and the older
``create_final_<name>.parquet`` ones.

=======================  ============================================================
GraphRAG                 graphrecall
=======================  ============================================================
entities                 entities: ``id``, ``title`` (older: ``name``) as name, ``type``,
                         ``description``; ``text_unit_ids`` as mentions
relationships            facts: ``source`` / ``target`` (entity titles) as subject /
                         object, ``description``, ``weight`` as strength, ``id``
text_units               chunks: ``id``, ``text``; ``document_ids`` (or
                         ``document_id``) into the chunk's metadata; ``entity_ids`` as
                         mentions when the entities have no ``text_unit_ids``
communities              chunk tags ``community:<community>`` on each of its
                         ``text_unit_ids`` (older: ``id`` as the community)
documents                chunk metadata ``document`` (``title``) and ``document_id``
=======================  ============================================================

GraphRAG's relationships have no type: facts get no predicate and carry the
relationship's description.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..tables import GraphTables
from ._common import TableBuilder, bad_value, logger, missing_column, missing_file, text_or_none

#: The files of each table, current name first.
FILES: dict[str, tuple[str, ...]] = {
    "entities": ("entities.parquet", "create_final_entities.parquet"),
    "relationships": ("relationships.parquet", "create_final_relationships.parquet"),
    "text_units": ("text_units.parquet", "create_final_text_units.parquet"),
    "communities": ("communities.parquet", "create_final_communities.parquet"),
    "documents": ("documents.parquet", "create_final_documents.parquet"),
}


def _find(root: Path, table: str) -> Path | None:
    for name in FILES[table]:
        if (root / name).is_file():
            return root / name
    return None


def _read(path: Path) -> dict[str, list[Any]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - pyarrow is in the presets extra
        raise ImportError(
            "reading GraphRAG output needs pyarrow (pip install 'graphrecall[presets]')"
        ) from exc
    from ..errors import DataError

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise DataError(
            f"{path}: not a readable Parquet file ({exc})", table=path.name, kind="invalid_value"
        ) from None
    cols: dict[str, list[Any]] = table.to_pydict()
    return cols


def _column(cols: dict[str, list[Any]], path: Path, *names: str) -> list[Any]:
    for name in names:
        if name in cols:
            return cols[name]
    raise missing_column(path, " or ".join(names), cols)


def _ids(value: Any) -> Sequence[Any]:
    """A list cell (None: empty)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return list(value)


def load_graphrag(directory: str | os.PathLike[str]) -> GraphTables:
    """Read a GraphRAG output folder (``entities.parquet``, ``relationships.parquet``, and
    when present ``text_units.parquet``, ``communities.parquet``, ``documents.parquet``; or
    their ``create_final_*`` names).

    Args:
        directory: GraphRAG's output folder (the one holding the Parquet files; a project
            folder with them under ``output/`` is accepted too).

    Returns:
        The tables (unchecked).

    Raises:
        StorageError: No entities or relationships file.
        DataError: A missing column (the error names the file and column), an unreadable
            file, or a relationship naming no entity title.
    """
    root = Path(directory)
    if _find(root, "entities") is None and _find(root / "output", "entities") is not None:
        root = root / "output"
    paths = {t: _find(root, t) for t in FILES}
    required: dict[str, Path] = {}
    for table in ("entities", "relationships"):
        found = paths[table]
        if found is None:
            raise missing_file(root / FILES[table][0], f"GraphRAG {table}; or {FILES[table][1]}")
        required[table] = found
    b = TableBuilder()
    p = required["entities"]
    en = _read(p)
    ids = _column(en, p, "id")
    titles = _column(en, p, "title", "name")
    types = en.get("type", [None] * len(ids))
    descs = en.get("description", [None] * len(ids))
    by_title: dict[str, Any] = {}
    for i, (eid, title) in enumerate(zip(ids, titles, strict=True)):
        if eid is None:
            raise bad_value(p, i, "id", "no entity id", eid)
        b.entity(eid, text_or_none(title), text_or_none(types[i]), text_or_none(descs[i]))
        if title is not None:
            by_title.setdefault(str(title), eid)

    p = required["relationships"]
    rel = _read(p)
    src = _column(rel, p, "source")
    tgt = _column(rel, p, "target")
    n = len(src)
    weights = rel.get("weight", [None] * n)
    rdesc = rel.get("description", [None] * n)
    rids = rel.get("id", [None] * n)
    for i in range(n):
        ends = []
        for col, title in (("source", src[i]), ("target", tgt[i])):
            eid = by_title.get(str(title)) if title is not None else None
            if eid is None:
                raise bad_value(p, i, col, "names no entity title of the entities file", title)
            ends.append(eid)
        w = weights[i]
        b.fact(
            ends[0],
            ends[1],
            description=text_or_none(rdesc[i]),
            strength=None if w is None or w != w else float(w),
            id=rids[i],
        )

    tp = paths["text_units"]
    if tp is not None:
        p = tp
        tu = _read(p)
        tids = _column(tu, p, "id")
        texts = _column(tu, p, "text")
        docs = tu.get("document_ids", tu.get("document_id", [None] * len(tids)))
        titles_by_doc: dict[Any, Any] = {}
        d = paths["documents"]
        if d is not None:
            dc = _read(d)
            titles_by_doc = dict(
                zip(_column(dc, d, "id"), dc.get("title", [None] * len(dc["id"])), strict=True)
            )
        for tid, text, doc in zip(tids, texts, docs, strict=True):
            meta: dict[str, Any] = {}
            doc_ids = _ids(doc)
            if doc_ids:
                meta["document_id"] = doc_ids[0]
                title = titles_by_doc.get(doc_ids[0])
                if title is not None:
                    meta["document"] = title
            b.chunk(tid, text_or_none(text), metadata=meta or None)
        dangling = 0
        if "text_unit_ids" in en:
            pairs = [
                (t, e) for e, ts in zip(ids, en["text_unit_ids"], strict=True) for t in _ids(ts)
            ]
        else:
            pairs = [
                (t, e)
                for t, es in zip(tids, tu.get("entity_ids", [None] * len(tids)), strict=True)
                for e in _ids(es)
            ]
        for t, e in pairs:
            if b.has_chunk(t) and e in b:
                b.mention(t, e)
            else:
                dangling += 1
        if dangling:
            logger.warning(
                "graphrag: %d entity-text unit links name no text unit; not read", dangling
            )
        cp = paths["communities"]
        if cp is not None:
            co = _read(cp)
            numbers = _column(co, cp, "community", "id")
            units = _column(co, cp, "text_unit_ids")
            for number, ts in zip(numbers, units, strict=True):
                for t in _ids(ts):
                    if b.has_chunk(t):
                        b.tag(t, f"community:{number}")
    return b.tables()
