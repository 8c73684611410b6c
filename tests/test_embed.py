"""The Embedder protocol, the default offline model, the callable adapter, exact search."""

from __future__ import annotations

import numpy as np
import pytest
from graphrecall.embed import CallableEmbedder, E5Embedder, Embedder, EmbeddingError, exact_top_k
from graphrecall.errors import ParameterError
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


def test_default_model_is_offline_normalised_and_deterministic(e5: E5Embedder) -> None:
    assert isinstance(e5, Embedder)
    assert e5.dim == 384
    p = e5.embed_passages(["JACQ Project", "DuckDB", "Ned Stark"])
    q = e5.embed_queries(["What is JACQ?"])
    assert p.shape == (3, 384) and q.shape == (1, 384)
    assert p.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(q, e5.embed_queries(["What is JACQ?"]))
    assert int(np.argmax(p @ q[0])) == 0  # the question finds its entity
    assert e5.embed_queries([]).shape == (0, 384)


def test_texts_must_be_strings(e5: E5Embedder) -> None:
    with pytest.raises(ParameterError, match="item 1 is int"):
        e5.embed_passages(["a", 3])  # type: ignore[list-item]


def test_callable_adapter_checks_and_normalises() -> None:
    emb = CallableEmbedder(lambda texts: np.ones((len(texts), 4)) * 2.0, dim=4)
    out = emb.embed_queries(["a", "b"])
    np.testing.assert_allclose(out, 0.5)
    with pytest.raises(EmbeddingError, match="dimension 4, expected 5"):
        CallableEmbedder(lambda t: np.ones((len(t), 4)), dim=5).embed_queries(["a"])
    with pytest.raises(EmbeddingError, match="NaN or inf for text 1"):
        CallableEmbedder(lambda t: np.array([[1.0, 0], [np.nan, 0]]), dim=2).embed_passages(
            ["a", "b"]
        )
    with pytest.raises(EmbeddingError, match="zero vector for text 0"):
        CallableEmbedder(lambda t: np.zeros((1, 2)), dim=2).embed_queries(["a"])
    with pytest.raises(EmbeddingError, match=r"shape \(3, 2\) for 2 texts"):
        CallableEmbedder(lambda t: np.ones((3, 2)), dim=2).embed_queries(["a", "b"])
    with pytest.raises(ParameterError, match="dim"):
        CallableEmbedder(lambda t: t, dim=0)


@settings(deadline=None, max_examples=60, derandomize=True)
@given(
    n=st.integers(1, 40),
    k=st.integers(1, 45),
    seed=st.integers(0, 10_000),
    min_score=st.one_of(st.none(), st.floats(-1, 1)),
)
def test_exact_top_k_equals_a_full_sort_and_respects_the_mask(
    n: int, k: int, seed: int, min_score: float | None
) -> None:
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, 8)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    m[n // 2] = m[0]  # a tie
    q = m[rng.integers(0, n)]
    allowed = rng.random(n) < 0.6
    rows, scores = exact_top_k(m, q, k, min_score=min_score, allowed=allowed)
    all_scores = m @ q
    want = sorted(
        (i for i in range(n) if allowed[i] and (min_score is None or all_scores[i] >= min_score)),
        key=lambda i: (-all_scores[i], i),
    )[:k]
    assert rows.tolist() == want
    np.testing.assert_array_equal(scores, all_scores[want])
    assert all(allowed[r] for r in rows)  # another tenant's row never comes back


def test_exact_top_k_errors() -> None:
    m = np.eye(3, dtype=np.float32)
    with pytest.raises(ParameterError, match="k"):
        exact_top_k(m, m[0], 0)
    with pytest.raises(EmbeddingError, match="dimension 2"):
        exact_top_k(m, np.ones(2, dtype=np.float32), 1)


def test_long_passages_are_embedded_window_by_window() -> None:
    from graphrecall.embed import E5Embedder

    e = E5Embedder()
    text = " ".join(f"Sentence {i} is about topic {i % 7} and nothing else." for i in range(120))
    windows = e.windows(text)
    assert len(windows) >= 2
    assert " ".join(windows) == " ".join(text.split())  # nothing lost, nothing repeated
    assert all(e._model.token_count(w) <= 512 for w in windows)
    got = e.embed_passages([text])[0]
    parts = e.embed_passages(windows)
    weights = np.array([len(w) for w in windows], dtype=np.float32)
    mean = (parts * weights[:, None]).sum(axis=0)
    np.testing.assert_allclose(got, mean / np.linalg.norm(mean), atol=1e-5)
    assert e.windows("short") == ["short"]
