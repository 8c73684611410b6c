"""VectorIndex: exact top-k against a brute-force reference, tenant isolation on both
backends, HNSW recall, persistence and corruption, every validation error.

The exact-path property tests use "lattice" vectors: unit vectors of dimension 4 whose
components are all +-1/2 or one +-1, so that normalisation leaves them unchanged and every
dot product (a multiple of 1/4) is exact in float32 whatever the summation order. The
reference can then compare scores with ``==`` and the many ties check the row tie-break.
"""

from __future__ import annotations

import itertools
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from conftest import PROPERTY
from graphrecall.anchors.vectors import MAX_K, MAX_N_TENANTS, VectorIndex, VectorMatches
from graphrecall.embed import EmbeddingError
from graphrecall.errors import DataError, ParameterError, UnknownTenantError
from graphrecall.storage.errors import CorruptStoreError, NotAStoreError, SchemaVersionError
from hypothesis import given
from hypothesis import strategies as st
from usearch.index import Index

F32 = npt.NDArray[np.float32]

#: The 24 lattice unit vectors of dimension 4 (16 of +-1/2, 8 of a single +-1).
LATTICE = np.array(
    [list(s) for s in itertools.product((-0.5, 0.5), repeat=4)]
    + [[float(s) if j == i else 0.0 for j in range(4)] for i in range(4) for s in (-1, 1)],
    dtype=np.float32,
)


def unit(rng: np.random.Generator, n: int, d: int) -> F32:
    v = rng.standard_normal((n, d)).astype(np.float32)
    out: F32 = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def reference(
    vecs: F32,
    tenants: npt.NDArray[np.int64],
    query: F32,
    k: int,
    tenant: int,
    min_score: float | None,
) -> list[tuple[int, float]]:
    """Every row of the tenant, scored in float64, sorted by (-score, row), filtered, cut."""
    q = query.astype(np.float64) / np.linalg.norm(query.astype(np.float64))
    scored = [
        (r, float(np.dot(vecs[r].astype(np.float64), q)))
        for r in range(len(vecs))
        if tenants[r] == tenant
    ]
    scored = [(r, s) for r, s in scored if min_score is None or s >= min_score]
    scored.sort(key=lambda rs: (-rs[1], rs[0]))
    return scored[:k]


@st.composite
def indexed(draw: st.DrawFn, *, max_n: int = 40, lattice: bool | None = None) -> dict[str, Any]:
    """Vectors, tenants and a query setup."""
    n = draw(st.integers(1, max_n))
    n_tenants = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    use_lattice = draw(st.booleans()) if lattice is None else lattice
    rng = np.random.default_rng(seed)
    vecs = LATTICE[rng.integers(0, len(LATTICE), n)] if use_lattice else unit(rng, n, 8)
    codes = rng.choice(np.array([0, 7, 2**32 - 1, 3])[:n_tenants], n).astype(np.int64)
    n_q = draw(st.integers(1, 4))
    queries = LATTICE[rng.integers(0, len(LATTICE), n_q)] if use_lattice else unit(rng, n_q, 8)
    return {
        "vecs": vecs,
        "tenants": codes,
        "queries": queries,
        "lattice": use_lattice,
        "k": draw(st.integers(1, max_n + 5)),
        "min_score": draw(st.sampled_from([None, None, -0.5, 0.0, 0.25, 0.5, 1.0])),
    }


def check_against_reference(index: VectorIndex, case: dict[str, Any], exact: bool) -> None:
    vecs, codes, queries = case["vecs"], case["tenants"], case["queries"]
    k, min_score = case["k"], case["min_score"]
    for tenant in np.unique(codes).tolist():
        got = index.search(queries, k, tenant=tenant, min_score=min_score)
        assert got.rows.shape == got.scores.shape == (len(queries), k)
        assert got.rows.dtype == np.int64 and got.scores.dtype == np.float32
        for i, q in enumerate(queries):
            want = reference(vecs, codes, q, k, tenant, min_score)
            rows, scores = got.query(i)
            assert got.counts[i] == len(rows)
            assert (got.rows[i, len(rows) :] == -1).all()
            assert np.isnan(got.scores[i, len(rows) :]).all()
            assert (codes[rows] == tenant).all()
            if not exact:
                continue
            if case["lattice"]:
                assert [(int(r), float(s)) for r, s in zip(rows, scores, strict=True)] == want
            else:
                # Random vectors: no ties; float32 vs float64 scores agree to ~1e-6.
                assert len(rows) == len(want) or min_score is not None
                common = min(len(rows), len(want))
                assert rows[:common].tolist() == [r for r, _ in want[:common]]
                assert np.allclose(scores[:common], [s for _, s in want[:common]], atol=1e-5)


# --------------------------------------------------------------------------- exact path


@PROPERTY
@given(indexed())
def test_exact_matches_reference(case: dict[str, Any]) -> None:
    index = VectorIndex(case["vecs"], case["tenants"], backend="exact")
    check_against_reference(index, case, exact=True)


@PROPERTY
@given(indexed())
def test_exact_batch_equals_single_queries(case: dict[str, Any]) -> None:
    # A batch runs its queries in parallel; each answer is that of the query alone.
    index = VectorIndex(case["vecs"], case["tenants"], backend="exact")
    for tenant in np.unique(case["tenants"]).tolist():
        batch = index.search(case["queries"], case["k"], tenant=tenant)
        for i, q in enumerate(case["queries"]):
            one = index.search(q, case["k"], tenant=tenant)
            assert np.array_equal(batch.rows[i], one.rows[0])
            assert np.array_equal(batch.scores[i], one.scores[0], equal_nan=True)


def test_ties_broken_by_row() -> None:
    vecs = np.tile(LATTICE[:1], (6, 1))  # six identical rows
    index = VectorIndex(vecs, backend="exact")
    for k in range(1, 8):
        got = index.search(vecs[0], k)
        assert got.query(0)[0].tolist() == list(range(min(k, 6)))
        assert (got.query(0)[1] == 1.0).all()


def test_unnormalised_input_is_normalised() -> None:
    rng = np.random.default_rng(3)
    v = unit(rng, 50, 8)
    scale = rng.uniform(0.01, 100.0, (50, 1)).astype(np.float32)
    a = VectorIndex(v, backend="exact").search(v[:5], 5)
    b = VectorIndex(v * scale, backend="exact").search(v[:5] * 7.0, 5)
    assert np.array_equal(a.rows, b.rows)
    assert np.allclose(a.scores, b.scores, atol=1e-6)
    assert np.allclose(b.scores[:, 0], 1.0, atol=1e-6)  # each query finds itself
    # float64 and int inputs are accepted.
    c = VectorIndex(v.astype(np.float64), backend="exact").search(v[:5].astype(np.float64), 5)
    assert np.array_equal(a.rows, c.rows)
    assert VectorIndex([[1, 0], [0, 2]]).search([0, 3], 1).query(0)[0].tolist() == [1]


