"""Loaders for the stores users already have: Arrow / pandas, Parquet and DuckDB, read
through a ColumnMapping of the user's own table and column names.

Tables shaped like the source designs' schemas (seed 001's WriterOS entities /
relationships / chunks, seed 003's kg_* tables, seed 004's graph_entities / graph_edges) are
loaded from DataFrames, Parquet files and a DuckDB file, and the graph built from them must
equal the one ``KnowledgeGraph.from_records`` builds from the same rows. Names that are not
SQL identifiers are refused, the tenant is a bound parameter, missing columns are named,
and bad rows (NaN weights, dangling ids, wrong embedding dimensions) reach
``GraphTables.check``'s report.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb  # the test extra has it: these tests never skip
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import PROPERTY, GraphData, examples, graph_data
from graphrecall import DataError, KnowledgeGraph, ParameterError
from graphrecall.storage import BadDataError, GraphTables
from graphrecall.storage.arrow import load_arrow, load_dataframes, load_parquet
from graphrecall.storage.duckdb import load_duckdb
from graphrecall.tables import NULL_TIME
from graphrecall.tables.mapping import PRESETS, ColumnMapping, quote_identifier
from hypothesis import given, settings
from hypothesis import strategies as st

UTC = dt.timezone.utc


# ------------------------------------------------------------------ the graph, as rows

#: One graph, two tenants (WriterOS vaults). Every source below renders these rows in its
#: own schema; the loaded graph must equal ``expected_graph()``.
ENTITIES = [
    {"id": "ned", "tenant": "v1", "name": "Ned Stark", "type": "person", "chunk": "c1"},
    {"id": "robert", "tenant": "v1", "name": "Robert Baratheon", "type": "person", "chunk": "c1"},
    {"id": "jon", "tenant": "v1", "name": "Jon Arryn", "type": "person", "chunk": "c2"},
    {"id": "cersei", "tenant": "v2", "name": "Cersei", "type": "person", "chunk": "c3"},
    {"id": "tywin", "tenant": "v2", "name": "Tywin", "type": "person", "chunk": None},
]
T0 = dt.datetime(2025, 11, 28, 10, 0, 0, tzinfo=UTC)
FACTS = [
    # id, subject, object, predicate, strength, confidence, sequence, created_at
    ("r1", "ned", "robert", "ALLY", 0.9, 0.95, 1, T0),
    ("r2", "jon", "ned", "MENTOR", 0.8, 1.0, None, T0 + dt.timedelta(days=1)),
    ("r3", "robert", "jon", "ALLY", 0.5, 0.75, 3, None),
    ("r4", "tywin", "cersei", "PARENT", 0.25, 0.5, 2, T0 + dt.timedelta(seconds=1)),
]
CHUNKS = [
    ("c1", "v1", "Robert and Ned fought together", ["ned", "robert"]),
    ("c2", "v1", "Jon Arryn raised Ned and Robert", ["jon"]),
    ("c3", "v2", "Tywin sent a raven", ["cersei", "tywin"]),
]
DIM = 4


def vector(i: int) -> list[float]:
    return [float(i), 0.5, -1.0, i / 4]


def expected_graph(tenant: str | None = None) -> KnowledgeGraph:
    """The graph of the rows above (of one tenant)."""
    ents = [e for e in ENTITIES if tenant is None or e["tenant"] == tenant]
    keep = {e["id"] for e in ents}
    chunks = [c for c in CHUNKS if tenant is None or c[1] == tenant]
    return KnowledgeGraph.from_records(
        entities=[{"id": e["id"], "tenant": e["tenant"], "name": e["name"]} for e in ents],
        facts=[
            {
                "id": f[0],
                "subject": f[1],
                "object": f[2],
                "predicate": f[3],
                "strength": f[4],
                "confidence": f[5],
                "sequence": f[6],
                "created_at": f[7],
            }
            for f in FACTS
            if f[1] in keep
        ],
        chunks=[{"id": c[0], "tenant": c[1]} for c in chunks],
        mentions=[{"chunk": c[0], "entity": e} for c in chunks for e in c[3]],
    )


def signature(g: KnowledgeGraph) -> dict[str, Any]:
    """Everything a graph holds, by external ids and names (codes may differ)."""
    core = g.core
    ents = g.entity_ids.tolist()
    chunk_ids = g.chunk_ids.tolist()
    facts = g.facts(g.fact_ids.tolist())
    return {
        "entities": ents,
        "tenants": [g.tenants.names[t] for t in core.entity_tenants().tolist()],
        "names": None if g.entity_names is None else list(g.entity_names),
        "facts": sorted(facts, key=lambda r: repr(r["id"])),
        "adjacency": [[x.tolist() for x in g.adjacency(e)] for e in ents],
        "chunks": chunk_ids,
        "chunk_tenants": [g.tenants.names[t] for t in core.chunk_tenants().tolist()],
        "mentions": [
            sorted((chunk_ids[int(c)], int(n)) for c, n in zip(*core.entity_chunks(i), strict=True))
            for i in range(len(ents))
        ],
    }


def assert_same_graph(got: KnowledgeGraph, want: KnowledgeGraph) -> None:
    assert signature(got) == signature(want)


# ------------------------------------------------------------------ source-shaped tables


def seed001_frames() -> dict[str, Any]:
    """WriterOS (seed 001): entities / relationships / chunks, pgvector-style columns."""
    entities = pd.DataFrame(
        {
            "id": [e["id"] for e in ENTITIES],
            "vault_id": [e["tenant"] for e in ENTITIES],
            "name": [e["name"] for e in ENTITIES],
            "entity_type": [e["type"] for e in ENTITIES],
            "description": [f"{e['name']} of Westeros" for e in ENTITIES],
            "primary_source_chunk_id": [e["chunk"] for e in ENTITIES],
            "embedding": [np.array(vector(i), dtype=np.float32) for i in range(len(ENTITIES))],
            "status": ["ALIVE"] * len(ENTITIES),  # Entity.status: not a fact status
        }
    )
    relationships = pd.DataFrame(
        {
            "id": [f[0] for f in FACTS],
            "vault_id": [next(e["tenant"] for e in ENTITIES if e["id"] == f[1]) for f in FACTS],
            "source_entity_id": [f[1] for f in FACTS],
            "target_entity_id": [f[2] for f in FACTS],
            "relationship_type": [f[3] for f in FACTS],
            "strength": [f[4] for f in FACTS],
            "extraction_confidence": [f[5] for f in FACTS],
            "established_at_sequence": pd.array([f[6] for f in FACTS], dtype="Int64"),
            "created_at": pd.to_datetime([f[7] for f in FACTS], utc=True),
            "is_bidirectional": [False] * len(FACTS),
        }
    )
    chunks = pd.DataFrame(
        {
            "id": [c[0] for c in CHUNKS],
            "vault_id": [c[1] for c in CHUNKS],
            "content": [c[2] for c in CHUNKS],
            "mentioned_entity_ids": [c[3] for c in CHUNKS],
            "embedding": [vector(10 + i) for i in range(len(CHUNKS))],
            "embedding_model": ["text-embedding-3-small"] * len(CHUNKS),
        }
    )
    return {"entities": entities, "relationships": relationships, "chunks": chunks}


INT_ID = {e["id"]: k + 1 for k, e in enumerate(ENTITIES)}


def expected_int_graph(
    strengths: list[float] | None = None, predicate_key: str = "predicate"
) -> KnowledgeGraph:
    """The rows above with SQLite INTEGER ids (seeds 003 and 004), no tenants."""
    return KnowledgeGraph.from_records(
        entities=[{"id": INT_ID[e["id"]], "name": e["name"]} for e in ENTITIES],
        facts=[
            {
                "id": k + 1,
                "subject": INT_ID[f[1]],
                "object": INT_ID[f[2]],
                predicate_key: f[3].lower(),
                "strength": f[4] if strengths is None else strengths[k],
                "confidence": f[5],
            }
            for k, f in enumerate(FACTS)
        ],
        chunks=[{"id": 100 + k} for k in range(len(CHUNKS))],
        mentions=[
            {"chunk": 100 + k, "entity": INT_ID[e], "count": 1 + j}
            for k, c in enumerate(CHUNKS)
            for j, e in enumerate(c[3])
        ],
    )


WEIGHTS = [9, 8, 5, 3]  # seed 003: relationship weights 1-10, kept as strengths


def seed003_frames() -> dict[str, Any]:
    """Hybrid GraphRAG (seed 003): kg_entities / kg_relationships / kg_entity_chunks."""
    return {
        "kg_entities": pd.DataFrame(
            {
                "id": [INT_ID[e["id"]] for e in ENTITIES],
                "name": [e["name"] for e in ENTITIES],
                "type": [e["type"] for e in ENTITIES],
                "description": [None] * len(ENTITIES),
            }
        ),
        "kg_relationships": pd.DataFrame(
            {
                "id": range(1, len(FACTS) + 1),
                "source_entity_id": [INT_ID[f[1]] for f in FACTS],
                "target_entity_id": [INT_ID[f[2]] for f in FACTS],
                "type": [f[3].lower() for f in FACTS],
                "description": [f"{f[1]} {f[3]} {f[2]}" for f in FACTS],
                "weight": WEIGHTS,
                "confidence": [f[5] for f in FACTS],
            }
        ),
        "kg_entity_chunks": pd.DataFrame(
            {
                "entity_id": [INT_ID[e] for c in CHUNKS for e in c[3]],
                "chunk_id": [100 + k for k, c in enumerate(CHUNKS) for _ in c[3]],
                "mention_count": [1 + j for c in CHUNKS for j in range(len(c[3]))],
            }
        ),
        "chunks": pd.DataFrame({"id": [100 + k for k in range(len(CHUNKS))]}),
    }


def seed004_frames() -> dict[str, Any]:
    """zeph (seed 004): graph_entities / graph_edges, SQLite TEXT timestamps."""
    return {
        "graph_entities": pd.DataFrame(
            {
                "id": [INT_ID[e["id"]] for e in ENTITIES],
                "name": [e["name"] for e in ENTITIES],
                "entity_type": [e["type"] for e in ENTITIES],
                "summary": [None] * len(ENTITIES),
            }
        ),
        "graph_edges": pd.DataFrame(
            {
                "id": range(1, len(FACTS) + 1),
                "source_entity_id": [INT_ID[f[1]] for f in FACTS],
                "target_entity_id": [INT_ID[f[2]] for f in FACTS],
                "relation": [f[3].lower() for f in FACTS],
                "fact": [f"{f[1]} {f[3]} {f[2]}" for f in FACTS],
                "confidence": [f[5] for f in FACTS],
                "strength": [f[4] for f in FACTS],
                "valid_from": ["2026-01-01 00:00:00"] * len(FACTS),
                "valid_to": [None, "2026-02-01 12:00:00", None, None],
            }
        ),
    }


def expected_seed004() -> KnowledgeGraph:
    base = expected_int_graph()
    t_from = int(dt.datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    t_to = int(dt.datetime(2026, 2, 1, 12, tzinfo=UTC).timestamp())
    facts = base.facts(base.fact_ids.tolist())
    for k, f in enumerate(facts):
        f["valid_from"] = t_from
        f["valid_to"] = t_to if k == 1 else None
    return KnowledgeGraph.from_records(
        entities=[{"id": INT_ID[e["id"]], "name": e["name"]} for e in ENTITIES],
        facts=[{k: v for k, v in f.items() if v is not None} for f in facts],
    )


def write_parquet(frames: dict[str, Any], root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, df in frames.items():
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), root / f"{name}.parquet")
    return root


def write_duckdb(path: Path, statements: list[str], rows: dict[str, list[tuple[Any, ...]]]) -> Path:
    con = duckdb.connect(str(path))
    try:
        for sql in statements:
            con.execute(sql)
        for table, values in rows.items():
            marks = ", ".join("?" * len(values[0]))
            con.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    finally:
        con.close()
    return path


def seed001_duckdb(path: Path) -> Path:
    return write_duckdb(
        path,
        [
            "CREATE TABLE entities (id VARCHAR PRIMARY KEY, vault_id VARCHAR, name VARCHAR, "
            "entity_type VARCHAR, primary_source_chunk_id VARCHAR, embedding FLOAT[4])",
            "CREATE TABLE relationships (id VARCHAR, vault_id VARCHAR, source_entity_id VARCHAR, "
            "target_entity_id VARCHAR, relationship_type VARCHAR, strength DOUBLE, "
            "extraction_confidence DOUBLE, established_at_sequence INTEGER, "
            "created_at TIMESTAMPTZ)",
            "CREATE TABLE chunks (id VARCHAR, vault_id VARCHAR, content VARCHAR, "
            "mentioned_entity_ids VARCHAR[], embedding FLOAT[], embedding_model VARCHAR)",
        ],
        {
            "entities": [
                (e["id"], e["tenant"], e["name"], e["type"], e["chunk"], vector(i))
                for i, e in enumerate(ENTITIES)
            ],
            "relationships": [
                (
                    f[0],
                    next(e["tenant"] for e in ENTITIES if e["id"] == f[1]),
                    f[1],
                    f[2],
                    f[3],
                    f[4],
                    f[5],
                    f[6],
                    f[7],
                )
                for f in FACTS
            ],
            "chunks": [
                (c[0], c[1], c[2], c[3], vector(10 + i), "m1") for i, c in enumerate(CHUNKS)
            ],
        },
    )


# ------------------------------------------------------------------ seed 001: three sources


def test_seed001_dataframes_equal_from_records() -> None:
    tables = load_arrow(seed001_frames(), ColumnMapping.preset("writeros"))
    graph, report = tables.to_graph()
    assert report.ok
    assert_same_graph(graph, expected_graph())
    # what the graph does not hold is in the tables
    assert tables.entities["type"].tolist() == ["person"] * 5
    assert tables.entities["primary_chunk"].tolist() == [e["chunk"] for e in ENTITIES]
    assert tables.chunks is not None and tables.chunks["text"][0] == CHUNKS[0][2]
    assert tables.facts["created_at"].tolist() == [
        int(T0.timestamp()),
        int(T0.timestamp()) + 86_400,
        NULL_TIME,
        int(T0.timestamp()) + 1,
    ]
    kinds = {(e.kind, e.model): e for e in tables.embeddings}
    ent = kinds[("entity", None)]
    assert ent.vectors.dtype == np.float32 and ent.vectors.shape == (5, DIM)
    np.testing.assert_array_equal(ent.vectors[2], np.array(vector(2), np.float32))
    chunk = kinds[("chunk", "text-embedding-3-small")]
    assert chunk.ids.tolist() == ["c1", "c2", "c3"] and chunk.vectors.shape == (3, DIM)


def test_the_issue_example_mapping() -> None:
    """The mapping of the issue: relationships.weight -> strength, vault_id -> tenant."""
    frames = seed001_frames()
    frames["relationships"] = frames["relationships"].rename(columns={"strength": "weight"})
    mapping = ColumnMapping(
        tables={"facts": "relationships"},
        columns={
            "facts.strength": "weight",
            "facts.subject": "source_entity_id",
            "facts.object": "target_entity_id",
            "facts.predicate": "relationship_type",
            "facts.confidence": "extraction_confidence",
            "facts.sequence": "established_at_sequence",
            "entities.tenant": "vault_id",
            "chunks.tenant": "vault_id",
        },
    )
    frames["mentions"] = pd.DataFrame(
        {"chunk": [c[0] for c in CHUNKS for _ in c[3]], "entity": [e for c in CHUNKS for e in c[3]]}
    )
    graph, _ = load_arrow(frames, mapping).to_graph()
    assert_same_graph(graph, expected_graph())


def test_seed001_parquet_equals_from_records(tmp_path: Path) -> None:
    root = write_parquet(seed001_frames(), tmp_path / "writeros")
    mapping = ColumnMapping.preset("writeros")
    graph, _ = load_parquet(root, mapping).to_graph()
    assert_same_graph(graph, expected_graph())
    # files given one by one, by the user's table names
    files = {name: root / f"{name}.parquet" for name in ("entities", "relationships", "chunks")}
    graph2, _ = load_parquet(files, mapping).to_graph()
    assert_same_graph(graph2, expected_graph())


def test_seed001_duckdb_equals_from_records(tmp_path: Path) -> None:
    db = seed001_duckdb(tmp_path / "writeros.duckdb")
    tables = load_duckdb(db, ColumnMapping.preset("writeros"))
    graph, report = tables.to_graph()
    assert report.ok
    assert_same_graph(graph, expected_graph())
    [ent] = [e for e in tables.embeddings if e.kind == "entity"]
    np.testing.assert_array_equal(ent.vectors, np.array([vector(i) for i in range(5)], np.float32))
    [chunk] = [e for e in tables.embeddings if e.kind == "chunk"]
    assert chunk.model == "m1" and chunk.vectors.shape == (3, DIM)


def test_duckdb_tenant_filter_is_a_bound_parameter(tmp_path: Path) -> None:
    db = seed001_duckdb(tmp_path / "writeros.duckdb")
    mapping = ColumnMapping.preset("writeros")
    for tenant in ("v1", "v2"):
        graph, _ = load_duckdb(db, mapping, tenant=tenant).to_graph()
        assert_same_graph(graph, expected_graph(tenant))
    # A tenant that looks like SQL is a value: it matches no row and changes nothing.
    hostile = "v1' OR '1'='1"
    tables = load_duckdb(db, mapping, tenant=hostile)
    assert len(tables.entities["id"]) == 0 and len(tables.facts["subject"]) == 0
    assert tables.chunks is not None and len(tables.chunks["id"]) == 0
    graph, _ = load_duckdb(db, mapping).to_graph()
    assert graph.n_entities == len(ENTITIES)


def test_duckdb_tenant_filter_without_fact_tenants_uses_the_subjects(tmp_path: Path) -> None:
    db = seed001_duckdb(tmp_path / "w.duckdb")
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE relationships DROP COLUMN vault_id")
    con.close()
    graph, _ = load_duckdb(db, ColumnMapping.preset("writeros"), tenant="v2").to_graph()
    assert_same_graph(graph, expected_graph("v2"))


def test_duckdb_open_connection_and_schema_qualified_tables(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "store.duckdb"))
    frames = seed003_frames()
    con.execute("CREATE SCHEMA analytics")
    for name, df in frames.items():
        con.register("frame", df)
        con.execute(f"CREATE TABLE analytics.{name} AS SELECT * FROM frame")
        con.unregister("frame")
    preset = ColumnMapping.preset("hybrid_graphrag")
    mapping = preset.merged(
        tables={
            "entities": "analytics.kg_entities",
            "facts": "analytics.kg_relationships",
            "mentions": "analytics.kg_entity_chunks",
            "chunks": "analytics.chunks",
        }
    )
    graph, _ = load_duckdb(con, mapping).to_graph()
    assert_same_graph(graph, expected_int_graph(strengths=[float(w) for w in WEIGHTS]))
    assert con.execute("SELECT count(*) FROM analytics.kg_entities").fetchone() == (
        5,
    )  # still open
    con.close()


# ------------------------------------------------------------------ seeds 003 and 004


@pytest.mark.parametrize("how", ["pandas", "arrow", "parquet", "duckdb"])
def test_seed003_kg_tables(how: str, tmp_path: Path) -> None:
    frames = seed003_frames()
    mapping = ColumnMapping.preset("hybrid_graphrag")
    tables = load_source(how, frames, mapping, tmp_path)
    graph, _ = tables.to_graph()
    assert_same_graph(graph, expected_int_graph(strengths=[float(w) for w in WEIGHTS]))
    assert tables.facts["strength"].tolist() == WEIGHTS  # 1-10, as the source stores them
    assert tables.facts["description"][0] == "ned ALLY robert"


@pytest.mark.parametrize("how", ["pandas", "arrow", "parquet", "duckdb"])
def test_seed004_edges(how: str, tmp_path: Path) -> None:
    frames = seed004_frames()
    tables = load_source(how, frames, ColumnMapping.preset("zeph"), tmp_path)
    graph, _ = tables.to_graph()
    assert_same_graph(graph, expected_seed004())
    assert tables.entities["type"].tolist() == ["person"] * 5


def load_source(how: str, frames: dict[str, Any], mapping: ColumnMapping, tmp: Path) -> GraphTables:
    if how == "pandas":
        return load_arrow(frames, mapping)
    if how == "arrow":
        return load_arrow(
            {k: pa.Table.from_pandas(v, preserve_index=False) for k, v in frames.items()}, mapping
        )
    if how == "parquet":
        return load_parquet(write_parquet(frames, tmp / "pq"), mapping)
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "db.duckdb"
    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    for name, df in frames.items():
        con.register("frame", df)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        con.unregister("frame")
    con.close()
    return load_duckdb(path, mapping)


def test_load_dataframes_takes_our_tables_positionally() -> None:
    f = seed004_frames()
    mapping = ColumnMapping.preset("zeph")
    graph, _ = load_dataframes(f["graph_entities"], f["graph_edges"], mapping=mapping).to_graph()
    assert_same_graph(graph, expected_seed004())


@settings(PROPERTY, max_examples=examples(25))
@given(data=graph_data())
def test_random_graphs_round_trip_through_parquet(data: GraphData, tmp_path_factory: Any) -> None:
    """Any graph of the property tests: rows -> Parquet -> load_parquet -> to_graph equals
    from_records of the same rows."""
    root = tmp_path_factory.mktemp("pq")
    tables = {"entities": data.entities, "facts": data.facts}
    if data.chunks:
        tables["chunks"] = data.chunks
    if data.mentions:
        tables["mentions"] = data.mentions
    for name, rows in tables.items():
        pq.write_table(pa.Table.from_pylist(rows), root / f"{name}.parquet")
    graph, report = load_parquet(root).to_graph()
    assert report.ok
    want = KnowledgeGraph.from_records(
        data.entities, data.facts, data.chunks or None, data.mentions or None
    )
    assert_same_graph(graph, want)


# ------------------------------------------------------------------ column conversion


def test_times_of_every_type_become_int64_seconds() -> None:
    t = int(dt.datetime(2026, 1, 1, 12, 30, 15, tzinfo=UTC).timestamp())
    day = int(dt.datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    columns = {
        "ts_s": pa.array([t, None], pa.timestamp("s")),
        "ts_ms": pa.array([t * 1000 + 999, None], pa.timestamp("ms")),
        "ts_us_tz": pa.array([t * 10**6, None], pa.timestamp("us", tz="Europe/Paris")),
        "ts_ns": pa.array([t * 10**9 + 5, None], pa.timestamp("ns")),
        "date": pa.array([dt.date(2026, 1, 1), None], pa.date32()),
        "date64": pa.array([dt.date(2026, 1, 1), None], pa.date64()),
        "int": pa.array([t, None], pa.int64()),
        "float": pa.array([t + 0.75, float("nan")], pa.float64()),
        "iso": pa.array(["2026-01-01 12:30:15", None]),
        "iso_t": pa.array(["2026-01-01T12:30:15", None]),
        "iso_z": pa.array(["2026-01-01T12:30:15Z", None]),
        "iso_offset": pa.array(["2026-01-01T14:30:15+02:00", None]),
        "iso_mixed": pa.array(["2026-01-01T12:30:15.5", "2026-01-01T12:30:15Z"]),
        "null": pa.array([None, None], pa.null()),
    }
    want = {
        "date": [day, NULL_TIME],
        "date64": [day, NULL_TIME],
        "iso_mixed": [t, t],
        "null": [NULL_TIME, NULL_TIME],
    }
    for name, col in columns.items():
        tables = load_arrow(
            {
                "entities": pa.table({"id": [1, 2], "created_at": col}),
                "facts": pa.table({"subject": [1]}),
            }
        )
        got = tables.entities["created_at"]
        assert got.dtype == np.int64, name
        assert got.tolist() == want.get(name, [t, NULL_TIME]), name


def test_pandas_times_and_nullable_ints() -> None:
    t = int(dt.datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    facts = pd.DataFrame(
        {
            "subject": [1, 2, 1],
            "object": [2, None, 1],  # float with NaN in pandas: a literal fact
            "last_accessed": pd.to_datetime([t, None, t + 1], unit="s"),
            "valid_from": pd.to_datetime([t, t, None], unit="s", utc=True).tz_convert("Asia/Tokyo"),
            "valid_to": [dt.datetime(2026, 1, 2, tzinfo=UTC), None, None],
            "sequence": pd.array([1, None, 3], dtype="Int64"),
            "access_count": pd.array([1, 2, 3], dtype="UInt32"),
            "status": pd.Categorical(["staged", "confirmed", "staged"]),
        }
    )
    tables = load_dataframes(pd.DataFrame({"id": [1, 2]}), facts)
    f = tables.facts
    assert f["last_accessed"].tolist() == [t, NULL_TIME, t + 1]
    assert f["valid_from"].tolist() == [t, t, NULL_TIME]
    assert f["valid_to"].tolist() == [t + 86_400, NULL_TIME, NULL_TIME]
    assert f["access_count"].dtype == np.int64
    assert f["status"].tolist() == ["staged", "confirmed", "staged"]
    graph, _ = tables.to_graph()
    rows = graph.facts([0, 1, 2])
    assert [r["object"] for r in rows] == [2, None, 1]
    assert [r["sequence"] for r in rows] == [1, None, 3]


def test_value_maps_rename_the_users_values() -> None:
    mapping = ColumnMapping(
        columns={"facts.status": "state"},
        values={"facts.status": {"active": "confirmed", "ended": "archived", None: "staged"}},
    )
    facts = pa.table({"subject": ["a", "a", "a"], "state": ["active", "ended", None]})
    tables = load_arrow({"entities": pa.table({"id": ["a"]}), "facts": facts}, mapping)
    assert tables.facts["status"].tolist() == ["confirmed", "archived", "staged"]
    graph, _ = tables.to_graph()
    assert [r["status"] for r in graph.facts([0, 1, 2])] == ["confirmed", "archived", "staged"]


def test_a_column_mapped_to_none_is_not_read() -> None:
    facts = pa.table({"subject": ["a"], "source": ["chunk-17"]})  # not a fact source
    ents = pa.table({"id": ["a"]})
    # Sources are an open vocabulary: read, it is a provenance word of its own.
    graph, _ = load_arrow({"entities": ents, "facts": facts}).to_graph()
    assert graph.facts([0])[0]["source"] == "chunk-17"
    mapping = ColumnMapping(columns={"facts.source": None})
    graph, _ = load_arrow({"entities": ents, "facts": facts}, mapping).to_graph()
    assert graph.facts([0])[0]["source"] == "system"


def test_aliases_from_a_list_column_and_blob_embeddings() -> None:
    blobs = [np.array(vector(i), "<f4").tobytes() for i in range(2)]
    ents = pa.table(
        {"id": [7, 8], "aliases": [["Ned", "Eddard"], None], "embedding": blobs},
    )
    mapping = ColumnMapping(
        tables={"aliases": "entities"},
        columns={"aliases.entity": "id", "aliases.alias": "aliases"},
    )
    tables = load_arrow({"entities": ents, "facts": pa.table({"subject": [7]})}, mapping)
    assert tables.aliases is not None
    assert tables.aliases["entity"].tolist() == [7, 7]
    assert tables.aliases["alias"].tolist() == ["Ned", "Eddard"]
    [emb] = tables.embeddings
    np.testing.assert_array_equal(emb.vectors[1], np.array(vector(1), np.float32))
    checked, report = tables.check()
    assert report.ok and checked.aliases is not None


# ------------------------------------------------------------------ identifiers and mappings

BAD_NAMES = [
    "facts; DROP TABLE x",
    "a b",
    "1abc",
    "",
    'a"b',
    "x" * 64,
    "a.b.c",
    "a-b",
    "tab\tle",
    "rel--comment",
    "é",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_identifiers_are_refused(name: str) -> None:
    with pytest.raises(ParameterError, match="invalid table of facts") as exc:
        ColumnMapping(tables={"facts": name})
    assert repr(name) in str(exc.value)
    if "." not in name or name == "a.b.c":
        with pytest.raises(ParameterError, match=r"invalid column facts\.strength"):
            ColumnMapping(columns={"facts.strength": name})
    with pytest.raises(ParameterError):
        quote_identifier(name)


def test_good_identifiers_are_quoted() -> None:
    m = ColumnMapping(
        tables={"facts": "analytics.Relationship", "entities": "_e1"},
        columns={"facts.subject": "x" * 63},
    )
    assert m.table("facts") == "analytics.Relationship"
    assert quote_identifier("analytics.Relationship") == '"analytics"."Relationship"'
    with pytest.raises(ParameterError, match="invalid column"):
        ColumnMapping(columns={"facts.subject": "schema.column"})


def test_hostile_names_never_reach_the_database(tmp_path: Path) -> None:
    db = seed001_duckdb(tmp_path / "w.duckdb")
    for name in ("relationships; DROP TABLE entities", 'relationships" ; DROP TABLE entities; --'):
        with pytest.raises(ParameterError):
            load_duckdb(db, ColumnMapping(tables={"facts": name}))
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM entities").fetchone() == (5,)
    con.close()


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"tables": {"relationships": "facts"}}, "unknown table"),
        ({"columns": {"strength": "weight"}}, "expected 'table.column'"),
        ({"columns": {"facts.weight": "weight"}}, "facts has no column 'weight'"),
        ({"columns": {"edges.strength": "weight"}}, "unknown table 'edges'"),
        ({"values": {"facts.status": ["a"]}}, "is not a mapping"),
        ({"optional": {"facts.nothing"}}, "facts has no column 'nothing'"),
        ({"columns": {"facts.strength": 3}}, "is not a string"),
    ],
)
def test_bad_mappings_are_parameter_errors(kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(ParameterError, match=pattern):
        ColumnMapping(**kwargs)


def test_presets() -> None:
    assert sorted(PRESETS) == ["hybrid_graphrag", "personal_kg", "writeros", "zeph"]
    assert ColumnMapping.preset("writeros").column("facts", "strength") == "strength"
    assert ColumnMapping.preset("hybrid_graphrag").column("facts", "strength") == "weight"
    assert ColumnMapping.preset("personal_kg").column("entities", "tenant") == "user_id"
    with pytest.raises(ParameterError, match="companion"):
        ColumnMapping.preset("companion")
    merged = ColumnMapping.preset("hybrid_graphrag").merged(columns={"facts.strength": "w"})
    assert merged.column("facts", "strength") == "w"
    assert "facts.strength" not in merged.optional  # given again: required again
    assert "ColumnMapping(" in repr(merged)


def test_seed000_workload_schema(tmp_path: Path) -> None:
    """Seed 000's DuckDB tables (subject_id / object_id / user_id) as Parquet."""
    ents = pd.DataFrame({"id": [1, 2, 3], "user_id": ["u", "u", "w"], "name": ["a", "b", "c"]})
    facts = pd.DataFrame(
        {
            "id": [10, 11, 12],
            "user_id": ["u", "u", "w"],
            "subject_id": [1, 2, 3],
            "object_id": pd.array([2, None, None], dtype="Int64"),
            "predicate": ["works_on", "type", "type"],
            "object_value": [None, "embedded OLAP database", "x"],
            "confidence": np.array([0.97, 0.99, 0.5], np.float32),
            "status": ["confirmed", "staged", "confirmed"],
            "source": ["user_edit", "system", "file"],
            "access_count": [25, 0, 1],
            "last_accessed": pd.to_datetime([1767000000, None, 1766000000], unit="s"),
        }
    )
    root = write_parquet({"entities": ents, "facts": facts}, tmp_path)
    graph, _ = load_parquet(root, ColumnMapping.preset("personal_kg")).to_graph()
    want = KnowledgeGraph.from_records(
        entities=[{"id": i, "tenant": t, "name": n} for i, t, n in ents.itertuples(index=False)],
        facts=[
            {
                "id": 10,
                "subject": 1,
                "object": 2,
                "predicate": "works_on",
                "confidence": float(np.float32(0.97)),
                "status": "confirmed",
                "source": "user_edit",
                "access_count": 25,
                "last_accessed": 1767000000,
            },
            {
                "id": 11,
                "subject": 2,
                "object": None,
                "object_value": "embedded OLAP database",
                "predicate": "type",
                "confidence": float(np.float32(0.99)),
                "status": "staged",
                "source": "system",
                "access_count": 0,
                "last_accessed": None,
            },
            {
                "id": 12,
                "subject": 3,
                "object": None,
                "object_value": "x",
                "predicate": "type",
                "confidence": 0.5,
                "status": "confirmed",
                "source": "file",
                "access_count": 1,
                "last_accessed": 1766000000,
            },
        ],
    )
    assert_same_graph(graph, want)


