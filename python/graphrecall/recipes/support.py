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
    fl = np.asarray(facts, dtype=np.int64)
    if k <= 0 or not len(fl):
        return rows, out_scores, counts
    offsets, chunks, mentions = m.entity_offsets, m.entity_chunks, m.entity_counts
    subj_l = index.fact_subject[fl].tolist()
    obj_l = index.fact_object[fl].tolist()
    for s_ent, o, s in zip(subj_l, obj_l, scores, strict=True):
        a, b = offsets[s_ent : s_ent + 2].tolist()
        if a == b:
            continue
        cs = chunks[a:b].tolist()
        cn = mentions[a:b].tolist()
        if o >= 0:
            oa, ob = offsets[o : o + 2].tolist()
            both = set(chunks[oa:ob].tolist()).intersection(cs)
            if both:
                pairs = [(-n, c) for c, n in zip(cs, cn, strict=True) if c in both]
            else:
                pairs = [(-n, c) for c, n in zip(cs, cn, strict=True)]
        else:
            pairs = [(-n, c) for c, n in zip(cs, cn, strict=True)]
        # Most mentions first, ties by chunk row.
        pairs.sort()
        for neg, c in pairs:
            if c not in seen:
                seen.add(c)
                rows.append(c)
                out_scores.append(float(s))
                counts.append(-neg)
                if len(rows) >= k:
                    return rows, out_scores, counts
    return rows, out_scores, counts
