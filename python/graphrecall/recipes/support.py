"""The passages that support ranked facts, so that fact-ranking recipes fill a passage context.

For each fact in rank order, the chunks that mention both its subject and its object (else
its subject, when none mentions both, or the fact has a literal object), most mentions
first, ties by chunk row; each chunk is listed once, at its best-ranked fact, and carries
that fact's score. One native call walks a whole batch (``_core.supporting_chunks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import _core
from ..index import GraphIndex

__all__ = ["SupportingChunks", "supporting_chunks", "supporting_chunks_batch"]


@dataclass(frozen=True, slots=True)
class SupportingChunks:
    """A batch's supporting chunks, flat: query ``q``'s are ``rows[offsets[q]:offsets[q + 1]]``.

    Attributes:
        rows: (n,) int64 dense chunk rows, each query's best first.
        scores: (n,) float64: the score of the fact that listed each chunk.
        counts: (n,) int64: how often that fact's subject is mentioned in the chunk.
        offsets: (n_queries + 1,) uintp.
    """

    rows: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.uintp]


def supporting_chunks_batch(
    index: GraphIndex,
    facts: npt.NDArray[np.int64],
    scores: npt.ArrayLike,
    fact_offsets: npt.ArrayLike,
    k: int,
) -> SupportingChunks:
    """The top ``k`` chunks supporting each query's facts, for a batch in one native call.

    Args:
        index: The retrieval index.
        facts: (n,) dense fact rows, each query's in rank order.
        scores: (n,) each fact's score.
        fact_offsets: (n_queries + 1,) query ``q``'s facts are
            ``facts[fact_offsets[q]:fact_offsets[q + 1]]``.
        k: Chunks wanted at most per query (0 or less: none).

    Returns:
        The chunks per query (:class:`SupportingChunks`).

    Raises:
        DataError: A fact or entity outside the index, or offsets that do not cut ``facts``.
    """
    m = index.mentions
    rows, sc, counts, offsets = _core.supporting_chunks(
        m.entity_offsets,
        m.entity_chunks,
        m.entity_counts,
        index.fact_subject,
        index.fact_object,
        np.ascontiguousarray(facts, dtype=np.int64),
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(fact_offsets, dtype=np.uintp),
        max(int(k), 0),
    )
    return SupportingChunks(rows, sc, counts, offsets)


def supporting_chunks(
    index: GraphIndex,
    facts: npt.NDArray[np.int64] | Sequence[int],
    scores: Sequence[float] | npt.NDArray[np.float64],
    k: int,
) -> tuple[list[int], list[float], list[int]]:
    """The top ``k`` chunks supporting ``facts`` (dense rows, best first).

    Args:
        index: The retrieval index.
        facts: Dense fact rows in rank order.
        scores: Each fact's score.
        k: Chunks wanted at most.

    Returns:
        ``(chunk rows, scores, mention counts)``: each chunk's score is its best-ranked
        supporting fact's score.
    """
    fl = np.asarray(facts, dtype=np.int64)
    sl = np.asarray(scores, dtype=np.float64)
    if len(sl) != len(fl):
        raise ValueError(f"facts and scores differ in length: {len(fl)} and {len(sl)}")
    found = supporting_chunks_batch(index, fl, sl, np.array([0, len(fl)], dtype=np.uintp), k)
    return found.rows.tolist(), found.scores.tolist(), found.counts.tolist()
