"""Rank fusion: reciprocal rank fusion, weighted linear fusion, seed 003's additive merge,
``dedupe_max`` and ``top_k``.

Every function makes one native call per batch, with the GIL released. Results come back as a
:class:`Fused` (or :class:`Merged`): flat ``ids`` / ``scores`` arrays cut into queries by
``offsets``. Within a query, results are sorted by score descending, ties by id ascending, so
the output is deterministic. Fused scores do not depend on the order in which the lists are
given, bit for bit: each id's contributions are sorted before they are summed (floating-point
addition is not associative, so summing in list order would not be).

Ids are converted to ``int64`` and scores to ``float64``; lists and numpy arrays of any integer
(ids) or real (scores) dtype are accepted.

Example:
    >>> from graphrecall import fusion
    >>> fused = fusion.rrf([[1, 2, 3], [3, 1]], k=60.0)
    >>> fused.ids.tolist()
    [1, 3, 2]
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from . import _core
from .errors import DataError, ParameterError

__all__ = [
    "SOURCE_BASE",
    "SOURCE_BOTH",
    "SOURCE_GRAPH",
    "Fused",
    "Merged",
    "ScoredList",
    "additive_merge",
    "additive_merge_batch",
    "dedupe_max",
    "dedupe_max_batch",
    "rrf",
    "rrf_batch",
    "top_k",
    "top_k_batch",
    "weighted",
    "weighted_batch",
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
# Conversion helpers (shared with graphrecall.scoring).


def _as_1d(values: object, name: str, error: type[Exception]) -> _Array:
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting and the like
        raise error(f"{name} must be a one-dimensional sequence of numbers ({exc})") from None
    if arr.ndim != 1:
        raise error(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _check_ints(
    values: list[Any], target: np.dtype[Any], name: str, allow_float: bool, error: type[Exception]
) -> None:
    """Raise for the first value that is not an integer representable as ``target``."""
    info = np.iinfo(target)
    for i, value in enumerate(values):
        if isinstance(value, float) and allow_float:
            if not (math.isfinite(value) and value.is_integer()):
                raise error(f"{name}[{i}] = {value!r} is not an integer")
            value = int(value)
        elif isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise error(f"{name}[{i}] = {value!r} is not an integer")
        if not info.min <= int(value) <= info.max:
            raise error(
                f"{name}[{i}] = {value!r} is out of range for {target.name} "
                f"[{info.min}, {info.max}]"
            )


def _as_int_array(
    values: object,
    dtype: npt.DTypeLike,
    name: str,
    *,
    allow_float: bool = True,
    error: type[Exception] = DataError,
) -> _Array:
    """Convert to a contiguous 1-D array of the integer ``dtype``, refusing lossy values.

    Integer input of any width is range-checked; float input (when ``allow_float``) must hold
    finite whole numbers in range; booleans count as 0/1.
    """
    target = np.dtype(dtype)
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype == target:
        return np.ascontiguousarray(values)  # already what the kernels take: nothing to check
    arr = _as_1d(values, name, error)
    if arr.size == 0:
        return np.empty(0, dtype=target)
    kind = arr.dtype.kind
    info = np.iinfo(target)
    if kind in "fO" and not isinstance(values, np.ndarray):
        # A list mixing huge ints (>= 2**63) with others becomes float64 or object in numpy:
        # check the original elements so that no id is silently rounded.
        items = list(values)  # type: ignore[call-overload]
        _check_ints(items, target, name, allow_float, error)
        return np.array([int(v) for v in items], dtype=target)
    if kind == "b":
        pass
    elif kind in "iu":
        if int(arr.min()) < info.min or int(arr.max()) > info.max:
            _check_ints(arr.tolist(), target, name, allow_float, error)
    elif kind == "f" and allow_float:
        ok = bool(np.isfinite(arr).all()) and bool((arr == np.trunc(arr)).all())
        # float(info.max) + 1.0 is the exclusive upper bound, exact for every integer dtype.
        ok = ok and float(arr.min()) >= info.min and float(arr.max()) < float(info.max) + 1.0
        if not ok:
            _check_ints(arr.tolist(), target, name, allow_float, error)
    elif kind == "O":  # an object array: check element by element
        items = arr.tolist()
        _check_ints(items, target, name, allow_float, error)
        return np.array([int(v) for v in items], dtype=target)
    else:
        what = "integers (or whole floats)" if allow_float else "integers"
        raise error(f"{name} must hold {what}, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=target)


def _as_float_array(
    values: object,
    dtype: npt.DTypeLike,
    name: str,
    *,
    error: type[Exception] = DataError,
) -> _Array:
    """Convert to a contiguous 1-D array of the float ``dtype``.

    NaN and infinities pass through (the native kernels report them with their row); finite
    values too large for ``float32`` are refused here rather than silently becoming infinite.
    """
    target = np.dtype(dtype)
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype == target:
        return np.ascontiguousarray(values)  # already the target dtype: nothing to check
    arr = _as_1d(values, name, error)
    if arr.size == 0:
        return np.empty(0, dtype=target)
    if arr.dtype.kind not in "biuf":
        raise error(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if target.itemsize < arr.dtype.itemsize or arr.dtype.kind in "iu":
        limit = float(np.finfo(target).max)
        with np.errstate(invalid="ignore"):
            too_big = np.isfinite(arr) & (np.abs(arr.astype(np.float64)) > limit)
        if too_big.any():
            i = int(np.argmax(too_big))
            raise error(f"{name}[{i}] = {arr[i].item()!r} is out of range for {target.name}")
    return np.ascontiguousarray(arr, dtype=target)


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


def _offsets(lengths: Sequence[int]) -> npt.NDArray[np.uintp]:
    offsets = np.zeros(len(lengths) + 1, dtype=np.uintp)
    if lengths:
        np.cumsum(np.asarray(lengths, dtype=np.uintp), out=offsets[1:])
    return offsets


def _concat(parts: Sequence[_Array], dtype: npt.DTypeLike) -> _Array:
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)


def _sequence(values: object, name: str) -> Sequence[object]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence, got {type(values).__name__}")
    return values  # type: ignore[return-value]


def _ids(values: object, name: str) -> npt.NDArray[np.int64]:
    return _as_int_array(values, np.int64, name, allow_float=False)


def _pair(
    ids: object, scores: object, ids_name: str, scores_name: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    id_arr = _ids(ids, ids_name)
    score_arr = _as_float_array(scores, np.float64, scores_name)
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
        _concat([p[0] for p in pairs], np.int64),
        _concat([p[1] for p in pairs], np.float64),
        _offsets([p[0].shape[0] for p in pairs]),
    )


# ------------------------------------------------------------------------------------------
# Results.


def _query_bounds(offsets: _Array, query: int) -> tuple[int, int]:
    n = int(offsets.shape[0]) - 1
    q = operator.index(query)
    if q < 0:
        q += n
    if not 0 <= q < n:
        raise IndexError(f"query {query} out of range for a batch of {n} queries")
    return int(offsets[q]), int(offsets[q + 1])


@dataclass(frozen=True, eq=False)
class Fused:
    """Fused results of a batch of queries.

    Query ``q`` owns ``ids[offsets[q]:offsets[q + 1]]`` and the same slice of ``scores``,
    sorted by score descending, ties by id ascending. Single-query functions return a batch of
    one, so ``fused.ids`` and ``fused.scores`` are that query's results.

    Attributes:
        ids: ``int64``, shape ``(n_results,)``.
        scores: ``float64``, shape ``(n_results,)``.
        offsets: ``uintp``, shape ``(n_queries + 1,)``.
    """

    ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    offsets: npt.NDArray[np.uintp]

    def __len__(self) -> int:
        """Number of queries."""
        return int(self.offsets.shape[0]) - 1

    def __getitem__(self, query: int) -> Fused:
        """Results of one query (numpy views, no copy) as a batch of one."""
        a, b = _query_bounds(self.offsets, query)
        return Fused(self.ids[a:b], self.scores[a:b], np.array([0, b - a], dtype=np.uintp))

    def __iter__(self) -> Iterator[Fused]:
        return (self[q] for q in range(len(self)))

    def tolist(self) -> list[list[tuple[int, float]]]:
        """Per query, the list of ``(id, score)`` pairs."""
        return [list(zip(r.ids.tolist(), r.scores.tolist(), strict=True)) for r in self]


@dataclass(frozen=True, eq=False)
class Merged:
    """Result of :func:`additive_merge`: like :class:`Fused` plus where each id came from.

    Attributes:
        ids: ``int64``, shape ``(n_results,)``.
        scores: ``float64`` combined scores ``alpha * base + beta * graph``.
        sources: ``uint8``: :data:`SOURCE_BASE` (0), :data:`SOURCE_GRAPH` (1) or
            :data:`SOURCE_BOTH` (2).
        offsets: ``uintp``, shape ``(n_queries + 1,)``.
    """

    ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    sources: npt.NDArray[np.uint8]
    offsets: npt.NDArray[np.uintp]

    def __len__(self) -> int:
        """Number of queries."""
        return int(self.offsets.shape[0]) - 1

    def __getitem__(self, query: int) -> Merged:
        """Results of one query (numpy views, no copy) as a batch of one."""
        a, b = _query_bounds(self.offsets, query)
        return Merged(
            self.ids[a:b],
            self.scores[a:b],
            self.sources[a:b],
            np.array([0, b - a], dtype=np.uintp),
        )

    def __iter__(self) -> Iterator[Merged]:
        return (self[q] for q in range(len(self)))

    def tolist(self) -> list[list[tuple[int, float, int]]]:
        """Per query, the list of ``(id, score, source)`` triples."""
        return [
            list(zip(r.ids.tolist(), r.scores.tolist(), r.sources.tolist(), strict=True))
            for r in self
        ]


# ------------------------------------------------------------------------------------------
# Batch layout.


def _weights(weights: npt.ArrayLike | None, lists_per_query: Sequence[int]) -> _Array:
    """One weight per list of the batch: ``weights`` is one weight per list position."""
    n_lists = sum(lists_per_query)
    if weights is None:
        return np.ones(n_lists, dtype=np.float64)
    w = _as_float_array(weights, np.float64, "weights", error=ParameterError)
    for q, n in enumerate(lists_per_query):
        if n != w.shape[0]:
            raise ParameterError(
                f"invalid parameter weights: {w.shape[0]} weights given but query {q} has "
                f"{n} lists (give one weight per list)"
            )
    return np.tile(w, len(lists_per_query)) if lists_per_query else w[:0]


def _fused(result: tuple[_Array, _Array, _Array]) -> Fused:
    ids, scores, offsets = result
    return Fused(ids, scores, offsets)


# ------------------------------------------------------------------------------------------
# Reciprocal rank fusion.


def rrf(
    lists: Sequence[npt.ArrayLike],
    *,
    weights: npt.ArrayLike | None = None,
    k: float = 60.0,
    top_k: int | None = None,
) -> Fused:
    """Reciprocal rank fusion (Cormack et al. 2009) of ranked id lists.

    ``score(d) = sum_i weights[i] / (k + rank_i(d))`` over the lists that hold ``d``, with
    ``rank_i(d)`` the 1-based position of ``d`` in list ``i``. An id repeated within one list
    counts once, at its first (best) position.

    Args:
        lists: Ranked lists of integer ids, best first.
        weights: One finite weight ``>= 0`` per list; defaults to 1.
        k: RRF constant, finite and ``>= 0`` (60 in the paper).
        top_k: Keep at most this many results.

    Returns:
        A batch of one query: ids sorted by fused score descending, ties by id ascending.

    Raises:
        ParameterError: Bad ``weights``, ``k`` or ``top_k``.
        DataError: A list is not a one-dimensional sequence of integer ids.
    """
    return _rrf([_sequence(lists, "lists")], weights, k, top_k, single=True)


def rrf_arrays(lists: Sequence[npt.NDArray[np.int64]], *, k: float, top_k: int | None) -> Fused:
    """:func:`rrf` of one query's ranked lists given as contiguous int64 arrays, weights 1,
    unchecked: for callers (the recipes) whose ``k`` (finite, ``>= 0``) and ``top_k`` are
    validated; the checks and conversions cost more than the fusion.

    Args:
        lists: Ranked id lists (int64, contiguous).
        k: RRF constant.
        top_k: Keep at most this many results.

    Returns:
        A batch of one query, as :func:`rrf`.
    """
    n = len(lists)
    lens = [0]
    for x in lists:
        lens.append(lens[-1] + len(x))
    query_offsets, weights = _RRF_ONE.get(n) or _rrf_one(n)
    return _fused(
        _core.rrf_fuse(
            lists[0] if n == 1 else np.concatenate(lists) if n else np.empty(0, np.int64),
            np.array(lens, dtype=np.uintp),
            query_offsets,
            weights,
            k=k,
            top_k=top_k,
        )
    )


#: Per number of lists: the query offsets and unit weights of one query (read-only).
_RRF_ONE: dict[int, tuple[npt.NDArray[np.uintp], npt.NDArray[np.float64]]] = {}


def _rrf_one(n: int) -> tuple[npt.NDArray[np.uintp], npt.NDArray[np.float64]]:
    offsets = np.array([0, n], dtype=np.uintp)
    weights = np.ones(n, dtype=np.float64)
    offsets.flags.writeable = False
    weights.flags.writeable = False
    if n <= 16:
        _RRF_ONE[n] = (offsets, weights)
    return offsets, weights


def rrf_batch(
    queries: Sequence[Sequence[npt.ArrayLike]],
    *,
    weights: npt.ArrayLike | None = None,
    k: float = 60.0,
    top_k: int | None = None,
) -> Fused:
    """:func:`rrf` for a batch of queries in one native call (parallel across queries).

    Args:
        queries: Per query, its ranked id lists.
        weights: One weight per list position, applied to every query (each query must then
            hold exactly ``len(weights)`` lists); defaults to 1.
        k: RRF constant, finite and ``>= 0``.
        top_k: Keep at most this many results per query.

    Returns:
        The fused results, one query per entry of ``queries``.

    Raises:
        ParameterError: Bad ``weights``, ``k`` or ``top_k``.
        DataError: A list is not a one-dimensional sequence of integer ids.
    """
    return _rrf(_sequence(queries, "queries"), weights, k, top_k, single=False)


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
        lists = _sequence(lists, f"queries[{q}]")
        for i, ids in enumerate(lists):
            arr = _ids(ids, _list_name(single, q, i))
            parts.append(arr)
            list_lengths.append(arr.shape[0])
        lists_per_query.append(len(lists))
    w = _weights(weights, lists_per_query)
    return _fused(
        _core.rrf_fuse(
            _concat(parts, np.int64),
            _offsets(list_lengths),
            _offsets(lists_per_query),
            w,
            k=_real(k, "k"),
            top_k=_optional_count(top_k, "top_k"),
        )
    )


# ------------------------------------------------------------------------------------------
# Weighted linear fusion.


def weighted(
    lists: Sequence[ScoredList],
    *,
    weights: npt.ArrayLike | None = None,
    normalize: bool = False,
    top_k: int | None = None,
) -> Fused:
    """Weighted linear fusion: ``score(d) = sum_i weights[i] * s_i(d)``, missing = 0.

    A repeated id within one list keeps its largest score. With ``normalize``, each list's
    scores are first min-max normalised, ``(s - min) / (max - min)``; a list whose scores are
    all equal maps them to 1.0.

    Args:
        lists: Scored lists, each an ``(ids, scores)`` pair or a mapping id -> score.
        weights: One finite weight ``>= 0`` per list; defaults to 1.
        normalize: Min-max normalise each list first.
        top_k: Keep at most this many results.

    Returns:
        A batch of one query: ids sorted by fused score descending, ties by id ascending.

    Raises:
        ParameterError: Bad ``weights`` or ``top_k``, or a list that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    return _weighted([_sequence(lists, "lists")], weights, normalize, top_k, single=True)


