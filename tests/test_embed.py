"""The Embedder protocol, the default offline model, the callable adapter, exact search."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PROPERTY, examples
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


@settings(PROPERTY, max_examples=examples(60))
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


def test_wordllama_is_offline_normalised_and_guards_empty_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket
    import threading

    from graphrecall.embed import WordLlamaEmbedder

    connect = socket.socket.connect
    me = threading.get_ident()

    def no_network(sock: socket.socket, *args: object) -> None:
        # Only this test's thread is refused: a background thread left by another test
        # (a client pool, a cluster) must connect as usual, or its socket leaks.
        if threading.get_ident() == me:
            raise AssertionError("WordLlamaEmbedder tried to reach the network")
        connect(sock, *args)

    monkeypatch.setattr(socket.socket, "connect", no_network)
    emb = WordLlamaEmbedder()
    assert isinstance(emb, Embedder) and emb.dim == 256
    p = emb.embed_passages(["JACQ Project", "DuckDB database", "Ned Stark of Winterfell"])
    q = emb.embed_queries(["Which database does JACQ use? DuckDB"])
    assert p.shape == (3, 256) and q.shape == (1, 256) and p.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    assert int(np.argmax(p @ q[0])) == 1
    np.testing.assert_array_equal(q, emb.embed_queries(["Which database does JACQ use? DuckDB"]))
    # Matryoshka truncation: the first 64 dimensions, renormalised.
    small = WordLlamaEmbedder(dim=64).embed_passages(["JACQ Project"])
    assert small.shape == (1, 64)
    np.testing.assert_allclose(np.linalg.norm(small, axis=1), 1.0, atol=1e-5)
    # WordLlama itself gives NaN for a text without tokens: here it is a clear error.
    with pytest.raises(EmbeddingError, match="wordllama query: text 1 is empty"):
        emb.embed_queries(["fine", "   "])
    with pytest.raises(ParameterError, match="dim: 100"):
        WordLlamaEmbedder(dim=100)
    assert emb.embed_passages([]).shape == (0, 256)


class _FakeSentenceTransformer:
    """What graphrecall uses of a sentence-transformers model: encode + its dimension."""

    def __init__(self, dim: int = 8, broken: bool = False):
        self.dim, self.broken, self.calls = dim, broken, []

    def get_sentence_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: list[str], **kwargs: object) -> np.ndarray:
        self.calls.append((list(texts), dict(kwargs)))
        out = np.array(
            [[(sum(map(ord, t)) * (j + 1)) % 7 + 1.0 for j in range(self.dim)] for t in texts]
        )
        if self.broken:
            out[-1, 0] = np.nan
        return out


def test_sentence_transformer_adapter_prefixes_batches_and_checks() -> None:
    from graphrecall.embed import SentenceTransformerEmbedder

    model = _FakeSentenceTransformer()
    emb = SentenceTransformerEmbedder(
        model, query_prefix="query: ", passage_prefix="passage: ", batch_size=16
    )
    assert isinstance(emb, Embedder) and emb.dim == 8
    q = emb.embed_queries(["a", "b"])
    p = emb.embed_passages(["c"])
    assert q.shape == (2, 8) and p.shape == (1, 8)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)
    (qt, qkw), (pt, _) = model.calls
    assert qt == ["query: a", "query: b"] and pt == ["passage: c"]
    assert qkw["normalize_embeddings"] is True and qkw["batch_size"] == 16
    with pytest.raises(EmbeddingError, match="NaN or inf for text 1"):
        SentenceTransformerEmbedder(_FakeSentenceTransformer(broken=True)).embed_queries(["x", "y"])
    with pytest.raises(EmbeddingError, match="dimension 8, expected 4"):
        SentenceTransformerEmbedder(_FakeSentenceTransformer(), dim=4).embed_queries(["x"])
    with pytest.raises(ParameterError, match="has no encode"):
        SentenceTransformerEmbedder(object())
    with pytest.raises(ParameterError, match="batch_size"):
        SentenceTransformerEmbedder(model, batch_size=0)


def test_wordllama_drives_a_recipe_and_its_fallback() -> None:
    from graphrecall import GraphRAG, GraphTables, WordLlamaEmbedder

    tables = GraphTables(
        entities={"id": ["user", "jacq", "duckdb"], "name": ["User", "JACQ Project", "DuckDB"]},
        facts={
            "id": [1, 2],
            "subject": ["user", "jacq"],
            "object": ["jacq", "duckdb"],
            "predicate": ["works_on", "uses"],
            "confidence": [0.97, 0.92],
        },
    )
    rag = GraphRAG.from_tables(tables, embedder=WordLlamaEmbedder())
    res = rag.retrieve("What does the JACQ Project use?", recipe="spreading_activation", now=0)
    assert res.anchors[0].id == "jacq" and res.fallback is None
    assert "- uses: DuckDB" in rag.context(res).text
    # An empty query cannot be embedded: seed 000 falls back to keyword search on names.
    empty = rag.retrieve("", recipe="spreading_activation", now=0)
    assert empty.fallback is not None and "text 0 is empty" in empty.fallback


def test_embedders_bring_their_tokenizers_to_context_budgets() -> None:
    from graphrecall import GraphRAG, GraphTables, WordLlamaEmbedder
    from graphrecall.context import whitespace_tokens
    from graphrecall.embed import SentenceTransformerEmbedder

    wl = WordLlamaEmbedder()
    count = wl.token_counter()
    assert count("") == 0
    assert count("Hello world, JACQ uses DuckDB.") == len(
        wl._model.tokenizer.encode("Hello world, JACQ uses DuckDB.", add_special_tokens=False).ids
    )
    tables = GraphTables(entities={"id": ["a"], "name": ["Alpha"]}, facts={"id": [], "subject": []})
    assert GraphRAG.from_tables(tables, embedder=wl).token_counter() is not whitespace_tokens

    class Tokenized(_FakeSentenceTransformer):
        def tokenizer(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
            assert add_special_tokens is False
            return {"input_ids": list(range(len(text.split()) * 2))}

    st = SentenceTransformerEmbedder(Tokenized())
    counter = st.token_counter()
    assert counter is not None and counter("two words") == 4 and counter("") == 0
    assert SentenceTransformerEmbedder(_FakeSentenceTransformer()).token_counter() is None
    plain = CallableEmbedder(lambda t: np.ones((len(t), 4)), dim=4)
    assert GraphRAG.from_tables(tables, embedder=plain).token_counter() is whitespace_tokens


def test_a_long_query_is_cut_to_the_first_window(
    e5: E5Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """A query longer than the model's window is embedded as its first window, with a
    warning; a huge one is never tokenised whole."""
    sentence = "Marie Curie discovered polonium and radium in Paris with Pierre Curie. "
    long = sentence * 200  # ~14k characters, far over 512 tokens
    first = e5.windows(long)[0]
    assert len(first) < len(long)
    with caplog.at_level("WARNING", logger="graphrecall"):
        got = e5.embed_queries([long, "short question"])
    assert "more tokens than the model's window" in caplog.text
    want = e5.embed_queries([first, "short question"])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    huge = sentence * 2_000  # 140k characters: only its head is read
    np.testing.assert_allclose(e5.embed_queries([huge]), want[:1], rtol=0, atol=1e-6)
