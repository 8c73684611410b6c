"""Snapshots: save / load round trip, and every way a snapshot can be broken."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graphrecall import KnowledgeGraph
from graphrecall.errors import ParameterError
from graphrecall.storage.errors import (
    CorruptStoreError,
    NotAStoreError,
    SchemaVersionError,
    StorageError,
)
from graphrecall.storage.snapshot import load_snapshot, save_snapshot

NOW = 1_767_225_600


def _graph(ids: str) -> KnowledgeGraph:
    ent = ["user", "jacq", "duckdb", "ned"] if ids == "str" else [10, 20, 30, 40]
    u, j, d, n = ent
    return KnowledgeGraph.from_records(
        [
            {"id": u, "tenant": "alice", "name": "User"},
            {"id": j, "tenant": "alice", "name": "JACQ"},
            {"id": d, "tenant": "alice", "name": "DuckDB"},
            {"id": n, "tenant": "stark", "name": "Ned"},
        ],
        [
            {
                "id": "f1" if ids == "str" else 1,
                "subject": u,
                "object": j,
                "predicate": "works_on",
                "confidence": 0.9,
                "last_accessed": NOW - 86400 * 20,
                "access_count": 3,
                "valid_from": 0,
                "valid_to": NOW * 2,
            },
            {
                "id": "f2" if ids == "str" else 2,
                "subject": j,
                "object": d,
                "predicate": "uses",
                "confidence": 0.8,
                "status": "staged",
                "source": "file",
            },
            {
                "id": "f3" if ids == "str" else 3,
                "subject": d,
                "object": None,
                "predicate": "type",
                "object_value": "OLAP database",
                "confidence": 0.99,
            },
        ],
        chunks=[{"id": "c1", "tenant": "alice"}, {"id": "c2", "tenant": "stark"}],
        mentions=[{"chunk": "c1", "entity": j, "count": 2}, {"chunk": "c2", "entity": n}],
    )


def _same(a: KnowledgeGraph, b: KnowledgeGraph) -> None:
    assert a.stats() == b.stats()
    pa, pb = a.core.to_parts(), b.core.to_parts()
    assert pa.keys() == pb.keys()
    for k in pa:
        if isinstance(pa[k], np.ndarray):
            np.testing.assert_array_equal(pa[k], pb[k])
        else:
            assert pa[k] == pb[k]
    assert list(a.entity_ids) == list(b.entity_ids)
    assert list(a.fact_ids) == list(b.fact_ids)
    assert list(a.chunk_ids) == list(b.chunk_ids)
    assert a.tenants.names == b.tenants.names
    assert a.predicates.names == b.predicates.names
    assert a.facts(a.fact_ids) == b.facts(b.fact_ids)
    anchors = [a.entity_ids[0]]
    ra = a.spread(anchors, rank="score_fact", now=NOW)
    rb = b.spread(anchors, rank="score_fact", now=NOW)
    assert list(ra.fact_ids) == list(rb.fact_ids)
    np.testing.assert_array_equal(ra.scores, rb.scores)


@pytest.mark.parametrize("verify", ["safe", "trusted", "full"])
@pytest.mark.parametrize("ids", ["str", "int"])
def test_round_trip(tmp_path: Path, ids: str, verify: str) -> None:
    g = _graph(ids)
    save_snapshot(g, tmp_path / "snap")
    _same(g, load_snapshot(tmp_path / "snap", verify=verify))  # type: ignore[arg-type]


def test_round_trip_of_a_numpy_built_graph(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n, m = 300, 3000
    tenant = rng.integers(0, 3, n)
    subj = rng.integers(0, n, m)
    obj = np.array([rng.choice(np.flatnonzero(tenant == tenant[s])) for s in subj])
    obj[rng.random(m) < 0.2] = -1
    g = KnowledgeGraph.from_arrays(
        entity_tenant=tenant,
        fact_subject=subj,
        fact_object=obj,
        confidence=rng.random(m).astype(np.float32),
        status=rng.integers(0, 4, m),
        sequence=rng.integers(0, 10, m),
    )
    save_snapshot(g, tmp_path / "s")
    _same(g, load_snapshot(tmp_path / "s"))


def test_saving_over_an_existing_snapshot_replaces_it(tmp_path: Path) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")
    save_snapshot(_graph("int"), tmp_path / "s")
    assert list(load_snapshot(tmp_path / "s").entity_ids) == [10, 20, 30, 40]


def test_not_a_snapshot(tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match=r"no header\.json"):
        load_snapshot(tmp_path)
    (tmp_path / "header.json").write_text(json.dumps({"magic": "something-else"}))
    with pytest.raises(NotAStoreError, match="magic"):
        load_snapshot(tmp_path)


def test_unknown_format_version(tmp_path: Path) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")
    h = json.loads((tmp_path / "s" / "header.json").read_text())
    h["format_version"] = 99
    (tmp_path / "s" / "header.json").write_text(json.dumps(h))
    with pytest.raises(SchemaVersionError, match="version 99"):
        load_snapshot(tmp_path / "s")


@pytest.mark.parametrize(
    "part", ["object", "out_offsets", "confidence", "fact_to_pos", "in_pos", "chunk_entity"]
)
def test_corrupted_or_truncated_files_are_refused(tmp_path: Path, part: str) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")
    path = tmp_path / "s" / f"{part}.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x5A  # flip bits in the payload
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="checksum mismatch"):
        load_snapshot(tmp_path / "s")
    path.write_bytes(bytes(data[: len(data) // 2]))  # truncated
    with pytest.raises(CorruptStoreError, match=r"truncated|holds"):
        load_snapshot(tmp_path / "s")
    path.unlink()
    with pytest.raises(CorruptStoreError, match="missing"):
        load_snapshot(tmp_path / "s")


def test_consistent_checksums_but_inconsistent_graph_is_refused(tmp_path: Path) -> None:
    """A payload rewritten with a matching checksum still has to be a valid graph."""
    save_snapshot(_graph("str"), tmp_path / "s")
    path = tmp_path / "s" / "object.npy"
    obj = np.load(path)
    obj[0] = 3  # an entity of another tenant
    np.save(path, obj)
    h = json.loads((tmp_path / "s" / "header.json").read_text())
    h["files"]["object.npy"]["crc32"] = zlib.crc32(path.read_bytes())
    h["files"]["object.npy"].pop("xxh3", None)  # without it, the CRC-32 is what is verified
    (tmp_path / "s" / "header.json").write_text(json.dumps(h))
    with pytest.raises(CorruptStoreError, match="inconsistent snapshot"):
        load_snapshot(tmp_path / "s", verify="full")
    obj[0] = 99  # out of bounds: refused at every level
    np.save(path, obj)
    h["files"]["object.npy"]["crc32"] = zlib.crc32(path.read_bytes())
    (tmp_path / "s" / "header.json").write_text(json.dumps(h))
    for verify in ("safe", "trusted"):
        with pytest.raises(CorruptStoreError, match="inconsistent snapshot"):
            load_snapshot(tmp_path / "s", verify=verify)  # type: ignore[arg-type]


def _forge_array(root: Path, name: str, change: Any) -> None:
    """Change ``<name>.npy`` and give it a matching checksum (a consistent forgery)."""
    path = root / f"{name}.npy"
    arr = np.load(path)
    change(arr)
    np.save(path, arr)
    h = json.loads((root / "header.json").read_text())
    data = path.read_bytes()
    h["files"][f"{name}.npy"].update(crc32=zlib.crc32(data), size=len(data), shape=list(arr.shape))
    h["files"][f"{name}.npy"].pop("xxh3", None)  # without it, the CRC-32 is what is verified
    (root / "header.json").write_text(json.dumps(h))


def _alice_facts(g: KnowledgeGraph) -> set[Any]:
    """Every entity and fact id a spread from alice's entities reaches (both directions)."""
    anchors = [e for e in g.entity_ids.tolist() if e in ("user", "jacq", "duckdb")]
    r = g.spread(anchors, tenant="alice", direction="both", rank="score_fact", now=NOW)
    return {*r.fact_ids.tolist(), *r.entity_ids.tolist()}


