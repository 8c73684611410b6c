"""Rank fusion: reciprocal rank fusion, weighted linear fusion, seed 003's additive merge,
``dedupe_max`` and ``top_k``.

Every function takes one query's input, or a batch of them with ``batch=True``, and makes one
native call, with the GIL released. Results come back as a :class:`Fused` (or :class:`Merged`)
of the result family (:mod:`graphrecall.results`): flat ``ids`` / ``scores`` arrays cut into
queries by int64 ``offsets``; one query is a batch of one. Within a query, results are sorted
by score descending, ties by id ascending, so the output is deterministic. Fused scores do not
depend on the order in which the lists are given, bit for bit: each id's contributions are
sorted before they are summed (floating-point addition is not associative, so summing in list
order would not be).

Ids are converted to ``int64`` and scores to ``float64``; lists and numpy arrays of any integer
(ids) or real (scores) dtype are accepted.

Example:
    >>> from graphrecall import fusion
    >>> fused = fusion.rrf([[1, 2, 3], [3, 1]], k=60.0)
    >>> fused.ids.tolist()
    [1, 3, 2]
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from . import _core
from .arrays import (
    as_float_array,
    as_int_array,
    as_offsets,
    as_sequence,
    concat,
    offsets_of,
    query_bounds,
)
from .errors import DataError, ParameterError
from .results import BatchForm

__all__ = [
    "SOURCE_BASE",
    "SOURCE_BOTH",
    "SOURCE_GRAPH",
    "Fused",
    "Merged",
    "ScoredList",
    "additive_merge",
    "dedupe_max",
    "rrf",
    "top_k",
    "weighted",
]

#: :attr:`Merged.sources` code: the id is in the base (hybrid) list only.
SOURCE_BASE = 0
#: :attr:`Merged.sources` code: the id is in the graph list only (added by the merge).
SOURCE_GRAPH = 1
#: :attr:`Merged.sources` code: the id is in both lists (re-scored by the merge).
SOURCE_BOTH = 2

#: A scored list: an ``(ids, scores)`` pair of equal-length sequences, or a mapping id -> score.
ScoredList: TypeAlias = tuple[npt.ArrayLike, npt.ArrayLike] | Mapping[int, float]

_Array: TypeAlias = npt.NDArray[Any]


# ------------------------------------------------------------------------------------------
# Argument checks (array coercion lives in graphrecall.arrays).


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def _count(value: object, name: str) -> int:
    """A non-negative integer parameter."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        count = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if count < 0:
        raise ParameterError(f"invalid parameter {name}: {name} = {count} must be >= 0")
    return count


def _optional_count(value: object, name: str) -> int | None:
    return None if value is None else _count(value, name)


def _ids(values: object, name: str) -> npt.NDArray[np.int64]:
    return as_int_array(values, np.int64, name, allow_float=False)