# ------------------------------------------------------------------ missing tables and columns


def _loaders(tmp_path: Path) -> dict[str, Callable[[dict[str, Any], ColumnMapping], GraphTables]]:
    def parquet(frames: dict[str, Any], m: ColumnMapping) -> GraphTables:
        return load_parquet(write_parquet(frames, tmp_path / "missing"), m)

    def duck(frames: dict[str, Any], m: ColumnMapping) -> GraphTables:
        return load_source("duckdb", frames, m, tmp_path)

    return {"arrow": load_arrow, "parquet": parquet, "duckdb": duck}


@pytest.mark.parametrize("loader", ["arrow", "parquet", "duckdb"])
def test_a_mapped_column_the_table_lacks_is_named(loader: str, tmp_path: Path) -> None:
    frames = seed003_frames()
    frames["kg_relationships"] = frames["kg_relationships"].drop(columns=["weight"])
    mapping = ColumnMapping.preset("hybrid_graphrag").merged(columns={"facts.strength": "weight"})
    load = _loaders(tmp_path)[loader]
    with pytest.raises(
        DataError, match=r"table 'kg_relationships' \(facts\) has no column 'weight'"
    ):
        load(frames, mapping)
    # optional in the preset: read when present, skipped when not
    tables = load(frames, ColumnMapping.preset("hybrid_graphrag"))
    assert "strength" not in tables.facts


