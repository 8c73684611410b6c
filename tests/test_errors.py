"""Every validation rule: the exception type, its builtin base, and a message that names the
table / row / column or parameter. And no input reaches a Rust panic (pyo3's
``PanicException`` is a ``BaseException`` that ``except Exception`` misses)."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY, examples
from graphrecall import (
    DataError,
    GraphRecallError,
    KnowledgeGraph,
    ParameterError,
    QueryError,
    UnknownIdError,
    UnknownTenantError,
    _core,
)
from hypothesis import given, settings
from hypothesis import strategies as st

KG = KnowledgeGraph
BASE: dict[str, Any] = {"fact_subject": [0, 1], "fact_object": [1, 2]}


def graph() -> KnowledgeGraph:
    """a, b in tenant x; c in tenant y; chunk k (x) mentions a."""
    return KG.from_records(
        entities=[{"id": "a", "tenant": "x"}, {"id": "b", "tenant": "x"},
                  {"id": "c", "tenant": "y"}],
        facts=[{"id": "ab", "subject": "a", "object": "b"},
               {"id": "cc", "subject": "c", "object": "c", "sequence": 3}],
        chunks=[{"id": "k", "tenant": "x"}],
        mentions=[{"chunk": "k", "entity": "a"}],
    )  # fmt: skip


def dense() -> KnowledgeGraph:
    """Entities 0..3 by index (0, 1, 2 in tenant 0; 3 in tenant 1)."""
    return KG.from_arrays(fact_subject=[0, 1], fact_object=[1, 2], entity_tenant=[0, 0, 0, 1])


def raises(exc: type[BaseException], pattern: str, fn: Callable[[], Any]) -> BaseException:
    with pytest.raises(exc, match=pattern) as info:
        fn()
    return info.value


# ------------------------------------------------------------------------------------------
# Build-time data errors: DataError (a ValueError) naming table, row and column


DATA_ERRORS: list[tuple[str, Callable[[], Any], str]] = [
    # dangling references
    ("subject index", lambda: KG.from_arrays(fact_subject=[0, 5], fact_object=[1, 2],
                                             n_entities=3),
     r"^facts row 1: subject = 5 refers to no entity \(there are 3\)$"),
    ("object index", lambda: KG.from_arrays(fact_subject=[0, 1], fact_object=[1, 7],
                                            n_entities=3),
     r"^facts row 1: object = 7 refers to no entity \(there are 3\)$"),
    ("negative subject", lambda: KG.from_arrays(fact_subject=[0, -1], fact_object=[1, 2],
                                                n_entities=3),
     r"^facts row 1: subject = -1 refers to no entity"),
    ("subject id", lambda: KG.from_records(
        [{"id": "a"}], [{"subject": "a", "object": None}, {"subject": "zz", "object": None}]),
     r"^facts row 1: subject = 'zz' refers to no entity$"),
    ("object id", lambda: KG.from_records([{"id": "a"}], [{"subject": "a", "object": "q"}]),
     r"^facts row 0: object = 'q' refers to no entity$"),
    ("object int id", lambda: KG.from_records([{"id": 1}], [{"subject": 1, "object": 3}]),
     r"^facts row 0: object = 3 refers to no entity$"),
    ("missing subject", lambda: KG.from_records([{"id": "a"}], [{"subject": None}]),
     r"^facts row 0: subject is missing$"),
    ("no subject key", lambda: KG.from_records([{"id": "a"}], [{"object": "a"}]),
     r"^facts row 0: has no 'subject'$"),
    ("no id key", lambda: KG.from_records([{"name": "a"}], []),
     r"^entities row 0: has no 'id'$"),
    ("mention chunk", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0, 3],
                                             mention_entity=[0, 1]),
     r"^mentions row 1: chunk = 3 refers to no chunk \(there are 1\)$"),
    ("mention entity", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0, 0],
                                              mention_entity=[0, 9]),
     r"^mentions row 1: entity = 9 refers to no entity \(there are 3\)$"),
    ("mention entity id", lambda: KG.from_records(
        [{"id": "a"}], [], [{"id": "k"}], [{"chunk": "k", "entity": "b"}]),
     r"^mentions row 0: entity = 'b' refers to no entity$"),
    ("mention chunk id", lambda: KG.from_records(
        [{"id": "a"}], [], [{"id": "k"}], [{"chunk": "d", "entity": "a"}]),
     r"^mentions row 0: chunk = 'd' refers to no chunk$"),
    ("mention half", lambda: KG.from_arrays(**BASE, mention_chunk=[0]),
     r"^mentions need both mention_chunk and mention_entity$"),
    # weights
    ("confidence NaN", lambda: KG.from_arrays(**BASE, confidence=[0.5, float("nan")]),
     r"^facts row 1: confidence = NaN is NaN; confidence must be a number in \[0, 1\]$"),
    ("confidence inf", lambda: KG.from_arrays(**BASE, confidence=[0.5, float("inf")]),
     r"^facts row 1: confidence = inf is out of range; confidence must be in \[0, 1\]$"),
    ("confidence > 1", lambda: KG.from_arrays(**BASE, confidence=[1.5, 0.5]),
     r"^facts row 0: confidence = 1.5 is out of range"),
    ("confidence < 0", lambda: KG.from_arrays(**BASE, confidence=[0.5, -0.1]),
     r"^facts row 1: confidence = -0.1 is out of range"),
    ("confidence text", lambda: KG.from_arrays(**BASE, confidence=["a", "b"]),
     r"^facts.confidence must hold numbers"),
    ("strength NaN", lambda: KG.from_arrays(**BASE, strength=[float("nan"), 0.5]),
     r"^facts row 0: strength = NaN is NaN; strength must be a finite number >= 0$"),
    ("strength inf", lambda: KG.from_arrays(**BASE, strength=[1, float("inf")]),
     r"^facts row 1: strength = inf is out of range; strength must be a finite number >= 0$"),
    ("strength < 0", lambda: KG.from_arrays(**BASE, strength=[1, -1]),
     r"^facts row 1: strength = -1 is out of range"),
    # codes and vocabularies
    ("status code < 0", lambda: KG.from_arrays(**BASE, status=[0, -1]),
     r"^facts row 1: status = -1 is an unknown status code \(known: \['staged', "),
    ("status code big", lambda: KG.from_arrays(**BASE, status=[0, 4]),
     r"^facts row 1: status = 4 is an unknown status code"),
    ("status code 300", lambda: KG.from_arrays(**BASE, status=[0, 300]),
     r"^facts row 1: status = 300 is an unknown status code"),
    ("source code < 0", lambda: KG.from_arrays(**BASE, source=[-2, 0]),
     r"^facts row 0: source = -2 is an unknown source code \(known: \['user_edit', "),
    ("source code big", lambda: KG.from_arrays(**BASE, source=[0, 9]),
     r"^facts row 1: source = 9 is an unknown source code"),
    # Names are an open vocabulary (tests/test_open_vocab.py); a value that is no name is not.
    ("status not a name", lambda: KG.from_arrays(**BASE, status=["confirmed", 2.5]),
     r"^facts row 1: status = 2\.5 is an unknown status"),
    ("predicate code < 0", lambda: KG.from_arrays(**BASE, predicate=[0, -1]),
     r"^facts row 1: predicate = -1 is negative$"),
    ("predicate code", lambda: KG.from_arrays(**BASE, predicate=[0, 5], predicates=["a", "b"]),
     r"^facts row 1: predicate = 5 is an unknown predicate code \(known: \['a', 'b'\]\)$"),
    ("predicate name", lambda: KG.from_arrays(**BASE, predicate=["a", "zz"],
                                              predicates=["a", "b"]),
     r"^facts row 1: predicate = (np\.str_\()?'zz'\)? is an unknown predicate"),
    ("predicate codes", lambda: KG.from_arrays(**BASE, predicate=[0, 70000]),
     r"^facts.predicate codes go up to 70000; at most 65536 predicates$"),
    ("too many statuses", lambda: KG.from_arrays(**BASE, status=[0, 299],
                                                 statuses=[f"s{i}" for i in range(300)]),
     r"^status codes = 300 exceeds the limit of 256$"),
    ("vocabulary not unique", lambda: KG.from_arrays(**BASE, statuses=["a", "a"]),
     r"^status names must be unique"),
    ("unknown chunk tenant", lambda: KG.from_records(
        [{"id": "a", "tenant": "x"}], [], [{"id": "k", "tenant": "y"}]),
     r"^chunks row 0: tenant = (np\.str_\()?'y'\)? is an unknown tenant \(known: \['x'\]\)$"),
    ("negative tenant", lambda: KG.from_arrays(**BASE, entity_tenant=[0, -1, 0]),
     r"^entities row 1: tenant = -1 is negative$"),
    ("access_count < 0", lambda: KG.from_arrays(**BASE, access_count=[0, -3]),
     r"^facts row 1: access_count = -3 is negative$"),
    ("access_count big", lambda: KG.from_arrays(**BASE, access_count=[0, 2**40]),
     r"^facts row 1: access_count = 1099511627776 is larger than 4294967294$"),
    ("access_count float", lambda: KG.from_arrays(**BASE, access_count=[0, 1.5]),
     r"^facts row 1: access_count = .*1\.5.* is not an integer$"),
    # tenants
    ("cross-tenant fact", lambda: KG.from_arrays(**BASE, entity_tenant=[0, 0, 1]),
     r"^facts row 1: subject 1 belongs to tenant 0 but object 2 belongs to tenant 1; "
     r"rows may not cross tenants$"),
    ("cross-tenant fact records", lambda: KG.from_records(
        [{"id": "a", "tenant": "x"}, {"id": "b", "tenant": "y"}],
        [{"subject": "a", "object": None}, {"subject": "a", "object": "b"}]),
     r"^facts row 1: subject .* belongs to tenant .* but object .* belongs to tenant .*; "
     r"rows may not cross tenants$"),
    ("cross-tenant mention", lambda: KG.from_arrays(
        **BASE, entity_tenant=[0, 0, 0, 1], chunk_tenant=[0], mention_chunk=[0, 0],
        mention_entity=[0, 3]),
     r"^mentions row 1: chunk 0 belongs to tenant 0 but entity 3 belongs to tenant 1; "
     r"rows may not cross tenants$"),
    # duplicates
    ("duplicate fact id", lambda: KG.from_arrays(**BASE, fact_ids=["x", "x"]),
     r"^facts row 1: duplicate id 'x'$"),
    ("duplicate fact int id", lambda: KG.from_arrays(**BASE, fact_ids=[3, 3]),
     r"^facts row 1: duplicate id 3$"),
    ("duplicate chunk id", lambda: KG.from_arrays(**BASE, chunk_ids=["c", "c"]),
     r"^chunks row 1: duplicate id 'c'$"),
    ("duplicate mention", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0, 0, 0],
                                                 mention_entity=[0, 1, 0]),
     r"^mentions row 2: duplicate mention of entity 0 by chunk 0 \(first given at row 0\)$"),
    ("zero mention count", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0, 0],
                                                  mention_entity=[0, 1], mention_count=[1, 0]),
     r"^mentions row 1: count = 0 is not a mention; counts must be >= 1$"),
    ("negative mention count", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0],
                                                      mention_entity=[0], mention_count=[-1]),
     r"^mentions row 0: count = -1 is negative$"),
    # times
    ("valid_from > valid_to", lambda: KG.from_arrays(**BASE, valid_from=[5, 10],
                                                     valid_to=[6, 9]),
     r"^facts row 1: valid_from = 10 is after valid_to = 9$"),
    ("time text", lambda: KG.from_arrays(**BASE, last_accessed=["yesterday", None]),
     r"^facts row 0: last_accessed = 'yesterday' is not a time$"),
    ("time inf", lambda: KG.from_arrays(**BASE, last_accessed=[1.0, float("inf")]),
     r"^facts row 1: last_accessed = inf is not a time$"),
    # lengths and shapes
    ("object length", lambda: KG.from_arrays(fact_subject=[0, 1], fact_object=[1]),
     r"^facts.object has 1 rows, expected 2$"),
    ("confidence length", lambda: KG.from_arrays(**BASE, confidence=[0.5]),
     r"^facts.confidence has 1 rows, expected 2$"),
    ("strength length", lambda: KG.from_arrays(**BASE, strength=[0.5, 0.5, 0.5]),
     r"^facts.strength has 3 rows, expected 2$"),
    ("status length", lambda: KG.from_arrays(**BASE, status=["staged"]),
     r"^facts.status has 1 rows, expected 2$"),
    ("predicate length", lambda: KG.from_arrays(**BASE, predicate=["a"]),
     r"^facts.predicate has 1 rows, expected 2$"),
    ("last_accessed length", lambda: KG.from_arrays(**BASE, last_accessed=[1]),
     r"^facts.last_accessed has 1 rows, expected 2$"),
    ("sequence length", lambda: KG.from_arrays(**BASE, sequence=[1]),
     r"^facts.sequence has 1 rows, expected 2$"),
    ("tenant length", lambda: KG.from_arrays(**BASE, entity_ids=[0, 1, 2], entity_tenant=[0, 0]),
     r"^entities.tenant has 2 rows, expected 3$"),
    ("name length", lambda: KG.from_arrays(**BASE, entity_names=["a"]),
     r"^entities.name has 1 rows, expected 3$"),
    ("fact id length", lambda: KG.from_arrays(**BASE, fact_ids=[1]),
     r"^fact ids: expected 2 ids in one dimension, got shape \(1,\)$"),
    ("object_value length", lambda: KG.from_arrays(**BASE, object_value=["a"]),
     r"^facts.object_value has 1 rows, expected 2$"),
    ("chunk tenant length", lambda: KG.from_arrays(**BASE, chunk_ids=["a", "b"],
                                                   chunk_tenant=[0]),
     r"^chunks.tenant has 1 rows, expected 2$"),
    ("mention entity length", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0, 0],
                                                     mention_entity=[0]),
     r"^mentions.entity has 1 rows, expected 2$"),
    ("mention count length", lambda: KG.from_arrays(**BASE, n_chunks=1, mention_chunk=[0],
                                                    mention_entity=[0], mention_count=[1, 1]),
     r"^mentions.count has 2 rows, expected 1$"),
    ("two-dimensional", lambda: KG.from_arrays(fact_subject=[[0, 1]], fact_object=[[1, 2]]),
     r"^facts.subject must be one-dimensional, got shape \(1, 2\)$"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "pattern"), [c[1:] for c in DATA_ERRORS], ids=[c[0] for c in DATA_ERRORS]
)
def test_data_errors(build: Callable[[], Any], pattern: str) -> None:
    err = raises(DataError, pattern, build)
    assert isinstance(err, ValueError) and isinstance(err, GraphRecallError)


def test_duplicate_entity_id_names_the_entities_table() -> None:
    """The message names the table "entities" (as every other message does)."""
    raises(
        DataError,
        r"^entities row 1: duplicate id 'a'$",
        lambda: KG.from_records([{"id": "a"}, {"id": "a"}], []),
    )
    raises(
        DataError,
        r"^entities row 2: duplicate id 1$",
        lambda: KG.from_records([{"id": 1}, {"id": 2}, {"id": 1}], []),
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("sequence", 1.5), ("sequence", float("inf")), ("last_accessed", 1e30)],
)
def test_non_integer_or_unrepresentable_numbers_are_data_errors(column: str, value: float) -> None:
    """A sequence number of 1.5 is not silently truncated, and infinite / 1e30 values are
    not cast to garbage (with a numpy RuntimeWarning)."""
    raises(
        DataError,
        rf"^facts row 1: {column} = ",
        lambda: KG.from_arrays(fact_subject=[0, 0], fact_object=[1, 1], **{column: [1, value]}),
    )


@pytest.mark.parametrize("column", ["confidence", "strength"])
def test_float32_overflow_is_a_data_error_naming_the_value(column: str) -> None:
    """1e300 overflows float32: DataError naming the given value, without a RuntimeWarning
    (which filterwarnings=error turns into the exception here)."""
    raises(
        DataError,
        rf"^facts row 1: {column} = 1e\+300 is ",
        lambda: KG.from_arrays(**BASE, **{column: [0.5, 1e300]}),
    )


def test_negative_entity_count_is_a_data_error() -> None:
    raises(
        DataError, r"n_entities", lambda: KG.from_arrays(fact_subject=[], fact_object=[],
                                                          n_entities=-1)
    )  # fmt: skip


# ------------------------------------------------------------------------------------------
# Query-time errors


def test_unknown_tenant() -> None:
    g = graph()
    for call in (
        lambda: g.spread(["a"], tenant="zz"),
        lambda: g.graph_recall(["a"], tenant="zz"),
        lambda: g.personalized_pagerank(["a"], tenant="zz"),
        lambda: g.spread_plan(tenant="zz"),
        lambda: g.recall_plan(tenant="zz"),
        lambda: g.tenant_code("zz"),
    ):
        err = raises(
            UnknownTenantError, r"^unknown tenant 'zz'; the graph holds \['x', 'y'\]$", call
        )
        assert isinstance(err, KeyError) and isinstance(err, GraphRecallError)
        assert str(err) == "unknown tenant 'zz'; the graph holds ['x', 'y']"  # not quoted
    d = dense()
    raises(
        UnknownTenantError,
        r"^unknown tenant 7; the graph holds \[0, 1\]$",
        lambda: d.spread(np.array([0]), tenant=7),
    )
    with pytest.raises(KeyError):
        d.spread(np.array([0]), tenant=-1)


def test_unknown_ids() -> None:
    g = graph()
    cases = [
        (lambda: g.spread(["zz"]), r"^anchors row 0: entity = 'zz' refers to no entity$"),
        (lambda: g.graph_recall(["a", "zz"]), r"^anchors row 1: entity = 'zz' refers"),
        (lambda: g.personalized_pagerank(["zz"]), r"^seeds row 0: entity = 'zz' refers"),
        (lambda: g.spread([["a"], ["zz"]]), r"^anchors row 1: entity = 'zz'"),
        (lambda: g.adjacency("zz"), r"^entities row 0: entity = 'zz' refers to no entity$"),
        (lambda: g.entity_index(["a", "zz"]), r"^entities row 1: entity = 'zz'"),
        (lambda: g.facts(["ab", "zz"]), r"^facts row 1: fact = 'zz' refers to no fact$"),
        (lambda: g.chunk_index(["zz"]), r"^chunks row 0: chunk = 'zz' refers to no chunk$"),
        (lambda: g.mention_boost([["zz"]], [[0.1]], [[]], [[]], [[]], [[]]),
         r"^chunks row 0: chunk = 'zz' refers to no chunk$"),
        (lambda: g.mention_boost([["k"]], [[0.1]], [["zz"]], [[]], [[]], [[]]),
         r"^entities row 0: entity = 'zz' refers to no entity$"),
    ]  # fmt: skip
    ints = KG.from_records([{"id": 5}, {"id": 6}], [{"subject": 5, "object": 6}])
    cases += [
        (lambda: ints.spread([7]), r"^anchors row 0: entity = 7 refers to no entity$"),
        (lambda: ints.spread(np.array([7])), r"^anchors row 0: entity = 7 refers"),
        (lambda: ints.graph_recall([[5], [0]]), r"^anchors row 1: entity = 0 refers"),
        (lambda: ints.facts([99]), r"^facts row 0: fact = 99 refers to no fact"),
    ]
    for call, pattern in cases:
        err = raises(UnknownIdError, pattern, call)
        assert isinstance(err, KeyError) and isinstance(err, GraphRecallError)
        assert not str(err).startswith(("'", '"'))


def test_unknown_dense_anchor() -> None:
    """Graphs without external ids take indices: an index outside the graph is a
    QueryError naming the query (documented on QueryError); a value that is no index at
    all fails the id conversion (UnknownIdError)."""
    d = dense()
    raises(
        QueryError,
        r"^query 1: anchor 9 is not an entity \(the graph has 4 entities\)$",
        lambda: d.spread([[0], [9]]),
    )
    raises(
        QueryError,
        r"^query 0: anchor 9 is not an entity \(the graph has 4 entities\)$",
        lambda: d.spread(np.array([9])),
    )
    raises(
        QueryError,
        r"^query 1: anchor -1 is not an entity index$",
        lambda: d.spread(np.array([[0], [-1]])),
    )
    raises(
        QueryError,
        r"^query 0: anchor 4294967295 is not an entity index$",
        lambda: d.spread(np.array([2**32 - 1])),
    )
    raises(
        UnknownIdError,
        r"^anchors row 0: entity = .*0\.5.* is not an integer$",
        lambda: d.spread([0.5]),
    )
    raises(UnknownIdError, r"^anchors row 0: entity is missing$", lambda: d.spread([None]))


def test_anchors_of_two_tenants_name_the_query() -> None:
    g = graph()
    for call, q in (
        (lambda: g.spread([["a"], ["a", "c"]]), 1),
        (lambda: g.graph_recall([["a"], ["b"], ["c", "a"]]), 2),
        (lambda: g.personalized_pagerank([["a", "c"]]), 0),
        (lambda: g.spread(np.array([["a", "b"], ["b", "c"]], dtype=object)), 1),
        (lambda: g.spread(["c"], tenant="x"), 0),
    ):
        err = raises(
            QueryError,
            rf"^query {q}: anchor \d+ belongs to tenant \d+, not to the "
            r"query's tenant \d+$",
            call,
        )
        assert isinstance(err, ValueError) and isinstance(err, GraphRecallError)


def test_bad_scores_and_seed_weights() -> None:
    g = graph()
    raises(
        QueryError,
        r"^query 0: anchor 0 has a non-finite score NaN$",
        lambda: g.graph_recall(["a"], [float("nan")]),
    )
    raises(
        QueryError,
        r"^query 1: anchor \d+ has a non-finite score inf$",
        lambda: g.spread([["a"], ["b"]], [[1.0], [float("inf")]]),
    )
    raises(
        QueryError,
        r"^query 0: seed weight -1 is negative$",
        lambda: g.personalized_pagerank(["a"], [-1.0]),
    )
    raises(
        QueryError,
        r"^query 0: seed weights sum to zero$",
        lambda: g.personalized_pagerank(["a", "b"], [0.0, 0.0]),
    )
    raises(QueryError, r"^query 1: has no seeds$", lambda: g.personalized_pagerank([["a"], []]))
    raises(
        ParameterError,
        r"^invalid parameter anchor_scores: 1 scores for 2 anchors$",
        lambda: g.spread(["a", "b"], [1.0]),
    )
    raises(
        ParameterError,
        r"^invalid parameter anchor_scores: 2 scores for 3 anchors$",
        lambda: g.graph_recall([["a", "b"], ["a"]], [[1.0], [1.0]]),
    )


P = ParameterError
PARAM_ERRORS: list[tuple[str, Callable[[KnowledgeGraph], Any], str]] = [
    ("max_hops -1", lambda g: g.spread(["a"], max_hops=-1),
     r"^invalid parameter max_hops: -1 is not in \[0, 64\]$"),
    ("max_hops 65", lambda g: g.spread(["a"], max_hops=65),
     r"^invalid parameter max_hops: 65 is not in \[0, 64\]$"),
    ("recall max_hops 65", lambda g: g.graph_recall(["a"], max_hops=65),
     r"^invalid parameter max_hops: 65 is not in \[0, 64\]$"),
    ("max_hops 2**64", lambda g: g.spread(["a"], max_hops=2**64),
     r"^invalid parameter max_hops: 18446744073709551616 is not in"),
    ("max_hops float", lambda g: g.spread(["a"], max_hops=1.5),
     r"^invalid parameter max_hops: 1.5 is not an integer$"),
    ("max_hops bool", lambda g: g.spread(["a"], max_hops=True),
     r"^invalid parameter max_hops: True is not an integer$"),
    ("max_hops str", lambda g: g.spread(["a"], max_hops="2"),
     r"^invalid parameter max_hops: '2' is not an integer$"),
    ("top_k 0 spread", lambda g: g.spread(["a"], top_k=0, rank="composite"),
     r"^invalid parameter top_k: 0 is not in \[1, "),
    ("top_k 0 recall", lambda g: g.graph_recall(["a"], top_k=0),
     r"^invalid parameter top_k: 0 is not in \[1, "),
    ("top_k 0 ppr", lambda g: g.personalized_pagerank(["a"], top_k=0),
     r"^invalid parameter top_k: 0 is not in \[1, "),
    ("top_k_chunks 0", lambda g: g.personalized_pagerank(["a"], top_k_chunks=0),
     r"^invalid parameter top_k_chunks: 0 is not in \[1, "),
    ("top_k bool", lambda g: g.graph_recall(["a"], top_k=True),
     r"^invalid parameter top_k: True is not an integer$"),
    ("top_k str", lambda g: g.graph_recall(["a"], top_k="20"),
     r"^invalid parameter top_k: '20' is not an integer$"),
    ("per_entity_limit 0", lambda g: g.spread(["a"], per_entity_limit=0),
     r"^invalid parameter per_entity_limit: 0 is not in \[1, 4294967295\]$"),
    ("per_entity_limit str", lambda g: g.spread(["a"], per_entity_limit="3"),
     r"^invalid parameter per_entity_limit: '3' is not an integer$"),
    ("max_facts -1", lambda g: g.spread(["a"], max_facts=-1),
     r"^invalid parameter max_facts: -1 is not in \[0, 4294967295\]$"),
    ("max_facts 2**32", lambda g: g.spread(["a"], max_facts=2**32),
     r"^invalid parameter max_facts: 4294967296 is not in"),
    ("damping 0", lambda g: g.personalized_pagerank(["a"], damping=0),
     r"^invalid parameter damping: 0 is not in \(0, 1\)$"),
    ("damping 1", lambda g: g.personalized_pagerank(["a"], damping=1),
     r"^invalid parameter damping: 1 is not in \(0, 1\)$"),
    ("damping NaN", lambda g: g.personalized_pagerank(["a"], damping=float("nan")),
     r"^invalid parameter damping: is NaN$"),
    ("damping inf", lambda g: g.personalized_pagerank(["a"], damping=float("inf")),
     r"^invalid parameter damping: inf is not in \(0, 1\)$"),
    ("damping str", lambda g: g.personalized_pagerank(["a"], damping="0.5"),
     r"^invalid parameter damping: '0.5' is not a number$"),
    ("tol 0", lambda g: g.personalized_pagerank(["a"], tol=0),
     r"^invalid parameter tol: 0 is not a positive number$"),
    ("tol NaN", lambda g: g.personalized_pagerank(["a"], tol=float("nan")),
     r"^invalid parameter tol: is NaN$"),
    ("max_iter 0", lambda g: g.personalized_pagerank(["a"], max_iter=0),
     r"^invalid parameter max_iter: 0 is not in \[1, 100000\]$"),
    ("max_iter 10**6", lambda g: g.personalized_pagerank(["a"], max_iter=10**6),
     r"^invalid parameter max_iter: 1000000 is not in \[1, 100000\]$"),
    ("max_iter float", lambda g: g.personalized_pagerank(["a"], max_iter=2.0),
     r"^invalid parameter max_iter: 2.0 is not an integer$"),
    ("weight", lambda g: g.personalized_pagerank(["a"], weight="foo"),
     r"^invalid parameter weight: .foo. is not one of 'strength', 'confidence', 'uniform'$"),
    ("direction spread", lambda g: g.spread(["a"], direction="sideways"),
     r"^invalid parameter direction: 'sideways' is not one of 'out', 'in', 'both'$"),
    ("direction recall", lambda g: g.graph_recall(["a"], direction="sideways"),
     r"^invalid parameter direction: 'sideways' is not one of"),
    ("direction ppr", lambda g: g.personalized_pagerank(["a"], direction="sideways"),
     r"^invalid parameter direction: 'sideways' is not one of"),
    ("rank", lambda g: g.spread(["a"], rank="foo"),
     r"^invalid parameter rank: 'foo' is not one of None, 'score_fact', 'composite'$"),
    ("dedupe", lambda g: g.graph_recall(["a"], dedupe="foo"),
     r"^invalid parameter dedupe: 'foo' is not one of 'fact', 'triple'$"),
    ("now missing", lambda g: g.spread(["a"], rank="score_fact"),
     r"^invalid parameter now: is required to rank by score_fact$"),
    ("min_confidence NaN", lambda g: g.spread(["a"], min_confidence=float("nan")),
     r"^invalid parameter min_confidence: is NaN$"),
    ("min_confidence 2", lambda g: g.spread(["a"], min_confidence=2),
     r"^invalid parameter min_confidence: 2 is not in \[0, 1\]$"),
    ("min_confidence str", lambda g: g.graph_recall(["a"], min_confidence="x"),
     r"^invalid parameter min_confidence: 'x' is not a number$"),
    ("unknown status", lambda g: g.spread(["a"], statuses=["deleted"]),
     r"^invalid parameter statuses: unknown status 'deleted'; known: \['staged', "),
    ("unknown status code", lambda g: g.spread(["a"], statuses=[300]),
     r"^invalid parameter statuses: unknown status 300"),
    ("unknown predicate", lambda g: g.graph_recall(["a"], predicates=["nope"]),
     r"^invalid parameter predicates: unknown predicate 'nope'; known: \['related_to'\]$"),
    ("max_sequence float", lambda g: g.spread(["a"], max_sequence=1.5),
     r"^invalid parameter max_sequence: 1.5 is not an integer$"),
    ("max_sequence 2**63", lambda g: g.spread(["a"], max_sequence=2**63),
     r"^invalid parameter max_sequence: 9223372036854775808 is not in"),
    ("decay_base", lambda g: g.spread(["a"], rank="score_fact", now=0,
                                      profile=__import__("graphrecall").scoring
                                      .FactScoreProfile(decay_base=-1)),
     r"^invalid parameter decay_base: "),
    ("boost queries", lambda g: g.mention_boost([["k"]], [[0.1], [0.2]], [[]], [[]], [[]], [[]]),
     r"^invalid parameter similarity: 2 queries, chunks has 1$"),
    ("boost similarity length", lambda g: g.mention_boost([["k"]], [[0.1, 0.2]], [[]], [[]],
                                                          [[]], [[]]),
     r"^invalid parameter similarity: must align with chunks$"),
    ("boost similarity NaN", lambda g: g.mention_boost([["k"]], [[float("nan")]], [[]], [[]],
                                                       [[]], [[]]),
     r"^invalid parameter similarity: value at position 0 is not finite$"),
    ("boost distance 0", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [["a"]], [[0]],
                                                   [[1.0]]),
     r"^invalid parameter related_distance: value at position 0 is 0; related entities are "
     r"at distance >= 1$"),
    ("boost strength < 0", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [["a"]], [[1]],
                                                     [[-1.0]]),
     r"^invalid parameter related_strength: value at position 0 is not a finite number >= 0$"),
    ("boost related lengths", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [["a"]],
                                                        [[1, 2]], [[1.0]]),
     r"^invalid parameter related: distance and strength must align with related$"),
    ("boost direct NaN", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [[]], [[]], [[]],
                                                   direct=float("nan")),
     r"^invalid parameter direct: is NaN$"),
    ("boost indirect inf", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [[]], [[]], [[]],
                                                     indirect=float("inf")),
     r"^invalid parameter indirect: inf is not finite$"),
    ("boost centrality length", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [[]], [[]],
                                                          [[]], centrality=[1.0]),
     r"^invalid parameter centrality: has 1 entries, the graph has 3 entities$"),
    ("boost centrality NaN", lambda g: g.mention_boost([["k"]], [[0.1]], [[]], [[]], [[]], [[]],
                                                       centrality=[1.0, float("nan"), 1.0]),
     r"^invalid parameter centrality: value of entity 1 is not finite$"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "pattern"), [c[1:] for c in PARAM_ERRORS], ids=[c[0] for c in PARAM_ERRORS]
)
def test_parameter_errors(call: Callable[[KnowledgeGraph], Any], pattern: str) -> None:
    err = raises(ParameterError, pattern, lambda: call(graph()))
    assert isinstance(err, ValueError) and isinstance(err, GraphRecallError)


def test_max_sequence_needs_sequence_numbers() -> None:
    g = KG.from_arrays(**BASE)
    raises(
        ParameterError,
        r"^invalid parameter max_sequence: the graph holds no fact sequence "
        r"numbers$",
        lambda: g.spread(np.array([0]), max_sequence=3),
    )


def test_non_contiguous_arrays_are_rejected_with_a_message() -> None:
    d = dense()
    raises(
        ParameterError,
        r"^invalid parameter anchors: array must be C-contiguous",
        lambda: d.spread(np.arange(8)[::4]),
    )


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"as_of": "today"}, "as_of"),
        ({"as_of": 2**70}, "as_of"),
        ({"as_of": float("nan")}, "as_of"),
        ({"rank": "score_fact", "now": "today"}, "now"),
        ({"rank": "score_fact", "now": 2**70}, "now"),
        ({"rank": "score_fact", "now": float("inf")}, "now"),
        ({"rank": "score_fact", "now": float("nan")}, "now"),
    ],
    ids=["as_of text", "as_of 2**70", "as_of NaN", "now text", "now 2**70", "now inf", "now NaN"],
)
def test_bad_times_at_query_are_parameter_errors(kwargs: dict[str, Any], name: str) -> None:
    """``as_of`` and ``now`` are query parameters: a value that is not a time (text, NaN,
    beyond int64) is a ParameterError naming it, never silently "no time" (NaN) nor an
    OverflowError."""
    g = graph()
    raises(ParameterError, rf"^invalid parameter {name}: ", lambda: g.spread(["a"], **kwargs))


def test_negative_related_distance_is_a_parameter_error() -> None:
    """Like distance 0 (a ParameterError), a negative distance is a bad parameter."""
    g = graph()
    raises(
        ParameterError,
        r"^invalid parameter related_distance: ",
        lambda: g.mention_boost([["k"]], [[0.1]], [[]], [["a"]], [[-1]], [[1.0]]),
    )


def test_value_error_catches_data_parameter_and_query_errors() -> None:
    g = graph()
    for call in (
        lambda: KG.from_arrays(**BASE, confidence=[2.0, 0.5]),
        lambda: g.spread(["a"], max_hops=-1),
        lambda: g.spread([["a", "c"]]),
    ):
        try:
            call()
        except ValueError as exc:
            assert isinstance(exc, (DataError, ParameterError, QueryError))
        else:
            pytest.fail("no error")
    for call in (lambda: g.spread(["zz"]), lambda: g.spread(["a"], tenant="zz")):
        try:
            call()
        except KeyError as exc:
            assert isinstance(exc, (UnknownIdError, UnknownTenantError))


def test_result_indexing_errors() -> None:
    act = graph().spread([["a"], ["b"]])
    raises(IndexError, r"out of range", lambda: act[2])
    raises(TypeError, r"query index must be an int", lambda: act[True])
    raises(IndexError, r"out of range", lambda: act[0].path(5))


# ------------------------------------------------------------------------------------------
# No panics


def test_huge_top_k_does_not_panic() -> None:
    """top_k is validated up to 2**62; the kernels must not size buffers by it up front
    (graph_recall panics with "capacity overflow")."""
    g = graph()
    for call in (
        lambda: g.graph_recall(["a"], top_k=2**62),
        lambda: g.graph_recall(["a"], top_k=2**62, dedupe="triple"),
        lambda: g.spread(["a"], top_k=2**62, rank="composite"),
        lambda: g.personalized_pagerank(["a"], top_k=2**62, top_k_chunks=2**62),
    ):
        try:
            call()
        except Exception as exc:  # a ParameterError would be fine too
            assert isinstance(exc, ParameterError), exc
        except BaseException as exc:
            pytest.fail(f"{type(exc).__name__}: {exc}")


GARBAGE = st.sampled_from(
    [None, True, False, -1, 0, 1, 2, 3, 64, 65, 2**63, 2**64, -(2**63) - 1, 0.5, -0.5,
     float("nan"), float("inf"), -float("inf"), "", "x", "both", "in", "out", "triple",
     "score_fact", "composite", "uniform", [], [0], ["a"], b"a", 1e300, -1e300]
)  # fmt: skip
# top_k values large enough to allocate gigabytes are left out: they abort the process
# (test_huge_top_k_does_not_panic covers the limit).
TOP_K = st.sampled_from([None, True, -1, 0, 1, 3, 2**64, "3", 1.5, float("nan")])
ANCHORS = st.sampled_from(
    [["a"], ["a", "b"], [], [["a"], ["c"]], [["a"], []], ["zz"], [0], [-1], [2**63], [None],
     [float("nan")], np.array(["a"]), np.array([0]), np.array([2**32]), np.array([-5]),
     np.array([[0, 1]]), np.zeros((1, 1, 1), dtype=np.int64), np.array([0.5]), "a", 0, None,
     [["a", "b"], ["b"]], [[["a"]]], np.arange(4)[::2]]
)  # fmt: skip
SPREAD_KEYS = [
    "max_hops",
    "per_entity_limit",
    "max_facts",
    "direction",
    "statuses",
    "predicates",
    "min_confidence",
    "as_of",
    "max_sequence",
    "tenant",
    "independent_anchors",
    "rank",
    "now",
]
RECALL_KEYS = [
    "max_hops",
    "direction",
    "dedupe",
    "statuses",
    "predicates",
    "min_confidence",
    "as_of",
    "max_sequence",
    "tenant",
]
PPR_KEYS = [
    "damping",
    "tol",
    "max_iter",
    "weight",
    "direction",
    "statuses",
    "min_confidence",
    "tenant",
    "weight_by_count",
]


def kwargs_st(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), GARBAGE, max_size=4)


def no_panic(call: Callable[[], Any]) -> None:
    try:
        call()
    except Exception:
        pass  # any ordinary exception is fine here; types are checked above
    except BaseException as exc:  # PanicException, SystemExit...
        pytest.fail(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")


@pytest.fixture(scope="module")
def graphs() -> dict[str, KnowledgeGraph]:
    seq = KG.from_records(
        [{"id": "a", "tenant": "x"}, {"id": "b", "tenant": "x"}, {"id": "c", "tenant": "y"}],
        [{"subject": "a", "object": "b", "sequence": 1, "valid_from": 0, "valid_to": 5},
         {"subject": "b", "object": None}, {"subject": "c", "object": "c"}],
        [{"id": "k", "tenant": "x"}], [{"chunk": "k", "entity": "a", "count": 2}],
    )  # fmt: skip
    return {"str": seq, "dense": dense()}


@settings(PROPERTY, max_examples=examples(300))
@given(
    st.sampled_from(["str", "dense"]),
    ANCHORS,
    st.sampled_from([None, [1.0], [[1.0], [0.5]], [float("nan")], [-1.0], [1.0, 2.0]]),
    kwargs_st(SPREAD_KEYS),
    kwargs_st(RECALL_KEYS),
    kwargs_st(PPR_KEYS),
    TOP_K,
)
def test_no_input_reaches_a_panic(
    graphs: dict[str, KnowledgeGraph],
    which: str,
    anchors: Any,
    scores: Any,
    spread_kw: dict[str, Any],
    recall_kw: dict[str, Any],
    ppr_kw: dict[str, Any],
    top_k: Any,
) -> None:
    g = graphs[which]
    no_panic(lambda: g.spread(anchors, scores, **spread_kw))
    no_panic(lambda: g.spread(anchors, scores, top_k=top_k, rank="composite"))
    no_panic(lambda: g.graph_recall(anchors, scores, **recall_kw))
    no_panic(lambda: g.graph_recall(anchors, scores, top_k=top_k) if top_k is not None else 0)
    no_panic(lambda: g.personalized_pagerank(anchors, scores, top_k=top_k, **ppr_kw))
    no_panic(lambda: g.adjacency(anchors))
    no_panic(lambda: g.facts(anchors))
    no_panic(
        lambda: g.mention_boost(
            [anchors], [scores or []], [anchors], [anchors], [[1]], [scores or []]
        )
    )


@settings(PROPERTY, max_examples=examples(200))
@given(
    st.lists(st.sampled_from([0, 1, 2, 5, -1, 2**32 - 1, 2**32, None, 1.5, float("nan"), "a"]),
             min_size=1, max_size=4),
    st.lists(st.sampled_from([0.0, 0.5, 1.0, -1.0, 2.0, float("nan"), float("inf"), 1e300]),
             min_size=1, max_size=4),
    st.sampled_from(["confidence", "strength", "access_count", "status", "source", "predicate",
                     "sequence", "last_accessed", "valid_from", "entity_tenant", "mention_count"]),
)  # fmt: skip
def test_no_build_input_reaches_a_panic(
    objects: list[Any], values: list[float], column: str
) -> None:
    n = len(objects)
    kw: dict[str, Any] = {column: (values * n)[:n]}
    if column == "entity_tenant":
        kw = {"entity_tenant": (values * 3)[:3]}
    if column == "mention_count":
        kw = {
            "n_chunks": 1,
            "mention_chunk": [0] * n,
            "mention_entity": list(range(n)),
            "mention_count": (values * n)[:n],
        }
    no_panic(lambda: KG.from_arrays(fact_subject=[0] * n, fact_object=objects, n_entities=3, **kw))
    no_panic(lambda: KG.from_arrays(fact_subject=objects, fact_object=[0] * n, **kw))


def test_messages_are_single_line_and_name_something() -> None:
    """Every DataError message names a table (row and column, or a column) or a limit."""
    for _, build, _ in DATA_ERRORS:
        with pytest.raises(DataError) as info:
            build()
        msg = str(info.value)
        assert "\n" not in msg
        assert re.match(r"^(entities|facts|chunks|mentions|fact ids|status|predicate)", msg), msg


# ------------------------------------------------------------------------------------------
# Structured fields: errors from the core carry table / row / column / kind / input


def core_graph(**columns: Any) -> Any:
    """The native graph of three entities and facts 0 -> 1 -> 2, with `columns` replaced."""
    cols: dict[str, Any] = {
        "entity_tenant": np.zeros(3, np.uint32),
        "fact_subject": np.array([0, 1], np.uint32),
        "fact_object": np.array([1, 2], np.uint32),
        "fact_predicate": np.zeros(2, np.uint32),
        "fact_confidence": np.ones(2, np.float32),
        "fact_strength": np.ones(2, np.float32),
        "fact_status": np.ones(2, np.uint8),
        "fact_source": np.zeros(2, np.uint8),
        "fact_access_count": np.zeros(2, np.uint32),
    }
    cols.update(columns)
    return _core.CoreGraph(**cols, n_predicates=1, n_statuses=4, n_sources=4)


def test_native_dangling_id_carries_its_location() -> None:
    err = raises(
        DataError,
        r"^facts row 1: object = 7 refers to no entity \(there are 3\)$",
        lambda: core_graph(fact_object=np.array([1, 7], np.uint32)),
    )
    assert isinstance(err, DataError)
    assert (err.table, err.row, err.column, err.kind) == ("facts", 1, "object", "dangling")
    assert err.input == 7 and err.parameter is None
    assert err.ctx == {"target": "entity", "count": 3}
    assert err.errors() == [
        {
            "type": "dangling",
            "loc": ("facts", 1, "object"),
            "msg": "facts row 1: object = 7 refers to no entity (there are 3)",
            "input": 7,
            "ctx": {"target": "entity", "count": 3},
        }
    ]


def test_native_nan_weight_carries_its_location() -> None:
    err = raises(
        DataError,
        r"^facts row 1: confidence = NaN ",
        lambda: core_graph(fact_confidence=np.array([0.5, np.nan], np.float32)),
    )
    assert isinstance(err, DataError)
    assert err.loc == ("facts", 1, "confidence")
    assert (err.kind, err.input) == ("invalid_value", "NaN")
    assert err.errors()[0]["type"] == "invalid_value"


def test_native_length_mismatch_and_cross_tenant_fields() -> None:
    err = raises(
        DataError,
        r"^facts.object has 1 rows",
        lambda: core_graph(fact_object=np.ones(1, np.uint32)),
    )
    assert isinstance(err, DataError)
    assert (err.table, err.row, err.column, err.kind) == (
        "facts",
        None,
        "object",
        "length_mismatch",
    )
    assert err.ctx == {"expected": 2, "got": 1}
    err = raises(
        DataError,
        r"rows may not cross tenants$",
        lambda: core_graph(entity_tenant=np.array([0, 0, 1], np.uint32)),
    )
    assert isinstance(err, DataError)
    assert (err.table, err.row, err.column, err.kind) == ("facts", 1, "object", "cross_tenant")
    assert err.input == 2
    assert err.ctx["left"] == "subject" and err.ctx["right_tenant"] == 1


def test_native_parameter_error_names_the_parameter() -> None:
    ids = np.array([1, 2], np.int64)
    err = raises(
        ParameterError,
        r"^invalid parameter k: ",
        lambda: _core.rrf_fuse(
            ids,
            np.array([0, 2], np.uintp),
            np.array([0, 1], np.uintp),
            np.ones(1),
            k=float("nan"),
        ),
    )
    assert isinstance(err, ParameterError)
    assert (err.table, err.row, err.column) == (None, None, None)
    assert (err.kind, err.parameter) == ("invalid_parameter", "k")
    assert err.errors()[0]["ctx"]["parameter"] == "k"


def test_native_query_error_is_located_by_query() -> None:
    err = raises(QueryError, r"^query 1: ", lambda: graph().spread([["a"], ["a", "c"]]))
    assert isinstance(err, QueryError)
    assert (err.table, err.row, err.kind) == ("queries", 1, "invalid_query")


def test_python_raised_errors_take_the_same_fields() -> None:
    plain = DataError("bad")
    assert (plain.table, plain.row, plain.column, plain.kind, plain.input) == (None,) * 5
    assert plain.errors() == [
        {"type": None, "loc": (None, None, None), "msg": "bad", "input": None, "ctx": {}}
    ]
    err = UnknownIdError(
        "unknown id 'zz'", table="entities", column="id", kind="unknown_id", input="zz"
    )
    assert str(err) == "unknown id 'zz'" and isinstance(err, KeyError)
    assert err.loc == ("entities", None, "id")
    assert err.errors()[0]["input"] == "zz"
    param = ParameterError("invalid parameter k: < 0", parameter="k", kind="invalid_parameter")
    assert param.errors()[0]["ctx"] == {"parameter": "k"}


def test_structured_errors_survive_pickling() -> None:
    err = DataError("m", table="facts", row=3, column="subject", kind="dangling", input="x")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is DataError and str(back) == "m"
    assert back.errors() == err.errors()
    tenant = pickle.loads(pickle.dumps(UnknownTenantError("unknown tenant 9", input=9)))
    assert str(tenant) == "unknown tenant 9" and tenant.input == 9


# ------------------------------------------------------------------------------------------
# Out of memory: a MemoryError naming the array, never an abort

OOM_CHILD = r"""
import resource, sys
import numpy as np
from graphrecall import _core
from graphrecall.errors import OutOfMemoryError

