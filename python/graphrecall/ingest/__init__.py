"""Documents to a knowledge graph without an LLM: read (:mod:`.documents`), chunk
(:mod:`.chunking`), extract names (:mod:`.extract`) and build tables (:mod:`.builder`).

Example:
    >>> from graphrecall.ingest import ingest
    >>> tables = ingest(["Marie Curie was born in Warsaw. Curie moved to Paris."])
    >>> sorted(tables.entities["name"])
    ['Marie Curie', 'Paris', 'Warsaw']
"""

from __future__ import annotations

from .builder import IngestOptions, Ingestor, IngestReport, ingest
from .chunking import MAX_TOKENS, OVERLAP_TOKENS, Chunk, chunk_text, count_tokens, split_sentences
from .documents import MAX_DOCUMENT_CHARS, Columns, Document, ReadReport, read_documents
from .extract import KnownNames, NameMerger, normalise, sentence_names
from .llm import OpenAIExtractor
from .protocol import Extraction, Extractor, ExtractorError, OfflineExtractor, Usage

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "MAX_TOKENS",
    "OVERLAP_TOKENS",
    "Chunk",
    "Columns",
    "Document",
    "Extraction",
    "Extractor",
    "ExtractorError",
    "IngestOptions",
    "IngestReport",
    "Ingestor",
    "KnownNames",
    "NameMerger",
    "OfflineExtractor",
    "OpenAIExtractor",
    "ReadReport",
    "Usage",
    "chunk_text",
    "count_tokens",
    "ingest",
    "normalise",
    "read_documents",
    "sentence_names",
    "split_sentences",
]