@pytest.mark.parametrize("loader", ["arrow", "parquet", "duckdb"])
def test_a_missing_table_is_named(loader: str, tmp_path: Path) -> None:
    frames = seed004_frames()
    del frames["graph_edges"]
    with pytest.raises(DataError, match="graph_edges"):
        _loaders(tmp_path)[loader](frames, ColumnMapping.preset("zeph"))


def test_required_column_missing_and_unknown_table_names() -> None:
    ents = pa.table({"id": [1]})
    with pytest.raises(DataError, match=r"has no column 'subject' \(required: facts\.subject\)"):
        load_arrow({"entities": ents, "facts": pa.table({"src": [1]})})
    with pytest.raises(ParameterError, match="relationship"):
        load_arrow({"entities": ents, "facts": pa.table({"subject": [1]}), "relationship": ents})
    with pytest.raises(ParameterError, match="is not a ColumnMapping"):
        load_arrow({"entities": ents}, mapping={"facts": "x"})  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="invalid table 'facts'"):
        load_arrow({"entities": ents, "facts": [1, 2]})


def test_missing_files_and_databases(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no facts\.parquet \(facts\)"):
        load_parquet(write_parquet({"entities": pd.DataFrame({"id": [1]})}, tmp_path / "p"))
    with pytest.raises(DataError, match="not a directory"):
        load_parquet(tmp_path / "nowhere")
    from graphrecall.storage import StorageError

    with pytest.raises(StorageError, match="no DuckDB database"):
        load_duckdb(tmp_path / "nowhere.duckdb")
    (tmp_path / "junk.duckdb").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StorageError, match="cannot open"):
        load_duckdb(tmp_path / "junk.duckdb")


