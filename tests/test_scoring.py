"""graphrecall.scoring against the pure-Python reference, the sources' examples and every error."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from conftest import PROPERTY, examples
from graphrecall import _core, scoring
from graphrecall.errors import DataError, ParameterError
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import scoring_ref

NOW = 1_700_000_000
WEEK = 604_800
DAY = 86_400
I64 = (-(2**63) + 1, 2**63 - 1)


def bits(values: list[float]) -> bytes:
    return np.asarray(values, dtype=np.float64).tobytes()


# ------------------------------------------------------------------------------------------
# Seed 000: scoreFact


weights_st = st.floats(min_value=0.0, max_value=5.0)
fact_profile_st = st.one_of(
    st.just(scoring.FactScoreProfile()),
    st.builds(
        scoring.FactScoreProfile,
        source_weights=st.lists(weights_st, max_size=6).map(tuple),
        default_source_weight=weights_st,
        status_weights=st.lists(weights_st, max_size=6).map(tuple),
        default_status_weight=weights_st,
        decay_base=st.floats(min_value=1e-3, max_value=1.0),
        grace_weeks=st.floats(min_value=0.0, max_value=10.0),
        usage_log_factor=st.floats(min_value=0.0, max_value=3.0),
    ),
)
time_st = st.one_of(
    st.none(),
    st.just(scoring.NULL_TIME),
    st.integers(NOW - 10**9, NOW + 10**7),
    st.integers(*I64),
)
fact_st = st.tuples(
    st.floats(min_value=-10.0, max_value=10.0, width=32),
    st.integers(0, 6),
    st.integers(0, 6),
    time_st,
    st.integers(0, 2**32 - 1),
)


@settings(PROPERTY, max_examples=examples(200))
@given(
    facts=st.lists(fact_st, max_size=20),
    now=st.one_of(st.just(NOW), st.integers(*I64)),
    profile=fact_profile_st,
)
def test_score_facts_is_bit_identical_to_reference(
    facts: list[tuple[float, int, int, int | None, int]],
    now: int,
    profile: scoring.FactScoreProfile,
) -> None:
    conf = [f[0] for f in facts]
    got = scoring.score_facts(
        conf,
        [f[1] for f in facts],
        [f[2] for f in facts],
        [f[3] for f in facts],
        [f[4] for f in facts],
        now=now,
        profile=profile,
    )
    want = [
        scoring_ref.score_fact(
            float(np.float32(c)),
            s,
            st_,
            t,
            ac,
            now,
            source_weights=profile.source_weights,
            default_source_weight=profile.default_source_weight,
            status_weights=profile.status_weights,
            default_status_weight=profile.default_status_weight,
            decay_base=profile.decay_base,
            grace_weeks=profile.grace_weeks,
            usage_log_factor=profile.usage_log_factor,
        )
        for c, s, st_, t, ac in facts
    ]
    assert got.dtype == np.float64 and got.shape == (len(facts),)
    assert got.tobytes() == bits(want)


def test_score_fact_seed_000_example() -> None:
    # user_edit (2.0), confirmed (1.2), 9 accesses (1 + log10(10) * 0.5 = 1.5), three weeks old
    # (two weeks past the grace period: 0.95 ** 2).
    got = scoring.score_fact(0.5, "user_edit", "confirmed", NOW - 3 * WEEK, 9, now=NOW)
    assert math.isclose(got, 0.5 * 2.0 * 0.9025 * 1.5 * 1.2, rel_tol=1e-12)
    assert got == scoring_ref.score_fact(0.5, 0, 1, NOW - 3 * WEEK, 9, NOW)
    # Within the grace period, unknown age, or accessed in the future: no decay.
    assert scoring.score_fact(1.0, "file", "staged", NOW - WEEK, 0, now=NOW) == 1.5
    assert scoring.score_fact(1.0, "system", "rejected", None, 0, now=NOW) == 1.2
    assert scoring.score_fact(1.0, "conversation", "archived", NOW + WEEK, 0, now=NOW) == 1.0
    # Unknown numeric codes take the default weights.
    assert scoring.score_fact(1.0, 200, 9, None, 0, now=NOW) == 1.0


def test_score_facts_accepts_names_scalars_and_times() -> None:
    mixed: list[int | str] = ["user_edit", 1]
    a = scoring.score_facts(
        np.array([0.9, 0.4]),
        mixed,
        "confirmed",
        [None, NOW - 5 * WEEK],
        np.array([3, 0], dtype=np.int64),
        now=NOW,
    )
    b = scoring.score_facts(
        [0.9, 0.4], [0, 1], [1, 1], [scoring.NULL_TIME, NOW - 5 * WEEK], [3, 0], now=NOW
    )
    assert a.tobytes() == b.tobytes()
    stamps = np.array(["NaT", "2023-10-01T00:00:00"], dtype="datetime64[s]")
    c = scoring.score_facts(
        [0.9, 0.4], [0, 1], [1, 1], stamps, [3, 0], now=np.datetime64("2023-11-14T22:13:20")
    )
    aware = dt.datetime(2023, 10, 1, tzinfo=dt.timezone.utc)
    d = scoring.score_facts(
        [0.9, 0.4],
        [0, 1],
        [1, 1],
        [None, aware],
        [3, 0],
        now=dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc),
    )
    e = scoring.score_facts(
        [0.9, 0.4], [0, 1], [1, 1], [None, int(aware.timestamp())], [3, 0], now=NOW
    )
    assert c.tobytes() == d.tobytes() == e.tobytes()
    assert scoring.score_facts([], [], [], None, [], now=NOW).shape == (0,)


def test_score_facts_errors() -> None:
    with pytest.raises(DataError, match=r"facts row 1: confidence = NaN is not finite"):
        scoring.score_facts([0.1, math.nan], 0, 0, None, 0, now=NOW)
    with pytest.raises(DataError, match=r"confidence\[0\] = 1e\+39 is out of range for float32"):
        scoring.score_facts([1e39], 0, 0, None, 0, now=NOW)
    with pytest.raises(DataError, match=r"facts.source has 2 rows, expected 3"):
        scoring.score_facts([0.1, 0.2, 0.3], [0, 1], 0, None, 0, now=NOW)
    with pytest.raises(DataError, match=r"source\[1\] = 'wiki' is not a known source"):
        scoring.score_facts([0.1, 0.2], ["file", "wiki"], 0, None, 0, now=NOW)
    with pytest.raises(DataError, match=r"status\[0\] = 256 is out of range for uint8"):
        scoring.score_facts([0.1], 0, [256], None, 0, now=NOW)
    with pytest.raises(DataError, match=r"access_count\[0\] = -1 is out of range for uint32"):
        scoring.score_facts([0.1], 0, 0, None, [-1], now=NOW)
    with pytest.raises(DataError, match=r"access_count\[0\] = 1.5 is not an integer"):
        scoring.score_facts([0.1], 0, 0, None, [1.5], now=NOW)
    with pytest.raises(DataError, match=r"last_accessed\[0\] = .* is a naive datetime"):
        scoring.score_facts([0.1], 0, 0, [dt.datetime(2024, 1, 1)], 0, now=NOW)
    with pytest.raises(ParameterError, match="now: a naive datetime is ambiguous"):
        scoring.score_facts([0.1], 0, 0, None, 0, now=dt.datetime(2024, 1, 1))
    with pytest.raises(TypeError, match="now must be a time in integer seconds, got float"):
        scoring.score_facts([0.1], 0, 0, None, 0, now=1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("profile", "match"),
    [
        (scoring.FactScoreProfile(decay_base=0.0), r"decay_base = 0 must be in \(0, 1\]"),
        (scoring.FactScoreProfile(decay_base=1.5), r"decay_base = 1.5 must be in \(0, 1\]"),
        (
            scoring.FactScoreProfile(source_weights=(1.0, -2.0)),
            r"source_weights\[1\] = -2 must be finite and >= 0",
        ),
        (
            scoring.FactScoreProfile(status_weights=(math.nan,)),
            r"status_weights\[0\] = NaN must be finite",
        ),
        (
            scoring.FactScoreProfile(default_source_weight=math.inf),
            "default_source_weight = inf must be finite",
        ),
        (scoring.FactScoreProfile(grace_weeks=-1.0), "grace_weeks = -1 must be finite and >= 0"),
        (
            scoring.FactScoreProfile(usage_log_factor=math.nan),
            "usage_log_factor = NaN must be finite",
        ),
    ],
)
def test_fact_profile_errors(profile: scoring.FactScoreProfile, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        scoring.score_facts([0.5], 0, 0, None, 0, now=NOW, profile=profile)


# ------------------------------------------------------------------------------------------
# Seed 001


def test_indirect_boost_seed_001_example() -> None:
    # "Tywin Lannister (distance=2, strength=0.9): boost = 0.1 * (1/2) * 0.9 = 0.045".
    boost = scoring.indirect_boost(2, 0.9)
    assert boost == scoring_ref.indirect_boost(0.1, 2, 0.9)
    assert math.isclose(boost, 0.045, rel_tol=1e-12)
    assert math.isclose(0.55 + boost, 0.595, rel_tol=1e-12)
    no_strength = scoring.MentionBoostProfile(use_strength=False)
    assert scoring.indirect_boost(2, 0.9, profile=no_strength) == 0.05
    with pytest.raises(ParameterError, match="distance = 0 must be >= 1"):
        scoring.indirect_boost(0, 0.9)
    with pytest.raises(ParameterError, match="strength = nan is not finite"):
        scoring.indirect_boost(1, math.nan)


# ------------------------------------------------------------------------------------------
# Seed 003: graph proximity


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


@settings(PROPERTY, max_examples=examples(200))
@given(
    rows=st.lists(
        st.tuples(
            st.floats(min_value=-100.0, max_value=100.0),
            st.integers(1, 40),
            st.integers(0, 2**32 - 1),
        ),
        max_size=20,
    ),
    profile=proximity_profile_st,
)
def test_graph_proximity_matches_reference(
    rows: list[tuple[float, int, int]], profile: scoring.GraphProximityProfile
) -> None:
    got = scoring.graph_proximity(
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], profile=profile
    )
    want = [
        scoring_ref.graph_proximity(
            w,
            h,
            m,
            weight_scale=profile.weight_scale,
            hop_base=profile.hop_base,
            mention_floor=profile.mention_floor,
            mention_log_divisor=profile.mention_log_divisor,
        )
        for w, h, m in rows
    ]
    assert got.tobytes() == bits(want)
    if profile == scoring.GraphProximityProfile():
        # The source writes 0.7 + 0.3 * boost; (1 - 0.7) differs from 0.3 in the last bit.
        literal = [scoring_ref.compute_graph_score(w, h, m) for w, h, m in rows]
        for g, ref in zip(got.tolist(), literal, strict=True):
            assert math.isclose(g, ref, rel_tol=1e-12, abs_tol=1e-300)


def test_graph_proximity_seed_003_example() -> None:
    # weight 8, one hop, 3 mentions: 0.8 * 1 * (0.7 + 0.3 * min(log2(4) / 5, 1)) = 0.656.
    got = scoring.graph_proximity([8.0, 8.0, 8.0, 10.0, 5.0], [1, 2, 3, 1, 1], [3, 3, 3, 31, 0])
    want = [0.656, 0.328, 0.164, 1.0, 0.35]
    for g, w in zip(got.tolist(), want, strict=True):
        assert math.isclose(g, w, rel_tol=1e-12)
    assert math.isclose(scoring_ref.compute_graph_score(8, 1, 3), 0.656, rel_tol=1e-12)


def test_graph_proximity_errors() -> None:
    with pytest.raises(DataError, match=r"chunks row 1: hop = 0 is below 1"):
        scoring.graph_proximity([8.0, 5.0], [1, 0], [3, 0])
    with pytest.raises(DataError, match=r"chunks row 0: weight = NaN is not finite"):
        scoring.graph_proximity([math.nan], 1, 3)
    with pytest.raises(DataError, match=r"chunks.mention_count has 1 rows, expected 2"):
        scoring.graph_proximity([1.0, 2.0], [1, 1], [3])
    for profile, name in (
        (scoring.GraphProximityProfile(mention_floor=1.1), "mention_floor"),
        (scoring.GraphProximityProfile(weight_scale=0.0), "weight_scale"),
        (scoring.GraphProximityProfile(hop_base=-2.0), "hop_base"),
        (scoring.GraphProximityProfile(mention_log_divisor=math.inf), "mention_log_divisor"),
    ):
        with pytest.raises(ParameterError, match=f"invalid parameter {name}"):
            scoring.graph_proximity([1.0], 1, 1, profile=profile)


# ------------------------------------------------------------------------------------------
# Seed 004: composite


@settings(PROPERTY, max_examples=examples(200))
@given(
    rows=st.lists(
        st.tuples(
            st.floats(min_value=-10.0, max_value=10.0),
            st.integers(0, 2**32 - 1),
            st.floats(min_value=-10.0, max_value=10.0),
        ),
        max_size=20,
    )
)
def test_composite_is_bit_identical_to_reference(rows: list[tuple[float, int, float]]) -> None:
    got = scoring.composite_scores([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    assert got.tobytes() == bits([scoring_ref.composite_score(*r) for r in rows])


def test_composite_seed_004_example_and_errors() -> None:
    got = scoring.composite_scores([0.9, 0.9, 1.0], [1, 0, 3], 0.8)
    assert math.isclose(got[0], 0.36, rel_tol=1e-12)
    assert got[1] == 0.9 * 1.0 * 0.8
    assert got[2] == 0.2
    with pytest.raises(DataError, match=r"facts row 1: confidence = NaN is not finite"):
        scoring.composite_scores([0.9, 1.0], [1, 3], [0.8, math.nan])
    with pytest.raises(DataError, match=r"facts row 0: match_score = inf is not finite"):
        scoring.composite_scores([math.inf], [1], [0.8])
    with pytest.raises(DataError, match=r"facts.hop has 2 rows, expected 1"):
        scoring.composite_scores([0.9], [1, 3], [0.8])
    with pytest.raises(DataError, match=r"hop\[0\] = -1 is out of range for uint32"):
        scoring.composite_scores([0.9], [-1], [0.8])


# ------------------------------------------------------------------------------------------
# Seed 002: rerank_memories


memory_st = st.tuples(
    # Python raises OverflowError for 0.95 ** -n past about -13800 days (the core gives inf).
    st.one_of(st.none(), st.integers(NOW - 10**8, NOW + 10**6)),
    st.one_of(st.none(), st.floats(min_value=-1.0, max_value=2.0)),
    st.floats(min_value=0.0, max_value=1.0),
)
rerank_profile_st = st.one_of(
    st.just(scoring.RerankProfile()),
    st.builds(
        scoring.RerankProfile,
        w_similarity=st.sampled_from([0.5, 0.0, 1.0]),
        w_recency=st.sampled_from([0.3, 0.0]),
        w_confidence=st.sampled_from([0.15, 0.0, 1.0]),
        w_access=st.sampled_from([0.05, 0.0]),
        recency_base=st.sampled_from([0.95, 0.5, 1.0]),
        day_seconds=st.sampled_from([86_400, 3_600]),
    ),
)


@settings(PROPERTY, max_examples=examples(150))
@given(
    queries=st.lists(st.lists(memory_st, max_size=12), max_size=4),
    use_access=st.booleans(),
    profile=rerank_profile_st,
)
def test_rerank_is_bit_identical_to_reference(
    queries: list[list[tuple[int | None, float | None, float]]],
    use_access: bool,
    profile: scoring.RerankProfile,
) -> None:
    batch = scoring.rerank_memories_batch(
        [[m[0] for m in q] for q in queries],
        now=NOW,
        confidence=[[m[1] for m in q] for q in queries],
        access_score=[[m[2] for m in q] for q in queries] if use_access else None,
        profile=profile,
    )
    assert len(batch) == len(queries)
    for q, memories in enumerate(queries):
        want_scores, want_order = scoring_ref.rerank_memories(
            [m[0] for m in memories],
            NOW,
            [m[1] for m in memories],
            [m[2] for m in memories] if use_access else None,
            w_similarity=profile.w_similarity,
            w_recency=profile.w_recency,
            w_confidence=profile.w_confidence,
            w_access=profile.w_access,
            recency_base=profile.recency_base,
            day_seconds=profile.day_seconds,
        )
        one = batch[q]
        assert one.scores.tobytes() == bits(want_scores)
        assert one.order.tolist() == want_order
        a, b = int(batch.offsets[q]), int(batch.offsets[q + 1])
        assert (batch.order[a:b] - a).tolist() == want_order  # global row indices


def test_rerank_seed_002_example() -> None:
    # Three memories in vector-rank order: ten days old, fresh, unknown age.
    r = scoring.rerank_memories([NOW - 10 * DAY, NOW, None], now=NOW)
    s0 = 0.5 * 1.0 + 0.3 * 0.95**10 + 0.15 * 1.0 + 0.05 * 1.0
    s1 = 0.5 * 0.5 + 0.3 * 1.0 + 0.15 * 1.0 + 0.05 * 1.0
    s2 = 0.5 * (1.0 / 3) + 0.3 * 1.0 + 0.15 * 1.0 + 0.05 * 1.0
    assert r.scores.tolist() == [s0, s1, s2]
    assert r.order.tolist() == [0, 1, 2]
    assert r.ranked_scores.tolist() == [s0, s1, s2]
    # timedelta.days floors: 36 hours old is 1 day, 36 hours in the future is -2 days.
    r = scoring.rerank_memories([NOW - DAY - DAY // 2, NOW + DAY + DAY // 2], now=NOW)
    assert r.scores[0] == 0.5 + 0.3 * 0.95 + 0.15 + 0.05
    assert r.scores[1] == 0.5 * 0.5 + 0.3 * 0.95**-2 + 0.15 + 0.05
    # A low-confidence first hit falls below the second; ties keep input order.
    r = scoring.rerank_memories([None, None], now=NOW, confidence=[-5.0, None])
    assert r.order.tolist() == [1, 0]
    flat = scoring.RerankProfile(w_similarity=0.0)
    r = scoring.rerank_memories([None, None, None], now=NOW, profile=flat)
    assert r.order.tolist() == [0, 1, 2]
    stamps = np.array([NOW - 3 * DAY, "NaT"], dtype="datetime64[s]")
    assert (
        scoring.rerank_memories(stamps, now=NOW).scores.tolist()
        == scoring.rerank_memories([NOW - 3 * DAY, None], now=NOW).scores.tolist()
    )


def test_rerank_errors() -> None:
    with pytest.raises(DataError, match=r"memories row 1: confidence = NaN is not finite"):
        scoring.rerank_memories([NOW, NOW], now=NOW, confidence=[0.5, math.nan])
    with pytest.raises(DataError, match=r"access_score has 1 entries but created_at has 2"):
        scoring.rerank_memories([NOW, NOW], now=NOW, access_score=[0.5])
    with pytest.raises(DataError, match=r"created_at\[1\] must be a sequence of times"):
        scoring.rerank_memories_batch([[NOW], None], now=NOW)  # type: ignore[list-item]
    with pytest.raises(ParameterError, match=r"confidence: 1 entries but created_at holds 2"):
        scoring.rerank_memories_batch([[NOW], [NOW]], now=NOW, confidence=[None])
    with pytest.raises(ParameterError, match="day_seconds = 0 must be > 0"):
        scoring.rerank_memories([NOW], now=NOW, profile=scoring.RerankProfile(day_seconds=0))
    with pytest.raises(ParameterError, match="recency_base = -1 must be finite and > 0"):
        scoring.rerank_memories([NOW], now=NOW, profile=scoring.RerankProfile(recency_base=-1.0))
    with pytest.raises(ParameterError, match="w_access = NaN must be finite and >= 0"):
        scoring.rerank_memories([NOW], now=NOW, profile=scoring.RerankProfile(w_access=math.nan))
    u = np.array([0, 2, 1], dtype=np.uintp)
    with pytest.raises(ParameterError, match="query_offsets: must never decrease"):
        _core.rerank_memories(u, None, None, None, NOW)
    with pytest.raises(DataError, match=r"memories\.created_at has 1 rows, expected 2"):
        _core.rerank_memories(u[:2], np.array([NOW]), None, None, NOW)
