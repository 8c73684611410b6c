"""Errors of the Python checks carry where and what, as the core's do: ``table``, ``row``,
``column``, ``kind`` and ``input``, through ``from_records``, ``from_arrays`` and
``GraphTables.check()`` alike; a refused load lists one entry per reported row."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest
from graphrecall import (
    DataError,
    GraphTables,
    KnowledgeGraph,
    ParameterError,
    UnknownIdError,
    UnknownTenantError,
)
from graphrecall.tables import BadDataError

KG = KnowledgeGraph
BASE: dict[str, Any] = {"fact_subject": [0, 1], "fact_object": [1, 2]}
Loc = tuple[str | None, int | None, str | None]
# (name, build, expected loc, kind, input; ... is "not compared")
CASES: list[tuple[str, Callable[[], Any], Loc, str, Any]] = [
    # dangling
    ("records dangling", lambda: KG.from_records(
        [{"id": "a"}], [{"subject": "a", "object": None}, {"subject": "zz", "object": None}]),
     ("facts", 1, "subject"), "dangling", "zz"),
    ("arrays dangling", lambda: KG.from_arrays(fact_subject=[0, 5], fact_object=[1, 2],
                                               n_entities=3),
     ("facts", 1, "subject"), "dangling", 5),
    ("check dangling", lambda: GraphTables(
        entities={"id": ["a"]}, facts={"subject": ["a", "zz"]}).check(),
     ("facts", 1, "subject"), "dangling", "zz"),
    ("records mention dangling", lambda: KG.from_records(
        [{"id": "a"}], [], [{"id": "k"}], [{"chunk": "d", "entity": "a"}]),
     ("mentions", 0, "chunk"), "dangling", "d"),
    # invalid values
    ("records invalid", lambda: KG.from_records(
        [{"id": "a"}], [{"subject": "a", "object": None, "status": 9}]),
     ("facts", 0, "status"), "invalid_value", 9),
    ("arrays invalid", lambda: KG.from_arrays(**BASE, status=[0, 4]),
     ("facts", 1, "status"), "invalid_value", 4),
    ("arrays not a time", lambda: KG.from_arrays(**BASE, last_accessed=["yesterday", None]),
     ("facts", 0, "last_accessed"), "invalid_value", "yesterday"),
    ("arrays negative count", lambda: KG.from_arrays(**BASE, access_count=[0, -3]),
     ("facts", 1, "access_count"), "invalid_value", -3),
    ("check invalid", lambda: GraphTables(
        entities={"id": ["a"]}, facts={"subject": ["a", "a"], "confidence": [0.5, 2.0]}).check(),
     ("facts", 1, "confidence"), "invalid_value", 2.0),
    ("check bad tenant", lambda: GraphTables(
        entities={"id": ["a", "b"], "tenant": ["x", 2.5]}, facts={"subject": []}).check(),
     ("entities", 1, "tenant"), "invalid_value", 2.5),
    # lengths
    ("arrays length", lambda: KG.from_arrays(**BASE, entity_names=["a"]),
     ("entities", None, "name"), "length_mismatch", None),
    ("tables length", lambda: GraphTables(
        entities={"id": [1]}, facts={"subject": [1], "object": [1, 1]}),
     ("facts", None, "object"), "length_mismatch", None),
    # duplicates
    ("records duplicate", lambda: KG.from_records([{"id": "a"}, {"id": "a"}], []),
     ("entities", 1, "id"), "duplicate", "a"),
    ("arrays duplicate", lambda: KG.from_arrays(**BASE, fact_ids=[3, 3]),
     ("facts", 1, "id"), "duplicate", 3),
    ("check duplicate", lambda: GraphTables(
        entities={"id": ["a", "a"]}, facts={"subject": []}).check(),
     ("entities", 1, "id"), "duplicate", "a"),
    ("check duplicate mention", lambda: GraphTables(
        entities={"id": ["a"]}, facts={"subject": []}, chunks={"id": ["k"]},
        mentions={"chunk": ["k", "k"], "entity": ["a", "a"]}).check(),
     ("mentions", 1, "entity"), "duplicate", "a"),
    # tenants
    ("records cross-tenant", lambda: KG.from_records(
        [{"id": "a", "tenant": "x"}, {"id": "b", "tenant": "y"}],
        [{"subject": "a", "object": "b"}]),
     ("facts", 0, "object"), "cross_tenant", ...),
    ("check cross-tenant", lambda: GraphTables(
        entities={"id": ["a", "b"], "tenant": ["x", "y"]},
        facts={"subject": ["a"], "object": ["b"]}).check(),
     ("facts", 0, "object"), "cross_tenant", "b"),
    ("records unknown chunk tenant", lambda: KG.from_records(
        [{"id": "a", "tenant": "x"}], [], [{"id": "k", "tenant": "y"}]),
     ("chunks", 0, "tenant"), "invalid_value", "y"),
    # missing
    ("records missing", lambda: KG.from_records([{"id": "a"}], [{"subject": None}]),
     ("facts", 0, "subject"), "missing", None),
    ("records no key", lambda: KG.from_records([{"name": "a"}], []),
     ("entities", 0, "id"), "missing", None),
    ("arrays missing", lambda: KG.from_arrays(**BASE, mention_chunk=[0]),
     ("mentions", None, "entity"), "missing", None),
    ("check missing", lambda: GraphTables(
        entities={"id": ["a"]}, facts={"subject": ["a"], "confidence": [None]}).check(),
     ("facts", 0, "confidence"), "missing", None),
    ("tables no column", lambda: GraphTables(entities={"name": ["a"]}, facts={"subject": []}),
     ("entities", None, "id"), "missing", None),
    # limits
    ("arrays capacity", lambda: KG.from_arrays(**BASE, predicate=[0, 70000]),
     ("facts", None, "predicate"), "capacity", 70000),
]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "loc", "kind", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_python_checks_locate_the_error(
    build: Callable[[], Any], loc: Loc, kind: str, value: Any
) -> None:
    with pytest.raises(DataError) as info:
        build()
    err = info.value
    assert (err.loc, err.kind) == (loc, kind), str(err)
    if value is not ...:
        assert err.input == value and type(err.input) is type(value), repr(err.input)
    entry = err.errors()[0]
    assert (entry["type"], entry["loc"]) == (kind, loc)
    if not isinstance(err, BadDataError):
        assert entry["msg"] == str(err)
        if loc[1] is not None:  # the message names the same place
            assert str(err).startswith(f"{loc[0]} row {loc[1]}: ")


def test_messages_are_unchanged() -> None:
    """The fields come with the message users already read."""
    with pytest.raises(DataError, match=r"^facts row 1: subject = 5 refers to no entity "):
        KG.from_arrays(fact_subject=[0, 5], fact_object=[1, 2], n_entities=3)
    with pytest.raises(DataError, match=r"^entities.name has 1 rows, expected 3$") as info:
        KG.from_arrays(**BASE, entity_names=["a"])
    assert info.value.ctx == {"expected": 3, "got": 1}


def test_a_refused_load_lists_every_reported_row() -> None:
    """errors() has one entry per row the report lists, the dependent ones included; the
    error's own fields are the first row's."""
    tables = GraphTables(
        entities={"id": ["a", "b", "a"], "tenant": ["x", None, "x"]},
        facts={"subject": ["a", "b", "q"], "confidence": [0.5, 0.5, 1.5]},
    )
    with pytest.raises(BadDataError) as info:
        tables.check()
    err = info.value
    got = [(e["type"], e["loc"], e["input"]) for e in err.errors()]
    assert got == [
        ("missing", ("entities", 1, "tenant"), None),
        ("duplicate", ("entities", 2, "id"), "a"),
        ("dependent", ("facts", 1, "subject"), "b"),
        ("dangling", ("facts", 2, "subject"), "q"),
    ]
    assert err.loc == ("entities", 1, "tenant") and err.kind == "missing"
    assert (
        err.errors()[2]["msg"] == "facts row 1: subject = 'b' is entities row 1, which was refused"
    )
    assert err.errors()[1]["ctx"] == {
        "reason": "duplicate id 'a' (first at row 0)",
        "dependent": False,
        "id": "a",
    }
    assert err.ctx == {"refused": {"entities": 2, "facts": 2}}
    rows = [r for t in err.report.tables for r in t.first]
    assert [(r.column, r.kind) for r in rows] == [
        ("tenant", "missing"),
        ("id", "duplicate"),
        ("subject", "dependent"),
        ("subject", "dangling"),
    ]
    # skip: the same rows, reported, not raised
    _, report = tables.check(on_bad="skip")
    assert [r.kind for t in report.tables for r in t.first] == [
        "missing", "duplicate", "dependent", "dangling",
    ]  # fmt: skip
    back = pickle.loads(pickle.dumps(err))
    assert back.errors() == err.errors() and back.loc == err.loc


def test_unknown_ids_and_tenants_carry_the_value() -> None:
    g = KG.from_records([{"id": "a", "tenant": "x"}], [{"subject": "a", "object": None}])
    with pytest.raises(UnknownIdError) as info:
        g.entity_index(["a", "zz"])
    assert (info.value.kind, info.value.input, info.value.row) == ("unknown_id", "zz", 1)
    with pytest.raises(UnknownTenantError) as tinfo:
        g.tenant_code("y")
    assert (tinfo.value.kind, tinfo.value.input) == ("unknown_tenant", "y")


def test_python_parameter_errors_name_the_parameter() -> None:
    g = KG.from_records([{"id": "a"}], [{"subject": "a", "object": None}])
    with pytest.raises(ParameterError, match=r"^invalid parameter max_hops: ") as info:
        g.spread(["a"], max_hops=-1)
    err = info.value
    assert (err.parameter, err.kind, err.input) == ("max_hops", "invalid_parameter", -1)
    assert err.errors()[0]["ctx"] == {"parameter": "max_hops"}
    with pytest.raises(ParameterError, match=r"^invalid parameter direction: ") as info:
        g.spread(["a"], direction="up")  # type: ignore[arg-type]
    assert (info.value.parameter, info.value.input) == ("direction", "up")