def test_tenant_filter_needs_a_tenant_column(tmp_path: Path) -> None:
    frames = seed003_frames()
    db = load_source("duckdb", frames, ColumnMapping.preset("hybrid_graphrag"), tmp_path)
    assert db.n_rows("entities") == 5
    with pytest.raises(ParameterError, match="no tenant column"):
        load_duckdb(tmp_path / "db.duckdb", ColumnMapping.preset("hybrid_graphrag"), tenant=1)


# ------------------------------------------------------------------ bad rows reach the report


def test_nan_weights_and_dangling_ids_reach_the_report(tmp_path: Path) -> None:
    frames = seed003_frames()
    rel = frames["kg_relationships"].astype({"weight": "float64"})
    rel.loc[1, "weight"] = np.nan  # NaN weight
    rel.loc[2, "target_entity_id"] = 999  # dangling
    frames["kg_relationships"] = rel
    frames["kg_entity_chunks"].loc[0, "entity_id"] = 998  # dangling mention
    mapping = ColumnMapping.preset("hybrid_graphrag")
    for how in ("pandas", "parquet", "duckdb"):
        tables = load_source(how, frames, mapping, tmp_path / how)
        with pytest.raises(BadDataError) as exc:
            tables.to_graph()
        report = exc.value.report
        assert report.refused == {"facts": 2, "mentions": 1}, how
        reasons = [r.reason for r in report.table("facts").first]
        assert reasons == ["strength is missing or NaN", "object = 999 refers to no entity"]
        assert "998" in str(exc.value)
        located = [(e["type"], e["loc"][0], e["loc"][2], e["input"]) for e in exc.value.errors()]
        assert located == [
            ("missing", "facts", "strength", None),
            ("dangling", "facts", "object", 999),
            ("dangling", "mentions", "entity", 998),
        ], how
        assert exc.value.loc == ("facts", exc.value.errors()[0]["loc"][1], "strength")
        graph, skipped = tables.to_graph(on_bad="skip")
        assert skipped.skipped == {"facts": 2, "mentions": 1}
        assert sorted(graph.fact_ids.tolist()) == [1, 4]


