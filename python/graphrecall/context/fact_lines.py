"""The "## Known Facts" lines and the context budget split of the agent-memory design
(seed 004, zeph)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from datetime import datetime, timezone

from ..errors import ParameterError
from ..recipes.hits import FactHit
from .items import check_unique, checked_items, clean, fact_item, object_text
from .packing import ContextBlock, Piece, pack_block
from .tokens import TokenCounter, whitespace_tokens

__all__ = ["budget_allocation", "known_facts"]


def _confidence(x: float) -> str:
    """Seed 004's confidence: two decimals at most, at least one ("0.95", "1.0")."""
    return repr(round(x, 2))


def _month(since: int) -> str:
    dt = datetime.fromtimestamp(since, tz=timezone.utc)
    return f"{dt.year:04d}-{dt.month:02d}"


def known_facts(
    facts: Sequence[FactHit],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
) -> ContextBlock:
    """Seed 004's "## Known Facts" block, one line per fact in the given order::

        ## Known Facts
        - User prefers neovim for Rust development (since 2026-01) [confidence: 0.95]
        - User works on project "zeph" (AI agent) [confidence: 1.0]

    The seed's lines are sentences; a structured fact is printed as ``{subject_name}
    {predicate, "_" -> " "} {object}`` (object: the literal value, else the object's name,
    else "..."), `` (since YYYY-MM)`` (UTC month of ``since``) only when ``since`` is known,
    and ``[confidence: c]`` with c rounded to two decimals as the seed prints it ("0.95",
    "1.0").

    Args:
        facts: The facts, in printed order; their scores decide what the budget keeps.
        budget: Most tokens (seed 004 budgets ``graph_facts`` as 4 % of the context, see
            :func:`budget_allocation`); ``None``: no limit.
        count: The token counter.

    Returns:
        The block; its items are fact ids in printed order.

    Raises:
        ParameterError: An argument has the wrong type or ``budget`` is negative.
        DataError: Two facts share an id.
    """
    fs = checked_items(facts, "facts", FactHit, fact_item)
    check_unique((f.id for f in fs), "facts")
    lines = []
    for f in fs:
        line = f"- {clean(f.subject_name)} {clean(f.predicate.replace('_', ' '))} {object_text(f)}"
        if f.since is not None:
            line += f" (since {_month(f.since)})"
        lines.append(f"{line} [confidence: {_confidence(f.confidence)}]")

    def render(chosen: Sequence[int]) -> str:
        return "## Known Facts\n" + "\n".join(lines[i] for i in chosen)

    def pieces(i: int) -> list[Piece]:
        return [(i, lines[i], 1)]

    return pack_block([f.id for f in fs], [f.score for f in fs], render, budget, count, pieces)


# --------------------------------------------------------------------------- seed 004 budget

#: Seed 004's ``BudgetAllocation`` percentages. Disabled: summaries 8, semantic_recall 8,
#: cross_session 4, code_context 30, graph_facts 0, recent_history 50 (= 100). Enabled, the
#: issue says "code_context 30% -> 29%, graph_facts 0% -> 4%", which with the other slices
#: unchanged sums to 103 %; the project's own implementation (bug-ops/zeph, zeph-core
#: ``ContextBudget::allocate_with_opts``: "take 4% for graph facts, reduce other slices by 1%
#: each") takes the other 3 % from summaries, semantic_recall and cross_session:
#: 7, 7, 3, 29, 4, 50 (= 100). That is used here, so the slices never exceed the total.
_PERCENT: dict[bool, dict[str, int]] = {
    False: {
        "summaries": 8,
        "semantic_recall": 8,
        "cross_session": 4,
        "code_context": 30,
        "graph_facts": 0,
        "recent_history": 50,
    },
    True: {
        "summaries": 7,
        "semantic_recall": 7,
        "cross_session": 3,
        "code_context": 29,
        "graph_facts": 4,
        "recent_history": 50,
    },
}


def budget_allocation(total_tokens: int, *, graph_enabled: bool) -> dict[str, int]:
    """Seed 004's context budget split (its ``BudgetAllocation``).

    Slices (percent of ``total_tokens``), graph disabled / enabled: summaries 8 / 7,
    semantic_recall 8 / 7, cross_session 4 / 3, code_context 30 / 29, graph_facts 0 / 4,
    recent_history 50 / 50. The issue's "code_context 30% -> 29%, graph_facts 0% -> 4%" alone
    would sum to 103 %; the 7 / 7 / 3 are its project's own resolution (see
    ``_PERCENT``). Each slice is ``floor(total * percent / 100)`` in exact integer
    arithmetic (the project truncates an f32 product), so the slices sum to at most
    ``total_tokens``; the remainder (fewer than 6 tokens) is left unallocated, as there.
    ``total_tokens`` is the budget to split, after any response reserve and system prompt.

    Args:
        total_tokens: Tokens to split (>= 0).
        graph_enabled: Whether graph memory is on (``graph_facts`` is 0 when off).

    Returns:
        ``{"summaries", "semantic_recall", "cross_session", "code_context", "graph_facts",
        "recent_history"}`` -> tokens, in that order.

    Raises:
        ParameterError: ``total_tokens`` is not an int >= 0, or ``graph_enabled`` not a bool.
    """
    if isinstance(total_tokens, bool) or not isinstance(total_tokens, numbers.Integral):
        raise ParameterError(f"total_tokens must be an int >= 0, got {total_tokens!r}")
    if total_tokens < 0:
        raise ParameterError(f"total_tokens must be >= 0, got {total_tokens}")
    if not isinstance(graph_enabled, bool):
        raise ParameterError(f"graph_enabled must be a bool, got {graph_enabled!r}")
    total = int(total_tokens)
    return {k: total * p // 100 for k, p in _PERCENT[graph_enabled].items()}
