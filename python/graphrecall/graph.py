"""`KnowledgeGraph`: id maps, names and codes in Python; numbers in the Rust core.

The graph is immutable once built (updates build a new one). Entities, facts and chunks may
carry any hashable external ids; the core sees dense indices ``0..n``. Statuses, sources,
predicates and tenants are small vocabularies of names mapped to codes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from . import _core
from ._columns import IdMap, Vocab, floats, ints, time_value, times
from .errors import DataError, ParameterError, UnknownTenantError
from .results import Activation, PageRank, Recall
from .scoring import SOURCES, STATUSES, FactScoreProfile

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_SOURCES", "DEFAULT_STATUSES", "KnowledgeGraph", "RecallPlan", "SpreadPlan"]

#: Fact statuses of the source designs, by code.
DEFAULT_STATUSES: tuple[str, ...] = STATUSES
#: Fact sources of the source designs, by code.
DEFAULT_SOURCES: tuple[str, ...] = SOURCES

Direction = Literal["out", "in", "both"]
_U32_MAX = 2**32 - 1


def _int_param(name: str, value: object, lo: int, hi: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise ParameterError(f"invalid parameter {name}: {value!r} is not an integer")
    v = int(value)
    if not lo <= v <= hi:
        raise ParameterError(f"invalid parameter {name}: {v} is not in [{lo}, {hi}]")
    return v


def _opt_int(name: str, value: object, lo: int, hi: int) -> int | None:
    return None if value is None else _int_param(name, value, lo, hi)


def _opt_float(name: str, value: object) -> float | None:
    return None if value is None else _float_param(name, value)


def _float_param(name: str, value: object) -> float:
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a number")
    v = float(value)
    if v != v:
        raise ParameterError(f"invalid parameter {name}: is NaN")
    return v


def _time_param(name: str, value: object) -> int:
    """A query-time timestamp (int seconds, float seconds, datetime, datetime64)."""
    if value is None or (isinstance(value, float) and value != value):
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a time")
    if isinstance(value, np.datetime64) and np.isnat(value):
        raise ParameterError(f"invalid parameter {name}: NaT is not a time")
    try:
        t = time_value(value, "query", name, 0)
    except DataError:
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a time") from None
    if t == -(2**63):
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a time")
    return t


def _bool_param(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a bool")
    return bool(value)


def _direction(value: object) -> str:
    if value not in ("out", "in", "both"):
        raise ParameterError(
            f"invalid parameter direction: {value!r} is not one of 'out', 'in', 'both'"
        )
    return str(value)


class KnowledgeGraph:
    """A knowledge graph compiled for microsecond retrieval.

    Build it with :meth:`from_arrays`, :meth:`from_records` or :meth:`from_dataframes`, then
    query it with :meth:`spread` (spreading activation, seeds 000 / 001), :meth:`graph_recall`
    (seed 004), :meth:`personalized_pagerank` (HippoRAG) and :meth:`mention_boost` (seed 001).
    Every query method takes one query or a batch and crosses into Rust once per batch.

    Attributes:
        statuses, sources, predicates, tenants: The vocabularies (names by code).
        entity_names: Optional names of the entities (for narratives), by index.
        object_values: Optional literal values of the facts, by index.
    """

    def __init__(
        self,
        core: _core.CoreGraph,
        *,
        entities: IdMap,
        facts: IdMap,
        chunks: IdMap,
        statuses: Vocab,
        sources: Vocab,
        predicates: Vocab,
        tenants: Vocab,
        entity_names: npt.NDArray[Any] | None = None,
        object_values: npt.NDArray[Any] | None = None,
    ):
        self._core = core
        self._entities = entities
        self._facts = facts
        self._chunks = chunks
        self.statuses = statuses
        self.sources = sources
        self.predicates = predicates
        self.tenants = tenants
        self.entity_names = entity_names
        self.object_values = object_values
        # Plans of the one-shot calls, by their parameters (a prepared-statement cache).
        self._plans: dict[tuple[Any, ...], SpreadPlan | RecallPlan] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_arrays(
        cls,
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
    ) -> KnowledgeGraph:
        """Build from columns (numpy arrays, lists or pandas Series).

        Args:
            fact_subject: Subject entity of each fact (external ids, or indices when
                ``entity_ids`` is None).
            fact_object: Object entity of each fact; ``-1`` / ``None`` / NaN for a
                literal-valued fact.
            entity_tenant: Tenant of each entity (names or codes); all 0 when omitted.
            n_entities: Number of entities when neither ``entity_tenant`` nor
                ``entity_ids`` is given (default: 1 + the largest index used).
            entity_ids: External entity ids (unique), by index.
            entity_names: Entity names (kept in Python for narratives).
            fact_ids: External fact ids (unique), by row.
            predicate: Predicate names or codes (codes index ``predicates``).
            confidence: In [0, 1]; default 1.0. Stored as float32.
            strength: Finite and >= 0; default 1.0. Stored as float32.
            status: Names from ``statuses`` or codes; default "confirmed" (code 1).
            source: Names from ``sources`` or codes; default "system" (code 2).
            access_count: Non-negative ints; default 0.
            last_accessed, created_at, valid_from, valid_to: Times (int seconds,
                datetime64, datetime or None).
            sequence: "Established at sequence N" (int, or None/NaN for unknown).
            object_value: Literal values (kept in Python).
            chunk_tenant, chunk_ids, n_chunks: Chunks (passages / memories).
            mention_chunk, mention_entity, mention_count: Chunk-entity mentions.
            statuses, sources: Vocabularies (names by code).
            predicates: Predicate vocabulary when ``predicate`` holds codes; learned from
                the names otherwise.
            tenants: Tenant vocabulary when tenants are given as codes.

        Raises:
            DataError: A precise message naming the table, row and column of the first
                problem (dangling ids, NaN weights, unknown codes, cross-tenant facts...).
        """
        subj_raw = np.asarray(fact_subject)
        n_facts = len(subj_raw)
        # --- entities
        if entity_ids is not None:
            ent_ids_arr = np.asarray(entity_ids)
            n_ent = len(ent_ids_arr)
        elif entity_tenant is not None:
            n_ent = len(np.asarray(entity_tenant))
            ent_ids_arr = None
        elif n_entities is not None:
            n_ent = int(n_entities)
            if not 0 <= n_ent <= 2**32 - 2:
                raise DataError(f"n_entities = {n_entities!r} is not a valid number of entities")
            ent_ids_arr = None
        else:
            obj = np.asarray(fact_object)
            mx = -1
            if n_facts:
                mx = int(ints(subj_raw, np.int64, "facts", "subject").max())
            if obj.size:
                o = obj.astype(np.float64) if obj.dtype.kind == "O" else obj
                o = np.nan_to_num(np.asarray(o, dtype=np.float64), nan=-1)
                mx = max(mx, int(o.max()))
            n_ent = mx + 1
            ent_ids_arr = None
        entities = IdMap(ent_ids_arr, n_ent, "entity")
        if entity_tenant is None:
            tenant_vocab = Vocab(list(tenants) if tenants is not None else [0], "tenant")
            ent_tenant = np.zeros(n_ent, dtype=np.uint32)
        else:
            et = np.asarray(entity_tenant)
            if len(et) != n_ent:
                raise DataError(f"entities.tenant has {len(et)} rows, expected {n_ent}")
            if tenants is not None:
                tenant_vocab = Vocab(list(tenants), "tenant")
                ent_tenant = tenant_vocab.encode(et, "entities", "tenant", np.uint32)
            elif et.dtype.kind in "iu":
                codes = ints(et, np.uint32, "entities", "tenant")
                n_t = int(codes.max()) + 1 if len(codes) else 1
                if n_t > 1 << 24:
                    raise DataError(f"entities.tenant codes go up to {n_t - 1}; pass tenants=")
                tenant_vocab = Vocab(list(range(n_t)), "tenant")
                ent_tenant = codes
            else:
                tenant_vocab, codes64 = Vocab.learn(et, "tenant")
                ent_tenant = codes64.astype(np.uint32)
        # --- facts
        fact_map = IdMap(None if fact_ids is None else np.asarray(fact_ids), n_facts, "fact")
        subject = entities.to_index(subj_raw, "facts", "subject").astype(np.uint32)
        obj_idx = entities.to_index(np.asarray(fact_object), "facts", "object", allow_none=True)
        # Validated to -1..n-1: the wrapping cast maps -1 to the core's "none" (2**32 - 1).
        obj32 = obj_idx.astype(np.uint32)

        def col(v: Any, default: Any, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
            if v is None:
                return np.full(n_facts, default, dtype=dtype)
            return np.asarray(v)

        if predicate is None:
            pred_vocab = Vocab(
                list(predicates) if predicates is not None else ["related_to"], "predicate"
            )
            pred = np.zeros(n_facts, dtype=np.uint32)
        else:
            p = np.asarray(predicate)
            if predicates is not None:
                pred_vocab = Vocab(list(predicates), "predicate")
                pred = pred_vocab.encode(p, "facts", "predicate", np.uint32)
            elif p.dtype.kind in "iu":
                codes = ints(p, np.uint32, "facts", "predicate")
                n_p = int(codes.max()) + 1 if len(codes) else 1
                if n_p > 1 << 16:
                    raise DataError(
                        f"facts.predicate codes go up to {n_p - 1}; at most 65536 predicates"
                    )
                pred_vocab = Vocab(list(range(n_p)), "predicate")
                pred = codes
            else:
                pred_vocab, codes64 = Vocab.learn(p, "predicate")
                pred = codes64.astype(np.uint32)
        status_vocab = Vocab(list(statuses), "status")
        source_vocab = Vocab(list(sources), "source")
        st = (
            np.full(
                n_facts,
                status_vocab.code("confirmed") if "confirmed" in status_vocab.names else 0,
                np.uint8,
            )
            if status is None
            else status_vocab.encode(status, "facts", "status", np.uint8)
        )
        so = (
            np.full(
                n_facts,
                source_vocab.code("system") if "system" in source_vocab.names else 0,
                np.uint8,
            )
            if source is None
            else source_vocab.encode(source, "facts", "source", np.uint8)
        )
        seq = None if sequence is None else _sequence_col(sequence)
        # --- chunks
        if chunk_ids is not None:
            n_ch = len(np.asarray(chunk_ids))
        elif chunk_tenant is not None:
            n_ch = len(np.asarray(chunk_tenant))
        elif n_chunks is not None:
            n_ch = int(n_chunks)
        elif mention_chunk is not None and len(np.asarray(mention_chunk)):
            n_ch = int(ints(mention_chunk, np.int64, "mentions", "chunk").max()) + 1
        else:
            n_ch = 0
        chunks = IdMap(None if chunk_ids is None else np.asarray(chunk_ids), n_ch, "chunk")
        if chunk_tenant is None:
            ch_tenant = np.zeros(n_ch, dtype=np.uint32)
        else:
            ct = np.asarray(chunk_tenant)
            if len(ct) != n_ch:
                raise DataError(f"chunks.tenant has {len(ct)} rows, expected {n_ch}")
            ch_tenant = tenant_vocab.encode(ct, "chunks", "tenant", np.uint32)
        if mention_chunk is not None or mention_entity is not None:
            if mention_chunk is None or mention_entity is None:
                raise DataError("mentions need both mention_chunk and mention_entity")
            m_chunk = chunks.to_index(np.asarray(mention_chunk), "mentions", "chunk").astype(
                np.uint32
            )
            m_entity = entities.to_index(np.asarray(mention_entity), "mentions", "entity").astype(
                np.uint32
            )
            m_count = (
                np.ones(len(m_chunk), dtype=np.uint32)
                if mention_count is None
                else ints(mention_count, np.uint32, "mentions", "count")
            )
        else:
            m_chunk = m_entity = m_count = np.zeros(0, dtype=np.uint32)

        core = _core.CoreGraph(
            ent_tenant,
            subject,
            obj32,
            pred,
            floats(col(confidence, 1.0, np.float32), np.float32, "facts", "confidence"),
            floats(col(strength, 1.0, np.float32), np.float32, "facts", "strength"),
            st,
            so,
            ints(col(access_count, 0, np.int64), np.uint32, "facts", "access_count"),
            n_predicates=len(pred_vocab),
            n_statuses=len(status_vocab),
            n_sources=len(source_vocab),
            last_accessed=times(last_accessed, "facts", "last_accessed"),
            created_at=times(created_at, "facts", "created_at"),
            valid_from=times(valid_from, "facts", "valid_from"),
            valid_to=times(valid_to, "facts", "valid_to"),
            sequence=seq,
            chunk_tenant=ch_tenant,
            mention_chunk=m_chunk,
            mention_entity=m_entity,
            mention_count=m_count,
        )
        names = None if entity_names is None else np.asarray(entity_names, dtype=object)
        if names is not None and len(names) != n_ent:
            raise DataError(f"entities.name has {len(names)} rows, expected {n_ent}")
        values = None if object_value is None else np.asarray(object_value, dtype=object)
        if values is not None and len(values) != n_facts:
            raise DataError(f"facts.object_value has {len(values)} rows, expected {n_facts}")
        return cls(
            core,
            entities=entities,
            facts=fact_map,
            chunks=chunks,
            statuses=status_vocab,
            sources=source_vocab,
            predicates=pred_vocab,
            tenants=tenant_vocab,
            entity_names=names,
            object_values=values,
        )

    @classmethod
    def from_records(
        cls,
        entities: Iterable[Mapping[str, Any]],
        facts: Iterable[Mapping[str, Any]],
        chunks: Iterable[Mapping[str, Any]] | None = None,
        mentions: Iterable[Mapping[str, Any]] | None = None,
        **vocabularies: Any,
    ) -> KnowledgeGraph:
        """Build from plain dicts.

        Entities: ``id`` (required), ``tenant``, ``name``. Facts: ``subject``, ``object``
        (None for a literal), ``predicate``, ``confidence``, ``strength``, ``status``,
        ``source``, ``access_count``, ``last_accessed``, ``created_at``, ``valid_from``,
        ``valid_to``, ``sequence``, ``object_value``, ``id``. Chunks: ``id``, ``tenant``.
        Mentions: ``chunk``, ``entity``, ``count``. Missing keys take the defaults of
        :meth:`from_arrays`; ``vocabularies`` are passed through (``statuses=`` ...).
        """
        ents = list(entities)
        fs = list(facts)
        for i, e in enumerate(ents):
            if "id" not in e:
                raise DataError(f"entities row {i}: has no 'id'")
        for i, f in enumerate(fs):
            if "subject" not in f:
                raise DataError(f"facts row {i}: has no 'subject'")

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
        return cls.from_arrays(
            entity_ids=[e["id"] for e in ents],
            entity_tenant=[e.get("tenant", 0) for e in ents] if has_tenant else None,
            entity_names=(
                np.array([e.get("name") for e in ents], dtype=object)
                if any("name" in e for e in ents)
                else None
            ),
            fact_subject=np.array([f["subject"] for f in fs], dtype=object),
            fact_object=np.array([f.get("object") for f in fs], dtype=object),
            fact_ids=fcol("id"),
            predicate=fcol("predicate"),
            confidence=fnum("confidence", 1.0),
            strength=fnum("strength", 1.0),
            status=fnum("status", "confirmed"),
            source=fnum("source", "system"),
            access_count=fnum("access_count", 0),
            last_accessed=_time_col(fs, "last_accessed", "facts"),
            created_at=_time_col(fs, "created_at", "facts"),
            valid_from=_time_col(fs, "valid_from", "facts"),
            valid_to=_time_col(fs, "valid_to", "facts"),
            sequence=fcol("sequence"),
            object_value=fcol("object_value"),
            chunk_ids=[c["id"] for c in ch] if ch else None,
            chunk_tenant=[c.get("tenant", 0) for c in ch] if ch and has_tenant else None,
            n_chunks=len(ch) if ch else None,
            mention_chunk=np.array([m["chunk"] for m in ms], dtype=object) if ms else None,
            mention_entity=np.array([m["entity"] for m in ms], dtype=object) if ms else None,
            mention_count=[m.get("count", 1) for m in ms] if ms else None,
            **vocabularies,
        )

    @classmethod
    def from_dataframes(
        cls,
        entities: pd.DataFrame,
        facts: pd.DataFrame,
        chunks: pd.DataFrame | None = None,
        mentions: pd.DataFrame | None = None,
        *,
        columns: Mapping[str, str] | None = None,
        **vocabularies: Any,
    ) -> KnowledgeGraph:
        """Build from pandas DataFrames with the column names of :meth:`from_records`.

        ``columns`` renames the user's columns, e.g. ``{"relationships.strength":
        "strength"}`` is written ``{"strength": "weight"}`` (ours -> theirs), keys being the
        table-qualified or plain names: ``entities.id``, ``facts.subject``, ``status``...
        """
        m = dict(columns or {})

        def pick(df: pd.DataFrame | None, table: str, name: str) -> Any:
            if df is None:
                return None
            col = m.get(f"{table}.{name}", m.get(name, name))
            if col not in df.columns:
                return None
            return df[col].to_numpy()

        if pick(entities, "entities", "id") is None:
            raise DataError("entities DataFrame has no 'id' column (map one with columns=)")
        if pick(facts, "facts", "subject") is None:
            raise DataError("facts DataFrame has no 'subject' column (map one with columns=)")
        return cls.from_arrays(
            entity_ids=pick(entities, "entities", "id"),
            entity_tenant=pick(entities, "entities", "tenant"),
            entity_names=pick(entities, "entities", "name"),
            fact_subject=pick(facts, "facts", "subject"),
            fact_object=_nullable(pick(facts, "facts", "object")),
            fact_ids=pick(facts, "facts", "id"),
            predicate=pick(facts, "facts", "predicate"),
            confidence=pick(facts, "facts", "confidence"),
            strength=pick(facts, "facts", "strength"),
            status=pick(facts, "facts", "status"),
            source=pick(facts, "facts", "source"),
            access_count=pick(facts, "facts", "access_count"),
            last_accessed=pick(facts, "facts", "last_accessed"),
            created_at=pick(facts, "facts", "created_at"),
            valid_from=pick(facts, "facts", "valid_from"),
            valid_to=pick(facts, "facts", "valid_to"),
            sequence=pick(facts, "facts", "sequence"),
            object_value=_nullable(pick(facts, "facts", "object_value")),
            chunk_ids=pick(chunks, "chunks", "id"),
            chunk_tenant=pick(chunks, "chunks", "tenant"),
            mention_chunk=pick(mentions, "mentions", "chunk"),
            mention_entity=pick(mentions, "mentions", "entity"),
            mention_count=pick(mentions, "mentions", "count"),
            **vocabularies,
        )

    # ------------------------------------------------------------------ inspection

    @property
    def n_entities(self) -> int:
        return int(self._core.n_entities)

    @property
    def n_facts(self) -> int:
        return int(self._core.n_facts)

    @property
    def n_chunks(self) -> int:
        return int(self._core.n_chunks)

    @property
    def n_tenants(self) -> int:
        return len(self.tenants)

    @property
    def entity_ids(self) -> npt.NDArray[Any]:
        return self._entities.external

    @property
    def fact_ids(self) -> npt.NDArray[Any]:
        return self._facts.external

    @property
    def chunk_ids(self) -> npt.NDArray[Any]:
        return self._chunks.external

    def stats(self) -> dict[str, int]:
        """Sizes and the bytes held by the core's arrays."""
        return dict(self._core.stats())

    def entity_index(self, ids: Iterable[Hashable]) -> npt.NDArray[np.int64]:
        """Dense indices of external entity ids (UnknownIdError for an unknown id)."""
        return self._entities.lookup(ids, "entities")

    def fact_index(self, ids: Iterable[Hashable]) -> npt.NDArray[np.int64]:
        """Dense indices of external fact ids."""
        return self._facts.lookup(ids, "facts")

    def chunk_index(self, ids: Iterable[Hashable]) -> npt.NDArray[np.int64]:
        """Dense indices of external chunk ids."""
        return self._chunks.lookup(ids, "chunks")

    def tenant_code(self, tenant: Hashable) -> int:
        """Code of a tenant name (UnknownTenantError if the graph holds no such tenant)."""
        try:
            return self.tenants.code(tenant)
        except DataError:
            raise UnknownTenantError(
                f"unknown tenant {tenant!r}; the graph holds {list(self.tenants.names)!r}"
            ) from None

    def facts(self, ids: Iterable[Hashable]) -> list[dict[str, Any]]:
        """The stored rows of facts, with names for codes and external ids."""
        idx = self.fact_index(ids)
        cols = self._core.fact_rows(idx)
        subj, obj, pred, conf, stren, st, so, acc, last, created, vf, vt, seq = cols
        ext_s = self._entities.to_external(subj).tolist()
        ext_o = self._entities.to_external(obj).tolist()
        null = np.iinfo(np.int64).min
        out = []
        for k, i in enumerate(idx.tolist()):
            out.append(
                {
                    "id": self._facts.to_external(np.array([i])).tolist()[0],
                    "subject": ext_s[k],
                    "object": None if obj[k] < 0 else ext_o[k],
                    "object_value": None if self.object_values is None else self.object_values[i],
                    "predicate": self.predicates.names[int(pred[k])],
                    "confidence": float(conf[k]),
                    "strength": float(stren[k]),
                    "status": self.statuses.names[int(st[k])],
                    "source": self.sources.names[int(so[k])],
                    "access_count": int(acc[k]),
                    "last_accessed": None if last[k] == null else int(last[k]),
                    "created_at": None if created[k] == null else int(created[k]),
                    "valid_from": None if vf[k] == null else int(vf[k]),
                    "valid_to": None if vt[k] == null else int(vt[k]),
                    "sequence": None if seq[k] == null else int(seq[k]),
                }
            )
        return out

    def adjacency(self, entity: Hashable) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """(out-facts, in-facts) of an entity, confidence desc then id asc, as fact ids."""
        e = int(self.entity_index([entity])[0])
        out, inn = self._core.adjacency(e)
        return self._facts.to_external(out), self._facts.to_external(inn)

    # ------------------------------------------------------------------ queries

    def _anchors(
        self, anchors: Any, scores: Any, name: str = "anchors"
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64] | None, npt.NDArray[np.int64] | None]:
        """Flatten one query (1-D), a rectangular batch (2-D) or a ragged batch (list of
        sequences) into anchors + offsets, mapping external ids."""
        if isinstance(anchors, np.ndarray) and anchors.ndim == 2:
            q, a = anchors.shape
            flat = anchors.reshape(-1)
            offsets: npt.NDArray[np.int64] | None = (
                np.arange(0, q * a + 1, max(a, 1), dtype=np.int64)
                if a
                else np.zeros(q + 1, dtype=np.int64)
            )
            sc = None if scores is None else np.asarray(scores, dtype=np.float64)
            if sc is not None and sc.ndim == 1 and a == len(sc):
                sc = np.tile(sc, q)
            elif sc is not None:
                sc = sc.reshape(-1)
        elif (
            isinstance(anchors, (list, tuple))
            and anchors
            and all(isinstance(x, (list, tuple, np.ndarray)) for x in anchors)
        ):
            lens = [len(x) for x in anchors]
            offsets = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=offsets[1:])
            flat = (
                np.concatenate([np.asarray(x).reshape(-1) for x in anchors])
                if sum(lens)
                else np.zeros(0, np.int64)
            )
            if scores is None:
                sc = None
            else:
                sc = (
                    np.concatenate([np.asarray(s, dtype=np.float64).reshape(-1) for s in scores])
                    if len(scores)
                    else np.zeros(0)
                )
        else:
            flat = np.asarray(anchors)
            if flat.ndim == 0:
                flat = flat.reshape(1)
            offsets = None
            sc = None if scores is None else np.asarray(scores, dtype=np.float64).reshape(-1)
        if self._entities.kind == "identity" and flat.dtype == np.int64:
            idx = np.ascontiguousarray(flat)
        else:
            idx = self._entities.lookup(flat.tolist(), name)
        if sc is not None and len(sc) != len(idx):
            raise ParameterError(
                f"invalid parameter {name[:-1]}_scores: {len(sc)} scores for {len(idx)} anchors"
            )
        return idx, None if sc is None else np.ascontiguousarray(sc), offsets

    def _filters(
        self,
        statuses: Iterable[Hashable] | None,
        predicates: Iterable[Hashable] | None,
        min_confidence: float | None,
        as_of: Any,
        max_sequence: int | None,
        tenant: Hashable | None,
    ) -> dict[str, Any]:
        st = None
        if statuses is not None:
            try:
                st = np.array([self.statuses.code(s) for s in statuses], dtype=np.uint8)
            except DataError as exc:
                raise ParameterError(f"invalid parameter statuses: {exc}") from None
        pr = None
        if predicates is not None:
            try:
                pr = np.array([self.predicates.code(p) for p in predicates], dtype=np.uint32)
            except DataError as exc:
                raise ParameterError(f"invalid parameter predicates: {exc}") from None
        return {
            "statuses": st,
            "predicates": pr,
            "min_confidence": _opt_float("min_confidence", min_confidence),
            "as_of": None if as_of is None else _time_param("as_of", as_of),
            "max_sequence": _opt_int("max_sequence", max_sequence, -(2**63) + 1, 2**63 - 1),
            "tenant": None if tenant is None else self.tenant_code(tenant),
        }

    def spread_plan(
        self,
        *,
        max_hops: int = 2,
        per_entity_limit: int | None = None,
        max_facts: int | None = None,
        direction: Direction = "out",
        statuses: Iterable[Hashable] | None = None,
        predicates: Iterable[Hashable] | None = None,
        min_confidence: float | None = None,
        as_of: Any = None,
        max_sequence: int | None = None,
        tenant: Hashable | None = None,
        independent_anchors: bool = False,
        rank: Literal["score_fact", "composite"] | None = None,
        top_k: int | None = None,
        profile: FactScoreProfile | None = None,
    ) -> SpreadPlan:
        """Validate a spreading-activation configuration once; call the plan per batch.

        The traversal is seed 000's BFS: from the anchors, ``max_hops`` rounds; each entity
        is expanded once (shared visited set), taking its first ``per_entity_limit``
        admitted facts by confidence (desc, then fact id); before each round the traversal
        stops if ``max_facts`` facts were collected (the source's rule: checked between
        hops only). With ``independent_anchors`` every anchor runs its own BFS (seed 004).

        Args:
            max_hops: Expansion rounds (0..64). Facts of the anchors are hop 0.
            per_entity_limit: Facts per expanded entity, by confidence (None = all).
            max_facts: Seed 000's stop rule (None = no rule).
            direction: "out" (subject -> object), "in", or "both".
            statuses, predicates: Admitted status / predicate names (None = all).
            min_confidence: Skip facts below this confidence.
            as_of: Only facts valid at this time (valid_from <= t < valid_to).
            max_sequence: Only facts with sequence <= this (facts without one excluded).
            tenant: Restrict to a tenant; every anchor must belong to it.
            independent_anchors: One BFS per anchor (each fact keeps its best
                anchor score / (1 + hop)).
            rank: "score_fact" (seed 000, needs ``now`` at call time), "composite"
                (seed 004: anchor score x 1/(1+hop) x confidence), or None (BFS order).
            top_k: Keep the best k facts (after ranking).
            profile: Constants of score_fact (defaults: the source's).

        Raises:
            ParameterError, UnknownTenantError: For invalid parameters.
        """
        p = profile or FactScoreProfile()
        if rank not in (None, "score_fact", "composite"):
            raise ParameterError(
                f"invalid parameter rank: {rank!r} is not one of None, 'score_fact', 'composite'"
            )
        core = self._core.spread_plan(
            max_hops=_int_param("max_hops", max_hops, 0, 64),
            per_entity_limit=_opt_int("per_entity_limit", per_entity_limit, 1, _U32_MAX),
            max_facts=_opt_int("max_facts", max_facts, 0, _U32_MAX),
            direction=_direction(direction),
            independent_anchors=_bool_param("independent_anchors", independent_anchors),
            rank=rank or "none",
            top_k=_opt_int("top_k", top_k, 1, 2**62),
            source_weights=list(p.source_weights),
            default_source_weight=p.default_source_weight,
            status_weights=list(p.status_weights),
            default_status_weight=p.default_status_weight,
            decay_base=p.decay_base,
            grace_weeks=p.grace_weeks,
            usage_log_factor=p.usage_log_factor,
            **self._filters(statuses, predicates, min_confidence, as_of, max_sequence, tenant),
        )
        return SpreadPlan(self, core, needs_now=rank == "score_fact")

    def spread(
        self,
        anchors: Any,
        anchor_scores: Any = None,
        *,
        now: Any = None,
        **params: Any,
    ) -> Activation:
        """Spreading activation from ``anchors`` (see :meth:`spread_plan` for params).

        Args:
            anchors: One query (1-D ids), a batch as a 2-D array (queries x anchors), or a
                ragged batch (list of sequences).
            anchor_scores: Match scores aligned with ``anchors`` (default 1.0); a 1-D
                array of A scores is reused for every row of a 2-D batch.
            now: Time to score at (int seconds or datetime), required for "score_fact".

        Returns:
            An :class:`Activation` with per-query views.
        """
        plan = cast(SpreadPlan, self._cached_plan("spread", params))
        return plan(anchors, anchor_scores, now=now)

    def recall_plan(
        self,
        *,
        max_hops: int = 2,
        direction: Direction = "both",
        top_k: int = 20,
        dedupe: Literal["fact", "triple"] = "fact",
        statuses: Iterable[Hashable] | None = None,
        predicates: Iterable[Hashable] | None = None,
        min_confidence: float | None = None,
        as_of: Any = None,
        max_sequence: int | None = None,
        tenant: Hashable | None = None,
    ) -> RecallPlan:
        """Validate a seed-004 graph-recall configuration once; call the plan per batch.

        Every anchor runs its own BFS for ``max_hops`` hops; an edge (a fact between two
        entities) reached from an endpoint at distance h scores
        ``match x 1/(1+h) x confidence``, keeping its best over anchors and hops; edges are
        deduplicated (by fact, or by (subject, object, predicate) with ``dedupe="triple"``)
        and the best ``top_k`` returned, ties by fact id.
        """
        if dedupe not in ("fact", "triple"):
            raise ParameterError(
                f"invalid parameter dedupe: {dedupe!r} is not one of 'fact', 'triple'"
            )
        core = self._core.recall_plan(
            max_hops=_int_param("max_hops", max_hops, 0, 64),
            direction=_direction(direction),
            top_k=_int_param("top_k", top_k, 1, 2**62),
            dedupe=dedupe,
            **self._filters(statuses, predicates, min_confidence, as_of, max_sequence, tenant),
        )
        return RecallPlan(self, core)

    def graph_recall(self, anchors: Any, match_scores: Any = None, **params: Any) -> Recall:
        """Seed 004 graph recall from ``anchors`` with ``match_scores`` (see
        :meth:`recall_plan`)."""
        return cast(RecallPlan, self._cached_plan("recall", params))(anchors, match_scores)

    def personalized_pagerank(
        self,
        seeds: Any,
        weights: Any = None,
        *,
        damping: float = 0.5,
        tol: float = 1e-10,
        max_iter: int = 100,
        weight: Literal["strength", "confidence", "uniform"] = "strength",
        direction: Direction = "both",
        statuses: Iterable[Hashable] | None = None,
        predicates: Iterable[Hashable] | None = None,
        min_confidence: float | None = None,
        as_of: Any = None,
        max_sequence: int | None = None,
        tenant: Hashable | None = None,
        top_k: int | None = None,
        top_k_chunks: int | None = None,
        weight_by_count: bool = False,
        epsilon: float | None = None,
        score_chunks: bool = True,
    ) -> PageRank:
        """Personalized PageRank from weighted seeds (HippoRAG's spreading activation).

        Restricted to the seeds' tenant; edges weighted by ``weight`` and walked in
        ``direction`` ("both" treats facts as undirected edges, as HippoRAG does); dangling
        mass returns to the seeds. Chunk score = sum of the scores of the entities the chunk
        mentions (x mention count with ``weight_by_count``).

        Args:
            seeds: Seed entities (one query, a 2-D batch or a ragged batch).
            weights: Non-negative seed weights (default 1.0), normalised per query.
            damping: Probability of following an edge, in (0, 1); HippoRAG uses 0.5.
            tol: Stop when the L1 change of an iteration is below this.
            max_iter: Iteration cap (1..100000).
            top_k, top_k_chunks: Keep the best entities / chunks (None = all scored).
            epsilon: Approximate by local forward push (Andersen-Chung-Lang) instead of power
                iteration: a node passes its residual mass on while it exceeds ``epsilon x
                max(degree, 1)`` (degree: its facts in ``direction``); ``tol`` and
                ``max_iter`` are then unused. The work depends on the seeds' neighbourhood,
                not on the tenant's size. Every score is at most the exact one and the L1
                error is the unsettled mass, ``1 - sum(entity_scores)``. In (0, 1); None
                (default) = exact power iteration. ``iterations`` then counts pushes.
            score_chunks: Also score chunks through mentions (False: the chunk arrays are
                empty, and the mention walk is saved).
        """
        idx, w, offsets = self._anchors(seeds, weights, "seeds")
        arrays = self._core.personalized_pagerank(
            idx,
            w,
            offsets,
            damping=_float_param("damping", damping),
            tol=_float_param("tol", tol),
            max_iter=_int_param("max_iter", max_iter, 1, 100_000),
            weight=weight,
            direction=_direction(direction),
            top_k=_opt_int("top_k", top_k, 1, 2**62),
            top_k_chunks=_opt_int("top_k_chunks", top_k_chunks, 1, 2**62),
            weight_by_count=_bool_param("weight_by_count", weight_by_count),
            epsilon=_opt_float("epsilon", epsilon),
            score_chunks=_bool_param("score_chunks", score_chunks),
            **self._filters(statuses, predicates, min_confidence, as_of, max_sequence, tenant),
        )
        return PageRank(tuple(arrays), self)

    def mention_boost(
        self,
        chunks: Sequence[Sequence[Hashable]],
        similarity: Sequence[Sequence[float]],
        query_entities: Sequence[Sequence[Hashable]],
        related: Sequence[Sequence[Hashable]],
        related_distance: Sequence[Sequence[int]],
        related_strength: Sequence[Sequence[float]],
        *,
        direct: float = 0.3,
        indirect: float = 0.1,
        use_strength: bool = True,
        centrality: npt.ArrayLike | None = None,
    ) -> list[dict[str, npt.NDArray[Any]]]:
        """Seed 001 relevance boosts for a batch of queries (one list per query).

        ``adjusted = similarity + |mentioned ∩ query_entities| x direct + sum over
        mentioned related entities (not query entities) of indirect x 1/distance x
        strength`` (strength 1 without ``use_strength``; x centrality[entity] when given).

        Returns:
            Per query a dict with ``direct``, ``indirect``, ``adjusted`` (aligned with the
            input chunks) and ``order`` (input positions by adjusted desc, ties in input
            order), and ``chunk_ids`` in that order.
        """

        def flat(
            lists: Sequence[Sequence[Any]], conv: Any
        ) -> tuple[npt.NDArray[Any], npt.NDArray[np.uintp]]:
            lens = [len(x) for x in lists]
            off = np.zeros(len(lens) + 1, dtype=np.uintp)
            np.cumsum(lens, out=off[1:])
            vals = [v for x in lists for v in x]
            return conv(vals), off

        n = len(chunks)
        for name, lst in (
            ("similarity", similarity),
            ("query_entities", query_entities),
            ("related", related),
        ):
            if len(lst) != n:
                raise ParameterError(
                    f"invalid parameter {name}: {len(lst)} queries, chunks has {n}"
                )
        c, co = flat(chunks, lambda v: self.chunk_index(v).astype(np.uint32))
        s, _ = flat(similarity, lambda v: np.asarray(v, dtype=np.float64))
        q, qo = flat(query_entities, lambda v: self.entity_index(v).astype(np.uint32))
        r, ro = flat(related, lambda v: self.entity_index(v).astype(np.uint32))
        rd, _ = flat(related_distance, _distances)
        rs, _ = flat(related_strength, lambda v: np.asarray(v, dtype=np.float64))
        cent = None if centrality is None else np.ascontiguousarray(centrality, dtype=np.float64)
        d, i, a, order = self._core.mention_boost(
            c,
            s,
            co,
            q,
            qo,
            r,
            rd,
            rs,
            ro,
            direct=_float_param("direct", direct),
            indirect=_float_param("indirect", indirect),
            use_strength=_bool_param("use_strength", use_strength),
            centrality=cent,
        )
        out = []
        ext = self._chunks
        for k in range(n):
            sl = slice(int(co[k]), int(co[k + 1]))
            o = order[sl].astype(np.int64)
            out.append(
                {
                    "direct": d[sl],
                    "indirect": i[sl],
                    "adjusted": a[sl],
                    "order": o,
                    "chunk_ids": ext.to_external(c[sl].astype(np.int64)[o]),
                }
            )
        return out

    def _cached_plan(self, kind: str, params: dict[str, Any]) -> SpreadPlan | RecallPlan:
        """The plan for these parameters, built once and kept (at most 64 kept)."""
        try:
            key = (kind, *sorted((k, _freeze(v)) for k, v in params.items()))
            hash(key)
        except TypeError:  # unhashable parameter values: build a fresh plan
            key = None
        if key is not None:
            cached = self._plans.get(key)
            if cached is not None:
                return cached
        plan: SpreadPlan | RecallPlan = (
            self.spread_plan(**params) if kind == "spread" else self.recall_plan(**params)
        )
        if key is not None:
            if len(self._plans) >= 64:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = plan
        return plan

    def __repr__(self) -> str:
        return (
            f"KnowledgeGraph(entities={self.n_entities}, facts={self.n_facts}, "
            f"chunks={self.n_chunks}, tenants={self.n_tenants})"
        )


