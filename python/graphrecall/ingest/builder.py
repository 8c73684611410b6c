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
from collections.abc import Hashable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from .._core import count_tokens, link_call_order, link_names, scan_names
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
from .extract import KnownNames, NameMerger, find_known_keys, learn_names, normalise
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


def _pairs(
    counter: Counter[tuple[int, int]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The ``(n, 2)`` pairs and the counts of ``counter``, in its order."""
    n = len(counter)
    ab = np.fromiter(chain.from_iterable(counter), np.int64, 2 * n).reshape(n, 2)
    return ab, np.fromiter(counter.values(), np.int64, n)


def _merge(counter: Counter[tuple[int, int]], rows: npt.NDArray[np.int64]) -> None:
    """Adds the ``(a, b, count)`` rows to ``counter``, new pairs in row order."""
    if not len(rows):
        return
    a, b, n = rows.T.tolist()
    items = zip(zip(a, b, strict=True), n, strict=True)
    if not counter:
        dict.update(counter, items)
        return
    get = counter.get
    for k, v in items:
        counter[k] = get(k, 0) + v


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
        # (a, b) -> count of mentions, co-occurrences and title links: a Counter each, and
        # the (a, b, count) rows of the batches not merged into it yet (see _counter).
        self._counters: dict[str, Counter[tuple[int, int]]] = {
            k: Counter() for k in ("mentions", "cooccurs", "title_links")
        }
        self._pending: dict[str, list[npt.NDArray[np.int64]]] = {k: [] for k in self._counters}
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
        # A text of at most max_tokens tokens is one chunk, its text stripped (chunk_text's
        # own first case), taken here without the call when the options are valid (else
        # chunk_text raises their error).
        short = o.max_tokens if 0 <= o.overlap_tokens < o.max_tokens else -1
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
            if n_tok <= short:
                stripped = doc.text.strip()
                chunks = [Chunk(stripped, 0)] if stripped else []
            else:
                chunks = chunk_text(doc.text, o.max_tokens, o.overlap_tokens, n_tokens=n_tok)
            if not chunks:
                rep.skipped.setdefault("empty", []).append((str(doc.id), "blank text"))
                continue
            chunked.append((doc, chunks))
        self._extract(chunked, rep)
        add_extracted(self, range(n_chunks, len(self.chunk_text)), rep)
        rep.new_entities = len(self.entity_name) - n_ent
        return rep

    def _extract(self, chunked: list[tuple[Document, list[Chunk]]], rep: IngestReport) -> None:
        """Adds the chunks of ``chunked`` with their entities, mentions and facts.

        Sentences and names (trimmed, normalised, interned) of every chunk come from one
        call of the Rust kernel ``scan_names``; titles and multi-word names become known
        names of their tenant (in document order: the first key with given words wins),
        found in every sentence by ``find_known_names``; the walk over documents, chunks
        and sentences (entity of each mention, a single word standing for the document's
        multi-word name, co-occurrence and title-link counts) runs in ``link_call_order``
        and ``link_names``. Between those two, near-duplicate keys are resolved by
        :class:`NameMerger` in the order in which their entities are first asked for.
        """
        o = self.options
        if not chunked:
            return
        texts = [ch.text for _, chunks in chunked for ch in chunks]
        text_off, spans, sent_off, name_key, name_surface, keys, forms = scan_names(texts)
        first_chunk = len(self.chunk_text)
        tid: dict[Hashable, int] = {}
        doc_tenant = np.empty(len(chunked), np.int64)
        doc_chunks = np.zeros(len(chunked) + 1, np.int64)
        for d, (doc, chunks) in enumerate(chunked):
            doc_tenant[d] = tid.setdefault(doc.tenant, len(tid))
            doc_chunks[d + 1] = doc_chunks[d] + len(chunks)
            self._known.setdefault(doc.tenant, KnownNames())
            head = f"{doc.title}\n" if doc.title and o.title_in_text else ""
            base: dict[str, Any] = {"document": doc.id}
            tail: dict[str, Any] = {} if doc.title is None else {"title": doc.title}
            if doc.metadata:
                tail.update(doc.metadata)
            self.chunk_text.extend([head + ch.text for ch in chunks])
            self.chunk_tenant.extend([doc.tenant] * len(chunks))
            self.chunk_meta.extend([{**base, "position": ch.position, **tail} for ch in chunks])
            rep.documents += 1
            rep.chunks += len(chunks)
        tenants = list(tid)
        kid = {k: i for i, k in enumerate(keys)}
        sid = {f: i for i, f in enumerate(forms)}
        # Titles: a key and surface form of each document that has one.
        t_key: list[int] = []
        t_surface: list[int] = []
        title_known: list[str | None] = []
        for doc, _ in chunked:
            title = doc.title
            bare = _QUALIFIER.sub("", title) if title and ")" in title else title or ""
            tk = normalise(bare)  # _title_key(doc.title), the qualifier stripped once
            title_known.append(tk if len(tk) >= 3 else None)
            t_key.append(kid.setdefault(tk, len(kid)) if tk else -1)
            t_surface.append(sid.setdefault(bare.strip(), len(sid)) if tk else -1)
        title_key = np.array(t_key, np.int64)
        title_surface = np.array(t_surface, np.int64)
        sentence_known = np.zeros(0, np.int64)
        known_key = np.zeros(0, np.int64)
        if o.known_names:
            chunk_doc = np.repeat(np.arange(len(chunked)), np.diff(doc_chunks))
            sent_doc = np.repeat(chunk_doc, np.diff(text_off))
            name_doc = np.repeat(sent_doc, np.diff(sent_off))
            knowns = [self._known[t] for t in tenants]
            learn_names(knowns, keys, name_key, name_doc, doc_tenant, title_known)
            sentence_known, known_key = find_known_keys(
                knowns, texts, text_off, spans, doc_tenant[sent_doc], kid
            )
        # Every key's last word (keys with a space) and the key as a surface form.
        keys = list(kid)
        last_word = np.array(
            [kid.setdefault(k.rsplit(" ", 1)[1], len(kid)) if " " in k else -1 for k in keys],
            np.int64,
        )
        keys = list(kid)
        last_word = np.concatenate([last_word, np.full(len(keys) - len(last_word), -1, np.int64)])
        key_surface = np.fromiter((sid.setdefault(k, len(sid)) for k in keys), np.int64, len(keys))
        arrays = (
            doc_tenant,
            title_key,
            title_surface,
            doc_chunks,
            text_off,
            sent_off,
            name_key,
            name_surface,
            sentence_known,
            known_key,
            last_word,
            key_surface,
        )
        # Each (tenant, key) asked for: its entity so far and its canonical key's.
        ent = self._ent
        resolve = self._merger.resolve
        # (Each step runs over all calls in their order: resolve and kid.setdefault see the
        # keys in the same order as one loop would, and ent does not change in between.)
        call = link_call_order(arrays, len(sid))
        call_t = [tenants[t] for t in call[:, 0].tolist()]
        call_k = [keys[k] for k in call[:, 1].tolist()]
        get = ent.get
        canon = [resolve(k) for k in call_k]
        p_ent = np.array([get(tk, -1) for tk in zip(call_t, call_k, strict=True)], np.int64)
        p_canon = np.array([kid.setdefault(c, len(kid)) for c in canon], np.int64)
        p_canon_ent = np.array([get(tc, -1) for tc in zip(call_t, canon, strict=True)], np.int64)
        if len(kid) > len(keys):
            extra = np.full(len(kid) - len(keys), -1, np.int64)
            last_word = np.concatenate([last_word, extra])
            key_surface = np.concatenate([key_surface, extra])
            arrays = (*arrays[:10], last_word, key_surface)
            keys = list(kid)
        new, registered, surfaces, title_entity, mentions, cooccurs, title_links = link_names(
            arrays,
            len(sid),
            first_chunk,
            p_ent,
            p_canon,
            p_canon_ent,
            len(self.entity_name),
            o.cooccurrence,
            o.title_edges,
            MAX_SENTENCE_ENTITIES,
        )
        forms = list(sid)
        if len(new):
            new_t, new_f = new.T.tolist()
            self.entity_name.extend([forms[f] for f in new_f])
            self.entity_tenant.extend([tenants[t] for t in new_t])
            self.entity_primary.extend([None] * len(new_f))
            self._surfaces.extend([set() for _ in new_f])
        for t, k, e in registered.tolist():
            ent[(tenants[t], keys[k])] = e
        names = self.entity_name
        sets = self._surfaces
        for e, f, always in surfaces.tolist():
            form = forms[f]
            if always or form != names[e]:
                sets[e].add(form)
        primary = self.entity_primary
        for first, e in zip(doc_chunks[:-1].tolist(), title_entity.tolist(), strict=True):
            if e >= 0 and primary[e] is None:
                primary[e] = first_chunk + first
        for name, rows in (
            ("mentions", mentions),
            ("cooccurs", cooccurs),
            ("title_links", title_links),
        ):
            if len(rows):
                self._pending[name].append(rows)

    def _counter(self, name: str) -> Counter[tuple[int, int]]:
        """The counter ``name`` with every pending batch merged into it."""
        counter = self._counters[name]
        for rows in self._pending[name]:
            _merge(counter, rows)
        self._pending[name].clear()
        return counter

    def _pair_arrays(self, name: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """:func:`_pairs` of the counter ``name``, straight from the batch's rows when one
        batch is all there is (the rows are the counter's items in its order)."""
        pending = self._pending[name]
        if not self._counters[name] and len(pending) == 1:
            return pending[0][:, :2], pending[0][:, 2]
        return _pairs(self._counter(name))

    @property
    def mentions(self) -> Counter[tuple[int, int]]:
        """``(chunk, entity)`` -> the number of mentions."""
        return self._counter("mentions")

    @property
    def cooccurs(self) -> Counter[tuple[int, int]]:
        """``(entity, entity)`` -> the number of sentences naming both (smaller id first)."""
        return self._counter("cooccurs")

    @property
    def title_links(self) -> Counter[tuple[int, int]]:
        """``(title entity, entity)`` -> the number of the title's chunks naming it."""
        return self._counter("title_links")

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
        men, men_n = self._pair_arrays("mentions")
        n_chunks = np.bincount(men[:, 1], minlength=len(self.entity_name))
        has_title = np.array([p is not None for p in self.entity_primary], dtype=bool)
        keep = (n_chunks >= self.options.min_chunks) | has_title
        kept = np.flatnonzero(keep)
        entities: dict[str, Any] = {
            "id": kept.astype(np.int64),
            "name": [self.entity_name[i] for i in kept.tolist()],
            "primary_chunk": [self.entity_primary[i] for i in kept.tolist()],
        }
        chunks: dict[str, Any] = {
            "id": np.arange(len(self.chunk_text), dtype=np.int64),
            "text": list(self.chunk_text),
            "metadata": list(self.chunk_meta),
        }
        if tenants:
            entities["tenant"] = [self.entity_tenant[i] for i in kept.tolist()]
            chunks["tenant"] = list(self.chunk_tenant)
        own = [(*self._pair_arrays("cooccurs"), "co_occurs")]
        own.append((*self._pair_arrays("title_links"), "mentions"))
        parts = []
        for ab, n, p in (*own, *((*_pairs(c), p) for p, c in self.relations.items())):
            ok = keep[ab[:, 0]] & keep[ab[:, 1]]
            parts.append((ab[ok], n[ok], p))
        ab = np.concatenate([x[0] for x in parts])
        nf = len(ab)
        facts: dict[str, Any] = {
            "id": np.arange(nf, dtype=np.int64),
            "subject": ab[:, 0].copy(),
            "object": ab[:, 1].tolist(),
            "predicate": [p for _, n, p in parts for _ in range(len(n))],
            "strength": np.concatenate([x[1] for x in parts]).astype(np.float64),
            "status": ["confirmed"] * nf,
            "source": ["system"] * nf,
        }
        ok = keep[men[:, 1]]
        mentions = {
            "chunk": men[ok, 0].copy(),
            "entity": men[ok, 1].copy(),
            "count": men_n[ok],
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
