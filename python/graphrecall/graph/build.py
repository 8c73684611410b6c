"""The one way into the graph: columns (by :class:`~graphrecall.tables.GraphTables` column
names) -> the core's coded arrays, id maps and vocabularies.

:func:`encode` is the encoder; :func:`encode_arrays` (``KnowledgeGraph.from_arrays``, and
through it ``from_records`` / ``from_dataframes``) and :func:`encode_tables` (checked
:class:`~graphrecall.tables.GraphTables`) only say how many rows there are and which
vocabularies apply before calling it. With ``release=True`` the encoder takes each column
out of the dicts it is given as soon as it is encoded, so that columns nobody else holds are
freed while the core's grow.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import _core
from ..errors import DataError
from ..tables.columns import floats, ints, no_bools, sequence_column, times, unmask
from ..tables.constants import DEFAULT_SOURCES, DEFAULT_STATUSES
from ..tables.faults import column_error
from ..tables.ids import IdMap, Vocab
from ..tables.tenants import graph_tenants

if TYPE_CHECKING:
    from ..tables import GraphTables

__all__ = ["GraphParts", "encode", "encode_arrays", "encode_tables"]

Columns = dict[str, Any]
_NONE32 = np.uint32(2**32 - 1)  # the core's "no entity" (a literal fact's object)
#: The largest dense index (2**32 - 1 is the core's "none", and counts fit in uint32).
_MAX_INDEX = 2**32 - 3
_TIMES = ("last_accessed", "created_at", "valid_from", "valid_to")


class GraphParts(NamedTuple):
    """What a :class:`~graphrecall.KnowledgeGraph` is made of (its constructor's
    arguments): the core graph, the id maps, the vocabularies and the text kept in Python."""

    core: _core.CoreGraph
    entities: IdMap
    facts: IdMap
    chunks: IdMap
    statuses: Vocab
    sources: Vocab
    predicates: Vocab
    tenants: Vocab
    entity_names: npt.NDArray[Any] | None
    object_values: npt.NDArray[Any] | None


def _release_arrow_memory() -> None:
    """Give the pages of the columns just dropped back to the system, when Arrow (whose
    allocator keeps freed memory for reuse) loaded them."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def _nothing() -> None:
    return None


