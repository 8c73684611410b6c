"""Offline, deterministic entity extraction: no model, no network, the same output for the
same input.

A sentence's entities are

* **capitalised phrases**: runs of capitalised words or numbers, joined by lower-case
  particles (``of``, ``the``, ``de``, ``von``, ...), e.g. ``University of Oxford``;
  a lone sentence-initial word is kept only when it is not a common function word;
* **acronyms** (``NASA``, ``U.S.``) and **quoted phrases** (``"Hey Jude"``, 1 to 8 words);
* **known names in any case**: the titles given with the documents and every multi-word
  name seen capitalised anywhere in the corpus so far, matched case-insensitively on word
  boundaries (n-grams of up to :data:`MAX_NAME_WORDS` words validated against the corpus).

Names are normalised to keys (:func:`normalise`: case-folded, whitespace collapsed, a leading
``the`` and a trailing possessive dropped, outer punctuation stripped); a single word that
is the last word of a multi-word name of the same document (``Obama`` after ``Barack
Obama``) is an alias of it; near-duplicate keys are merged with rapidfuzz
(:class:`NameMerger`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import pairwise

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz

from .._core import find_known_names, find_known_names_in

#: Longest name matched case-insensitively, in words.
MAX_NAME_WORDS = 6

_PARTICLES = r"(?:of|the|de|du|da|del|della|der|den|van|von|la|le|y|di|al|bin|el)"
_PARTICLE_SET = frozenset(_PARTICLES[3:-1].split("|"))
_CAP = r"(?:[A-Z][\w'’&\-]*\.?|\d[\d,.]*\d|\d)"
_PHRASE = re.compile(rf"{_CAP}(?:\s+(?:{_PARTICLES}\s+)*{_CAP})*")
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,80})[\"”]")
_WORD = re.compile(r"\w+")

#: Capitalised words that are not names on their own (sentence starts, pronouns, months
#: are kept: they are names).
STOPWORDS = frozenset(
    """a an the this that these those it its he she they we i you his her their our my your
    in on at by for from to with of and or but as is was are were be been being if when while
    after before during since until there here what which who whom whose where why how all
    some many most more other such no not only also however although though both each every
    one two three four five six seven eight nine ten first second third then thus than so
    because into onto over under between among about against within without upon per via""".split()
)


@lru_cache(maxsize=1 << 16)
def normalise(name: str) -> str:
    """The key of a name: case-folded, whitespace collapsed, a leading article and a
    trailing possessive dropped, outer punctuation stripped ('' when nothing is left)."""
    k = " ".join(name.casefold().split()).strip(" .,;:!?'\"“”‘’()[]{}-")
    if k.startswith("the "):
        k = k[4:]
    if k.endswith("'s") or k.endswith("’s"):
        k = k[:-2]
    return k.strip(" .,;:'’-")


def _is_name(key: str) -> bool:
    if len(key) < 2 or key in STOPWORDS:
        return False
    if key.replace(",", "").replace(".", "").isdigit():
        return len(key) == 4  # a year; other bare numbers are not names
    return True


@lru_cache(maxsize=1 << 17)
def _phrase_name(phrase: str, initial: bool) -> tuple[str, str] | None:
    """The ``(key, surface form)`` of one capitalised phrase match (``initial``: it starts
    the sentence), None when no name is left once function words are trimmed."""
    words = phrase.rstrip(".").split()
    # At a sentence start, "Visit the Louvre": the first word is no part of the name.
    if initial and len(words) >= 3 and words[1] in _PARTICLE_SET:
        words = words[2:]
    # A sentence-initial function word is no part of a name ("The", "In", "After").
    while words and words[0].casefold().strip("'’") in STOPWORDS:
        words = words[1:]
    while words and words[-1].casefold() in STOPWORDS:
        words = words[:-1]
    if not words:
        return None
    surface = " ".join(words)
    key = normalise(surface)
    return (key, surface) if _is_name(key) else None


def sentence_names(sentence: str) -> list[tuple[str, str]]:
    """The ``(key, surface form)`` of each capitalised phrase and acronym of ``sentence`` in
    order of appearance (repeats kept: they are counted), then each quoted phrase not found
    capitalised."""
    out: list[tuple[str, str]] = []
    for m in _PHRASE.finditer(sentence):
        name = _phrase_name(m.group(), m.start() == 0)
        if name is not None:
            out.append(name)
    return _add_quoted(sentence, out)


def phrase_names(sentence: str, spans: Iterable[Sequence[int]]) -> list[tuple[str, str]]:
    """:func:`sentence_names` from the capitalised phrases' ``[start, end)`` spans, as the
    Rust kernel ``scan_sentences`` finds them (the same names, without the regex pass)."""
    out: list[tuple[str, str]] = []
    for a, b in spans:
        name = _phrase_name(sentence[a:b], a == 0)
        if name is not None:
            out.append(name)
    return _add_quoted(sentence, out)


def _add_quoted(sentence: str, out: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``out`` with each quoted phrase of ``sentence`` that it does not name yet."""
    if '"' in sentence or "“" in sentence:
        have = {k for k, _ in out}
        for m in _QUOTED.finditer(sentence):
            surface = m.group(1).strip()
            if 1 <= len(surface.split()) <= 8:
                key = normalise(surface)
                if _is_name(key) and key not in have:
                    out.append((key, surface))
    return out