def test_wrong_embedding_dimensions_reach_the_report() -> None:
    ents = pd.DataFrame(
        {"id": ["a", "b", "c"], "embedding": [vector(0), vector(1)[:3], [1.0, None, 2.0, 3.0]]}
    )
    tables = load_arrow({"entities": ents, "facts": pd.DataFrame({"subject": ["a"]})})
    [emb] = tables.embeddings
    assert emb.dim is None  # ragged until checked
    with pytest.raises(BadDataError) as exc:
        tables.check()
    reasons = [r.reason for r in exc.value.report.table("embeddings[0]").first]
    assert "dimension 3" in reasons[0] and "NaN" in reasons[1]
    checked, _ = tables.check(on_bad="skip")
    assert checked.embeddings[0].ids.tolist() == ["a"]
    assert checked.embeddings[0].vectors.shape == (1, DIM)


def test_mixed_python_ids_in_pandas_are_kept_as_objects() -> None:
    ents = pd.DataFrame({"id": [1, "two", None]})
    facts = pd.DataFrame({"subject": [1, "two"], "object": ["two", None]})
    tables = load_dataframes(ents, facts)
    assert tables.entities["id"].tolist() == [1, "two", None]
    with pytest.raises(BadDataError, match="id is missing"):
        tables.to_graph()
    graph, report = tables.to_graph(on_bad="skip")
    assert report.skipped == {"entities": 1}
    assert graph.facts([0, 1])[0]["object"] == "two"


