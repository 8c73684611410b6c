"""Search tokens: case and accent folding and the tokenizer shared by BM25 and name
recognition, so that a query and the texts it searches are split the same way."""

from __future__ import annotations

import re
import threading
import unicodedata

from ..errors import ParameterError

__all__ = ["TOKEN", "fold", "token_spans", "tokenize"]

#: A search token: a run of letters and digits (Unicode L* and N*), underscore excluded.
TOKEN = re.compile(r"[^\W_]+")
_marks_re: re.Pattern[str] | None = None
_marks_lock = threading.Lock()


def _marks() -> re.Pattern[str]:
    """A regex matching every combining mark (Unicode category M*), built on first use.

    Marks live in planes 0, 1 and 14 only (checked against ``unicodedata``); those planes
    are scanned once, on first use, not at import.
    """
    global _marks_re
    if _marks_re is None:
        with _marks_lock:
            if _marks_re is None:
                cps = [
                    c
                    for rng in (range(0x300, 0x20000), range(0xE0000, 0xE1000))
                    for c in rng
                    if unicodedata.category(chr(c))[0] == "M"
                ]
                parts: list[str] = []
                i = 0
                while i < len(cps):
                    j = i
                    while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
                        j += 1
                    parts.append(f"\\U{cps[i]:08x}-\\U{cps[j]:08x}")
                    i = j + 1
                _marks_re = re.compile("[" + "".join(parts) + "]+")
    return _marks_re


def fold(text: str) -> str:
    """Case- and accent-fold ``text``: NFKD, casefold, NFKD, combining marks removed.

    ASCII text takes a fast path (``str.lower``, which equals the full fold there).

    Args:
        text: Any string.

    Returns:
        The folded string (it may be longer or shorter than ``text``: ``"ß"`` folds to
        ``"ss"``, ``"ﬁ"`` to ``"fi"``, ``"é"`` to ``"e"``).
    """
    if text.isascii():
        return text.lower()
    s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return _marks().sub("", s)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into search tokens, like FTS5's default ``unicode61`` tokenizer.

    The text is folded (:func:`fold`: NFKD compatibility decomposition, casefold, combining
    marks removed) and split on every character that is not a letter or a number (Unicode
    categories L* and N*, Python's ``str.isalnum``); the underscore and all punctuation
    separate tokens. ``"Ned Stark's sword_fight"`` gives ``["ned", "stark", "s", "sword",
    "fight"]``.

    Where it differs from ``unicode61`` (``remove_diacritics=1``): compatibility
    characters are decomposed (``"ﬁ"`` -> ``"fi"``, ``"²"`` -> ``"2"``, full-width letters
    -> ASCII), ``casefold`` is full case folding (``"ß"`` -> ``"ss"``), all combining marks
    are removed rather than only Latin diacritics (so a Devanagari word stays one token
    where ``unicode61`` splits it at every vowel sign), and private-use characters
    (category Co) separate tokens. On text without such characters both give the same
    tokens.

    Args:
        text: The text.

    Returns:
        The tokens, in order, repeats kept.

    Raises:
        ParameterError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ParameterError(f"invalid parameter text: expected a str, got {type(text).__name__}")
    return TOKEN.findall(fold(text))


def token_spans(query: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Tokens of the query (as :func:`tokenize`) and their character spans in ``query``.

    A span covers the original characters whose folded form holds the token, plus any
    combining marks that follow them (so ``"Cafe\\u0301"`` spans all five characters).
    """
    if query.isascii():
        ms = list(TOKEN.finditer(query.lower()))
        return [m.group() for m in ms], [m.span() for m in ms]
    pieces: list[str] = []
    src: list[int] = []
    for i, ch in enumerate(query):
        f = ch.lower() if ch.isascii() else fold(ch)
        pieces.append(f)
        src.extend([i] * len(f))
    folded = "".join(pieces)
    toks: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in TOKEN.finditer(folded):
        a, b = m.span()
        start, end = src[a], src[b - 1] + 1
        while end < len(query) and unicodedata.category(query[end])[0] == "M":
            end += 1
        toks.append(m.group())
        spans.append((start, end))
    return toks, spans