def _freeze(v: Any) -> Any:
    """A hashable stand-in for a parameter value (lists and sets of names become tuples;
    the type is part of the key so that 1 and True, or "1" and 1, never share a plan)."""
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, v))))
    return (type(v).__name__, v)


def _sequence_col(sequence: Any) -> npt.NDArray[np.int64]:
    """Sequence numbers as int64; None / NaN become the null sentinel, anything else must be
    an integer."""
    s = np.asarray(sequence)
    if s.dtype.kind not in "fO":
        return ints(s, np.int64, "facts", "sequence")
    if s.dtype.kind == "O":
        s = np.array([np.nan if v is None else v for v in s.tolist()], dtype=np.float64)
    null = np.isnan(s)
    with np.errstate(invalid="ignore"):
        bad = ~null & (~np.isfinite(s) | (s != np.floor(s)) | (np.abs(s) >= 2.0**63))
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(f"facts row {i}: sequence = {float(s[i])!r} is not an integer")
    out = np.where(null, 0, s).astype(np.int64)
    out[null] = NULL_SEQUENCE
    return out


NULL_SEQUENCE = -(2**63)


def _distances(values: list[Any]) -> npt.NDArray[np.uint32]:
    try:
        d = ints(np.asarray(values), np.int64, "related", "distance")
    except DataError as exc:
        raise ParameterError(f"invalid parameter related_distance: {exc}") from None
    bad = (d < 1) | (d > 2**32 - 2)
    if bad.any():
        i = int(np.argmax(bad))
        raise ParameterError(
            f"invalid parameter related_distance: value at position {i} is {d[i]}; "
            "related entities are at distance >= 1"
        )
    return d.astype(np.uint32)


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


