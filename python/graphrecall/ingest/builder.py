"""Documents to :class:`~graphrecall.tables.GraphTables`: chunk, extract, count, build.

:class:`Ingestor` keeps the running state, so documents can be added in several calls:
ids are stable (chunks and entities get consecutive ``int`` ids in order of first
appearance and keep them), a document id seen before is skipped and counted
(``duplicate``), and :meth:`Ingestor.embed` embeds only the chunks and entity names that
have no vector yet. What is *not* revisited when documents are added: the names found in
earlier documents are not re-matched against names first seen later (a later title is
found in later documents only), and a near-duplicate merge is decided once, when the
second key is first seen.

The graph:

* **chunks**: one per chunk (:func:`~graphrecall.ingest.chunking.chunk_text`), text
  ``"title\\ntext"`` when the document has a title (``title_in_text``), metadata
  ``{"document": id, "position": n, "title": ..., **the document's metadata}``;
* **entities**: one per extracted name (:mod:`~graphrecall.ingest.extract`) and tenant, named
  by its first surface form; a document's title is an entity whose primary chunk is the
  document's first chunk;
* **mentions**: chunk -> entity with the number of occurrences (each chunk mentions its
  document's title once more);
* **facts**: ``co_occurs`` between two entities of one sentence (subject < object by id),
  strength = the number of sentences; ``mentions`` from a document's title entity to each
  entity of its chunks, strength = the number of chunks naming it;
* **aliases**: every other surface form of an entity, and the keys merged into it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from .._core import count_tokens, scan_sentences
from ..errors import ParameterError
from ..tables import EmbeddingSet, GraphTables
from .chunking import MAX_TOKENS, OVERLAP_TOKENS, Chunk, chunk_text
from .documents import (
    MAX_DOCUMENT_CHARS,
    Columns,
    Document,
    OnBad,
    ReadReport,
    read_documents,
)
from .extract import KnownNames, NameMerger, normalise, phrase_names
from .protocol import Extractor, Usage, add_extracted

#: Most entities of one sentence paired into ``co_occurs`` facts (the first ones, in order):
#: a list sentence of 40 names would otherwise add 780 facts.
MAX_SENTENCE_ENTITIES = 12

_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class IngestOptions:
    """How documents become a graph (every default is the documented one).

    Attributes:
        max_tokens: Chunk size in estimated tokens (see :mod:`.chunking`).
        overlap_tokens: Overlap between consecutive chunks of a document.
        title_in_text: Chunk text starts with the document's title and a newline.
        merge_threshold: rapidfuzz ``ratio`` (percent) at which two keys merge; 100 = never.
        known_names: Match titles and multi-word names in any case (see :mod:`.extract`).
        min_chunks: An entity that is no document's title enters the tables only once it is
            named in at least this many chunks (1 = all: on the eval sets, 2 lowered ppr
            R@5); the counts are kept, so a later document can bring an entity in.
        cooccurrence: Add ``co_occurs`` facts.
        title_edges: Add ``mentions`` facts from titles.
        max_chars: Largest document accepted, in characters.
        on_bad: ``"raise"`` at the first bad input, or ``"skip"`` and count it.
    """

    max_tokens: int = MAX_TOKENS
    overlap_tokens: int = OVERLAP_TOKENS
    title_in_text: bool = True
    merge_threshold: float = 92.0
    known_names: bool = True
    min_chunks: int = 1
    cooccurrence: bool = True
    title_edges: bool = True
    max_chars: int = MAX_DOCUMENT_CHARS
    on_bad: OnBad = "raise"


@dataclass
class IngestReport:
    """Counts of one :meth:`Ingestor.add` call: documents read and skipped (by kind, with
    where and why), chunks, new entities and facts."""

    documents: int = 0
    chunks: int = 0
    new_entities: int = 0
    skipped: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)  # the extractor's requests and tokens

    @property
    def n_skipped(self) -> int:
        """How many documents were skipped, all kinds together."""
        return sum(len(v) for v in self.skipped.values())


def _scan(texts: list[str]) -> Iterator[list[tuple[str, list[tuple[str, str]]]]]:
    """Each text's sentences with their names (:func:`.chunking.split_sentences` and
    :func:`.extract.sentence_names`), the regex passes done by one call of the Rust kernel
    ``scan_sentences``."""
    text_off, sent, sent_off, phr = (a.tolist() for a in scan_sentences(texts))
    for t, text in enumerate(texts):
        out = []
        for s in range(text_off[t], text_off[t + 1]):
            a, b = sent[s]
            sentence = text[a:b]
            out.append((sentence, phrase_names(sentence, phr[sent_off[s] : sent_off[s + 1]])))
        yield out


def _title_key(title: str) -> str:
    return normalise(_QUALIFIER.sub("", title))


class Ingestor:
    """Incremental documents-to-graph state (see the module doc).

    Args:
        options: The ingestion options (defaults when None).
        extractor: Adds its entities and triples to each added chunk (see :mod:`.protocol`).

    Example:
        >>> ing = Ingestor()
        >>> _ = ing.add(["Ada Lovelace worked with Charles Babbage in London."])
        >>> sorted(ing.tables().entities["name"])
        ['Ada Lovelace', 'Charles Babbage', 'London']
    """

    def __init__(
        self, options: IngestOptions | None = None, extractor: Extractor | None = None
    ) -> None:
        self.options = options or IngestOptions()
        self.extractor = extractor  # adds triples to the offline graph (see .protocol)
        self.relations: dict[str, Counter[tuple[int, int]]] = {}  # the extractor's facts
        o = self.options
        self._merger = NameMerger(o.merge_threshold)
        self._known: dict[Hashable, KnownNames] = {}
        self._docs: set[tuple[Hashable, Hashable]] = set()
        self._anonymous = 0
        # chunks
        self.chunk_text: list[str] = []
        self.chunk_tenant: list[Hashable] = []
        self.chunk_meta: list[dict[str, Any]] = []
        # entities: (tenant, key) -> id
        self._ent: dict[tuple[Hashable, str], int] = {}
        self.entity_name: list[str] = []
        self.entity_tenant: list[Hashable] = []
        self.entity_primary: list[int | None] = []
        self._surfaces: list[set[str]] = []
        self.mentions: Counter[tuple[int, int]] = Counter()
        self.cooccurs: Counter[tuple[int, int]] = Counter()
        self.title_links: Counter[tuple[int, int]] = Counter()
        self.chunk_vectors: dict[int, npt.NDArray[np.float32]] = {}
        self.entity_vectors: dict[int, npt.NDArray[np.float32]] = {}
        self.model: str | None = None

    # ------------------------------------------------------------------ adding documents

    def _entity(self, tenant: Hashable, key: str, surface: str) -> int:
        # A key seen before in this tenant maps straight to its entity (a merged key was
        # registered under its canonical entity's id when first resolved).
        eid = self._ent.get((tenant, key))
        if eid is None:
            canon = self._merger.resolve(key)
            eid = self._ent.get((tenant, canon))
            if eid is None:
                eid = len(self.entity_name)
                self._ent[(tenant, canon)] = eid
                self.entity_name.append(surface)
                self.entity_tenant.append(tenant)
                self.entity_primary.append(None)
                self._surfaces.append(set())
            if canon != key:
                self._ent.setdefault((tenant, key), eid)
        if surface != self.entity_name[eid]:
            self._surfaces[eid].add(surface)
        return eid

    def entity_id(self, name: str, tenant: Hashable | None = None) -> int | None:
        """The id of the entity named ``name`` (any case or known alias), None if none."""
        key = normalise(name)
        eid = self._ent.get((tenant, key))
        if eid is None:
            eid = self._ent.get((tenant, self._merger.canonical.get(key, key)))
        return eid

    def add(
        self, source: Any, *, columns: Columns | None = None, report: IngestReport | None = None
    ) -> IngestReport:
        """Reads ``source`` (anything :func:`~graphrecall.ingest.read_documents` reads) and
        adds its documents.

        Returns:
            The counts of this call.

        Raises:
            DataError: A bad input under ``on_bad="raise"`` (nothing of ``source`` is added
                then: documents are read in full before any is added).
        """
        o = self.options
        rep = report or IngestReport()
        rr = ReadReport()
        docs = list(
            read_documents(
                source, columns=columns, max_chars=o.max_chars, on_bad=o.on_bad, report=rr
            )
        )
        for kind, items in rr.skipped.items():
            rep.skipped.setdefault(kind, []).extend(items)
        n_ent = len(self.entity_name)
        n_chunks = len(self.chunk_text)
        # Pass 1: chunks, sentences and capitalised names (sentences and phrase spans of
        # every chunk from one call of the Rust kernel); titles and multi-word names become
        # known names of their tenant.
        chunked: list[tuple[Document, list[Chunk]]] = []
        n_tokens = count_tokens([d.text for d in docs]).tolist()
        for doc, n_tok in zip(docs, n_tokens, strict=True):
            if doc.id is None:
                self._anonymous += 1
                doc = Document(doc.text, f"#{self._anonymous}", doc.title, doc.tenant, doc.metadata)
            dkey = (doc.tenant, doc.id)
            if dkey in self._docs:
                rep.skipped.setdefault("duplicate", []).append(
                    (str(doc.id), "a document with this id (and tenant) was added before")
                )
                continue
            self._docs.add(dkey)
            chunks = chunk_text(doc.text, o.max_tokens, o.overlap_tokens, n_tokens=n_tok)
            if not chunks:
                rep.skipped.setdefault("empty", []).append((str(doc.id), "blank text"))
                continue
            chunked.append((doc, chunks))
        scanned = _scan([ch.text for _, chunks in chunked for ch in chunks])
        staged: list[tuple[Document, int, list[list[tuple[str, list[tuple[str, str]]]]]]] = []
        for doc, chunks in chunked:
            known = self._known.setdefault(doc.tenant, KnownNames())
            first = len(self.chunk_text)
            per_chunk = []
            for ch in chunks:
                sents = next(scanned)
                if o.known_names:
                    for _, names in sents:
                        for k, _ in names:
                            if " " in k:
                                known.add(k)
                per_chunk.append(sents)
                text = f"{doc.title}\n{ch.text}" if doc.title and o.title_in_text else ch.text
                meta: dict[str, Any] = {"document": doc.id, "position": ch.position}
                if doc.title is not None:
                    meta["title"] = doc.title
                if doc.metadata:
                    meta.update(doc.metadata)
                self.chunk_text.append(text)
                self.chunk_tenant.append(doc.tenant)
                self.chunk_meta.append(meta)
            if doc.title and o.known_names:
                tk = _title_key(doc.title)
                if len(tk) >= 3:
                    known.add(tk)
            staged.append((doc, first, per_chunk))
            rep.documents += 1
            rep.chunks += len(chunks)
        # Pass 2: known names of every sentence (one Rust call per tenant), then entities,
        # mentions and facts.
        found: dict[Hashable, Iterator[list[str]]] = {}
        if o.known_names:
            by_tenant: dict[Hashable, list[str]] = {}
            for doc, _, per_chunk in staged:
                by_tenant.setdefault(doc.tenant, []).extend(
                    s for sents in per_chunk for s, _ in sents
                )
            found = {t: iter(self._known[t].find_all(ss)) for t, ss in by_tenant.items()}
        seen: dict[Hashable, dict[tuple[str, str], int]] = {}
        for doc, first, per_chunk in staged:
            self._link(
                doc, first, per_chunk, found.get(doc.tenant), seen.setdefault(doc.tenant, {})
            )
        add_extracted(self, range(n_chunks, len(self.chunk_text)), rep)
        rep.new_entities = len(self.entity_name) - n_ent
        return rep

    def _link(
        self,
        doc: Document,
        first: int,
        per_chunk: list[list[tuple[str, list[tuple[str, str]]]]],
        known: Iterator[list[str]] | None,
        seen: dict[tuple[str, str], int],
    ) -> None:
        """Adds the entities, mentions and facts of one document's chunks; ``known``
        gives the known names of each of its sentences in order (None: not matched);
        ``seen`` caches ``_entity(tenant, key, surface)`` of this tenant (a repeated call
        returns the same id and changes nothing, so it is skipped)."""
        o = self.options
        tenant = doc.tenant
        title_eid = None
        if doc.title:
            tk = _title_key(doc.title)
            if tk:
                title_eid = self._entity(tenant, tk, _QUALIFIER.sub("", doc.title).strip())
                if self.entity_primary[title_eid] is None:
                    self.entity_primary[title_eid] = first
        # Sentence keys, then the document's short-form aliases ("Obama" -> "Barack Obama").
        sent_keys: list[list[list[tuple[str, str]]]] = []
        last_word: dict[str, str | None] = {}
        for sents in per_chunk:
            ck = []
            for _, names in sents:
                keys = names
                if known is not None:
                    found = next(known)
                    if found:
                        have = {k for k, _ in names}
                        keys = names + [(k, k) for k in found if k not in have]
                for k, _ in keys:
                    if " " in k:
                        w = k.rsplit(" ", 1)[1]
                        last_word[w] = k if last_word.get(w, k) == k else None
                ck.append(keys)
            sent_keys.append(ck)
        entity = self._entity
        surfaces = self._surfaces
        cooccurs = self.cooccurs if o.cooccurrence else None
        for c, ck in enumerate(sent_keys):
            chunk = first + c
            in_chunk: set[int] = set()
            named = [] if title_eid is None else [title_eid]  # one entry per mention
            for keys in ck:
                ids: list[int] = []
                for k, surface in keys:
                    full = last_word.get(k) if " " not in k else None
                    if full:
                        eid = entity(tenant, full, full)
                        surfaces[eid].add(surface)
                    else:
                        eid = seen.get((k, surface), -1)
                        if eid < 0:
                            eid = seen[(k, surface)] = entity(tenant, k, surface)
                    named.append(eid)
                    if eid not in ids:
                        ids.append(eid)
                in_chunk.update(ids)
                if cooccurs is not None and len(ids) > 1:
                    cooccurs.update(
                        [
                            (a, b) if a < b else (b, a)
                            for a, b in combinations(ids[:MAX_SENTENCE_ENTITIES], 2)
                        ]
                    )
            self.mentions.update([(chunk, eid) for eid in named])
            if o.title_edges and title_eid is not None:
                self.title_links.update([(title_eid, eid) for eid in in_chunk if eid != title_eid])

    # ------------------------------------------------------------------ vectors and tables

    def embed(self, embedder: Any, batch_size: int = 64) -> int:
        """Embeds the chunks and entity names that have no vector yet (``embed_passages``).

        Returns:
            How many texts were embedded.
        """
        name = getattr(embedder, "name", None) or type(embedder).__name__
        if self.model is not None and name != self.model:
            raise ParameterError(
                f"invalid parameter embedder: the stored vectors are {self.model!r}'s, not "
                f"{name!r}'s",
                parameter="embedder",
                kind="invalid_parameter",
            )
        self.model = name
        n = 0
        for texts, store in (
            (self.chunk_text, self.chunk_vectors),
            (self.entity_name, self.entity_vectors),
        ):
            todo = [i for i in range(len(texts)) if i not in store]
            for a in range(0, len(todo), batch_size):
                part = todo[a : a + batch_size]
                vecs = np.asarray(embedder.embed_passages([texts[i] for i in part]), np.float32)
                for i, v in zip(part, vecs, strict=True):
                    store[i] = v
            n += len(todo)
        return n

    def tables(self) -> GraphTables:
        """The graph so far as tables (unchecked: :meth:`GraphTables.check` validates)."""
        tenants = any(t is not None for t in self.chunk_tenant)
        n_chunks = np.bincount(
            np.fromiter((e for _, e in self.mentions), np.int64, len(self.mentions)),
            minlength=len(self.entity_name),
        )
        has_title = np.array([p is not None for p in self.entity_primary], dtype=bool)
        keep = (n_chunks >= self.options.min_chunks) | has_title
        kept = np.flatnonzero(keep)
        entities: dict[str, Any] = {
            "id": kept.astype(np.int64),
            "name": [self.entity_name[i] for i in kept],
            "primary_chunk": [self.entity_primary[i] for i in kept],
        }
        chunks: dict[str, Any] = {
            "id": np.arange(len(self.chunk_text), dtype=np.int64),
            "text": list(self.chunk_text),
            "metadata": list(self.chunk_meta),
        }
        if tenants:
            entities["tenant"] = [self.entity_tenant[i] for i in kept]
            chunks["tenant"] = list(self.chunk_tenant)
        subj: list[int] = []
        obj: list[int] = []
        pred: list[str] = []
        strength: list[float] = []
        own = ((self.cooccurs, "co_occurs"), (self.title_links, "mentions"))
        for counter, p in (*own, *((c, p) for p, c in self.relations.items())):
            for (a, b), n in counter.items():
                if not (keep[a] and keep[b]):
                    continue
                subj.append(a)
                obj.append(b)
                pred.append(p)
                strength.append(float(n))
        nf = len(subj)
        facts: dict[str, Any] = {
            "id": np.arange(nf, dtype=np.int64),
            "subject": np.array(subj, dtype=np.int64),
            "object": obj,
            "predicate": pred,
            "strength": np.array(strength),
            "status": ["confirmed"] * nf,
            "source": ["system"] * nf,
        }
        ms = [(c, e, n) for (c, e), n in self.mentions.items() if keep[e]]
        mentions = {
            "chunk": np.array([m[0] for m in ms], dtype=np.int64),
            "entity": np.array([m[1] for m in ms], dtype=np.int64),
            "count": np.array([m[2] for m in ms], dtype=np.int64),
        }
        al_e: list[int] = []
        al_a: list[str] = []
        for eid, forms in enumerate(self._surfaces):
            if not keep[eid]:
                continue
            name = self.entity_name[eid].casefold()
            for f in sorted(forms):
                if f.casefold() != name:
                    al_e.append(eid)
                    al_a.append(f)
        embeddings = []
        for kind, store in (("chunk", self.chunk_vectors), ("entity", self.entity_vectors)):
            if store:
                ids = np.array(
                    sorted(i for i in store if kind == "chunk" or keep[i]), dtype=np.int64
                )
                embeddings.append(
                    EmbeddingSet(kind, ids, np.stack([store[int(i)] for i in ids]), self.model)  # type: ignore[arg-type]
                )
        return GraphTables(
            entities=entities,
            facts=facts,
            chunks=chunks,
            mentions=mentions,
            aliases={"entity": np.array(al_e, dtype=np.int64), "alias": np.array(al_a, object)},
            embeddings=embeddings,
        )


def ingest(
    source: Any,
    *,
    columns: Columns | None = None,
    options: IngestOptions | None = None,
    embedder: Any = None,
    report: IngestReport | None = None,
    extractor: Extractor | None = None,
    **kwargs: Any,
) -> GraphTables:
    """Documents to graph tables in one call (an :class:`Ingestor` used once).

    Args:
        source: Anything :func:`~graphrecall.ingest.read_documents` reads: a file or folder
            of text / Markdown / JSONL / Parquet, a DataFrame, or an iterable of texts,
            :class:`Document` s or records.
        columns: Which columns hold the text, title, id, tenant and metadata.
        options: The :class:`IngestOptions`; ``**kwargs`` override single fields of it.
        embedder: When given, chunks and entity names are embedded and stored.
        report: Receives the counts (documents, chunks, skipped inputs by kind).
        extractor: Adds its entities and triples to the offline graph (see
            :mod:`graphrecall.ingest.protocol`), e.g. an
            :class:`~graphrecall.ingest.llm.OpenAIExtractor`.

    Returns:
        The tables (unchecked).

    Raises:
        DataError: A bad input under ``on_bad="raise"``.
        ParameterError: An unknown option or a bad value.
    """
    opts = options or IngestOptions()
    if kwargs:
        known = set(IngestOptions.__dataclass_fields__)
        bad = sorted(set(kwargs) - known)
        if bad:
            raise ParameterError(
                f"invalid parameter {bad[0]}: not an ingest option (options: {sorted(known)})",
                parameter=bad[0],
                kind="invalid_parameter",
            )
        opts = IngestOptions(**{**opts.__dict__, **kwargs})
    ing = Ingestor(opts, extractor)
    ing.add(source, columns=columns, report=report)
    if embedder is not None:
        ing.embed(embedder)
    return ing.tables()