def test_shapes_padding_and_readonly() -> None:
    index = VectorIndex(LATTICE[:3])
    one = index.search(LATTICE[0], 5)
    assert isinstance(one, VectorMatches) and len(one) == 1
    assert one.rows.shape == (1, 5) and one.counts.tolist() == [3]
    assert one.rows[0].tolist() == [0, 1, 2, -1, -1]
    assert np.isnan(one.scores[0, 3:]).all() and not np.isnan(one.scores[0, :3]).any()
    none = index.search(np.zeros((0, 4), dtype=np.float32), 3)
    assert none.rows.shape == (0, 3) and none.counts.shape == (0,)
    assert list(none) == []
    with pytest.raises(ValueError):
        one.rows[0, 0] = 5
    with pytest.raises(ValueError):
        one.counts[0] = 0
    rows, scores = one.query(-1)
    assert rows.tolist() == [0, 1, 2] and scores.dtype == np.float32
    assert [r.tolist() for r, _ in index.search(LATTICE[:2], 1)] == [[0], [1]]


def test_min_score_is_inclusive_and_can_empty() -> None:
    index = VectorIndex(LATTICE)
    q = LATTICE[0]
    got = index.search(q, 30, min_score=0.5)
    scores = got.query(0)[1]
    assert (scores >= 0.5).all() and 0.5 in scores.tolist()
    assert got.counts[0] == int((LATTICE @ q >= 0.5).sum())
    assert index.search(q, 3, min_score=1.01).counts.tolist() == [0]
    assert index.search(q, 3, min_score=-2).counts.tolist() == [3]
    assert index.search(q, 3, min_score=np.float32(1.0)).counts.tolist() == [1]


# --------------------------------------------------------------------------- tenants


@PROPERTY
@given(indexed(max_n=30), st.sampled_from(["exact", "hnsw", "auto"]))
def test_tenant_isolation_any_k(case: dict[str, Any], backend: str) -> None:
    codes = case["tenants"]
    index = VectorIndex(case["vecs"], codes, backend=backend, exact_below=8)  # type: ignore[arg-type]
    assert np.array_equal(index.tenants(), np.unique(codes).astype(np.uint32))
    for tenant in np.unique(codes).tolist():
        size = int((codes == tenant).sum())
        assert index.tenant_size(tenant) == size
        for k in (1, size, size + 1, 3 * len(codes) + 10):
            if k < 1:
                continue
            got = index.search(case["queries"], k, tenant=tenant)
            valid = got.rows[got.rows >= 0]
            assert (codes[valid] == tenant).all()
            assert (got.counts <= min(k, size)).all()
            for rows, scores in got:
                assert len(set(rows.tolist())) == len(rows)  # no duplicates
                assert (np.diff(scores) <= 0).all()  # best first
                assert (np.diff(rows)[np.diff(scores) == 0] > 0).all()  # ties by row
            if index.backends[tenant] == "exact":
                assert (got.counts == min(k, size)).all()
    check_against_reference(index, case, exact=index.backend == "exact")


def test_tenant_argument() -> None:
    v = LATTICE[:6]
    index = VectorIndex(v, [5, 5, 9, 9, 9, 2**32 - 1])
    assert index.tenants().tolist() == [5, 9, 2**32 - 1]
    assert sorted(index.search(v[0], 10, tenant=np.uint32(9)).query(0)[0].tolist()) == [2, 3, 4]
    assert index.search(v[0], 10, tenant=2**32 - 1).query(0)[0].tolist() == [5]
    with pytest.raises(ParameterError, match=r"holds 3 tenants \(5, 9, 4294967295\); name one"):
        index.search(v[0], 1)
    with pytest.raises(UnknownTenantError, match="unknown tenant 6") as exc:
        index.search(v[0], 1, tenant=6)
    assert isinstance(exc.value, KeyError)
    with pytest.raises(UnknownTenantError, match="unknown tenant -1"):
        index.search(v[0], 1, tenant=-1)
    for bad in ("5", 5.0, True):
        with pytest.raises(ParameterError, match="invalid parameter tenant"):
            index.search(v[0], 1, tenant=bad)  # type: ignore[arg-type]
    with pytest.raises(UnknownTenantError):
        index.tenant_size(4)
    # One tenant: None names it.
    single = VectorIndex(v, np.full(6, 3, dtype=np.uint32))
    assert single.search(v[0], 2).counts.tolist() == [2]
    assert single.tenant_size() == 6
    many = VectorIndex(LATTICE[:12], np.arange(12))
    with pytest.raises(ParameterError, match=r"holds 12 tenants \(0, 1, .*, 9, \.\.\.\)"):
        many.search(v[0], 1)


def test_known_tenants_without_rows() -> None:
    index = VectorIndex(LATTICE[:4], [0, 2, 2, 0], n_tenants=4, backend="hnsw")
    assert index.tenants().tolist() == [0, 1, 2, 3]
    assert index.tenant_size(1) == 0 and index.tenant_size(3) == 0
    empty = index.search(LATTICE[:2], 3, tenant=3)
    assert empty.counts.tolist() == [0, 0] and (empty.rows == -1).all()
    assert index.backends == {0: "hnsw", 1: "exact", 2: "hnsw", 3: "exact"}
    assert index.backend == "hnsw"
    with pytest.raises(UnknownTenantError):
        index.search(LATTICE[0], 1, tenant=4)
    with pytest.raises(DataError, match=r"row 1 has tenant code 2, outside 0\.\.1"):
        VectorIndex(LATTICE[:2], [0, 2], n_tenants=2)


def test_backend_choice() -> None:
    v = LATTICE[np.arange(30) % 24]
    t = np.array([0] * 20 + [1] * 10)
    auto = VectorIndex(v, t, exact_below=15, sketch_below=15)
    assert auto.backends == {0: "hnsw", 1: "exact"} and auto.backend == "mixed"
    assert VectorIndex(v, t, exact_below=10, sketch_below=0).backend == "hnsw"
    assert VectorIndex(v, t, exact_below=0, sketch_below=0).backend == "hnsw"
    assert VectorIndex(v, t, exact_below=21).backend == "exact"
    assert VectorIndex(v, t).backend == "exact"  # default threshold 1024
    # auto: exact below exact_below, the sketch below sketch_below, HNSW from there.
    three = VectorIndex(v, np.array([0] * 20 + [1] * 6 + [2] * 4), exact_below=5, sketch_below=10)
    assert three.backends == {0: "hnsw", 1: "sketch", 2: "exact"}
    assert VectorIndex(v, t, exact_below=5).backend == "sketch"
    assert VectorIndex(v, t, backend="sketch", exact_below=100).backend == "sketch"
    assert VectorIndex(v, t, backend="hnsw", exact_below=100).backend == "hnsw"
    ix = VectorIndex(v, t, backend="exact", exact_below=0)
    assert ix.backend == "exact" and len(ix) == 30 and ix.dim == 4 and ix.dtype == "f16"
    assert ix.threads == 1
    assert repr(ix) == "VectorIndex(n=30, dim=4, tenants=2, backend='exact', dtype='f16')"


