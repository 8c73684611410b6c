"""The 100M-fact path at a small size: the bounded-memory generator draws the same graph
whatever its slice size, the Parquet file is written one row group at a time as one
``write_table`` would write it, and the scale benchmark's column reader (Arrow dictionaries,
no Python strings) builds a graph whose saved and loaded snapshot answers like the graph
built from the generator's columns."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
if str(BENCHES) not in sys.path:
    sys.path.insert(0, str(BENCHES))

import bench_scale  # noqa: E402
import graphrecall as gr  # noqa: E402
import workload as W  # noqa: E402
from graphrecall.storage import load_snapshot, save_snapshot  # noqa: E402

N = 3_000


def _digest(g: W.Graph) -> str:
    h = hashlib.sha256()
    for name, col in vars(g).items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


def test_generator_same_graph_whatever_the_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _digest(W.generate(N, seed=3))
    monkeypatch.setattr(W, "_SLICE", 257)
    assert _digest(W.generate(N, seed=3)) == whole


def test_parquet_row_groups_as_one_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = W.generate(N, seed=1)
    monkeypatch.setattr(W, "ROW_GROUP", 4_096)
    W.write_parquet(g, tmp_path)
    got = pq.read_table(tmp_path / "facts.parquet")
    assert pq.ParquetFile(tmp_path / "facts.parquet").num_row_groups == -(-g.n_facts // 4_096)
    np.testing.assert_array_equal(got["subject_id"].to_numpy(), g.subject)
    np.testing.assert_array_equal(got["object_id"].fill_null(-1).to_numpy(), g.object)
    lits = got["object_value"].to_pylist()
    assert lits[:50] == [f"lit_{i}" if o < 0 else None for i, o in enumerate(g.object[:50])]


def test_scale_reader_and_snapshot_answer_like_the_generator(tmp_path: Path) -> None:
    g = W.generate(N, seed=2)
    W.write_parquet(g, tmp_path)
    W.write_queries(g, tmp_path, 2)
    cols, text = bench_scale.read_parquet(tmp_path)
    ref = W.load(tmp_path)
    np.testing.assert_array_equal(cols["predicate"], ref.predicate)
    np.testing.assert_array_equal(cols["status"], ref.status)
    np.testing.assert_array_equal(cols["source"], ref.source)
    np.testing.assert_array_equal(cols["fact_object"], ref.object)
    assert text["object_value"].type == "string"  # Arrow offsets + bytes, no objects

    kw = {"predicates": W.PREDICATES, "statuses": W.STATUSES, "sources": W.SOURCES}
    built = gr.KnowledgeGraph.from_arrays(**cols, **kw)
    loaded = load_snapshot(save_snapshot(built, tmp_path / "snap"))
    direct = gr.KnowledgeGraph.from_arrays(
        entity_tenant=g.entity_tenant,
        fact_subject=g.subject,
        fact_object=g.object,
        predicate=g.predicate,
        confidence=g.confidence,
        strength=g.strength,
        status=g.status,
        source=g.source,
        access_count=g.access_count,
        last_accessed=g.last_accessed,
        **kw,
    )
    assert loaded.stats() == direct.stats()
    plans = [
        kg.spread_plan(
            max_hops=2,
            per_entity_limit=10,
            max_facts=30,
            statuses=("staged", "confirmed"),
            rank="score_fact",
        )
        for kg in (direct, loaded)
    ]
    for q in g.queries[:50]:
        a, b = (p(q, now=W.NOW) for p in plans)
        np.testing.assert_array_equal(a.fact_ids, b.fact_ids)


def test_snapshot_checksums_xxh3_verified_crc32_kept(tmp_path: Path) -> None:
    """A snapshot records both checksums; a flipped byte fails the XXH3-64 (which loads
    verify) with a precise error, and a header without XXH3 entries (older writers) is
    verified by its CRC-32."""
    pytest.importorskip("xxhash")
    import json
    import zlib

    from graphrecall.storage import CorruptStoreError

    g = W.generate(N, seed=4)
    kg = gr.KnowledgeGraph.from_arrays(
        entity_tenant=g.entity_tenant, fact_subject=g.subject, fact_object=g.object
    )
    root = save_snapshot(kg, tmp_path / "s")
    header = json.loads((root / "header.json").read_text())
    assert all("xxh3" in m and "crc32" in m for r, m in header["files"].items() if ".npy" in r)
    path = root / "strength.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    header["files"]["strength.npy"]["crc32"] = zlib.crc32(data)  # only the CRC forged
    (root / "header.json").write_text(json.dumps(header))
    with pytest.raises(CorruptStoreError, match=r"strength\.npy: checksum mismatch"):
        load_snapshot(root)

    root = save_snapshot(kg, tmp_path / "old")
    header = json.loads((root / "header.json").read_text())
    for meta in header["files"].values():
        meta.pop("xxh3", None)
    (root / "header.json").write_text(json.dumps(header))
    assert load_snapshot(root).stats() == kg.stats()
    path = root / "fact.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match=r"fact\.npy: checksum mismatch"):
        load_snapshot(root)