def weighted_batch(
    queries: Sequence[Sequence[ScoredList]],
    *,
    weights: npt.ArrayLike | None = None,
    normalize: bool = False,
    top_k: int | None = None,
) -> Fused:
    """:func:`weighted` for a batch of queries in one native call.

    Args:
        queries: Per query, its scored lists (``(ids, scores)`` pairs or mappings).
        weights: One weight per list position, applied to every query; defaults to 1.
        normalize: Min-max normalise each list first.
        top_k: Keep at most this many results per query.

    Returns:
        The fused results, one query per entry of ``queries``.

    Raises:
        ParameterError: Bad ``weights`` or ``top_k``, or a list that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    return _weighted(_sequence(queries, "queries"), weights, normalize, top_k, single=False)


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
        lists = _sequence(lists, f"queries[{q}]")
        for i, item in enumerate(lists):
            ids, scores = _scored(item, _list_name(single, q, i))
            id_parts.append(ids)
            score_parts.append(scores)
            list_lengths.append(ids.shape[0])
        lists_per_query.append(len(lists))
    w = _weights(weights, lists_per_query)
    return _fused(
        _core.weighted_fuse(
            _concat(id_parts, np.int64),
            _concat(score_parts, np.float64),
            _offsets(list_lengths),
            _offsets(lists_per_query),
            w,
            normalize=bool(normalize),
            top_k=_optional_count(top_k, "top_k"),
        )
    )


# ------------------------------------------------------------------------------------------
# Additive merge (seed 003).


def additive_merge(
    base: ScoredList,
    graph: ScoredList,
    *,
    alpha: float = 0.7,
    beta: float = 0.3,
    max_new: int = 4,
) -> Merged:
    """Seed 003's additive merge of graph-sourced chunks into hybrid search results.

    "The graph expansion is additive: it never removes results from the existing hybrid
    search, it only adds graph-sourced chunks and re-scores existing results that also have
    graph connections." Every id scores ``alpha * base + beta * graph`` (a missing side counts
    0). The result holds every base id, whatever its score, plus the best ``max_new`` ids found
    only in ``graph`` (by combined score, ties by id), all sorted by combined score descending,
    ties by id ascending. A repeated id within one input keeps its largest score.

    Args:
        base: Hybrid (vector + keyword) results: ``(ids, scores)`` or a mapping id -> score.
        graph: Graph proximity results, same form.
        alpha: Weight of the hybrid score, finite and ``>= 0``.
        beta: Weight of the graph score, finite and ``>= 0``.
        max_new: At most this many graph-only ids are added.

    Returns:
        A batch of one query with ``sources`` telling base-only, graph-only or both.

    Raises:
        ParameterError: Bad ``alpha``, ``beta`` or ``max_new``.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    return _additive([_scored(base, "base")], [_scored(graph, "graph")], alpha, beta, max_new)


