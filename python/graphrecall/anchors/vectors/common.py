"""Shared parts of the vector index: defaults, array types, the result class and argument
checks used by the build, search and persistence modules."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from ...embed import EmbeddingError
from ...errors import DataError, ParameterError

if TYPE_CHECKING:
    from usearch.index import Index

#: ``"auto"``: tenants with fewer rows are searched exactly (below the default rerank floor
#: the sketch would re-score every row anyway).
EXACT_BELOW = 1024
#: ``"auto"``: tenants with at least ``exact_below`` and fewer than this many rows use the
#: sketch; larger ones HNSW, since the sketch's recall at a fixed candidate count falls as a
#: tenant grows (``benches/results/vectors-notes.md`` has the measurements).
SKETCH_BELOW = 20_000
#: Default rerank: ``max(RERANK_FLOOR, RERANK_PER_K * k, ceil(rows / RERANK_SHARE))``
#: Hamming candidates re-scored with the 4-bit rows (at least a tenth of the tenant).
RERANK_FLOOR = 1024
RERANK_PER_K = 32
RERANK_SHARE = 10
#: Default refine: ``max(REFINE_FLOOR, REFINE_PER_K * k)`` of those re-scored exactly.
REFINE_FLOOR = 48
REFINE_PER_K = 4


def default_rerank(k: int, rows: int) -> int:
    """The sketch's default candidate count for ``k`` results from a tenant of ``rows``."""
    return max(RERANK_FLOOR, RERANK_PER_K * k, -(-rows // RERANK_SHARE))


#: The largest ``k`` accepted by :meth:`VectorIndex.search`.
MAX_K = 10_000_000
#: The largest ``n_tenants`` accepted (the known-tenant table is dense).
MAX_N_TENANTS = 1 << 24
_MAX_EXPANSION = 1 << 16
_MAX_THREADS = 1024

Backend = Literal["exact", "hnsw", "sketch"]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
U64 = npt.NDArray[np.uint64]
U8 = npt.NDArray[np.uint8]

_EXACT, _HNSW, _SKETCH = 0, 1, 2
_KIND_NAMES: tuple[Backend, Backend, Backend] = ("exact", "hnsw", "sketch")
_MODES = ("auto", "exact", "hnsw", "sketch")
_MAX_CODE = 2**32 - 1


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False)
class VectorMatches:
    """Top-k results of a batch of ``q`` queries (read-only arrays; compared by identity).

    Attributes:
        rows: int64 (q, k) global rows, best first, padded with -1.
        scores: float32 (q, k) cosine similarities, padded with NaN.
        counts: int64 (q,) results of each query (its first ``counts[i]`` columns).
    """

    rows: I64
    scores: F32
    counts: I64

    def __len__(self) -> int:
        """Number of queries."""
        return len(self.counts)

    def query(self, i: int) -> tuple[I64, F32]:
        """The results of query ``i``, without padding.

        Args:
            i: Query position (negative counts from the end, as for a list).

        Returns:
            ``(rows, scores)``: int64 and float32 arrays of length ``counts[i]``, best
            first (read-only views).

        Raises:
            ParameterError: ``i`` is not an integer or is out of range.
        """
        n = len(self.counts)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise ParameterError(f"invalid parameter i: expected an integer, got {i!r}")
        j = operator.index(i)
        if not -n <= j < n:
            raise ParameterError(f"invalid parameter i: query {j} out of range for {n} queries")
        c = int(self.counts[j])
        return self.rows[j, :c], self.scores[j, :c]

    def __iter__(self) -> Iterator[tuple[I64, F32]]:
        """Iterate over :meth:`query` of every query, in order."""
        return (self.query(i) for i in range(len(self.counts)))


class _Part(NamedTuple):
    """One tenant's sub-index: its global rows (ascending) and either an exact matrix, an
    HNSW index whose keys are positions in ``rows``, or a sketch (``exact`` holds the
    vectors it re-scores, ``codes`` their sign codes around ``centre``, ``int4`` the
    centred vectors quantised to 4 bits with the per-dimension ``scales``)."""

    rows: I64
    exact: F32 | None
    hnsw: Index | None
    codes: npt.NDArray[np.uint64] | None = None
    centre: F32 | None = None
    int4: npt.NDArray[np.uint8] | None = None
    scales: F32 | None = None


def _frozen(rows: I64, scores: F32, counts: I64) -> VectorMatches:
    for a in (rows, scores, counts):
        a.setflags(write=False)
    return VectorMatches(rows, scores, counts)


# --------------------------------------------------------------------------- validation


def _int_param(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int in ``[minimum, maximum]`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"invalid parameter {name}: expected an integer, got {value!r}")
    v = operator.index(value)
    if v < minimum:
        raise ParameterError(f"invalid parameter {name}: {name} = {v} must be >= {minimum}")
    if maximum is not None and v > maximum:
        raise ParameterError(f"invalid parameter {name}: {name} = {v} must be <= {maximum}")
    return v


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ParameterError(
            f"invalid parameter {name}: {value!r} is not one of {', '.join(map(repr, allowed))}"
        )
    return value


def _as_f32(values: npt.ArrayLike, what: str, error: type[Exception]) -> F32:
    """``values`` as a float32 array (numbers only; beyond float32 becomes inf)."""
    if isinstance(values, np.ndarray) and values.dtype == np.float32:
        return values
    try:
        arr = np.asarray(values)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"dtype {arr.dtype}")
        with np.errstate(over="ignore"):  # inf is refused by the caller
            out: F32 = arr.astype(np.float32)
    except (TypeError, ValueError) as exc:
        raise error(f"{what}: expected a numeric (n, d) matrix ({exc})") from None
    return out


def _unit_rows(arr: F32) -> tuple[F32, int, int]:
    """Rows of a float32 (n, d) matrix divided by their L2 norms, or the first row with a
    NaN / inf (``-1, row``) or a zero norm (``-2, row``) as ``(arr, code, row)``."""
    sq = np.einsum("ij,ij->i", arr, arr, dtype=np.float64)  # no overflow in float64
    if not np.isfinite(sq).all():
        return arr, -1, int(np.argmin(np.isfinite(sq)))
    if not sq.all():
        return arr, -2, int(np.argmin(sq))
    # Divide by float32 norms: stays float32, and a subnormal row's norm is representable.
    out: F32 = np.ascontiguousarray(arr / np.sqrt(sq).astype(np.float32)[:, None])
    return out, 0, 0


def _normalised_vectors(vectors: npt.ArrayLike) -> F32:
    """``vectors`` as a C-contiguous float32 (n, d) matrix of unit rows."""
    arr = _as_f32(vectors, "vectors", DataError)
    if arr.ndim != 2:
        raise DataError(f"vectors: expected a 2-D (n, d) matrix, got shape {arr.shape}")
    n, d = arr.shape
    if n == 0:
        raise DataError("vectors: the matrix has no rows (an index needs at least one vector)")
    if d == 0:
        raise DataError("vectors: the vectors have dimension 0")
    out, code, r = _unit_rows(arr)
    if code == -1:
        col = int(np.argmin(np.isfinite(arr[r])))
        raise DataError(
            f"vectors: row {r} holds a NaN or infinite value (column {col}: {arr[r, col]!r}"
            " as float32)"
        )
    if code == -2:
        raise DataError(f"vectors: row {r} is a zero vector (no direction)")
    return out


def _tenant_codes(tenants: npt.ArrayLike | None, n: int) -> I64:
    """Validated tenant codes (int64 in ``0..2**32-1``), one per row."""
    if tenants is None:
        return np.zeros(n, dtype=np.int64)
    arr = np.asarray(tenants)
    if arr.ndim != 1 or len(arr) != n:
        raise DataError(
            f"tenants: expected a 1-D array of {n} tenant codes (one per vector), "
            f"got shape {arr.shape}"
        )
    if arr.dtype.kind == "O" and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr.tolist()
    ):
        big = [v for v in arr.tolist() if not 0 <= v <= _MAX_CODE]
        if big:
            r = next(i for i, v in enumerate(arr.tolist()) if not 0 <= v <= _MAX_CODE)
            raise DataError(f"tenants: row {r} has code {big[0]}, outside 0..{_MAX_CODE} (uint32)")
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise DataError(f"tenants: expected integer (uint32) tenant codes, got dtype {arr.dtype}")
    if arr.dtype == np.uint64:
        bad = np.flatnonzero(arr > _MAX_CODE)
    else:
        bad = np.flatnonzero((arr < 0) | (arr > _MAX_CODE))
    if len(bad):
        r = int(bad[0])
        raise DataError(f"tenants: row {r} has code {int(arr[r])}, outside 0..{_MAX_CODE} (uint32)")
    return arr.astype(np.int64)


# --------------------------------------------------------------------------- queries


def _one_query(queries: object, dim: int) -> F32 | None:
    """A single valid query that is already a C-contiguous float32 ``(d,)`` or ``(1, d)``
    array, normalised as :func:`_queries` does, as ``(1, d)``; None for anything else
    (including a NaN, infinite or zero query: :func:`_queries` then says what is wrong).
    """
    if (
        type(queries) is not np.ndarray
        or queries.dtype != np.float32
        or not queries.flags.c_contiguous
        or queries.ndim > 2
        or queries.shape[-1:] != (dim,)
        or queries.size != dim
    ):
        return None
    wide = queries.reshape(-1).astype(np.float64)  # float32 squares are exact in float64
    sq = float(wide.dot(wide))  # the BLAS dot of ``@``, without the ufunc's dispatch
    if not 0.0 < sq < math.inf:  # NaN fails both
        return None
    norm = np.float32(math.sqrt(sq))
    one: F32 = queries.reshape(1, dim)
    return one if norm == 1.0 else one / norm


def _queries(queries: npt.ArrayLike, dim: int) -> F32:
    """``queries`` as a (q, dim) float32 matrix of unit rows."""
    arr = _as_f32(queries, "queries", EmbeddingError)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise EmbeddingError(f"queries: expected shape (d,) or (q, d), got {arr.shape}")
    if arr.shape[1] != dim:
        raise EmbeddingError(
            f"queries have dimension {arr.shape[1]}, the index holds {dim}-d vectors"
        )
    out, code, i = _unit_rows(arr)
    if code == -1:
        raise EmbeddingError(f"queries: query {i} holds NaN or inf")
    if code == -2:
        raise EmbeddingError(f"queries: query {i} is a zero vector")
    return out
