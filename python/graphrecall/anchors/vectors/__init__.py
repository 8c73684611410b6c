"""Vector anchors: cosine top-k over entity or chunk embeddings, one sub-index per tenant.

:class:`VectorIndex` holds L2-normalised float32 vectors (as :mod:`graphrecall.embed` makes
them), each with a tenant code, and answers batched cosine top-k queries for one tenant.

* **Tenant isolation by construction.** Each tenant's rows form their own sub-index, so a
  query for tenant T returns only T's rows at any ``k`` and on any backend. Results are
  global rows (positions of ``vectors``).
* **Three backends per tenant.** ``"exact"``: float32 dot products in Rust
  (``graphrecall._core.exact_search``), best first, ties by row. ``"sketch"``
  (``graphrecall._core.sketch_search``): sign bits of the vector minus its tenant's mean,
  a Hamming scan, the ``rerank`` nearest re-scored with 4-bit rows, the ``refine`` best of
  those re-scored exactly (with ``rerank >= rows`` it is the exact top k). ``"hnsw"``: a
  usearch HNSW graph (``metric="cos"``, ``dtype`` f16 or f32). ``backend="auto"`` gives
  tenants below ``exact_below`` rows the exact search, below ``sketch_below`` the sketch,
  larger ones HNSW. Defaults: ``rerank = max(1024, 32 k, rows / 10)``, ``refine =
  max(48, 4 k)``; the measurements behind them are in ``benches/results/vectors-notes.md``.
* **Scores** are cosine similarities as float32 (on HNSW, ``1 - distance`` in usearch's
  scalar kind), best first, ties by row. Padding: ``rows`` -1, ``scores`` NaN.
  ``min_score`` filters the top ``k`` found.
* **Known tenants** are the codes in ``tenants``, or ``0..n_tenants-1`` when ``n_tenants``
  is given (a known tenant without rows gives empty results); any other code raises
  :class:`~graphrecall.errors.UnknownTenantError`. ``tenant=None`` names the only known
  tenant and is an error when there are several.
* **Threads.** ``threads`` (default 1) is what one HNSW search may use; a batch of exact
  queries, or of 8 sketch queries or more, runs in parallel in Rust (a smaller sketch batch
  runs on the calling thread: cheaper than waking the pool). HNSW building uses
  ``build_threads`` (0: all cores). See :func:`graphrecall.set_threads` for the OpenMP runtime.

The package holds one concern per module: :mod:`.common` (defaults, the result class,
argument checks), :mod:`.backends` (exact, sketch and HNSW search), :mod:`.index` (the
per-tenant index) and :mod:`.persist` (the saved bundle layout and its checks).
"""

from .common import (
    EXACT_BELOW,
    MAX_K,
    MAX_N_TENANTS,
    REFINE_FLOOR,
    REFINE_PER_K,
    RERANK_FLOOR,
    RERANK_PER_K,
    RERANK_SHARE,
    SKETCH_BELOW,
    VectorMatches,
    default_rerank,
)
from .index import VectorIndex
from .persist import FORMAT_VERSION, MAGIC

__all__ = [
    "EXACT_BELOW",
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_K",
    "MAX_N_TENANTS",
    "REFINE_FLOOR",
    "REFINE_PER_K",
    "RERANK_FLOOR",
    "RERANK_PER_K",
    "RERANK_SHARE",
    "SKETCH_BELOW",
    "VectorIndex",
    "VectorMatches",
    "default_rerank",
]