def additive_merge_arrays(
    base_ids: npt.NDArray[np.int64],
    base_scores: npt.NDArray[np.float64],
    graph_ids: npt.NDArray[np.int64],
    graph_scores: npt.NDArray[np.float64],
    *,
    alpha: float,
    beta: float,
    max_new: int,
) -> Merged:
    """:func:`additive_merge` of one query's contiguous arrays, unchecked: for callers (the
    recipes) whose ids are int64, whose scores are finite float64 of the same lengths and
    whose ``alpha``, ``beta`` (finite, ``>= 0``) and ``max_new`` (``>= 0``) are validated;
    the checks and conversions cost more than the merge.

    Args:
        base_ids, base_scores: The hybrid results.
        graph_ids, graph_scores: The graph results.
        alpha: Weight of the hybrid score.
        beta: Weight of the graph score.
        max_new: At most this many graph-only ids are added.

    Returns:
        A batch of one query, as :func:`additive_merge`.
    """
    return Merged(
        *_core.additive_merge(
            base_ids,
            base_scores,
            np.array([0, len(base_ids)], dtype=np.uintp),
            graph_ids,
            graph_scores,
            np.array([0, len(graph_ids)], dtype=np.uintp),
            alpha=alpha,
            beta=beta,
            max_new=max_new,
        )
    )