def encode(
    entities: Columns,
    facts: Columns,
    chunks: Columns | None = None,
    mentions: Columns | None = None,
    *,
    n_entities: int,
    n_chunks: int,
    statuses: Sequence[str] = DEFAULT_STATUSES,
    sources: Sequence[str] = DEFAULT_SOURCES,
    predicates: Sequence[Hashable] | None = None,
    tenants: Sequence[Hashable] | None = None,
    fact_ids: Literal["identity", "rows"] = "identity",
    release: bool = False,
) -> GraphParts:
    """Encode columns into the parts of a graph, checking each as it is converted.

    Args:
        entities: ``id`` (None or absent: the identity ``0..n-1``), ``tenant`` (names,
            ints included, coded densely in sorted order; codes of ``tenants`` when it is
            given), ``name``.
        facts: ``subject`` (required), ``object`` (None / -1 for a literal), ``id``,
            ``predicate``, ``confidence``, ``strength``, ``status``, ``source``,
            ``access_count``, ``last_accessed``, ``created_at``, ``valid_from``,
            ``valid_to``, ``sequence``, ``object_value``; absent columns take their
            defaults.
        chunks: ``id``, ``tenant`` (None: no chunk columns).
        mentions: ``chunk``, ``entity`` (both required when given), ``count``.
        n_entities, n_chunks: Rows of the entities and of the chunks.
        statuses, sources: Vocabularies (names by code).
        predicates: The predicate vocabulary when ``facts.predicate`` holds codes or
            names of it; learned from the column otherwise.
        tenants: The tenant vocabulary of the tenant columns, whose codes they may hold;
            None: learned from ``entities.tenant``, and ``chunks.tenant`` holds its names.
        fact_ids: What absent fact ids are: ``"identity"`` (the rows, as an identity map)
            or ``"rows"`` (the rows, as int ids).
        release: Take each column out of the given dicts as it is encoded (they are left
            empty); otherwise the dicts are left as they are.

    Raises:
        DataError: The first problem, naming its table, row and column.
    """
    if not release:
        entities, facts = dict(entities), dict(facts)
        chunks = None if chunks is None else dict(chunks)
        mentions = None if mentions is None else dict(mentions)
    free = _release_arrow_memory if release else _nothing
    n_facts = len(facts["subject"])
    # --- entities
    entity_map = IdMap(entities.pop("id", None), n_entities, "entity")
    tenant_vocab, entity_tenant = _tenants(entities.pop("tenant", None), n_entities, tenants)
    names = entities.pop("name", None)
    names = None if names is None else np.asarray(names, dtype=object)
    if names is not None and len(names) != n_entities:
        raise column_error(
            "entities",
            "name",
            f"has {len(names)} rows, expected {n_entities}",
            kind="length_mismatch",
            ctx={"expected": n_entities, "got": len(names)},
        )
    entities.clear()
    # --- facts
    subject = entity_map.to_index(facts.pop("subject"), "facts", "subject").astype(np.uint32)
    free()
    obj = facts.pop("object", None)
    if obj is None:
        obj32 = np.full(n_facts, _NONE32, dtype=np.uint32)
    else:
        # Validated to -1..n-1: the wrapping cast maps -1 to the core's "none".
        obj32 = entity_map.to_index(obj, "facts", "object", allow_none=True).astype(np.uint32)
    del obj
    free()
    pred_vocab, pred = _predicates(facts.pop("predicate", None), n_facts, predicates)
    free()
    # Open vocabularies: words beyond the given ones get the next codes (neutral weights).
    status_vocab = Vocab(list(statuses), "status").grown(facts.get("status"), "facts", "status")
    source_vocab = Vocab(list(sources), "source").grown(facts.get("source"), "facts", "source")
    status = _coded(facts.pop("status", None), n_facts, status_vocab, "status", "confirmed")
    source = _coded(facts.pop("source", None), n_facts, source_vocab, "source", "system")
    free()

    def number(col: str, default: float, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        values = facts.pop(col, None)
        return np.full(n_facts, default, dtype=dtype) if values is None else np.asarray(values)

    confidence = floats(number("confidence", 1.0, np.float32), np.float32, "facts", "confidence")
    strength = floats(number("strength", 1.0, np.float32), np.float32, "facts", "strength")
    access = ints(number("access_count", 0, np.int64), np.uint32, "facts", "access_count")
    free()
    time_cols = {col: times(facts.pop(col, None), "facts", col) for col in _TIMES}
    seq = facts.pop("sequence", None)
    sequence = None if seq is None else sequence_column(seq)
    del seq
    values = facts.pop("object_value", None)
    values = None if values is None else np.asarray(values, dtype=object)
    if values is not None and len(values) != n_facts:
        raise column_error(
            "facts",
            "object_value",
            f"has {len(values)} rows, expected {n_facts}",
            kind="length_mismatch",
            ctx={"expected": n_facts, "got": len(values)},
        )
    free()
    ids = facts.pop("id", None)
    if ids is None and fact_ids == "rows":
        fact_map = IdMap(np.arange(n_facts, dtype=np.int64), n_facts, "fact", copy=False)
    else:
        fact_map = IdMap(ids, n_facts, "fact")  # copied: once the rest is freed
    del ids
    facts.clear()
    # --- chunks and mentions
    chunk_map = IdMap(None if chunks is None else chunks.pop("id", None), n_chunks, "chunk")
    ct = None if chunks is None else chunks.pop("tenant", None)
    if ct is None:
        chunk_tenant = np.zeros(n_chunks, dtype=np.uint32)
    else:
        ct = np.asarray(ct)
        if len(ct) != n_chunks:
            raise column_error(
                "chunks",
                "tenant",
                f"has {len(ct)} rows, expected {n_chunks}",
                kind="length_mismatch",
                ctx={"expected": n_chunks, "got": len(ct)},
            )
        chunk_tenant = (
            tenant_vocab.encode(ct, "chunks", "tenant", np.uint32)
            if tenants is not None  # the caller's vocabulary: its codes are allowed
            else tenant_vocab.encode_names(ct, "chunks", "tenant", np.uint32)
        )
    del ct, chunks
    if mentions is not None:
        m_chunk = chunk_map.to_index(mentions.pop("chunk"), "mentions", "chunk").astype(np.uint32)
        m_entity = entity_map.to_index(mentions.pop("entity"), "mentions", "entity").astype(
            np.uint32
        )
        count = mentions.pop("count", None)
        m_count = (
            np.ones(len(m_chunk), dtype=np.uint32)
            if count is None
            else ints(count, np.uint32, "mentions", "count")
        )
        del count
        mentions.clear()
    else:
        m_chunk = m_entity = m_count = np.zeros(0, dtype=np.uint32)
    free()
    core = _core.CoreGraph(
        entity_tenant,
        subject,
        obj32,
        pred,
        confidence,
        strength,
        status,
        source,
        access,
        n_predicates=len(pred_vocab),
        n_statuses=len(status_vocab),
        n_sources=len(source_vocab),
        **time_cols,
        sequence=sequence,
        chunk_tenant=chunk_tenant,
        mention_chunk=m_chunk,
        mention_entity=m_entity,
        mention_count=m_count,
    )
    return GraphParts(
        core,
        entity_map,
        fact_map,
        chunk_map,
        status_vocab,
        source_vocab,
        pred_vocab,
        tenant_vocab,
        names,
        values,
    )


def _tenants(
    values: Any, n: int, tenants: Sequence[Hashable] | None
) -> tuple[Vocab, npt.NDArray[np.uint32]]:
    """The tenant vocabulary and the entities' tenant codes."""
    if values is None:
        vocab = Vocab(list(tenants) if tenants is not None else [0], "tenant")
        return vocab, np.zeros(n, dtype=np.uint32)
    et = np.asarray(values)
    if len(et) != n:
        raise column_error(
            "entities",
            "tenant",
            f"has {len(et)} rows, expected {n}",
            kind="length_mismatch",
            ctx={"expected": n, "got": len(et)},
        )
    if tenants is not None:
        vocab = Vocab(list(tenants), "tenant")
        return vocab, vocab.encode(et, "entities", "tenant", np.uint32)
    if et.dtype.kind in "iu":  # ints are names too: dense codes in sorted order
        values = ints(et, np.uint32, "entities", "tenant")
        if not len(values):
            return Vocab([0], "tenant"), values
        distinct, inverse = np.unique(values, return_inverse=True)
        return Vocab(distinct.tolist(), "tenant"), inverse.reshape(-1).astype(np.uint32)
    vocab, codes64 = Vocab.learn(et, "tenant")
    return vocab, codes64.astype(np.uint32)


def _predicates(
    values: Any, n_facts: int, predicates: Sequence[Hashable] | None
) -> tuple[Vocab, npt.NDArray[np.uint32]]:
    """The predicate vocabulary and the facts' predicate codes."""
    if values is None:
        names = list(predicates) if predicates is not None else ["related_to"]
        return Vocab(names, "predicate"), np.zeros(n_facts, dtype=np.uint32)
    p = np.asarray(values)
    if predicates is not None:
        vocab = Vocab(list(predicates), "predicate")
        return vocab, vocab.encode(p, "facts", "predicate", np.uint32)
    if p.dtype.kind in "iu":
        codes = ints(p, np.uint32, "facts", "predicate")
        n_p = int(codes.max()) + 1 if len(codes) else 1
        if n_p > 1 << 16:
            raise column_error(
                "facts",
                "predicate",
                f"codes go up to {n_p - 1}; at most 65536 predicates",
                kind="capacity",
                input=n_p - 1,
                ctx={"limit": 1 << 16},
            )
        return Vocab(list(range(n_p)), "predicate"), codes
    vocab, codes64 = Vocab.learn(p, "predicate")
    return vocab, codes64.astype(np.uint32)


def _coded(
    values: Any, n_facts: int, vocab: Vocab, column: str, default: str
) -> npt.NDArray[np.uint8]:
    """Status or source codes; ``default`` (or code 0 when the vocabulary lacks it) for
    an absent column."""
    if values is None:
        return np.full(n_facts, vocab.code(default) if default in vocab.names else 0, np.uint8)
    return vocab.encode(values, "facts", column, np.uint8)


def encode_tables(t: GraphTables, *, release: bool = False) -> GraphParts:
    """The parts of the graph of checked tables (not checked again).

    Args:
        t: Tables as :meth:`GraphTables.check <graphrecall.tables.GraphTables.check>`
            returned them.
        release: Take each column out of ``t`` as it is encoded (``t`` is left empty).
    """
    n_ent, n_ch = t.n_rows("entities"), t.n_rows("chunks")
    e, f, ch, m = t.entities, t.facts, t.chunks, t.mentions
    if release:
        t.entities, t.facts, t.chunks, t.mentions, t.aliases = {}, {}, None, None, None
        t.embeddings = []
    else:
        e, f = dict(e), dict(f)
        ch = None if ch is None else dict(ch)
        m = None if m is None else dict(m)
    ent_t, ch_t, tenants = graph_tenants(
        e.pop("tenant", None), None if ch is None else ch.pop("tenant", None), n_ent, n_ch
    )
    e["tenant"] = ent_t
    if ch is not None:
        ch["tenant"] = ch_t
    del ent_t, ch_t
    if m is not None and not len(m["chunk"]):
        m = None
    return encode(
        e,
        f,
        ch,
        m,
        n_entities=n_ent,
        n_chunks=n_ch,
        statuses=t.statuses,
        sources=t.sources,
        tenants=tenants,
        fact_ids="rows",
        release=True,
    )


def encode_arrays(
    *,
    fact_subject: npt.ArrayLike,
    fact_object: npt.ArrayLike,
    entity_tenant: npt.ArrayLike | None = None,
    n_entities: int | None = None,
    entity_ids: Sequence[Hashable] | npt.ArrayLike | None = None,
    entity_names: Sequence[str] | npt.ArrayLike | None = None,
    fact_ids: Sequence[Hashable] | npt.ArrayLike | None = None,
    predicate: npt.ArrayLike | None = None,
    confidence: npt.ArrayLike | None = None,
    strength: npt.ArrayLike | None = None,
    status: npt.ArrayLike | None = None,
    source: npt.ArrayLike | None = None,
    access_count: npt.ArrayLike | None = None,
    last_accessed: Any = None,
    created_at: Any = None,
    valid_from: Any = None,
    valid_to: Any = None,
    sequence: npt.ArrayLike | None = None,
    object_value: Sequence[Any] | npt.ArrayLike | None = None,
    chunk_tenant: npt.ArrayLike | None = None,
    chunk_ids: Sequence[Hashable] | npt.ArrayLike | None = None,
    n_chunks: int | None = None,
    mention_chunk: npt.ArrayLike | None = None,
    mention_entity: npt.ArrayLike | None = None,
    mention_count: npt.ArrayLike | None = None,
    statuses: Sequence[str] = DEFAULT_STATUSES,
    sources: Sequence[str] = DEFAULT_SOURCES,
    predicates: Sequence[Hashable] | None = None,
    tenants: Sequence[Hashable] | None = None,
) -> GraphParts:
    """The parts of ``KnowledgeGraph.from_arrays(...)`` (its arguments): the numbers of
    entities and chunks (given, or the largest index used + 1), then :func:`encode`."""
    (
        fact_subject,
        fact_object,
        entity_tenant,
        entity_ids,
        entity_names,
        fact_ids,
        predicate,
        confidence,
        strength,
        status,
        source,
        access_count,
        sequence,
        object_value,
        chunk_tenant,
        chunk_ids,
        mention_chunk,
        mention_entity,
        mention_count,
    ) = (
        unmask(v)  # masked entries are nulls, as in a table
        for v in (
            fact_subject,
            fact_object,
            entity_tenant,
            entity_ids,
            entity_names,
            fact_ids,
            predicate,
            confidence,
            strength,
            status,
            source,
            access_count,
            sequence,
            object_value,
            chunk_tenant,
            chunk_ids,
            mention_chunk,
            mention_entity,
            mention_count,
        )
    )
    last_accessed, created_at, valid_from, valid_to = (
        unmask(v) for v in (last_accessed, created_at, valid_from, valid_to)
    )
    # ids are an int or a str, as the table check rules (checked tables hold no others)
    for ids, table in ((entity_ids, "entities"), (fact_ids, "facts"), (chunk_ids, "chunks")):
        no_bools(ids, table)
    fact_subject, fact_object, entity_ids, fact_ids, chunk_ids = map(
        _typed, (fact_subject, fact_object, entity_ids, fact_ids, chunk_ids)
    )
    entity_tenant, chunk_tenant, predicate, status, source = map(
        _typed, (entity_tenant, chunk_tenant, predicate, status, source)
    )
    mention_chunk, mention_entity = _typed(mention_chunk), _typed(mention_entity)
    subject = np.asarray(fact_subject)
    obj = np.asarray(fact_object)
    n_facts = len(subject)
    if entity_ids is not None:
        given_ids = np.asarray(entity_ids)
        ent_ids: npt.NDArray[Any] | None = given_ids
        n_ent = len(given_ids)
    elif entity_tenant is not None:
        n_ent = len(np.asarray(entity_tenant))
        ent_ids = None
    elif n_entities is not None:
        n_ent = int(n_entities)
        if not 0 <= n_ent <= 2**32 - 2:
            raise DataError(
                f"n_entities = {n_entities!r} is not a valid number of entities",
                table="entities",
                kind="invalid_value",
                input=n_entities,
            )
        ent_ids = None
    else:
        mx = -1
        if n_facts:
            mx = int(ints(subject, np.int64, "facts", "subject").max())
        if obj.size:
            o = obj.astype(np.float64) if obj.dtype.kind == "O" else obj
            o = np.nan_to_num(np.asarray(o, dtype=np.float64), nan=-1)
            mx = max(mx, int(o.max()))
        if mx > _MAX_INDEX:
            raise DataError(
                f"facts.subject / facts.object: entity index {mx} is beyond the largest the "
                f"core holds ({_MAX_INDEX}); give entity_ids",
                table="facts",
                kind="capacity",
                input=mx,
                ctx={"limit": _MAX_INDEX},
            )
        n_ent = mx + 1
        ent_ids = None
    if chunk_ids is not None:
        n_ch = len(np.asarray(chunk_ids))
    elif chunk_tenant is not None:
        n_ch = len(np.asarray(chunk_tenant))
    elif n_chunks is not None:
        n_ch = int(n_chunks)
    elif mention_chunk is not None and len(np.asarray(mention_chunk)):
        top = int(ints(mention_chunk, np.int64, "mentions", "chunk").max())
        if top > _MAX_INDEX:
            raise DataError(
                f"mentions.chunk: chunk index {top} is beyond the largest the core holds "
                f"({_MAX_INDEX}); give chunk_ids",
                table="mentions",
                column="chunk",
                kind="capacity",
                input=top,
                ctx={"limit": _MAX_INDEX},
            )
        n_ch = top + 1
    else:
        n_ch = 0
    mentions: Columns | None = None
    if mention_chunk is not None or mention_entity is not None:
        if mention_chunk is None or mention_entity is None:
            raise DataError(
                "mentions need both mention_chunk and mention_entity",
                table="mentions",
                column="chunk" if mention_chunk is None else "entity",
                kind="missing",
            )
        mentions = {"chunk": np.asarray(mention_chunk), "entity": np.asarray(mention_entity)}
        if mention_count is not None:
            mentions["count"] = mention_count
    given = {
        "id": None if fact_ids is None else np.asarray(fact_ids),
        "predicate": predicate,
        "confidence": confidence,
        "strength": strength,
        "status": status,
        "source": source,
        "access_count": access_count,
        "last_accessed": last_accessed,
        "created_at": created_at,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "sequence": sequence,
        "object_value": object_value,
    }
    facts: Columns = {"subject": subject, "object": obj}
    facts.update((k, v) for k, v in given.items() if v is not None)
    entities: Columns = {"id": ent_ids, "tenant": entity_tenant, "name": entity_names}
    chunks: Columns = {
        "id": None if chunk_ids is None else np.asarray(chunk_ids),
        "tenant": chunk_tenant,
    }
    return encode(
        {k: v for k, v in entities.items() if v is not None},
        facts,
        {k: v for k, v in chunks.items() if v is not None},
        mentions,
        n_entities=n_ent,
        n_chunks=n_ch,
        statuses=statuses,
        sources=sources,
        predicates=predicates,
        tenants=tenants,
        release=True,  # the dicts are this call's own
    )


def _typed(values: Any) -> Any:
    """A list or tuple of scalars as an array that keeps each value's type: numpy's own
    dtype only when every value is an int or every one a float (numpy would turn
    ``["a", 1]`` into text, and its fixed-width text drops trailing NULs)."""
    if not isinstance(values, (list, tuple)) or not values:
        return values
    kinds = {type(v) for v in values}
    if kinds == {int} or kinds == {float}:
        try:
            return np.asarray(values)
        except OverflowError:
            pass
    if any(issubclass(k, (list, tuple, np.ndarray)) for k in kinds):
        return values  # not a column of scalars: the shape checks report it
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out
