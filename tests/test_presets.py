"""Other tools' outputs (``graphrecall.presets``): each preset loads a sample written in its
tool's own on-disk format (tests/data/presets/, see its README), retrieves from it, and
refuses a missing file or column with an error naming both."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall import GraphRAG
from graphrecall.cli import main
from graphrecall.embed import CallableEmbedder
from graphrecall.errors import DataError, ParameterError, StorageError
from graphrecall.indexer import detect_source
from graphrecall.presets import (
    detect_preset,
    list_presets,
    load_graphml,
    load_graphrag,
    load_hipporag,
    load_lightrag,
    load_neo4j,
    load_preset,
)
from graphrecall.tables import GraphTables

DATA = Path(__file__).parent / "data" / "presets"
DIM = 64
#: The passage every sample of the made-up story holds about the translation.
TRANSLATED = "Luigi Menabrea wrote a paper on the Analytical Engine that Ada Lovelace translated."
QUERY = "Who translated Luigi Menabrea's paper on the Analytical Engine?"
#: The first MuSiQue question of the slice; its gold passages are docs 6 and 10.
HIPPO_QUERY = (
    "Who was the first president of the association which published Journal of "
    "Psychotherapy Integration?"
)
#: The real HippoRAG file, beside the checkout (absent on CI: that test is skipped).
HIPPO_FULL = next(
    (
        p
        / "shared/data/musique_train_hipporag"
        / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
        for p in Path(__file__).resolve().parents
        if (p / "shared/data/musique_train_hipporag").is_dir()
    ),
    None,
)


def _embed(texts: list[str]) -> Any:
    """Bag of words hashed into DIM buckets: deterministic, offline."""
    out = np.zeros((len(texts), DIM))
    for i, t in enumerate(texts):
        for w in t.lower().replace("'s", "").replace("?", "").replace(".", "").split():
            out[i, zlib.crc32(w.encode()) % DIM] += 1.0
    return out


def _rag(tables: GraphTables) -> GraphRAG:
    return GraphRAG.from_tables(tables, embedder=CallableEmbedder(_embed, dim=DIM), cache=None)


def _rows(tables: GraphTables) -> dict[str, int]:
    return {n: tables.n_rows(n) for n in ("entities", "facts", "chunks", "mentions")}


def _chunk_texts(rag: GraphRAG, query: str, k: int = 2) -> list[str]:
    res = rag.retrieve(query)
    assert res.chunks, res.fallback
    chunks = rag.index.tables.chunks
    assert chunks is not None
    texts = dict(zip(chunks["id"].tolist(), chunks["text"].tolist(), strict=True))
    return [texts[c.id] for c in res.chunks[:k]]


def test_registry() -> None:
    assert list_presets() == ["graphml", "graphrag", "hipporag", "lightrag", "neo4j"]
    with pytest.raises(ParameterError, match="'graphrag'"):
        load_preset("graph_rag", DATA / "graphrag")


# ------------------------------------------------------------------------------ GraphRAG


def test_graphrag_loads_and_retrieves() -> None:
    tables = load_graphrag(DATA / "graphrag")
    assert _rows(tables) == {"entities": 4, "facts": 4, "chunks": 3, "mentions": 8}
    assert "ADA LOVELACE" in tables.entities["name"].tolist()
    assert sorted(tables.facts["strength"].tolist()) == [1.0, 2.0, 2.0, 3.0]
    ch = tables.chunks
    assert ch is not None
    i = ch["text"].tolist().index(TRANSLATED)
    assert ch["tags"][i] == ["community:0"]
    assert ch["metadata"][i]["document"] == "babbage.txt"
    assert TRANSLATED in _chunk_texts(_rag(tables), QUERY)


def test_graphrag_older_file_names(tmp_path: Path) -> None:
    """GraphRAG before 1.0 wrote create_final_<name>.parquet and entities had ``name``."""
    import pyarrow.parquet as pq

    for f in (DATA / "graphrag").glob("*.parquet"):
        t = pq.read_table(f)
        if f.stem == "entities":
            t = t.rename_columns(["name" if c == "title" else c for c in t.column_names])
        pq.write_table(t, tmp_path / f"create_final_{f.name}")
    old = load_graphrag(tmp_path)
    assert _rows(old) == _rows(load_graphrag(DATA / "graphrag"))


def test_graphrag_missing_file_and_column(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    shutil.copy(DATA / "graphrag" / "entities.parquet", tmp_path)
    with pytest.raises(StorageError, match=r"relationships\.parquet") as err:
        load_graphrag(tmp_path)
    assert err.value.table == "relationships.parquet" and err.value.kind == "missing"
    rel = pq.read_table(DATA / "graphrag" / "relationships.parquet").drop_columns(["target"])
    pq.write_table(rel, tmp_path / "relationships.parquet")
    with pytest.raises(DataError, match="no column 'target'") as derr:
        load_graphrag(tmp_path)
    assert (derr.value.table, derr.value.column) == ("relationships.parquet", "target")


# ------------------------------------------------------------------------------ HippoRAG


@pytest.mark.parametrize("path", ["hipporag", "hipporag/v2"])
def test_hipporag_loads_and_retrieves(path: str) -> None:
    tables = load_hipporag(DATA / path)
    assert _rows(tables)["chunks"] == 12 and _rows(tables)["facts"] > 50
    assert "g. stanley hall" in tables.entities["id"].tolist()
    top = _chunk_texts(_rag(tables), HIPPO_QUERY, k=2)
    assert any(
        t.startswith(("Journal of Psychotherapy Integration\n", "Adolescence\n")) for t in top
    )


def test_hipporag_v1_and_v2_agree() -> None:
    v1, v2 = load_hipporag(DATA / "hipporag"), load_hipporag(DATA / "hipporag" / "v2")
    assert _rows(v1) == _rows(v2)
    assert v1.chunks is not None and v2.chunks is not None
    assert v1.chunks["text"].tolist() == v2.chunks["text"].tolist()
    assert v2.chunks["id"][0].startswith("chunk-")


@pytest.mark.skipif(HIPPO_FULL is None, reason="shared/data/musique_train_hipporag is absent")
def test_hipporag_real_file(caplog: pytest.LogCaptureFixture) -> None:
    assert HIPPO_FULL is not None
    tables = load_hipporag(HIPPO_FULL)
    assert tables.n_rows("chunks") == 1890
    # 17,419 triples, 185 without three fields (the data README), the rest deduplicated.
    assert "185 triples" in caplog.text
    assert tables.n_rows("facts") <= 17_234 and tables.check()[1].ok


def test_hipporag_bad_input(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no such file"):
        load_hipporag(tmp_path / "openie_results_ner_x.json")
    with pytest.raises(StorageError, match="found 0"):
        load_hipporag(tmp_path)
    f = tmp_path / "openie_results_ner_x.json"
    f.write_text(json.dumps({"documents": []}))
    with pytest.raises(DataError, match="no column 'docs'") as err:
        load_hipporag(f)
    assert (err.value.table, err.value.column) == (f.name, "docs")
    f.write_text(json.dumps({"docs": [{"idx": "chunk-1", "extracted_entities": []}]}))
    with pytest.raises(DataError, match=r"docs\[0\].passage"):
        load_hipporag(f)
    f.write_text("{oops")
    with pytest.raises(DataError, match="not JSON"):
        load_hipporag(f)


# ------------------------------------------------------------------------------ LightRAG


def test_lightrag_loads_and_retrieves() -> None:
    tables = load_lightrag(DATA / "lightrag")
    assert _rows(tables) == {"entities": 4, "facts": 4, "chunks": 3, "mentions": 8}
    assert tables.entities["type"].tolist().count("person") == 3
    assert "writing, mathematics" in tables.facts["predicate"].tolist()
    ch = tables.chunks
    assert ch is not None and ch["metadata"][0]["file_path"] == "babbage.txt"
    assert TRANSLATED in _chunk_texts(_rag(tables), QUERY)


def test_lightrag_missing_file_and_attribute(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match=r"graph_chunk_entity_relation\.graphml"):
        load_lightrag(tmp_path)
    text = (DATA / "lightrag" / "graph_chunk_entity_relation.graphml").read_text()
    (tmp_path / "graph_chunk_entity_relation.graphml").write_text(
        text.replace('attr.name="keywords"', 'attr.name="kw"')
    )
    with pytest.raises(DataError, match="no column 'keywords'") as err:
        load_lightrag(tmp_path)
    assert err.value.table == "graph_chunk_entity_relation.graphml"
    (tmp_path / "kv_store_text_chunks.json").write_text('{"chunk-1": {"tokens": 3}}')
    (tmp_path / "graph_chunk_entity_relation.graphml").write_text(text)
    with pytest.raises(DataError, match=r"chunk-1\.content"):
        load_lightrag(tmp_path)


# ------------------------------------------------------------------------------ GraphML


@pytest.mark.parametrize("name", ["babbage.graphml", "babbage.json"])
def test_graphml_loads_and_retrieves(name: str) -> None:
    tables = load_graphml(DATA / "graphml" / name)
    assert _rows(tables) == {"entities": 4, "facts": 4, "chunks": 0, "mentions": 0}
    assert tables.entities["name"].tolist()[0] == "Ada Lovelace"
    res = _rag(tables).retrieve(QUERY)
    assert "translated" in [f.predicate for f in res.facts]


def test_graphml_attribute_mapping(tmp_path: Path) -> None:
    path = DATA / "graphml" / "babbage.graphml"
    tables = load_graphml(path, attributes={"entities.name": "description", "facts.strength": None})
    assert tables.entities["name"].tolist()[1] == "Inventor of the Analytical Engine"
    assert tables.facts["strength"].tolist() == [1.0] * 4
    with pytest.raises(DataError, match="no column 'rel'") as err:
        load_graphml(path, attributes={"facts.predicate": "rel"})
    assert (err.value.table, err.value.column) == ("babbage.graphml", "rel")
    with pytest.raises(ParameterError, match=r"facts\.weight"):
        load_graphml(path, attributes={"facts.weight": "w"})
    defaults = tmp_path / "defaults.graphml"
    defaults.write_text(
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<key id="d0" for="node" attr.name="type" attr.type="string"><default>person</default>'
        '</key><key id="d1" for="edge" attr.name="weight" attr.type="double"/>'
        '<graph edgedefault="directed"><node id="a"><data key="d0">place</data></node>'
        '<node id="b"/><edge source="a" target="b"><data key="d1">2.5</data></edge></graph>'
        "</graphml>"
    )
    t = load_graphml(defaults)
    assert t.entities["type"].tolist() == ["place", "person"]
    assert t.facts["strength"].tolist() == [2.5]
    bad = tmp_path / "bad.graphml"
    bad.write_text("<graphml><graph")
    with pytest.raises(DataError, match="not GraphML"):
        load_graphml(bad)


# ------------------------------------------------------------------------------ Neo4j


def test_neo4j_admin_loads_and_retrieves() -> None:
    tables = load_neo4j(DATA / "neo4j" / "admin")
    assert _rows(tables) == {"entities": 4, "facts": 4, "chunks": 0, "mentions": 0}
    assert "Person:ada" in tables.entities["id"].tolist()
    assert tables.entities["type"].tolist().count("Person") == 3
    res = _rag(tables).retrieve(QUERY)
    assert "TRANSLATED" in [f.predicate for f in res.facts]


def test_neo4j_admin_separate_headers_read_like_inline_ones() -> None:
    split = load_neo4j(DATA / "neo4j" / "admin_split")
    inline = load_neo4j(DATA / "neo4j" / "admin")
    for name in ("entities", "facts"):
        a, b = getattr(split, name), getattr(inline, name)
        key = "id" if name == "entities" else "subject"
        order_a, order_b = np.argsort(a[key], kind="stable"), np.argsort(b[key], kind="stable")
        for col in ("id", "name", "type", "subject", "object", "predicate", "strength"):
            if col in a:
                assert [a[col][i] for i in order_a] == [b[col][i] for i in order_b], (name, col)


def test_neo4j_separate_header_errors(tmp_path: Path) -> None:
    (tmp_path / "nodes_header.csv").write_text("id:ID,name\n")
    with pytest.raises(DataError, match=r"no data file named nodes\.csv") as err:
        load_neo4j(tmp_path)
    assert err.value.table == "nodes_header.csv"
    (tmp_path / "nodes-1.csv").write_text("ada,Ada\n")
    (tmp_path / "nodes_header.csv").write_text("id:ID,name\nbob,Bob\n")
    with pytest.raises(DataError, match="exactly one line"):
        load_neo4j(tmp_path)
    (tmp_path / "nodes_header.csv").write_text("id:ID,name\n")
    tables = load_neo4j(tmp_path)
    assert tables.entities["name"].tolist() == ["Ada"]


def test_neo4j_apoc_loads_and_retrieves(caplog: pytest.LogCaptureFixture) -> None:
    tables = load_neo4j(DATA / "neo4j" / "apoc" / "all.csv")
    assert "2 relationships between two chunks" in caplog.text
    rows = _rows(tables)
    assert rows["chunks"] == 3 and rows["facts"] == 4 and rows["mentions"] == 11
    assert "Machine" in tables.entities["type"].tolist()
    assert TRANSLATED in _chunk_texts(_rag(tables), QUERY)


def test_neo4j_bad_input(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no such file"):
        load_neo4j(tmp_path / "nope")
    with pytest.raises(StorageError, match="no CSV files"):
        load_neo4j(tmp_path)
    (tmp_path / "nodes.csv").write_text("name,:LABEL\nAda,Person\n")
    with pytest.raises(DataError, match=":ID or :START_ID") as err:
        load_neo4j(tmp_path)
    assert (err.value.table, err.value.column) == ("nodes.csv", ":ID or :START_ID")
    (tmp_path / "nodes.csv").write_text("id:ID,name\nada,Ada\n")
    (tmp_path / "rels.csv").write_text(":START_ID,:END_ID,:TYPE\nada\n")
    with pytest.raises(DataError, match="without both ends"):
        load_neo4j(tmp_path)
    (tmp_path / "rels.csv").write_text(":START_ID,:END_ID,:TYPE\nada,bob,KNOWS\n")
    with pytest.raises(DataError, match="names no node") as derr:
        load_neo4j(tmp_path)
    assert (derr.value.table, derr.value.row, derr.value.column) == ("rels.csv", 1, ":END_ID")


# ------------------------------------------------------------------------------ the command


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("graphrag", "graphrag"),
        ("hipporag", "hipporag"),
        ("lightrag", "lightrag"),
        ("graphml", "graphml/babbage.graphml"),
        ("neo4j", "neo4j/apoc/all.csv"),
    ],
)
def test_index_from_preset(
    kind: str, path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snap"
    assert main(["index", str(DATA / path), str(out), "--from", kind]) == 0
    assert out.exists()
    assert f"{kind} " in capsys.readouterr().err


def test_detect_preset(tmp_path: Path) -> None:
    assert detect_source(str(DATA / "graphrag")) == "graphrag"
    assert detect_source(str(DATA / "lightrag")) == "lightrag"
    assert detect_source(str(DATA / "graphml" / "babbage.graphml")) == "graphml"
    hippo = next((DATA / "hipporag").glob("openie*.json"))
    assert detect_source(str(hippo)) == "hipporag"
    assert detect_preset(DATA / "neo4j" / "apoc" / "all.csv") is None
    # graphrecall's own Parquet tables stay "parquet", even beside a relationships file.
    for name in ("entities", "facts", "relationships"):
        shutil.copy(DATA / "graphrag" / "entities.parquet", tmp_path / f"{name}.parquet")
    assert detect_source(str(tmp_path)) == "parquet"


def test_index_from_preset_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(tmp_path), str(tmp_path / "snap"), "--from", "lightrag"]) == 1
    assert "graph_chunk_entity_relation.graphml: no such file" in capsys.readouterr().err
    code = main(
        [
            "index",
            str(DATA / "graphrag"),
            str(tmp_path / "s"),
            "--from",
            "graphrag",
            "--mapping",
            "{}",
        ]
    )
    assert code == 1
    assert "reads its own columns" in capsys.readouterr().err
