"""Rows of dicts and DataFrames as the columns of ``KnowledgeGraph.from_arrays``."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from ..tables.columns import time_value
from ..tables.faults import row_error
from ..tables.mapping import ColumnMapping, frame_mapping

if TYPE_CHECKING:
    import pandas as pd

    from .knowledge import KnowledgeGraph

__all__ = ["dataframe_columns", "fact_records", "record_columns"]


def _time_col(rows: list[Mapping[str, Any]], key: str, table: str) -> npt.NDArray[np.int64] | None:
    if not any(key in r for r in rows):
        return None
    return np.array(
        [time_value(r.get(key), table, key, i) for i, r in enumerate(rows)], dtype=np.int64
    )


def _nullable(col: Any) -> Any:
    """Object columns with pandas NA / NaN keep None for literal facts."""
    if col is None:
        return None
    arr = np.asarray(col)
    if arr.dtype.kind == "O":
        return np.array(
            [None if (v is None or v != v or str(v) in ("<NA>", "nan")) else v for v in arr],
            dtype=object,
        )
    return arr


def record_columns(
    entities: Iterable[Mapping[str, Any]],
    facts: Iterable[Mapping[str, Any]],
    chunks: Iterable[Mapping[str, Any]] | None = None,
    mentions: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Dict rows as the keyword arguments of ``KnowledgeGraph.from_arrays`` (keys missing
    from every row are left out, so that they take their defaults)."""
    ents = list(entities)
    fs = list(facts)
    for table, rows in (("entities", ents), ("facts", fs)):
        for i, r in enumerate(rows):
            if not isinstance(r, Mapping):
                raise row_error(table, i, None, "is not a mapping", kind="invalid_value", input=r)
    for i, e in enumerate(ents):
        if "id" not in e:
            raise row_error("entities", i, "id", "has no 'id'", kind="missing")
    for i, f in enumerate(fs):
        if "subject" not in f:
            raise row_error("facts", i, "subject", "has no 'subject'", kind="missing")

    def fcol(key: str) -> list[Any] | None:
        if not any(key in f for f in fs):
            return None
        return [f.get(key) for f in fs]

    def fnum(key: str, default: Any) -> list[Any] | None:
        if not any(key in f for f in fs):
            return None
        return [default if f.get(key) is None else f[key] for f in fs]

    ch = list(chunks) if chunks is not None else []
    ms = list(mentions) if mentions is not None else []
    has_tenant = any("tenant" in e for e in ents)
    return {
        "entity_ids": [e["id"] for e in ents],
        "entity_tenant": [e.get("tenant", 0) for e in ents] if has_tenant else None,
        "entity_names": (
            np.array([e.get("name") for e in ents], dtype=object)
            if any("name" in e for e in ents)
            else None
        ),
        "fact_subject": np.array([f["subject"] for f in fs], dtype=object),
        "fact_object": np.array([f.get("object") for f in fs], dtype=object),
        "fact_ids": fcol("id"),
        "predicate": fcol("predicate"),
        "confidence": fnum("confidence", 1.0),
        "strength": fnum("strength", 1.0),
        "status": fnum("status", "confirmed"),
        "source": fnum("source", "system"),
        "access_count": fnum("access_count", 0),
        "last_accessed": _time_col(fs, "last_accessed", "facts"),
        "created_at": _time_col(fs, "created_at", "facts"),
        "valid_from": _time_col(fs, "valid_from", "facts"),
        "valid_to": _time_col(fs, "valid_to", "facts"),
        "sequence": fcol("sequence"),
        "object_value": fcol("object_value"),
        "chunk_ids": [c["id"] for c in ch] if ch else None,
        "chunk_tenant": [c.get("tenant", 0) for c in ch] if ch and has_tenant else None,
        "n_chunks": len(ch) if ch else None,
        "mention_chunk": np.array([m["chunk"] for m in ms], dtype=object) if ms else None,
        "mention_entity": np.array([m["entity"] for m in ms], dtype=object) if ms else None,
        "mention_count": [m.get("count", 1) for m in ms] if ms else None,
    }


