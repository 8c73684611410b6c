"""Per-row tables the index keeps beside the graph: chunk <-> entity mention links and the
fact columns a hit reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from .graph_index import GraphIndex

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class MentionLinks:
    """Chunk <-> entity mentions as two CSR arrays (dense indices).

    ``chunk_entities[chunk_offsets[c]:chunk_offsets[c + 1]]`` are the entities chunk ``c``
    mentions (with ``chunk_counts``), ``entity_chunks[entity_offsets[e]:...]`` the chunks
    mentioning entity ``e`` (with ``entity_counts``), both in ascending index order.
    """

    chunk_offsets: I64
    chunk_entities: I64
    chunk_counts: I64
    entity_offsets: I64
    entity_chunks: I64
    entity_counts: I64

    @classmethod
    def build(
        cls, chunk: I64, entity: I64, count: I64, n_chunks: int, n_entities: int
    ) -> MentionLinks:
        """CSR both ways from mention rows (dense chunk, dense entity, count)."""
        by_chunk = np.lexsort((entity, chunk))
        by_entity = np.lexsort((chunk, entity))
        co = np.zeros(n_chunks + 1, dtype=np.int64)
        np.cumsum(np.bincount(chunk, minlength=n_chunks), out=co[1:])
        eo = np.zeros(n_entities + 1, dtype=np.int64)
        np.cumsum(np.bincount(entity, minlength=n_entities), out=eo[1:])
        return cls(
            co,
            entity[by_chunk].astype(np.int64),
            count[by_chunk].astype(np.int64),
            eo,
            chunk[by_entity].astype(np.int64),
            count[by_entity].astype(np.int64),
        )

    def entities_of(self, chunk: int) -> tuple[I64, I64]:
        """(entities, counts) mentioned by a chunk."""
        a, b = int(self.chunk_offsets[chunk]), int(self.chunk_offsets[chunk + 1])
        return self.chunk_entities[a:b], self.chunk_counts[a:b]

    def chunks_of(self, entity: int) -> tuple[I64, I64]:
        """(chunks, counts) mentioning an entity."""
        a, b = int(self.entity_offsets[entity]), int(self.entity_offsets[entity + 1])
        return self.entity_chunks[a:b], self.entity_counts[a:b]


@dataclass(frozen=True, slots=True)
class FactTable:
    """Every column a fact hit reads, one row per fact, in two matrices: a hit's row is one
    ``take`` from each instead of a gather from a dozen million-row columns (one cache line
    or two per fact, not a dozen misses). Derived from a :class:`GraphIndex` on first use
    (:attr:`GraphIndex.fact_table`), never saved.

    Attributes:
        numbers: (n_facts, k) int64: confidence and strength (float64 bits), subject and
            object (dense, -1 for a literal), since (``NULL_TIME`` when unknown), then the
            subject's and object's external ids when entity ids are ints, then the fact's
            external id when fact ids are ints.
        objects: (n_facts, m) object: predicate, literal value, description, subject name,
            object name (None for a literal), then the external ids that are not ints
            (object id None for a literal).
        entity_ids_numeric: Whether the entity ids are columns of ``numbers``.
        fact_ids_numeric: Whether the fact ids are a column of ``numbers``.
    """

    numbers: I64
    objects: npt.NDArray[np.object_]
    entity_ids_numeric: bool
    fact_ids_numeric: bool

    @classmethod
    def of(cls, index: GraphIndex) -> FactTable:
        """The table of ``index``'s facts."""
        n = index.graph.n_facts
        subj, obj = index.fact_subject, index.fact_object
        ent_ids, fact_ids = index.graph.entity_ids, index.graph.fact_ids
        e_num = ent_ids.dtype.kind in "iu"
        f_num = fact_ids.dtype.kind in "iu"
        has_obj = obj >= 0
        obj0 = np.where(has_obj, obj, 0)
        num_cols: list[npt.NDArray[Any]] = [
            np.asarray(index.fact_confidence, dtype=np.float64).view(np.int64),
            np.asarray(index.fact_strength, dtype=np.float64).view(np.int64),
            subj,
            obj,
            index.fact_since,
        ]
        names = np.empty(len(index.entity_name) + 1, dtype=object)
        names[:-1] = index.entity_name  # names[-1]: None, a literal's object name
        obj_cols: list[Any] = [
            index.fact_predicate,
            index.fact_value,
            index.fact_description,
            names[subj],
            names[obj],
        ]
        if e_num:
            num_cols += [ent_ids[subj], ent_ids[obj0]]
        else:
            obj_ids = ent_ids[obj0]
            obj_ids[~has_obj] = None
            obj_cols += [ent_ids[subj], obj_ids]
        (num_cols if f_num else obj_cols).append(fact_ids)
        numbers = np.empty((n, len(num_cols)), dtype=np.int64)
        for i, col in enumerate(num_cols):
            numbers[:, i] = col
        objects = np.empty((n, len(obj_cols)), dtype=object)
        for i, col in enumerate(obj_cols):
            if isinstance(col, list):
                tmp = np.empty(n, dtype=object)
                tmp[:] = col
                col = tmp
            objects[:, i] = col
        return cls(numbers, objects, e_num, f_num)

    def rows(self, facts: I64) -> tuple[list[Any], ...]:
        """The columns of dense ``facts`` as lists: (confidence, strength, subject, object,
        since, subject id, object id, fact id, predicate, value, description, subject name,
        object name). The object id of a literal is None only when entity ids are not ints
        (callers map it by ``object < 0``); ``since`` is raw (``NULL_TIME`` when unknown)."""
        nums = self.numbers.take(facts, axis=0)
        conf, strength = nums[:, :2].view(np.float64).T.tolist()
        ints = nums[:, 2:].T.tolist()
        objs = self.objects.take(facts, axis=0).T.tolist()
        subj, obj, since = ints[0], ints[1], ints[2]
        i, j = 3, 5
        if self.entity_ids_numeric:
            sid, oid = ints[i], ints[i + 1]
            i += 2
        else:
            sid, oid = objs[j], objs[j + 1]
            j += 2
        fid = ints[i] if self.fact_ids_numeric else objs[j]
        return (conf, strength, subj, obj, since, sid, oid, fid, *objs[:5])


def _texts(col: Array | None, n: int) -> list[str | None]:
    if col is None:
        return [None] * n
    return [None if v is None else str(v) for v in col.tolist()]