def test_empty_tables_load(tmp_path: Path) -> None:
    ents = pa.table(
        {"id": pa.array([], pa.string()), "embedding": pa.array([], pa.list_(pa.float32()))}
    )
    tables = load_arrow(
        {"entities": ents, "facts": pa.table({"subject": pa.array([], pa.string())})}
    )
    assert tables.embeddings == [] and len(tables.facts["subject"]) == 0


def test_duckdb_tenant_of_the_wrong_type_and_chunks_filtered_through_mentions() -> None:
    from graphrecall.storage import StorageError

    con = duckdb.connect()
    con.execute("CREATE TABLE entities (id INTEGER, tenant INTEGER)")
    con.execute("INSERT INTO entities VALUES (1, 7), (2, 7), (3, 8)")
    con.execute("CREATE TABLE facts (subject INTEGER, object INTEGER, tenant INTEGER)")
    con.execute("INSERT INTO facts VALUES (1, 2, 7), (3, NULL, 8)")
    con.execute("CREATE TABLE chunks (id VARCHAR)")  # no tenant column
    con.execute("INSERT INTO chunks VALUES ('a'), ('b')")
    con.execute("CREATE TABLE mentions (chunk VARCHAR, entity INTEGER)")
    con.execute("INSERT INTO mentions VALUES ('a', 1), ('b', 3)")
    with pytest.raises(StorageError, match=r"table 'entities' \(entities\).*'abc'"):
        load_duckdb(con, tenant="abc")
    tables = load_duckdb(con, tenant=8)
    assert tables.entities["id"].tolist() == [3]
    assert "tenant" not in tables.facts  # a filter column only
    assert tables.facts["subject"].tolist() == [3]
    assert tables.chunks is not None and tables.chunks["id"].tolist() == ["b"]
    graph, _ = tables.to_graph()
    assert graph.chunk_ids.tolist() == ["b"]
    assert signature(graph)["tenants"] == [8] and signature(graph)["chunk_tenants"] == [8]
    con.close()