def _pair(
    ids: object, scores: object, ids_name: str, scores_name: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    id_arr = _ids(ids, ids_name)
    score_arr = as_float_array(scores, np.float64, scores_name)
    if id_arr.shape[0] != score_arr.shape[0]:
        raise DataError(
            f"{ids_name} has {id_arr.shape[0]} entries but {scores_name} has "
            f"{score_arr.shape[0]}; they must be aligned"
        )
    bad = ~np.isfinite(score_arr)
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(
            f"{scores_name}[{i}] = {float(score_arr[i])} is not finite (NaN or infinite)"
        )
    return id_arr, score_arr


def _scored(item: object, name: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Split an ``(ids, scores)`` pair or a mapping id -> score into aligned arrays."""
    if isinstance(item, Mapping):
        ids: object = list(item.keys())
        scores: object = list(item.values())
    else:
        try:
            ids, scores = item  # type: ignore[misc]
        except (TypeError, ValueError):
            raise ParameterError(
                f"{name} must be an (ids, scores) pair or a mapping id -> score"
            ) from None
    return _pair(ids, scores, f"{name} ids", f"{name} scores")


def _pack(pairs: Sequence[tuple[_Array, _Array]]) -> tuple[_Array, _Array, _Array]:
    return (
        concat([p[0] for p in pairs], np.int64),
        concat([p[1] for p in pairs], np.float64),
        offsets_of([p[0].shape[0] for p in pairs]),
    )


# ------------------------------------------------------------------------------------------
# Results.


@dataclass(frozen=True, eq=False)
class Fused(BatchForm):
    """Fused results of a batch of queries (one query: a batch of one).

    Query ``q`` owns ``ids[offsets[q]:offsets[q + 1]]`` and the same slice of ``scores``,
    sorted by score descending, ties by id ascending; ``fused[q]`` is that query as a batch
    of one, so for one query ``fused.ids`` and ``fused.scores`` are its results.

    Attributes:
        ids: ``int64``, shape ``(n_results,)``.
        scores: ``float64``, shape ``(n_results,)``.
        offsets: ``int64``, shape ``(n_queries + 1,)``.
    """

    ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    offsets: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", as_offsets(self.offsets))

    def __len__(self) -> int:
        """Number of queries."""
        return int(self.offsets.shape[0]) - 1

    def __getitem__(self, query: int) -> Fused:
        """Results of one query (numpy views, no copy) as a batch of one."""
        a, b = query_bounds(self.offsets, query)
        return Fused(self.ids[a:b], self.scores[a:b], np.array([0, b - a], dtype=np.int64))

    def __iter__(self) -> Iterator[Fused]:
        return (self[q] for q in range(len(self)))

    def to_list(self) -> list[list[tuple[int, float]]]:
        """Per query, the list of ``(id, score)`` pairs."""
        ids, scores, o = self.ids.tolist(), self.scores.tolist(), self.offsets.tolist()
        return [list(zip(ids[a:b], scores[a:b], strict=True)) for a, b in pairwise(o)]

    def _records(self, q: int) -> list[dict[str, Any]]:
        a, b = query_bounds(self.offsets, q)
        return [
            {"query": q, "rank": r, "id": i, "score": s}
            for r, (i, s) in enumerate(
                zip(self.ids[a:b].tolist(), self.scores[a:b].tolist(), strict=True)
            )
        ]


@dataclass(frozen=True, eq=False)
class Merged(BatchForm):
    """Result of :func:`additive_merge`: like :class:`Fused` plus where each id came from.

    Attributes:
        ids: ``int64``, shape ``(n_results,)``.
        scores: ``float64`` combined scores ``alpha * base + beta * graph``.
        sources: ``uint8``: :data:`SOURCE_BASE` (0), :data:`SOURCE_GRAPH` (1) or
            :data:`SOURCE_BOTH` (2).
        offsets: ``int64``, shape ``(n_queries + 1,)``.
    """

    ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    sources: npt.NDArray[np.uint8]
    offsets: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", as_offsets(self.offsets))

    def __len__(self) -> int:
        """Number of queries."""
        return int(self.offsets.shape[0]) - 1

    def __getitem__(self, query: int) -> Merged:
        """Results of one query (numpy views, no copy) as a batch of one."""
        a, b = query_bounds(self.offsets, query)
        return Merged(
            self.ids[a:b],
            self.scores[a:b],
            self.sources[a:b],
            np.array([0, b - a], dtype=np.int64),
        )

    def __iter__(self) -> Iterator[Merged]:
        return (self[q] for q in range(len(self)))

    def to_list(self) -> list[list[tuple[int, float, int]]]:
        """Per query, the list of ``(id, score, source)`` triples."""
        ids, scores, src = self.ids.tolist(), self.scores.tolist(), self.sources.tolist()
        o = self.offsets.tolist()
        return [list(zip(ids[a:b], scores[a:b], src[a:b], strict=True)) for a, b in pairwise(o)]

    def _records(self, q: int) -> list[dict[str, Any]]:
        a, b = query_bounds(self.offsets, q)
        return [
            {"query": q, "rank": r, "id": i, "score": s, "source": c}
            for r, (i, s, c) in enumerate(
                zip(
                    self.ids[a:b].tolist(),
                    self.scores[a:b].tolist(),
                    self.sources[a:b].tolist(),
                    strict=True,
                )
            )
        ]


# ------------------------------------------------------------------------------------------
# Batch layout.


def _weights(weights: npt.ArrayLike | None, lists_per_query: Sequence[int]) -> _Array:
    """One weight per list of the batch: ``weights`` is one weight per list position."""
    n_lists = sum(lists_per_query)
    if weights is None:
        return np.ones(n_lists, dtype=np.float64)
    w = as_float_array(weights, np.float64, "weights", error=ParameterError)
    for q, n in enumerate(lists_per_query):
        if n != w.shape[0]:
            raise ParameterError(
                f"invalid parameter weights: {w.shape[0]} weights given but query {q} has "
                f"{n} lists (give one weight per list)"
            )
    return np.tile(w, len(lists_per_query)) if lists_per_query else w[:0]


def _fused(result: tuple[_Array, _Array, _Array]) -> Fused:
    ids, scores, offsets = result
    return Fused(ids, scores, as_offsets(offsets))


# ------------------------------------------------------------------------------------------
# Reciprocal rank fusion.


def rrf(
    lists: Sequence[npt.ArrayLike] | Sequence[Sequence[npt.ArrayLike]],
    *,
    weights: npt.ArrayLike | None = None,
    k: float = 60.0,
    top_k: int | None = None,
    batch: bool = False,
) -> Fused:
    """Reciprocal rank fusion (Cormack et al. 2009) of ranked id lists.

    ``score(d) = sum_i weights[i] / (k + rank_i(d))`` over the lists that hold ``d``, with
    ``rank_i(d)`` the 1-based position of ``d`` in list ``i``. An id repeated within one list
    counts once, at its first (best) position.

    Args:
        lists: One query's ranked lists of integer ids, best first; with ``batch``, per
            query its ranked lists (one native call, parallel across queries).
        weights: One finite weight ``>= 0`` per list (per list position in a batch, where
            every query must then hold ``len(weights)`` lists); defaults to 1.
        k: RRF constant, finite and ``>= 0`` (60 in the paper).
        top_k: Keep at most this many results per query.
        batch: ``lists`` is a batch of queries.

    Returns:
        Per query, ids sorted by fused score descending, ties by id ascending (one query: a
        batch of one).

    Raises:
        ParameterError: Bad ``weights``, ``k`` or ``top_k``.
        DataError: A list is not a one-dimensional sequence of integer ids.
    """
    if batch:
        return _rrf(as_sequence(lists, "queries"), weights, k, top_k, single=False)
    return _rrf([as_sequence(lists, "lists")], weights, k, top_k, single=True)


def _list_name(single: bool, q: int, i: int) -> str:
    return f"lists[{i}]" if single else f"queries[{q}][{i}]"


def _rrf(
    queries: Sequence[object],
    weights: npt.ArrayLike | None,
    k: float,
    top_k: int | None,
    *,
    single: bool,
) -> Fused:
    parts: list[_Array] = []
    list_lengths: list[int] = []
    lists_per_query: list[int] = []
    for q, lists in enumerate(queries):
        lists = as_sequence(lists, f"queries[{q}]")
        for i, ids in enumerate(lists):
            arr = _ids(ids, _list_name(single, q, i))
            parts.append(arr)
            list_lengths.append(arr.shape[0])
        lists_per_query.append(len(lists))
    w = _weights(weights, lists_per_query)
    return _fused(
        _core.rrf_fuse(
            concat(parts, np.int64),
            offsets_of(list_lengths),
            offsets_of(lists_per_query),
            w,
            k=_real(k, "k"),
            top_k=_optional_count(top_k, "top_k"),
        )
    )


# ------------------------------------------------------------------------------------------
# Weighted linear fusion.


def weighted(
    lists: Sequence[ScoredList] | Sequence[Sequence[ScoredList]],
    *,
    weights: npt.ArrayLike | None = None,
    normalize: bool = False,
    top_k: int | None = None,
    batch: bool = False,
) -> Fused:
    """Weighted linear fusion: ``score(d) = sum_i weights[i] * s_i(d)``, missing = 0.

    A repeated id within one list keeps its largest score. With ``normalize``, each list's
    scores are first min-max normalised, ``(s - min) / (max - min)``; a list whose scores are
    all equal maps them to 1.0.

    Args:
        lists: One query's scored lists, each an ``(ids, scores)`` pair or a mapping id ->
            score; with ``batch``, per query its scored lists (one native call).
        weights: One finite weight ``>= 0`` per list (per list position in a batch);
            defaults to 1.
        normalize: Min-max normalise each list first.
        top_k: Keep at most this many results per query.
        batch: ``lists`` is a batch of queries.

    Returns:
        Per query, ids sorted by fused score descending, ties by id ascending (one query: a
        batch of one).

    Raises:
        ParameterError: Bad ``weights`` or ``top_k``, or a list that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    if batch:
        return _weighted(as_sequence(lists, "queries"), weights, normalize, top_k, single=False)
    return _weighted([as_sequence(lists, "lists")], weights, normalize, top_k, single=True)


def _weighted(
    queries: Sequence[object],
    weights: npt.ArrayLike | None,
    normalize: bool,
    top_k: int | None,
    *,
    single: bool,
) -> Fused:
    id_parts: list[_Array] = []
    score_parts: list[_Array] = []
    list_lengths: list[int] = []
    lists_per_query: list[int] = []
    for q, lists in enumerate(queries):
        lists = as_sequence(lists, f"queries[{q}]")
        for i, item in enumerate(lists):
            ids, scores = _scored(item, _list_name(single, q, i))
            id_parts.append(ids)
            score_parts.append(scores)
            list_lengths.append(ids.shape[0])
        lists_per_query.append(len(lists))
    w = _weights(weights, lists_per_query)
    return _fused(
        _core.weighted_fuse(
            concat(id_parts, np.int64),
            concat(score_parts, np.float64),
            offsets_of(list_lengths),
            offsets_of(lists_per_query),
            w,
            normalize=bool(normalize),
            top_k=_optional_count(top_k, "top_k"),
        )
    )


# ------------------------------------------------------------------------------------------
# Additive merge (seed 003).


def additive_merge(
    base: ScoredList | Sequence[ScoredList],
    graph: ScoredList | Sequence[ScoredList],
    *,
    alpha: float = 0.7,
    beta: float = 0.3,
    max_new: int = 4,
    batch: bool = False,
) -> Merged:
    """Seed 003's additive merge of graph-sourced chunks into hybrid search results.

    "The graph expansion is additive: it never removes results from the existing hybrid
    search, it only adds graph-sourced chunks and re-scores existing results that also have
    graph connections." Every id scores ``alpha * base + beta * graph`` (a missing side counts
    0). The result holds every base id, whatever its score, plus the best ``max_new`` ids found
    only in ``graph`` (by combined score, ties by id), all sorted by combined score descending,
    ties by id ascending. A repeated id within one input keeps its largest score.

    Args:
        base: Hybrid (vector + keyword) results: ``(ids, scores)`` or a mapping id -> score;
            with ``batch``, one per query.
        graph: Graph proximity results, same form (as many queries as ``base``).
        alpha: Weight of the hybrid score, finite and ``>= 0``.
        beta: Weight of the graph score, finite and ``>= 0``.
        max_new: At most this many graph-only ids are added per query.
        batch: ``base`` and ``graph`` are batches of queries (one native call).

    Returns:
        The merged results with ``sources`` telling base-only, graph-only or both (one
        query: a batch of one).

    Raises:
        ParameterError: Bad ``alpha``, ``beta`` or ``max_new``, or batches of different
            lengths.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    if not batch:
        return _additive([_scored(base, "base")], [_scored(graph, "graph")], alpha, beta, max_new)
    bases = as_sequence(base, "base")
    graphs = as_sequence(graph, "graph")
    if len(bases) != len(graphs):
        raise ParameterError(
            f"base holds {len(bases)} queries but graph holds {len(graphs)}; they must match"
        )
    return _additive(
        [_scored(item, f"base[{q}]") for q, item in enumerate(bases)],
        [_scored(item, f"graph[{q}]") for q, item in enumerate(graphs)],
        alpha,
        beta,
        max_new,
    )


def _additive(
    base: Sequence[tuple[_Array, _Array]],
    graph: Sequence[tuple[_Array, _Array]],
    alpha: float,
    beta: float,
    max_new: int,
) -> Merged:
    ids, scores, sources, offsets = _core.additive_merge(
        *_pack(base),
        *_pack(graph),
        alpha=_real(alpha, "alpha"),
        beta=_real(beta, "beta"),
        max_new=_count(max_new, "max_new"),
    )
    return Merged(ids, scores, sources, as_offsets(offsets))


# ------------------------------------------------------------------------------------------
# Dedupe and top-k.


def _pack_scored(queries: Sequence[ScoredList], name: str) -> tuple[_Array, _Array, _Array]:
    return _pack(
        [_scored(item, f"{name}[{q}]") for q, item in enumerate(as_sequence(queries, name))]
    )


def _scored_input(
    scored: object, scores: npt.ArrayLike | None, batch: bool
) -> tuple[_Array, _Array, _Array]:
    """One query's ``(ids, scores)`` (two arguments, a pair or a mapping) or a batch."""
    if batch:
        if scores is not None:
            raise ParameterError("invalid parameter scores: give the batch's pairs in one list")
        return _pack_scored(scored, "queries")  # type: ignore[arg-type]
    if scores is not None:
        return _pack([_pair(scored, scores, "ids", "scores")])
    return _pack([_scored(scored, "scored")])


def dedupe_max(
    ids: npt.ArrayLike | ScoredList | Sequence[ScoredList],
    scores: npt.ArrayLike | None = None,
    *,
    batch: bool = False,
) -> Fused:
    """Distinct ids with their largest score, sorted by score descending, ties by id.

    Args:
        ids: Integer ids (with ``scores``), or one ``(ids, scores)`` pair or mapping; with
            ``batch``, one pair or mapping per query.
        scores: One finite score per id.
        batch: ``ids`` is a batch of queries (one native call).

    Returns:
        Per query, its distinct ids (one query: a batch of one).

    Raises:
        ParameterError: A batch entry that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    return _fused(_core.dedupe_max(*_scored_input(ids, scores, batch)))


def top_k(
    ids: npt.ArrayLike | ScoredList | Sequence[ScoredList],
    scores: npt.ArrayLike | None = None,
    k: int = 10,
    *,
    batch: bool = False,
) -> Fused:
    """The best ``k`` entries by score descending, ties by id ascending.

    A partial selection (``O(n + k log k)``). Ids are not deduplicated; use :func:`dedupe_max`
    first when they may repeat.

    Args:
        ids: Integer ids (with ``scores``), or one ``(ids, scores)`` pair or mapping; with
            ``batch``, one pair or mapping per query.
        scores: One finite score per id.
        k: How many to keep per query, ``>= 0``.
        batch: ``ids`` is a batch of queries (one native call).

    Returns:
        Per query, its best ``k`` (one query: a batch of one).

    Raises:
        ParameterError: ``k`` negative, or a batch entry that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    count = _count(k, "k")
    return _fused(_core.top_k(*_scored_input(ids, scores, batch), count))
