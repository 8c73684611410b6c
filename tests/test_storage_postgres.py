"""load_postgres against a real PostgreSQL + pgvector server (started by ``pg_server``).

Tables shaped like the source designs' PostgreSQL schemas (seed 000's facts, seed 001's
WriterOS entities / relationships / chunks with ``vector(8)`` embeddings and ``uuid[]``
mentions, seed 002's chunks with ``text[]`` tags and ``jsonb`` metadata) load to exactly
what :func:`load_dataframes` makes of the same rows; the graph built from them answers a
spread like a plain BFS over the rows. The tenant filter is in the SQL, names are validated
identifiers, missing tables and columns are named, bad rows reach the check's report, and a
caller's connection is left as it was found.

The server is never skipped: if it cannot start, every test here fails with pgserver's
message and log.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
import uuid
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import psycopg
import pytest
from conftest import PROPERTY, examples
from graphrecall import DataError, KnowledgeGraph, ParameterError
from graphrecall.storage import (
    BadDataError,
    EmbeddingSet,
    GraphTables,
    StorageError,
    load_dataframes,
    load_postgres,
)
from graphrecall.storage.postgres import MissingTableError, PostgresTables
from graphrecall.tables import NULL_TIME
from graphrecall.tables.mapping import ColumnMapping
from hypothesis import given, settings
from hypothesis import strategies as st
from pg_server import PgServer, ServerError, start
from psycopg.types.json import Jsonb

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)
DIM = 8


# ------------------------------------------------------------------ the server


@pytest.fixture(scope="session")
def server() -> Iterator[PgServer]:
    """One PostgreSQL server for the whole session (fails, never skips, if it cannot)."""
    try:
        srv = start()
    except ServerError as exc:
        pytest.fail(f"the PostgreSQL test server did not start: {exc}", pytrace=False)
    try:
        yield srv
    finally:
        srv.stop()


_counter = itertools.count()


@dataclass
class Db:
    """A fresh schema of the test server: ``uri`` connects with it first on the
    ``search_path`` (then ``public``, where pgvector's types are)."""

    server: PgServer
    schema: str
    uri: str
    conn: psycopg.Connection[Any]

    def run(self, *statements: str) -> None:
        for statement in statements:
            self.conn.execute(statement)

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """COPY rows (dicts with the same keys) into a table."""
        if not rows:
            return
        cols = list(rows[0])
        names = ", ".join(cols)
        with self.conn.cursor().copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([_pg_value(row[c]) for c in cols])


def _pg_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):  # a vector: pgvector's text form
        return "[" + ",".join(repr(float(x)) for x in v.tolist()) + "]"
    if isinstance(v, dict):
        return Jsonb(v)
    return v


def _new_db(server: PgServer, name: str) -> Db:
    schema = f"t{next(_counter)}_" + re.sub(r"[^a-z0-9_]", "_", name.lower())[:40]
    conn = psycopg.connect(server.uri, autocommit=True)
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"SET search_path = {schema}, public")
    uri = psycopg.conninfo.make_conninfo(server.uri, options=f"-c search_path={schema},public")
    return Db(server, schema, uri, conn)


@pytest.fixture
def db(server: PgServer, request: pytest.FixtureRequest) -> Iterator[Db]:
    d = _new_db(server, request.node.name)
    try:
        yield d
    finally:
        d.conn.execute(f"DROP SCHEMA {d.schema} CASCADE")
        d.conn.close()


# ------------------------------------------------------------------ comparing tables


