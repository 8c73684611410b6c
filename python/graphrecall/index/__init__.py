"""The retrieval index: a :class:`KnowledgeGraph` with everything a recipe reads beside it.

:class:`GraphIndex` is built once from checked :class:`~graphrecall.storage.GraphTables`
(from SQLite, PostgreSQL, DuckDB, Parquet or records) and holds, all aligned with the graph's
dense indices:

* the compiled graph (Rust core: CSR adjacency, facts, chunks, mentions);
* text and metadata columns (entity names, types, descriptions, primary chunks; fact
  predicates, literal values, descriptions; chunk texts, tiers, tags, metadata, times) —
  numbers go to Rust, text stays here;
* the mention links in both directions as numpy CSR arrays;
* anchor indexes: vectors over entity names and over chunk texts
  (:class:`~graphrecall.anchors.vectors.VectorIndex`), a name / alias index for query entity
  recognition and fuzzy matching (:class:`~graphrecall.anchors.names.NameIndex`), BM25 over
  chunks (:class:`~graphrecall.anchors.keyword.BM25Index`).

Embeddings are taken from the tables when they hold a complete set for a kind (the source
designs all store them), else computed once at build, in batches, with the embedder
:meth:`GraphIndex.embedding_sets` returns them for storage so
nobody embeds twice.

The package holds :mod:`.columns` (per-row tables read by hits: mention links, fact
columns), :mod:`.vectors` (stored, reused or embedded vectors), :mod:`.appended` (what an
update reuses from the previous index), :mod:`.fact_changes` (the fact rows a live change
recorded) and :mod:`.graph_index` (:class:`GraphIndex`);
saving and loading is :mod:`graphrecall.index_io`.
"""

from ..embed import resolve_embedder
from .columns import FactTable, MentionLinks
from .graph_index import EXACT_BELOW, EXPANSION_SEARCH, GraphIndex, VectorBackend

__all__ = [
    "EXACT_BELOW",
    "EXPANSION_SEARCH",
    "FactTable",
    "GraphIndex",
    "MentionLinks",
    "VectorBackend",
    "resolve_embedder",
]