# --------------------------------------------------------------------------- HNSW


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_hnsw_recall(dtype: str) -> None:
    rng = np.random.default_rng(42)
    v = unit(rng, 500, 32)
    q = unit(rng, 100, 32)
    truth = VectorIndex(v, backend="exact").search(q, 10)
    hnsw = VectorIndex(v, backend="hnsw", dtype=dtype, build_threads=1)  # type: ignore[arg-type]
    got = hnsw.search(q, 10)
    hits = sum(len(np.intersect1d(a, b)) for a, b in zip(got.rows, truth.rows, strict=True))
    assert hits / truth.rows.size >= 0.95
    # Scores are cosine similarities (f16 storage: ~1e-3 off), best first.
    found = got.rows >= 0
    exact_scores = np.einsum("qd,qkd->qk", q, v[np.where(found, got.rows, 0)])
    assert np.allclose(got.scores[found], exact_scores[found], atol=5e-3)
    assert (np.diff(got.scores, axis=1) <= 0).all()


def test_hnsw_min_score_and_single_query() -> None:
    rng = np.random.default_rng(7)
    v = unit(rng, 200, 16)
    index = VectorIndex(v, backend="hnsw", dtype="f32", build_threads=1)
    one = index.search(v[3], 5)
    assert one.query(0)[0][0] == 3 and abs(one.query(0)[1][0] - 1.0) < 1e-5
    got = index.search(v[:10], 50, min_score=0.3)
    for rows, scores in got:
        assert (scores >= 0.3).all()
        want = v[rows] @ v[rows[0]]
        assert np.allclose(scores, want, atol=1e-5)
    assert (got.counts < 50).all()


def test_concurrent_searches_agree() -> None:
    rng = np.random.default_rng(11)
    v = unit(rng, 300, 16)
    index = VectorIndex(v, rng.integers(0, 2, 300), backend="auto", exact_below=150)
    q = unit(rng, 40, 16)
    want = [index.search(q[i], 10, tenant=i % 2).rows for i in range(40)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: index.search(q[i], 10, tenant=i % 2).rows, range(40)))
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))


# --------------------------------------------------------------------------- persistence


def mixed_index(**kw: Any) -> tuple[VectorIndex, F32, npt.NDArray[np.int64]]:
    rng = np.random.default_rng(5)
    v = unit(rng, 120, 8)
    t = np.array([4] * 70 + [1] * 40 + [9] * 10)[rng.permutation(120)]
    # Tenant 4 (70 rows): HNSW; tenant 1 (40): the sketch; tenant 9 (10): exact.
    index = VectorIndex(v, t, exact_below=20, sketch_below=50, build_threads=1, rerank=8, **kw)
    return index, v, t


@pytest.mark.parametrize("view", [True, False])
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_save_load_round_trip(tmp_path: Path, view: bool, dtype: str) -> None:
    index, v, _ = mixed_index(dtype=dtype, n_tenants=12)
    assert index.backend == "mixed"
    path = index.save(tmp_path / "vec")
    assert path == tmp_path / "vec"
    assert index.backends[1] == "sketch" and index.backends[9] == "exact"
    assert sorted(p.name for p in path.iterdir()) == [
        "centres.npy",
        "exact.npy",
        "header.json",
        "hnsw-4.usearch",
        "int4.npy",
        "kinds.npy",
        "offsets.npy",
        "rows.npy",
        "scales.npy",
        "sketch.npy",
        "tenants.npy",
    ]
    loaded = VectorIndex.load(path, view=view)
    assert (len(loaded), loaded.dim, loaded.dtype) == (120, 8, dtype)
    assert loaded.backends == index.backends and loaded.tenants().tolist() == list(range(12))
    for tenant in range(12):
        a = index.search(v[:20], 15, tenant=tenant, min_score=0.1)
        b = loaded.search(v[:20], 15, tenant=tenant, min_score=0.1)
        assert np.array_equal(a.rows, b.rows) and np.array_equal(a.counts, b.counts)
        assert np.array_equal(a.scores, b.scores, equal_nan=True)
    # A loaded index saves again (a viewed usearch index too), and replaces the old copy.
    again = loaded.save(tmp_path / "vec")
    assert VectorIndex.load(again).search(v[0], 3, tenant=4).rows.tolist() == (
        index.search(v[0], 3, tenant=4).rows.tolist()
    )
    assert [p.name for p in tmp_path.iterdir()] == ["vec"]  # no temporary left behind


def test_save_refuses_foreign_directory(tmp_path: Path) -> None:
    index = VectorIndex(LATTICE)
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ParameterError, match="not a vector index; refusing to replace it"):
        index.save(tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    with pytest.raises(ParameterError, match="is not a directory"):
        index.save(tmp_path / "mine.txt")
    (tmp_path / "empty").mkdir()
    assert index.save(tmp_path / "empty") == tmp_path / "empty"


def _saved(tmp_path: Path) -> Path:
    index, _, _ = mixed_index()
    return index.save(tmp_path / "vec")


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "name", ["rows.npy", "exact.npy", "tenants.npy", "offsets.npy", "kinds.npy", "hnsw-4.usearch"]
)
def test_corruption_detected(tmp_path: Path, name: str) -> None:
    path = _saved(tmp_path)
    _flip(path / name, -3)  # payload byte: the size stays, the checksum catches it
    with pytest.raises(CorruptStoreError, match=f"{name}: checksum mismatch"):
        VectorIndex.load(path)
    with pytest.raises(CorruptStoreError, match=f"{name}: checksum mismatch"):
        VectorIndex.load(path, view=False)


@pytest.mark.parametrize(
    "name",
    [
        "rows.npy",
        "exact.npy",
        "hnsw-4.usearch",
        "sketch.npy",
        "centres.npy",
        "int4.npy",
        "scales.npy",
    ],
)
@pytest.mark.parametrize("verify", [True, False])
def test_truncated_or_missing_file(tmp_path: Path, name: str, verify: bool) -> None:
    path = _saved(tmp_path)
    data = (path / name).read_bytes()
    (path / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptStoreError, match=f"{name}: .* bytes, the header says"):
        VectorIndex.load(path, verify=verify)
    (path / name).unlink()
    with pytest.raises(CorruptStoreError, match=f"{name}: missing from the vector index"):
        VectorIndex.load(path, verify=verify)


def _rewrite_header(path: Path, **changes: Any) -> None:
    header = json.loads((path / "header.json").read_text())
    header.update(changes)
    (path / "header.json").write_text(json.dumps(header))