def test_any_arrow_stream_and_integer_value_maps() -> None:
    class Stream:  # what polars / DuckDB relations expose: the Arrow C stream interface
        def __init__(self, table: Any) -> None:
            self._table = table

        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            return self._table.__arrow_c_stream__(requested_schema)

    facts = pa.table({"subject": [1, 1], "state": [0, 3]})
    mapping = ColumnMapping(
        columns={"facts.status": "state"}, values={"facts.status": {0: "staged", 3: "archived"}}
    )
    tables = load_arrow({"entities": Stream(pa.table({"id": [1]})), "facts": facts}, mapping)
    assert tables.facts["status"].tolist() == ["staged", "archived"]


# ---------------------------------------------------------------------------- fast paths
# The loaders describe the object columns they make (dictionary codes, nullable ints) so
# that checking and building never walk the objects; every result must be the one the plain
# object arrays give.


def _plain(arr: np.ndarray) -> np.ndarray:
    """The same values in an undescribed (writeable) object array."""
    out = np.empty(len(arr), dtype=object)
    out[:] = arr.tolist()
    return out


def _text(values: list[Any]) -> pa.ChunkedArray:
    return pa.chunked_array([pa.array(values[:3], pa.string()), pa.array(values[3:], pa.string())])


@settings(PROPERTY, max_examples=examples(60))
@given(
    values=st.lists(st.sampled_from(["p0", "p1", "b", "a\x00", "", None]), max_size=12),
    known=st.sets(st.sampled_from(["p0", "p1", "b", "", "None"])),
)
def test_described_dictionary_columns_encode_as_plain_ones(
    values: list[Any], known: set[str]
) -> None:
    from graphrecall.storage.arrow.convert import from_dictionary as _from_dictionary
    from graphrecall.tables import Vocab
    from graphrecall.tables.columns import description

    col = _from_dictionary(pa.chunked_array([_text(values).combine_chunks().dictionary_encode()]))
    assert description(col) is not None and col.tolist() == values
    plain = _plain(col)
    assert description(plain) is None

    def outcome(f: Callable[[], Any]) -> Any:
        try:
            out = f()
        except DataError as exc:
            return ("error", str(exc))
        if isinstance(out, tuple):
            return (out[0].names, out[1].tolist())
        return out.tolist()

    assert outcome(lambda: Vocab.learn(col, "predicate")) == outcome(
        lambda: Vocab.learn(plain, "predicate")
    )
    vocab = Vocab(sorted(known), "status")
    assert outcome(lambda: vocab.encode(col, "facts", "status", np.uint8)) == outcome(
        lambda: vocab.encode(plain, "facts", "status", np.uint8)
    )