def _same_values(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    if a.dtype != object and b.dtype != object:
        # The check keeps float32 numbers (a REAL column) as float32: the same values.
        floats = {a.dtype, b.dtype} == {np.dtype(np.float32), np.dtype(np.float64)}
        return (a.dtype == b.dtype or floats) and np.array_equal(
            a, b, equal_nan=a.dtype.kind == "f"
        )
    la, lb = a.tolist(), b.tolist()
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if type(x) is not type(y) or x != y:
            return False
    return True


def assert_same_tables(got: GraphTables, want: GraphTables) -> None:
    """Column by column (dtypes and values, NaN = NaN) and embedding by embedding."""
    for name in ("entities", "facts", "chunks", "mentions", "aliases"):
        g, w = got.table(name), want.table(name)
        assert (g is None) == (w is None), name
        if g is None or w is None:
            continue
        assert sorted(g) == sorted(w), name
        for col in g:
            assert _same_values(g[col], w[col]), (name, col, g[col][:5], w[col][:5])

    def key(e: EmbeddingSet) -> tuple[str, str]:
        return (e.kind, e.model or "")

    ge, we = sorted(got.embeddings, key=key), sorted(want.embeddings, key=key)
    assert [key(e) for e in ge] == [key(e) for e in we]
    for x, y in zip(ge, we, strict=True):
        assert _same_values(x.ids, y.ids)
        assert x.vectors.dtype == y.vectors.dtype == np.float32
        np.testing.assert_array_equal(x.vectors, y.vectors)


def checked(tables: GraphTables) -> GraphTables:
    out, report = tables.check()
    assert report.ok, str(report)
    return out


def bfs_out(facts: Sequence[Mapping[str, Any]], anchor: Hashable, max_hops: int) -> dict[Any, int]:
    """Reference spread (seed 000, direction "out"): fact id -> hop."""
    by_subject: dict[Hashable, list[Mapping[str, Any]]] = {}
    for f in facts:
        by_subject.setdefault(f["subject"], []).append(f)
    hops: dict[Any, int] = {}
    seen = {anchor}
    frontier = [anchor]
    for hop in range(max_hops):
        nxt = []
        for e in frontier:
            for f in by_subject.get(e, []):
                hops.setdefault(f["id"], hop)
                o = f["object"]
                if o is not None and o not in seen:
                    seen.add(o)
                    nxt.append(o)
        frontier = nxt
    return hops


def spread_hops(graph: KnowledgeGraph, anchor: Hashable, max_hops: int) -> dict[Any, int]:
    q = graph.spread([anchor], max_hops=max_hops)[0]
    return dict(zip(q.fact_ids.tolist(), q.hops.tolist(), strict=True))


# ------------------------------------------------------------------ seed 000: facts


def seed000_rows(
    n_entities: int = 60, n_facts: int = 400, seed: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ADR's entities / facts: two users, literal facts, every status and source."""
    rng = np.random.default_rng(seed)
    entities = [
        {
            "id": f"e{i}",
            "user_id": f"u{i % 2}",
            "name": f'Entity {i}, "quoted"\nnext line' if i % 7 == 0 else f"Entity {i}",
            "embedding": rng.standard_normal(DIM).astype(np.float32),
        }
        for i in range(n_entities)
    ]
    statuses = ["staged", "confirmed", "rejected", "archived"]
    sources = ["user_edit", "file", "system", "conversation"]
    facts = []
    for k in range(n_facts):
        s = int(rng.integers(n_entities))
        literal = k % 5 == 0
        o = (s + 2 * int(rng.integers(n_entities // 2))) % n_entities  # same user
        facts.append(
            {
                "id": 1000 + k,
                "subject_id": f"e{s}",
                "object_id": None if literal else f"e{o}",
                "predicate": f"p{k % 6}",
                "object_value": (f"value, {k}" if k % 10 else "") if literal else None,
                "confidence": float(rng.integers(0, 101)) / 100,
                "status": statuses[k % 4],
                "source": sources[(k // 4) % 4],
                "access_count": int(rng.integers(0, 50)),
                "last_accessed": None
                if k % 9 == 0
                else T0 - dt.timedelta(seconds=int(rng.integers(0, 10**7)), microseconds=k),
                "user_id": f"u{s % 2}",
            }
        )
    return entities, facts


def create_seed000(db: Db, entities: list[dict[str, Any]], facts: list[dict[str, Any]]) -> None:
    db.run(
        f"CREATE TABLE entities (id text PRIMARY KEY, user_id text NOT NULL, name text, "
        f"embedding vector({DIM}))",
        "CREATE TABLE facts (id bigint PRIMARY KEY, subject_id text NOT NULL, object_id text, "
        "predicate text, object_value text, confidence double precision, status text, "
        "source text, access_count integer, last_accessed timestamptz, user_id text)",
    )
    db.insert("entities", entities)
    db.insert("facts", facts)


def seed000_frames(
    entities: list[dict[str, Any]], facts: list[dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    ent = pd.DataFrame(entities)
    ent["embedding"] = [list(map(float, v)) for v in ent["embedding"]]
    fac = pd.DataFrame(facts)
    fac["last_accessed"] = pd.to_datetime(fac["last_accessed"], utc=True)
    return ent, fac


def test_seed000_facts_equal_load_dataframes_and_spread(db: Db) -> None:
    entities, facts = seed000_rows()
    create_seed000(db, entities, facts)
    mapping = ColumnMapping.preset("personal_kg")
    tables = load_postgres(db.uri, mapping=mapping)
    assert isinstance(tables, PostgresTables) and tables.report.ok
    want = checked(load_dataframes(*seed000_frames(entities, facts), mapping=mapping))
    assert_same_tables(tables, want)
    # the columns as the graph reads them
    assert tables.facts["id"].dtype == np.int64
    assert tables.facts["object"][0] is None and tables.facts["object_value"][0] == ""
    assert tables.facts["object_value"][5] == "value, 5"
    assert tables.entities["name"][7] == 'Entity 7, "quoted"\nnext line'
    la = facts[1]["last_accessed"]
    assert tables.facts["last_accessed"][1] == math.floor(la.timestamp())
    assert tables.facts["last_accessed"][0] == NULL_TIME
    [emb] = tables.embeddings
    assert emb.kind == "entity" and emb.vectors.shape == (len(entities), DIM)
    np.testing.assert_array_equal(emb.vectors, np.stack([e["embedding"] for e in entities]))

    graph = tables.build_graph()  # checked already
    graph2, report = tables.to_graph()  # checks again: every row passes
    assert report.ok and graph2.n_facts == graph.n_facts == len(facts)
    rows = [{"id": f["id"], "subject": f["subject_id"], "object": f["object_id"]} for f in facts]
    for anchor in ("e0", "e3", "e11"):
        assert spread_hops(graph, anchor, 3) == bfs_out(rows, anchor, 3)


def test_open_connection_is_left_as_found(db: Db) -> None:
    entities, facts = seed000_rows(10, 20)
    create_seed000(db, entities, facts)
    mapping = ColumnMapping.preset("personal_kg")
    with psycopg.connect(db.uri) as conn:  # not autocommit
        idle = psycopg.pq.TransactionStatus.IDLE
        tables = load_postgres(conn, mapping=mapping)
        assert tables.n_rows("facts") == 20 and conn.info.transaction_status == idle
        # inside the caller's transaction: its uncommitted rows are seen, and kept
        conn.execute("INSERT INTO entities (id, user_id) VALUES ('new', 'u0')")
        assert load_postgres(conn, mapping=mapping).n_rows("entities") == 11
        with pytest.raises(MissingTableError):
            load_postgres(conn, mapping=mapping.merged(tables={"chunks": "nope"}))
        intrans = psycopg.pq.TransactionStatus.INTRANS
        assert conn.info.transaction_status == intrans  # still usable
        assert conn.execute("SELECT count(*) FROM entities").fetchone() == (11,)
        conn.rollback()
        assert load_postgres(conn, mapping=mapping).n_rows("entities") == 10
        # a failed transaction is refused, not hidden
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
        with pytest.raises(StorageError, match="failed transaction"):
            load_postgres(conn, mapping=mapping)
        conn.rollback()
        # a custom row factory does not matter
        conn.row_factory = psycopg.rows.dict_row  # type: ignore[assignment]
        assert load_postgres(conn, mapping=mapping).n_rows("facts") == 20
    with pytest.raises(StorageError, match="closed"):
        load_postgres(conn, mapping=mapping)


# ------------------------------------------------------------------ seed 001: WriterOS


WESTEROS = ["ned", "robert", "jon", "cersei", "tywin"]
VAULT = {"ned": "v1", "robert": "v1", "jon": "v1", "cersei": "v2", "tywin": "v2"}
RELS = [  # source, target, type, strength, confidence, sequence
    ("ned", "robert", "ALLY", 0.9, 0.95, 1),
    ("jon", "ned", "MENTOR", 0.8, 1.0, None),
    ("robert", "jon", "ALLY", 0.5, 0.75, 3),
    ("tywin", "cersei", "PARENT", 0.25, 0.5, 2),
]
CHUNKS = [("c1", "v1", ["ned", "robert"]), ("c2", "v1", ["jon"]), ("c3", "v2", ["cersei", "tywin"])]


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, name))


def vec(i: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.array([i, 0.5, -1, i / 4, 1e-8, -3.25, 2**-20, 7], dtype=np.float32)


def seed001_rows() -> dict[str, list[dict[str, Any]]]:
    return {
        "entities": [
            {
                "id": uid(e),
                "vault_id": uid(VAULT[e]),
                "name": e.title(),
                "entity_type": "CHARACTER",
                "primary_source_chunk_id": uid(next(c[0] for c in CHUNKS if e in c[2])),
                "embedding": vec(i),
            }
            for i, e in enumerate(WESTEROS)
        ],
        "relationships": [
            {
                "id": uid(f"r{k}"),
                "vault_id": uid(VAULT[r[0]]),
                "source_entity_id": uid(r[0]),
                "target_entity_id": uid(r[1]),
                "rel_type": r[2],
                "strength": r[3],
                "extraction_confidence": r[4],
                "established_at_sequence": r[5],
            }
            for k, r in enumerate(RELS)
        ],
        "chunks": [
            {
                "id": uid(c[0]),
                "vault_id": uid(c[1]),
                "content": f"chunk {c[0]}",
                "mentioned_entity_ids": [uid(e) for e in c[2]],
                "embedding": vec(10 + k),
                "embedding_model": "text-embedding-3-small",
            }
            for k, c in enumerate(CHUNKS)
        ],
    }


def create_seed001(db: Db, rows: dict[str, list[dict[str, Any]]]) -> None:
    db.run(
        "CREATE TABLE entities (id uuid PRIMARY KEY, vault_id uuid NOT NULL, name text, "
        f"entity_type text, primary_source_chunk_id uuid, embedding vector({DIM}))",
        "CREATE TABLE relationships (id uuid PRIMARY KEY, vault_id uuid, "
        "source_entity_id uuid REFERENCES entities, target_entity_id uuid REFERENCES entities, "
        "rel_type text, strength real, extraction_confidence double precision, "
        "established_at_sequence integer, is_bidirectional boolean DEFAULT false)",
        "CREATE TABLE chunks (id uuid PRIMARY KEY, vault_id uuid, content text, "
        f"mentioned_entity_ids uuid[], embedding vector({DIM}), embedding_model text)",
    )
    for table, values in rows.items():
        db.insert(table, values)


SEED001 = ColumnMapping.preset("writeros").merged(columns={"facts.predicate": "rel_type"})


def test_seed001_vectors_and_uuid_mentions_equal_load_dataframes(db: Db) -> None:
    rows = seed001_rows()
    create_seed001(db, rows)
    tables = load_postgres(db.uri, mapping=SEED001)
    frames = {name: pd.DataFrame(values) for name, values in rows.items()}
    for df in frames.values():
        if "embedding" in df:
            df["embedding"] = [v.tolist() for v in df["embedding"]]
    frames["relationships"]["established_at_sequence"] = pd.array(
        frames["relationships"]["established_at_sequence"].tolist(), dtype="Int64"
    )
    frames["relationships"]["strength"] = frames["relationships"]["strength"].astype(np.float32)
    want = load_dataframes(
        frames["entities"],
        frames["relationships"],
        chunks=frames["chunks"],
        mentions=frames["chunks"],
        mapping=SEED001,
    )
    assert_same_tables(tables, checked(want))
    assert tables.facts["predicate"].tolist() == [r[2] for r in RELS]
    assert tables.facts["sequence"].tolist() == [1, NULL_TIME, 3, 2]
    assert tables.mentions is not None
    pairs = zip(tables.mentions["chunk"].tolist(), tables.mentions["entity"].tolist(), strict=True)
    assert sorted(pairs) == sorted((uid(c[0]), uid(e)) for c in CHUNKS for e in c[2])
    by = {(e.kind, e.model): e for e in tables.embeddings}
    ent, chunk = by[("entity", None)], by[("chunk", "text-embedding-3-small")]
    np.testing.assert_array_equal(ent.vectors, np.stack([vec(i) for i in range(5)]))
    assert chunk.ids.tolist() == [uid(c[0]) for c in CHUNKS] and chunk.vectors.shape == (3, DIM)

    graph = tables.build_graph()
    facts = [
        {"id": uid(f"r{k}"), "subject": uid(r[0]), "object": uid(r[1])} for k, r in enumerate(RELS)
    ]
    assert spread_hops(graph, uid("jon"), 3) == bfs_out(facts, uid("jon"), 3)
    assert spread_hops(graph, uid("jon"), 3) == {uid("r1"): 0, uid("r0"): 1, uid("r2"): 2}


def test_tenant_filter_reads_only_that_tenant(db: Db) -> None:
    rows = seed001_rows()
    create_seed001(db, rows)
    tables = load_postgres(db.uri, mapping=SEED001, tenant=uid("v2"))
    assert sorted(tables.entities["id"].tolist()) == sorted([uid("cersei"), uid("tywin")])
    assert tables.facts["id"].tolist() == [uid("r3")]
    assert tables.chunks is not None and tables.chunks["id"].tolist() == [uid("c3")]
    assert tables.mentions is not None and set(tables.mentions["chunk"].tolist()) == {uid("c3")}
    assert {e.ids.tolist()[0] for e in tables.embeddings} == {uid("cersei"), uid("c3")}
    # A tenant that is not one reads nothing; a value is a literal, never SQL.
    nobody = load_postgres(db.uri, mapping=SEED001, tenant=str(uuid.uuid4()))
    assert nobody.n_rows("entities") == nobody.n_rows("facts") == 0
    with pytest.raises(StorageError, match="invalid input syntax for type uuid"):
        load_postgres(db.uri, mapping=SEED001, tenant="x' OR '1'='1")
    # facts without a tenant column: those whose subject is in the tenant
    db.run("ALTER TABLE relationships DROP COLUMN vault_id")
    tables = load_postgres(db.uri, mapping=SEED001, tenant=uid("v1"))
    assert sorted(tables.facts["id"].tolist()) == sorted(uid(f"r{k}") for k in range(3))
    # a tenant of the wrong type is named
    with pytest.raises(StorageError, match=r"tenant 7 compare"):
        load_postgres(db.uri, mapping=SEED001, tenant=7)
    with pytest.raises(ParameterError, match="tenant"):
        load_postgres(db.uri, mapping=SEED001, tenant=(1, 2))
    with pytest.raises(ParameterError, match="no tenant column"):
        load_postgres(
            db.uri, mapping=SEED001.merged(columns={"entities.tenant": None}), tenant=uid("v1")
        )


def test_tenant_filter_through_a_mentions_table(db: Db) -> None:
    """Chunks without a tenant column are those that mention the tenant's entities."""
    db.run(
        "CREATE TABLE entities (id bigint, user_id bigint)",
        "CREATE TABLE facts (subject bigint, object bigint)",
        "CREATE TABLE chunks (id bigint, text text)",
        "CREATE TABLE mentions (chunk bigint, entity bigint, count int)",
    )
    db.insert("entities", [{"id": i, "user_id": i % 2} for i in range(6)])
    db.insert("facts", [{"subject": i, "object": (i + 2) % 6} for i in range(6)])
    db.insert("chunks", [{"id": 100 + i, "text": f"t{i}"} for i in range(6)])
    db.insert("mentions", [{"chunk": 100 + i, "entity": i, "count": 1} for i in range(6)])
    mapping = ColumnMapping(columns={"entities.tenant": "user_id"})
    tables = load_postgres(db.uri, mapping=mapping, tenant=1)
    assert tables.entities["id"].tolist() == [1, 3, 5]
    assert tables.facts["subject"].tolist() == [1, 3, 5]
    assert tables.chunks is not None and tables.chunks["id"].tolist() == [101, 103, 105]
    assert tables.mentions is not None and tables.mentions["count"].tolist() == [1, 1, 1]
    tables.build_graph()


# ------------------------------------------------------------------ seed 002: tags, jsonb


def test_seed002_chunks_with_tags_and_jsonb_metadata(db: Db) -> None:
    db.run(
        "CREATE TABLE entities (id int PRIMARY KEY, user_id text, name text)",
        "CREATE TABLE facts (subject int, object int, predicate text, confidence real)",
        "CREATE TABLE memories (id int PRIMARY KEY, user_id text, content text, scope text, "
        "category text, tags text[], metadata jsonb, created_at timestamptz, expires_at date, "
        f"confidence numeric(4, 3), access_count bigint, last_accessed timestamp, "
        f"embedding vector({DIM}))",
        "CREATE TABLE memory_entities (memory_id int, entity_id int)",
    )
    db.insert("entities", [{"id": i, "user_id": "u", "name": f"n{i}"} for i in range(3)])
    db.insert("facts", [{"subject": 0, "object": 1, "predicate": "GOAL", "confidence": 0.5}])
    created = dt.datetime(2025, 6, 1, 12, 30, 15, 999_999, tzinfo=UTC)
    memories = [
        {
            "id": 1,
            "user_id": "u",
            "content": "Wants to run a marathon",
            "scope": "goals",
            "category": "fitness",
            "tags": ["health", "long term", 'q"uote,comma'],
            "metadata": {"goal": "marathon", "mission": None, "n": [1, 2]},
            "created_at": created,
            "expires_at": dt.date(2026, 3, 1),
            "confidence": 0.875,
            "access_count": 3,
            "last_accessed": dt.datetime(2025, 12, 31, 23, 59, 59),
            "embedding": vec(1),
        },
        {
            "id": 2,
            "user_id": "u",
            "content": "",
            "scope": "preferences",
            "category": None,
            "tags": [],
            "metadata": None,
            "created_at": None,
            "expires_at": None,
            "confidence": None,
            "access_count": 0,
            "last_accessed": None,
            "embedding": None,
        },
    ]
    db.insert("memories", memories)
    db.insert(
        "memory_entities", [{"memory_id": 1, "entity_id": 0}, {"memory_id": 2, "entity_id": 2}]
    )
    mapping = ColumnMapping(
        tables={"chunks": "memories", "mentions": "memory_entities"},
        columns={
            "entities.tenant": "user_id",
            "chunks.tenant": "user_id",
            "chunks.text": "content",
            "mentions.chunk": "memory_id",
            "mentions.entity": "entity_id",
        },
    )
    tables = load_postgres(db.uri, mapping=mapping, tenant="u")
    injected = load_postgres(db.uri, mapping=mapping, tenant="x' OR '1'='1")
    assert injected.n_rows("entities") == injected.n_rows("chunks") == 0
    ch = tables.chunks
    assert ch is not None
    assert ch["tags"].tolist() == [["health", "long term", 'q"uote,comma'], []]
    assert ch["metadata"].tolist() == [{"goal": "marathon", "mission": None, "n": [1, 2]}, None]
    assert ch["text"].tolist() == ["Wants to run a marathon", ""]
    assert ch["category"].tolist() == ["fitness", None]
    assert ch["created_at"].tolist() == [math.floor(created.timestamp()), NULL_TIME]
    assert ch["expires_at"].tolist() == [
        int(dt.datetime(2026, 3, 1, tzinfo=UTC).timestamp()),
        NULL_TIME,
    ]
    assert ch["last_accessed"][0] == int(
        dt.datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
    )
    np.testing.assert_array_equal(ch["confidence"], [0.875, np.nan])
    assert ch["access_count"].tolist() == [3, 0]
    [emb] = tables.embeddings
    assert emb.kind == "chunk" and emb.ids.tolist() == [1]  # the NULL vector is not embedded
    np.testing.assert_array_equal(emb.vectors, vec(1)[None, :])
    assert tables.mentions is not None and tables.mentions["chunk"].tolist() == [1, 2]
    # the same rows as DataFrames
    frames = pd.DataFrame(memories)
    frames["embedding"] = [None if v is None else v.tolist() for v in frames["embedding"]]
    for col in ("created_at", "last_accessed"):
        frames[col] = pd.to_datetime(frames[col], utc=True)
    frames["expires_at"] = pd.to_datetime(frames["expires_at"], utc=True)
    want = load_dataframes(
        pd.DataFrame({"id": [0, 1, 2], "user_id": ["u"] * 3, "name": ["n0", "n1", "n2"]}),
        pd.DataFrame({"subject": [0], "object": [1], "predicate": ["GOAL"], "confidence": [0.5]}),
        chunks=frames,
        mentions=pd.DataFrame({"memory_id": [1, 2], "entity_id": [0, 2]}),
        mapping=mapping,
    )
    assert_same_tables(tables, checked(want))


# ------------------------------------------------------------------ custom mapping, formats


def test_custom_mapping_schema_and_value_map(db: Db) -> None:
    db.run(
        "CREATE SCHEMA IF NOT EXISTS kg_" + db.schema,
        f"CREATE TABLE kg_{db.schema}.nodes (node_key text, label text, vault text)",
        f"CREATE TABLE kg_{db.schema}.edges (src text, dst text, kind text, weight real, "
        "state text, seq int, since timestamptz, until timestamptz)",
    )
    db.insert(
        f"kg_{db.schema}.nodes",
        [{"node_key": k, "label": k.upper(), "vault": "a"} for k in ("x", "y", "z")],
    )
    db.insert(
        f"kg_{db.schema}.edges",
        [
            {"src": "x", "dst": "y", "kind": "knows", "weight": 0.5, "state": "active",
             "seq": 1, "since": T0, "until": None},
            {"src": "y", "dst": "z", "kind": "likes", "weight": 2.0, "state": "ended",
             "seq": None, "since": None, "until": T0 + dt.timedelta(days=1)},
        ],
    )  # fmt: skip
    mapping = ColumnMapping(
        tables={"entities": "Nodes", "facts": "edges"},  # a capital: the lower-case table
        columns={
            "entities.id": "node_key",
            "entities.name": "label",
            "entities.tenant": "vault",
            "facts.subject": "src",
            "facts.object": "dst",
            "facts.predicate": "kind",
            "facts.strength": "weight",
            "facts.status": "state",
            "facts.sequence": "seq",
            "facts.valid_from": "since",
            "facts.valid_to": "until",
        },
        values={"facts.status": {"active": "confirmed", "ended": "archived"}},
    )
    tables = load_postgres(db.uri, mapping=mapping, schema=f"kg_{db.schema}", tenant="a")
    assert tables.entities["name"].tolist() == ["X", "Y", "Z"]
    assert tables.facts["status"].tolist() == ["confirmed", "archived"]
    assert tables.facts["strength"].tolist() == [0.5, 2.0]
    assert tables.facts["valid_from"].tolist() == [int(T0.timestamp()), NULL_TIME]
    assert tables.facts["valid_to"].tolist() == [NULL_TIME, int(T0.timestamp()) + 86_400]
    # schema-qualified names in the mapping work without schema=
    qualified = mapping.merged(
        tables={"entities": f"kg_{db.schema}.nodes", "facts": f"kg_{db.schema}.edges"}
    )
    assert_same_tables(load_postgres(db.uri, mapping=qualified), tables)
    db.run(f"DROP SCHEMA kg_{db.schema} CASCADE")


def test_embedding_column_types(db: Db) -> None:
    """real[] / float8[] / bytea embeddings load like vector columns; a NULL element is
    refused by the check (NaN)."""
    db.run(
        "CREATE TABLE entities (id int, e4 real[], e8 double precision[], blob bytea)",
        "CREATE TABLE facts (subject int)",
    )
    vs = [vec(i) for i in range(3)]
    db.insert(
        "entities",
        [
            {"id": i, "e4": v.tolist(), "e8": v.tolist(), "blob": v.tobytes()}
            for i, v in enumerate(vs)
        ],
    )
    for col in ("e4", "e8", "blob"):
        mapping = ColumnMapping(columns={"entities.embedding": col})
        [emb] = load_postgres(db.uri, mapping=mapping).embeddings
        np.testing.assert_array_equal(emb.vectors, np.stack(vs), err_msg=col)
    db.run("UPDATE entities SET e4[2] = NULL WHERE id = 1")
    mapping = ColumnMapping(columns={"entities.embedding": "e4"})
    with pytest.raises(BadDataError) as err:
        load_postgres(db.uri, mapping=mapping)
    assert "(id 1): vector holds NaN" in str(err.value)  # rows in the order read
    with pytest.raises(DataError, match=r"entities.id \(embedding\) has type int4"):
        load_postgres(db.uri, mapping=ColumnMapping(columns={"entities.embedding": "id"}))


# ------------------------------------------------------------------ bad rows


def test_bad_rows_are_reported_or_skipped(db: Db) -> None:
    db.run(
        "CREATE TABLE entities (id text, embedding vector)",  # no dimension: any
        "CREATE TABLE facts (id int, subject text, object text, strength double precision, "
        "status text)",
    )
    db.insert(
        "entities",
        [
            {"id": "a", "embedding": vec(0)},
            {"id": "b", "embedding": vec(1)},
            {"id": "c", "embedding": np.ones(3, np.float32)},  # wrong dimension
        ],
    )
    db.insert(
        "facts",
        [
            {"id": 1, "subject": "a", "object": "b", "strength": 0.5, "status": "confirmed"},
            {"id": 2, "subject": "a", "object": "ghost", "strength": 0.5, "status": "staged"},
            {"id": 3, "subject": "b", "object": "a", "strength": math.nan, "status": "staged"},
            {"id": 4, "subject": "b", "object": "c", "strength": 1.0, "status": None},
        ],
    )
    with pytest.raises(BadDataError) as err:
        load_postgres(db.uri)
    report = err.value.report
    facts = report.table("facts")
    assert facts.bad == 3
    reasons = {r.id: r.reason for r in facts.first}
    assert set(reasons) == {2, 3, 4}
    assert "ghost" in reasons[2]
    assert "strength" in reasons[3]
    assert "status is missing" in reasons[4]
    assert "dimension" in str(report) and report.refused["embeddings[0]"] == 1

    tables = load_postgres(db.uri, on_bad="skip")
    assert tables.report.skipped == {"facts": 3, "embeddings[0]": 1}
    assert tables.facts["id"].tolist() == [1]
    assert tables.embeddings[0].ids.tolist() == ["a", "b"]
    assert "skipped them" in str(tables.report)
    with pytest.raises(ParameterError, match="on_bad"):
        load_postgres(db.uri, on_bad="ignore")  # type: ignore[arg-type]


# ------------------------------------------------------------------ names and errors


def test_identifier_injection_is_refused(db: Db) -> None:
    entities, facts = seed000_rows(4, 4)
    create_seed000(db, entities, facts)
    with pytest.raises(ParameterError, match="not an SQL identifier"):
        ColumnMapping(tables={"facts": 'facts"; DROP TABLE entities; --'})
    with pytest.raises(ParameterError, match="not an SQL identifier"):
        ColumnMapping(columns={"facts.subject": "subject_id) FROM facts; --"})
    with pytest.raises(ParameterError, match="schema"):
        load_postgres(db.uri, schema="public; DROP TABLE entities")
    with pytest.raises(ParameterError, match="mapping"):
        load_postgres(db.uri, mapping={"facts": "x"})  # type: ignore[arg-type]
    assert db.conn.execute("SELECT count(*) FROM entities").fetchone() == (4,)


def test_missing_table_column_and_schema_are_named(db: Db) -> None:
    entities, facts = seed000_rows(4, 4)
    create_seed000(db, entities, facts)
    mapping = ColumnMapping.preset("personal_kg")
    with pytest.raises(MissingTableError, match=r"no table 'relationships' \(facts\)") as err:
        load_postgres(db.uri, mapping=mapping.merged(tables={"facts": "relationships"}))
    assert "'entities'" in str(err.value) and "'facts'" in str(err.value)  # what there is
    assert isinstance(err.value, StorageError) and isinstance(err.value, DataError)
    with pytest.raises(MissingTableError, match=r"no column 'weight'"):
        load_postgres(db.uri, mapping=mapping.merged(columns={"facts.strength": "weight"}))
    with pytest.raises(MissingTableError, match=r"no schema 'nowhere'"):
        load_postgres(db.uri, mapping=mapping, schema="nowhere")
    with pytest.raises(MissingTableError, match=r"no table 'entities'"):
        load_postgres(db.uri, mapping=mapping, schema="pg_catalog")


def test_connection_errors_are_storage_errors(db: Db) -> None:
    with pytest.raises(StorageError, match="cannot connect") as err:
        load_postgres("host=/nonexistent/socket/dir dbname=kg password=hunter2 user=me")
    assert "hunter2" not in str(err.value) and "/nonexistent/socket/dir" in str(err.value)
    with pytest.raises(StorageError, match="cannot connect"):
        load_postgres(psycopg.conninfo.make_conninfo(db.server.uri, dbname="no_such_db"))
    with pytest.raises(ParameterError, match="conninfo"):
        load_postgres("host='unterminated")
    with pytest.raises(ParameterError, match="neither a conninfo"):
        load_postgres(42)  # type: ignore[arg-type]


def test_error_in_the_middle_of_a_copy(db: Db) -> None:
    """A query failing after rows were sent (a view dividing by zero at row 3000) is a
    StorageError naming the table; the caller's connection stays usable."""
    db.run(
        "CREATE TABLE entities (id int)",
        "CREATE TABLE base (n int)",
        "INSERT INTO entities SELECT generate_series(0, 9)",
        "INSERT INTO base SELECT generate_series(0, 5000)",
        "CREATE VIEW facts AS SELECT n % 10 AS subject, 1.0 / (3000 - n) AS strength FROM base",
    )
    with psycopg.connect(db.uri) as conn:
        with pytest.raises(StorageError, match=r"reading table 'facts' .*division by zero"):
            load_postgres(conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SELECT count(*) FROM base").fetchone() == (5001,)
        db.run(
            "CREATE OR REPLACE VIEW facts AS SELECT n % 10 AS subject, 1.0 AS strength FROM base"
        )
        assert load_postgres(conn).n_rows("facts") == 5001


def test_empty_tables_load(db: Db) -> None:
    create_seed000(db, [], [])
    tables = load_postgres(db.uri, mapping=ColumnMapping.preset("personal_kg"))
    assert tables.n_rows("entities") == 0 and tables.n_rows("facts") == 0
    assert tables.embeddings == [] and tables.report.ok


# ------------------------------------------------------------------ property: = DataFrames

_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    max_size=12,
)


@st.composite
def random_rows(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    n = draw(st.integers(1, 8))
    ids = draw(st.lists(_text.filter(bool), min_size=n, max_size=n, unique=True))
    entities = [
        {"id": i, "tenant": draw(st.sampled_from(["a", "b"])), "name": draw(st.none() | _text)}
        for i in ids
    ]
    tenant = {e["id"]: e["tenant"] for e in entities}
    facts = []
    for k in range(draw(st.integers(0, 12))):
        s = draw(st.sampled_from(ids))
        same = [i for i in ids if tenant[i] == tenant[s]]
        o = draw(st.none() | st.sampled_from(same))
        facts.append(
            {
                "id": k,
                "subject": s,
                "object": o,
                "object_value": draw(st.none() | _text) if o is None else None,
                "confidence": draw(st.floats(0, 1)),
                "strength": draw(st.floats(0, 1e30)),
                "access_count": draw(st.integers(0, 2**31 - 1)),
                "created_at": draw(
                    st.none()
                    | st.datetimes(
                        dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC)
                    )
                ),
            }
        )
    return entities, facts


@settings(PROPERTY, max_examples=examples(25))
@given(rows=random_rows())
def test_random_rows_equal_load_dataframes(server: PgServer, rows: Any) -> None:
    entities, facts = rows
    d = _new_db(server, "prop")
    try:
        d.run(
            "CREATE TABLE entities (id text, tenant text, name text)",
            "CREATE TABLE facts (id int, subject text, object text, object_value text, "
            "confidence double precision, strength double precision, access_count integer, "
            "created_at timestamptz)",
        )
        d.insert("entities", entities)
        d.insert("facts", facts)
        got = load_postgres(d.uri)
        ent = pd.DataFrame(entities, columns=["id", "tenant", "name"])
        fac = pd.DataFrame(facts, columns=[
            "id", "subject", "object", "object_value", "confidence", "strength",
            "access_count", "created_at",
        ])  # fmt: skip
        fac["created_at"] = pd.to_datetime(fac["created_at"], utc=True)
        assert_same_tables(got, checked(load_dataframes(ent, fac)))
        tenant_of = {e["id"]: e["tenant"] for e in entities}
        tenant = entities[0]["tenant"]
        mine = load_postgres(d.uri, tenant=tenant)
        assert set(mine.entities["id"].tolist()) == {i for i, t in tenant_of.items() if t == tenant}
        assert set(mine.facts["id"].tolist()) == {
            f["id"] for f in facts if tenant_of[f["subject"]] == tenant
        }
    finally:
        d.conn.execute(f"DROP SCHEMA {d.schema} CASCADE")
        d.conn.close()