def _replace_array(path: Path, stem: str, arr: npt.NDArray[Any]) -> None:
    """Replace an array with matching size and checksum in the header (a consistent lie)."""
    np.save(path / f"{stem}.npy", arr, allow_pickle=False)
    header = json.loads((path / "header.json").read_text())
    data = (path / f"{stem}.npy").read_bytes()
    header["files"][f"{stem}.npy"] = {"size": len(data), "crc32": zlib.crc32(data)}
    (path / "header.json").write_text(json.dumps(header))


def test_header_problems(tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match="no such directory"):
        VectorIndex.load(tmp_path / "nothing")
    with pytest.raises(NotAStoreError, match=r"no header\.json"):
        VectorIndex.load(tmp_path)
    path = _saved(tmp_path)
    header = (path / "header.json").read_text()
    (path / "header.json").write_text(header[: len(header) // 2])
    with pytest.raises(CorruptStoreError, match="unreadable vector index header"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    _rewrite_header(path, magic="graphrecall-snapshot")
    with pytest.raises(NotAStoreError, match="not a graphrecall vector index"):
        VectorIndex.load(path)
    _rewrite_header(path, magic="graphrecall-vectors", format_version=3)
    with pytest.raises(
        SchemaVersionError, match="format version 3; this graphrecall reads versions 1, 2"
    ):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    _rewrite_header(path, dim=9)
    with pytest.raises(CorruptStoreError, match=r"exact\.npy has shape"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    _rewrite_header(path, dtype="f32")  # the usearch file holds f16
    with pytest.raises(CorruptStoreError, match="usearch index does not match the header"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    _rewrite_header(path, files=None)
    with pytest.raises(CorruptStoreError, match="header lists no files"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    h = json.loads(header)
    del h["expansion_add"]
    (path / "header.json").write_text(json.dumps(h))
    with pytest.raises(CorruptStoreError, match="inconsistent vector index"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    _rewrite_header(path, hnsw={})
    with pytest.raises(CorruptStoreError, match="HNSW files listed do not match"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    _rewrite_header(path, threads=0)
    with pytest.raises(CorruptStoreError, match="threads = 0 must be >= 1"):
        VectorIndex.load(path)
    (path / "header.json").write_text(header)
    assert len(VectorIndex.load(path)) == 120
    with pytest.raises(ParameterError, match="invalid parameter view: expected a bool, got 1"):
        VectorIndex.load(path, view=1)  # type: ignore[arg-type]


def test_structure_checked_behind_valid_checksums(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    rows = np.load(path / "rows.npy")
    bad = rows.copy()
    bad[0] = bad[1]
    _replace_array(path, "rows", bad)
    with pytest.raises(CorruptStoreError, match="not a permutation"):
        VectorIndex.load(path)
    _replace_array(path, "rows", rows.astype(np.int32))
    with pytest.raises(CorruptStoreError, match=r"rows\.npy: holds int32"):
        VectorIndex.load(path)
    _replace_array(path, "rows", rows)
    offsets = np.load(path / "offsets.npy")
    _replace_array(path, "offsets", offsets[::-1].copy())
    with pytest.raises(CorruptStoreError, match="offsets do not cover the rows"):
        VectorIndex.load(path)
    _replace_array(path, "offsets", offsets)
    kinds = np.load(path / "kinds.npy")
    _replace_array(path, "kinds", np.full_like(kinds, 7))
    with pytest.raises(CorruptStoreError, match="unknown backend code"):
        VectorIndex.load(path)
    _replace_array(path, "kinds", kinds)
    exact = np.load(path / "exact.npy")
    nan = exact.copy()
    nan[0, 0] = np.nan
    _replace_array(path, "exact", nan)
    with pytest.raises(CorruptStoreError, match="NaN or inf"):
        VectorIndex.load(path)
    _replace_array(path, "exact", exact)
    swapped = rows.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # both rows of the first tenant: order broken
    _replace_array(path, "rows", swapped)
    with pytest.raises(CorruptStoreError, match="rows not ascending within a tenant"):
        VectorIndex.load(path)
    _replace_array(path, "rows", rows)
    _replace_array(path, "tenants", np.array([4, 1, 9], dtype=np.uint32))
    with pytest.raises(CorruptStoreError, match="tenant codes not strictly ascending"):
        VectorIndex.load(path)
    _replace_array(path, "tenants", np.array([1, 4, 9], dtype=np.uint32))
    assert VectorIndex.load(path).tenants().tolist() == [1, 4, 9]
    (path / "tenants.npy").write_bytes(b"x" * os.path.getsize(path / "tenants.npy"))
    header = json.loads((path / "header.json").read_text())
    header["files"]["tenants.npy"]["crc32"] = zlib.crc32((path / "tenants.npy").read_bytes())
    (path / "header.json").write_text(json.dumps(header))
    with pytest.raises(CorruptStoreError, match=r"tenants\.npy: truncated or not a numpy array"):
        VectorIndex.load(path)


def test_foreign_usearch_file(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    name = "hnsw-4.usearch"
    size = (path / name).stat().st_size
    (path / name).write_bytes(b"\0" * size)
    header = json.loads((path / "header.json").read_text())
    header["files"][name]["crc32"] = zlib.crc32(b"\0" * size)
    (path / "header.json").write_text(json.dumps(header))
    with pytest.raises(CorruptStoreError, match=f"{name}: not a usearch index"):
        VectorIndex.load(path)

    def put(index: Index) -> None:
        index.save(os.fspath(path / name))
        data = (path / name).read_bytes()
        header["files"][name] = {"size": len(data), "crc32": zlib.crc32(data)}
        (path / "header.json").write_text(json.dumps(header))

    # Real usearch indexes of the right kind and size, but with other keys or a deletion.
    vecs = unit(np.random.default_rng(0), 71, 8)
    other = Index(ndim=8, metric="cos", dtype="f16")
    other.add(np.arange(1, 71, dtype=np.uint64), vecs[:70], threads=1)
    put(other)
    with pytest.raises(CorruptStoreError, match=f"{name}: usearch keys are not 0..69"):
        VectorIndex.load(path)
    other.add(np.array([0], dtype=np.uint64), vecs[70:], threads=1)
    other.remove(5)
    put(other)
    with pytest.raises(CorruptStoreError, match=f"{name}: usearch index does not match"):
        VectorIndex.load(path)
    put(Index(ndim=8, metric="ip", dtype="f16"))
    with pytest.raises(CorruptStoreError, match=f"{name}: usearch index does not match"):
        VectorIndex.load(path)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        (np.ones(4), r"expected a 2-D \(n, d\) matrix, got shape \(4,\)"),
        (np.ones((2, 2, 2)), r"got shape \(2, 2, 2\)"),
        (np.zeros((0, 4)), "the matrix has no rows"),
        (np.zeros((3, 0)), "dimension 0"),
        ([["a", "b"]], "expected a numeric"),
        ([[1.0, 2.0], [3.0]], "expected a numeric"),
        ([[1.0, 0.0], [0.0, 1.0], [np.nan, 1.0]], r"row 2 holds a NaN .*column 0"),
        ([[1.0, 0.0], [1.0, -np.inf]], r"row 1 holds a NaN or infinite value \(column 1"),
        ([[1.0, 0.0], [1e300, 0.0]], "row 1 holds a NaN or infinite value"),
        ([[1.0, 0.0], [0.0, 0.0]], "row 1 is a zero vector"),
    ],
)
def test_bad_vectors(vectors: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        VectorIndex(vectors)


@pytest.mark.parametrize(
    ("tenants", "message"),
    [
        ([0, 1], r"expected a 1-D array of 3 tenant codes .* got shape \(2,\)"),
        ([[0, 1, 2]], r"got shape \(1, 3\)"),
        ([0.0, 1.0, 2.0], "expected integer .* got dtype float64"),
        (["a", "b", "c"], "expected integer"),
        ([0, -1, 2], r"row 1 has code -1, outside 0..4294967295 \(uint32\)"),
        ([0, 1, 2**32], "row 2 has code 4294967296, outside"),
        (np.array([0, 1, 2**63], dtype=np.uint64), "row 2 has code 9223372036854775808"),
        (np.array([0, 2**70, 1], dtype=object), "row 1 has code 1180591620717411303424"),
    ],
)
def test_bad_tenants(tenants: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        VectorIndex(LATTICE[:3], tenants)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"backend": "faiss"},
            "backend: 'faiss' is not one of 'auto', 'exact', 'hnsw', 'sketch'",
        ),
        ({"rerank": 0}, "rerank: rerank = 0 must be >= 1"),
        ({"rerank": 2.5}, "rerank: expected an integer, got 2.5"),
        ({"sketch_below": -3}, "sketch_below: sketch_below = -3 must be >= 0"),
        ({"dtype": "i8"}, "dtype: 'i8' is not one of 'f16', 'f32'"),
        ({"dtype": None}, "dtype: None is not one of"),
        ({"exact_below": -1}, "exact_below: exact_below = -1 must be >= 0"),
        ({"exact_below": 1.5}, "exact_below: expected an integer, got 1.5"),
        ({"connectivity": 1}, "connectivity: connectivity = 1 must be >= 2"),
        ({"connectivity": 5000}, "connectivity: connectivity = 5000 must be <= 1024"),
        ({"expansion_add": 0}, "expansion_add: expansion_add = 0 must be >= 1"),
        ({"expansion_search": True}, "expansion_search: expected an integer, got True"),
        ({"threads": 0}, "threads: threads = 0 must be >= 1"),
        ({"build_threads": -1}, "build_threads: build_threads = -1 must be >= 0"),
        ({"n_tenants": 0}, "n_tenants: n_tenants = 0 must be >= 1"),
        ({"n_tenants": 2**32}, f"n_tenants: n_tenants = {2**32} must be <= {MAX_N_TENANTS}"),
        ({"expansion_search": 10**6}, "expansion_search: expansion_search = 1000000 must be <="),
        ({"threads": 5000}, "threads: threads = 5000 must be <= 1024"),
    ],
)
def test_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=f"invalid parameter {message}"):
        VectorIndex(LATTICE, **kwargs)


@pytest.mark.parametrize("backend", ["exact", "hnsw", "sketch"])
def test_bad_search_arguments(backend: str) -> None:
    index = VectorIndex(LATTICE, backend=backend)  # type: ignore[arg-type]
    q = LATTICE[0]
    with pytest.raises(EmbeddingError, match="queries have dimension 3, the index holds 4-d"):
        index.search(q[:3], 1)
    with pytest.raises(EmbeddingError, match=r"expected shape \(d,\) or \(q, d\), got \(1, 1, 4\)"):
        index.search(q.reshape(1, 1, 4), 1)
    with pytest.raises(EmbeddingError, match="expected a numeric"):
        index.search(["a", "b", "c", "d"], 1)
    nan = np.stack([q, q])
    nan[1, 2] = np.nan
    with pytest.raises(EmbeddingError, match="query 1 holds NaN or inf"):
        index.search(nan, 1)
    with pytest.raises(EmbeddingError, match="query 0 is a zero vector"):
        index.search(np.zeros(4), 1)
    with pytest.raises(EmbeddingError, match="query 0 holds NaN or inf"):
        index.search(np.array([1e300, 0, 0, 0]), 1)
    assert issubclass(EmbeddingError, ParameterError)
    for k, msg in [
        (0, "k: k = 0 must be >= 1"),
        (-3, "k: k = -3 must be >= 1"),
        (MAX_K + 1, f"k: k = {MAX_K + 1} must be <= {MAX_K}"),
        (2.0, "k: expected an integer, got 2.0"),
        (True, "k: expected an integer, got True"),
        (None, "k: expected an integer, got None"),
    ]:
        with pytest.raises(ParameterError, match=f"invalid parameter {msg}"):
            index.search(q, k)  # type: ignore[arg-type]
    for bad, msg in [
        (float("nan"), "min_score: nan is not finite"),
        (float("inf"), "min_score: inf is not finite"),
        ("0.5", "min_score: expected a number or None, got '0.5'"),
        (False, "min_score: expected a number or None, got False"),
    ]:
        with pytest.raises(ParameterError, match=f"invalid parameter {msg}"):
            index.search(q, 1, min_score=bad)  # type: ignore[arg-type]
    got = index.search(q, 1)
    with pytest.raises(ParameterError, match="query 1 out of range for 1 queries"):
        got.query(1)
    with pytest.raises(ParameterError, match="invalid parameter i: expected an integer"):
        got.query("0")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- sketch


def _round_away(x: F32, limit: int = 127) -> npt.NDArray[np.int64]:
    """Round half away from zero (Rust's ``f32::round``), clamped to -limit..limit."""
    r = np.sign(x) * np.floor(np.abs(x.astype(np.float64)) + 0.5)
    return np.clip(r, -limit, limit).astype(np.int64)


def int4_reference(v32: F32, centre: F32) -> tuple[npt.NDArray[np.int64], F32]:
    """Centred rows quantised to -7..7 with one scale per dimension: ``max |x| / 7``."""
    x = v32 - centre
    scales = (np.abs(x).max(axis=0) / np.float32(7)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(scales > 0, np.float32(1) / scales, np.float32(0)).astype(np.float32)
    return _round_away(x * inv, 7), scales


def int4_packed(values: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """4-bit values (n, d) as stored: ``h = ceil(d / 2)`` bytes per row, byte j holding
    dimension j + 8 in its low nibble and dimension j + h + 8 (8 past d) in its high one."""
    n, d = values.shape
    h = -(-d // 2)
    stored = np.full((n, 2 * h), 8, dtype=np.int64)
    stored[:, :d] = values + 8
    return (stored[:, :h] | (stored[:, h:] << 4)).astype(np.uint8)


def sketch_reference(
    vecs: F32, query: F32, k: int, rerank: int, refine: int | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The sketch written obviously: centre on the mean, sign bits, Hamming distance to the
    signed centred query, the ``rerank`` nearest (ties by row), then (``refine`` below
    that) the ``refine`` best 4-bit scores (ties by row), exact cosine, top ``k`` best first
    (ties by row). Scores in float64."""
    v = vecs.astype(np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q = query.astype(np.float64) / np.linalg.norm(query.astype(np.float64))
    v32, q32 = v.astype(np.float32), q.astype(np.float32)
    centre = v32.mean(axis=0, dtype=np.float64).astype(np.float32)
    hamming = ((v32 - centre) > 0).astype(int) != ((q32 - centre) > 0).astype(int)
    dist = hamming.sum(axis=1)
    rerank, refine = max(rerank, k), max(refine or rerank, k)
    cand = sorted(range(len(v)), key=lambda r: (dist[r], r))[:rerank]
    if rerank < len(v) and refine < len(cand):
        rows4, scales = int4_reference(v32, centre)
        qs = (q32 * scales).astype(np.float32)
        peak = np.float32(np.abs(qs).max() / np.float32(127))
        q8 = _round_away(qs * (np.float32(1) / peak)) if peak > 0 else np.zeros_like(rows4[0])
        approx = rows4 @ q8
        cand = sorted(cand, key=lambda r: (-int(approx[r]), r))[:refine]
    scored = sorted((-float(v[r] @ q), r) for r in cand)[:k]
    return np.array([r for _, r in scored], dtype=np.int64), np.array([-s for s, _ in scored])


def assert_same_ranking(
    rows: npt.NDArray[np.int64], scores: F32, want_rows: npt.NDArray[np.int64], want: Any
) -> None:
    """Same rows and scores (float32 vs float64: 1e-5), rows equal except where two scores
    are within rounding of each other."""
    assert len(rows) == len(want_rows)
    assert np.allclose(scores, want, atol=1e-5)
    for i in np.flatnonzero(rows != want_rows).tolist():
        assert abs(float(want[i]) - float(scores[i])) < 1e-5, (i, rows, want_rows)


@PROPERTY
@given(
    st.integers(1, 60),
    st.integers(1, 70),
    st.integers(1, 12),
    st.integers(1, 80),
    st.integers(1, 80),
    st.integers(0, 2**32 - 1),
)
def test_sketch_against_reference(
    n: int, d: int, k: int, rerank: int, refine: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    v = unit(rng, n, d)
    q = unit(rng, 3, d)
    index = VectorIndex(v, backend="sketch", rerank=rerank, refine=refine)
    got = index.search(q, k)
    for i in range(3):
        want_rows, want = sketch_reference(v, q[i], k, rerank, refine)
        rows, scores = got.query(i)
        assert_same_ranking(rows, scores, want_rows, want)
        assert (got.rows[i, len(rows) :] == -1).all() and np.isnan(got.scores[i, len(rows) :]).all()


@pytest.mark.parametrize("k", [1, 10, 57, 200])
def test_sketch_full_rerank_equals_exact(k: int) -> None:
    rng = np.random.default_rng(3)
    v = unit(rng, 150, 48)
    t = rng.integers(0, 3, 150)
    q = unit(rng, 20, 48)
    exact = VectorIndex(v, t, backend="exact")
    # rerank >= rows: every row is scored exactly, whatever refine is.
    sketch = VectorIndex(v, t, backend="sketch", rerank=150, refine=3)
    for tenant in range(3):
        a = exact.search(q, k, tenant=tenant, min_score=-0.05)
        b = sketch.search(q, k, tenant=tenant, min_score=-0.05)
        assert np.array_equal(a.counts, b.counts)
        assert np.array_equal(a.rows, b.rows)
        assert np.allclose(a.scores, b.scores, atol=1e-6, equal_nan=True)
        # Tenant isolation at any k: only the tenant's rows, each once.
        for rows, _ in b:
            assert set(rows.tolist()) <= set(np.flatnonzero(t == tenant).tolist())
            assert len(set(rows.tolist())) == len(rows)


@pytest.mark.parametrize("k", [1, 5, 100, 10_000])
def test_sketch_tenant_isolation_partial_rerank(k: int) -> None:
    rng = np.random.default_rng(8)
    v = unit(rng, 600, 32)
    t = rng.integers(0, 4, 600)
    index = VectorIndex(v, t, backend="sketch", rerank=16, refine=8)
    for tenant in range(4):
        got = index.search(v[:30], k, tenant=tenant)
        mine = set(np.flatnonzero(t == tenant).tolist())
        for rows, scores in got:
            assert set(rows.tolist()) <= mine and len(set(rows.tolist())) == len(rows)
            assert len(rows) == min(k, len(mine))
            assert (np.diff(scores) <= 0).all()


def test_sketch_recall_on_structured_data() -> None:
    # Embedding-like: a rank-16 signal plus noise; recall@10 of the default rerank.
    rng = np.random.default_rng(12)
    basis = rng.standard_normal((16, 128)).astype(np.float32)
    v = (rng.standard_normal((4000, 16)).astype(np.float32) @ basis) + rng.standard_normal(
        (4000, 128)
    ).astype(np.float32)
    q = (rng.standard_normal((100, 16)).astype(np.float32) @ basis) + rng.standard_normal(
        (100, 128)
    ).astype(np.float32)
    truth = VectorIndex(v, backend="exact").search(q, 10).rows
    # The defaults; the 4-bit stage nearly alone (rerank 3999 of 4000 rows: the 4-bit
    # scores rank almost every row, the best 40 re-scored exactly); the Hamming stage alone.
    for rerank, refine, floor in ((None, None, 0.99), (3999, 40, 0.99), (64, 64, 0.8)):
        index = VectorIndex(v, backend="sketch", rerank=rerank, refine=refine)
        got = index.search(q, 10).rows
        hits = sum(len(np.intersect1d(a, b)) for a, b in zip(got, truth, strict=True))
        assert hits / truth.size >= floor, (rerank, refine, hits / truth.size)


def test_sketch_batch_equals_single_queries() -> None:
    rng = np.random.default_rng(4)
    v = unit(rng, 2000, 64)
    index = VectorIndex(v, backend="sketch", rerank=40)
    q = unit(rng, 50, 64)
    batch = index.search(q, 7)
    for i in range(50):
        one = index.search(q[i], 7)
        assert np.array_equal(one.rows[0], batch.rows[i])
        assert np.array_equal(one.scores[0], batch.scores[i])
    assert index.rerank == 40 and VectorIndex(v, backend="sketch").rerank is None
    assert index.refine is None and VectorIndex(v, backend="sketch", refine=9).refine == 9


@pytest.mark.parametrize("d", [40, 41])
def test_sketch_int4_rows_match_reference(d: int) -> None:
    rng = np.random.default_rng(14)
    v = unit(rng, 300, d)
    t = rng.integers(0, 2, 300)
    index = VectorIndex(v, t, backend="sketch")
    assert index._int4.shape == (300, -(-d // 2)) and index._int4.dtype == np.uint8
    for j, tenant in enumerate((0, 1)):
        rows = index.tenant_rows(tenant)
        part = index._exact[index._offsets[tenant] : index._offsets[tenant + 1]]
        want, scales = int4_reference(part, index._centres[j])
        assert want.min() >= -7 and want.max() <= 7
        assert np.array_equal(
            index._int4[index._offsets[tenant] : index._offsets[tenant + 1]], int4_packed(want)
        )
        assert np.array_equal(index._scales[j], scales)
        assert len(rows) == len(part)


def test_sketch_errors() -> None:
    rng = np.random.default_rng(2)
    v = unit(rng, 100, 16)
    index = VectorIndex(v, backend="sketch")
    with pytest.raises(EmbeddingError, match="queries have dimension 8, the index holds 16-d"):
        index.search(v[0, :8], 1)
    with pytest.raises(EmbeddingError, match="query 0 holds NaN or inf"):
        index.search(np.full(16, np.nan), 1)
    with pytest.raises(EmbeddingError, match="query 1 is a zero vector"):
        index.search(np.stack([v[0], np.zeros(16)]), 1)
    with pytest.raises(ParameterError, match="invalid parameter k"):
        index.search(v[0], 0)
    with pytest.raises(ParameterError, match="invalid parameter rerank"):
        VectorIndex(v, backend="sketch", rerank=-1)
    with pytest.raises(ParameterError, match="invalid parameter refine"):
        VectorIndex(v, backend="sketch", refine=0)
    with pytest.raises(DataError, match="row 3 is a zero vector"):
        VectorIndex(np.vstack([v[:3], np.zeros((1, 16))]), backend="sketch")


def test_core_sketch_errors_are_precise() -> None:
    from graphrecall import _core

    v = np.ascontiguousarray(unit(np.random.default_rng(1), 10, 8))
    c = v.mean(axis=0).astype(np.float32)
    codes = _core.sketch_codes(v, c).reshape(10, 1)
    q8, s = _core.sketch_int4(v, c)
    assert q8.dtype == np.uint8 and q8.shape == (40,) and s.dtype == np.float32
    q8 = q8.reshape(10, 4)
    search = _core.sketch_search
    assert search(codes, v, c, q8, s, v[:1], 3, 5, 3)[2].tolist() == [3]
    with pytest.raises(ParameterError, match="invalid parameter rerank"):
        search(codes, v, c, q8, s, v[:1], 3, 0, 3)
    with pytest.raises(ParameterError, match="invalid parameter refine"):
        search(codes, v, c, q8, s, v[:1], 3, 3, 0)
    with pytest.raises(ParameterError, match="invalid parameter k"):
        search(codes, v, c, q8, s, v[:1], 0, 3, 3)
    with pytest.raises(DataError, match="centre has 4 rows, expected 8"):
        search(codes, v, c[:4], q8, s, v[:1], 3, 3, 3)
    with pytest.raises(DataError, match="codes has 5 rows, expected 10"):
        search(codes[:5], v, c, q8, s, v[:1], 3, 3, 3)
    with pytest.raises(DataError, match="int4 has 36 rows, expected 40"):
        search(codes, v, c, q8[:9], s, v[:1], 3, 3, 3)
    with pytest.raises(DataError, match="scales has 7 rows, expected 8"):
        search(codes, v, c, q8, s[:7], v[:1], 3, 3, 3)
    with pytest.raises(ParameterError, match="4-bit rows have 2 bytes, dimension 8 needs 4"):
        search(codes, v, c, np.ascontiguousarray(q8[:, :2]), s, v[:1], 3, 3, 3)
    with pytest.raises(ParameterError, match="queries have dimension 4"):
        search(codes, v, c, q8, s, np.ascontiguousarray(v[:1, :4]), 3, 3, 3)
    with pytest.raises(ParameterError, match="C-contiguous"):
        search(codes, np.asfortranarray(v), c, q8, s, v[:1], 3, 3, 3)
    # An absurd k: an error naming it, not an allocation that aborts the process.
    huge = "invalid parameter k: 1000000000000 result cells \\(queries x k\\) cannot be allocated"
    with pytest.raises(ParameterError, match=huge):
        search(codes, v, c, q8, s, v[:1], 10**12, 3, 3)


def test_core_exact_search() -> None:
    from graphrecall import _core

    v = np.ascontiguousarray(unit(np.random.default_rng(2), 30, 8))
    q = np.ascontiguousarray(v[:3])
    pos, val, cnt = _core.exact_search(v, q, 5)
    want = np.argsort(-(q.astype(np.float64) @ v.T.astype(np.float64)), axis=1, kind="stable")
    assert cnt.tolist() == [5, 5, 5] and pos.reshape(3, 5).tolist() == want[:, :5].tolist()
    assert np.allclose(val.reshape(3, 5)[:, 0], 1.0, atol=1e-6)  # each query finds itself
    subset = np.array([29, 3, 7], dtype=np.uint32)
    pos, val, cnt = _core.exact_search(v, q[:1], 5, subset)
    assert cnt.tolist() == [3] and sorted(pos[:3].tolist()) == [3, 7, 29]
    assert pos[3:].tolist() == [-1, -1] and np.isnan(val[3:]).all()
    with pytest.raises(ParameterError, match="position 30 is out of range for 30 rows"):
        _core.exact_search(v, q, 5, np.array([30], dtype=np.uint32))
    with pytest.raises(ParameterError, match="queries have dimension 4, the vectors 8"):
        _core.exact_search(v, np.ascontiguousarray(q[:, :4]), 5)
    with pytest.raises(ParameterError, match="invalid parameter k"):
        _core.exact_search(v, q, 0)
    with pytest.raises(ParameterError, match="invalid parameter k: 3000000000000 result cells"):
        _core.exact_search(v, q, 10**12)
    with pytest.raises(ParameterError, match="C-contiguous"):
        _core.exact_search(np.asfortranarray(v), q, 5)


def test_sketch_reuse_rebuilds_codes() -> None:
    rng = np.random.default_rng(6)
    v = unit(rng, 300, 16)
    prev = VectorIndex(v[:200], backend="sketch", rerank=30)
    new = VectorIndex(
        v, backend="sketch", rerank=30, reuse=(prev, np.r_[np.arange(200), -np.ones(100, int)])
    )
    fresh = VectorIndex(v, backend="sketch", rerank=30)
    assert np.array_equal(new.search(v[:20], 5).rows, fresh.search(v[:20], 5).rows)


@pytest.mark.parametrize("old", ["no stage", "int8 stage"])
def test_load_version_2_without_int4_rows(tmp_path: Path, old: str) -> None:
    # A version-2 directory written before the 4-bit stage (with no middle stage, or with
    # the int8 stage's int8.npy and scales.npy): the 4-bit rows are rebuilt.
    index, v, _ = mixed_index(n_tenants=12)
    path = index.save(tmp_path / "old")
    header = json.loads((path / "header.json").read_text())
    for name in ("int4.npy", "scales.npy"):
        (path / name).unlink()
        del header["files"][name]
    if old == "no stage":
        del header["refine"]
    else:
        n_sketch = index._int4.shape[0]
        stale = {"int8": np.ones((n_sketch, 8), np.int8), "scales": np.ones((1, 8), np.float32)}
        for stem, arr in stale.items():
            np.save(path / f"{stem}.npy", arr)
            data = (path / f"{stem}.npy").read_bytes()
            header["files"][f"{stem}.npy"] = {"size": len(data), "crc32": zlib.crc32(data)}
    (path / "header.json").write_text(json.dumps(header))
    loaded = VectorIndex.load(path)
    assert np.array_equal(loaded._int4, index._int4)
    assert np.array_equal(loaded._scales, index._scales)
    a = index.search(v[:20], 5, tenant=1)
    b = loaded.search(v[:20], 5, tenant=1)
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.scores, b.scores)


def test_load_format_version_1(tmp_path: Path) -> None:
    # A version-1 directory (no sketch arrays) still loads and answers the same.
    v = unit(np.random.default_rng(9), 60, 8)
    old = VectorIndex(v, exact_below=0, sketch_below=0, build_threads=1)
    path = old.save(tmp_path / "v1")
    for name in ("sketch.npy", "centres.npy"):
        (path / name).unlink()
    header = json.loads((path / "header.json").read_text())
    for key in ("sketch_below", "rerank"):
        del header[key]
    for name in ("sketch.npy", "centres.npy"):
        del header["files"][name]
    header["format_version"] = 1
    (path / "header.json").write_text(json.dumps(header))
    loaded = VectorIndex.load(path)
    assert loaded.backend == "hnsw"
    assert np.array_equal(loaded.search(v[:5], 3).rows, old.search(v[:5], 3).rows)


@pytest.mark.parametrize("backend", ["sketch", "exact", "hnsw"])
def test_single_query_fast_path_answers_as_the_general_path(backend: str) -> None:
    # One C-contiguous float32 query, (d,) or (1, d), takes the fast path; it must answer as
    # the general path does for other dtypes, lists and non-contiguous views, and on the
    # sketch (fixed-order Rust scores) as a batch does.
    rng = np.random.default_rng(21)
    v = unit(rng, 400, 24)
    t = np.repeat([0, 1], [390, 10])
    index = VectorIndex(v, t, backend=backend, rerank=60, refine=20, build_threads=1)
    q = (rng.standard_normal((30, 24)) * 3).astype(np.float32)  # not unit length
    wide = np.zeros((30, 48), np.float32)
    wide[:, ::2] = q
    for tenant, k, floor in itertools.product((0, 1), (1, 7, 15), (None, 0.2)):
        batch = index.search(q, k, tenant=tenant, min_score=floor)
        for i in range(len(q)):
            want = index.search(q[i].astype(np.float64), k, tenant=tenant, min_score=floor)
            others = (q[i], q[i : i + 1], q[i].tolist(), wide[i, ::2])
            found = [index.search(x, k, tenant=tenant, min_score=floor) for x in others]
            if backend == "sketch":
                found.append(batch)
            for got in found:
                row = i if got is batch else 0
                assert got.rows.shape[1] == k
                assert np.array_equal(got.rows[row], want.rows[0])
                assert np.array_equal(got.scores[row], want.scores[0], equal_nan=True)
                assert got.counts[row] == want.counts[0]
                assert not got.rows.flags.writeable and not got.scores.flags.writeable


def test_single_query_fast_path_keeps_the_errors() -> None:
    rng = np.random.default_rng(22)
    index = VectorIndex(unit(rng, 200, 16), backend="sketch")
    q = unit(rng, 1, 16)[0]
    bad = q.copy()
    bad[3] = np.nan
    with pytest.raises(EmbeddingError, match="query 0 holds NaN or inf"):
        index.search(bad, 3)
    bad[3] = np.inf
    with pytest.raises(EmbeddingError, match="query 0 holds NaN or inf"):
        index.search(bad[None], 3)
    with pytest.raises(EmbeddingError, match="query 0 is a zero vector"):
        index.search(np.zeros(16, np.float32), 3)
    with pytest.raises(EmbeddingError, match="queries have dimension 15"):
        index.search(q[:15].copy(), 3)
    with pytest.raises(EmbeddingError, match=r"expected shape \(d,\) or \(q, d\)"):
        index.search(q.reshape(1, 1, 16), 3)
    with pytest.raises(ParameterError, match="invalid parameter k"):
        index.search(q, 0)
    with pytest.raises(ParameterError, match="invalid parameter k"):
        index.search(q, True)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="invalid parameter k"):
        index.search(q, MAX_K + 1)
    # A float32 query with a subnormal norm is still a direction.
    tiny = np.zeros(16, np.float32)
    tiny[0] = np.float32(1e-45)
    assert index.search(tiny, 1).counts.tolist() == [1]
    # The fast path leaves the caller's array alone.
    before = q.copy()
    index.search(q, 3)
    assert np.array_equal(q, before)


def test_default_rerank_grows_with_the_tenant_and_auto_stops_at_sketch_below() -> None:
    """At least RERANK_FLOOR, RERANK_PER_K per result and a RERANK_SHARE-th of the rows;
    tenants of SKETCH_BELOW rows and more go to HNSW under "auto"."""
    from graphrecall.anchors.vectors import (
        RERANK_FLOOR,
        RERANK_PER_K,
        RERANK_SHARE,
        SKETCH_BELOW,
        default_rerank,
    )

    assert default_rerank(10, 10_000) == RERANK_FLOOR
    assert default_rerank(100, 10_000) == 100 * RERANK_PER_K
    assert default_rerank(10, 19_999) == -(-19_999 // RERANK_SHARE)
    rng = np.random.default_rng(3)
    v = rng.standard_normal((40, 8), dtype=np.float32)
    t = np.array([0] * 30 + [1] * 10)
    mixed = VectorIndex(v, t, exact_below=5, sketch_below=30, build_threads=1)
    assert mixed.backends == {0: "hnsw", 1: "sketch"}
    assert SKETCH_BELOW == 20_000
