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

__all__ = ["ContextBlock", "Piece", "pack_block"]


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
    """Skip and continue by score; every candidate is checked by counting the whole block.
    No early stop when the block is full: in a format that regroups items (kg_context
    moves a relationship into its entity's section), adding an item can lower the count."""
    chosen: list[int] = []
    text, tokens = "", 0
    for i in sorted(range(len(scores)), key=lambda k: (-scores[k], k)):
        trial = sorted([*chosen, i])
        trial_text = render(trial)
        trial_tokens = count(trial_text)
        if trial_tokens <= budget:
            chosen, text, tokens = trial, trial_text, trial_tokens
    return chosen, text, tokens


#: One line (or run of lines) of a block: (key, text, gap). Pieces with the same key are
#: printed once (a section header shared by its items); ``gap`` is how many newlines come
#: before the piece when it is not the first of the block.
Piece = tuple[Hashable, str, int]


def _greedy_pieces(
    scores: Sequence[float],
    pieces: Callable[[int], Sequence[Piece]],
    base: int,
    budget: int,
    count: Callable[[str], int],
) -> list[int]:
    """The choice of :func:`_greedy` with a line-additive ``count``, in O(n log n): each
    candidate's tokens are the chosen block's plus its pieces not yet printed, so no block
    is rendered. Exact because such a counter counts a block as the sum of its lines plus a
    fixed cost per newline, and the first piece of a block (the first piece of its first
    item in format order) has no newlines before it."""
    probe = count("x")
    sep: dict[int, int] = {}

    def gap_cost(g: int) -> int:
        c = sep.get(g)
        if c is None:
            c = sep[g] = count("x" + "\n" * g + "x") - 2 * probe
        return c

    present: set[Hashable] = set()
    chosen: list[int] = []
    total = 0  # sum over printed pieces of (tokens + gap cost)
    first, first_gap = -1, 0  # the chosen item first in format order, its first piece's gap
    tokens = base
    for i in sorted(range(len(scores)), key=lambda k: (-scores[k], k)):
        if tokens >= budget:
            break  # full: adding text never lowers the count
        own = pieces(i)
        new = [(key, text, g) for key, text, g in own if key not in present]
        delta = sum(count(text) + gap_cost(g) for _, text, g in new)
        head, head_gap = (i, gap_cost(own[0][2])) if first < 0 or i < first else (first, first_gap)
        trial = base + total + delta - head_gap
        if trial <= budget:
            chosen.append(i)
            present.update(key for key, _, _ in new)
            total += delta
            first, first_gap, tokens = head, head_gap, trial
    chosen.sort()
    return chosen


def _pack(
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: int | None,
    count: TokenCounter,
    pieces: Callable[[int], Sequence[Piece]] | None = None,
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
        if pieces is not None:
            chosen = _greedy_pieces(scores, pieces, fast(render([])), budget, fast)
            # Nothing chosen is the empty block, as in the greedy (not a bare header).
            text = render(chosen) if chosen else ""
            tokens = fast(text)
        else:
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
    pieces: Callable[[int], Sequence[Piece]] | None = None,
) -> ContextBlock:
    """A block of items chosen by score within ``budget`` (the packing every format uses).

    Args:
        ids: Each item's id, in the format's order.
        scores: Each item's score (higher is kept first).
        render: Prints a sorted subset of item positions as the block's text ("" for none).
        budget: Most tokens (``None``: no limit).
        count: The token counter.
        pieces: Optional, for line formats: item ``i``'s lines as :data:`Piece` s in
            printed order (its section header first when it has one). With the built-in
            counters the choice is then made in O(n log n) without rendering candidates;
            without it each candidate renders its block (O(n x chosen)).

    Returns:
        The block: the chosen ids in order, the dropped ids, its text and token count.

    Raises:
        ParameterError: ``budget`` is not an int >= 0 or None, or ``count`` is not a
            counter returning ints >= 0.
    """
    b = check_budget(budget)
    counter = check_counter(count)
    chosen, text, tokens = _pack(scores, render, b, counter, pieces)
    keep = set(chosen)
    return ContextBlock(
        text=text,
        tokens=tokens,
        items=tuple(ids[i] for i in chosen),
        dropped=tuple(ids[i] for i in range(len(ids)) if i not in keep),
        budget=b,
    )