def test_a_forged_cross_tenant_fact_is_refused_by_default(tmp_path: Path) -> None:
    """Issue 17.7: valid checksums and a fact of alice's pointing at stark's entity."""
    save_snapshot(_graph("str"), tmp_path / "s")

    def to_ned(obj: Any) -> None:
        obj[0] = 3  # user -> ned: an entity of tenant stark

    _forge_array(tmp_path / "s", "object", to_ned)
    with pytest.raises(CorruptStoreError, match="entity 0 has a fact pointing at an entity of"):
        load_snapshot(tmp_path / "s")
    # The opt-out for files you wrote yourself trusts the payload: the leak it allows.
    leaky = load_snapshot(tmp_path / "s", verify="trusted")
    assert "ned" in _alice_facts(leaky)


@pytest.mark.parametrize("part", ["in_subject", "in_pos"])
def test_a_forged_in_adjacency_across_tenants_is_refused_by_default(
    tmp_path: Path, part: str
) -> None:
    """A reverse link of alice's entity coming from stark's (in_subject), or holding a fact
    that does not point at it (in_pos)."""
    g = _graph("str")
    save_snapshot(g, tmp_path / "s")
    parts = g.core.to_parts()
    jacq_in = int(parts["in_offsets"][1])  # jacq's first in-fact (user -> jacq)

    def forge(col: Any) -> None:
        col[jacq_in] = 3 if part == "in_subject" else int(parts["in_pos"][jacq_in + 1])

    _forge_array(tmp_path / "s", part, forge)
    with pytest.raises(CorruptStoreError, match="entity 1: the in-facts do not match"):
        load_snapshot(tmp_path / "s")
    load_snapshot(tmp_path / "s", verify="trusted")  # memory-safe, not isolated


