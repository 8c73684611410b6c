"""Building a KnowledgeGraph: the three constructors agree, vocabularies, times, adjacency
order, the facts() round trip, stats(), and the result objects' conversions and dtypes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable
from typing import Any

import numpy as np
import pytest
from conftest import NOW, PREDICATES, PROPERTY, GraphData, examples, f32, graph_data
from graphrecall import (
    DEFAULT_SOURCES,
    DEFAULT_STATUSES,
    Activation,
    DataError,
    GraphTables,
    KnowledgeGraph,
    QueryActivation,
    Recall,
    UnknownTenantError,
)
from hypothesis import given, settings
from reference import graph_ref

FACT_KEYS = (
    "subject",
    "object",
    "object_value",
    "predicate",
    "confidence",
    "strength",
    "status",
    "source",
    "access_count",
    "last_accessed",
    "valid_from",
    "valid_to",
    "sequence",
)


def columns(data: GraphData) -> dict[str, Any]:
    """The rows of ``data`` as from_arrays keyword arguments (lists with None)."""
    fs = data.facts

    def col(key: str) -> list[Any]:
        return [f[key] for f in fs]

    out: dict[str, Any] = {
        "entity_ids": [e["id"] for e in data.entities],
        "entity_tenant": [e["tenant"] for e in data.entities],
        "fact_ids": col("id"),
        "fact_subject": np.array(col("subject"), dtype=object),
        "fact_object": np.array(col("object"), dtype=object),
        "predicate": col("predicate"),
        "confidence": col("confidence"),
        "strength": col("strength"),
        "status": col("status"),
        "source": col("source"),
        "access_count": col("access_count"),
        "last_accessed": col("last_accessed"),
        "valid_from": col("valid_from"),
        "valid_to": col("valid_to"),
        "sequence": col("sequence"),
        "object_value": col("object_value"),
        "predicates": PREDICATES,
    }
    if data.chunks:
        out["chunk_ids"] = [c["id"] for c in data.chunks]
        out["chunk_tenant"] = [c["tenant"] for c in data.chunks]
    if data.mentions:
        out["mention_chunk"] = np.array([m["chunk"] for m in data.mentions], dtype=object)
        out["mention_entity"] = np.array([m["entity"] for m in data.mentions], dtype=object)
        out["mention_count"] = [m["count"] for m in data.mentions]
    return out


def dataframes(data: GraphData) -> KnowledgeGraph:
    pd = pytest.importorskip("pandas")
    return KnowledgeGraph.from_dataframes(
        pd.DataFrame(data.entities),
        pd.DataFrame(data.facts),
        pd.DataFrame(data.chunks) if data.chunks else None,
        pd.DataFrame(data.mentions) if data.mentions else None,
        predicates=PREDICATES,
    )


def snapshot(g: KnowledgeGraph, data: GraphData) -> dict[str, Any]:
    """Everything observable about a graph, as plain values (a missing object_value read
    as NaN counts as None here: test_from_dataframes_missing_object_value_is_none)."""
    anchors = [e["id"] for e in data.entities]
    act = g.spread([[a] for a in anchors], direction="both", max_hops=3)
    ppr = g.personalized_pagerank([[a] for a in anchors])
    facts = g.facts([f["id"] for f in data.facts])
    for f in facts:
        if isinstance(f["object_value"], float) and f["object_value"] != f["object_value"]:
            f["object_value"] = None
    return {
        "facts": facts,
        "adjacency": [[x.tolist() for x in g.adjacency(a)] for a in anchors],
        "stats": g.stats(),
        "vocab": (g.statuses.names, g.sources.names, g.predicates.names, g.tenants.names),
        "spread": [(q.fact_ids.tolist(), q.hops.tolist()) for q in act],
        "ppr": [(ppr[k].entity_ids.tolist(), ppr[k].chunk_ids.tolist()) for k in range(len(ppr))],
        "ppr_chunk_scores": ppr.chunk_scores.tolist(),
    }


@settings(PROPERTY, max_examples=examples(40))
@given(graph_data())
def test_constructors_agree(data: GraphData) -> None:
    base = snapshot(data.build(), data)
    assert snapshot(KnowledgeGraph.from_arrays(**columns(data)), data) == base
    assert snapshot(dataframes(data), data) == base


def test_from_dataframes_missing_object_value_is_none() -> None:
    """facts() gives None for a fact without a literal value whichever constructor built
    the graph (pandas >= 3 stores missing strings as NaN)."""
    pd = pytest.importorskip("pandas")
    entities = [{"id": "u"}, {"id": "j"}]
    facts = [
        {"subject": "u", "object": "j", "object_value": None},
        {"subject": "u", "object": None, "object_value": "dark mode"},
    ]
    from_records = KnowledgeGraph.from_records(entities, facts)
    from_frames = KnowledgeGraph.from_dataframes(pd.DataFrame(entities), pd.DataFrame(facts))
    assert from_records.facts([0])[0]["object_value"] is None
    assert from_frames.facts([0])[0]["object_value"] is None
    assert from_frames.facts([1])[0]["object"] is None
    assert from_frames.facts([1]) == from_records.facts([1])


@settings(PROPERTY, max_examples=examples(60))
@given(graph_data())
def test_facts_round_trip(data: GraphData) -> None:
    g = data.build()
    rows = g.facts([f["id"] for f in data.facts])
    for got, want in zip(rows, data.facts, strict=True):
        assert got["id"] == want["id"]
        assert {k: got[k] for k in FACT_KEYS} == {k: want[k] for k in FACT_KEYS}
        assert got["created_at"] is None
    assert g.fact_ids.tolist() == [f["id"] for f in data.facts]
    assert g.entity_ids.tolist() == [e["id"] for e in data.entities]
    assert g.chunk_ids.tolist() == [c["id"] for c in data.chunks]
    assert g.n_entities == len(data.entities)
    assert g.n_facts == len(data.facts)
    assert g.n_chunks == len(data.chunks)
    # Reversed lookups give the rows in the asked order.
    ids = [f["id"] for f in data.facts][::-1]
    assert [r["id"] for r in g.facts(ids)] == ids
    assert g.fact_index(ids).tolist() == list(range(len(ids)))[::-1]


@settings(PROPERTY, max_examples=examples(60))
@given(graph_data(max_facts=40))
def test_adjacency_order_is_confidence_desc_then_id(data: GraphData) -> None:
    g = data.build()
    for e in data.entities:
        out, inn = g.adjacency(e["id"])
        want_out, want_in = graph_ref.adjacency(data.facts, e["id"])
        assert out.tolist() == data.fact_ids(want_out)
        assert inn.tolist() == data.fact_ids(want_in)


@settings(PROPERTY, max_examples=examples(40))
@given(graph_data())
def test_stats(data: GraphData) -> None:
    s = data.build().stats()
    used_tenants = {e["tenant"] for e in data.entities}
    assert s == {
        "entities": len(data.entities),
        "facts": len(data.facts),
        "literal_facts": sum(f["object"] is None for f in data.facts),
        "tenants": s["tenants"],
        "chunks": len(data.chunks),
        "mentions": len(data.mentions),
        "bytes": s["bytes"],
    }
    assert s["tenants"] >= len(used_tenants)
    assert isinstance(s["bytes"], int) and s["bytes"] > 0


# ------------------------------------------------------------------------------------------
# Vocabularies


def test_statuses_and_sources_by_name_or_code() -> None:
    kw = {"fact_subject": [0, 0, 1, 1], "fact_object": [1, 2, 2, None]}
    by_name = KnowledgeGraph.from_arrays(
        status=["staged", "confirmed", "rejected", "archived"],
        source=["user_edit", "file", "system", "conversation"],
        **kw,
    )
    by_code = KnowledgeGraph.from_arrays(
        status=np.array([0, 1, 2, 3], dtype=np.uint8), source=[0, 1, 2, 3], **kw
    )
    assert by_name.facts(range(4)) == by_code.facts(range(4))
    assert [f["status"] for f in by_code.facts(range(4))] == list(DEFAULT_STATUSES)
    assert [f["source"] for f in by_code.facts(range(4))] == list(DEFAULT_SOURCES)
    # Defaults: confirmed, system, confidence 1, strength 1, access 0.
    d = KnowledgeGraph.from_arrays(**kw).facts([0])[0]
    assert (d["status"], d["source"], d["confidence"], d["strength"], d["access_count"]) == (
        "confirmed",
        "system",
        1.0,
        1.0,
        0,
    )
    # Filtering by status names or codes is the same.
    a = by_name.spread(np.array([0]), statuses=["staged", "confirmed"])
    b = by_name.spread(np.array([0]), statuses=[0, 1])
    assert a[0].fact_ids.tolist() == b[0].fact_ids.tolist() == [0, 1]


def test_custom_vocabularies() -> None:
    g = KnowledgeGraph.from_records(
        entities=[{"id": "a"}, {"id": "b"}],
        facts=[
            {"subject": "a", "object": "b", "status": "live", "source": "crawler"},
            {"subject": "a", "object": None, "status": "draft", "source": "human"},
        ],
        statuses=("draft", "live"),
        sources=("human", "crawler"),
    )
    assert g.statuses.names == ("draft", "live")
    assert [(f["status"], f["source"]) for f in g.facts([0, 1])] == [
        ("live", "crawler"),
        ("draft", "human"),
    ]
    assert g.spread(["a"], statuses=["live"])[0].fact_ids.tolist() == [0]


def test_predicates_learned_or_given() -> None:
    kw = {"fact_subject": [0, 1, 2], "fact_object": [1, 2, 0]}
    learned = KnowledgeGraph.from_arrays(predicate=["works_on", "uses", "uses"], **kw)
    assert learned.predicates.names == ("uses", "works_on")  # sorted distinct names
    assert [f["predicate"] for f in learned.facts([0, 1, 2])] == ["works_on", "uses", "uses"]
    given_codes = KnowledgeGraph.from_arrays(
        predicate=[1, 0, 0], predicates=["uses", "works_on"], **kw
    )
    assert given_codes.facts([0, 1, 2]) == learned.facts([0, 1, 2])
    raw_codes = KnowledgeGraph.from_arrays(predicate=np.array([2, 0, 0]), **kw)
    assert raw_codes.predicates.names == (0, 1, 2)
    assert [f["predicate"] for f in raw_codes.facts([0, 1, 2])] == [2, 0, 0]
    assert learned.spread(np.array([0]), predicates=["uses"])[0].fact_ids.tolist() == []
    assert learned.spread(np.array([1]), predicates=["uses"])[0].fact_ids.tolist() == [1, 2]
    default = KnowledgeGraph.from_arrays(**kw)
    assert default.predicates.names == ("related_to",)


def test_tenants_learned_from_names_whatever_their_type() -> None:
    """Tenants are names, ints included: the distinct values, sorted, get dense codes."""
    named = KnowledgeGraph.from_records(
        entities=[{"id": "x", "tenant": "zeta"}, {"id": "y", "tenant": "alpha"}],
        facts=[{"subject": "x", "object": None}],
    )
    assert named.tenants.names == ("alpha", "zeta")
    assert named.tenant_code("zeta") == 1
    coded = KnowledgeGraph.from_arrays(
        fact_subject=[0], fact_object=[1], entity_tenant=np.array([2, 2, 0])
    )
    assert coded.tenants.names == (0, 2)
    assert coded.n_tenants == 2
    assert coded.tenant_code(2) == 1
    assert coded.spread(np.array([0]), tenant=2)[0].fact_ids.tolist() == [0]
    with pytest.raises(UnknownTenantError):
        coded.tenant_code(1)


# ------------------------------------------------------------------------------------------
# Times


def test_times_from_datetime64_datetime_and_none() -> None:
    day = 86_400
    kw = {"fact_subject": [0, 0, 0], "fact_object": [1, 1, None]}
    as_int = KnowledgeGraph.from_arrays(last_accessed=[NOW, NOW - day, None], **kw)
    as_dt64 = KnowledgeGraph.from_arrays(
        last_accessed=np.array(
            ["2026-01-01T00:00:00", "2025-12-31T00:00:00", "NaT"], dtype="datetime64[ns]"
        ),
        **kw,
    )
    naive = dt.datetime(2026, 1, 1)  # taken as UTC
    aware = dt.datetime(2025, 12, 31, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    as_dt = KnowledgeGraph.from_arrays(last_accessed=[naive, aware, None], **kw)
    as_float = KnowledgeGraph.from_arrays(last_accessed=[NOW + 0.5, NOW - day, np.nan], **kw)
    want = [NOW, NOW - day, None]
    for g in (as_int, as_dt64, as_dt, as_float):
        assert [f["last_accessed"] for f in g.facts([0, 1, 2])] == want
    # Validity from dates and datetimes; as_of accepts a datetime too.
    g = KnowledgeGraph.from_arrays(
        valid_from=[dt.date(2025, 1, 1), None, None],
        valid_to=[dt.datetime(2026, 1, 1), dt.date(2025, 6, 1), None],
        **kw,
    )
    at = dt.datetime(2025, 7, 1, tzinfo=dt.timezone.utc)
    assert g.spread(np.array([0]), as_of=at)[0].fact_ids.tolist() == [0, 2]
    assert g.spread(np.array([0]), as_of=int(at.timestamp()))[0].fact_ids.tolist() == [0, 2]
    assert g.spread(np.array([0]), as_of=NOW)[0].fact_ids.tolist() == [2]  # valid_to excluded


def test_score_fact_rank_with_datetime_now() -> None:
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0, 0],
        fact_object=[1, 1],
        last_accessed=[NOW - 30 * 86_400, NOW],
        confidence=[0.9, 0.8],
    )
    now_dt = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    a = g.spread(np.array([0]), rank="score_fact", now=NOW)[0]
    b = g.spread(np.array([0]), rank="score_fact", now=now_dt)[0]
    assert a.fact_ids.tolist() == b.fact_ids.tolist() == [1, 0]
    assert a.scores.tolist() == b.scores.tolist()


# ------------------------------------------------------------------------------------------
# Small and empty graphs


@pytest.mark.parametrize("ids", [["a", "b"], [10, 20]], ids=["str", "int"])
def test_from_records_without_facts(ids: list[Hashable]) -> None:
    g = KnowledgeGraph.from_records(entities=[{"id": i} for i in ids], facts=[])
    assert (g.n_entities, g.n_facts) == (2, 0)
    q = g.spread([ids[0]])[0]
    assert q.fact_ids.tolist() == [] and q.entity_ids.tolist() == [ids[0]]
    assert g.graph_recall([ids[0]])[0].fact_ids.tolist() == []
    assert g.personalized_pagerank([ids[0]])[0].entity_ids.tolist() == [ids[0]]


@pytest.mark.parametrize("ids", [["a", "b"], [10, 20]], ids=["str", "int"])
def test_lookup_of_no_ids(ids: list[Hashable]) -> None:
    g = KnowledgeGraph.from_records(
        entities=[{"id": i} for i in ids], facts=[{"subject": ids[0], "object": ids[1]}]
    )
    assert g.entity_index([]).tolist() == []
    assert g.fact_index([]).tolist() == []
    assert g.facts([]) == []


def test_entity_names_and_object_values_stay_in_python() -> None:
    g = KnowledgeGraph.from_records(
        entities=[{"id": "u", "name": "User"}, {"id": "j", "name": "JACQ"}],
        facts=[
            {"subject": "u", "object": "j", "predicate": "works_on"},
            {"subject": "u", "object": None, "predicate": "prefers", "object_value": "dark"},
        ],
    )
    assert g.entity_names.tolist() == ["User", "JACQ"]
    assert g.object_values.tolist() == [None, "dark"]
    assert g.facts([1])[0]["object_value"] == "dark"
    assert repr(g) == "KnowledgeGraph(entities=2, facts=2, chunks=0, tenants=1)"


# ------------------------------------------------------------------------------------------
# Result objects


def chain() -> KnowledgeGraph:
    return KnowledgeGraph.from_records(
        entities=[{"id": n} for n in ("a", "b", "c", "d")],
        facts=[
            {"id": "ab", "subject": "a", "object": "b", "confidence": 0.9},
            {"id": "bc", "subject": "b", "object": "c", "confidence": 0.8},
            {"id": "cd", "subject": "c", "object": "d", "confidence": 0.7},
            {"id": "a!", "subject": "a", "object": None, "confidence": 0.5},
        ],
    )


def test_activation_records_and_pandas() -> None:
    g = chain()
    act = g.spread([["a"], ["c"]], max_hops=2, rank="composite")
    assert isinstance(act, Activation) and len(act) == 2
    assert isinstance(act[0], QueryActivation) and act[-1].query == 1
    recs = act.to_records()
    assert recs == [
        {
            "query": 0,
            "rank": 0,
            "fact": "ab",
            "hop": 0,
            "anchor": "a",
            "parent": None,
            "via": "a",
            "score": f32(0.9),
        },
        {
            "query": 0,
            "rank": 1,
            "fact": "a!",
            "hop": 0,
            "anchor": "a",
            "parent": None,
            "via": "a",
            "score": 0.5,
        },
        {
            "query": 0,
            "rank": 2,
            "fact": "bc",
            "hop": 1,
            "anchor": "a",
            "parent": "ab",
            "via": "b",
            "score": 0.5 * f32(0.8),
        },
        {
            "query": 1,
            "rank": 0,
            "fact": "cd",
            "hop": 0,
            "anchor": "c",
            "parent": None,
            "via": "c",
            "score": f32(0.7),
        },
    ]
    df = act.to_pandas()
    assert list(df.columns) == ["query", "rank", "fact", "hop", "anchor", "parent", "via", "score"]
    assert df["fact"].tolist() == ["ab", "a!", "bc", "cd"]
    ents = act[0].entity_records()
    assert [(r["entity"], r["hop"], r["anchor"], r["parent"]) for r in ents] == [
        ("a", 0, "a", None),
        ("b", 1, "a", "ab"),
        ("c", 2, "a", "bc"),
    ]
    assert act[0].path(2) == ["ab", "bc"]
    with pytest.raises(IndexError):
        act[2]
    with pytest.raises(TypeError):
        act["0"]  # type: ignore[index]


def test_recall_records_and_pandas() -> None:
    g = chain()
    rec = g.graph_recall([["a"], ["d", "b"]], [[1.0], [1.0, 0.5]], top_k=2)
    assert isinstance(rec, Recall) and len(rec) == 2
    assert rec.to_records() == [
        {
            "query": 0,
            "rank": 0,
            "fact": "ab",
            "score": pytest.approx(0.9),
            "hop": 0,
            "anchor": "a",
            "via": "a",
        },
        {
            "query": 0,
            "rank": 1,
            "fact": "bc",
            "score": pytest.approx(0.4),
            "hop": 1,
            "anchor": "a",
            "via": "b",
        },
        {
            "query": 1,
            "rank": 0,
            "fact": "cd",
            "score": pytest.approx(0.7),
            "hop": 0,
            "anchor": "d",
            "via": "d",
        },
        {
            "query": 1,
            "rank": 1,
            "fact": "ab",
            "score": pytest.approx(0.45),
            "hop": 0,
            "anchor": "b",
            "via": "b",
        },
    ]
    df = rec.to_pandas()
    assert df.shape == (4, 7) and df["fact"].tolist() == ["ab", "bc", "cd", "ab"]
    assert rec.fact_offsets.tolist() == rec.offsets.tolist() == [0, 2, 4]


@pytest.mark.parametrize("kind", ["dense", "int", "str"])
def test_result_dtypes_and_views(kind: str) -> None:
    n = 6
    ids: list[Any] = {
        "dense": list(range(n)),
        "int": [100 + 7 * i for i in range(n)],
        "str": [f"e{i}" for i in range(n)],
    }[kind]
    g = KnowledgeGraph.from_arrays(
        entity_ids=None if kind == "dense" else ids,
        n_entities=n,
        fact_subject=[ids[i] for i in (0, 1, 2, 3, 0)],
        fact_object=[ids[i] for i in (1, 2, 3, 4)] + [None],
        fact_ids=None if kind == "dense" else [ids[i] for i in range(5)],
    )
    anchors = np.array([[ids[0]], [ids[2]]], dtype=object if kind == "str" else np.int64)
    act = g.spread(anchors, rank="score_fact", now=NOW, max_hops=3)
    id_dtype = np.dtype(object) if kind == "str" else np.dtype(np.int64)
    assert act.fact_ids.dtype == id_dtype and act.entity_ids.dtype == id_dtype
    assert act.fact_indices.dtype == np.int64
    assert act.hops.dtype == np.uint32
    assert act.entity_hops.dtype == np.uint32
    assert act.entity_strengths.dtype == np.float32
    assert act.scores is not None and act.scores.dtype == np.float64
    assert act.fact_offsets.dtype == np.int64 and act.entity_offsets.dtype == np.int64
    assert act.parents.dtype == id_dtype and act.anchors.dtype == id_dtype
    for arr in (act.fact_indices, act.hops, act.scores, act.entity_hops):
        assert arr.flags.c_contiguous
    # Batch arrays are built once; per-query views are slices of them, not copies.
    assert act.hops is act.hops and act.fact_indices is act.fact_indices
    q = act[1]
    for name in ("hops", "fact_indices", "scores", "entity_hops", "entity_strengths"):
        view, whole = getattr(q, name), getattr(act, name)
        assert len(view) == 0 or np.shares_memory(view, whole), name
    assert act.fact_offsets[-1] == len(act.fact_indices)
    rec = g.graph_recall(anchors)
    assert rec.scores.dtype == np.float64 and rec.hops.dtype == np.uint32
    assert rec.fact_ids.dtype == id_dtype and rec.offsets.dtype == np.int64
    assert np.shares_memory(rec[0].scores, rec.scores)


def test_from_dataframes_columns_plain_qualified_or_a_column_mapping() -> None:
    """``columns=`` is the loaders' ColumnMapping (with value maps) or a dict of plain or
    table-qualified names; frame names need not be SQL identifiers."""
    pd = pytest.importorskip("pandas")
    from graphrecall.storage import ColumnMapping

    entities = pd.DataFrame({"key": ["u", "j", "d"], "vault": ["a", "a", "b"]})
    facts = pd.DataFrame(
        {
            "src": ["u", "j"],
            "dst": ["j", "u"],
            "weight (kg)": [2.0, 3.0],
            "state": ["active", "ended"],
        }
    )
    want = KnowledgeGraph.from_records(
        [{"id": "u", "tenant": "a"}, {"id": "j", "tenant": "a"}, {"id": "d", "tenant": "b"}],
        [
            {"subject": "u", "object": "j", "strength": 2.0, "status": "confirmed"},
            {"subject": "j", "object": "u", "strength": 3.0, "status": "archived"},
        ],
    )
    states = {"active": "confirmed", "ended": "archived"}
    plain = KnowledgeGraph.from_dataframes(
        entities,
        facts.assign(state=facts["state"].map(states)),
        columns={
            "id": "key",
            "tenant": "vault",
            "subject": "src",
            "facts.object": "dst",
            "strength": "weight (kg)",
            "status": "state",
            "facts.nothing": "ignored",
        },
    )
    mapping = ColumnMapping(
        columns={
            "entities.id": "key",
            "entities.tenant": "vault",
            "facts.subject": "src",
            "facts.object": "dst",
            "facts.status": "state",
        },
        values={"facts.status": states},
    )
    mapped = KnowledgeGraph.from_dataframes(
        entities, facts.rename(columns={"weight (kg)": "strength"}), columns=mapping
    )
    for g in (plain, mapped):
        assert g.facts([0, 1]) == want.facts([0, 1])
        assert g.tenants.names == want.tenants.names


def test_the_encoder_releases_only_when_asked() -> None:
    """``encode(release=True)`` empties the column dicts it was given; without it they are
    left whole; both build the same graph."""
    from graphrecall.graph.build import encode

    def given() -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            {"id": np.array(["a", "b"], dtype=object), "tenant": np.array([0, 0])},
            {"subject": np.array(["a", "b"], dtype=object), "object": np.array(["b", None])},
        )

    ents, facts = given()
    kept = encode(ents, facts, n_entities=2, n_chunks=0)
    assert set(ents) == {"id", "tenant"} and set(facts) == {"subject", "object"}
    ents, facts = given()
    released = encode(ents, facts, n_entities=2, n_chunks=0, release=True)
    assert ents == {} and facts == {}
    assert kept.entities.external.tolist() == released.entities.external.tolist()
    assert kept.tenants.names == released.tenants.names == (0,)
    a, b = kept.core.to_parts(), released.core.to_parts()
    assert a.keys() == b.keys()
    for k, v in a.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(v, b[k])
        else:
            assert v == b[k]


def test_from_arrays_and_from_tables_share_the_encoder() -> None:
    """The same columns through ``from_arrays`` and through checked tables give the same
    graph (fact ids: the rows)."""
    tables = GraphTables(
        entities={"id": ["u", "j", "d"], "tenant": ["a", "a", "b"], "name": ["U", "J", "D"]},
        facts={"subject": ["u", "j"], "object": ["j", None], "predicate": ["knows", "likes"]},
        chunks={"id": ["c1"], "tenant": ["a"]},
        mentions={"chunk": ["c1", "c1"], "entity": ["u", "j"], "count": [1, 2]},
    )
    checked, report = tables.check()
    assert report.ok
    g = KnowledgeGraph.from_tables(checked)
    h = KnowledgeGraph.from_arrays(
        entity_ids=["u", "j", "d"],
        entity_tenant=["a", "a", "b"],
        entity_names=["U", "J", "D"],
        fact_subject=["u", "j"],
        fact_object=np.array(["j", None], dtype=object),
        fact_ids=[0, 1],
        predicate=["knows", "likes"],
        chunk_ids=["c1"],
        chunk_tenant=["a"],
        mention_chunk=["c1", "c1"],
        mention_entity=["u", "j"],
        mention_count=[1, 2],
    )
    assert g.facts([0, 1]) == h.facts([0, 1])
    assert g.tenants.names == h.tenants.names and g.predicates.names == h.predicates.names
    assert g.entity_names is not None and g.entity_names.tolist() == ["U", "J", "D"]
    assert g.stats() == h.stats()
    assert checked.n_rows("facts") == 2  # not released


def test_an_entity_index_beyond_the_core_is_a_data_error_not_an_allocation() -> None:
    with pytest.raises(DataError, match="subject"):
        KnowledgeGraph.from_arrays(fact_subject=[2**33], fact_object=[None])
    with pytest.raises(DataError, match="chunk"):
        KnowledgeGraph.from_arrays(
            fact_subject=[0], fact_object=[None], mention_chunk=[2**33], mention_entity=[0]
        )


@pytest.mark.parametrize("column", ["confidence", "strength", "access_count"])
def test_numbers_given_as_text_are_refused_as_check_refuses_them(column: str) -> None:
    value = "1" if column == "access_count" else "0.5"
    with pytest.raises(DataError, match=column):
        KnowledgeGraph.from_arrays(fact_subject=[0], fact_object=[1], **{column: [value]})
    tables = GraphTables(entities={"id": [0, 1]}, facts={"subject": [0], column: [value]})
    assert not tables.check(on_bad="skip")[1].ok


@pytest.mark.parametrize("ids", ["entity_ids", "fact_ids", "chunk_ids"])
def test_bool_ids_are_refused_as_check_refuses_them(ids: str) -> None:
    kwargs: dict[str, Any] = {"fact_subject": [0, 1], "fact_object": [1, 0]}
    kwargs[ids] = [False, True]
    if ids == "entity_ids":
        kwargs["fact_subject"] = kwargs["fact_object"] = [False, True]
    with pytest.raises(DataError, match="bool"):
        KnowledgeGraph.from_arrays(**kwargs)
    table = {"entity_ids": "entities", "fact_ids": "facts", "chunk_ids": "chunks"}[ids]
    spec: dict[str, Any] = {"entities": {"id": [0, 1]}, "facts": {"subject": [0, 1]}}
    spec.setdefault(table, {})["id"] = [False, True]
    if table == "entities":
        spec["facts"]["subject"] = [False, True]
    assert not GraphTables(**spec).check(on_bad="skip")[1].ok


def test_masked_values_are_null_on_every_path() -> None:
    obj = np.ma.array([1, 0], mask=[False, True])
    g = KnowledgeGraph.from_arrays(fact_subject=[0, 1], fact_object=obj)
    assert [f["object"] for f in g.facts([0, 1])] == [1, None]
    checked, report = GraphTables(
        entities={"id": [0, 1]}, facts={"subject": [0, 1], "object": obj}
    ).check()
    assert report.ok
    assert checked.build_graph().facts([0, 1]) == g.facts([0, 1])
    with pytest.raises(DataError, match="confidence"):
        KnowledgeGraph.from_arrays(
            fact_subject=[0, 1],
            fact_object=[1, 0],
            confidence=np.ma.array([0.5, 0.5], mask=[False, True]),
        )


def test_trailing_nuls_are_kept_in_ids_and_names_on_every_path() -> None:
    """'x\\0' and 'x' are two ids and 'p\\0' and 'p' two predicates (numpy's fixed-width
    text would drop the NUL)."""
    entities = [{"id": "x\0"}, {"id": "x"}, {"id": "y"}]
    facts = [
        {"subject": "x\0", "object": "y", "predicate": "p\0"},
        {"subject": "x", "object": "y", "predicate": "p"},
    ]
    g = KnowledgeGraph.from_records(entities, facts)
    checked, report = GraphTables(
        entities={"id": [e["id"] for e in entities]},
        facts={k: [f[k] for f in facts] for k in ("subject", "object", "predicate")},
    ).check()
    assert report.ok
    for graph in (g, checked.build_graph()):
        assert graph.entity_ids.tolist() == ["x\0", "x", "y"]
        assert sorted(graph.predicates.names) == ["p", "p\0"]  # type: ignore[type-var]
        rows = graph.facts([0, 1])
        assert [(r["subject"], r["predicate"]) for r in rows] == [("x\0", "p\0"), ("x", "p")]


def test_mixed_int_and_str_ids_stay_distinct_in_from_arrays() -> None:
    g = KnowledgeGraph.from_records([{"id": 1}, {"id": "1"}], [{"subject": 1, "object": "1"}])
    assert g.entity_ids.tolist() == [1, "1"]
    assert g.facts([0])[0]["object"] == "1"


@pytest.mark.parametrize(
    ("table", "column"),
    [("entities", "id"), ("entities", "name"), ("facts", "predicate"), ("chunks", "text")],
)
def test_lone_surrogates_are_refused_by_check_with_the_row(table: str, column: str) -> None:
    spec: dict[str, Any] = {
        "entities": {"id": ["a", "b"], "name": ["A", "B"]},
        "facts": {"subject": ["a"], "object": ["b"], "predicate": ["p"]},
        "chunks": {"id": ["c", "d"], "text": ["one", "two"]},
    }
    spec[table][column][-1] = "bad \ud800 text"
    if (table, column) == ("entities", "id"):
        spec["facts"]["object"] = ["bad \ud800 text"]
    _, report = GraphTables(**spec).check(on_bad="skip")
    first = report.table(table).first
    assert first and first[0].row == len(spec[table][column]) - 1
    assert "UTF-8" in first[0].reason


def test_a_tenant_is_named_never_taken_for_a_code() -> None:
    """``tenant=1`` on a graph of tenants 'A', 'B' is unknown, not tenant 'B'."""
    g = KnowledgeGraph.from_records(
        [{"id": "a", "tenant": "A"}, {"id": "b", "tenant": "B"}],
        [{"subject": "b", "object": None}],
    )
    assert g.tenant_code("B") == 1
    for tenant in (1, np.int64(1), True):
        with pytest.raises(UnknownTenantError):
            g.tenant_code(tenant)
        with pytest.raises(UnknownTenantError):
            g.spread(["b"], tenant=tenant)
    ints = KnowledgeGraph.from_records([{"id": "a", "tenant": 7}], [])
    assert ints.tenant_code(np.int64(7)) == ints.tenant_code(7)