def dataframe_columns(
    entities: pd.DataFrame,
    facts: pd.DataFrame,
    chunks: pd.DataFrame | None = None,
    mentions: pd.DataFrame | None = None,
    columns: Mapping[str, Any] | ColumnMapping | None = None,
) -> dict[str, Any]:
    """DataFrames as the keyword arguments of ``KnowledgeGraph.from_arrays``; ``columns``
    names the frames' columns (:func:`~graphrecall.tables.mapping.frame_mapping`), and a
    :class:`~graphrecall.tables.mapping.ColumnMapping`'s value maps are applied."""
    mapping = frame_mapping(columns)

    def pick(df: pd.DataFrame | None, table: str, name: str) -> Any:
        if df is None:
            return None
        col = mapping.column(table, name)
        if col is None or col not in df.columns:
            return None
        values = df[col].to_numpy()
        vmap = mapping.value_map(table, name)
        if vmap:
            out = np.empty(len(values), dtype=object)
            out[:] = [vmap.get(v, v) if isinstance(v, Hashable) else v for v in values.tolist()]
            return out
        return values

    if pick(entities, "entities", "id") is None:
        raise DataError(
            "entities DataFrame has no 'id' column (map one with columns=)",
            table="entities",
            column="id",
            kind="missing",
        )
    if pick(facts, "facts", "subject") is None:
        raise DataError(
            "facts DataFrame has no 'subject' column (map one with columns=)",
            table="facts",
            column="subject",
            kind="missing",
        )
    return {
        "entity_ids": pick(entities, "entities", "id"),
        "entity_tenant": pick(entities, "entities", "tenant"),
        "entity_names": pick(entities, "entities", "name"),
        "fact_subject": pick(facts, "facts", "subject"),
        "fact_object": _nullable(pick(facts, "facts", "object")),
        "fact_ids": pick(facts, "facts", "id"),
        "predicate": pick(facts, "facts", "predicate"),
        "confidence": pick(facts, "facts", "confidence"),
        "strength": pick(facts, "facts", "strength"),
        "status": pick(facts, "facts", "status"),
        "source": pick(facts, "facts", "source"),
        "access_count": pick(facts, "facts", "access_count"),
        "last_accessed": pick(facts, "facts", "last_accessed"),
        "created_at": pick(facts, "facts", "created_at"),
        "valid_from": pick(facts, "facts", "valid_from"),
        "valid_to": pick(facts, "facts", "valid_to"),
        "sequence": pick(facts, "facts", "sequence"),
        "object_value": _nullable(pick(facts, "facts", "object_value")),
        "chunk_ids": pick(chunks, "chunks", "id"),
        "chunk_tenant": pick(chunks, "chunks", "tenant"),
        "mention_chunk": pick(mentions, "mentions", "chunk"),
        "mention_entity": pick(mentions, "mentions", "entity"),
        "mention_count": pick(mentions, "mentions", "count"),
    }


def fact_records(graph: KnowledgeGraph, idx: npt.NDArray[np.int64]) -> list[dict[str, Any]]:
    """The stored rows of the facts at dense indices ``idx``, with names for codes and
    external ids (:meth:`KnowledgeGraph.facts <graphrecall.KnowledgeGraph.facts>`)."""
    cols = graph.core.fact_rows(idx)
    subj, obj, pred, conf, stren, st, so, acc, last, created, vf, vt, seq = cols
    ext_s = graph.entity_map.to_external(subj).tolist()
    ext_o = graph.entity_map.to_external(obj).tolist()
    null = np.iinfo(np.int64).min
    out = []
    for k, i in enumerate(idx.tolist()):
        out.append(
            {
                "id": graph.fact_map.to_external(np.array([i])).tolist()[0],
                "subject": ext_s[k],
                "object": None if obj[k] < 0 else ext_o[k],
                "object_value": None if graph.object_values is None else graph.object_values[i],
                "predicate": graph.predicates.names[int(pred[k])],
                "confidence": float(conf[k]),
                "strength": float(stren[k]),
                "status": graph.statuses.names[int(st[k])],
                "source": graph.sources.names[int(so[k])],
                "access_count": int(acc[k]),
                "last_accessed": None if last[k] == null else int(last[k]),
                "created_at": None if created[k] == null else int(created[k]),
                "valid_from": None if vf[k] == null else int(vf[k]),
                "valid_to": None if vt[k] == null else int(vt[k]),
                "sequence": None if seq[k] == null else int(seq[k]),
            }
        )
    return out