def test_a_forged_fact_inverse_is_refused_at_every_level(tmp_path: Path) -> None:
    """The stored fact id -> position inverse must invert the fact column."""
    save_snapshot(_graph("str"), tmp_path / "s")

    def swap(inverse: Any) -> None:
        inverse[[0, 1]] = inverse[[1, 0]]

    _forge_array(tmp_path / "s", "fact_to_pos", swap)
    for verify in ("safe", "trusted", "full"):
        with pytest.raises(CorruptStoreError, match="fact_to_pos: is not the inverse of fact"):
            load_snapshot(tmp_path / "s", verify=verify)  # type: ignore[arg-type]


def test_a_dropped_in_fact_is_refused_by_default(tmp_path: Path) -> None:
    """An in-adjacency missing a fact (every link left in its tenant) is not the graph's."""
    g = _graph("str")
    save_snapshot(g, tmp_path / "s")
    parts = g.core.to_parts()
    jacq_in = int(parts["in_offsets"][1])  # jacq's only in-fact (user -> jacq)
    for name in ("in_pos", "in_subject"):
        path = tmp_path / "s" / f"{name}.npy"
        np.save(path, np.delete(np.load(path), jacq_in))
        _forge_array(tmp_path / "s", name, lambda col: None)  # its checksum and shape

    def shift(offsets: Any) -> None:
        offsets[2:] -= 1

    _forge_array(tmp_path / "s", "in_offsets", shift)
    with pytest.raises(CorruptStoreError, match="entity 1: the in-facts do not match"):
        load_snapshot(tmp_path / "s")
    load_snapshot(tmp_path / "s", verify="trusted")  # memory-safe, not checked


def test_a_forged_mention_across_tenants_is_refused_by_default(tmp_path: Path) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")

    def to_ned(ent: Any) -> None:
        ent[0] = 3  # chunk c1 (alice) now mentions ned (stark)

    _forge_array(tmp_path / "s", "chunk_entity", to_ned)
    with pytest.raises(CorruptStoreError, match="chunk 0 holds an invalid mention"):
        load_snapshot(tmp_path / "s")
    load_snapshot(tmp_path / "s", verify="trusted")


