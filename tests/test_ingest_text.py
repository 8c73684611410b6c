"""The Rust text kernels ``scan_sentences`` and ``count_tokens`` against the Python
reference they replace: ``chunking.split_sentences``, ``chunking.count_tokens`` and
``extract._PHRASE`` (Python ``re`` on ``str``), on random Unicode text and on text built from
the characters the patterns treat specially."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from conftest import PROPERTY, examples
from graphrecall._core import count_tokens, scan_names, scan_sentences
from graphrecall.errors import ParameterError
from graphrecall.ingest import chunking
from graphrecall.ingest.chunking import split_sentences
from graphrecall.ingest.extract import (
    _PHRASE,
    KnownNames,
    normalise,
    phrase_names,
    sentence_names,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

#: Characters the two patterns treat specially, and their neighbours in each class.
SPECIAL = list(".!?\"'”’“‘)]([&-,_ \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000\u200b")
SPECIAL += list("AZaz09٣²½éÉßǅ")
WORDS = ["of", "the", "de", "della", "del", "y", "el", "bin", "van", "Oxford", "U.S.", "1,000."]
TEXT = st.one_of(
    st.text(max_size=80),
    st.lists(
        st.one_of(st.sampled_from(SPECIAL), st.sampled_from(WORDS), st.characters()),
        max_size=40,
    ).map("".join),
)


def reference(texts: list[str]) -> list[list[tuple[str, list[tuple[int, int]]]]]:
    """Each text's sentences and each sentence's phrase spans, by the Python regexes."""
    return [
        [(s, [m.span() for m in _PHRASE.finditer(s)]) for s in split_sentences(t)] for t in texts
    ]


def kernel(texts: list[str]) -> list[list[tuple[str, list[tuple[int, int]]]]]:
    """:func:`reference` from one call of ``scan_sentences``."""
    text_off, sent, sent_off, phr = scan_sentences(texts)
    out = []
    for t, text in enumerate(texts):
        sents = []
        for s in range(text_off[t], text_off[t + 1]):
            a, b = sent[s]
            spans = [(int(x), int(y)) for x, y in phr[sent_off[s] : sent_off[s + 1]]]
            sents.append((text[a:b], spans))
        out.append(sents)
    return out


@PROPERTY
@given(st.lists(TEXT, max_size=6))
@example(['He went to Paris. "Then" he left! (Later.)\n\n  next 1.5 m. 2 more'])
@example(["The University of Oxford and van der Berg met 1,000. people in eBay's U.S. 2"])
@example(["Visit of the ", "A\u2028\n\u3000\nB. C.' D", "x.\u0085Y", "9,", "٣,٣"])
def test_scan_equals_the_python_regexes(texts: list[str]) -> None:
    assert kernel(texts) == reference(texts)


@settings(PROPERTY, max_examples=examples(50))
@given(TEXT)
def test_phrase_names_equal_sentence_names(text: str) -> None:
    for sentence, spans in kernel([text])[0]:
        assert phrase_names(sentence, spans) == sentence_names(sentence)


def test_scan_shapes_and_dtypes() -> None:
    text_off, sent, sent_off, phr = scan_sentences([])
    assert text_off.tolist() == [0] and sent_off.tolist() == [0]
    assert sent.shape == (0, 2) and phr.shape == (0, 2)
    text_off, sent, sent_off, phr = scan_sentences(["A b. C d", ""])
    for a in (text_off, sent, sent_off, phr):
        assert a.dtype == np.int64
    assert text_off.tolist() == [0, 2, 2]
    assert sent.tolist() == [[0, 4], [5, 8]]
    assert phr.tolist() == [[0, 1], [0, 1]]


@PROPERTY
@given(st.lists(TEXT, max_size=6))
@example(["Hello, world! x_1 ²² - é", " \u3000\n", ""])
def test_count_tokens_equals_the_python_regex(texts: list[str]) -> None:
    assert count_tokens(texts).tolist() == [chunking.count_tokens(t) for t in texts]


@settings(PROPERTY, max_examples=examples(50))
@given(TEXT, st.integers(1, 12), st.integers(0, 11))
def test_chunk_text_with_counted_tokens(text: str, max_tokens: int, overlap: int) -> None:
    overlap = min(overlap, max_tokens - 1)
    n = int(count_tokens([text])[0])
    assert chunking.chunk_text(text, max_tokens, overlap, n_tokens=n) == chunking.chunk_text(
        text, max_tokens, overlap
    )


#: Words of known names, in several cases and scripts (``ß`` case-folds to ``ss``).
NAME_WORDS = ["new", "York", "CITY", "hall", "Straße", "strasse", "ǅemal", "٣", "x_y", "é"]
NAME = st.lists(st.sampled_from(NAME_WORDS), min_size=1, max_size=4).map(" ".join)
SENTENCE = st.one_of(
    TEXT,
    st.lists(
        st.one_of(st.sampled_from(NAME_WORDS), st.sampled_from(SPECIAL), st.characters()),
        max_size=30,
    ).map("".join),
)


@settings(PROPERTY, max_examples=examples(100))
@given(st.lists(st.one_of(NAME, TEXT), max_size=8), st.lists(SENTENCE, max_size=6))
def test_find_all_equals_find(names: list[str], sentences: list[str]) -> None:
    """The Rust kernel ``find_known_names`` (``KnownNames.find_all``) finds exactly what
    the Python ``KnownNames.find`` finds, sentence by sentence."""
    known = KnownNames()
    for n in names:
        known.add(normalise(n))
    assert known.find_all(sentences) == [known.find(s) for s in sentences]
    # The same sentences as spans of one text (joined by a space), folded in the kernel.
    text = " ".join(sentences)
    starts = np.cumsum([0] + [len(s) + 1 for s in sentences])[:-1]
    pairs = [[a, a + len(s)] for a, s in zip(starts, sentences, strict=True)]
    spans = np.array(pairs, np.int64).reshape(-1, 2)
    off, keys, found = known.find_keys_in([text], np.zeros(len(spans), np.int64), spans)
    got = [[keys[i] for i in found[a:b]] for a, b in pairwise(off.tolist())]
    assert got == [known.find(s) for s in sentences]


def test_find_keys_in_rejects_spans_outside_the_text() -> None:
    known = KnownNames()
    known.add("new york")
    with pytest.raises(ParameterError):
        known.find_keys_in(["new york"], np.zeros(1, np.int64), np.array([[0, 9]], np.int64))
    with pytest.raises(ParameterError):
        known.find_keys_in(["new york"], np.ones(1, np.int64), np.array([[0, 3]], np.int64))


def test_find_all_of_no_names_and_no_sentences() -> None:
    """No known names or no sentences: nothing found, one list per sentence."""
    assert KnownNames().find_all(["New York"]) == [[]]
    known = KnownNames()
    known.add("new york")
    assert known.find_all([]) == []
    assert known.find_all(["in NEW-york", ""]) == [["new york"], []]


#: Names built from words whose case folding is not ``str.lower`` (ß, ﬁ, ΐ, İ, final sigma).
FOLD_WORDS = ["Straße", "STRASSE", "ﬁle", "ΐ", "İstanbul", "ΣΟΦΟΣ", "ǅemal", "Ǆ", "The", "'s"]
NAMED = st.one_of(
    TEXT,
    st.lists(
        st.one_of(
            st.sampled_from(FOLD_WORDS + WORDS + SPECIAL), st.characters(), st.just('"Hey Jude"')
        ),
        max_size=30,
    ).map(" ".join),
)


def _names_by_kernel(texts: list[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each sentence of ``texts`` with its names, from one call of ``scan_names``."""
    text_off, spans, sent_off, name_key, name_surface, keys, forms = scan_names(texts)
    assert len(set(keys)) == len(keys) and len(set(forms)) == len(forms)
    got = []
    for t, text in enumerate(texts):
        for s in range(text_off[t], text_off[t + 1]):
            a, b = spans[s]
            names = [
                (keys[name_key[i]], forms[name_surface[i]])
                for i in range(sent_off[s], sent_off[s + 1])
            ]
            got.append((text[a:b], names))
    return got


@settings(PROPERTY, max_examples=examples(80))
@given(st.lists(NAMED, max_size=5))
@example(['Visit the Louvre with "Hey Jude" and “Let It Be”. The Straße\'s 1999 and 12.'])
def test_scan_names_equals_sentence_names(texts: list[str]) -> None:
    want = [(s, sentence_names(s)) for t in texts for s in split_sentences(t)]
    assert _names_by_kernel(texts) == want


@settings(PROPERTY, max_examples=examples(200))
@given(st.text(max_size=40))
@example("ǅemal ΣΟΦΟΣ İstanbul ﬁle ΐ Straße")
def test_quoted_random_unicode_keys_casefold_as_python(text: str) -> None:
    # A quoted phrase's key is normalise() of any Unicode text: the casefold table's proof.
    texts = [f'"{text}"', f"“{text}”"]
    want = [(s, sentence_names(s)) for t in texts for s in split_sentences(t)]
    assert _names_by_kernel(texts) == want
