"""The recipe API: the registry, parameter sets as arguments, immutable cached results."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pytest
from graphrecall import GraphIndex, GraphRAG
from graphrecall.errors import ParameterError
from graphrecall.recipes import (
    PARAMS,
    PPR,
    RECIPES,
    ChunkBoost,
    ChunkBoostParams,
    FunctionRecipe,
    GraphRecall,
    HybridExpand,
    RetrievalResult,
    RoutedHybrid,
    SpreadingActivation,
    get_recipe,
    hybrid_expand,
    list_recipe_names,
    overrides,
    register_recipe,
    registry,
)

DEMO_NOW = 1767225600
BUILTIN = [
    "spreading_activation",
    "chunk_boost",
    "routed_hybrid",
    "hybrid_expand",
    "graph_recall",
    "ppr",
    "vector",
    "bm25",
    "hybrid",
]


@pytest.fixture(scope="module")
def rag() -> GraphRAG:
    from graphrecall.cli import demo_data, demo_tables

    return GraphRAG(GraphIndex.build(demo_tables(demo_data()), embedder=None))


def test_cached_result_cannot_be_emptied_by_a_caller(rag: GraphRAG) -> None:
    q = "What is the JACQ project?"
    first = rag.retrieve(q, recipe="spreading_activation", tenant="alice", now=DEMO_NOW)
    assert first.facts
    want = first.to_dict()
    with pytest.raises(AttributeError):
        first.facts.clear()  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.facts = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        first.stats["entities_reached"] = 0  # type: ignore[index]
    with pytest.raises(TypeError):
        first.stats["facts_per_hop"][0] = 0
    with pytest.raises(TypeError):
        first.timings["graph"] = 0.0  # type: ignore[index]
    second = rag.retrieve(q, recipe="spreading_activation", tenant="alice", now=DEMO_NOW)
    assert second is first  # served from the cache, unchanged
    assert second.to_dict() == want


def test_results_convert_lists_and_dicts() -> None:
    res = RetrievalResult("x", "q", None, facts=[], stats={"a": {"b": [1]}}, tiers={"t": []})
    assert res.facts == () and res.tiers == {"t": ()}
    assert res.stats["a"]["b"] == (1,)
    assert res.to_dict()["stats"] == {"a": {"b": (1,)}}


def test_registry_lists_the_builtin_recipes() -> None:
    assert list_recipe_names()[: len(BUILTIN)] == BUILTIN
    assert list(RECIPES)[: len(BUILTIN)] == BUILTIN
    assert PARAMS["chunk_boost"] is ChunkBoost is ChunkBoostParams
    with pytest.raises(ParameterError, match="nope"):
        get_recipe("nope")
    with pytest.raises(TypeError):
        RECIPES["x"] = RECIPES["ppr"]  # type: ignore[index]
    formats = {n: get_recipe(n).default_format for n in BUILTIN}
    assert formats["spreading_activation"] == "narrative"
    assert formats["routed_hybrid"] == "tiers"
    assert [n for n in BUILTIN if get_recipe(n).takes_context] == ["routed_hybrid"]


def test_each_parameter_class_names_its_recipe() -> None:
    for name in BUILTIN:
        assert PARAMS[name].recipe == name
    for cls in (SpreadingActivation, ChunkBoost, RoutedHybrid, HybridExpand, GraphRecall, PPR):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_overrides_list_the_dataclass_fields() -> None:
    union: set[str] = set()
    for name in BUILTIN:
        cls = PARAMS[name]
        td = getattr(overrides, f"{cls.__name__}Overrides")
        want = {f.name: str(f.type).replace("'", '"') for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        got = {k: str(v.__forward_arg__).replace("'", '"') for k, v in td.__annotations__.items()}
        assert got == want
        union |= set(want)
    assert set(overrides.RecipeOverrides.__annotations__) == union


def _same(a: RetrievalResult, b: RetrievalResult) -> bool:
    da, db = a.to_dict(), b.to_dict()
    da.pop("timings")
    db.pop("timings")
    return da == db


def test_parameter_set_and_name_form_agree(rag: GraphRAG) -> None:
    q = "what happens if we change the OAuth provider?"
    by_set = rag.retrieve(q, recipe=HybridExpand(k=3), tenant="devteam", use_cache=False)
    by_name = rag.retrieve(q, recipe="hybrid_expand", k=3, tenant="devteam", use_cache=False)
    assert _same(by_set, by_name)
    assert by_set.params["k"] == 3
    direct = hybrid_expand(rag.index, q, HybridExpand(k=3), tenant="devteam")[0]
    assert _same(direct, by_set)
    # A set and overrides together: the overrides win.
    both = rag.retrieve(q, recipe=HybridExpand(k=5), k=3, tenant="devteam", use_cache=False)
    assert _same(both, by_set)


def test_bad_parameters_are_refused(rag: GraphRAG) -> None:
    q = "what happens if we change the OAuth provider?"
    with pytest.raises(ParameterError, match="kk"):
        rag.retrieve(q, recipe="hybrid_expand", kk=3, tenant="devteam")  # type: ignore[call-arg]
    with pytest.raises(ParameterError, match="ChunkBoost"):
        hybrid_expand(rag.index, q, ChunkBoost(), tenant="devteam")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="not a recipe"):
        rag.retrieve(q, recipe=object(), tenant="devteam")  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class _EchoParams:
    recipe: ClassVar[str] = "echo_test"
    label: str = "echo"


class _Echo:
    """A third-party recipe: only the protocol, no graphrecall base class."""

    name = "echo_test"
    params = _EchoParams
    default_format = "json"
    takes_context = True

    def run(
        self,
        index: GraphIndex,
        queries: Sequence[str],
        params: _EchoParams,
        *,
        tenant: Hashable | None = None,
        now: int | None = None,
        query_vectors: npt.ArrayLike | None = None,
        context: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        router: Any = None,
    ) -> list[RetrievalResult]:
        return [
            RetrievalResult(self.name, q, tenant, stats={"label": params.label, "ctx": context})
            for q in queries
        ]


def test_a_third_party_recipe_joins_the_registry(rag: GraphRAG) -> None:
    echo = _Echo()
    register_recipe(echo)
    try:
        assert "echo_test" in list_recipe_names()
        with pytest.raises(ParameterError, match="already registered"):
            register_recipe(_Echo())
        res = rag.retrieve("hi", recipe=_EchoParams(label="a"), tenant="alice", context={"x": 1})
        assert res.stats["label"] == "a" and res.stats["ctx"] == {"x": 1}
        res = rag.retrieve("hi", recipe="echo_test", tenant="alice", use_cache=False)
        assert res.stats["label"] == "echo"
        assert rag.context(res).text.startswith("{") or rag.context(res).text == ""
        assert RECIPES["echo_test"](rag.index, "hi", label="b")[0].stats["label"] == "b"
    finally:
        registry._RECIPES.pop("echo_test", None)


def test_function_recipe_refuses_context_it_does_not_take(rag: GraphRAG) -> None:
    fn = RECIPES["ppr"]
    assert isinstance(fn, FunctionRecipe)
    with pytest.raises(ParameterError, match="context"):
        fn(rag.index, "x", tenant="alice", context={"a": 1})


@pytest.mark.parametrize("rows", [1, 3])
def test_query_vector_rows_must_match_the_queries(rag: GraphRAG, rows: int) -> None:
    qv = np.ones((rows, 8), dtype=np.float32)
    with pytest.raises(ParameterError, match=f"{rows} rows for 2 queries"):
        rag.retrieve_batch(["a", "b"], recipe="ppr", tenant="alice", query_vectors=qv)


def test_a_query_over_max_query_chars_is_a_parameter_error(rag: GraphRAG) -> None:
    with pytest.raises(ParameterError, match=r"query 1 has 10,001 characters"):
        rag.retrieve_batch(["fine", "x" * 10_001], recipe="ppr", tenant="alice")
    strict = GraphRAG(rag.index, cache=None, max_query_chars=5)
    with pytest.raises(ParameterError, match="max_query_chars = 5"):
        strict.retrieve("JACQ project", recipe="ppr", tenant="alice")
    assert strict.retrieve("JACQ", recipe="ppr", tenant="alice").recipe == "ppr"
    with pytest.raises(ParameterError, match="max_query_chars"):
        GraphRAG(rag.index, max_query_chars=0)
