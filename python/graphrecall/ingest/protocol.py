"""The :class:`Extractor` protocol: chunk texts in, named entities and triples out.

An extractor reads a batch of chunk texts and returns one :class:`Extraction` per chunk:
the chunk's named entities and ``(subject, relation, object)`` triples, with what the work
cost (:class:`Usage`) and what it could not read (``problems``). Two implement it:

* :class:`OfflineExtractor`: the offline, deterministic names of :mod:`.extract`
  (capitalised and quoted phrases, acronyms) and their sentence co-occurrence as
  ``co_occurs`` triples; no model, no network;
* :class:`~graphrecall.ingest.llm.OpenAIExtractor`: HippoRAG-style NER then OpenIE prompts
  on any OpenAI-compatible chat-completions endpoint.

:class:`~graphrecall.ingest.Ingestor` always builds the offline graph itself (with the
corpus-wide state a per-chunk extractor lacks: known names, short-form aliases, merges);
an ``extractor`` given to it adds its triples and entities on top (:func:`add_extracted`):
names go through the same keys and near-duplicate merger, so ``Marie Curie`` from an LLM
and from the offline pass are one entity; each triple becomes a fact (predicate = the
relation, strength = the number of chunks stating it) and each chunk mentions the
entities of its triples and its named entities, as HippoRAG links passages to the
phrases extracted from them. Naming :class:`OfflineExtractor` as the extractor adds
nothing: the offline graph is there already.

Example:
    >>> ex = OfflineExtractor()
    >>> [e] = ex.extract(["Ada Lovelace met Charles Babbage in London."])
    >>> e.entities
    ('Ada Lovelace', 'Charles Babbage', 'London')
    >>> e.triples[0]
    ('Ada Lovelace', 'co_occurs', 'Charles Babbage')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import GraphRecallError
from .chunking import split_sentences
from .extract import STOPWORDS, normalise, sentence_names

if TYPE_CHECKING:
    from .builder import Ingestor, IngestReport

__all__ = [
    "Extraction",
    "Extractor",
    "ExtractorError",
    "OfflineExtractor",
    "Triple",
    "Usage",
    "add_extracted",
]

#: ``(subject, relation, object)``.
Triple = tuple[str, str, str]


class ExtractorError(GraphRecallError):
    """An extractor could not do its work: the endpoint refused the request (``kind``
    ``"http_status"``), kept failing after every retry (``"retries_exhausted"``), or its
    output could not be read under a strict setting (``"malformed_output"``). ``ctx``
    holds ``status`` and ``body`` (the start of the response) where there was one."""


@dataclass
class Usage:
    """What extraction cost and met, summed over requests (``+`` and ``+=`` add two).

    Attributes:
        requests: Responses received from the endpoint (billed).
        cached: Responses read from the on-disk cache instead (free).
        prompt_tokens: The endpoint's ``usage.prompt_tokens``, summed over ``requests``.
        completion_tokens: Its ``usage.completion_tokens``, summed likewise.
        retries: Requests sent again after a 429, a 5xx, a timeout or a dropped connection.
        malformed: Responses whose content held no readable JSON of the expected shape (that
            step's output is skipped; ``Extraction.problems`` says why).
        dropped: Items dropped from readable output (an entity that is not a string, a
            triple that is not three non-empty strings).
    """

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    malformed: int = 0
    dropped: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def __iadd__(self, other: Usage) -> Usage:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def __str__(self) -> str:
        return (
            f"{self.requests:,} requests ({self.cached:,} cached, {self.retries:,} retries), "
            f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens, "
            f"{self.malformed:,} malformed responses skipped, {self.dropped:,} items dropped"
        )


@dataclass(frozen=True)
class Extraction:
    """What an extractor found in one chunk.

    Attributes:
        entities: The named entities, as written, in order, without repeats.
        triples: ``(subject, relation, object)`` triples, in order.
        usage: What this chunk's extraction cost.
        problems: Why some of the chunk's output was skipped (empty when none was).
    """

    entities: tuple[str, ...] = ()
    triples: tuple[Triple, ...] = ()
    usage: Usage = field(default_factory=Usage)
    problems: tuple[str, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Chunk texts to named entities and triples (see the module doc).

    ``name`` identifies the extractor and its settings (``"offline"``,
    ``"openai:gpt-4o-mini"``); ``extract`` returns exactly one :class:`Extraction` per text,
    in order, and raises :class:`ExtractorError` when it cannot go on.
    """

    @property
    def name(self) -> str:
        """Which extractor and model this is."""
        ...

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per text of ``texts``, in order."""
        ...


class OfflineExtractor:
    """The offline extractor of :mod:`.extract` behind the :class:`Extractor` protocol.

    Entities are each chunk's capitalised phrases, acronyms and quoted phrases (first
    surface form of each key); triples are ``(a, "co_occurs", b)`` for two names of one
    sentence, in order of appearance, each pair once per chunk.
    """

    name = "offline"

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per text (no usage, never a problem)."""
        out = []
        for text in texts:
            first: dict[str, str] = {}
            pairs: dict[tuple[str, str], None] = {}
            for s in split_sentences(text):
                keys: list[str] = []
                for k, surface in sentence_names(s):
                    first.setdefault(k, surface)
                    if k not in keys:
                        keys.append(k)
                for i, a in enumerate(keys):
                    for b in keys[i + 1 :]:
                        pairs.setdefault((a, b), None)
            out.append(
                Extraction(
                    entities=tuple(first.values()),
                    triples=tuple((first[a], "co_occurs", first[b]) for a, b in pairs),
                )
            )
        return out


