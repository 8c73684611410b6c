"""Vectors stored with the graph (:class:`EmbeddingSet`), and the column conversion every
table shares (:func:`to_column`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DataError
from .columns import unmask
from .constants import EmbeddingKind
from .faults import column_error
from .work import _EMBEDDING_KINDS, _OBJECT_COLUMNS, Array, _object_array

__all__ = ["EmbeddingSet", "to_column"]


@dataclass
class EmbeddingSet:
    """Vectors stored with the graph: one model's embeddings of entities, chunks or aliases.

    Attributes:
        kind: What the ids name: ``"entity"``, ``"chunk"`` or ``"alias"`` (alias text).
        ids: The embedded rows' ids, shape ``(n,)``.
        vectors: ``float32 (n, d)`` (L2-normalised or not: stored as given). Before
            :meth:`GraphTables.check`, a ragged sequence of vectors is accepted too (an
            object array of 1-D vectors); the check refuses rows of the wrong dimension.
        model: The model's name (None = unnamed).
    """

    kind: EmbeddingKind
    ids: Array
    vectors: Array
    model: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _EMBEDDING_KINDS:
            raise DataError(
                f"embeddings: kind {self.kind!r} is not one of 'entity', 'chunk', 'alias'",
                table="embeddings",
                column="kind",
                kind="invalid_value",
                input=self.kind,
            )
        if self.model is not None and not isinstance(self.model, str):
            raise DataError(
                f"embeddings ({self.kind}): model {self.model!r} is not a str",
                table="embeddings",
                column="model",
                kind="invalid_value",
                input=self.model,
            )
        self.ids = to_column(self.ids, "embeddings", "id")
        self.vectors = _vectors(self.vectors, self.kind)
        if len(self.vectors) != len(self.ids):
            raise DataError(
                f"embeddings ({self.kind}, model {self.model!r}): {len(self.ids)} ids but "
                f"{len(self.vectors)} vectors",
                table="embeddings",
                column="vector",
                kind="length_mismatch",
                ctx={"expected": len(self.ids), "got": len(self.vectors)},
            )

    @property
    def dim(self) -> int | None:
        """The vectors' dimension (None while ragged, before the check)."""
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else None

    def __len__(self) -> int:
        return len(self.ids)


def to_column(values: Any, table: str, name: str) -> Array:
    """Any 1-D column -> a numpy array (text as an object array)."""
    values = unmask(values)  # masked entries are nulls
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()  # pandas Series / Arrow arrays
    if isinstance(values, np.ndarray):
        arr = values
    else:
        # Python sequences: numpy only when every value has one plain type, so that numpy
        # never turns [1, "1"] into text or [True, 2] into ints.
        seq = list(values)
        kinds = {type(v) for v in seq}
        if name not in _OBJECT_COLUMNS and (kinds == {int} or kinds == {float}):
            try:
                arr = np.asarray(seq)
            except OverflowError:
                arr = _object_array(seq)
        else:
            arr = _object_array(seq)
    if arr.ndim != 1:
        raise column_error(
            table, name, f"must be one-dimensional, got shape {arr.shape}", kind="invalid_value"
        )
    if arr.dtype.kind in "US":
        arr = arr.astype(object)
    return arr


def _vectors(vectors: Any, kind: str) -> Array:
    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        return vectors
    seq = list(vectors)
    try:
        arr = np.asarray(seq, dtype=np.float64) if seq else np.zeros((0, 0))
    except (ValueError, TypeError):
        arr = _object_array(seq)
    if arr.ndim == 2:
        return arr
    if arr.ndim == 1 and arr.dtype != object:
        arr = _object_array(seq)
    if arr.ndim != 1:
        raise DataError(
            f"embeddings ({kind}): vectors must be (n, d), got shape {arr.shape}",
            table="embeddings",
            column="vector",
            kind="invalid_value",
        )
    return arr
