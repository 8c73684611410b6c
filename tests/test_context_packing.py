"""Line formats choose what fits in O(n log n) from per-line costs: the choice must be the
one of the plain greedy (by score, skip what does not fit and go on), re-rendering the whole
block for every candidate, as this module's oracle does."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from unittest import mock

from conftest import PROPERTY
from graphrecall.context import known_facts, narrative, packing
from graphrecall.context.packing import ContextBlock
from graphrecall.context.result import chunks_block, tiers_block
from graphrecall.context.tokens import whitespace_tokens
from graphrecall.recipes import ChunkHit, FactHit
from hypothesis import given
from hypothesis import strategies as st

WORDS = ["a", "bb", "ccc dd", "e f g", "hh ii jj kk", "Ada", "Lovelace"]


def oracle(
    block: Callable[[Sequence[Any], int | None], ContextBlock],
    items: Sequence[Any],
    scores: Sequence[float],
    budget: int,
) -> tuple[Any, ...]:
    """The greedy with a full render and count of every candidate block (ties of score go
    to the item printed first)."""
    printed = block(items, None).items
    pos = {x: i for i, x in enumerate(printed)}
    ids = [getattr(x, "id") for x in items]  # noqa: B009
    order = sorted(range(len(items)), key=lambda k: (-scores[k], pos[ids[k]]))
    chosen: list[int] = []
    for i in order:
        trial = sorted([*chosen, i])
        if whitespace_tokens(block([items[j] for j in trial], None).text) <= budget:
            chosen = trial
    return block([items[j] for j in chosen], None).items


@contextmanager
def fast_path_only() -> Iterator[None]:
    """Refuse the slow greedy: the per-line choice must be exact on its own (a wrong line
    cost would otherwise be hidden by the exact fallback when the block comes out too big)."""

    def refuse(*args: Any) -> Any:
        raise AssertionError("the per-line choice did not fit: the slow path ran")

    with mock.patch.object(packing, "_greedy", refuse):
        yield


@st.composite
def facts(draw: st.DrawFn) -> list[FactHit]:
    n = draw(st.integers(0, 14))
    out = []
    for i in range(n):
        subj = draw(st.integers(0, 3))
        out.append(
            FactHit(
                f"f{i}",
                f"s{subj}",
                ["user", "Ada", "The Engine", "Lady Ada Lovelace"][subj],
                draw(st.sampled_from(WORDS)).replace(" ", "_"),
                None,
                None,
                draw(st.sampled_from(WORDS)),
                0.5,
                draw(st.floats(0, 1)),
                0,
            )
        )
    return out


@PROPERTY
@given(fs=facts(), budget=st.integers(0, 60))
def test_fact_formats_choose_as_the_full_greedy(fs: list[FactHit], budget: int) -> None:
    for fmt in (
        lambda xs, b: known_facts(xs, budget=b),
        lambda xs, b: narrative([], xs, budget=b),
    ):
        with fast_path_only():
            got = fmt(fs, budget)
        # The same facts (a subset's own narrative may order its sections differently).
        assert sorted(got.items) == sorted(oracle(fmt, fs, [f.score for f in fs], budget))
        assert got.tokens == whitespace_tokens(got.text) <= budget


@PROPERTY
@given(
    texts=st.lists(
        st.tuples(st.sampled_from(WORDS), st.floats(0, 1), st.sampled_from("xyz")), max_size=14
    ),
    budget=st.integers(0, 60),
)
def test_chunk_formats_choose_as_the_full_greedy(
    texts: list[tuple[str, float, str]], budget: int
) -> None:
    chunks = [ChunkHit(f"c{i}", t, s, "vector") for i, (t, s, _) in enumerate(texts)]
    with fast_path_only():
        got = chunks_block(chunks, budget=budget)
    assert got.items == oracle(
        lambda xs, b: chunks_block(xs, budget=b), chunks, [c.score for c in chunks], budget
    )
    tiers: dict[str, list[ChunkHit]] = {}
    for c, (_, _, tier) in zip(chunks, texts, strict=True):
        tiers.setdefault(tier, []).append(c)
    flat = [c for cs in tiers.values() for c in cs]

    def by_tier(xs: Sequence[ChunkHit], b: int | None) -> ContextBlock:
        keep = {c.id for c in xs}
        return tiers_block(
            {t: [c for c in cs if c.id in keep] for t, cs in tiers.items()}, budget=b
        )

    with fast_path_only():
        got = tiers_block(tiers, budget=budget)
    assert got.items == oracle(by_tier, flat, [c.score for c in flat], budget)
    assert got.tokens == whitespace_tokens(got.text) <= budget


def test_a_full_block_still_takes_an_item_that_lowers_its_count() -> None:
    """kg_context regroups: the entity's section holds its relationship more briefly than
    the relationships section does, so adding the entity to a full block makes it smaller."""
    from graphrecall.context import kg_context
    from graphrecall.recipes import EntityHit

    user = EntityHit(0, "User", -1.0, 0, "graph")
    facts = [
        FactHit(f"f{i}", 0, "User", "prefers", 0, None, None, 0.95, 0.0, None)  # type: ignore[arg-type]
        for i in range(2)
    ]
    alone = kg_context([user], [], facts[:1], budget=None).tokens
    block = kg_context([user], [user], facts, budget=alone)
    assert block.items == (("entity", 0), ("fact", "f0")) and block.tokens < alone
