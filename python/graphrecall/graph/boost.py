"""Seed 001's mention boosts: batches of per-query lists flattened for one core call."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..tables.faults import parameter_error
from .params import _bool_param, _distances, _float_param

if TYPE_CHECKING:
    from .knowledge import KnowledgeGraph

__all__ = ["mention_boost"]


def mention_boost(
    graph: KnowledgeGraph,
    chunks: Sequence[Sequence[Hashable]],
    similarity: Sequence[Sequence[float]],
    query_entities: Sequence[Sequence[Hashable]],
    related: Sequence[Sequence[Hashable]],
    related_distance: Sequence[Sequence[int]],
    related_strength: Sequence[Sequence[float]],
    *,
    direct: float,
    indirect: float,
    use_strength: bool,
    centrality: npt.ArrayLike | None,
) -> list[dict[str, npt.NDArray[Any]]]:
    """:meth:`KnowledgeGraph.mention_boost <graphrecall.KnowledgeGraph.mention_boost>`."""

    def flat(
        lists: Sequence[Sequence[Any]], conv: Any
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.uintp]]:
        lens = [len(x) for x in lists]
        off = np.zeros(len(lens) + 1, dtype=np.uintp)
        np.cumsum(lens, out=off[1:])
        vals = [v for x in lists for v in x]
        return conv(vals), off

    n = len(chunks)
    for name, lst in (
        ("similarity", similarity),
        ("query_entities", query_entities),
        ("related", related),
    ):
        if len(lst) != n:
            raise parameter_error(name, f"{len(lst)} queries, chunks has {n}")
    c, co = flat(chunks, lambda v: graph.chunk_index(v).astype(np.uint32))
    s, _ = flat(similarity, lambda v: np.asarray(v, dtype=np.float64))
    q, qo = flat(query_entities, lambda v: graph.entity_index(v).astype(np.uint32))
    r, ro = flat(related, lambda v: graph.entity_index(v).astype(np.uint32))
    rd, _ = flat(related_distance, _distances)
    rs, _ = flat(related_strength, lambda v: np.asarray(v, dtype=np.float64))
    cent = None if centrality is None else np.ascontiguousarray(centrality, dtype=np.float64)
    d, i, a, order = graph.core.mention_boost(
        c,
        s,
        co,
        q,
        qo,
        r,
        rd,
        rs,
        ro,
        direct=_float_param("direct", direct),
        indirect=_float_param("indirect", indirect),
        use_strength=_bool_param("use_strength", use_strength),
        centrality=cent,
    )
    out = []
    ext = graph.chunk_map
    for k in range(n):
        sl = slice(int(co[k]), int(co[k + 1]))
        o = order[sl].astype(np.int64)
        out.append(
            {
                "direct": d[sl],
                "indirect": i[sl],
                "adjusted": a[sl],
                "order": o,
                "chunk_ids": ext.to_external(c[sl].astype(np.int64)[o]),
            }
        )
    return out
