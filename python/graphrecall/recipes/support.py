"""The passages that support ranked facts, so that fact-ranking recipes fill a passage context.

For each fact in rank order, the chunks that mention both its subject and its object (else
its subject, when none mentions both, or the fact has a literal object), most mentions
first, ties by chunk row; each chunk is listed once, at its best-ranked fact, and carries
that fact's score.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..index import GraphIndex

__all__ = ["supporting_chunks"]


def supporting_chunks(
    index: GraphIndex,
    facts: npt.NDArray[np.int64] | Sequence[int],
    scores: Sequence[float],
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
    m = index.mentions
    rows: list[int] = []
    out_scores: list[float] = []
    counts: list[int] = []
    seen: set[int] = set()
    subj, obj = index.fact_subject, index.fact_object
    for f, s in zip(np.asarray(facts, dtype=np.int64).tolist(), scores, strict=True):
        if len(rows) >= k:
            break
        cs, cn = m.chunks_of(int(subj[f]))
        cand = dict(zip(cs.tolist(), cn.tolist(), strict=True))
        o = int(obj[f])
        if o >= 0 and cand:
            both = set(m.chunks_of(o)[0].tolist()).intersection(cand)
            if both:
                cand = {c: cand[c] for c in both}
        for c in sorted(cand, key=lambda c: (-cand[c], c)):
            if c not in seen and len(rows) < k:
                seen.add(c)
                rows.append(c)
                out_scores.append(float(s))
                counts.append(int(cand[c]))
    return rows, out_scores, counts
