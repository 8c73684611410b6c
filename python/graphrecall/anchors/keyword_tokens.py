"""Tokenising a whole corpus for :class:`~graphrecall.anchors.keyword.BM25Index` in one
pass (the build's tokeniser; :func:`~graphrecall.anchors.tokens.tokenize` row by row gives
the same tokens)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from .tokens import TOKEN, fold

I64 = npt.NDArray[np.int64]

#: Separator candidates for :func:`tokenize_corpus`: ASCII controls, then private-use
#: characters (neither is a token character, so none can be part of a token).
_SEPARATORS = [chr(c) for c in range(1, 9)] + [chr(c) for c in range(0xE000, 0xE100)]
_ASCII_SPLIT = {c: " " for c in range(128) if not chr(c).isalnum()}


def tokenize_corpus(texts: Sequence[str | None]) -> tuple[dict[str, int], I64, I64]:
    """Tokenise every text at once: ``(vocab, term id per token, tokens per row)``.

    Equivalent to :func:`tokenize` on each text, and faster on many short texts: the texts
    are joined by a separator character that occurs in none of them, folded and split in
    one call (``str.translate`` + ``str.split`` when the folded corpus is ASCII, one regex
    pass otherwise), and the separators mark the row boundaries in the id array. Folding
    is per character, so it commutes with the join.
    """
    n = len(texts)
    parts: list[str] = []
    for row, text in enumerate(texts):
        if text is None:
            parts.append("")
        elif isinstance(text, str):
            parts.append(text)
        else:
            raise DataError(f"texts: row {row} is a {type(text).__name__}, expected str or None")
    sep = next((c for c in _SEPARATORS if not any(c in t for t in parts)), None)
    if sep is None:  # every candidate occurs somewhere: tokenise row by row
        per_row = [TOKEN.findall(fold(t)) for t in parts]
        flat = [w for toks in per_row for w in toks]
        lengths = np.fromiter(map(len, per_row), dtype=np.int64, count=n)
        vocab = {w: i for i, w in enumerate(dict.fromkeys(flat))}
        terms = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        return vocab, terms, lengths
    folded = fold(f" {sep} ".join(parts))
    if folded.isascii() and sep.isascii():
        table = dict(_ASCII_SPLIT)
        del table[ord(sep)]
        flat = folded.translate(table).split()
    else:
        flat = re.findall(r"[^\W_]+|" + re.escape(sep), folded)
    keys = dict.fromkeys(flat)
    keys.pop(sep, None)
    vocab = {w: i for i, w in enumerate(keys)}
    vocab[sep] = -1
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    del vocab[sep]
    is_sep = ids < 0
    row_of = np.cumsum(is_sep)[~is_sep]
    lengths = np.bincount(row_of, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    return vocab, ids[~is_sep], lengths