@pytest.mark.parametrize("vocab", ["tenants", "predicates", "statuses", "sources"])
def test_a_code_without_a_name_is_refused(tmp_path: Path, vocab: str) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")

    def drop_last(p: dict[str, Any]) -> None:
        p["vocab"][vocab] = p["vocab"][vocab][:-1]

    _rewrite_python_json(tmp_path / "s", drop_last)
    with pytest.raises(CorruptStoreError, match=r"codes but \d+ names"):
        load_snapshot(tmp_path / "s")


def test_an_unknown_verify_level_is_a_parameter_error(tmp_path: Path) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")
    with pytest.raises(ParameterError, match="'safe', 'trusted' or 'full'"):
        load_snapshot(tmp_path / "s", verify="checksums")  # type: ignore[arg-type]


def test_python_sidecar_corruption(tmp_path: Path) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")
    p = tmp_path / "s" / "python.json"
    p.write_text(p.read_text().replace("works_on", "works_in"))
    with pytest.raises(CorruptStoreError, match=r"python\.json: checksum"):
        load_snapshot(tmp_path / "s")


def test_text_column_corruption(tmp_path: Path) -> None:
    save_snapshot(_graph("str"), tmp_path / "s")
    p = tmp_path / "s" / "text_entity_names.txt"
    p.write_bytes(p.read_bytes().replace(b"JACQ", b"JACK"))
    with pytest.raises(CorruptStoreError, match=r"text_entity_names\.txt: checksum"):
        load_snapshot(tmp_path / "s")
    p.write_bytes(p.read_bytes()[:-1])  # shorter than the header says
    with pytest.raises(CorruptStoreError, match="bytes"):
        load_snapshot(tmp_path / "s")