def additive_merge_batch(
    base: Sequence[ScoredList],
    graph: Sequence[ScoredList],
    *,
    alpha: float = 0.7,
    beta: float = 0.3,
    max_new: int = 4,
) -> Merged:
    """:func:`additive_merge` for a batch of queries in one native call.

    Args:
        base: Per query, its hybrid results.
        graph: Per query, its graph results (same number of queries as ``base``).
        alpha: Weight of the hybrid score, finite and ``>= 0``.
        beta: Weight of the graph score, finite and ``>= 0``.
        max_new: At most this many graph-only ids are added per query.

    Returns:
        The merged results, one query per entry of ``base``.

    Raises:
        ParameterError: Bad ``alpha``, ``beta`` or ``max_new``, or ``base`` and ``graph`` of
            different lengths.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    base = _sequence(base, "base")  # type: ignore[assignment]
    graph = _sequence(graph, "graph")  # type: ignore[assignment]
    if len(base) != len(graph):
        raise ParameterError(
            f"base holds {len(base)} queries but graph holds {len(graph)}; they must match"
        )
    return _additive(
        [_scored(item, f"base[{q}]") for q, item in enumerate(base)],
        [_scored(item, f"graph[{q}]") for q, item in enumerate(graph)],
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
    return Merged(ids, scores, sources, offsets)


# ------------------------------------------------------------------------------------------
# Dedupe and top-k.


def _pack_scored(queries: Sequence[ScoredList], name: str) -> tuple[_Array, _Array, _Array]:
    return _pack([_scored(item, f"{name}[{q}]") for q, item in enumerate(_sequence(queries, name))])


def dedupe_max(ids: npt.ArrayLike, scores: npt.ArrayLike) -> Fused:
    """Distinct ids with their largest score, sorted by score descending, ties by id.

    Args:
        ids: Integer ids.
        scores: One finite score per id.

    Returns:
        A batch of one query.

    Raises:
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    return _fused(_core.dedupe_max(*_pack([_pair(ids, scores, "ids", "scores")])))


