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
* **Threads.** ``threads`` (default 1) is what one HNSW search may use; a batch of exact or
  sketch queries runs in parallel in Rust. HNSW building uses ``build_threads`` (0: all
  cores). See :func:`graphrecall.set_threads` for the OpenMP runtime.

:meth:`VectorIndex.save` writes a :mod:`graphrecall.bundle` (magic ``graphrecall-vectors``,
format version 2)::

    tenants.npy          uint32 (t,) known tenant codes, ascending
    offsets.npy          int64 (t+1,) each tenant's slice of rows.npy
    kinds.npy            uint8 (t,) backend of each tenant: 0 exact, 1 hnsw, 2 sketch
    rows.npy             int64 (n,) global rows grouped by tenant, ascending in a tenant
    exact.npy            float32 (n_exact, dim) vectors of the exact and sketch tenants
    sketch.npy           uint64 (n_sketch, ceil(dim / 64)) sign codes of the sketch tenants
    centres.npy          float32 (t_sketch, dim) their centres
    int4.npy             uint8 (n_sketch, ceil(dim / 2)) their centred rows in 4 bits
    scales.npy           float32 (t_sketch, dim) the per-dimension scales of int4.npy
    hnsw-<code>.usearch  one usearch index per HNSW tenant (keys = local positions)

:meth:`VectorIndex.load` checks every size, checksum (``verify=True``) and the structure
(offsets, rows a permutation, usearch dimensions, scalar kind, keys) before use: a
truncated, corrupted, foreign or future-version directory raises a
:class:`~graphrecall.errors.StorageError` subclass, never wrong answers. Version 1
directories (no sketch) and version 2 ones without ``int4.npy`` load; their 4-bit rows are
rebuilt from ``exact.npy`` and ``centres.npy``.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from .. import _core
from .._threads import apply_openmp
from ..bundle import BundleWriter, file_path, open_array, read_header
from ..embed import EmbeddingError
from ..errors import (
    CorruptStoreError,
    DataError,
    ParameterError,
    StorageError,
    UnknownTenantError,
)

if TYPE_CHECKING:
    from types import ModuleType

    from usearch.index import Index

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

#: Format name written in ``header.json``.
MAGIC = "graphrecall-vectors"
#: Version of the directory layout this module writes (it also reads version 1, which has
#: no sketch tenants).
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
#: ``"auto"``: tenants with fewer rows are searched exactly (below the default rerank floor
#: the sketch would re-score every row anyway).
EXACT_BELOW = 1024
#: ``"auto"``: tenants with at least ``exact_below`` and fewer than this many rows use the
#: sketch; larger ones HNSW. The sketch's recall at a fixed candidate count falls as a
#: tenant grows (weakly structured 384-d data, default rerank: recall@10 0.87 at 10k rows,
#: 0.69 at 50k, 0.63 at 100k, 0.54 at 200k, where HNSW f16 ef=128 holds 0.93-0.99), so it
#: serves the range the issue gave to exact search.
SKETCH_BELOW = 20_000
#: Default rerank: ``max(RERANK_FLOOR, RERANK_PER_K * k, ceil(rows / RERANK_SHARE))``
#: Hamming candidates re-scored with the 4-bit rows (at least a tenth of the tenant).
RERANK_FLOOR = 1024
RERANK_PER_K = 32
RERANK_SHARE = 10
#: Default refine: ``max(REFINE_FLOOR, REFINE_PER_K * k)`` of those re-scored exactly.
REFINE_FLOOR = 48
REFINE_PER_K = 4


_usearch_module: ModuleType | None = None


def _usearch() -> ModuleType:
    """usearch's index module, imported on first use (after the OpenMP thread count is set:
    see :func:`graphrecall.set_threads`)."""
    global _usearch_module
    if _usearch_module is None:
        apply_openmp()
        import usearch.index

        _usearch_module = usearch.index
    return _usearch_module


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
_ARRAYS: dict[str, tuple[str, int]] = {  # file stem -> (dtype, ndim)
    "tenants": ("<u4", 1),
    "offsets": ("<i8", 1),
    "kinds": ("|u1", 1),
    "rows": ("<i8", 1),
    "exact": ("<f4", 2),
    "sketch": ("<u8", 2),
    "centres": ("<f4", 2),
    "int4": ("|u1", 2),
    "scales": ("<f4", 2),
}
_V1_ABSENT = ("sketch", "centres")  # arrays a version-1 directory does not have
#: Arrays of the 4-bit stage, rebuilt at load where a version-2 directory lacks them (one
#: written before the stage, or with the int8 stage: its int8.npy and scales.npy are unused).
_DERIVED = ("int4", "scales")


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


# --------------------------------------------------------------------------- exact search


def _exact_search(matrix: F32, queries: F32, k: int, local: I64, rows: I64, scores: F32) -> int:
    """Exact top-k of every query over the rows of ``matrix``, written into the first
    ``min(k, m)`` columns of ``rows`` (as ``local[position]``) and ``scores``.

    Best first, ties by position (``local`` ascends, so by row too). Returns the width.
    One native call (``_core.exact_search``): float32 dot products in a fixed order, one
    thread per query, so that a query never waits on BLAS threads (numpy's threaded
    ``sgemv`` had a p99 of 12 ms with another process busy).
    """
    m, q = int(matrix.shape[0]), int(queries.shape[0])
    width = min(k, m)
    pos, val, _ = _core.exact_search(matrix, queries, width)
    rows[:, :width] = local[pos.reshape(q, width)]
    scores[:, :width] = val.reshape(q, width)
    return width


