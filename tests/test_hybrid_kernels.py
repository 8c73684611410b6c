"""hybrid_expand's native steps against the numpy / Python forms they replaced, bit for bit:
the graph-sourced chunks (``_core.graph_proximity_chunks``) and the hybrid merge
(``_core.hybrid_merge`` instead of per-chunk dicts and a lexsort)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import PROPERTY
from graphrecall import _core, scoring
from graphrecall.errors import DataError, ParameterError
from graphrecall.recipes.hybrid_expand import _hybrid_top, _HybridIn
from hypothesis import given
from hypothesis import strategies as st
from oracles import hybrid_numpy

proximity_profile_st = st.one_of(
    st.just(scoring.GraphProximityProfile()),
    st.builds(
        scoring.GraphProximityProfile,
        weight_scale=st.floats(min_value=0.1, max_value=100.0),
        hop_base=st.floats(min_value=0.5, max_value=4.0),
        mention_floor=st.floats(min_value=0.0, max_value=1.0),
        mention_log_divisor=st.floats(min_value=0.1, max_value=50.0),
    ),
)


def bits(values: list[float]) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


def profile_kwargs(p: scoring.GraphProximityProfile) -> dict[str, float]:
    return {
        "weight_scale": p.weight_scale,
        "hop_base": p.hop_base,
        "mention_floor": p.mention_floor,
        "mention_log_divisor": p.mention_log_divisor,
    }


@PROPERTY
@given(d=st.data(), profile=proximity_profile_st)
def test_graph_proximity_chunks_equals_the_numpy_form(
    d: st.DataObject, profile: scoring.GraphProximityProfile
) -> None:
    n_e = d.draw(st.integers(1, 10))
    deg = d.draw(st.lists(st.integers(0, 5), min_size=n_e, max_size=n_e))
    offsets = np.zeros(n_e + 1, np.int64)
    np.cumsum(deg, out=offsets[1:])
    n_m = int(offsets[-1])
    chunks = np.asarray(d.draw(st.lists(st.integers(0, 12), min_size=n_m, max_size=n_m)), np.int64)
    counts = np.asarray(
        d.draw(st.lists(st.integers(0, 2**32 - 1), min_size=n_m, max_size=n_m)), np.int64
    )
    related = np.asarray(d.draw(st.lists(st.integers(0, n_e - 1), max_size=14)), np.int64)
    n_r = len(related)
    # Activation strengths are float32 (ties among them are common).
    strengths = np.asarray(
        d.draw(
            st.lists(
                st.sampled_from([0.0, 0.25, 1.0, 3.0, 7.5, 10.0, -2.0, 1e30]),
                min_size=n_r,
                max_size=n_r,
            )
        ),
        np.float32,
    )
    hops = np.asarray(d.draw(st.lists(st.integers(1, 5), min_size=n_r, max_size=n_r)), np.uint32)
    want_scores, want_from = hybrid_numpy.graph_chunks(
        offsets, chunks, counts, related, strengths, hops, profile
    )
    got_c, got_s, got_e = _core.graph_proximity_chunks(
        offsets,
        chunks,
        counts,
        related,
        strengths.astype(np.float64),
        hops,
        **profile_kwargs(profile),
    )
    assert got_c.dtype == np.int64 and got_s.dtype == np.float64 and got_e.dtype == np.int64
    assert got_c.tolist() == list(want_scores)  # first-scored order, as the dict's
    assert got_s.view(np.int64).tolist() == bits(list(want_scores.values()))
    assert got_e.tolist() == list(want_from.values())


def test_graph_proximity_chunks_errors() -> None:
    offsets = np.array([0, 2, 2], np.int64)
    chunks = np.array([5, 6], np.int64)
    counts = np.array([3, 1], np.int64)
    one, w, h = np.array([0], np.int64), np.array([1.0]), np.array([1], np.uint32)
    got = _core.graph_proximity_chunks(offsets, chunks, counts, one, w, h)
    assert got[0].tolist() == [5, 6]
    with pytest.raises(DataError, match=r"entities\.weights has 2 rows, expected 1"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, np.ones(2), h)
    with pytest.raises(DataError, match=r"entities\.hops has 0 rows, expected 1"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, w, h[:0])
    with pytest.raises(DataError, match=r"mentions\.counts has 1 rows, expected 2"):
        _core.graph_proximity_chunks(offsets, chunks, counts[:1], one, w, h)
    with pytest.raises(DataError, match="entities row 0: entity = 2 is outside"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one + 2, w, h)
    with pytest.raises(DataError, match="entities row 0: entity = -1 is outside"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one - 1, w, h)
    with pytest.raises(DataError, match="out of bounds"):
        _core.graph_proximity_chunks(np.array([0, 3, 3]), chunks, counts, one, w, h)
    with pytest.raises(DataError, match="entities row 0: weight = NaN is not finite"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, w * math.nan, h)
    with pytest.raises(DataError, match="entities row 0: hop = 0 is below 1"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, w, h * 0)
    with pytest.raises(DataError, match="mention count = -1"):
        _core.graph_proximity_chunks(offsets, chunks, np.array([3, -1]), one, w, h)
    with pytest.raises(DataError, match="mention count = 4294967296"):
        _core.graph_proximity_chunks(offsets, chunks, np.array([3, 2**32]), one, w, h)
    with pytest.raises(ParameterError, match="invalid parameter hop_base"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, w, h, hop_base=0.0)
    with pytest.raises(ParameterError, match="invalid parameter mention_floor"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, w, h, mention_floor=1.5)
    with pytest.raises(ParameterError, match="weights: array must be C-contiguous"):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, np.ones(4)[::2], h)
    with pytest.raises(TypeError):
        _core.graph_proximity_chunks(offsets, chunks, counts, one, w, h.astype(np.int64))  # type: ignore[arg-type]


hits_st = st.lists(st.integers(0, 30), unique=True, max_size=12)


@PROPERTY
@given(d=st.data(), n_queries=st.integers(0, 4), k=st.integers(1, 12))
def test_hybrid_top_equals_the_dict_merge(d: st.DataObject, n_queries: int, k: int) -> None:
    """One native merge per batch gives the per-chunk dict merge's rows and scores."""
    weight = st.sampled_from([0.0, 0.3, 0.7, 1.0, 0.1, 2.5])
    vw, tw = d.draw(weight), d.draw(weight)
    openclaw = d.draw(st.booleans())
    with_vectors = d.draw(st.booleans())
    inputs: list[_HybridIn] = []
    for _ in range(n_queries):
        v_rows = np.asarray(d.draw(hits_st), np.int64)
        cos = st.floats(-1.0, 1.0, width=32)
        v_scores = np.asarray(
            d.draw(st.lists(cos, min_size=len(v_rows), max_size=len(v_rows))), np.float32
        )
        k_rows = np.asarray(d.draw(hits_st), np.int64)
        bm = st.sampled_from([0.0, 0.5, 1.0, 1.7, 3.25, 1e-6])
        k_scores = np.sort(
            np.asarray(d.draw(st.lists(bm, min_size=len(k_rows), max_size=len(k_rows))))
        )[::-1].copy()
        vector = (v_rows, v_scores) if with_vectors else None
        inputs.append((vector, (k_rows, k_scores), openclaw, vw, tw))
    got = _hybrid_top(inputs, k)
    assert len(got) == n_queries
    for (ids, scores), (vector, keyword, oc, a, b) in zip(got, inputs, strict=True):
        want_ids, want_scores = hybrid_numpy.merge(vector, keyword, oc, a, b, k)
        assert ids.tolist() == want_ids
        assert scores.view(np.int64).tolist() == bits(want_scores)