class KnownNames:
    """Names matched in any case: keys of up to :data:`MAX_NAME_WORDS` words, with every
    word prefix of every key, so a match is extended one word at a time and stops at the
    first word sequence that no key starts with."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}  # the key's words joined by spaces -> the key
        self._prefixes: set[str] = set()  # the first 1..n words of each key, joined
        self._added: set[str] = set()  # every key given to add()

    def add(self, key: str) -> None:
        """Makes ``key`` known (keys over :data:`MAX_NAME_WORDS` words are ignored)."""
        self.add_all((key,))

    def add_all(self, keys: Iterable[str]) -> None:
        """:meth:`add` of each key, in order."""
        added = self._added
        known = self.keys
        prefixes = self._prefixes
        findall = _WORD.findall
        for key in keys:
            if key in added:
                continue
            added.add(key)
            words = findall(key)
            if not words or len(words) > MAX_NAME_WORDS:
                continue
            joined = " ".join(words)
            if joined in known:
                continue
            known[joined] = key
            prefix = words[0]
            prefixes.add(prefix)
            for w in words[1:]:
                prefix = f"{prefix} {w}"
                prefixes.add(prefix)

    def find(self, sentence: str) -> list[str]:
        """The known keys occurring in ``sentence`` (case-folded words, punctuation between
        them ignored), longest match first at each position; a match's words are not
        matched again."""
        prefixes = self._prefixes
        if not prefixes:
            return []
        words = _WORD.findall(sentence.casefold())
        starts = [i for i, w in enumerate(words) if w in prefixes]
        if not starts:
            return []
        out: list[str] = []
        keys = self.keys
        n_words = len(words)
        done = 0  # words before this index belong to a match
        for i in starts:
            if i < done:
                continue
            phrase = words[i]
            best = keys.get(phrase)
            end = i + 1
            j = i + 1
            while j < n_words:
                phrase = f"{phrase} {words[j]}"
                if phrase not in prefixes:
                    break
                j += 1
                k = keys.get(phrase)
                if k is not None:
                    best, end = k, j
            if best is not None:
                out.append(best)
                done = end
        return out

    def find_keys(
        self, sentences: Sequence[str]
    ) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.int64]]:
        """:meth:`find` of each sentence as arrays, from one call of the Rust kernel
        ``find_known_names``: ``(offsets, keys, found)``, sentence ``s``'s keys are
        ``keys[i]`` for ``i`` in ``found[offsets[s]:offsets[s + 1]]``."""
        if not self._prefixes or not sentences:
            return np.zeros(len(sentences) + 1, np.int64), [], np.zeros(0, np.int64)
        joined = list(self.keys)
        off, ids = find_known_names(joined, [s.casefold() for s in sentences])
        return off, list(self.keys.values()), ids

    def find_keys_in(
        self,
        texts: list[str],
        sentence_text: npt.NDArray[np.int64],
        spans: npt.NDArray[np.int64],
    ) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.int64]]:
        """:meth:`find_keys` of sentences given as ``(n, 2)`` code point ``spans`` of
        ``texts`` (sentence ``s`` is ``spans[s]`` of ``texts[sentence_text[s]]``), sliced and
        case-folded in the Rust kernel ``find_known_names_in``."""
        if not self._prefixes or not len(spans):
            return np.zeros(len(spans) + 1, np.int64), [], np.zeros(0, np.int64)
        off, ids = find_known_names_in(list(self.keys), texts, sentence_text, spans)
        return off, list(self.keys.values()), ids

    def find_all(self, sentences: Sequence[str]) -> list[list[str]]:
        """:meth:`find` of each sentence, in one call of the Rust kernel
        ``find_known_names`` (the same keys in the same order)."""
        off, keys, ids = self.find_keys(sentences)
        found = [keys[i] for i in ids.tolist()]
        return [found[a:b] for a, b in pairwise(off.tolist())]


def learn_names(
    knowns: Sequence[KnownNames],
    keys: Sequence[str],
    name_key: npt.NDArray[np.int64],
    name_doc: npt.NDArray[np.int64],
    doc_tenant: npt.NDArray[np.int64],
    title_known: Sequence[str | None],
) -> None:
    """Makes the multi-word names and the titles of a batch known to their tenant
    (``knowns[t]``), in document order: each document's names in order, then its title
    (``title_known[d]``, None: none). Name ``i`` is ``keys[name_key[i]]`` of document
    ``name_doc[i]`` (non-decreasing). A key given to :meth:`KnownNames.add` before is
    skipped: a repeated add changes nothing."""
    multi = np.fromiter((" " in k for k in keys), bool, len(keys))
    pick = np.flatnonzero(multi[name_key])
    # The first mention of each (tenant, key) among the multi-word names.
    tk = doc_tenant[name_doc[pick]] * len(keys) + name_key[pick]
    _, first = np.unique(tk, return_index=True)
    first = np.sort(pick[first])
    ends = np.searchsorted(name_doc[first], np.arange(len(doc_tenant)), side="right").tolist()
    learn = [keys[k] for k in name_key[first].tolist()]
    # One sequence per tenant: tenants' KnownNames are independent, so only the order
    # within a tenant matters.
    seqs: list[list[str]] = [[] for _ in knowns]
    a = 0
    for t, b, title in zip(doc_tenant.tolist(), ends, title_known, strict=True):
        seq = seqs[t]
        if b > a:
            seq.extend(learn[a:b])
            a = b
        if title is not None:
            seq.append(title)
    for known, seq in zip(knowns, seqs, strict=True):
        known.add_all(seq)


def find_known_keys(
    knowns: Sequence[KnownNames],
    texts: list[str],
    text_off: npt.NDArray[np.int64],
    spans: npt.NDArray[np.int64],
    sent_tenant: npt.NDArray[np.int64],
    kid: dict[str, int],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The known names of every sentence of a batch (sentence ``s`` is ``spans[s]`` of its
    text, text ``t``'s sentences ``text_off[t]:text_off[t + 1]``), each matched with its
    tenant's names (``knowns[sent_tenant[s]]``, one Rust call per tenant): ``(offsets,
    key ids)`` in sentence order, the keys interned into ``kid``."""
    n_sents = len(spans)
    sent_text = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(text_off))
    where: list[npt.NDArray[np.int64]] = []
    what: list[npt.NDArray[np.int64]] = []
    for t, known in enumerate(knowns):
        at = np.flatnonzero(sent_tenant == t) if len(knowns) > 1 else np.arange(n_sents)
        own = (sent_text[at], spans[at]) if len(knowns) > 1 else (sent_text, spans)
        off, keys, found = known.find_keys_in(texts, *own)
        ids = np.fromiter((kid.setdefault(k, len(kid)) for k in keys), np.int64, len(keys))
        if len(knowns) == 1:
            return off, ids[found]
        where.append(np.repeat(at, np.diff(off)))
        what.append(ids[found])
    at_all = np.concatenate(where)
    order = np.argsort(at_all, kind="stable")
    offsets = np.zeros(n_sents + 1, np.int64)
    np.cumsum(np.bincount(at_all, minlength=n_sents), out=offsets[1:])
    return offsets, np.concatenate(what)[order].astype(np.int64)


