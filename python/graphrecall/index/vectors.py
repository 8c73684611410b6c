"""The entity and chunk vectors of an index: stored ones when the tables hold a full set,
the previous index's where an update left a row unchanged, the embedder's otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..embed import Embedder, EmbeddingError
from ..embed import model_name as _model_name
from ..embed_bulk import current_options, embed_bulk
from ..graph import KnowledgeGraph
from ..tables import GraphTables
from .columns import _texts

if TYPE_CHECKING:
    from .graph_index import GraphIndex

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]


def _embed_texts(tables: GraphTables, kind: str, n: int) -> list[str]:
    """The texts embedded for each entity (its name, else its id) or chunk (its text)."""
    if kind == "entity":
        e = tables.entities
        names = _texts(e.get("name"), n)
        return [nm if nm else str(i) for nm, i in zip(names, e["id"].tolist(), strict=True)]
    ch = tables.chunks
    return [t or "" for t in _texts(None if ch is None else ch.get("text"), n)]


def _embed(emb: Embedder, texts: list[str], batch: int) -> npt.NDArray[np.float32]:
    """``texts`` embedded as passages: in batches of ``batch`` in order, or with
    :func:`graphrecall.embed_bulk.embed_bulk` inside its ``bulk_options`` block."""
    opts = current_options()
    if opts.active:
        return embed_bulk(
            emb,
            texts,
            workers=opts.workers,
            batch_tokens=opts.batch_tokens,
            max_batch=batch,
            work_dir=opts.work_dir,
            progress=opts.progress,
        )
    parts = [emb.embed_passages(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def _row_map(old_ids: Array, new_ids: Array) -> I64:
    """For each new id, its row among ``old_ids`` (-1 when absent)."""
    if old_ids.shape == new_ids.shape and np.array_equal(old_ids, new_ids):
        return np.arange(len(new_ids), dtype=np.int64)
    if not len(old_ids):
        return np.full(len(new_ids), -1, dtype=np.int64)
    if old_ids.dtype.kind in "iu" and new_ids.dtype.kind in "iu":
        order = np.argsort(old_ids, kind="stable")
        keys = old_ids[order]
        at = np.minimum(np.searchsorted(keys, new_ids), len(keys) - 1)
        return np.where(keys[at] == new_ids, order[at], -1).astype(np.int64)
    where = {v: i for i, v in enumerate(old_ids.tolist())}
    return np.array([where.get(v, -1) for v in new_ids.tolist()], dtype=np.int64)


def table_vectors(
    tables: GraphTables, graph: KnowledgeGraph, kind: str, emb: Embedder | None, batch: int
) -> npt.NDArray[np.float32] | None:
    """The ``kind`` rows' vectors: a stored set covering every row (unit rows kept bit for
    bit), else embedded with ``emb`` in batches of ``batch``; None when neither exists."""
    n = graph.n_entities if kind == "entity" else graph.n_chunks
    if n == 0:
        return None
    want = _model_name(emb)
    # Stored vectors: a set of this kind covering every row (the embedder's model first).
    sets = [s for s in tables.embeddings if s.kind == kind and s.dim is not None]
    sets.sort(key=lambda s: s.model != want)
    other_dim = None
    for s in sets:
        rows = (graph.entity_index if kind == "entity" else graph.chunk_index)(s.ids.tolist())
        if len(np.unique(rows)) != n:
            continue
        if emb is not None and s.dim != emb.dim:
            other_dim = other_dim or s  # another model's space: queries cannot use it
            continue
        out = np.empty((n, int(s.vectors.shape[1])), dtype=np.float32)
        out[rows] = s.vectors
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingError(f"stored {kind} embeddings hold a zero vector")
        # Rows already unit within float32 precision are kept bit for bit, so that
        # vectors saved by an index load back identical (same scores, same ties).
        off = np.abs(norms[:, 0] - 1.0) > 1e-6
        if off.any():
            out[off] /= norms[off]
        return out
    if other_dim is not None and emb is not None:
        # Stored vectors are the caller's data: never dropped (and the rows re-embedded)
        # without being asked.
        made_by = other_dim.model or "an unnamed model"
        raise EmbeddingError(
            f"the stored {kind} vectors are {other_dim.dim}-d (made by {made_by}); the "
            f"embedder {want} gives {emb.dim}-d vectors: pass the embedder that made them, "
            f"or drop the stored {kind} embeddings to re-embed"
        )
    if emb is None:
        return None
    texts = _embed_texts(tables, kind, n)
    return _embed(emb, texts, batch)


def vectors_after(
    tables: GraphTables,
    graph: KnowledgeGraph,
    kind: str,
    emb: Embedder | None,
    batch: int,
    previous: GraphIndex | None,
) -> tuple[npt.NDArray[np.float32] | None, I64 | None, int]:
    """(vectors, old row of each row with an unchanged vector or -1, texts embedded).

    Without ``previous`` (or vectors in it) this is :func:`table_vectors`. With it, stored
    vectors are compared with the previous ones; without stored vectors only the rows
    whose id is new or whose text changed are embedded."""
    n = graph.n_entities if kind == "entity" else graph.n_chunks
    prev_mat = None if previous is None else previous.vectors_of(kind)[0]
    if previous is None or prev_mat is None or n == 0:
        out = table_vectors(tables, graph, kind, emb, batch)
        return out, None, 0 if out is None or previous is None else n
    new_ids = graph.entity_ids if kind == "entity" else graph.chunk_ids
    old_ids = previous.graph.entity_ids if kind == "entity" else previous.graph.chunk_ids
    old_of = _row_map(np.asarray(old_ids), np.asarray(new_ids))
    stored = table_vectors(tables, graph, kind, None, batch)
    if stored is not None and stored.shape[1] == prev_mat.shape[1]:
        same = np.zeros(n, dtype=bool)
        hit = old_of >= 0
        same[hit] = (prev_mat[old_of[hit]] == stored[hit]).all(axis=1)
        return stored, np.where(same, old_of, -1), 0
    if emb is None:
        return stored, None, 0  # what _vectors gives without an embedder
    if (
        stored is not None
        or emb.dim != prev_mat.shape[1]
        or _model_name(emb) != _model_name(previous.embedder)
    ):
        return table_vectors(tables, graph, kind, emb, batch), None, n
    new_texts = _embed_texts(tables, kind, n)
    old_texts = _embed_texts(previous.tables, kind, len(prev_mat))
    hit = old_of >= 0
    same = np.zeros(n, dtype=bool)
    same[hit] = [
        new_texts[r] == old_texts[o]
        for r, o in zip(np.flatnonzero(hit).tolist(), old_of[hit].tolist(), strict=True)
    ]
    out = np.empty((n, prev_mat.shape[1]), dtype=np.float32)
    out[same] = prev_mat[old_of[same]]
    todo = np.flatnonzero(~same)
    texts = [new_texts[r] for r in todo.tolist()]
    if texts:
        out[todo] = _embed(emb, texts, batch)
    return out, np.where(same, old_of, -1), len(texts)
