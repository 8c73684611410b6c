"""A batch larger than one native call's slice runs slice by slice with the same results,
so the core's per-call memory stays bounded whatever the batch size."""

from __future__ import annotations

import numpy as np
import pytest
from graphrecall.demo import demo_data, demo_tables
from graphrecall.errors import ParameterError
from graphrecall.index import GraphIndex
from graphrecall.recipes import get_recipe, list_recipe_names, registry

QUERIES = ["What is JACQ?", "Who uses DuckDB?", "What does JACQ use?", "Ada", "Raspberry Pi"]


@pytest.fixture(scope="module")
def index() -> GraphIndex:
    return GraphIndex.build(demo_tables(demo_data()), embedder="default")


@pytest.mark.parametrize("name", list_recipe_names())
def test_sliced_batches_equal_one_call(
    index: GraphIndex, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert index.embedder is not None
    qv = np.asarray(index.embedder.embed_queries(QUERIES))
    recipe = get_recipe(name)
    kw = {"tenant": "alice", "now": 1767225600, "query_vectors": qv}
    if name == "routed_hybrid":
        kw["context"] = [{"goal_id": None}] * len(QUERIES)
    try:
        whole = recipe(index, QUERIES, **kw)
    except ParameterError:
        pytest.skip(f"{name} needs what the demo graph lacks")
    monkeypatch.setattr(registry, "BATCH_SLICE", 2)
    sliced = recipe(index, QUERIES, **kw)
    strip = [{**r.to_dict(), "timings": None} for r in whole]
    assert [{**r.to_dict(), "timings": None} for r in sliced] == strip
    with pytest.raises(ParameterError, match="query_vectors"):
        recipe(index, QUERIES, **{**kw, "query_vectors": qv[:3]})


def test_graph_batches_run_in_slices_with_the_same_results(
    index: GraphIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphrecall.graph import plans

    g = index.graph
    ids = list(g.entity_ids)
    batch = [ids[i % len(ids) : i % len(ids) + 2] for i in range(7)] + [[]]
    now = 1767225600

    def run() -> tuple[object, ...]:
        act = g.spread(batch, now=now, max_hops=2)
        rec = g.graph_recall(batch)
        return act.to_list(), rec.to_list(), act.core.n_queries, rec.core.n_queries

    whole = run()
    monkeypatch.setattr(plans, "BATCH_SLICE", 3)
    assert run() == whole
