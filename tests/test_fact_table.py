"""The per-index fact table (``GraphIndex.fact_table``) holds, row by row, exactly the
columns a fact hit reads, for int and object ids, literal facts and unknown times; it is
built once per index and an update's new index builds its own."""

from __future__ import annotations

import numpy as np
import pytest
from graphrecall import GraphTables
from graphrecall.index import GraphIndex
from graphrecall.recipes.base import NULL_SINCE

NULL = NULL_SINCE


def _tables(entity_ids: list[object], fact_ids: list[object]) -> GraphTables:
    """Four entities, four facts: two links, one literal, one link without a time."""
    e = entity_ids
    return GraphTables(
        entities={"id": e, "name": ["ann", "bob", "cy", "dee"], "tenant": ["t"] * 4},
        facts={
            "id": fact_ids,
            "subject": [e[0], e[1], e[2], e[3]],
            "object": [e[1], None, e[3], e[0]],
            "object_value": [None, "42", None, None],
            "predicate": ["knows", "age", "likes", "knows"],
            "description": ["d0", None, "d2", None],
            "confidence": [0.9, 0.5, 0.25, 1.0],
            "strength": [0.1, 0.2, 0.3, 0.4],
            "created_at": [100, 200, 300, NULL],
        },
    )


def _expected(index: GraphIndex, f: int) -> tuple[object, ...]:
    s, o = int(index.fact_subject[f]), int(index.fact_object[f])
    ids = index.graph.entity_ids
    return (
        float(index.fact_confidence[f]),
        float(index.fact_strength[f]),
        s,
        o,
        int(index.fact_since[f]),
        ids[s].item() if isinstance(ids[s], np.generic) else ids[s],
        None if o < 0 else ids[o].item() if isinstance(ids[o], np.generic) else ids[o],
        index.graph.fact_ids[f].item()
        if isinstance(index.graph.fact_ids[f], np.generic)
        else index.graph.fact_ids[f],
        index.fact_predicate[f],
        index.fact_value[f],
        index.fact_description[f],
        index.entity_name[s],
        None if o < 0 else index.entity_name[o],
    )


@pytest.mark.parametrize(
    ("entity_ids", "fact_ids"),
    [
        ([10, 20, 30, 40], [7, 8, 9, 11]),
        (["a", "b", "c", "d"], ["f0", "f1", "f2", "f3"]),
        ([10, 20, 30, 40], ["f0", "f1", "f2", "f3"]),
        (["a", "b", "c", "d"], [7, 8, 9, 11]),
    ],
)
def test_rows_are_the_columns(entity_ids: list[object], fact_ids: list[object]) -> None:
    index = GraphIndex.build(_tables(entity_ids, fact_ids), embedder=None)
    table = index.fact_table
    assert index.fact_table is table  # built once
    facts = np.array([3, 1, 0, 2, 1], dtype=np.int64)
    cols = table.rows(facts)
    got = list(zip(*cols, strict=True))
    for row, f in zip(got, facts.tolist(), strict=True):
        exp = _expected(index, f)
        # The object id of a literal is left to the caller when ids are ints.
        if int(index.fact_object[f]) < 0:
            row = (*row[:6], None, *row[7:])
        assert row == exp
        assert [type(x) for x in row] == [type(x) for x in exp]


def test_an_empty_gather_and_an_empty_graph() -> None:
    index = GraphIndex.build(_tables([1, 2, 3, 4], [1, 2, 3, 4]), embedder=None)
    assert all(c == [] for c in index.fact_table.rows(np.zeros(0, dtype=np.int64)))


def test_a_new_index_builds_its_own_table() -> None:
    old = GraphIndex.build(_tables([10, 20, 30, 40], [7, 8, 9, 11]), embedder=None)
    old_table = old.fact_table
    new_tables = _tables([10, 20, 30, 40], [7, 8, 9, 11])
    new_tables.facts["confidence"] = np.array([0.1, 0.2, 0.3, 0.4])
    new = GraphIndex.build(new_tables, embedder=None, previous=old)
    assert new.fact_table is not old_table
    assert new.fact_table.rows(np.arange(4))[0] == [0.1, 0.2, 0.3, 0.4]
