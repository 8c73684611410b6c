"""HippoRAG's OpenIE results as tables.

HippoRAG (v1 and HippoRAG 2) saves what its LLM extracted from each passage in one JSON
file, ``openie_<dataset>_results_ner_<llm>_<n>.json`` (v1) or ``openie_results_ner_<llm>.json``
(HippoRAG 2): ``{"docs": [...], "avg_ent_chars": ..., "avg_ent_words": ...}``, one object per
passage:

==========================  ============================================================
HippoRAG                    graphrecall
==========================  ============================================================
``idx`` (HippoRAG 2)        chunk id (v1 files have none: the passage's position)
``passage``                 chunk text (v1: ``title`` + newline + ``text``; a doc without
                            ``passage`` is read from ``text``)
``title`` (v1)              chunk metadata ``title``
``extracted_entities``      entities (a phrase's id is its lower-cased, space-collapsed
                            text, its name the first spelling seen) and mentions
``extracted_triples``       facts ``[subject, relation, object]``: one per distinct
                            triple, ``strength`` = how many passages state it; subject
                            and object are entities mentioned by the passage
==========================  ============================================================

A triple that is not three strings (the LLM's slips: 185 of 17,419 in HippoRAG's MuSiQue
file) is not read, as HippoRAG itself drops it; their count is logged as a warning.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable
from pathlib import Path

from ..errors import DataError, StorageError
from ..tables import GraphTables
from ._common import TableBuilder, logger, missing_column, missing_file, read_json, text_or_none


def phrase_id(text: str) -> str:
    """The entity id of a HippoRAG phrase: lower-cased, runs of white space as one space."""
    return " ".join(text.lower().split())


def _file(path: Path) -> Path:
    if path.is_dir():
        found = sorted(path.glob("openie*results*.json"))
        if len(found) != 1:
            raise StorageError(
                f"{path}: expected one openie*results*.json file (HippoRAG's OpenIE results), "
                f"found {len(found)}" + (f": {[f.name for f in found]}" if found else ""),
                table=path.name,
                kind="missing",
            )
        return found[0]
    if not path.exists():
        raise missing_file(path, "HippoRAG OpenIE results")
    return path


def load_hipporag(path: str | os.PathLike[str]) -> GraphTables:
    """Read HippoRAG's OpenIE results (v1 or HippoRAG 2).

    Args:
        path: The ``openie_*results*.json`` file, or the folder holding exactly one.

    Returns:
        The tables (unchecked): passages as chunks, phrases as entities, triples as facts,
        passage-phrase links as mentions.

    Raises:
        StorageError: No such file (or not exactly one in the folder).
        DataError: Not JSON, no ``docs`` list, or a doc without ``passage`` / ``text``
            (the error names the file and the key).
    """
    file = _file(Path(path))
    raw = read_json(file, "HippoRAG OpenIE results")
    docs = raw.get("docs") if isinstance(raw, dict) else None
    if not isinstance(docs, list):
        have = raw.keys() if isinstance(raw, dict) else []
        raise missing_column(file, "docs", have)
    b = TableBuilder()
    triples: Counter[tuple[Hashable, str, Hashable]] = Counter()
    dropped = 0
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise DataError(
                f"{file}: docs[{i}] is not an object", table=file.name, row=i, kind="invalid_value"
            )
        text = doc.get("passage")
        if text is None:
            if "text" not in doc:
                raise missing_column(file, f"docs[{i}].passage", doc)
            title = text_or_none(doc.get("title"))
            text = f"{title}\n{doc['text']}" if title else doc["text"]
        cid = doc.get("idx", i)
        meta = {"title": doc["title"]} if doc.get("title") is not None else None
        b.chunk(cid, text_or_none(text), metadata=meta)
        seen: Counter[Hashable] = Counter()
        for phrase in doc.get("extracted_entities") or ():
            pid = phrase_id(phrase) if isinstance(phrase, str) else ""
            if pid:
                seen[b.entity(pid, phrase.strip())] += 1
        for t in doc.get("extracted_triples") or ():
            ok = isinstance(t, (list, tuple)) and len(t) == 3
            ok = ok and all(isinstance(x, str) for x in t)
            sid, oid = (phrase_id(t[0]), phrase_id(t[2])) if ok else ("", "")
            if not (sid and oid):
                dropped += 1
                continue
            s = b.entity(sid, t[0].strip())
            o = b.entity(oid, t[2].strip())
            seen[s] += 1
            seen[o] += 1
            triples[(s, t[1].strip(), o)] += 1
        for e, n in seen.items():
            b.mention(cid, e, n)
    for (s, p, o), n in triples.items():
        b.fact(s, o, predicate=p or None, strength=float(n))
    if dropped:
        logger.warning(
            "hipporag: %s: %d triples are not [subject, relation, object] strings; not read",
            file.name,
            dropped,
        )
    return b.tables()