class SpreadPlan:
    """A validated spreading-activation configuration; call it per batch.

    ``plan(anchors, anchor_scores=None, now=None) -> Activation``. Building the plan once
    keeps per-query overhead to one FFI call (the prepared-statement pattern).
    """

    __slots__ = ("_core", "_graph", "_identity", "_needs_now")

    def __init__(self, graph: KnowledgeGraph, core: _core.CoreSpreadPlan, *, needs_now: bool):
        self._graph = graph
        self._core = core
        self._needs_now = needs_now
        self._identity = graph._entities.kind == "identity"

    def __call__(self, anchors: Any, anchor_scores: Any = None, *, now: Any = None) -> Activation:
        if (
            self._identity
            and type(anchors) is np.ndarray
            and anchors.ndim == 1
            and anchors.dtype == np.int64
            and anchor_scores is None
        ):
            idx, sc, off = anchors, None, None  # the fast path: no conversion at all
        else:
            idx, sc, off = self._graph._anchors(anchors, anchor_scores)
        if now is None:
            t = None
        elif type(now) is int and -(2**63) < now < 2**63:
            t = now  # the fast path
        else:
            t = _time_param("now", now)
        if self._needs_now and t is None:
            raise ParameterError("invalid parameter now: is required to rank by score_fact")
        return Activation(self._core(idx, sc, off, t), self._graph)

    def dense(
        self,
        anchors: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64] | None = None,
        *,
        now: Any = None,
    ) -> Activation:
        """The plan on anchors given as dense entity indices (what the recipes hold): no
        id lookups on the way in.

        Args:
            anchors: Dense entity indices, int64, all queries concatenated.
            offsets: Per-query bounds into ``anchors`` (int64, n + 1); None: one query.
            now: As for calling the plan.
        """
        if now is None:
            t = None
        elif type(now) is int and -(2**63) < now < 2**63:
            t = now
        else:
            t = _time_param("now", now)
        if self._needs_now and t is None:
            raise ParameterError("invalid parameter now: is required to rank by score_fact")
        return Activation(self._core(anchors, None, offsets, t), self._graph)