def add_extracted(ing: Ingestor, chunks: range, report: IngestReport) -> None:
    """Runs ``ing.extractor`` on ``chunks`` (ids of ``ing``'s chunks) and adds what it found:
    entities through the ingestor's keys and merger, a mention chunk -> entity for each
    entity of the chunk not mentioned yet, and a fact per triple (``ing.relations``).

    The usage is added to ``report.usage``; a chunk with problems is listed under
    ``report.skipped["extraction"]`` as ``("chunk N", problem)``.
    """
    ex = ing.extractor
    if ex is None or isinstance(ex, OfflineExtractor) or not chunks:
        return
    found = ex.extract([ing.chunk_text[c] for c in chunks])
    if len(found) != len(chunks):
        raise ExtractorError(
            f"extractor {ex.name!r} returned {len(found)} extractions for {len(chunks)} chunks",
            kind="invalid_value",
            ctx={"expected": len(chunks), "got": len(found)},
        )
    for chunk, e in zip(chunks, found, strict=True):
        report.usage += e.usage
        for p in e.problems:
            report.skipped.setdefault("extraction", []).append((f"chunk {chunk}", p))
        tenant = ing.chunk_tenant[chunk]
        ids: dict[str, int] = {}
        # "Curie" beside "Marie Curie" in one chunk is the same entity (as offline).
        short: dict[str, str | None] = {}
        for name in (*e.entities, *(x for s, _, o in e.triples for x in (s, o))):
            k = normalise(" ".join(name.split()))
            if " " in k:
                w = k.rsplit(" ", 1)[1]
                short[w] = name if short.get(w, name) == name else None
        for w, full in short.items():
            if full is not None:
                eid = _entity(ing, tenant, full, ids)
                if eid is not None:
                    ids.setdefault(w, eid)
        for name in e.entities:
            _entity(ing, tenant, name, ids)
        stated: set[tuple[int, str, int]] = set()
        for s, r, o in e.triples:
            a, b = _entity(ing, tenant, s, ids), _entity(ing, tenant, o, ids)
            rel = " ".join(r.split())
            if a is None or b is None or a == b or not rel or (a, rel, b) in stated:
                continue
            stated.add((a, rel, b))
            ing.relations.setdefault(rel, Counter())[(a, b)] += 1
        for eid in ids.values():
            if (chunk, eid) not in ing.mentions:
                ing.mentions[(chunk, eid)] = 1


def _entity(ing: Ingestor, tenant: Hashable, surface: str, ids: dict[str, int]) -> int | None:
    """The id of the entity written ``surface`` in a chunk of ``tenant`` (None for a name
    with no key), remembered in ``ids`` by key."""
    surface = " ".join(surface.split())
    key = normalise(surface)
    if not key or key in STOPWORDS:
        return None
    eid = ids.get(key)
    if eid is None:
        eid = ids[key] = ing._entity(tenant, key, surface)
    return eid