# --------------------------------------------------------------------------- persistence


_WHAT = "vector index"


def _check_file(root: Path, name: str, files: object, verify: bool) -> Path:
    """The path of file ``name``, after checking it exists with the header's size and CRC."""
    return file_path(root, name, files, verify=verify, what=_WHAT)


def _load_npy(root: Path, stem: str, files: object, view: bool, verify: bool) -> npt.NDArray[Any]:
    path = _check_file(root, f"{stem}.npy", files, verify)
    arr = open_array(path, {}, mmap_mode=view)
    dtype, ndim = _ARRAYS[stem]
    if arr.dtype.str != dtype or arr.ndim != ndim:
        raise CorruptStoreError(
            f"{path}: holds {arr.dtype} with shape {arr.shape}, "
            f"expected {dtype} with {ndim} dimension(s)"
        )
    return arr


def _read_header(root: Path) -> dict[str, Any]:
    return read_header(root, magic=MAGIC, versions=_READABLE_VERSIONS, what=_WHAT)


# --------------------------------------------------------------------------- the index


class VectorIndex:
    """Cosine top-k over vectors with tenant codes (see the module docstring).

    Rows are the positions of ``vectors`` (for instance a graph's dense entity or chunk
    indices); every result is a global row. The index is immutable: an update builds a new
    one. Searches are safe from several threads at once.

    Args:
        vectors: (n, d) float32-convertible matrix, n >= 1; rows are L2-normalised here
            (already normalised rows are kept, up to float32 rounding).
        tenants: (n,) integer tenant codes in ``0..2**32-1``; None: every row is tenant 0.
        backend: ``"exact"``, ``"hnsw"`` or ``"auto"`` (exact for tenants with fewer than
            ``exact_below`` rows, HNSW for the others).
        exact_below: The ``"auto"`` threshold (>= 0).
        sketch_below: ``"auto"``: tenants with at least ``exact_below`` and fewer than this
            many rows use the sketch, larger ones HNSW (>= 0).
        rerank: Sketch: Hamming candidates per query (1..:data:`MAX_K`; None:
            ``max(RERANK_FLOOR, RERANK_PER_K * k, ceil(rows / RERANK_SHARE))``;
            ``>= rows``: exact).
        refine: Sketch: candidates the 4-bit stage keeps for the exact float32 rerank
            (1..:data:`MAX_K`; None: ``max(REFINE_FLOOR, REFINE_PER_K * k)``; ``>= rerank``:
            no 4-bit stage).
        dtype: Scalar kind of the HNSW vectors: ``"f16"`` (half the memory, the same
            recall) or ``"f32"``. The exact path always uses float32.
        connectivity: HNSW edges per node ("M", 2..1024).
        expansion_add: HNSW search depth while building ("efConstruction", 1..65536).
        expansion_search: HNSW search depth while querying ("ef", 1..65536; usearch
            searches at least ``k`` deep anyway).
        threads: Threads one HNSW search may use (1..1024; 1 suits a service's concurrent
            requests).
        build_threads: Threads used to build the HNSW graphs (0: all cores; <= 1024).
        n_tenants: When given (1..:data:`MAX_N_TENANTS`), the known tenants are
            ``0..n_tenants-1`` (a tenant without rows then gives empty results); otherwise
            the codes present in ``tenants``.
        reuse: ``(previous, old_rows)`` after an update: ``previous`` is the index before it
            and ``old_rows[r]`` the row of ``previous`` that holds exactly the vector of new
            row ``r`` (-1 for a new or changed vector). A tenant whose rows are all
            unchanged, in the same order, keeps ``previous``'s HNSW sub-index as it is; one
            whose old rows are unchanged and whose new rows come after them gets a copy
            with only the new vectors added; any other tenant is rebuilt. HNSW building
            runs at ~1-3k vectors/s here, so a fact-only update rebuilds nothing and an
            entity added to one tenant costs milliseconds, not minutes.

    Raises:
        DataError: ``vectors`` is not a non-empty numeric 2-D matrix, holds a NaN or
            infinite value or a zero row (the message names the row), or ``tenants`` has
            the wrong length, a non-integer dtype or a code outside uint32 /
            ``0..n_tenants-1``.
        ParameterError: Any other parameter is out of range.
    """

    def __init__(
        self,
        vectors: npt.ArrayLike,
        tenants: npt.ArrayLike | None = None,
        *,
        backend: Literal["auto", "exact", "hnsw", "sketch"] = "auto",
        exact_below: int = EXACT_BELOW,
        sketch_below: int = SKETCH_BELOW,
        rerank: int | None = None,
        refine: int | None = None,
        dtype: Literal["f16", "f32"] = "f16",
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = 64,
        threads: int = 1,
        build_threads: int = 0,
        n_tenants: int | None = None,
        reuse: tuple[VectorIndex, npt.ArrayLike] | None = None,
    ) -> None:
        mode = _choice("backend", backend, _MODES)
        below = _int_param("exact_below", exact_below, 0)
        self._sketch_below = _int_param("sketch_below", sketch_below, 0)
        self._rerank = None if rerank is None else _int_param("rerank", rerank, 1, MAX_K)
        self._refine = None if refine is None else _int_param("refine", refine, 1, MAX_K)
        self._dtype = cast(Literal["f16", "f32"], _choice("dtype", dtype, ("f16", "f32")))
        self._connectivity = _int_param("connectivity", connectivity, 2, 1024)
        self._expansion_add = _int_param("expansion_add", expansion_add, 1, _MAX_EXPANSION)
        self._expansion_search = _int_param("expansion_search", expansion_search, 1, _MAX_EXPANSION)
        self._threads = _int_param("threads", threads, 1, _MAX_THREADS)
        build = _int_param("build_threads", build_threads, 0, _MAX_THREADS)
        n_known = (
            None if n_tenants is None else _int_param("n_tenants", n_tenants, 1, MAX_N_TENANTS)
        )

        matrix = _normalised_vectors(vectors)
        n, self._dim = int(matrix.shape[0]), int(matrix.shape[1])
        codes = _tenant_codes(tenants, n)
        if n_known is not None:
            bad = np.flatnonzero(codes >= n_known)
            if len(bad):
                r = int(bad[0])
                raise DataError(
                    f"tenants: row {r} has tenant code {int(codes[r])}, outside "
                    f"0..{n_known - 1} (n_tenants = {n_known})"
                )
            known = np.arange(n_known, dtype=np.int64)
        else:
            known = np.unique(codes)
        rows = np.argsort(codes, kind="stable").astype(np.int64)  # grouped, ascending rows
        offsets = np.zeros(len(known) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(np.bincount(np.searchsorted(known, codes), minlength=len(known)))
        sizes = np.diff(offsets)
        if mode == "exact":
            kinds = np.zeros(len(known), dtype=np.uint8)
        elif mode == "hnsw":
            kinds = np.where(sizes > 0, _HNSW, _EXACT).astype(np.uint8)
        elif mode == "sketch":
            kinds = np.where(sizes > 0, _SKETCH, _EXACT).astype(np.uint8)
        else:
            kinds = np.where(sizes >= max(below, 1), _SKETCH, _EXACT).astype(np.uint8)
            kinds[sizes >= max(below, self._sketch_below, 1)] = _HNSW

        self._n = n
        self._mode = mode
        self._exact_below = below
        self._codes = known.astype(np.uint32)
        self._offsets = offsets
        self._kinds = kinds
        self._rows = rows
        exact_mask = np.repeat(kinds != _HNSW, sizes)
        self._exact: F32 = np.ascontiguousarray(matrix[rows[exact_mask]])
        self._sketch, self._centres = self._build_sketches()
        self._int4, self._scales = self._build_int4()
        self._hnsw: dict[int, Index] = {}
        #: Per HNSW tenant code: "reused", "extended" (old graph + new vectors) or "built".
        self.hnsw_origin: dict[int, str] = {}
        previous, old_rows = self._reuse_args(reuse, n)
        for t in np.flatnonzero(kinds == _HNSW).tolist():
            lo, hi = int(offsets[t]), int(offsets[t + 1])
            code = int(known[t])
            index, origin = None, "built"
            if previous is not None and old_rows is not None:
                index, origin = self._from_previous(
                    previous, code, old_rows[rows[lo:hi]], matrix[rows[lo:hi]], build
                )
            if index is None:
                index, origin = self._new_hnsw(), "built"
                index.add(
                    np.arange(hi - lo, dtype=np.uint64),
                    matrix[rows[lo:hi]],
                    threads=build,
                )
            self._hnsw[t] = index
            self.hnsw_origin[code] = origin
        self._index_parts()

    def _reuse_args(
        self, reuse: tuple[VectorIndex, npt.ArrayLike] | None, n: int
    ) -> tuple[VectorIndex | None, I64 | None]:
        if reuse is None:
            return None, None
        if not isinstance(reuse, tuple) or len(reuse) != 2:
            raise ParameterError("invalid parameter reuse: expected (previous index, old rows)")
        previous, old = reuse
        if not isinstance(previous, VectorIndex):
            raise ParameterError(
                f"invalid parameter reuse: {type(previous).__name__} is not a VectorIndex"
            )
        old_rows = np.asarray(old)
        if old_rows.shape != (n,) or old_rows.dtype.kind not in "iu":
            raise ParameterError(
                f"invalid parameter reuse: old rows must be {n} integers, got shape "
                f"{old_rows.shape} of {old_rows.dtype}"
            )
        old_rows = old_rows.astype(np.int64)
        if len(old_rows) and (old_rows.min() < -1 or old_rows.max() >= len(previous)):
            raise ParameterError(
                f"invalid parameter reuse: old rows must be in -1..{len(previous) - 1}"
            )
        same = (
            previous._dim == self._dim
            and previous._dtype == self._dtype
            and previous._connectivity == self._connectivity
            and previous._expansion_add == self._expansion_add
            and previous._expansion_search == self._expansion_search
        )
        return (previous, old_rows) if same else (None, None)

    def _from_previous(
        self, previous: VectorIndex, code: int, old: I64, vectors: F32, threads: int
    ) -> tuple[Index | None, str]:
        """The previous HNSW sub-index of tenant ``code``, as it is or extended with the
        new rows, when its rows are exactly the first rows of this tenant (``old``: each
        row's old row, -1 for a new or changed vector)."""
        pos = previous._position.get(code)
        if pos is None:
            return None, "built"
        part = previous._parts[pos]
        if part.hnsw is None:
            return None, "built"
        m = len(part.rows)
        if len(old) < m or not np.array_equal(old[:m], part.rows) or (old[m:] != -1).any():
            return None, "built"
        if len(old) == m:
            return part.hnsw, "reused"  # never mutated: sharing it is safe
        try:
            index = part.hnsw.copy()
        except (RuntimeError, ValueError):  # pragma: no cover - usearch refuses to copy
            return None, "built"
        index.add(np.arange(m, len(old), dtype=np.uint64), vectors[m:], threads=threads)
        return index, "extended"

    def _build_sketches(self) -> tuple[npt.NDArray[np.uint64], F32]:
        """Sign codes (n_sketch, words) of the sketch tenants' rows, each around its
        tenant's centre (the mean of its rows), and the centres (t_sketch, dim)."""
        sizes = np.diff(self._offsets)
        sketch = self._kinds == _SKETCH
        starts = np.concatenate(([0], np.cumsum(np.where(self._kinds != _HNSW, sizes, 0))))
        words = -(-self._dim // 64)
        codes = np.zeros((int(sizes[sketch].sum()), words), dtype=np.uint64)
        centres = np.zeros((int(sketch.sum()), self._dim), dtype=np.float32)
        at = 0
        for j, t in enumerate(np.flatnonzero(sketch).tolist()):
            m = int(sizes[t])
            part = self._exact[int(starts[t]) : int(starts[t]) + m]
            centres[j] = part.mean(axis=0, dtype=np.float64)
            codes[at : at + m] = _core.sketch_codes(part, centres[j]).reshape(m, words)
            at += m
        return codes, centres

    def _build_int4(self) -> tuple[npt.NDArray[np.uint8], F32]:
        """The sketch tenants' rows minus their centre, quantised to 4 bits with one scale
        per dimension and tenant: (n_sketch, ceil(dim / 2)) uint8 and the scales
        (t_sketch, dim)."""
        sizes = np.diff(self._offsets)
        sketch = self._kinds == _SKETCH
        starts = np.concatenate(([0], np.cumsum(np.where(self._kinds != _HNSW, sizes, 0))))
        width = -(-self._dim // 2)
        int4 = np.zeros((int(sizes[sketch].sum()), width), dtype=np.uint8)
        scales = np.zeros((int(sketch.sum()), self._dim), dtype=np.float32)
        at = 0
        for j, t in enumerate(np.flatnonzero(sketch).tolist()):
            m = int(sizes[t])
            part = self._exact[int(starts[t]) : int(starts[t]) + m]
            q, scales[j] = _core.sketch_int4(part, np.ascontiguousarray(self._centres[j]))
            int4[at : at + m] = q.reshape(m, width)
            at += m
        return int4, scales

    def _index_parts(self) -> None:
        """Per-tenant views for search, from the tenant tables (after build or load)."""
        sizes = np.diff(self._offsets)
        starts = np.zeros(len(sizes), dtype=np.int64)
        starts[1:] = np.cumsum(np.where(self._kinds != _HNSW, sizes, 0))[:-1]
        code_starts = np.zeros(len(sizes), dtype=np.int64)
        code_starts[1:] = np.cumsum(np.where(self._kinds == _SKETCH, sizes, 0))[:-1]
        centre_of = np.cumsum(self._kinds == _SKETCH) - 1
        self._parts: list[_Part] = []
        bounds = zip(
            self._offsets[:-1].tolist(), self._offsets[1:].tolist(), starts.tolist(), strict=True
        )
        for t, (lo, hi, start) in enumerate(bounds):
            hnsw = self._hnsw.get(t)
            exact = None if hnsw is not None else self._exact[start : start + hi - lo]
            if self._kinds[t] == _SKETCH:
                cs = int(code_starts[t])
                codes = self._sketch[cs : cs + hi - lo]
                centre = self._centres[int(centre_of[t])]
                int4 = self._int4[cs : cs + hi - lo]
                scales = self._scales[int(centre_of[t])]
                self._parts.append(
                    _Part(self._rows[lo:hi], exact, None, codes, centre, int4, scales)
                )
            else:
                self._parts.append(_Part(self._rows[lo:hi], exact, hnsw))
        self._position = {int(c): i for i, c in enumerate(self._codes.tolist())}

    def _new_hnsw(self) -> Index:
        index: Index = _usearch().Index(
            ndim=self._dim,
            metric="cos",
            dtype=self._dtype,
            connectivity=self._connectivity,
            expansion_add=self._expansion_add,
            expansion_search=self._expansion_search,
        )
        return index

    # ------------------------------------------------------------------ properties

    @property
    def dim(self) -> int:
        """Dimension of the vectors."""
        return self._dim

    def __len__(self) -> int:
        """Number of vectors (rows) held, over all tenants."""
        return self._n

    @property
    def dtype(self) -> Literal["f16", "f32"]:
        """Scalar kind of the HNSW sub-indexes."""
        return self._dtype

    @property
    def threads(self) -> int:
        """Threads one HNSW search uses."""
        return self._threads

    @property
    def rerank(self) -> int | None:
        """Sketch candidates re-scored exactly per query (None: :func:`default_rerank`)."""
        return self._rerank

    @property
    def refine(self) -> int | None:
        """Sketch candidates kept by the 4-bit stage and re-scored exactly per query (None:
        ``max(REFINE_FLOOR, REFINE_PER_K * k)``)."""
        return self._refine

    @property
    def backend(self) -> Literal["exact", "hnsw", "sketch", "mixed"]:
        """``"exact"``, ``"hnsw"`` or ``"sketch"`` when every tenant with rows uses that
        backend, else ``"mixed"`` (see :attr:`backends` for each tenant)."""
        used = set(self._kinds[np.diff(self._offsets) > 0].tolist())
        if used == {_HNSW}:
            return "hnsw"
        if used == {_SKETCH}:
            return "sketch"
        return "exact" if used <= {_EXACT} else "mixed"

    @property
    def backends(self) -> dict[int, Backend]:
        """Backend of each known tenant code (a tenant without rows is ``"exact"``)."""
        return {
            int(c): _KIND_NAMES[int(k)]
            for c, k in zip(self._codes.tolist(), self._kinds.tolist(), strict=True)
        }

    def tenants(self) -> npt.NDArray[np.uint32]:
        """Known tenant codes, ascending (uint32, read-only)."""
        out = self._codes.view()
        out.setflags(write=False)
        return out

    def tenant_size(self, tenant: int | np.integer[Any] | None = None) -> int:
        """Number of rows of ``tenant``.

        Args:
            tenant: Tenant code (None: the index's only tenant).

        Returns:
            The tenant's row count (0 for a known tenant without rows).

        Raises:
            ParameterError: ``tenant`` is None but the index holds several tenants, or is
                not an integer.
            UnknownTenantError: The index does not know ``tenant``.
        """
        t = self._resolve(tenant)
        return int(self._offsets[t + 1] - self._offsets[t])

    def tenant_rows(self, tenant: int | np.integer[Any] | None = None) -> I64:
        """The global rows of ``tenant``, ascending (int64, read-only).

        Raises:
            ParameterError: ``tenant`` is None but the index holds several tenants.
            UnknownTenantError: The index does not know ``tenant``.
        """
        out = self._parts[self._resolve(tenant)].rows.view()
        out.setflags(write=False)
        return out

    def __repr__(self) -> str:
        return (
            f"VectorIndex(n={self._n}, dim={self._dim}, tenants={len(self._codes)}, "
            f"backend={self.backend!r}, dtype={self._dtype!r})"
        )

    # ------------------------------------------------------------------ search

    def _resolve(self, tenant: object) -> int:
        """Position of the tenant argument among the known codes."""
        if tenant is None:
            if len(self._codes) > 1:
                shown = ", ".join(map(str, self._codes[:10].tolist()))
                more = ", ..." if len(self._codes) > 10 else ""
                raise ParameterError(
                    f"invalid parameter tenant: the index holds {len(self._codes)} tenants "
                    f"({shown}{more}); name one"
                )
            return 0
        if isinstance(tenant, bool) or not isinstance(tenant, (int, np.integer)):
            raise ParameterError(
                f"invalid parameter tenant: expected an integer tenant code or None, got {tenant!r}"
            )
        t = operator.index(tenant)
        pos = self._position.get(t)
        if pos is None:
            raise UnknownTenantError(f"unknown tenant {t}: the vector index holds no such tenant")
        return pos

    def _one_query(self, queries: object) -> F32 | None:
        """A single valid query that is already a C-contiguous float32 ``(d,)`` or ``(1, d)``
        array, normalised as :meth:`_queries` does, as ``(1, d)``; None for anything else
        (including a NaN, infinite or zero query: :meth:`_queries` then says what is wrong).
        """
        if (
            type(queries) is not np.ndarray
            or queries.dtype != np.float32
            or not queries.flags.c_contiguous
            or queries.ndim > 2
            or queries.shape[-1:] != (self._dim,)
            or queries.size != self._dim
        ):
            return None
        wide = queries.astype(np.float64).reshape(-1)  # float32 squares are exact in float64
        sq = float(wide @ wide)
        if not 0.0 < sq < math.inf:  # NaN fails both
            return None
        norm = np.float32(math.sqrt(sq))
        one: F32 = queries.reshape(1, self._dim)
        return one if norm == 1.0 else one / norm

    def _queries(self, queries: npt.ArrayLike) -> F32:
        arr = _as_f32(queries, "queries", EmbeddingError)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2:
            raise EmbeddingError(f"queries: expected shape (d,) or (q, d), got {arr.shape}")
        if arr.shape[1] != self._dim:
            raise EmbeddingError(
                f"queries have dimension {arr.shape[1]}, the index holds {self._dim}-d vectors"
            )
        out, code, i = _unit_rows(arr)
        if code == -1:
            raise EmbeddingError(f"queries: query {i} holds NaN or inf")
        if code == -2:
            raise EmbeddingError(f"queries: query {i} is a zero vector")
        return out

    def search(
        self,
        queries: npt.ArrayLike,
        k: int | np.integer[Any],
        *,
        tenant: int | np.integer[Any] | None = None,
        min_score: float | np.floating[Any] | None = None,
    ) -> VectorMatches:
        """The ``k`` rows of ``tenant`` most similar to each query, best first.

        Args:
            queries: (d,) or (q, d) query vectors (normalised here; q may be 0).
            k: Results wanted per query (1..:data:`MAX_K`); the result has ``k`` columns.
            tenant: Tenant code (None: the index's only tenant).
            min_score: Drop results with a cosine similarity below this (finite).

        Returns:
            :class:`VectorMatches` with (q, k) rows and scores: exact path best first
            with ties by row; HNSW approximate, best first, ties by row among what it found.
            A known tenant without rows gives empty results.

        Raises:
            EmbeddingError: A query of the wrong dimension or shape, NaN / inf, or zero.
            ParameterError: ``k`` or ``min_score`` out of range; ``tenant`` None with
                several tenants, or not an integer.
            UnknownTenantError: The index does not know ``tenant``.
        """
        kk = k if type(k) is int and 0 < k <= MAX_K else _int_param("k", k, 1, MAX_K)
        floor: float | None = None
        if min_score is not None:
            if isinstance(min_score, bool) or not isinstance(min_score, (int, float, np.number)):
                raise ParameterError(
                    f"invalid parameter min_score: expected a number or None, got {min_score!r}"
                )
            floor = float(min_score)
            if not math.isfinite(floor):
                raise ParameterError(f"invalid parameter min_score: {floor} is not finite")
        t = self._resolve(tenant)
        part = self._parts[t]
        one = self._one_query(queries)
        if one is not None and part.codes is not None and len(part.rows) > 0:
            return self._sketch_one(part, one, kk, floor)
        qs = self._queries(queries) if one is None else one
        nq = qs.shape[0]
        rows = np.full((nq, kk), -1, dtype=np.int64)
        scores = np.full((nq, kk), np.nan, dtype=np.float32)
        counts = np.zeros(nq, dtype=np.int64)
        size = len(part.rows)
        if size == 0 or nq == 0:
            return _frozen(rows, scores, counts)
        if (
            part.codes is not None
            and part.exact is not None
            and part.centre is not None
            and part.int4 is not None
            and part.scales is not None
        ):
            rerank = self._rerank or default_rerank(kk, size)
            refine = self._refine or max(REFINE_FLOOR, REFINE_PER_K * kk)
            pos, val, cnt = _core.sketch_search(
                part.codes,
                part.exact,
                part.centre,
                part.int4,
                part.scales,
                qs,
                min(kk, size),
                rerank,
                refine,
            )
            w = min(kk, size)
            pos = pos.reshape(nq, w)
            rows[:, :w] = np.where(pos >= 0, part.rows[np.maximum(pos, 0)], -1)
            scores[:, :w] = val.reshape(nq, w)
            counts[:] = cnt
        elif part.exact is not None:
            counts[:] = _exact_search(part.exact, qs, kk, part.rows, rows, scores)
        elif part.hnsw is not None:
            self._hnsw_search(part.hnsw, qs, min(kk, size), part.rows, rows, scores, counts)
        if floor is not None:
            drop = scores < floor  # padding is NaN: never below; best first: a suffix drops
            if drop.any():
                rows[drop] = -1
                scores[drop] = np.nan
                counts[:] = (rows >= 0).sum(axis=1)
        return _frozen(rows, scores, counts)

    def _sketch_one(self, part: _Part, query: F32, k: int, floor: float | None) -> VectorMatches:
        """:meth:`search` of one normalised ``(1, d)`` query on a sketch tenant with rows:
        the same answer, with no padded arrays made when the tenant fills all ``k``."""
        size = len(part.rows)
        w = min(k, size)
        pos, val, cnt = _core.sketch_search(
            cast(U64, part.codes),
            cast(F32, part.exact),
            cast(F32, part.centre),
            cast(U8, part.int4),
            cast(F32, part.scales),
            query,
            w,
            self._rerank or default_rerank(k, size),
            self._refine or max(REFINE_FLOOR, REFINE_PER_K * k),
        )
        c = int(cnt[0])
        if floor is not None:
            c = int(np.count_nonzero(val[:c] >= floor))  # best first: a suffix drops
        if c == k:
            rows = part.rows[pos].reshape(1, k)
            scores = val.reshape(1, k)
        else:
            rows = np.full((1, k), -1, dtype=np.int64)
            scores = np.full((1, k), np.nan, dtype=np.float32)
            rows[0, :c] = part.rows[pos[:c]]
            scores[0, :c] = val[:c]
        cnt[0] = c
        return _frozen(rows, scores, cnt)

    def _hnsw_search(
        self,
        index: Index,
        queries: F32,
        count: int,
        local: I64,
        rows: I64,
        scores: F32,
        counts: I64,
    ) -> None:
        """usearch search of ``count`` neighbours, written into ``rows`` / ``scores`` /
        ``counts`` as global rows, best first, ties by row."""
        found = index.search(queries, count, threads=self._threads)
        usearch = _usearch()
        if isinstance(found, usearch.Matches):  # usearch unwraps a batch of one query: valid only
            c = min(len(found.keys), count)
            val1 = np.float32(1.0) - np.asarray(found.distances[:c], dtype=np.float32)
            found_rows = local[np.asarray(found.keys[:c], dtype=np.int64)]
            if c > 1 and (val1[1:] == val1[:-1]).any():
                order = np.lexsort((found_rows, -val1))
                found_rows, val1 = found_rows[order], val1[order]
            rows[0, :c] = found_rows
            scores[0, :c] = val1
            counts[0] = c
            return
        if isinstance(found, usearch.BatchMatches):
            keys = np.asarray(found.keys)
            dist = np.asarray(found.distances)
            cnt = np.asarray(found.counts, dtype=np.int64)
        else:  # pragma: no cover - usearch API change
            raise TypeError(f"usearch returned {type(found).__name__}")
        got = min(count, keys.shape[1])
        cnt = np.minimum(cnt, got)
        filled = np.arange(got) < cnt[:, None]
        # Keys are 0..size-1 (built so, checked at load); padding keys are masked out.
        pos = np.where(filled, keys[:, :got], 0).astype(np.int64)
        # usearch sorts by distance; 1 - distance keeps that order but may round distinct
        # distances to one score: re-sort those ties by row (positions ascend with rows).
        val = np.where(filled, np.float32(1.0) - dist[:, :got], np.float32(np.nan))
        rows[:, :got] = np.where(filled, local[pos], -1)
        scores[:, :got] = val
        counts[:] = cnt
        if got > 1 and (val[:, 1:] == val[:, :-1]).any():
            key_rows = np.where(filled, rows[:, :got], np.iinfo(np.int64).max)
            order = np.lexsort((key_rows, np.where(filled, -val, np.inf)), axis=1)
            rows[:, :got] = np.take_along_axis(rows[:, :got], order, axis=1)
            scores[:, :got] = np.take_along_axis(val, order, axis=1)

    # ------------------------------------------------------------------ persistence

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save the index to ``directory`` (see the module docstring for the layout).

        The directory is created; an existing vector index there is replaced atomically.

        Args:
            directory: Target directory. It must not exist, be empty, or hold a vector
                index.

        Returns:
            The directory.

        Raises:
            ParameterError: ``directory`` exists and is neither empty nor a vector index.
            StorageError: Writing failed (the message names the path).
        """
        target = Path(directory)
        if target.exists():
            if not target.is_dir():
                raise ParameterError(f"invalid parameter directory: {target} is not a directory")
            if any(target.iterdir()):
                try:
                    _read_header(target)
                except StorageError:
                    raise ParameterError(
                        f"invalid parameter directory: {target} exists, is not empty and is "
                        "not a vector index; refusing to replace it"
                    ) from None
        try:
            out = BundleWriter(target, magic=MAGIC, version=FORMAT_VERSION)
        except OSError as exc:
            raise StorageError(f"{target}: cannot create the vector index ({exc})") from None
        try:
            with out:
                arrays: dict[str, npt.NDArray[Any]] = {
                    "tenants": self._codes,
                    "offsets": self._offsets,
                    "kinds": self._kinds,
                    "rows": self._rows,
                    "exact": self._exact,
                    "sketch": self._sketch,
                    "centres": self._centres,
                    "int4": self._int4,
                    "scales": self._scales,
                }
                for stem, arr in arrays.items():
                    out.add_array(f"{stem}.npy", arr)
                hnsw: dict[str, str] = {}
                for t, index in self._hnsw.items():
                    code = int(self._codes[t])
                    name = f"hnsw-{code}.usearch"
                    index.save(os.fspath(out.path(name)))
                    out.add_file(name)
                    hnsw[str(code)] = name
                return out.publish(
                    {
                        "dim": self._dim,
                        "n": self._n,
                        "n_tenants": len(self._codes),
                        "dtype": self._dtype,
                        "backend": self._mode,
                        "exact_below": self._exact_below,
                        "sketch_below": self._sketch_below,
                        "rerank": self._rerank,
                        "refine": self._refine,
                        "connectivity": self._connectivity,
                        "expansion_add": self._expansion_add,
                        "expansion_search": self._expansion_search,
                        "threads": self._threads,
                        "tenant_backends": {
                            str(c): b for c, b in self.backends.items() if self.tenant_size(c) > 0
                        },
                        "hnsw": hnsw,
                    }
                )
        except OSError as exc:
            raise StorageError(f"{target}: cannot write the vector index ({exc})") from None

    @classmethod
    def load(
        cls, directory: str | os.PathLike[str], *, view: bool = True, verify: bool = True
    ) -> VectorIndex:
        """Load an index written by :meth:`save`.

        Args:
            directory: The index directory.
            view: Memory-map the files (numpy ``mmap_mode="r"``, usearch ``view``) instead
                of reading them into memory: a fast cold start, pages shared between
                processes. The files must then stay unchanged while the index is used.
            verify: Check every file's CRC-32 (reads each file once). Sizes, shapes and the
                structure are always checked.

        Returns:
            The index, answering exactly as the saved one.

        Raises:
            ParameterError: ``view`` or ``verify`` is not a bool.
            NotAStoreError: ``directory`` holds no graphrecall vector index.
            SchemaVersionError: The index was written in another format version.
            CorruptStoreError: A file is missing, truncated, corrupted or inconsistent.
        """
        for name, flag in (("view", view), ("verify", verify)):
            if not isinstance(flag, bool):
                raise ParameterError(f"invalid parameter {name}: expected a bool, got {flag!r}")
        root = Path(directory)
        header = _read_header(root)
        try:
            return cls._from_header(root, header, view=view, verify=verify)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptStoreError(f"{root}: inconsistent vector index ({exc!r})") from None

    @classmethod
    def _from_header(
        cls, root: Path, header: dict[str, Any], *, view: bool, verify: bool
    ) -> VectorIndex:
        files = header["files"]
        if not isinstance(files, dict):
            raise CorruptStoreError(f"{root}: header lists no files")
        dim, n = int(header["dim"]), int(header["n"])
        v1 = header["format_version"] == 1
        words = -(-dim // 64)
        # Version 1 has no sketch; a version-2 directory from before the 4-bit stage has no
        # 4-bit rows: they are rebuilt from exact.npy and centres.npy below.
        derive = v1 or not all(f"{s}.npy" in files for s in _DERIVED)
        arr = {
            s: (
                np.zeros((0, words if s == "sketch" else dim), dtype=_ARRAYS[s][0])
                if (v1 and s in _V1_ABSENT) or (derive and s in _DERIVED)
                else _load_npy(root, s, files, view, verify)
            )
            for s in _ARRAYS
        }
        dtype = header["dtype"]
        codes, offsets, kinds, rows, exact, sketch, centres, int4, scales = (
            arr[s] for s in _ARRAYS
        )

        def bad(what: str) -> CorruptStoreError:
            return CorruptStoreError(f"{root}: inconsistent vector index ({what})")

        t = len(codes)
        if dim < 1 or n < 1 or dtype not in ("f16", "f32") or t < 1:
            raise bad("dim, n, dtype or tenant count out of range")
        if t != int(header["n_tenants"]) or len(offsets) != t + 1 or len(kinds) != t:
            raise bad("tenant tables of different lengths")
        if t > 1 and not (np.diff(codes.astype(np.int64)) > 0).all():
            raise bad("tenant codes not strictly ascending")
        sizes = np.diff(offsets)
        if offsets[0] != 0 or offsets[-1] != n or (sizes < 0).any() or len(rows) != n:
            raise bad("row offsets do not cover the rows")
        if not np.isin(kinds, (_EXACT, _HNSW) if v1 else (_EXACT, _HNSW, _SKETCH)).all():
            raise bad("unknown backend code")
        if (rows < 0).any() or (rows >= n).any() or (np.bincount(rows, minlength=n) != 1).any():
            raise bad("rows are not a permutation of 0..n-1")
        inner = np.ones(n, dtype=bool)
        inner[offsets[:-1][sizes > 0]] = False
        if n > 1 and not (np.diff(rows)[inner[1:]] > 0).all():
            raise bad("rows not ascending within a tenant")
        n_exact = int(sizes[kinds != _HNSW].sum())
        if exact.shape != (n_exact, dim):
            raise bad(f"exact.npy has shape {exact.shape}, expected ({n_exact}, {dim})")
        n_sketch, t_sketch = int(sizes[kinds == _SKETCH].sum()), int((kinds == _SKETCH).sum())
        if sketch.shape != (n_sketch, words):
            raise bad(f"sketch.npy has shape {sketch.shape}, expected ({n_sketch}, {words})")
        if centres.shape != (t_sketch, dim):
            raise bad(f"centres.npy has shape {centres.shape}, expected ({t_sketch}, {dim})")
        if verify and t_sketch and not np.isfinite(centres).all():
            raise bad("centres.npy holds NaN or inf")
        width = -(-dim // 2)
        if not derive and int4.shape != (n_sketch, width):
            raise bad(f"int4.npy has shape {int4.shape}, expected ({n_sketch}, {width})")
        if not derive and scales.shape != (t_sketch, dim):
            raise bad(f"scales.npy has shape {scales.shape}, expected ({t_sketch}, {dim})")
        if verify and not derive and t_sketch and not np.isfinite(scales).all():
            raise bad("scales.npy holds NaN or inf")
        if verify and n_exact and not np.isfinite(exact).all():
            raise bad("exact.npy holds NaN or inf")

        out = cls.__new__(cls)
        out._dim, out._n = dim, n
        out._dtype = dtype
        out._mode = _choice("backend", header["backend"], _MODES)
        out._exact_below = _int_param("exact_below", header["exact_below"], 0)
        out._sketch_below = _int_param("sketch_below", header.get("sketch_below", 0), 0)
        rerank = header.get("rerank")
        out._rerank = None if rerank is None else _int_param("rerank", rerank, 1, MAX_K)
        refine = header.get("refine")
        out._refine = None if refine is None else _int_param("refine", refine, 1, MAX_K)
        out._connectivity = _int_param("connectivity", header["connectivity"], 2, 1024)
        out._expansion_add = _int_param("expansion_add", header["expansion_add"], 1, _MAX_EXPANSION)
        out._expansion_search = _int_param(
            "expansion_search", header["expansion_search"], 1, _MAX_EXPANSION
        )
        out._threads = _int_param("threads", header["threads"], 1, _MAX_THREADS)
        out._codes = np.asarray(codes, dtype=np.uint32)
        out._offsets = np.asarray(offsets, dtype=np.int64)
        out._kinds = np.asarray(kinds, dtype=np.uint8)
        out._rows = rows
        out._exact = exact
        out._sketch = np.asarray(sketch, dtype=np.uint64)
        out._centres = np.asarray(centres, dtype=np.float32)
        if derive:
            out._int4, out._scales = out._build_int4()
        else:
            out._int4 = np.asarray(int4, dtype=np.uint8)
            out._scales = np.asarray(scales, dtype=np.float32)
        listed = header["hnsw"]
        wanted = {str(int(out._codes[i])) for i in np.flatnonzero(kinds == _HNSW).tolist()}
        if not isinstance(listed, dict) or set(listed) != wanted:
            raise bad("the HNSW files listed do not match the HNSW tenants")
        scalar = {"f16": "F16", "f32": "F32"}[dtype]
        out._hnsw = {}
        for i in np.flatnonzero(kinds == _HNSW).tolist():
            code = int(out._codes[i])
            name = f"hnsw-{code}.usearch"
            if listed[str(code)] != name:
                raise bad(f"tenant {code}'s HNSW file is {listed[str(code)]!r}")
            path = _check_file(root, name, files, verify)
            try:
                meta = _usearch().Index.metadata(os.fspath(path))
            except (ValueError, RuntimeError) as exc:
                raise CorruptStoreError(f"{path}: not a usearch index ({exc})") from None
            size = int(sizes[i])
            if (
                meta is None
                or int(meta["dimensions"]) != dim
                or getattr(meta["kind_scalar"], "name", None) != scalar
                or getattr(meta["kind_metric"], "name", None) != "Cos"
                or int(meta["count_present"]) != size
                or int(meta["count_deleted"]) != 0
            ):
                raise CorruptStoreError(
                    f"{path}: usearch index does not match the header "
                    f"(want {size} {dtype} cos vectors of dimension {dim}, found {meta})"
                )
            index = out._new_hnsw()
            try:
                if view:
                    index.view(os.fspath(path))
                else:
                    index.load(os.fspath(path))
            except (ValueError, RuntimeError) as exc:
                raise CorruptStoreError(f"{path}: unreadable usearch index ({exc})") from None
            keys = np.sort(np.asarray(index.keys, dtype=np.int64))
            if len(index) != size or not np.array_equal(keys, np.arange(size)):
                raise CorruptStoreError(f"{path}: usearch keys are not 0..{size - 1}")
            out._hnsw[i] = index
        out.hnsw_origin = {}  # loaded as saved, nothing built
        out._index_parts()
        return out
