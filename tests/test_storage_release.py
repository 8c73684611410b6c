"""``GraphTables.to_graph(release=True)`` / ``build_graph(release=True)``: the graph the
one encoder builds without ``release``, built column by column while the tables give up
their columns; and the memory-minded column handling of the loaders and the check (Parquet
read column by column, float32 kept as given)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import NOW, PROPERTY, GraphData, examples, graph_data
from graphrecall import KnowledgeGraph
from graphrecall.storage import BadDataError, GraphTables, load_parquet
from hypothesis import given, settings
from test_storage_sqlite import tables_of


def built(t: GraphTables, on_bad: Any = "raise") -> KnowledgeGraph:
    """The graph of ``t`` (checked first), built without releasing anything; ``t`` and
    its checked copy are left whole."""
    checked, _ = t.check(on_bad)
    return checked.build_graph()


def assert_identical(got: KnowledgeGraph, want: KnowledgeGraph) -> None:
    """The same core arrays, codes, vocabularies, ids and text: not just equivalent."""
    pg, pw = got.core.to_parts(), want.core.to_parts()
    assert pg.keys() == pw.keys()
    for k, v in pw.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(pg[k], v, err_msg=k)
            assert pg[k].dtype == v.dtype, k
        else:
            assert pg[k] == v, k
    np.testing.assert_array_equal(got.core.chunk_tenants(), want.core.chunk_tenants())
    for a, b in ((got.entity_map, want.entity_map), (got.fact_map, want.fact_map)):
        assert (a.kind, len(a)) == (b.kind, len(b))
    assert got.chunk_map.kind == want.chunk_map.kind
    assert got.entity_ids.tolist() == want.entity_ids.tolist()
    assert got.fact_ids.tolist() == want.fact_ids.tolist()
    assert got.chunk_ids.tolist() == want.chunk_ids.tolist()
    for vocab in ("statuses", "sources", "predicates", "tenants"):
        assert getattr(got, vocab).names == getattr(want, vocab).names, vocab
    for text in ("entity_names", "object_values"):
        a, b = getattr(got, text), getattr(want, text)
        assert (a is None) == (b is None), text
        if a is not None:
            assert a.dtype == b.dtype == object
            assert a.tolist() == b.tolist(), text


def assert_released(t: GraphTables) -> None:
    assert t.n_rows("entities") == 0 and t.n_rows("facts") == 0
    for name in ("chunks", "mentions", "aliases"):
        assert t.n_rows(name) == 0
    assert t.embeddings == []


@settings(PROPERTY, max_examples=examples(60))
@given(graph_data())
def test_release_builds_the_graph_built_without_release(data: GraphData) -> None:
    want = built(tables_of(data))
    kept = tables_of(data)
    got, report = kept.to_graph()
    assert report.ok
    assert_identical(got, want)
    assert kept.n_rows("facts") == len(data.facts)  # not released
    assert_identical(kept.to_graph()[0], want)  # and buildable again
    tables = tables_of(data)
    got, report = tables.to_graph(release=True)
    assert report.ok
    assert_identical(got, want)
    assert_released(tables)


@settings(PROPERTY, max_examples=examples(15))
@given(data=graph_data())
def test_release_from_parquet(data: GraphData, tmp_path_factory: Any) -> None:
    root = tmp_path_factory.mktemp("pq")
    rows = {"entities": data.entities, "facts": data.facts}
    if data.chunks:
        rows["chunks"] = data.chunks
    if data.mentions:
        rows["mentions"] = data.mentions
    for name, table in rows.items():
        pq.write_table(pa.Table.from_pylist(table), root / f"{name}.parquet")
    want = built(load_parquet(root))
    assert_identical(load_parquet(root).to_graph()[0], want)
    tables = load_parquet(root)
    got, report = tables.to_graph(release=True)
    assert report.ok
    assert_identical(got, want)
    assert_released(tables)


def every_column() -> dict[str, Any]:
    return {
        "entities": {
            "id": ["user", "jacq", "duckdb", "pg", "ned"],
            "tenant": ["acme", "acme", "acme", "acme", "stark"],
            "name": ["User", "JACQ", "DuckDB", None, "Ned"],
            "type": ["person", "project", "tool", None, "person"],
        },
        "facts": {
            "id": ["f1", "f2", "f3", "f4"],
            "subject": ["user", "jacq", "duckdb", "jacq"],
            "object": ["jacq", "duckdb", None, "pg"],
            "predicate": ["works_on", "uses", "type", "used"],
            "object_value": [None, None, "embedded OLAP database", None],
            "confidence": [0.97, 0.92, 0.99, 0.5],
            "strength": [3.0, 1.0, 1.0, 0.5],
            "status": ["confirmed", "staged", "confirmed", "archived"],
            "source": ["user_edit", "file", "system", "conversation"],
            "access_count": [25, 8, 0, 1],
            "last_accessed": [NOW - 10, NOW - 1000, None, NOW - 99],
            "created_at": [NOW - 500, NOW - 400, None, NOW - 900],
            "valid_from": [None, NOW - 400, None, NOW - 900],
            "valid_to": [None, None, None, NOW - 400],
            "sequence": [3, 5, None, 1],
        },
        "chunks": {"id": ["c1", "c2", "c3"], "tenant": ["acme", "acme", "stark"]},
        "mentions": {
            "chunk": ["c1", "c1", "c2", "c3"],
            "entity": ["user", "jacq", "jacq", "ned"],
            "count": [1, 2, 1, 4],
        },
        "aliases": {"entity": ["jacq"], "alias": ["JACQ project"]},
    }


def variants() -> dict[str, dict[str, Any]]:
    """Tables whose columns take each path of the build: with and without every optional
    column, int and str ids, int predicate codes and int tenants."""
    out: dict[str, dict[str, Any]] = {"every column": every_column()}
    minimal = every_column()
    minimal["facts"] = {"subject": ["user", "jacq"]}
    minimal["entities"] = {"id": ["user", "jacq", "duckdb"]}
    for t in ("chunks", "mentions", "aliases"):
        minimal[t] = None
    out["minimal"] = minimal
    codes = every_column()
    codes["facts"]["predicate"] = [3, 0, 7, 3]
    codes["facts"]["status"] = [1, 0, 1, 3]
    codes["entities"]["tenant"] = [2, 2, 2, 2, 5]
    codes["chunks"]["tenant"] = [2, 2, 5]
    out["codes"] = codes
    ints = every_column()
    ids = {e: 100 + k for k, e in enumerate(ints["entities"]["id"])}
    ints["entities"]["id"] = list(ids.values())
    for col in ("subject", "object"):
        ints["facts"][col] = [None if v is None else ids[v] for v in ints["facts"][col]]
    ints["facts"]["id"] = [7, 3, 5, 11]
    ints["mentions"]["entity"] = [ids[v] for v in ints["mentions"]["entity"]]
    ints["aliases"]["entity"] = [ids[v] for v in ints["aliases"]["entity"]]
    ints["facts"]["confidence"] = np.array([0.97, 0.92, 0.99, 0.5], np.float32)
    out["int ids, float32"] = ints
    no_mentions = every_column()
    no_mentions["mentions"] = {"chunk": [], "entity": []}
    out["empty mentions"] = no_mentions
    return out


@pytest.mark.parametrize("name", list(variants()))
def test_release_of_every_column_path(name: str) -> None:
    spec = variants()[name]
    want = built(GraphTables(**spec))
    assert_identical(GraphTables(**spec).to_graph()[0], want)
    tables = GraphTables(**spec)
    got, report = tables.to_graph(release=True)
    assert report.ok
    assert_identical(got, want)
    assert_released(tables)


def test_release_with_skipped_rows_builds_what_to_graph_builds() -> None:
    spec = every_column()
    spec["facts"]["confidence"] = [0.97, float("nan"), 0.99, 0.5]
    spec["facts"]["subject"][3] = "nobody"
    want = built(GraphTables(**spec), on_bad="skip")
    for release in (False, True):
        got, report = GraphTables(**spec).to_graph(on_bad="skip", release=release)
        assert report.skipped == {"facts": 2}
        assert_identical(got, want)


def test_a_refused_load_leaves_the_tables_as_they_were() -> None:
    spec = every_column()
    spec["facts"]["object"][1] = "nobody"
    tables = GraphTables(**spec)
    before = {k: v.copy() for k, v in tables.facts.items()}
    with pytest.raises(BadDataError, match="refers to no entity"):
        tables.to_graph(release=True)
    assert tables.facts.keys() == before.keys()
    for k, v in before.items():
        assert tables.facts[k].tolist() == v.tolist()


def test_the_check_keeps_float32_numbers_as_given() -> None:
    spec = every_column()
    conf = np.array([0.97, 0.92, 0.99, 0.5], np.float32)
    spec["facts"]["confidence"] = conf
    spec["facts"]["strength"] = np.array([3, 1, 1, 0.5], np.float32)
    checked, report = GraphTables(**spec).check()
    assert report.ok
    assert checked.facts["confidence"].dtype == np.float32
    assert checked.facts["strength"].dtype == np.float32
    np.testing.assert_array_equal(checked.facts["confidence"], conf)
    spec["facts"]["confidence"] = np.array([0.97, 1.5, 0.99, np.nan], np.float32)
    _, report = GraphTables(**spec).check(on_bad="skip")
    assert report.skipped == {"facts": 2}


def test_parquet_columns_are_read_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each column is read alone (the conversion never holds the whole table in Arrow),
    and once."""
    spec = every_column()
    for name in ("entities", "facts"):
        pq.write_table(pa.table(spec[name]), tmp_path / f"{name}.parquet")
    reads: list[tuple[int, list[str]]] = []
    real = pq.ParquetFile.read

    def read(self: pq.ParquetFile, columns: list[str] | None = None, **kw: Any) -> pa.Table:
        reads.append((self.metadata.num_rows, list(columns or [])))
        return real(self, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read", read)
    tables = load_parquet(tmp_path)
    assert all(len(cols) == 1 for _, cols in reads)
    read_cols = [(rows, cols[0]) for rows, cols in reads]
    assert len(read_cols) == len(set(read_cols)) == len(spec["entities"]) + len(spec["facts"])
    monkeypatch.undo()
    want = built(GraphTables(entities=spec["entities"], facts=spec["facts"]))
    assert_identical(tables.to_graph(release=True)[0], want)
