"""``graphrecall index``: every source kind to a snapshot and to SQLite, round trips equal,
bad rows, tenants, mappings, the output rules and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from graphrecall import KnowledgeGraph
from graphrecall.cli import main
from graphrecall.errors import ParameterError, UnknownTenantError
from graphrecall.indexer import (
    EXIT_BAD_DATA,
    EXIT_FAILED,
    EXIT_OK,
    detect_source,
    filter_tenant,
    index,
    parse_mapping,
    parse_tenant,
)
from graphrecall.storage import SQLiteStore
from graphrecall.storage.errors import StorageError
from graphrecall.storage.snapshot import load_snapshot
from graphrecall.tables import EmbeddingSet, GraphTables

duckdb = pytest.importorskip("duckdb")

NOW = 1_767_225_600

ENTITIES: dict[str, list[Any]] = {
    "id": [1, 2, 3, 4, 5, 6],
    "tenant": ["acme", "acme", "acme", "acme", "stark", "stark"],
    "name": ["User", "JACQ", "DuckDB", "Postgres", "Ned", "Winterfell"],
    "type": ["person", "project", "tool", "tool", "person", "place"],
}
FACTS: dict[str, list[Any]] = {
    "id": [10, 11, 12, 13, 14, 15, 16],
    "subject": [1, 2, 2, 3, 5, 1, 6],
    "object": [2, 3, 4, None, 6, 3, None],
    "predicate": ["works_on", "uses", "used", "type", "lives_in", "likes", "motto"],
    "object_value": [None, None, None, "OLAP database", None, None, "Winter is coming"],
    "confidence": [0.9, 0.8, 0.5, 0.99, 0.7, 0.6, 1.0],
    "strength": [1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0],
    "status": ["confirmed", "staged", "archived", "confirmed", "confirmed", "staged", "staged"],
    "source": ["user_edit", "file", "system", "system", "conversation", "file", "system"],
    "access_count": [3, 0, 1, 0, 2, 5, 0],
    "last_accessed": [NOW - 86_400, None, NOW - 10, None, NOW - 5, NOW - 99, None],
}
CHUNKS: dict[str, list[Any]] = {
    "id": ["c1", "c2", "c3"],
    "tenant": ["acme", "acme", "stark"],
    "text": ["The user works on JACQ.", "JACQ uses DuckDB.", "Ned lives in Winterfell."],
}
MENTIONS: dict[str, list[Any]] = {
    "chunk": ["c1", "c1", "c2", "c3"],
    "entity": [1, 2, 3, 5],
    "count": [1, 2, 1, 1],
}
ALIASES: dict[str, list[Any]] = {"entity": [2, 4], "alias": ["jacq", "PG"]}
VECTORS = np.arange(6 * 3, dtype=np.float32).reshape(6, 3) / 10


def _tables(facts: dict[str, list[Any]] | None = None) -> GraphTables:
    return GraphTables(
        entities=dict(ENTITIES),
        facts=dict(facts or FACTS),
        chunks=dict(CHUNKS),
        mentions=dict(MENTIONS),
        aliases=dict(ALIASES),
        embeddings=[EmbeddingSet("entity", ENTITIES["id"], VECTORS, None)],
    )


def _arrow(cols: dict[str, list[Any]]) -> pa.Table:
    return pa.table({k: pa.array(v) for k, v in cols.items()})


def _arrow_tables(facts: dict[str, list[Any]] | None = None) -> dict[str, pa.Table]:
    entities = _arrow(ENTITIES).append_column(
        "embedding", pa.array(VECTORS.tolist(), type=pa.list_(pa.float32()))
    )
    return {
        "entities": entities,
        "facts": _arrow(facts or FACTS),
        "chunks": _arrow(CHUNKS),
        "mentions": _arrow(MENTIONS),
        "aliases": _arrow(ALIASES),
    }


def _write_source(kind: str, root: Path, facts: dict[str, list[Any]] | None = None) -> Path:
    if kind == "sqlite":
        path = root / "source.db"
        with SQLiteStore.create(path) as store:
            store.write(_tables(facts))
        return path
    if kind == "parquet":
        path = root / "parquet"
        path.mkdir()
        for name, table in _arrow_tables(facts).items():
            pq.write_table(table, path / f"{name}.parquet")
        return path
    path = root / "source.duckdb"
    con = duckdb.connect(str(path))
    for name, table in _arrow_tables(facts).items():
        con.register("t", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM t")
        con.unregister("t")
    con.close()
    return path


def _reference(tenant: str | None = None) -> tuple[GraphTables, KnowledgeGraph]:
    tables = _tables()
    if tenant is not None:
        tables = filter_tenant(tables, tenant)
    checked, _ = tables.check()
    return checked, checked.build_graph()


def _same_graph(a: KnowledgeGraph, b: KnowledgeGraph) -> None:
    assert a.stats() == b.stats()
    assert list(a.entity_ids) == list(b.entity_ids)
    assert list(a.fact_ids) == list(b.fact_ids)
    assert list(a.chunk_ids) == list(b.chunk_ids)
    assert a.facts(a.fact_ids) == b.facts(b.fact_ids)
    for anchor in a.entity_ids:
        ra = a.spread([anchor], rank="score_fact", now=NOW)
        rb = b.spread([anchor], rank="score_fact", now=NOW)
        assert list(ra.fact_ids) == list(rb.fact_ids)
        np.testing.assert_array_equal(ra.scores, rb.scores)
        qa = a.graph_recall([anchor], direction="both")
        qb = b.graph_recall([anchor], direction="both")
        assert list(qa.fact_ids) == list(qb.fact_ids)


def _same_tables(a: GraphTables, b: GraphTables) -> None:
    for name in ("entities", "facts", "chunks", "mentions", "aliases"):
        ta, tb = a.table(name), b.table(name)
        assert a.n_rows(name) == b.n_rows(name), name
        if ta is None or tb is None:  # an empty table reads back as none
            continue
        for col in ("id", "tenant", "name", "subject", "object", "predicate", "status", "text"):
            if col in ta:
                assert ta[col].tolist() == tb[col].tolist(), f"{name}.{col}"
        for col in ("confidence", "strength"):
            if col in ta:
                np.testing.assert_allclose(ta[col], tb[col], rtol=1e-6)
        if name in ("mentions", "aliases"):
            assert sorted(map(tuple, zip(*ta.values(), strict=True))) == sorted(
                map(tuple, zip(*tb.values(), strict=True))
            )
    va = {(e.kind, e.model): e for e in a.embeddings}
    vb = {(e.kind, e.model): e for e in b.embeddings}
    assert va.keys() == vb.keys()
    for key, e in va.items():
        assert e.ids.tolist() == vb[key].ids.tolist()
        np.testing.assert_array_equal(e.vectors, vb[key].vectors)


# ---------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "parquet"])
@pytest.mark.parametrize("target", ["snapshot", "sqlite"])
def test_round_trip(
    tmp_path: Path, kind: str, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write_source(kind, tmp_path)
    out = tmp_path / ("out.db" if target == "sqlite" else "snapshot")
    assert main(["index", str(source), str(out), "--to", target]) == EXIT_OK
    captured = capsys.readouterr()
    assert f"indexed {source} ({kind}) -> {out} ({target}" in captured.out
    assert "facts                   7" in captured.out
    assert "tenants                 2" in captured.out
    assert "skipped    none" in captured.out
    for phase in ("read", "check", "write"):
        assert f"  {phase} " in captured.err
    assert ("  build " in captured.err) == (target == "snapshot")
    checked, graph = _reference()
    if target == "snapshot":
        _same_graph(graph, load_snapshot(out))
    else:
        with SQLiteStore.open(out) as store:
            back = store.read()
        _same_tables(checked, back)
        _same_graph(graph, back.to_graph()[0])
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_index_returns_a_summary(tmp_path: Path) -> None:
    source = _write_source("parquet", tmp_path)
    ticks = iter(range(100))
    summary = index(source, tmp_path / "s", clock=lambda: float(next(ticks)))
    assert summary.source_kind == "parquet" and summary.target == "snapshot"
    assert summary.rows == {
        "chunks": 3,
        "entities": 6,
        "facts": 7,
        "mentions": 4,
        "aliases": 2,
        "embeddings": 6,
    }
    assert summary.tenants == 2 and summary.report.ok
    assert summary.seconds == {"read": 1.0, "check": 1.0, "build": 1.0, "write": 1.0}
    assert summary.output_bytes == sum(p.stat().st_size for p in (tmp_path / "s").iterdir())
    assert summary.peak_mib > 0
    assert "time       read 1.00 s, check 1.00 s, build 1.00 s, write 1.00 s" in str(summary)


# ---------------------------------------------------------------------------- bad rows


BAD_FACTS = {k: [*v, v[0]] for k, v in FACTS.items()}
BAD_FACTS["id"][-1] = 99
BAD_FACTS["subject"][-1] = 42  # no such entity


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "parquet"])
def test_bad_rows_are_refused_with_the_report(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "sqlite":  # a store refuses bad rows itself: write a good one, then break it
        source = _write_source(kind, tmp_path)
        import sqlite3

        from graphrecall.storage.sqlite.checksum import register

        con = sqlite3.connect(source)
        register(con)  # the store's checksum triggers call it
        con.execute("PRAGMA foreign_keys = OFF")
        con.execute(
            "INSERT INTO facts (id, subject, confidence, strength, status, source, "
            "access_count) VALUES (99, 42, 0.5, 1.0, 'staged', 'file', 0)"
        )
        con.commit()
        con.close()
    else:
        source = _write_source(kind, tmp_path, BAD_FACTS)
    out = tmp_path / "snapshot"
    assert main(["index", str(source), str(out)]) == EXIT_BAD_DATA
    err = capsys.readouterr().err
    assert "bad rows; nothing was written" in err
    assert "facts: 1 of 8 rows" in err
    assert "subject = 42 refers to no entity" in err
    assert "--on-bad skip" in err
    assert not out.exists()
    assert main(["index", str(source), str(out), "--on-bad", "skip"]) == EXIT_OK
    captured = capsys.readouterr()
    assert "skipped    1 facts" in captured.out
    assert "subject = 42 refers to no entity" in captured.err
    _same_graph(_reference()[1], load_snapshot(out))


# ---------------------------------------------------------------------------- sources


def test_unknown_source_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.db"
    assert main(["index", str(missing), str(tmp_path / "out")]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert f"{str(missing)!r}: no such file or directory" in err
    assert not (tmp_path / "out").exists()
    for kind in ("sqlite", "duckdb", "parquet"):  # named explicitly: the loader's message
        assert main(["index", str(missing), str(tmp_path / "o"), "--from", kind]) == EXIT_FAILED
        assert "nowhere.db" in capsys.readouterr().err


def test_detect_source(tmp_path: Path) -> None:
    for kind in ("sqlite", "duckdb", "parquet"):
        (tmp_path / kind).mkdir()
        assert detect_source(str(_write_source(kind, tmp_path / kind))) == kind
    assert detect_source("postgresql://user@localhost/kg") == "postgres"
    assert detect_source("dbname=kg host=/tmp") == "postgres"
    (tmp_path / "empty").mkdir()
    with pytest.raises(StorageError, match=r"without \.parquet files"):
        detect_source(str(tmp_path / "empty"))
    (tmp_path / "notes.txt").write_text("hello, this is not a database")
    with pytest.raises(StorageError, match="neither a SQLite nor a DuckDB"):
        detect_source(str(tmp_path / "notes.txt"))
    with pytest.raises(StorageError, match="single Parquet file"):
        detect_source(str(tmp_path / "parquet" / "parquet" / "facts.parquet"))


def test_postgres_without_a_server_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    uri = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1"
    assert main(["index", uri, str(tmp_path / "out")]) == EXIT_FAILED
    assert "graphrecall index: error:" in capsys.readouterr().err


# ---------------------------------------------------------------------------- tenants


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "parquet"])
def test_tenant_filter(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_source(kind, tmp_path)
    out = tmp_path / "out.db"
    assert main(["index", str(source), str(out), "--to", "sqlite", "--tenant", "stark"]) == 0
    assert "tenants                 1" in capsys.readouterr().out
    with SQLiteStore.open(out) as store:
        back = store.read()
    assert back.entities["id"].tolist() == [5, 6]
    assert back.facts["id"].tolist() == [14, 16]
    assert back.chunks is not None and back.chunks["id"].tolist() == ["c3"]
    assert [e.ids.tolist() for e in back.embeddings] == [[5, 6]]
    checked, graph = _reference("stark")
    _same_tables(checked, back)
    _same_graph(graph, back.to_graph()[0])
    assert main(["index", str(source), str(tmp_path / "o"), "--tenant", "nobody"]) == EXIT_FAILED
    assert "tenant 'nobody' has no entities" in capsys.readouterr().err


def test_filter_tenant_rules() -> None:
    t = filter_tenant(_tables(), "acme")
    assert t.entities["id"].tolist() == [1, 2, 3, 4]
    assert t.facts["id"].tolist() == [10, 11, 12, 13, 15]
    assert t.mentions is not None and t.mentions["entity"].tolist() == [1, 2, 3]
    assert t.aliases is not None and t.aliases["alias"].tolist() == ["jacq", "PG"]
    with pytest.raises(UnknownTenantError, match=r"\['acme', 'stark'\]"):
        filter_tenant(_tables(), "wayne")
    no_tenants = GraphTables(entities={"id": [1]}, facts={"subject": [1]})
    with pytest.raises(ParameterError, match="no tenant column"):
        filter_tenant(no_tenants, "acme")
    ints = GraphTables(entities={"id": [1, 2], "tenant": [7, 8]}, facts={"subject": [1, 2]})
    assert filter_tenant(ints, parse_tenant("8")).entities["id"].tolist() == [2]
    assert parse_tenant("-3") == -3 and parse_tenant("acme") == "acme"


# ---------------------------------------------------------------------------- mappings


def test_mapping_renames_the_sources_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "renamed"
    root.mkdir()
    tables = _arrow_tables()
    pq.write_table(tables["entities"], root / "nodes.parquet")
    pq.write_table(
        tables["facts"].rename_columns(
            ["id" if c == "id" else f"rel_{c}" for c in tables["facts"].column_names]
        ),
        root / "facts.parquet",
    )
    spec = {
        "tables": {"entities": "nodes"},
        "columns": {f"facts.{c}": f"rel_{c}" for c in FACTS if c != "id"},
    }
    out = tmp_path / "snapshot"
    assert main(["index", str(root), str(out), "--mapping", json.dumps(spec)]) == EXIT_OK
    capsys.readouterr()
    g = load_snapshot(out)
    assert g.n_facts == 7 and list(g.entity_ids) == ENTITIES["id"]
    (tmp_path / "mapping.json").write_text(json.dumps(spec))
    assert parse_mapping(str(tmp_path / "mapping.json")).table("entities") == "nodes"
    assert main(["index", str(root), str(out), "--overwrite", "--mapping", "{"]) == EXIT_FAILED
    assert "not valid JSON" in capsys.readouterr().err


def test_parse_mapping() -> None:
    assert parse_mapping("zeph").table("facts") != "facts"
    merged = parse_mapping('{"preset": "zeph", "columns": {"facts.strength": null}}')
    assert merged.column("facts", "strength") is None
    with pytest.raises(ParameterError, match="neither a preset"):
        parse_mapping("seed999")
    with pytest.raises(ParameterError, match="unknown key 'colums'"):
        parse_mapping('{"colums": {}}')
    with pytest.raises(ParameterError, match="must be an object"):
        parse_mapping("[1]")


def test_mapping_is_refused_for_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_source("sqlite", tmp_path)
    assert main(["index", str(source), str(tmp_path / "s"), "--mapping", "personal_kg"]) == 1
    assert "a SQLite store has graphrecall's own schema" in capsys.readouterr().err


# ---------------------------------------------------------------------------- outputs


def test_existing_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_source("parquet", tmp_path)
    snap, db = tmp_path / "snap", tmp_path / "out.db"
    assert main(["index", str(source), str(snap)]) == EXIT_OK
    assert main(["index", str(source), str(db), "--to", "sqlite"]) == EXIT_OK
    capsys.readouterr()
    assert main(["index", str(source), str(snap)]) == EXIT_FAILED
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main(["index", str(source), str(snap), "--overwrite", "--tenant", "acme"]) == 0
    assert load_snapshot(snap).n_entities == 4
    assert main(["index", str(source), str(db), "--to", "sqlite", "--overwrite"]) == EXIT_OK
    capsys.readouterr()
    # --overwrite never replaces what graphrecall did not write
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "thesis.tex").write_text("years of work")
    assert main(["index", str(source), str(tmp_path / "docs"), "--overwrite"]) == EXIT_FAILED
    assert "is not a graphrecall snapshot" in capsys.readouterr().err
    assert (tmp_path / "docs" / "thesis.tex").read_text() == "years of work"
    (tmp_path / "notes.txt").write_text("keep me")
    args = ["index", str(source), str(tmp_path / "notes.txt"), "--to", "sqlite", "--overwrite"]
    assert main(args) == EXIT_FAILED
    assert "is not a graphrecall SQLite store" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "keep me"
    assert main(["index", str(source), str(tmp_path / "no" / "dir" / "s")]) == EXIT_FAILED
    assert "does not exist" in capsys.readouterr().err
    db_source = _write_source("sqlite", tmp_path)
    assert main(["index", str(db_source), str(db_source), "--to", "sqlite", "--overwrite"]) == 1
    assert "the output is the source" in capsys.readouterr().err


def test_invalid_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_source("parquet", tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["index", str(source), str(tmp_path / "s"), "--to", "csv"])
    assert exc.value.code == 2
    assert "invalid choice: 'csv'" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="on_bad"):
        index(source, tmp_path / "s", on_bad="ignore")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="target"):
        index(source, tmp_path / "s", target="csv")  # type: ignore[arg-type]
