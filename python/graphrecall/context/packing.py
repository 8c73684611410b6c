"""Packing a block within a token budget: choose items by score, print them in the
format's order, never cut one in half (see :mod:`graphrecall.context`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from .tokens import (
    E5Counter,
    TokenCounter,
    check_budget,
    check_counter,
    checked_count,
    whitespace_tokens,
)

__all__ = ["ContextBlock", "pack_block"]


@dataclass(frozen=True)
class ContextBlock:
    """A formatted block.

    Attributes:
        text: The block ("" when nothing was given or nothing fits).
        tokens: ``count(text)`` with the counter it was built with (0 for "").
        items: The ids printed, in the order printed. Blocks that mix kinds
            (:func:`kg_context`, :func:`json_block`) hold
            ``("entity" | "fact" | "chunk", id)`` pairs.
        dropped: The ids given but left out by the budget, in the format's order.
        budget: The budget it was built under (``None``: no limit).
    """

    text: str
    tokens: int
    items: tuple[Hashable, ...]
    dropped: tuple[Hashable, ...]
    budget: int | None


def _line_sums(count: TokenCounter) -> Callable[[str], int] | None:
    """A fast count of a block by memoized line counts, for the built-in counters only:
    exact for :func:`whitespace_tokens` (``count(a + "\\n" + b) == count(a) + count(b) + 1``),
    an estimate for the e5 counter (its tokenizer maps newlines to spaces and no piece
    spans a space, so lines add up; the chosen block is then counted exactly)."""
    memo: dict[str, int] = {}
    if count is whitespace_tokens:

        def exact(text: str) -> int:
            total = text.count("\n")
            for line in text.split("\n"):
                n = memo.get(line)
                if n is None:
                    n = memo[line] = whitespace_tokens(line)
                total += n
            return total

        return exact
    if isinstance(count, E5Counter):

        def estimate(text: str) -> int:
            total = 0
            for line in text.split("\n"):
                n = memo.get(line)
                if n is None:
                    n = memo[line] = count(line)
                total += n
            return total

        return estimate
    return None


def _greedy(
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: int,
    count: Callable[[str], int],
) -> tuple[list[int], str, int]:
    """Skip and continue by score; every candidate is checked by counting the whole block."""
    chosen: list[int] = []
    text, tokens = "", 0
    for i in sorted(range(len(scores)), key=lambda k: (-scores[k], k)):
        if tokens >= budget:
            break  # full: adding text never lowers the count
        trial = sorted([*chosen, i])
        trial_text = render(trial)
        trial_tokens = count(trial_text)
        if trial_tokens <= budget:
            chosen, text, tokens = trial, trial_text, trial_tokens
    return chosen, text, tokens


def _pack(
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: int | None,
    count: TokenCounter,
) -> tuple[list[int], str, int]:
    """Choose items by score within ``budget``; return (chosen indices in format order, text,
    tokens). Indices are positions in the format's order; ``render`` prints a sorted subset.
    The returned ``tokens`` is always ``count(text)``."""
    n = len(scores)
    if n == 0:
        return [], "", 0
    everything = list(range(n))
    text = render(everything)
    fast = _line_sums(count)
    # whitespace_tokens' line sums are exact (and fill the memo the greedy pass reuses).
    tokens = fast(text) if count is whitespace_tokens and fast else checked_count(count, text)
    if budget is None or tokens <= budget:
        return everything, text, tokens
    if fast is not None:
        chosen, text, tokens = _greedy(scores, render, budget, fast)
        if count is not whitespace_tokens:
            tokens = checked_count(count, text)
        if tokens <= budget:
            return chosen, text, tokens
    # A counter of its own (or an estimate that was too low): count each candidate exactly.
    chosen, text, tokens = _greedy(scores, render, budget, lambda t: checked_count(count, t))
    return chosen, text, tokens


def pack_block(
    ids: Sequence[Hashable],
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: object,
    count: object,
) -> ContextBlock:
    """A block of items chosen by score within ``budget`` (the packing every format uses).

    Args:
        ids: Each item's id, in the format's order.
        scores: Each item's score (higher is kept first).
        render: Prints a sorted subset of item positions as the block's text ("" for none).
        budget: Most tokens (``None``: no limit).
        count: The token counter.

    Returns:
        The block: the chosen ids in order, the dropped ids, its text and token count.

    Raises:
        ParameterError: ``budget`` is not an int >= 0 or None, or ``count`` is not a
            counter returning ints >= 0.
    """
    b = check_budget(budget)
    counter = check_counter(count)
    chosen, text, tokens = _pack(scores, render, b, counter)
    keep = set(chosen)
    return ContextBlock(
        text=text,
        tokens=tokens,
        items=tuple(ids[i] for i in chosen),
        dropped=tuple(ids[i] for i in range(len(ids)) if i not in keep),
        budget=b,
    )
