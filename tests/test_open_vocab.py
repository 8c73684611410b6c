"""Statuses and sources are the user's words: unknown ones get the next codes and neutral
weights instead of refusing the row; weights can be given by word; an edge list's
``source`` / ``target`` columns are its endpoints, not a provenance; and the indexer does not
advise skipping rows when most of a table would go."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from graphrecall import KnowledgeGraph
from graphrecall.errors import DataError, ParameterError
from graphrecall.indexer.args import skip_advice
from graphrecall.scoring import FactScoreProfile, score_facts
from graphrecall.storage.arrow import load_arrow
from graphrecall.storage.snapshot import load_snapshot, save_snapshot
from graphrecall.storage.sqlite import SQLiteStore
from graphrecall.tables import GraphTables, LoadReport
from graphrecall.tables.constants import SOURCES, STATUSES
from graphrecall.tables.report import TableReport

ENTS = {"id": ["a", "b", "c"], "name": ["A", "B", "C"]}


def facts(status: list[object], source: list[object] | None = None) -> dict[str, list[object]]:
    f: dict[str, list[object]] = {
        "subject": ["a", "b", "a"],
        "object": ["b", "c", "c"],
        "predicate": ["knows"] * 3,
        "status": status,
    }
    if source is not None:
        f["source"] = source
    return f


def test_unknown_statuses_and_sources_get_the_next_codes() -> None:
    t = GraphTables(
        entities=ENTS, facts=facts(["active", "confirmed", "ended"], ["crm", "file", "crm"])
    )
    assert t.check()[1].ok
    graph, _ = t.to_graph()
    assert graph.statuses.names == (*STATUSES, "active", "ended")
    assert graph.sources.names == (*SOURCES, "crm")
    rows = graph.facts([0, 1, 2])
    assert [r["status"] for r in rows] == ["active", "confirmed", "ended"]
    assert [r["source"] for r in rows] == ["crm", "file", "crm"]


def test_the_same_through_from_records_and_codes_still_checked() -> None:
    g = KnowledgeGraph.from_records(
        [{"id": e} for e in ENTS["id"]],
        [{"subject": "a", "object": "b", "status": "pending"}],
    )
    assert g.facts([0])[0]["status"] == "pending"
    # A code is not a word: out of range it is refused, named.
    with pytest.raises(DataError, match="status"):
        GraphTables(entities=ENTS, facts=facts([0, 1, 9])).to_graph()


def test_more_words_than_a_byte_holds_is_a_precise_error() -> None:
    n = 300
    t = GraphTables(
        entities={"id": [f"e{i}" for i in range(n + 1)]},
        facts={
            "subject": [f"e{i}" for i in range(n)],
            "object": [f"e{i + 1}" for i in range(n)],
            "status": [f"w{i}" for i in range(n)],
        },
    )
    with pytest.raises(DataError, match=r"facts\.status holds 304 distinct status names"):
        t.to_graph()


def test_unknown_words_weigh_neutral_and_weights_go_by_word() -> None:
    statuses = (*STATUSES, "active")
    sources = (*SOURCES, "crm")
    # Codes: confirmed 1, active 4; user_edit 0, crm 4.
    status = np.array([1, 4], dtype=np.uint8)
    source = np.array([0, 4], dtype=np.uint8)
    args = dict(
        confidence=[1.0, 1.0],
        source=source,
        status=status,
        last_accessed=[0, 0],
        access_count=[0, 0],
        now=0,
    )
    plain = score_facts(**args)  # type: ignore[arg-type]
    # The designs' weights by code; a new word is neutral (1.0 x 1.0).
    assert plain.tolist() == pytest.approx([2.0 * 1.2, 1.0])
    profile = FactScoreProfile.for_words(
        statuses, sources, status_weights={"active": 1.5}, source_weights={"crm": 0.5}
    )
    assert profile.status_weights == (1.0, 1.2, 1.0, 1.0, 1.5)
    assert profile.source_weights == (2.0, 1.5, 1.2, 1.0, 0.5)
    weighted = score_facts(**args, profile=profile)  # type: ignore[arg-type]
    assert weighted.tolist() == pytest.approx([2.0 * 1.2, 0.5 * 1.5])
    # A vocabulary in another order keeps each word's design weight.
    flipped = FactScoreProfile.for_words(("confirmed", "staged"), ("file",))
    assert flipped.status_weights == (1.2, 1.0) and flipped.source_weights == (1.5,)
    with pytest.raises(ParameterError, match="actve"):
        FactScoreProfile.for_words(statuses, sources, status_weights={"actve": 2.0})


def test_an_edge_list_reads_source_and_target_as_its_endpoints() -> None:
    ents = pa.table({"id": ["a", "b", "c"]})
    edges = pa.table({"source": ["a", "b"], "target": ["b", "c"], "predicate": ["x", "y"]})
    graph, _ = load_arrow({"entities": ents, "facts": edges}).to_graph()
    rows = graph.facts([0, 1])
    assert [(r["subject"], r["object"]) for r in rows] == [("a", "b"), ("b", "c")]
    assert {r["source"] for r in rows} == {"system"}  # the default provenance
    # A source column without target nor subject is ambiguous: the error says what to map.
    with pytest.raises(DataError, match=r"facts\.subject"):
        load_arrow({"entities": ents, "facts": pa.table({"source": ["a"]})})


def test_skipping_is_advised_only_for_a_small_share() -> None:
    few = LoadReport((TableReport("facts", 1000, 5, 0),))
    assert "--on-bad skip" in skip_advice(few) and "5 of 1,000 facts rows" in skip_advice(few)
    most = LoadReport((TableReport("facts", 1000, 990, 0), TableReport("entities", 10, 0, 0)))
    advice = skip_advice(most)
    assert "--on-bad skip" not in advice and "990 of 1,000 facts rows (99 %)" in advice


def test_new_words_survive_a_store_and_a_snapshot(tmp_path: Path) -> None:
    t = GraphTables(entities=ENTS, facts=facts(["active", "confirmed", "active"], ["crm"] * 3))
    store = SQLiteStore.create(tmp_path / "s.db")
    store.write(t)
    graph, _ = store.read().to_graph()
    store.close()
    save_snapshot(graph, tmp_path / "snap")
    for g in (graph, load_snapshot(tmp_path / "snap")):
        assert [(r["status"], r["source"]) for r in g.facts([0, 1, 2])] == [
            ("active", "crm"),
            ("confirmed", "crm"),
            ("active", "crm"),
        ]