def test_hybrid_merge_errors() -> None:
    ids, sc = np.array([1, 2], np.int64), np.array([0.5, 0.25])
    off, none = np.array([0, 2], np.uintp), np.array([0, 0], np.uintp)
    empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
    got = _core.hybrid_merge(ids, sc, off, empty_i, empty_f, none, k=1)
    assert got[0].tolist() == [1] and got[1].tolist() == [0.7 * 0.5 + 0.3 * 0.0]
    with pytest.raises(DataError, match=r"vector\.scores has 1 rows, expected 2"):
        _core.hybrid_merge(ids, sc[:1], off, empty_i, empty_f, none)
    with pytest.raises(DataError, match=r"text\.bm25 has 2 rows, expected 0"):
        _core.hybrid_merge(ids, sc, off, empty_i, sc, none)
    with pytest.raises(ParameterError, match="vector_offsets: must end at 2"):
        _core.hybrid_merge(ids, sc, none, empty_i, empty_f, none)
    with pytest.raises(ParameterError, match="text_offsets: holds 2 queries"):
        _core.hybrid_merge(ids, sc, off, empty_i, empty_f, np.zeros(3, np.uintp))
    with pytest.raises(ParameterError, match="invalid parameter text_weight"):
        _core.hybrid_merge(ids, sc, off, empty_i, empty_f, none, text_weight=-1.0)
    with pytest.raises(ParameterError, match="invalid parameter text_score"):
        _core.hybrid_merge(ids, sc, off, empty_i, empty_f, none, text_score="rank")
    with pytest.raises(ParameterError, match="vector_scores: array must be C-contiguous"):
        _core.hybrid_merge(ids, np.ones(4)[::2], off, empty_i, empty_f, none)
    with pytest.raises(TypeError):
        _core.hybrid_merge(ids, sc.astype(np.float32), off, empty_i, empty_f, none)  # type: ignore[arg-type]
