"""The per-tenant vector index: build, tenant lookup and batched cosine top-k search."""

from __future__ import annotations

import math
import operator
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from ... import _core
from ...errors import DataError, ParameterError, UnknownTenantError
from .backends import _build_int4, _build_sketches, _exact_search, _hnsw_search, _usearch
from .common import (
    _EXACT,
    _HNSW,
    _KIND_NAMES,
    _MAX_EXPANSION,
    _MAX_THREADS,
    _MODES,
    _SKETCH,
    EXACT_BELOW,
    F32,
    I64,
    MAX_K,
    MAX_N_TENANTS,
    REFINE_FLOOR,
    REFINE_PER_K,
    SKETCH_BELOW,
    U8,
    U64,
    Backend,
    VectorMatches,
    _choice,
    _frozen,
    _int_param,
    _normalised_vectors,
    _one_query,
    _Part,
    _queries,
    _tenant_codes,
    default_rerank,
)
from .grow import appended_fast, from_previous, kinds_of, reuse_args
from .persist import _load, _save

if TYPE_CHECKING:
    from usearch.index import Index


class VectorIndex:
    """Cosine top-k over vectors with tenant codes (see :mod:`graphrecall.anchors.vectors`).

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
            is slow, so a fact-only update rebuilds nothing and an entity added to one tenant
            adds only its vector.

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
        kinds = kinds_of(mode, below, self._sketch_below, sizes)

        self._n = n
        self._mode = mode
        self._exact_below = below
        self._codes = known.astype(np.uint32)
        self._offsets = offsets
        self._kinds = kinds
        self._rows = rows
        exact_mask = np.repeat(kinds != _HNSW, sizes)
        self._exact: F32 = np.ascontiguousarray(matrix[rows[exact_mask]])
        self._sketch, self._centres = _build_sketches(self._exact, offsets, kinds, self._dim)
        self._int4, self._scales = _build_int4(
            self._exact, offsets, kinds, self._dim, self._centres
        )
        self._hnsw: dict[int, Index] = {}
        #: Per HNSW tenant code: "reused", "extended" (old graph + new vectors) or "built".
        self.hnsw_origin: dict[int, str] = {}
        previous, old_rows = reuse_args(self, reuse, n)
        for t in np.flatnonzero(kinds == _HNSW).tolist():
            lo, hi = int(offsets[t]), int(offsets[t + 1])
            code = int(known[t])
            index, origin = None, "built"
            if previous is not None and old_rows is not None:
                index, origin = from_previous(
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

    def appended(
        self,
        vectors: npt.ArrayLike,
        tenants: npt.ArrayLike | None = None,
        *,
        n_tenants: int | None = None,
        build_threads: int = 0,
    ) -> VectorIndex:
        """A new index over ``vectors`` whose first ``len(self)`` rows, with their tenant
        codes, are the rows this index was built from (the caller's guarantee: they are
        not compared), computing only what the appended rows change.

        The old rows' normalised vectors, exact copies, sketch codes and HNSW graphs are
        reused: only the appended rows are normalised, a sketch tenant that got rows has
        its centre, sign codes and 4-bit codes computed again (the centre moved), an HNSW
        tenant that got rows gets a copy of its graph with them added, and the grouped
        arrays are copied with the new rows inserted (no other arithmetic). The result
        answers exactly as ``VectorIndex(vectors, tenants, n_tenants=n_tenants,
        build_threads=build_threads, ...)`` with this index's other parameters and
        ``reuse=(self, old rows)``; that constructor is used where an appended row brings
        a tenant the index does not know or moves a tenant to another backend.

        Args:
            vectors: (n, d) matrix, ``n >= len(self)``; rows ``len(self)..n-1`` are new.
            tenants: (n,) tenant codes (None: every row is tenant 0).
            n_tenants: As in the constructor.
            build_threads: As in the constructor.

        Returns:
            The new index (this one is unchanged).

        Raises:
            DataError, ParameterError: As the constructor.
        """
        n_old = self._n
        arr = np.asarray(vectors)
        old_rows = None
        if arr.ndim == 2 and arr.shape[0] >= n_old and arr.shape[1] == self._dim:
            n = int(arr.shape[0])
            old_rows = np.arange(n, dtype=np.int64)
            old_rows[n_old:] = -1
        fast = appended_fast(self, arr, tenants, n_tenants, build_threads)
        if fast is not None:
            return fast
        return VectorIndex(
            vectors,
            tenants,
            backend=cast(Literal["auto", "exact", "hnsw", "sketch"], self._mode),
            exact_below=self._exact_below,
            sketch_below=self._sketch_below,
            rerank=self._rerank,
            refine=self._refine,
            dtype=self._dtype,
            connectivity=self._connectivity,
            expansion_add=self._expansion_add,
            expansion_search=self._expansion_search,
            threads=self._threads,
            build_threads=build_threads,
            n_tenants=n_tenants,
            reuse=None if old_rows is None else (self, old_rows),
        )

    # ------------------------------------------------------------------ properties

    @property
    def dim(self) -> int:
        """Dimension of the vectors."""
        return self._dim

    def __len__(self) -> int:
        """Number of vectors (rows) held, over all tenants."""
        return self._n

    @property
    def settings(self) -> dict[str, object]:
        """The constructor parameters this index was built with (``backend`` is the
        requested mode; ``n_tenants``, ``build_threads`` and ``reuse`` are not kept)."""
        return {
            "backend": self._mode,
            "exact_below": self._exact_below,
            "sketch_below": self._sketch_below,
            "rerank": self._rerank,
            "refine": self._refine,
            "dtype": self._dtype,
            "connectivity": self._connectivity,
            "expansion_add": self._expansion_add,
            "expansion_search": self._expansion_search,
            "threads": self._threads,
        }

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
        one = _one_query(queries, self._dim)
        if one is not None and part.codes is not None and len(part.rows) > 0:
            return self._sketch_one(part, one, kk, floor)
        qs = _queries(queries, self._dim) if one is None else one
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
            _hnsw_search(
                part.hnsw, qs, min(kk, size), part.rows, rows, scores, counts, self._threads
            )
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

    # ------------------------------------------------------------------ persistence

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save the index to ``directory`` (layout in :mod:`graphrecall.anchors.vectors.persist`).

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
        return _save(self, directory)

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
        return _load(cls, directory, view=view, verify=verify)
