"""The paired recall gate's statistics (benches/eval_paired.py) on hand-made inputs with
known answers: the exact sign test, the seeded paired bootstrap, the per-row gate and the
noise of a given cosine."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
if str(BENCHES) not in sys.path:
    sys.path.insert(0, str(BENCHES))

import eval_paired as ep  # noqa: E402


def test_sign_test_known_values() -> None:
    assert ep.sign_test(0, 0) == 1.0
    assert ep.sign_test(3, 3) == 1.0
    assert ep.sign_test(1, 0) == 1.0
    assert ep.sign_test(5, 0) == pytest.approx(2 / 32)
    assert ep.sign_test(0, 6) == pytest.approx(2 / 64)
    # 1 of 10: 2 * (C(10,0) + C(10,1)) / 2^10
    assert ep.sign_test(1, 9) == pytest.approx(22 / 1024)
    assert ep.sign_test(9, 1) == ep.sign_test(1, 9)


@pytest.mark.parametrize("n", [1, 2, 7, 20, 41])
def test_sign_test_matches_scipy_binomial(n: int) -> None:
    for better in range(n + 1):
        want = binomtest(better, n, 0.5).pvalue
        assert ep.sign_test(better, n - better) == pytest.approx(want, rel=1e-12)


def test_bootstrap_degenerate_and_seeded() -> None:
    assert ep.bootstrap_interval([]) == (0.0, 0.0)
    assert ep.bootstrap_interval([0.0] * 50) == (0.0, 0.0)
    assert ep.bootstrap_interval([2.5] * 30) == pytest.approx((2.5, 2.5))
    d = np.random.default_rng(5).normal(size=80)
    assert ep.bootstrap_interval(d, seed=3) == ep.bootstrap_interval(d, seed=3)
    assert ep.bootstrap_interval(d, seed=3) != ep.bootstrap_interval(d, seed=4)


def test_bootstrap_one_half_question_in_a_hundred() -> None:
    # One question loses half its gold (-50 points), 99 unchanged: a resample holds that
    # question K ~ Binomial(100, 1/100) times; P(K = 0) = 0.37 so the top is 0, and the
    # 2.5 % quantile is K = 3 (P(K >= 4) = 0.019 < 0.025 < P(K >= 3) = 0.079): -1.5 points.
    d = np.zeros(100)
    d[17] = -50.0
    lo, hi = ep.bootstrap_interval(d, n_boot=20_000, seed=0)
    assert hi == 0.0
    assert lo == pytest.approx(-1.5)


def test_bootstrap_matches_the_normal_interval_of_a_proportion() -> None:
    # Half the questions gain one point: mean 0.5, standard error 0.5 / sqrt(400) = 0.025.
    d = np.array([1.0, 0.0] * 200)
    lo, hi = ep.bootstrap_interval(d, n_boot=20_000, seed=1)
    assert lo == pytest.approx(0.5 - 1.96 * 0.025, abs=0.01)
    assert hi == pytest.approx(0.5 + 1.96 * 0.025, abs=0.01)


def test_paired_counts_and_gates() -> None:
    s = ep.paired([1.0, 0.5, 0.0, 1.0], [1.0, 1.0, 0.0, 0.5])
    assert (s["better"], s["worse"], s["same"]) == (1, 1, 2)
    assert s["delta"] == 0.0 and s["R_a"] == s["R_b"] == 62.5
    assert s["p"] == 1.0 and s["band_ok"] and s["paired_ok"]

    # Every one of 10 questions gains a whole gold passage: a real change by both tests.
    s = ep.paired([0.0] * 10, [1.0] * 10)
    assert (s["better"], s["worse"], s["same"]) == (10, 0, 0)
    assert s["delta"] == 100.0 and (s["lo"], s["hi"]) == (100.0, 100.0)
    assert s["p"] == pytest.approx(2 / 1024)
    assert not s["band_ok"] and not s["paired_ok"]

    # One half-question of 100 lost: outside no band but past none of the paired tests.
    a = np.ones(100)
    b = a.copy()
    b[3] = 0.5
    s = ep.paired(a, b)
    assert s["delta"] == pytest.approx(-0.5) and s["band_ok"] and s["paired_ok"]
    b[4] = 0.5  # two half-questions: outside the band, still no paired change
    s = ep.paired(a, b)
    assert not s["band_ok"] and s["paired_ok"] and s["p"] == pytest.approx(0.5)


def test_paired_needs_the_same_questions() -> None:
    with pytest.raises(ValueError, match="shape"):
        ep.paired([1.0, 0.0], [1.0])


def test_perturb_reaches_the_cosine_and_is_seeded() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(2000, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for cos in (0.99995, 0.999):
        w = ep.perturb(v, cos, np.random.default_rng([1, 2]))
        assert w.dtype == np.float32
        assert np.allclose(np.linalg.norm(w, axis=1), 1.0, atol=1e-5)
        got = ep.cosine_summary(v, w)
        assert got["n"] == 2000
        assert 1 - got["mean"] == pytest.approx(1 - cos, rel=0.05)
        assert got["min"] <= got["p01"] <= got["mean"] < 1.0
        again = ep.perturb(v, cos, np.random.default_rng([1, 2]))
        assert np.array_equal(w, again)


def test_margin_from_the_cut_off() -> None:
    rank = [("a", 1.0), ("b", 0.8), ("c", 0.6), ("d", 0.5)]
    assert ep._margin(rank, "a", 2) == pytest.approx((1.0 - 0.6) / 1.0)
    assert ep._margin(rank, "d", 2) == pytest.approx((0.8 - 0.5) / 0.8)
    assert ep._margin(rank, "z", 2) == math.inf
    assert ep._margin(rank, "a", 4) == math.inf  # nothing ranked below the cut-off
