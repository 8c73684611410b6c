"""Vector columns read from PostgreSQL into Arrow lists: pgvector's binary form decoded for
the whole column at once, the text forms of vectors and arrays parsed by Arrow compute, and
hex ``bytea`` blobs."""

from __future__ import annotations

import binascii
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import DataError
from ..arrow.source import import_compute, import_pyarrow

__all__ = ["hex_blobs", "pgvectors", "text_vectors"]


def text_vectors(col: Any, where: str, wide: bool) -> Any:
    """``[1,2,3]`` (pgvector) / ``{1,2,3}`` (arrays) text -> ``large_list<float32>`` (or
    float64 when ``wide``), null for null; a null element (``NULL``) becomes null, which
    the conversion makes NaN and the check refuses."""
    pa = import_pyarrow()
    pc = import_compute()
    chunks = []
    for arr in col.chunks:
        n = len(arr)
        inner = pc.utf8_slice_codeunits(arr, 1, -1)
        parts = pc.split_pattern(inner, ",")
        flat = pc.list_flatten(parts)
        parents = pc.list_parent_indices(parts)
        keep = pc.not_equal(flat, "")  # "[]" / "{}": no element
        flat = flat.filter(keep)
        parents = parents.filter(keep)
        flat = pc.if_else(pc.equal(flat, "NULL"), pa.scalar(None, pa.string()), flat)
        try:
            values = flat.cast(pa.float64() if wide else pa.float32())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise DataError(
                f"{where}.embedding holds a vector that is not numbers: {exc}"
            ) from None
        counts = np.bincount(parents.to_numpy(zero_copy_only=False), minlength=n)
        chunks.append(_list_array(counts, values, arr.is_null()))
    return pa.chunked_array(chunks, type=pa.large_list(pa.float64() if wide else pa.float32()))


def _list_array(lengths: npt.NDArray[Any], values: Any, null: Any) -> Any:
    pa = import_pyarrow()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=null)


def pgvectors(col: Any, where: str) -> Any:
    """pgvector's binary form (``vector_send``: int16 dimension, int16 unused, then the
    big-endian float32 values), hex-encoded -> ``large_list<float32>``, null for null.

    Decoding hex and dropping each row's 4 header bytes is done on the whole column at once
    (``binascii`` and numpy): faster than parsing the text form ``[1,2,3]`` with Arrow, and
    exact."""
    pa = import_pyarrow()
    chunks = []
    for arr in col.chunks:
        n = len(arr)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
        offsets = offsets.astype(np.int64)
        data = arr.buffers()[2]
        hexes = b"" if data is None else memoryview(data)[offsets[0] : offsets[-1]]
        raw = np.frombuffer(binascii.a2b_hex(hexes), dtype=np.uint8)
        sizes = (offsets[1:] - offsets[:-1]) // 2
        starts = (offsets[:-1] - offsets[0]) // 2
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        lengths = np.where(valid, (sizes - 4) // 4, 0)
        heads = starts[valid]
        dims = (raw[heads].astype(np.int64) << 8) | raw[heads + 1]
        bad = (sizes[valid] < 4) | (sizes[valid] % 4 != 0) | (dims != lengths[valid])
        if bad.any():  # pragma: no cover - vector_send always writes this layout
            row = int(np.flatnonzero(valid)[int(np.argmax(bad))])
            raise DataError(f"{where} row {row}: a pgvector value of unexpected layout")
        body = np.ones(len(raw), dtype=bool)
        body[(heads[:, None] + np.arange(4)).ravel()] = False
        values = raw[body].view(">f4").astype(np.float32)
        chunks.append(_list_array(lengths, pa.array(values), arr.is_null()))
    return pa.chunked_array(chunks, type=pa.large_list(pa.float32()))


def hex_blobs(col: Any) -> Any:
    """Hex text (``encode(bytea, 'hex')``) -> Arrow binary, null for null."""
    pa = import_pyarrow()
    values = [None if s is None else bytes.fromhex(s) for s in col.to_pylist()]
    return pa.chunked_array([pa.array(values, type=pa.binary())])