def dedupe_max_batch(queries: Sequence[ScoredList]) -> Fused:
    """:func:`dedupe_max` for a batch of ``(ids, scores)`` pairs (or mappings).

    Raises:
        ParameterError: An entry that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    return _fused(_core.dedupe_max(*_pack_scored(queries, "queries")))


def top_k(ids: npt.ArrayLike, scores: npt.ArrayLike, k: int) -> Fused:
    """The best ``k`` entries by score descending, ties by id ascending.

    A partial selection (``O(n + k log k)``). Ids are not deduplicated; use :func:`dedupe_max`
    first when they may repeat.

    Args:
        ids: Integer ids.
        scores: One finite score per id.
        k: How many to keep, ``>= 0``.

    Returns:
        A batch of one query.

    Raises:
        ParameterError: ``k`` negative.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    count = _count(k, "k")
    return _fused(_core.top_k(*_pack([_pair(ids, scores, "ids", "scores")]), count))


def top_k_batch(queries: Sequence[ScoredList], k: int) -> Fused:
    """:func:`top_k` for a batch of ``(ids, scores)`` pairs (or mappings).

    Raises:
        ParameterError: ``k`` negative, or an entry that is not a pair/mapping.
        DataError: Non-integer ids, non-finite scores, ids and scores of different lengths.
    """
    count = _count(k, "k")
    return _fused(_core.top_k(*_pack_scored(queries, "queries"), count))