def columns(n):
    z32, z8, f32 = np.zeros(n, np.uint32), np.zeros(n, np.uint8), np.zeros(n, np.float32)
    return (np.zeros(1, np.uint32), z32, z32, z32, f32, f32, z8, z8, z32)

def build(cols):
    return _core.CoreGraph(*cols, n_predicates=1, n_statuses=4, n_sources=4)

build(columns(1000))  # start the thread pool (and its allocator arenas) before the limit
cols = columns(8_000_000)  # 8M facts: 256 MB of fact records alone
with open("/proc/self/status") as f:
    size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
limit = size + 48 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    build(cols)
except OutOfMemoryError as exc:
    assert isinstance(exc, MemoryError) and exc.kind == "out_of_memory", exc
    assert exc.ctx["bytes"] > 0 and exc.ctx["what"], exc.ctx
    print("MemoryError:", exc)
    sys.exit(0)
print("built")
sys.exit(3)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")
def test_graph_too_large_for_the_address_space_is_a_memory_error() -> None:
    """A graph whose arrays cannot be allocated raises MemoryError (OutOfMemoryError) naming
    the array; the process does not abort with SIGABRT."""
    done = subprocess.run(
        [sys.executable, "-c", OOM_CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAYON_NUM_THREADS": "2"},
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    assert re.search(r"out of memory: .+ needs \d+ bytes", done.stdout), done.stdout


def test_an_empty_graph_says_it_holds_no_tenant() -> None:
    empty = KnowledgeGraph.from_arrays(
        fact_subject=np.array([], dtype=np.int64),
        fact_object=np.array([], dtype=np.int64),
        n_entities=0,
    )
    with pytest.raises(UnknownTenantError, match=r"the graph holds no tenant\)$") as info:
        empty.spread([0], tenant=0)
    assert info.value.kind == "unknown_tenant"
