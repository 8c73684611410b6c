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
from ..tables import EmbeddingSet, GraphTables
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
    return _table_vectors(tables, graph, kind, emb, batch)[0]


def _unit(vectors: npt.NDArray[np.float32], kind: str) -> npt.NDArray[np.float32]:
    """Stored vectors scaled to unit length in place, rows already unit within float32
    precision kept bit for bit (so that vectors saved by an index load back identical)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError(f"stored {kind} embeddings hold a zero vector")
    off = np.abs(norms[:, 0] - 1.0) > 1e-6
    if off.any():
        vectors[off] /= norms[off]
    return vectors


def _table_vectors(
    tables: GraphTables, graph: KnowledgeGraph, kind: str, emb: Embedder | None, batch: int
) -> tuple[npt.NDArray[np.float32] | None, EmbeddingSet | None]:
    """:func:`table_vectors` and the stored set it used (None when embedded)."""
    n = graph.n_entities if kind == "entity" else graph.n_chunks
    if n == 0:
        return None, None
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
        return _unit(out, kind), s
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
        return None, None
    texts = _embed_texts(tables, kind, n)
    return _embed(emb, texts, batch), None


def _appended_vectors(
    tables: GraphTables,
    graph: KnowledgeGraph,
    kind: str,
    emb: Embedder | None,
    batch: int,
    previous: GraphIndex,
    n_old: int,
    prev_set: EmbeddingSet | None,
) -> tuple[npt.NDArray[np.float32], I64, int, EmbeddingSet | None] | None:
    """:func:`vectors_after` when the ``kind`` rows are ``previous``'s first ``n_old`` rows,
    unchanged, plus appended rows: the previous vectors kept as they are and only the
    appended rows' looked up or embedded. None when the shortcut does not apply (then the
    full comparison decides): the stored case needs one stored set of the kind that
    extends the set ``previous`` used (same model, same ids and vectors first) by exactly
    the appended rows; the embedded case needs no stored set of the kind and the
    previous embedder's model."""
    prev_mat = previous.vectors_of(kind)[0]
    n = graph.n_entities if kind == "entity" else graph.n_chunks
    if prev_mat is None or len(prev_mat) != n_old or n < n_old:
        return None
    dim = prev_mat.shape[1]
    sets = [s for s in tables.embeddings if s.kind == kind and s.dim is not None]
    kept = np.arange(n, dtype=np.int64)
    kept[n_old:] = -1
    if prev_set is not None:
        if len(sets) != 1 or len(prev_set.ids) != n_old:
            return None
        s = sets[0]
        k = n_old
        if (
            s.model != prev_set.model
            or s.dim != dim
            or (emb is not None and emb.dim != dim)
            or len(s.ids) != n
            or not (s.ids is prev_set.ids or np.array_equal(s.ids[:k], prev_set.ids))
            or not (
                s.vectors is prev_set.vectors or np.array_equal(s.vectors[:k], prev_set.vectors)
            )
        ):
            return None
        lookup = graph.entity_index if kind == "entity" else graph.chunk_index
        rows = lookup(s.ids[k:].tolist()) if n > k else np.zeros(0, np.int64)
        if not np.array_equal(np.sort(rows), np.arange(n_old, n)):
            return None
        tail = np.empty((n - n_old, dim), dtype=np.float32)
        tail[rows - n_old] = s.vectors[k:]
        out = np.concatenate([prev_mat, _unit(tail, kind)]) if n > n_old else prev_mat
        return out, kept, 0, s
    if sets or emb is None or emb.dim != dim or _model_name(emb) != _model_name(previous.embedder):
        return None
    texts = _embed_texts_of(tables, kind, n_old, n)
    out = np.concatenate([prev_mat, _embed(emb, texts, batch)]) if texts else prev_mat
    return out, kept, len(texts), None


def _embed_texts_of(tables: GraphTables, kind: str, a: int, b: int) -> list[str]:
    """:func:`_embed_texts` of rows ``a..b-1``."""
    if kind == "entity":
        e = tables.entities
        col = e.get("name")
        names = _texts(None if col is None else col[a:b], b - a)
        ids = e["id"][a:b].tolist()
        return [nm if nm else str(i) for nm, i in zip(names, ids, strict=True)]
    ch = tables.chunks
    col = None if ch is None else ch.get("text")
    return [t or "" for t in _texts(None if col is None else col[a:b], b - a)]


def vectors_after(
    tables: GraphTables,
    graph: KnowledgeGraph,
    kind: str,
    emb: Embedder | None,
    batch: int,
    previous: GraphIndex | None,
    *,
    appended: int | None = None,
    prev_set: EmbeddingSet | None = None,
) -> tuple[npt.NDArray[np.float32] | None, I64 | None, int, EmbeddingSet | None]:
    """(vectors, old row of each row with an unchanged vector or -1, texts embedded, the
    stored set the vectors are (None: embedded or kept)).

    Without ``previous`` (or vectors in it) this is :func:`table_vectors`. With it, stored
    vectors are compared with the previous ones; without stored vectors only the rows
    whose id is new or whose text changed are embedded. ``appended``: the caller knows the
    rows are ``previous``'s first ``appended`` rows with the same ids and texts, plus
    appended rows, and ``prev_set`` is the stored set ``previous`` used; then only the
    appended rows are looked at where that gives the same vectors (see
    :func:`_appended_vectors`)."""
    n = graph.n_entities if kind == "entity" else graph.n_chunks
    prev_mat = None if previous is None else previous.vectors_of(kind)[0]
    if previous is None or prev_mat is None or n == 0:
        out, used = _table_vectors(tables, graph, kind, emb, batch)
        return out, None, 0 if out is None or previous is None else n, used
    if appended is not None:
        got = _appended_vectors(tables, graph, kind, emb, batch, previous, appended, prev_set)
        if got is not None:
            return got
    new_ids = graph.entity_ids if kind == "entity" else graph.chunk_ids
    old_ids = previous.graph.entity_ids if kind == "entity" else previous.graph.chunk_ids
    old_of = _row_map(np.asarray(old_ids), np.asarray(new_ids))
    stored, used = _table_vectors(tables, graph, kind, None, batch)
    if stored is not None and stored.shape[1] == prev_mat.shape[1]:
        same = np.zeros(n, dtype=bool)
        hit = old_of >= 0
        same[hit] = (prev_mat[old_of[hit]] == stored[hit]).all(axis=1)
        return stored, np.where(same, old_of, -1), 0, used
    if emb is None:
        return stored, None, 0, used  # what _vectors gives without an embedder
    if (
        stored is not None
        or emb.dim != prev_mat.shape[1]
        or _model_name(emb) != _model_name(previous.embedder)
    ):
        out, used = _table_vectors(tables, graph, kind, emb, batch)
        return out, None, n, used
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
    return out, np.where(same, old_of, -1), len(texts), None
