"""The baselines as recipes: ``vector``, ``bm25`` and ``hybrid`` (dense + BM25, no graph).

They run through the same registry, typed parameters, tenants and result family as the graph
recipes, so comparing a graph recipe with its baselines is one loop over recipe names
(:func:`graphrecall.evaluate.compare`).

* ``vector``: the tenant's top ``k`` chunks by cosine to the query vector.
* ``bm25``: the tenant's top ``k`` chunks by BM25 over their text (``keyword_mode`` "or":
  any query token; "and": every one).
* ``hybrid``: Reciprocal Rank Fusion (``1 / (rrf_k + rank)``, rank from 1) of the top
  ``candidates`` by cosine and the top ``candidates`` by BM25, best ``k`` first.

What each does without its inputs (never an unexplained empty result):

* no chunk vectors in the index: ``vector`` raises :class:`~graphrecall.errors.ParameterError`;
  ``hybrid`` ranks by BM25 alone and says so in ``result.fallback``;
* no query vectors (no embedder, or embedding failed): ``vector`` and ``hybrid`` rank by
  BM25 when the index has it (``result.fallback`` says why, and a warning is logged), else
  raise;
* no BM25 index: ``bm25`` raises; ``hybrid`` ranks by cosine alone (``result.fallback``).

Example:
    >>> from graphrecall.recipes import get_recipe
    >>> get_recipe("hybrid").params().rrf_k
    60.0
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from .anchoring import chunk_search, embed_batch
from .base import RetrievalResult, check_count, check_real, chunk_hits
from .registry import FunctionRecipe
from .stages import Batch, begin, resolve_params

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..router import Router
    from .overrides import BM25Overrides, HybridOverrides, VectorOverrides

__all__ = [
    "BM25",
    "BM25_RECIPE",
    "HYBRID_RECIPE",
    "VECTOR_RECIPE",
    "Hybrid",
    "Vector",
    "bm25",
    "hybrid",
    "vector",
]

log = logging.getLogger("graphrecall")

_Ranked = list[tuple[npt.NDArray[np.int64], npt.NDArray[Any]]]


@dataclass(frozen=True)
class Vector:
    """Parameters of the ``vector`` baseline.

    Attributes:
        k: Chunks returned.
    """

    recipe: ClassVar[str] = "vector"

    k: int = 10


@dataclass(frozen=True)
class BM25:
    """Parameters of the ``bm25`` baseline.

    Attributes:
        k: Chunks returned.
        keyword_mode: "or" (chunks holding any query token) or "and" (every token).
    """

    recipe: ClassVar[str] = "bm25"

    k: int = 10
    keyword_mode: Literal["or", "and"] = "or"


@dataclass(frozen=True)
class Hybrid:
    """Parameters of the ``hybrid`` baseline (dense + BM25 by RRF, no graph).

    Attributes:
        k: Chunks returned.
        candidates: Chunks taken from each ranking before fusion.
        rrf_k: RRF's constant (60, as Cormack et al.).
        keyword_mode: BM25's "or" / "and".
    """

    recipe: ClassVar[str] = "hybrid"

    k: int = 10
    candidates: int = 50
    rrf_k: float = 60.0
    keyword_mode: Literal["or", "and"] = "or"


def _mode(value: object) -> Literal["or", "and"]:
    if value == "or":
        return "or"
    if value == "and":
        return "and"
    raise ParameterError(f"invalid parameter keyword_mode: {value!r} (give 'or' or 'and')")


def _keyword(index: GraphIndex, batch: Batch, k: int, mode: Literal["or", "and"]) -> _Ranked:
    """The batch's top ``k`` chunks by BM25 (the index's keyword index must exist)."""
    kw = index.chunk_keywords
    if kw is None:
        raise ParameterError(f"recipe {batch.recipe} needs a BM25 index over the chunks")
    if not bool((index.chunk_tenant == batch.tenant).any()):
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        return [empty for _ in batch.queries]
    with batch.timer.stage("keyword"):
        return kw.search_many(batch.queries, k, tenant=batch.tenant, mode=mode)


def _dense(
    index: GraphIndex, batch: Batch, k: int, query_vectors: npt.ArrayLike | None
) -> tuple[_Ranked | None, str | None]:
    """The batch's top ``k`` chunks by cosine, or None and why not."""
    if index.chunk_vectors is None:
        return None, "the index has no chunk vectors"
    qv, why = embed_batch(index, batch.queries, query_vectors, batch.timer)
    if qv is None:
        return None, why or "no query vectors"
    with batch.timer.stage("vector"):
        found = chunk_search(index, qv, batch.tenant, k)
    if found is None:  # pragma: no cover - chunk_vectors checked above
        return None, "the index has no chunk vectors"
    return [(r.astype(np.int64), s) for r, s in found], None


def _results(
    index: GraphIndex,
    batch: Batch,
    ranked: _Ranked,
    source: str,
    component: str,
    fallback: str | None,
) -> list[RetrievalResult]:
    if fallback is not None:
        log.warning("recipe %s: %s", batch.recipe, fallback)
    out = []
    for q, (rows, scores) in enumerate(ranked):
        sl = [float(x) for x in scores.tolist()]
        hits = chunk_hits(
            index,
            rows.tolist(),
            scores=sl,
            sources=source,
            components=[{component: s} for s in sl],
        )
        out.append(batch.result(q, chunks=hits, fallback=fallback))
    return out


