"""Saving and loading a :class:`VectorIndex` as one :mod:`graphrecall.bundle` directory.

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

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...bundle import BundleWriter, file_path, open_array, read_header
from ...errors import CorruptStoreError, ParameterError, StorageError
from .backends import _build_int4, _usearch
from .common import (
    _EXACT,
    _HNSW,
    _MAX_EXPANSION,
    _MAX_THREADS,
    _MODES,
    _SKETCH,
    MAX_K,
    _choice,
    _int_param,
)

if TYPE_CHECKING:
    from .index import VectorIndex

#: Format name written in ``header.json``.
MAGIC = "graphrecall-vectors"
#: Version of the directory layout this module writes (it also reads version 1, which has
#: no sketch tenants).
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
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


_WHAT = "vector index"


def _check_file(root: Path, name: str, files: object, verify: bool) -> Path:
    """The path of file ``name``, after checking it exists with the header's size and CRC."""
    return file_path(root, name, files, verify=verify, what=_WHAT)


def _load_npy(root: Path, stem: str, files: object, view: bool, verify: bool) -> npt.NDArray[Any]:
    """Array ``stem`` of the bundle, checked against its expected dtype and rank."""
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
    """The checked header of the vector index bundle at ``root``."""
    return read_header(root, magic=MAGIC, versions=_READABLE_VERSIONS, what=_WHAT)


def _save(vi: VectorIndex, directory: str | os.PathLike[str]) -> Path:
    """:meth:`VectorIndex.save`: write ``vi`` to ``directory`` as a bundle."""
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
                "tenants": vi._codes,
                "offsets": vi._offsets,
                "kinds": vi._kinds,
                "rows": vi._rows,
                "exact": vi._exact,
                "sketch": vi._sketch,
                "centres": vi._centres,
                "int4": vi._int4,
                "scales": vi._scales,
            }
            for stem, arr in arrays.items():
                out.add_array(f"{stem}.npy", arr)
            hnsw: dict[str, str] = {}
            for t, index in vi._hnsw.items():
                code = int(vi._codes[t])
                name = f"hnsw-{code}.usearch"
                index.save(os.fspath(out.path(name)))
                out.add_file(name)
                hnsw[str(code)] = name
            return out.publish(
                {
                    "dim": vi._dim,
                    "n": vi._n,
                    "n_tenants": len(vi._codes),
                    "dtype": vi._dtype,
                    "backend": vi._mode,
                    "exact_below": vi._exact_below,
                    "sketch_below": vi._sketch_below,
                    "rerank": vi._rerank,
                    "refine": vi._refine,
                    "connectivity": vi._connectivity,
                    "expansion_add": vi._expansion_add,
                    "expansion_search": vi._expansion_search,
                    "threads": vi._threads,
                    "tenant_backends": {
                        str(c): b for c, b in vi.backends.items() if vi.tenant_size(c) > 0
                    },
                    "hnsw": hnsw,
                }
            )
    except OSError as exc:
        raise StorageError(f"{target}: cannot write the vector index ({exc})") from None


def _load(
    cls: type[VectorIndex], directory: str | os.PathLike[str], *, view: bool, verify: bool
) -> VectorIndex:
    """:meth:`VectorIndex.load`: read a bundle written by :func:`_save`."""
    for name, flag in (("view", view), ("verify", verify)):
        if not isinstance(flag, bool):
            raise ParameterError(f"invalid parameter {name}: expected a bool, got {flag!r}")
    root = Path(directory)
    header = _read_header(root)
    try:
        return _from_header(cls, root, header, view=view, verify=verify)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptStoreError(f"{root}: inconsistent vector index ({exc!r})") from None


def _from_header(
    cls: type[VectorIndex], root: Path, header: dict[str, Any], *, view: bool, verify: bool
) -> VectorIndex:
    """The index described by ``header``, after checking every array and usearch file."""
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
    codes, offsets, kinds, rows, exact, sketch, centres, int4, scales = (arr[s] for s in _ARRAYS)

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
        out._int4, out._scales = _build_int4(
            out._exact, out._offsets, out._kinds, out._dim, out._centres
        )
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