@pytest.mark.parametrize("ids", ["str", "int"])
def test_every_flipped_byte_is_refused(tmp_path: Path, ids: str) -> None:
    """Whatever file a flipped byte is in, the load refuses it: never a wrong graph."""
    save_snapshot(_graph(ids), tmp_path / "s")
    files = sorted(p.name for p in (tmp_path / "s").iterdir() if p.name != "header.json")
    assert "text_object_values.txt" in files and "python.json" in files
    for name in files:
        path = tmp_path / "s" / name
        data = path.read_bytes()
        for at in sorted({0, len(data) // 2, len(data) - 1}):
            broken = bytearray(data)
            broken[at] ^= 0x01
            path.write_bytes(bytes(broken))
            with pytest.raises(CorruptStoreError):
                load_snapshot(tmp_path / "s")
        path.write_bytes(data)
    _same(_graph(ids), load_snapshot(tmp_path / "s"))


def test_text_columns_with_nul_and_numbers(tmp_path: Path) -> None:
    """Literal values may be numbers, and text may hold NUL (kept as a JSON list then)."""
    g = KnowledgeGraph.from_records(
        [{"id": "a", "name": "A\x00B"}, {"id": "b", "name": ""}],
        [
            {"subject": "a", "object": None, "object_value": 3},
            {"subject": "a", "object": None, "object_value": 2.5},
            {"subject": "a", "object": None, "object_value": ""},
            {"subject": "a", "object": "b"},
        ],
    )
    save_snapshot(g, tmp_path / "s")
    assert not (tmp_path / "s" / "text_entity_names.txt").exists()
    back = load_snapshot(tmp_path / "s")
    assert back.entity_names is not None and back.object_values is not None
    assert back.entity_names.tolist() == ["A\x00B", ""]
    assert back.object_values.tolist() == [3, 2.5, "", None]
    assert [type(v) for v in back.object_values.tolist()] == [int, float, str, type(None)]


def _as_version_2(root: Path) -> None:
    """Rewrite a snapshot's header in the version 2 layout: per-kind checksum tables, an
    array's checksum covering its data rather than its .npy file."""
    h = json.loads((root / "header.json").read_text())
    files = h.pop("files")
    arrays: dict[str, Any] = {}
    texts: dict[str, Any] = {}
    for rel, meta in files.items():
        if rel.endswith(".npy"):
            data = np.ascontiguousarray(np.load(root / rel)).tobytes()
            arrays[rel[:-4]] = {"dtype": meta["dtype"], "shape": meta["shape"]}
            arrays[rel[:-4]]["crc32"] = zlib.crc32(data)
        elif rel.startswith("text_"):
            texts[rel[5:-4]] = {"file": rel, "crc32": meta["crc32"], "bytes": meta["size"]}
    python = {"file": "python.json", "crc32": files["python.json"]["crc32"]}
    h.update(format_version=2, arrays=arrays, texts=texts, python=python)
    (root / "header.json").write_text(json.dumps(h))


@pytest.mark.parametrize("ids", ["str", "int"])
def test_reads_format_version_2(tmp_path: Path, ids: str) -> None:
    """A version 2 snapshot still loads, and its checksums are still verified."""
    g = _graph(ids)
    root = save_snapshot(g, tmp_path / "s")
    _as_version_2(root)
    _same(g, load_snapshot(root))
    path = root / "object.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match=r"object\.npy: checksum mismatch"):
        load_snapshot(root)


@pytest.mark.parametrize("verify", ["safe", "trusted", "full"])
def test_reads_format_version_3(tmp_path: Path, verify: str) -> None:
    """A version 3 snapshot (no stored fact inverse: the core computes it) still loads."""
    g = _graph("str")
    root = save_snapshot(g, tmp_path / "s")
    (root / "fact_to_pos.npy").unlink()
    h = json.loads((root / "header.json").read_text())
    del h["files"]["fact_to_pos.npy"]
    h["format_version"] = 3
    (root / "header.json").write_text(json.dumps(h))
    _same(g, load_snapshot(root, verify=verify))  # type: ignore[arg-type]


def test_reads_format_version_1(tmp_path: Path) -> None:
    """A version 1 snapshot (text columns as JSON lists in python.json) still loads."""
    g = _graph("int")
    root = save_snapshot(g, tmp_path / "s")
    _as_version_2(root)
    h = json.loads((root / "header.json").read_text())
    py = json.loads((root / "python.json").read_text())
    py["entity_names"] = g.entity_names.tolist() if g.entity_names is not None else None
    py["object_values"] = g.object_values.tolist() if g.object_values is not None else None
    for col in ("entity_names", "object_values"):
        (root / f"text_{col}.txt").unlink()
        (root / f"text_{col}.npy").unlink()
        del h["arrays"][f"text_{col}"]
    del h["texts"]
    blob = json.dumps(py).encode()
    (root / "python.json").write_bytes(blob)
    h["python"]["crc32"] = zlib.crc32(blob)
    h["format_version"] = 1
    (root / "header.json").write_text(json.dumps(h))
    _same(g, load_snapshot(root))


def test_failed_save_leaves_no_partial_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = _graph("str")

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("graphrecall.storage.snapshot.json.dumps", boom)
    with pytest.raises(OSError, match="disk full"):
        save_snapshot(g, tmp_path / "s")
    assert not (tmp_path / "s").exists()
    assert [p.name for p in tmp_path.iterdir()] == []
    shutil.rmtree(tmp_path, ignore_errors=True)


def _rewrite_python_json(root: Path, change: Any) -> None:
    """Change python.json and give it a matching checksum (a consistent forgery)."""
    py = json.loads((root / "python.json").read_text())
    change(py)
    blob = json.dumps(py).encode()
    (root / "python.json").write_bytes(blob)
    h = json.loads((root / "header.json").read_text())
    h["files"]["python.json"] = {"size": len(blob), "crc32": zlib.crc32(blob)}
    (root / "header.json").write_text(json.dumps(h))


@pytest.mark.parametrize("n", [2**31, 2**40, -1, 2, "3"])
def test_a_forged_id_count_is_refused_without_allocating(tmp_path: Path, n: Any) -> None:
    """Consecutive ids are made for as many rows as the arrays hold, never for the count
    python.json claims."""
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0, 1, 2], fact_object=[1, 2, None], fact_ids=[100, 101, 102]
    )
    save_snapshot(g, tmp_path / "s")
    py = json.loads((tmp_path / "s" / "python.json").read_text())
    assert py["ids"]["facts"] == {"kind": "int", "n": 3, "start": 100}

    def forge(p: dict[str, Any]) -> None:
        p["ids"]["facts"]["n"] = n

    _rewrite_python_json(tmp_path / "s", forge)
    with pytest.raises(CorruptStoreError, match="fact ids do not match"):
        load_snapshot(tmp_path / "s")


