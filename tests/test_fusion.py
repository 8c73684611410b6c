"""graphrecall.fusion against the pure-Python reference, worked examples and every error."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from conftest import PROPERTY, examples
from graphrecall import _core, fusion
from graphrecall.errors import DataError, ParameterError, QueryError
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import fusion_ref

# Small id ranges so that lists overlap; a few special scores (ties, signed zeros).
ids_st = st.integers(min_value=-5, max_value=15)
score_st = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 0.5]),
)
id_lists_st = st.lists(st.lists(ids_st, max_size=12), max_size=6)
scored_list_st = st.lists(st.tuples(ids_st, score_st), max_size=12).map(
    lambda pairs: ([d for d, _ in pairs], [s for _, s in pairs])
)
top_k_st = st.one_of(st.none(), st.integers(min_value=0, max_value=12))
weight_st = st.one_of(
    st.floats(min_value=0.0, max_value=10.0, allow_nan=False), st.sampled_from([0.0, 1.0])
)


def pairs(fused: fusion.Fused) -> list[tuple[int, float]]:
    assert len(fused) == 1
    return fused.to_list()[0]


def same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    """Same ids in the same order and equal scores (exactly; -0.0 == 0.0)."""
    assert [d for d, _ in got] == [d for d, _ in want]
    assert [s for _, s in got] == [s for _, s in want]


# ------------------------------------------------------------------------------------------
# RRF


@settings(PROPERTY, max_examples=examples(200))
@given(
    lists=id_lists_st,
    data=st.data(),
    k=st.one_of(st.just(0.0), st.just(60.0), st.floats(min_value=0.0, max_value=1e3)),
    top_k=top_k_st,
)
def test_rrf_matches_reference(
    lists: list[list[int]], data: st.DataObject, k: float, top_k: int | None
) -> None:
    weights = data.draw(
        st.one_of(st.none(), st.lists(weight_st, min_size=len(lists), max_size=len(lists)))
    )
    got = pairs(fusion.rrf(lists, weights=weights, k=k, top_k=top_k))
    same(got, fusion_ref.rrf(lists, weights, k, top_k))


@settings(PROPERTY, max_examples=examples(100))
@given(lists=id_lists_st, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_rrf_is_bit_identical_under_list_permutation(
    lists: list[list[int]], seed: int, data: st.DataObject
) -> None:
    weights = data.draw(st.lists(weight_st, min_size=len(lists), max_size=len(lists)))
    perm = list(range(len(lists)))
    random.Random(seed).shuffle(perm)
    a = fusion.rrf(lists, weights=weights)
    b = fusion.rrf([lists[i] for i in perm], weights=[weights[i] for i in perm])
    assert a.ids.tolist() == b.ids.tolist()
    assert a.scores.tobytes() == b.scores.tobytes()


@settings(PROPERTY, max_examples=examples(50))
@given(
    queries=st.lists(st.lists(st.lists(ids_st, max_size=12), min_size=2, max_size=2), max_size=5),
    top_k=top_k_st,
)
def test_rrf_batch_equals_single_queries(queries: list[list[list[int]]], top_k: int | None) -> None:
    batch = fusion.rrf(queries, weights=[1.0, 0.5], top_k=top_k, batch=True)
    assert len(batch) == len(queries)
    for q, lists in enumerate(queries):
        same(pairs(batch[q]), pairs(fusion.rrf(lists, weights=[1.0, 0.5], top_k=top_k)))


def test_rrf_worked_example() -> None:
    got = pairs(fusion.rrf([[1, 2, 3], [3, 1]]))
    assert [d for d, _ in got] == [1, 3, 2]
    assert got[0][1] == 1 / 62 + 1 / 61  # rank 2 in list 1, rank 1 in list 2: sorted sum
    assert got[2][1] == 1 / 62
    # k = 0 is allowed (ranks start at 1), a repeated id counts once at its best rank.
    assert pairs(fusion.rrf([[7, 8, 7]], k=0, weights=[2])) == [(7, 2.0), (8, 1.0)]
    # Ties break by id ascending.
    assert pairs(fusion.rrf([[5], [4]])) == [(4, 1 / 61), (5, 1 / 61)]
    assert pairs(fusion.rrf([])) == []
    assert pairs(fusion.rrf([[1, 2]], top_k=0)) == []


def test_rrf_accepts_numpy_of_any_int_dtype() -> None:
    a = fusion.rrf([np.array([1, 2], dtype=np.uint8), np.array([2], dtype=np.int32)])
    b = fusion.rrf([[1, 2], [2]])
    assert a.ids.dtype == np.int64 and a.scores.dtype == np.float64
    assert a.offsets.dtype == np.int64
    assert a.ids.tolist() == b.ids.tolist() == [2, 1]


# ------------------------------------------------------------------------------------------
# Weighted


@settings(PROPERTY, max_examples=examples(200))
@given(
    lists=st.lists(scored_list_st, max_size=5),
    data=st.data(),
    normalize=st.booleans(),
    top_k=top_k_st,
)
def test_weighted_matches_reference(
    lists: list[tuple[list[int], list[float]]],
    data: st.DataObject,
    normalize: bool,
    top_k: int | None,
) -> None:
    weights = data.draw(
        st.one_of(st.none(), st.lists(weight_st, min_size=len(lists), max_size=len(lists)))
    )
    got = pairs(fusion.weighted(lists, weights=weights, normalize=normalize, top_k=top_k))
    same(got, fusion_ref.weighted(lists, weights, normalize, top_k))


@settings(PROPERTY, max_examples=examples(100))
@given(
    lists=st.lists(scored_list_st, max_size=5),
    seed=st.integers(0, 2**32 - 1),
    normalize=st.booleans(),
)
def test_weighted_is_bit_identical_under_list_permutation(
    lists: list[tuple[list[int], list[float]]], seed: int, normalize: bool
) -> None:
    weights = [0.5 + i for i in range(len(lists))]
    perm = list(range(len(lists)))
    random.Random(seed).shuffle(perm)
    a = fusion.weighted(lists, weights=weights, normalize=normalize)
    b = fusion.weighted(
        [lists[i] for i in perm], weights=[weights[i] for i in perm], normalize=normalize
    )
    assert a.ids.tolist() == b.ids.tolist()
    assert a.scores.tobytes() == b.scores.tobytes()


def test_weighted_worked_examples() -> None:
    lists: list[fusion.ScoredList] = [([1, 2], [0.5, 0.25]), {2: 1.0, 3: 4.0}]
    assert pairs(fusion.weighted(lists, weights=[2.0, 0.5])) == [(3, 2.0), (1, 1.0), (2, 1.0)]
    assert pairs(fusion.weighted(lists, normalize=True)) == [(1, 1.0), (3, 1.0), (2, 0.0)]
    # All-equal list normalises to 1.0; a repeated id keeps its max.
    assert pairs(fusion.weighted([([4, 5, 4], [0.3, 0.3, 0.1])], normalize=True)) == [
        (4, 1.0),
        (5, 1.0),
    ]
    assert pairs(fusion.weighted([([4, 4], [0.1, 0.3])])) == [(4, 0.3)]


def test_weighted_batch() -> None:
    batch = fusion.weighted([[([1], [1.0])], [], [([2, 3], [0.1, 0.2])]], top_k=1, batch=True)
    assert batch.offsets.tolist() == [0, 1, 1, 2]
    assert batch.to_list() == [[(1, 1.0)], [], [(3, 0.2)]]


# ------------------------------------------------------------------------------------------
# Additive merge (seed 003)


@settings(PROPERTY, max_examples=examples(200))
@given(
    base=scored_list_st,
    graph=scored_list_st,
    alpha=st.sampled_from([0.7, 0.0, 1.0, 2.5]),
    beta=st.sampled_from([0.3, 0.0, 1.0]),
    max_new=st.integers(0, 6),
)
def test_additive_merge_matches_reference_and_keeps_base(
    base: tuple[list[int], list[float]],
    graph: tuple[list[int], list[float]],
    alpha: float,
    beta: float,
    max_new: int,
) -> None:
    merged = fusion.additive_merge(base, graph, alpha=alpha, beta=beta, max_new=max_new)
    got = merged.to_list()[0]
    want = fusion_ref.additive_merge(base, graph, alpha, beta, max_new)
    assert [(d, src) for d, _, src in got] == [(d, src) for d, _, src in want]
    assert [s for _, s, _ in got] == [s for _, s, _ in want]
    # Never drops a base id, whatever its score; adds at most max_new graph-only ids.
    assert set(base[0]) <= {d for d, _, _ in got}
    assert sum(1 for _, _, src in got if src == fusion.SOURCE_GRAPH) <= max_new
    assert merged.sources.dtype == np.uint8


def test_additive_merge_seed_003_example() -> None:
    base = ([10, 11, 12], [0.9, 0.5, 0.01])
    graph = ([11, 20, 21, 22, 23, 24, 25], [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])
    got = fusion.additive_merge(base, graph).to_list()[0]
    assert got == [
        (10, 0.7 * 0.9 + 0.3 * 0.0, fusion.SOURCE_BASE),
        (11, 0.7 * 0.5 + 0.3 * 0.8, fusion.SOURCE_BOTH),
        (20, 0.7 * 0.0 + 0.3 * 0.7, fusion.SOURCE_GRAPH),
        (21, 0.7 * 0.0 + 0.3 * 0.6, fusion.SOURCE_GRAPH),
        (22, 0.7 * 0.0 + 0.3 * 0.5, fusion.SOURCE_GRAPH),
        (23, 0.7 * 0.0 + 0.3 * 0.4, fusion.SOURCE_GRAPH),
        (12, 0.7 * 0.01 + 0.3 * 0.0, fusion.SOURCE_BASE),  # kept although it ranks last
    ]


def test_additive_merge_batch() -> None:
    merged = fusion.additive_merge(
        [([1], [1.0]), {}, ([5], [0.2])],
        [([2], [1.0]), ([3, 4], [0.5, 0.6]), ([5], [0.4])],
        max_new=1,
        batch=True,
    )
    assert len(merged) == 3
    assert merged.to_list() == [
        [(1, 0.7, 0), (2, 0.3, 1)],
        [(4, 0.3 * 0.6, 1)],
        [(5, 0.7 * 0.2 + 0.3 * 0.4, 2)],
    ]
    assert merged[-1].to_list() == merged.to_list()[2:]


# ------------------------------------------------------------------------------------------
# Dedupe and top-k


@settings(PROPERTY, max_examples=examples(200))
@given(items=scored_list_st, k=st.integers(0, 15))
def test_dedupe_and_top_k_match_reference(items: tuple[list[int], list[float]], k: int) -> None:
    ids, scores = items
    same(pairs(fusion.dedupe_max(ids, scores)), fusion_ref.dedupe_max(ids, scores))
    got = pairs(fusion.top_k(ids, scores, k))
    want = fusion_ref.top_k(ids, scores, k)
    same(got, want)


def test_top_k_and_dedupe_batches() -> None:
    queries = [([3, 1, 3, 2], [0.1, 0.5, 0.7, 0.5]), ([5, 5], [1.0, 2.0])]
    assert fusion.dedupe_max(queries, batch=True).to_list() == [
        [(3, 0.7), (1, 0.5), (2, 0.5)],
        [(5, 2.0)],
    ]
    assert fusion.top_k(queries, k=2, batch=True).to_list() == [
        [(3, 0.7), (1, 0.5)],
        [(5, 2.0), (5, 1.0)],
    ]


def test_fused_container() -> None:
    batch = fusion.rrf([[[1, 2]], [[3]]], batch=True)
    assert len(batch) == 2
    assert [len(q.ids) for q in batch] == [2, 1]
    assert batch[-1].ids.tolist() == [3]
    assert np.shares_memory(batch[1].ids, batch.ids)  # per-query views, no copy
    with pytest.raises(IndexError, match="query 2 out of range"):
        batch[2]
    with pytest.raises(dataclass_error()):
        batch.ids = np.empty(0, dtype=np.int64)  # type: ignore[misc]


def dataclass_error() -> type[Exception]:
    import dataclasses

    return dataclasses.FrozenInstanceError


# ------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("k", [-1.0, math.nan, math.inf])
def test_rrf_rejects_bad_k(k: float) -> None:
    with pytest.raises(
        ParameterError, match=r"invalid parameter k: k = .* must be finite and >= 0"
    ):
        fusion.rrf([[1]], k=k)


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ([math.nan], r"weights\[0\] = NaN must be finite and >= 0"),
        ([-1.0], r"weights\[0\] = -1 must be finite and >= 0"),
        ([1.0, 2.0], r"2 weights given but query 0 has 1 lists"),
    ],
)
def test_fusion_rejects_bad_weights(weights: list[float], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        fusion.rrf([[1]], weights=weights)
    with pytest.raises(ParameterError, match=match):
        fusion.weighted([([1], [1.0])], weights=weights)


def test_fusion_rejects_bad_counts() -> None:
    with pytest.raises(ParameterError, match="top_k = -1 must be >= 0"):
        fusion.rrf([[1]], top_k=-1)
    with pytest.raises(TypeError, match="top_k must be an integer"):
        fusion.rrf([[1]], top_k=1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="k = -2 must be >= 0"):
        fusion.top_k([1], [1.0], -2)
    with pytest.raises(ParameterError, match="max_new = -1 must be >= 0"):
        fusion.additive_merge(([1], [1.0]), ([], []), max_new=-1)
    with pytest.raises(TypeError, match="k must be a real number"):
        fusion.rrf([[1]], k="60")  # type: ignore[arg-type]


def test_fusion_rejects_bad_ids() -> None:
    with pytest.raises(DataError, match=r"lists\[1\]\[0\] = 1.5 is not an integer"):
        fusion.rrf([[1], [1.5]])
    with pytest.raises(DataError, match=r"lists\[1\] must hold integers, got dtype float64"):
        fusion.rrf([[1], np.array([1.0])])
    with pytest.raises(
        DataError, match=r"queries\[0\]\[0\]\[1\] = 9223372036854775808 is out of range for int64"
    ):
        fusion.rrf([[[1, 2**63]]], batch=True)
    with pytest.raises(DataError, match=r"lists\[0\] must be one-dimensional, got shape \(\)"):
        fusion.rrf([5])
    with pytest.raises(DataError, match=r"must be one-dimensional, got shape \(1, 2\)"):
        fusion.rrf([[[1, 2]]])
    with pytest.raises(TypeError, match="lists must be a sequence"):
        fusion.rrf("123")


def test_fusion_rejects_bad_scores() -> None:
    with pytest.raises(DataError, match=r"lists\[1\] scores\[1\] = nan is not finite"):
        fusion.weighted([([1], [1.0]), ([1, 2], [0.5, math.nan])])
    with pytest.raises(DataError, match=r"graph scores\[0\] = inf is not finite"):
        fusion.additive_merge(([1], [1.0]), ([2], [math.inf]))
    with pytest.raises(DataError, match=r"ids has 2 entries but scores has 1"):
        fusion.top_k([1, 2], [1.0], 1)
    with pytest.raises(DataError, match=r"scores must hold real numbers, got dtype <U1"):
        fusion.dedupe_max([1], ["a"])
    with pytest.raises(ParameterError, match=r"lists\[0\] must be an \(ids, scores\) pair"):
        fusion.weighted([[1, 2, 3]])  # type: ignore[list-item]
    with pytest.raises(DataError, match="a range too wide to normalise"):
        fusion.weighted([([1, 2], [1e308, -1e308])], normalize=True)
    with pytest.raises(QueryError, match="query 0: the fused score of id 1 overflows to inf"):
        fusion.weighted([([1], [1e308]), ([1], [1e308])])


def test_additive_merge_rejects_bad_parameters() -> None:
    for name, kwargs in (("alpha", {"alpha": -0.1}), ("beta", {"beta": math.nan})):
        with pytest.raises(ParameterError, match=f"invalid parameter {name}"):
            fusion.additive_merge(([1], [1.0]), ([], []), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="base holds 2 queries but graph holds 1"):
        fusion.additive_merge([([1], [1.0]), ([], [])], [([], [])], batch=True)


def u(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uintp)


def test_core_validates_layout() -> None:
    ids = np.array([1, 2], dtype=np.int64)
    w = np.ones(2)
    decreasing = r"list_offsets: must never decrease, but list_offsets\[2\] = 1 < list_offsets\[1\]"
    with pytest.raises(ParameterError, match=decreasing):
        _core.rrf_fuse(ids, u([0, 2, 1]), u([0, 2]), w)
    with pytest.raises(
        ParameterError, match=r"list_offsets: must end at 2 \(the length it cuts\), got 1"
    ):
        _core.rrf_fuse(ids, u([0, 1]), u([0, 1]), w[:1])
    with pytest.raises(ParameterError, match="query_offsets: must start at 0"):
        _core.rrf_fuse(ids, u([0, 2]), u([1, 1]), w[:1])
    with pytest.raises(ParameterError, match="offsets: is empty"):
        _core.top_k(ids, np.ones(2), u([]), 1)
    with pytest.raises(DataError, match=r"lists\.weights has 1 rows, expected 2"):
        _core.rrf_fuse(ids, u([0, 1, 2]), u([0, 2]), w[:1])
    with pytest.raises(DataError, match=r"lists row 1: scores = NaN is not finite"):
        _core.weighted_fuse(ids, np.array([1.0, math.nan]), u([0, 2]), u([0, 1]), w[:1])
    with pytest.raises(DataError, match=r"queries\.graph_offsets has 3 rows, expected 2"):
        _core.additive_merge(ids, np.ones(2), u([0, 2]), ids[:0], np.ones(0), u([0, 0, 0]))
    with pytest.raises(ParameterError, match="ids: array must be C-contiguous"):
        _core.dedupe_max(np.arange(4, dtype=np.int64)[::2], np.ones(2), u([0, 2]))
    with pytest.raises(TypeError):
        _core.dedupe_max(np.array([1, 2], dtype=np.int32), np.ones(2), u([0, 2]))


def test_fused_family_conversions() -> None:
    batch = fusion.rrf([[[1, 2]], [], [[3]]], batch=True)
    assert batch.offsets.dtype == np.int64 and batch.offsets.tolist() == [0, 2, 2, 3]
    assert batch.n_queries == len(batch) == 3
    assert batch.to_records() == [
        {"query": 0, "rank": 0, "id": 1, "score": 1 / 61},
        {"query": 0, "rank": 1, "id": 2, "score": 1 / 62},
        {"query": 2, "rank": 0, "id": 3, "score": 1 / 61},
    ]
    assert batch.to_pandas().shape == (3, 4)
    assert batch.to_arrow().num_rows == 3
    with pytest.raises(IndexError, match="query 3 out of range for a batch of 3 queries"):
        batch[3]
    merged = fusion.additive_merge(([1], [1.0]), ([2], [1.0]))
    assert [r["source"] for r in merged.to_records()] == [0, 1]
    with pytest.raises(IndexError, match="query -2 out of range for a batch of 1 queries"):
        merged[-2]
