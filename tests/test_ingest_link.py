"""The Rust bookkeeping of ingestion (``link_call_order`` / ``link_names``) against a slow,
obviously-correct Python walk over the same names: the same entities, aliases, mentions and
facts, in the same order, over random documents, tenants and several ``add()`` calls."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from itertools import combinations
from typing import Any

from conftest import PROPERTY, examples
from graphrecall.ingest import IngestOptions, Ingestor
from graphrecall.ingest.builder import _QUALIFIER, MAX_SENTENCE_ENTITIES, _title_key
from graphrecall.ingest.chunking import split_sentences
from graphrecall.ingest.extract import KnownNames, sentence_names
from hypothesis import given, settings
from hypothesis import strategies as st


class ReferenceIngestor(Ingestor):
    """:class:`Ingestor` with the extraction done one sentence and one name at a time in
    Python, with the regular expressions (the Rust kernels' reference)."""

    def _extract(self, chunked: Any, rep: Any) -> None:
        o = self.options
        staged = []
        for doc, chunks in chunked:
            known = self._known.setdefault(doc.tenant, KnownNames())
            first = len(self.chunk_text)
            per_chunk = []
            for ch in chunks:
                sents = [(s, sentence_names(s)) for s in split_sentences(ch.text)]
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
        found: dict[Hashable, Iterator[list[str]]] = {}
        if o.known_names:
            by_tenant: dict[Hashable, list[str]] = {}
            for doc, _, per_chunk in staged:
                by_tenant.setdefault(doc.tenant, []).extend(
                    s for sents in per_chunk for s, _ in sents
                )
            found = {t: iter(self._known[t].find_all(ss)) for t, ss in by_tenant.items()}
        for doc, first, per_chunk in staged:
            self._link_doc(doc, first, per_chunk, found.get(doc.tenant))

    def _link_doc(self, doc: Any, first: int, per_chunk: Any, known: Any) -> None:
        o = self.options
        tenant = doc.tenant
        title_eid = None
        if doc.title:
            tk = _title_key(doc.title)
            if tk:
                title_eid = self._entity(tenant, tk, _QUALIFIER.sub("", doc.title).strip())
                if self.entity_primary[title_eid] is None:
                    self.entity_primary[title_eid] = first
        sent_keys = []
        last_word: dict[str, str | None] = {}
        for sents in per_chunk:
            ck = []
            for _, names in sents:
                keys = names
                if known is not None:
                    f = next(known)
                    if f:
                        have = {k for k, _ in names}
                        keys = names + [(k, k) for k in f if k not in have]
                for k, _ in keys:
                    if " " in k:
                        w = k.rsplit(" ", 1)[1]
                        last_word[w] = k if last_word.get(w, k) == k else None
                ck.append(keys)
            sent_keys.append(ck)
        for c, ck in enumerate(sent_keys):
            chunk = first + c
            in_chunk: set[int] = set()
            named = [] if title_eid is None else [title_eid]
            for keys in ck:
                ids: list[int] = []
                for k, surface in keys:
                    full = last_word.get(k) if " " not in k else None
                    if full:
                        eid = self._entity(tenant, full, full)
                        self._surfaces[eid].add(surface)
                    else:
                        eid = self._entity(tenant, k, surface)
                    named.append(eid)
                    if eid not in ids:
                        ids.append(eid)
                in_chunk.update(ids)
                if o.cooccurrence and len(ids) > 1:
                    self.cooccurs.update(
                        (a, b) if a < b else (b, a)
                        for a, b in combinations(ids[:MAX_SENTENCE_ENTITIES], 2)
                    )
            self.mentions.update((chunk, eid) for eid in named)
            if o.title_edges and title_eid is not None:
                self.title_links.update((title_eid, e) for e in in_chunk if e != title_eid)


WORDS = [
    "Paris", "London", "Barack Obama", "Obama", "Michelle Obama", "University of Oxford",
    "Oxford", "New York", "New York City", "York", "Washingtonian", "Washingtonain",
    "Washingtonians", "NASA", "U.S.", "the", "and", "met", "in", "1999", "Éric Zemmour",
    "ÉRIC", "Straße", "STRASSE", "\"Hey Jude\"", "barack obama", "new york", "oxford",
    "Ludwig van Beethoven", "Beethoven", "Mr. Smith", "Smith",
]  # fmt: skip
TITLES = ["Barack Obama", "Oxford (city)", "New York", "Beethoven", "The Beatles", None, ""]


@st.composite
def documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 6))
    docs = []
    for i in range(n):
        sentences = draw(
            st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=14), max_size=6)
        )
        text = " ".join(" ".join(s) + "." for s in sentences) or "Nothing here."
        docs.append(
            {
                "id": f"d{i}-{draw(st.integers(0, 3))}",
                "title": draw(st.sampled_from(TITLES)),
                "text": text,
                "tenant": draw(st.sampled_from([None, None, "a", "b"])),
                **({"metadata": {"n": i}} if i % 2 else {}),
                **({"position": "p", "document": "x"} if i % 3 == 0 else {}),
            }
        )
    return docs


def _columns(tables: Any) -> dict[str, list[str]]:
    """Every column of every table, values as strings (what the bench's digest hashes)."""
    return {
        f"{name}.{col}": [str(v) for v in table[col]]
        for name in ("entities", "facts", "chunks", "mentions", "aliases")
        for table in [getattr(tables, name)]
        for col in table
    }


def _state(ing: Ingestor) -> tuple[Any, ...]:
    return (
        ing.chunk_text,
        ing.chunk_meta,
        ing.chunk_tenant,
        ing.entity_name,
        ing.entity_tenant,
        ing.entity_primary,
        ing._surfaces,
        list(ing.mentions.items()),
        list(ing.cooccurs.items()),
        list(ing.title_links.items()),
        ing._ent,
    )


@settings(PROPERTY, max_examples=examples(60))
@given(
    batches=st.lists(documents(), min_size=1, max_size=3),
    max_tokens=st.sampled_from([12, 40, 300]),
    known_names=st.booleans(),
    cooccurrence=st.booleans(),
    title_edges=st.booleans(),
)
def test_link_matches_the_python_walk(
    batches: list[list[dict[str, Any]]],
    max_tokens: int,
    known_names: bool,
    cooccurrence: bool,
    title_edges: bool,
) -> None:
    opts = IngestOptions(
        max_tokens=max_tokens,
        overlap_tokens=min(8, max_tokens // 4),
        known_names=known_names,
        cooccurrence=cooccurrence,
        title_edges=title_edges,
        merge_threshold=85.0,
    )
    fast, ref = Ingestor(opts), ReferenceIngestor(opts)
    for docs in batches:
        fast.add(docs)
        ref.add(docs)
        assert _columns(fast.tables()) == _columns(ref.tables())  # before the Counters exist
        assert _state(fast) == _state(ref)