@pytest.mark.parametrize("start", [0, -5, 2**63 - 3, -(2**63)])
def test_consecutive_ids_round_trip_up_to_the_int64_limits(tmp_path: Path, start: int) -> None:
    ids = np.arange(3, dtype=np.int64) + np.int64(start)
    g = KnowledgeGraph.from_arrays(fact_subject=[0, 1, 2], fact_object=[1, 2, None], fact_ids=ids)
    save_snapshot(g, tmp_path / "s")
    back = load_snapshot(tmp_path / "s")
    assert back.fact_ids.tolist() == ids.tolist()
    assert back.facts([start + 1])[0]["id"] == start + 1

    def past_the_limit(p: dict[str, Any]) -> None:
        p["ids"]["facts"]["start"] = 2**63 - 2

    _rewrite_python_json(tmp_path / "s", past_the_limit)
    with pytest.raises(CorruptStoreError, match="fact ids do not match"):
        load_snapshot(tmp_path / "s")


@pytest.mark.parametrize("case", ["nul", "surrogate"])
def test_text_round_trips_exactly(tmp_path: Path, case: str) -> None:
    """Issue 17.10: ids '\\0' and '', trailing NULs and lone surrogates come back exactly,
    in ids, names, vocabularies and literal values."""
    odd = ["\x00", "", "x\x00"] if case == "nul" else ["\ud800", "a\udfff", "\udc00b"]
    g = KnowledgeGraph.from_records(
        [
            {"id": odd[0], "tenant": odd[1] or "t", "name": odd[2]},
            {"id": odd[1], "tenant": odd[1] or "t", "name": odd[0]},
            {"id": odd[2], "tenant": odd[1] or "t"},
        ],
        [
            {"id": odd[0], "subject": odd[0], "object": odd[1], "predicate": odd[2]},
            {"id": odd[2], "subject": odd[1], "object": None, "object_value": odd[0]},
        ],
        chunks=[{"id": odd[1], "tenant": odd[1] or "t"}],
        mentions=[{"chunk": odd[1], "entity": odd[2]}],
    )
    save_snapshot(g, tmp_path / "s")
    back = load_snapshot(tmp_path / "s")
    _same(g, back)
    assert back.entity_ids.tolist() == odd
    assert back.entity_names is not None and g.entity_names is not None
    assert back.entity_names.tolist() == g.entity_names.tolist()
    assert back.object_values is not None and g.object_values is not None
    assert back.object_values.tolist() == g.object_values.tolist()


def test_header_byte_flips_are_refused_as_corruption(tmp_path: Path) -> None:
    """Issue 17.12: the header has no checksum of its own; a flipped byte anywhere in it
    gives the same graph or a storage error (never a raw KeyError / TypeError)."""
    g = _graph("str")
    root = save_snapshot(g, tmp_path / "s")
    data = (root / "header.json").read_bytes()
    version = data.index(b'"format_version": ') + len(b'"format_version": ')
    refused = 0
    flips = [(version, 0x01)]  # version 4 -> 5: unknown
    flips += [(at, 0x04) for at in range(0, len(data), max(1, len(data) // 150))]
    for at, mask in flips:
        broken = bytearray(data)
        broken[at] ^= mask
        (root / "header.json").write_bytes(bytes(broken))
        try:
            back = load_snapshot(root)
        except StorageError:
            refused += 1
            continue
        _same(g, back)
    assert refused > 0
