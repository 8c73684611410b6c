"""Text ingestion: reading, chunking, extraction, the built graph, increments and bad input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from graphrecall.errors import DataError, ParameterError
from graphrecall.ingest import (
    Columns,
    Document,
    IngestOptions,
    Ingestor,
    IngestReport,
    ReadReport,
    chunk_text,
    count_tokens,
    ingest,
    normalise,
    read_documents,
    sentence_names,
)

DOCS = [
    {
        "id": "a",
        "title": "Ada Lovelace",
        "text": "Ada Lovelace worked with Charles Babbage. "
        "Lovelace wrote about the Analytical Engine in London.",
    },
    {
        "id": "b",
        "title": "Charles Babbage",
        "text": "Charles Babbage designed the analytical "
        "engine. He met ada lovelace at a party in London.",
    },
]


class FakeEmbedder:
    """Counts the texts it embeds; vectors are a hash of the text."""

    name = "fake"
    dim = 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)


def names(tables) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(str(n) for n in tables.entities["name"])


def test_extraction_names_and_keys() -> None:
    got = sentence_names('The University of Oxford hired "Hey Jude" fans and NASA in 1969.')
    keys = [k for k, _ in got]
    assert keys == ["university of oxford", "hey jude", "nasa", "1969"]
    assert normalise("  The Beatles's ") == "beatles"


def test_graph_from_records() -> None:
    ing = Ingestor()
    rep = ing.add(DOCS)
    assert (rep.documents, rep.chunks) == (2, 2)
    t = ing.tables()
    checked, _ = t.check()
    assert "Ada Lovelace" in names(checked) and "London" in names(checked)
    # "analytical engine" in lower case is found as the known multi-word name.
    engine = ing.entity_id("Analytical Engine")
    assert engine is not None
    m = checked.mentions
    assert 1 in m["chunk"][m["entity"] == engine].tolist()
    # "Lovelace" alone is an alias of the document's "Ada Lovelace".
    ada = ing.entity_id("Ada Lovelace")
    assert ing.entity_id("lovelace") is None
    al = checked.aliases
    assert "Lovelace" in al["alias"][al["entity"] == ada].tolist()
    # The title is an entity with its document's chunk as primary chunk, and a directed
    # "mentions" edge goes from it to London.
    assert checked.entities["primary_chunk"][ada] == 0
    f = checked.facts
    london = ing.entity_id("London")
    pairs = set(
        zip(f["subject"].tolist(), f["object"].tolist(), f["predicate"].tolist(), strict=True)
    )
    assert (ada, london, "mentions") in pairs
    assert (min(ada, london), max(ada, london), "co_occurs") in pairs  # doc b, sentence 2
    assert checked.chunks["text"][0].startswith("Ada Lovelace\n")


def test_deterministic() -> None:
    a, b = ingest(DOCS), ingest(DOCS)
    assert names(a) == names(b)
    assert a.facts["subject"].tolist() == b.facts["subject"].tolist()


def test_near_duplicates_merge() -> None:
    ing = Ingestor()
    ing.add(["Visit the Metropolitan Museum today.", "The Metropolitan Musuem is open."])
    assert ing.entity_id("Metropolitan Musuem") == ing.entity_id("Metropolitan Museum")
    ing2 = Ingestor(IngestOptions(merge_threshold=100.0))
    ing2.add(["Visit the Metropolitan Museum today.", "The Metropolitan Musuem is open."])
    assert ing2.entity_id("Metropolitan Musuem") != ing2.entity_id("Metropolitan Museum")


def test_incremental_reuses_ids_and_embeds_only_new() -> None:
    emb = FakeEmbedder()
    ing = Ingestor()
    ing.add(DOCS[:1])
    ing.embed(emb)
    ada = ing.entity_id("Ada Lovelace")
    n_first = len(emb.seen)
    rep = ing.add(DOCS)  # the first again (skipped as a duplicate) and a new one
    assert rep.documents == 1 and len(rep.skipped["duplicate"]) == 1
    assert ing.entity_id("Ada Lovelace") == ada
    ing.embed(emb)
    new = emb.seen[n_first:]
    assert DOCS[1]["title"] + "\n" + DOCS[1]["text"] in new
    assert not any(t.startswith("Ada Lovelace\n") for t in new)
    checked, _ = ing.tables().check()
    kinds = {e.kind: len(e.ids) for e in checked.embeddings}
    assert kinds == {"chunk": 2, "entity": len(checked.entities["id"])}


def test_chunking_sentences_and_overlap() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_text(text, max_tokens=30, overlap_tokens=6)
    assert len(chunks) > 5
    for c in chunks:
        assert count_tokens(c.text) <= 30
        assert c.text.endswith(".")
    # Each chunk starts with the previous chunk's last sentence.
    for a, b in itertools.pairwise(chunks):
        assert b.text.startswith(a.text.rsplit(". ", 1)[-1].rstrip("."))
    assert chunk_text("Short one.") == [chunk_text("Short one.")[0]]
    long_sentence = "word " * 100
    assert all(count_tokens(c.text) <= 30 for c in chunk_text(long_sentence, 30, 0))
    with pytest.raises(ParameterError):
        chunk_text(text, max_tokens=10, overlap_tokens=10)


def test_files_text_markdown_jsonl_parquet(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Grace Hopper worked on COBOL.")
    (tmp_path / "b.md").write_text("# Alan Turing\n\nAlan Turing was born in London.")
    (tmp_path / "c.jsonl").write_text(
        json.dumps({"text": "Paris is in France.", "title": "Paris", "tenant": 1, "lang": "en"})
        + "\n"
    )
    pd.DataFrame({"body": ["Rome is in Italy."], "name": ["Rome"]}).to_parquet(
        tmp_path / "d.parquet"
    )
    texts = [tmp_path / "a.txt", tmp_path / "b.md", tmp_path / "c.jsonl"]
    assert len(list(read_documents(texts))) == 3
    # The JSONL file has no "body" column.
    with pytest.raises(DataError) as err:
        list(read_documents(tmp_path / "c.jsonl", columns=Columns(text="body")))
    assert err.value.kind == "missing_column"
    docs = list(read_documents(tmp_path / "b.md")) + list(read_documents(tmp_path / "c.jsonl"))
    assert docs[0].title == "Alan Turing"
    assert docs[1].tenant == 1 and docs[1].metadata == {"lang": "en"}
    frame = pd.DataFrame({"text": ["Rome is in Italy.", "  "], "title": ["Rome", None]})
    rr = ReadReport()
    assert [d.title for d in read_documents(frame, report=rr)] == ["Rome"]
    assert len(rr.skipped["empty"]) == 1
    t = ingest(tmp_path / "d.parquet", columns=Columns(text="body", title="name"))
    assert "Rome" in names(t)


def test_tenants_keep_entities_apart() -> None:
    t = ingest([Document("Paris is big.", 1, tenant="x"), Document("Paris is old.", 2, tenant="y")])
    checked, _ = t.check()
    assert sorted(checked.entities["tenant"].tolist()) == ["x", "y"]


# ---------------------------------------------------------------------------- bad input


def test_empty_documents_are_counted() -> None:
    rep = IngestReport()
    t = ingest(["", "   ", "Oslo is cold."], report=rep)
    assert rep.documents == 1 and len(rep.skipped["empty"]) == 2
    assert names(t) == ["Oslo"]


def test_binary_file(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    with pytest.raises(DataError) as err:
        ingest(p)
    assert err.value.kind == "binary"
    rep = IngestReport()
    ingest(p, on_bad="skip", report=rep)
    assert len(rep.skipped["binary"]) == 1


def test_invalid_utf8(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes("Zürich is here.".encode() + b" \xff\xfe bad")
    with pytest.raises(DataError) as err:
        ingest(p)
    assert err.value.kind == "invalid_utf8" and err.value.ctx["offset"] == 17


def test_large_document(tmp_path: Path) -> None:
    p = tmp_path / "big.txt"
    p.write_text("Word " * 10_000_000)  # 50 MB
    with pytest.raises(DataError) as err:
        ingest(p)
    assert err.value.kind == "too_large" and err.value.ctx["chars"] == 50_000_000
    rep = IngestReport()
    ingest(p, on_bad="skip", report=rep)
    assert len(rep.skipped["too_large"]) == 1


def test_jsonl_line_not_json(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text('{"text": "Oslo is cold."}\n{not json\n{"text": "Bergen is wet."}\n')
    with pytest.raises(DataError) as err:
        ingest(p)
    assert (err.value.kind, err.value.row) == ("invalid_json", 2)
    rep = IngestReport()
    t = ingest(p, on_bad="skip", report=rep)
    assert names(t) == ["Bergen", "Oslo"] and len(rep.skipped["invalid_json"]) == 1


def test_missing_text_column() -> None:
    with pytest.raises(DataError) as err:
        ingest(pd.DataFrame({"body": ["x"]}))
    assert (err.value.kind, err.value.column) == ("missing_column", "text")
    with pytest.raises(DataError) as err:
        ingest([{"body": "x"}])
    assert err.value.kind == "missing_column"


def test_bad_option() -> None:
    with pytest.raises(ParameterError):
        ingest(["x"], max_token=3)


def test_min_chunks_keeps_ids_stable() -> None:
    ing = Ingestor(IngestOptions(min_chunks=2))
    ing.add(["Oslo and Bergen are cities.", "Oslo is cold."])
    t = ing.tables()
    assert names(t) == ["Oslo"]
    oslo = ing.entity_id("Oslo")
    ing.add(["Bergen is wet."])
    t, _ = ing.tables().check()
    assert names(t) == ["Bergen", "Oslo"] and ing.entity_id("Oslo") == oslo
    assert len(t.facts["subject"]) == 1  # Oslo co_occurs Bergen, now that both are in