class RecallPlan:
    """A validated seed-004 recall configuration; ``plan(anchors, match_scores)``."""

    __slots__ = ("_core", "_graph", "_identity")

    def __init__(self, graph: KnowledgeGraph, core: _core.CoreRecallPlan):
        self._graph = graph
        self._core = core
        self._identity = graph._entities.kind == "identity"

    def __call__(self, anchors: Any, match_scores: Any = None) -> Recall:
        if (
            self._identity
            and type(anchors) is np.ndarray
            and anchors.ndim == 1
            and anchors.dtype == np.int64
            and (
                match_scores is None
                or (
                    type(match_scores) is np.ndarray
                    and match_scores.dtype == np.float64
                    and match_scores.shape == anchors.shape
                )
            )
        ):
            # The fast path: one query given as arrays already in the core's dtypes.
            return Recall(self._core(anchors, match_scores, None), self._graph)
        idx, sc, off = self._graph._anchors(anchors, match_scores)
        return Recall(self._core(idx, sc, off), self._graph)

    def dense(
        self,
        anchors: npt.NDArray[np.int64],
        match_scores: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64] | None = None,
    ) -> Recall:
        """The plan on anchors given as dense entity indices (int64) with their match
        scores (float64) and per-query ``offsets`` (int64, n + 1; None: one query): no id
        lookups on the way in."""
        return Recall(self._core(anchors, match_scores, offsets), self._graph)
