"""The result family: every batch result shares offsets, errors and conversions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graphrecall import KnowledgeGraph, fusion, scoring


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_arrays(
        fact_subject=[0, 1, 2, 3], fact_object=[1, 2, 3, 0], confidence=[0.5, 0.6, 0.7, 0.8]
    )


def _batches(g: KnowledgeGraph) -> list[Any]:
    anchors = np.array([[0], [2]])
    return [
        g.spread(anchors, max_hops=2),
        g.graph_recall(anchors, np.array([1.0])),
        g.personalized_pagerank(anchors),
        fusion.rrf([[[1, 2]], [[3]]], batch=True),
        fusion.additive_merge([([1], [1.0]), ([2], [0.5])], [([3], [1.0]), ([], [])], batch=True),
        scoring.rerank_memories_batch([[0, 86_400], [0]], now=86_400 * 3),
    ]


def test_every_batch_result_follows_one_convention(graph: KnowledgeGraph) -> None:
    for batch in _batches(graph):
        name = type(batch).__name__
        assert len(batch) == batch.n_queries == 2, name
        for attr in ("offsets", "fact_offsets", "entity_offsets", "chunk_offsets"):
            off = getattr(batch, attr, None)
            if off is not None:
                assert off.dtype == np.int64 and off.shape == (3,), (name, attr)
        with pytest.raises(IndexError, match="query 2 out of range for a batch of 2 queries"):
            batch[2]
        with pytest.raises(IndexError, match="query -3 out of range for a batch of 2 queries"):
            batch[-3]
        with pytest.raises(TypeError):
            batch["0"]
        singles = list(batch)
        assert len(singles) == 2
        per_query = batch.to_list()
        assert len(per_query) == 2, name
        records = batch.to_records()
        assert {r["query"] for r in records} <= {0, 1}, name
        assert all("rank" in r for r in records), name
        assert len(batch.to_pandas()) == len(records), name
        assert batch.to_arrow().num_rows == len(records), name
        for one in singles:
            assert len(one.to_records()) == len(one.to_pandas()), name
            assert one.to_arrow().num_rows == len(one.to_records()), name
