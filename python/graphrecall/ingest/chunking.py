"""Token-aware chunking on sentence boundaries, with overlap.

Tokens are estimated from words, not counted with a tokenizer: one token per run of word
characters and one per punctuation mark (``\\w+|[^\\w\\s]``). For English prose this is
within about 15% of a WordPiece / BPE count (it under-counts rare words split into pieces),
and it costs a regex pass instead of a model's tokenizer; keep ``max_tokens`` below the
embedder's window with that margin (the default, 200, leaves it for a 512-token window).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParameterError

#: Default chunk size, in estimated tokens.
MAX_TOKENS = 200
#: Default overlap between consecutive chunks of one document, in estimated tokens (whole
#: sentences are carried over until at least this many tokens are).
OVERLAP_TOKENS = 32

_TOKEN = re.compile(r"\w+|[^\w\s]")
# A sentence ends at . ! ? (optionally closed by quotes or brackets) followed by space and
# an upper-case letter, digit, quote or bracket, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[A-Z0-9\"“'‘(\[])|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document: its text and its position among the document's chunks."""

    text: str
    position: int


def count_tokens(text: str) -> int:
    """The estimated token count of ``text`` (see the module doc)."""
    return len(_TOKEN.findall(text))


def split_sentences(text: str) -> list[str]:
    """``text``'s sentences, stripped, empty ones dropped."""
    out = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        s = text[start : m.start()].strip()
        if s:
            out.append(s)
        start = m.end()
    s = text[start:].strip()
    if s:
        out.append(s)
    return out


def _split_long(sentence: str, max_tokens: int) -> list[str]:
    """A sentence over ``max_tokens`` cut at whitespace into pieces of at most that many."""
    words = sentence.split()
    out: list[str] = []
    cur: list[str] = []
    n = 0
    for w in words:
        t = count_tokens(w)
        if cur and n + t > max_tokens:
            out.append(" ".join(cur))
            cur, n = [], 0
        cur.append(w)
        n += t
    if cur:
        out.append(" ".join(cur))
    return out


def chunk_text(
    text: str,
    max_tokens: int = MAX_TOKENS,
    overlap_tokens: int = OVERLAP_TOKENS,
    *,
    n_tokens: int | None = None,
) -> list[Chunk]:
    """``text`` cut into chunks of whole sentences of at most ``max_tokens`` estimated tokens,
    each starting with the last sentences of the one before (at least ``overlap_tokens``
    of them, never the whole previous chunk). A sentence longer than ``max_tokens`` is cut
    at whitespace. A text within ``max_tokens`` is one chunk, unchanged but stripped.
    ``n_tokens``, when given, is ``count_tokens(text)`` computed beforehand (in a batch by
    the Rust kernel ``count_tokens``).

    Raises:
        ParameterError: ``max_tokens < 1`` or ``overlap_tokens`` not in ``[0, max_tokens)``.
    """
    if max_tokens < 1:
        raise ParameterError(
            f"invalid parameter max_tokens: {max_tokens} (expected >= 1)",
            parameter="max_tokens",
            kind="invalid_parameter",
        )
    if not 0 <= overlap_tokens < max_tokens:
        raise ParameterError(
            f"invalid parameter overlap_tokens: {overlap_tokens} (expected 0 <= overlap_tokens"
            f" < max_tokens={max_tokens})",
            parameter="overlap_tokens",
            kind="invalid_parameter",
        )
    stripped = text.strip()
    # Fast path: a short text is one chunk (most passages).
    if n_tokens is None and len(stripped) > max_tokens:
        n_tokens = count_tokens(stripped)
    if len(stripped) <= max_tokens or (n_tokens is not None and n_tokens <= max_tokens):
        return [Chunk(stripped, 0)] if stripped else []
    sents: list[tuple[str, int]] = []
    for s in split_sentences(stripped):
        n = count_tokens(s)
        if n > max_tokens:
            sents.extend((p, count_tokens(p)) for p in _split_long(s, max_tokens))
        else:
            sents.append((s, n))
    chunks: list[Chunk] = []
    cur: list[tuple[str, int]] = []
    size = 0
    fresh = 0  # sentences in `cur` not carried over from the previous chunk
    for s, n in sents:
        if cur and size + n > max_tokens:
            chunks.append(Chunk(" ".join(x for x, _ in cur), len(chunks)))
            keep: list[tuple[str, int]] = []
            kept = 0
            for x, m in reversed(cur[1:]):
                if kept >= overlap_tokens or kept + m + n > max_tokens:
                    break
                keep.insert(0, (x, m))
                kept += m
            cur, size, fresh = keep, kept, 0
        cur.append((s, n))
        size += n
        fresh += 1
    if cur and fresh:
        chunks.append(Chunk(" ".join(x for x, _ in cur), len(chunks)))
    return chunks