class NameMerger:
    """Merges near-duplicate keys into one canonical key.

    A new key is compared (rapidfuzz ``ratio``) with the existing keys that share its first
    three characters and its word count; at ``threshold`` (percent) or above, and when the
    two differ in more than case, it becomes an alias of the existing key (the first seen
    wins, so the merge is deterministic and stable under incremental ingestion). Keys of
    fewer than ``min_chars`` characters are never merged (``CIA`` vs ``CBA``).
    """

    def __init__(self, threshold: float = 92.0, min_chars: int = 8) -> None:
        self.threshold = threshold
        self.min_chars = min_chars
        self.canonical: dict[str, str] = {}
        self._blocks: dict[tuple[str, int], list[str]] = {}

    def resolve(self, key: str) -> str:
        """The canonical key of ``key``, registering it when new."""
        c = self.canonical.get(key)
        if c is not None:
            return c
        target = key
        if len(key) >= self.min_chars:
            block = self._blocks.setdefault((key[:3], key.count(" ")), [])
            best = 0.0
            for other in block:
                if abs(len(other) - len(key)) > 2:
                    continue
                s = fuzz.ratio(key, other, score_cutoff=self.threshold)
                if s > best:
                    best, target = s, other
            if target == key:
                block.append(key)
        self.canonical[key] = target
        return target

    def resolve_all(self, keys: Iterable[str]) -> list[str]:
        """:meth:`resolve` of each key."""
        return [self.resolve(k) for k in keys]
