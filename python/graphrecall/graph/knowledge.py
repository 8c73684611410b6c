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

from .. import _core
from ..errors import DataError, UnknownTenantError
from ..results import Activation, PageRank, Recall
from ..scoring import FactScoreProfile
from ..tables.constants import DEFAULT_SOURCES, DEFAULT_STATUSES
from ..tables.faults import parameter_error
from ..tables.ids import IdMap, Vocab
from ..tables.mapping import ColumnMapping
from .boost import mention_boost
from .build import GraphParts, encode_arrays, encode_tables
from .params import (
    _U32_MAX,
    Direction,
    _bool_param,
    _direction,
    _float_param,
    _int_param,
    _opt_float,
    _opt_int,
    anchor_batch,
    filters,
    freeze,
)
from .plans import RecallPlan, SpreadPlan
from .records import dataframe_columns, fact_records, record_columns

if TYPE_CHECKING:
    import pandas as pd

    from ..tables import GraphTables

__all__ = ["KnowledgeGraph"]


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
            entity_tenant: Tenant of each entity (str or int names; the distinct names,
                sorted, get dense codes), or codes of ``tenants``; all 0 when omitted.
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
            chunk_tenant, chunk_ids, n_chunks: Chunks (passages / memories); a chunk's
                tenant is one of the entities' tenants, by name (by code with ``tenants``).
            mention_chunk, mention_entity, mention_count: Chunk-entity mentions.
            statuses, sources: Vocabularies (names by code).
            predicates: Predicate vocabulary when ``predicate`` holds codes; learned from
                the names otherwise.
            tenants: Tenant vocabulary when the tenant columns hold its codes.

        Raises:
            DataError: A precise message naming the table, row and column of the first
                problem (dangling ids, NaN weights, unknown codes, cross-tenant facts...).
        """
        return cls._of(
            encode_arrays(
                fact_subject=fact_subject,
                fact_object=fact_object,
                entity_tenant=entity_tenant,
                n_entities=n_entities,
                entity_ids=entity_ids,
                entity_names=entity_names,
                fact_ids=fact_ids,
                predicate=predicate,
                confidence=confidence,
                strength=strength,
                status=status,
                source=source,
                access_count=access_count,
                last_accessed=last_accessed,
                created_at=created_at,
                valid_from=valid_from,
                valid_to=valid_to,
                sequence=sequence,
                object_value=object_value,
                chunk_tenant=chunk_tenant,
                chunk_ids=chunk_ids,
                n_chunks=n_chunks,
                mention_chunk=mention_chunk,
                mention_entity=mention_entity,
                mention_count=mention_count,
                statuses=statuses,
                sources=sources,
                predicates=predicates,
                tenants=tenants,
            )
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
        return cls.from_arrays(**record_columns(entities, facts, chunks, mentions), **vocabularies)

    @classmethod
    def from_dataframes(
        cls,
        entities: pd.DataFrame,
        facts: pd.DataFrame,
        chunks: pd.DataFrame | None = None,
        mentions: pd.DataFrame | None = None,
        *,
        columns: Mapping[str, Any] | ColumnMapping | None = None,
        **vocabularies: Any,
    ) -> KnowledgeGraph:
        """Build from pandas DataFrames with the column names of :meth:`from_records`.

        ``columns`` names the user's columns (ours -> theirs): a
        :class:`~graphrecall.tables.mapping.ColumnMapping` (its column names and value
        maps; the loaders' mapping), or a dict whose keys are table-qualified or plain
        names, e.g. ``{"strength": "weight"}`` or ``{"facts.subject": "src"}``. A named
        column missing from its frame is not read.
        """
        cols = dataframe_columns(entities, facts, chunks, mentions, columns)
        return cls.from_arrays(**cols, **vocabularies)

    @classmethod
    def from_tables(cls, tables: GraphTables, *, release: bool = False) -> KnowledgeGraph:
        """Build from tables that :meth:`GraphTables.check
        <graphrecall.tables.GraphTables.check>` returned, without checking them again
        (``tables.to_graph()`` checks, then calls this).

        Args:
            tables: Checked tables.
            release: Take each column out of ``tables`` as it is encoded (they are left
                empty), so that tables nobody else holds shrink while the graph grows.

        Raises:
            DataError: If the tables were not checked and hold bad rows.
        """
        return cls._of(encode_tables(tables, release=release))

    @classmethod
    def _of(cls, parts: GraphParts) -> KnowledgeGraph:
        return cls(
            parts.core,
            entities=parts.entities,
            facts=parts.facts,
            chunks=parts.chunks,
            statuses=parts.statuses,
            sources=parts.sources,
            predicates=parts.predicates,
            tenants=parts.tenants,
            entity_names=parts.entity_names,
            object_values=parts.object_values,
        )

    # ------------------------------------------------------------------ inspection

    @property
    def core(self) -> _core.CoreGraph:
        """The compiled graph in the Rust core (numbers only: dense indices and codes),
        for kernels that take it directly."""
        return self._core

    @property
    def entity_map(self) -> IdMap:
        """External entity ids <-> dense indices."""
        return self._entities

    @property
    def fact_map(self) -> IdMap:
        """External fact ids <-> dense indices."""
        return self._facts

    @property
    def chunk_map(self) -> IdMap:
        """External chunk ids <-> dense indices."""
        return self._chunks

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
        """Code of a tenant name (UnknownTenantError if the graph holds no such tenant).

        A tenant is always looked up by name: ``1`` names tenant 1 of a graph whose tenants
        are ints, and no tenant of a graph whose tenants are ``"A"``, ``"B"``."""
        try:
            return self.tenants.name_code(tenant)
        except DataError:
            raise UnknownTenantError(
                f"unknown tenant {tenant!r}; the graph holds {list(self.tenants.names)!r}",
                kind="unknown_tenant",
                input=tenant,
                ctx={"tenants": list(self.tenants.names)},
            ) from None

    def facts(self, ids: Iterable[Hashable]) -> list[dict[str, Any]]:
        """The stored rows of facts, with names for codes and external ids."""
        return fact_records(self, self.fact_index(ids))

    def adjacency(self, entity: Hashable) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """(out-facts, in-facts) of an entity, confidence desc then id asc, as fact ids."""
        e = int(self.entity_index([entity])[0])
        out, inn = self._core.adjacency(e)
        return self._facts.to_external(out), self._facts.to_external(inn)

    # ------------------------------------------------------------------ queries

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
            raise parameter_error("rank", f"{rank!r} is not one of None, 'score_fact', 'composite'")
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
            **filters(self, statuses, predicates, min_confidence, as_of, max_sequence, tenant),
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
            raise parameter_error("dedupe", f"{dedupe!r} is not one of 'fact', 'triple'")
        core = self._core.recall_plan(
            max_hops=_int_param("max_hops", max_hops, 0, 64),
            direction=_direction(direction),
            top_k=_int_param("top_k", top_k, 1, 2**62),
            dedupe=dedupe,
            **filters(self, statuses, predicates, min_confidence, as_of, max_sequence, tenant),
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
        idx, w, offsets = anchor_batch(self._entities, seeds, weights, "seeds")
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
            **filters(self, statuses, predicates, min_confidence, as_of, max_sequence, tenant),
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

        return mention_boost(
            self,
            chunks,
            similarity,
            query_entities,
            related,
            related_distance,
            related_strength,
            direct=direct,
            indirect=indirect,
            use_strength=use_strength,
            centrality=centrality,
        )

    def _cached_plan(self, kind: str, params: dict[str, Any]) -> SpreadPlan | RecallPlan:
        """The plan for these parameters, built once and kept (at most 64 kept)."""
        try:
            key = (kind, *sorted((k, freeze(v)) for k, v in params.items()))
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
                try:  # another thread may evict the same plan first
                    self._plans.pop(next(iter(self._plans)), None)
                except (StopIteration, RuntimeError):
                    pass
            self._plans[key] = plan
        return plan

    def __repr__(self) -> str:
        return (
            f"KnowledgeGraph(entities={self.n_entities}, facts={self.n_facts}, "
            f"chunks={self.n_chunks}, tenants={self.n_tenants})"
        )