def _vector(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: Vector,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    batch = begin("vector", index, queries, tenant=tenant, now=now, params=p)
    k = check_count("k", p.k)
    if index.chunk_vectors is None:
        raise ParameterError(
            "recipe vector needs chunk vectors: the index has none (build it with an "
            "embedder, or use bm25)"
        )
    dense, why = _dense(index, batch, k, query_vectors)
    if dense is not None:
        return _results(index, batch, dense, "vector", "cosine", None)
    if index.chunk_keywords is None:
        raise ParameterError(f"recipe vector has no query vectors ({why}) and no BM25 index")
    kw = _keyword(index, batch, k, "or")
    return _results(index, batch, kw, "keyword", "bm25", f"{why}: ranked by BM25")


def _bm25(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: BM25,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    batch = begin("bm25", index, queries, tenant=tenant, now=now, params=p)
    k = check_count("k", p.k)
    if query_vectors is not None:  # unused, but checked as every recipe checks them
        embed_batch(index, batch.queries, query_vectors, batch.timer)
    kw = _keyword(index, batch, k, _mode(p.keyword_mode))
    return _results(index, batch, kw, "keyword", "bm25", None)


def _hybrid(
    index: GraphIndex,
    queries: str | Sequence[str],
    p: Hybrid,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    batch = begin("hybrid", index, queries, tenant=tenant, now=now, params=p)
    k = check_count("k", p.k)
    n = max(check_count("candidates", p.candidates), k)
    rrf_k = check_real("rrf_k", p.rrf_k)
    mode = _mode(p.keyword_mode)
    dense, why = _dense(index, batch, n, query_vectors)
    if index.chunk_keywords is None:
        if dense is None:
            raise ParameterError(f"recipe hybrid has no query vectors ({why}) and no BM25 index")
        cut = [(r[:k], s[:k]) for r, s in dense]
        return _results(index, batch, cut, "vector", "cosine", "no BM25 index: ranked by cosine")
    kw = _keyword(index, batch, n, mode)
    if dense is None:
        cut = [(r[:k], s[:k]) for r, s in kw]
        return _results(index, batch, cut, "keyword", "bm25", f"{why}: ranked by BM25")
    out = []
    with batch.timer.stage("fuse"):
        for q in range(len(batch.queries)):
            fused: dict[int, list[float]] = {}
            for j, (rows, scores) in enumerate((dense[q], kw[q])):
                for rank, (r, s) in enumerate(zip(rows.tolist(), scores.tolist(), strict=True)):
                    e = fused.setdefault(r, [0.0, 0.0, 0.0, 0.0, 0.0])
                    e[0] += 1.0 / (rrf_k + rank + 1)
                    e[1 + j] = float(s)
                    e[3 + j] = 1.0
            top = sorted(fused, key=lambda r: (-fused[r][0], r))[:k]
            hits = chunk_hits(
                index,
                top,
                scores=[fused[r][0] for r in top],
                sources=[
                    "hybrid"
                    if fused[r][3] and fused[r][4]
                    else "vector"
                    if fused[r][3]
                    else "keyword"
                    for r in top
                ],
                components=[{"cosine": fused[r][1], "bm25": fused[r][2]} for r in top],
            )
            out.append(batch.result(q, chunks=hits))
    return out


VECTOR_RECIPE = FunctionRecipe("vector", Vector, _vector, default_format="chunks")
BM25_RECIPE = FunctionRecipe("bm25", BM25, _bm25, default_format="chunks")
HYBRID_RECIPE = FunctionRecipe("hybrid", Hybrid, _hybrid, default_format="chunks")


def vector(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: Vector | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[VectorOverrides],
) -> list[RetrievalResult]:
    """Top chunks by cosine (the dense baseline; see the module doc for its fallback).

    Returns:
        One result per query: ``chunks`` (component ``cosine``).
    """
    p = resolve_params(Vector, params, overrides)
    return _vector(index, queries, p, tenant, now, query_vectors, None, None)


def bm25(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: BM25 | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[BM25Overrides],
) -> list[RetrievalResult]:
    """Top chunks by BM25 (the keyword baseline).

    Returns:
        One result per query: ``chunks`` (component ``bm25``).
    """
    p = resolve_params(BM25, params, overrides)
    return _bm25(index, queries, p, tenant, now, query_vectors, None, None)


def hybrid(
    index: GraphIndex,
    queries: str | Sequence[str],
    params: Hybrid | None = None,
    *,
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    **overrides: Unpack[HybridOverrides],
) -> list[RetrievalResult]:
    """Dense and BM25 rankings fused by RRF, no graph (see the module doc for fallbacks).

    Returns:
        One result per query: ``chunks`` (components ``cosine`` and ``bm25``, 0 where a
        ranking did not hold the chunk).
    """
    p = resolve_params(Hybrid, params, overrides)
    return _hybrid(index, queries, p, tenant, now, query_vectors, None, None)