def test_described_columns_are_read_only_and_forgotten_when_writeable() -> None:
    from graphrecall.tables.columns import ObjectColumn, describe, description, take

    arr = describe(
        np.array([1, None, 3], dtype=object),
        ObjectColumn(
            frozenset({int, type(None)}),
            ints=np.array([1, 0, 3]),
            null=np.array([False, True, False]),
        ),
    )
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 7
    kept = take(arr, np.array([True, False, True]))
    info = description(kept)
    assert info is not None and info.types == {int} and info.ints is not None
    assert info.ints.tolist() == [1, 3] and kept.tolist() == [1, 3]
    view_of = np.array([1, 2], dtype=object)
    described = describe(view_of[:1], ObjectColumn(frozenset({int})))  # a view is copied
    assert described.base is None
    arr.flags.writeable = True  # whoever unlocks it gets the plain path again
    assert description(arr) is None


@settings(PROPERTY, max_examples=examples(60))
@given(
    ids=st.lists(st.integers(-5, 40), unique=True, max_size=12),
    refs=st.lists(st.integers(-8, 45) | st.none(), max_size=70_000 // 1000),
    ordered=st.booleans(),
)
def test_id_maps_of_ordered_and_dense_ids(
    ids: list[int], refs: list[int | None], ordered: bool
) -> None:
    from graphrecall.tables import IdMap

    keys = sorted(ids) if ordered else ids
    m = IdMap(np.array(keys, dtype=np.int64), len(keys), "entity")
    where = {k: i for i, k in enumerate(keys)}
    wanted = [where.get(r, None) if r is not None else -1 for r in refs]
    arr = np.array(refs, dtype=object)
    if any(w is None for w in wanted):
        with pytest.raises(DataError, match="refers to no entity"):
            m.to_index(arr, "facts", "object", allow_none=True)
    else:
        assert m.to_index(arr, "facts", "object", allow_none=True).tolist() == wanted
    # Many references at once take the lookup-table path: the same answers.
    big = np.resize(np.array([k for k in keys] or [0], dtype=np.int64), 70_000)
    if keys:
        assert m.to_index(big, "facts", "subject").tolist() == [where[k] for k in big.tolist()]


def test_loaded_nullable_ids_share_their_ints_and_check_as_plain_ones(tmp_path: Path) -> None:
    from graphrecall.tables.columns import description

    facts = pa.table(
        {
            "subject": pa.array([1, 2, 3, 1], pa.int64()),
            "object": pa.array([2, None, 1, 99], pa.int64()),
            "status": pa.array(["staged", None, "bogus", "confirmed"]).dictionary_encode(),
        }
    )
    entities = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    loaded = load_arrow({"entities": entities, "facts": facts})
    obj = loaded.facts["object"]
    assert obj.tolist() == [2, None, 1, 99] and description(obj) is not None
    assert obj[0] is loaded.facts["object"][0]
    plain = GraphTables(
        entities={"id": [1, 2, 3]},
        facts={k: _plain(v) for k, v in loaded.facts.items()},
    )
    with pytest.raises(BadDataError) as fast:
        loaded.check()
    with pytest.raises(BadDataError) as slow:
        plain.check()
    assert str(fast.value) == str(slow.value)
    assert fast.value.errors() == slow.value.errors()  # described columns locate alike
    # Names are an open vocabulary: only the missing status is refused.
    assert "status is missing" in str(fast.value) and "bogus" not in str(fast.value)
    a, _ = loaded.to_graph(on_bad="skip")
    b, _ = plain.to_graph(on_bad="skip")
    assert a.facts(a.fact_ids) == b.facts(b.fact_ids)
