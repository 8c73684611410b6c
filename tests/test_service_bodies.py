"""The service's result bodies written from a result's hit columns are the bodies written
from its hit objects, byte for byte, over a few hundred random requests; reading a result
that way builds no hit, and the Python API's results are unchanged."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest
from graphrecall.index import GraphIndex
from graphrecall.recipes import RECIPES, RetrievalResult
from graphrecall.recipes.hits import hit_columns
from graphrecall.service.bodies import results_body

NOW = 1_767_225_600
HITS = ("anchors", "entities", "facts", "chunks")
WORDS = "Ned Stark Robert Baratheon married allies JACQ project OAuth provider who what".split()
VARIANTS: list[dict[str, Any]] = [
    {},
    {"top_k": 2},
    {"direction": "both", "max_hops": 3},
    {"passages": 0},
    {"passages": 3, "max_facts": 5},
    {"min_anchor_score": 0.99},  # no anchor: empty hit lists
    {"anchors": 1, "direction": "in"},
]


@pytest.fixture(scope="module")
def demo_index() -> GraphIndex:
    from graphrecall.cli import demo_data, demo_tables

    return GraphIndex.build(demo_tables(demo_data()), embedder="default")


def _unbuilt(r: RetrievalResult) -> bool:
    """No hit list of ``r`` was built: each is held as columns (or empty)."""
    return all(hit_columns(r, name) is not None or getattr(r, name) == () for name in HITS)


def _built(r: RetrievalResult) -> RetrievalResult:
    """``r`` with every hit list read (built into hit objects)."""
    for name in HITS:
        getattr(r, name)
    return r


def test_bodies_from_columns_are_the_bodies_from_hits(demo_index: GraphIndex) -> None:
    rng = random.Random(12)
    assert demo_index.embedder is not None
    tenants = list(demo_index.graph.tenants.names)
    fn = RECIPES["spreading_activation"]
    n_requests = 0
    for round_ in range(40):
        kw = VARIANTS[round_ % len(VARIANTS)]
        tenant = rng.choice(tenants)
        queries = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(8)]
        vecs = np.asarray(demo_index.embedder.embed_queries(queries), dtype=np.float32)
        # Random directions too: anchors that no text query would find.
        if round_ % 2:
            vecs = np.random.default_rng(round_).standard_normal(vecs.shape).astype(np.float32)

        def run(
            queries: list[str] = queries,
            tenant: Any = tenant,
            vecs: Any = vecs,
            kw: dict[str, Any] = kw,
        ) -> list[RetrievalResult]:
            return fn(demo_index, queries, tenant=tenant, now=NOW, query_vectors=vecs, **kw)

        # The same results written before and after their hits are built (one timings
        # mapping): from the columns, then from the hit objects.
        results = run()
        assert all(_unbuilt(r) for r in results)
        lean_batch = results_body("results", results, explain=False)
        lean_one = [results_body("result", [r], explain=False) for r in results]
        # Writing the lean bodies read the columns only: no hit was built.
        assert all(_unbuilt(r) for r in results)
        full_batch = results_body("results", results)  # reads (builds) every hit
        assert all(hit_columns(r, name) is None for r in results for name in HITS)
        assert lean_batch == results_body("results", results, explain=False)
        assert lean_one == [results_body("result", [r], explain=False) for r in results]
        n_requests += len(results)
        # Built from columns or not, the full bodies and the results are the same.
        again = [_built(r) for r in run()]
        for a, b in zip(results, again, strict=True):
            object.__setattr__(b, "timings", a.timings)
        assert full_batch == results_body("results", again)
        assert results == again
    assert n_requests >= 300


def test_hits_from_columns_equal_the_hits_and_keep_identity(demo_index: GraphIndex) -> None:
    assert demo_index.embedder is not None
    tenant = demo_index.graph.tenants.names[0]
    q = ["Who are Ned Stark's allies?"]
    vecs = np.asarray(demo_index.embedder.embed_queries(q), dtype=np.float32)
    fn = RECIPES["spreading_activation"]
    a = fn(demo_index, q, tenant=tenant, now=NOW, query_vectors=vecs)[0]
    b = fn(demo_index, q, tenant=tenant, now=NOW, query_vectors=vecs)[0]
    # Entities read before anchors, and after: the anchors are the entities' first hits.
    assert a.entities[: len(a.anchors)] == a.anchors
    assert all(x is y for x, y in zip(a.anchors, a.entities, strict=False))
    assert all(x is y for x, y in zip(b.anchors, b.entities, strict=False))
    b = dataclasses.replace(b, timings=a.timings)
    assert a == b and repr(a) == repr(b) and type(a.facts) is tuple
    assert a.facts and a.chunks and len(a.entities) > len(a.anchors)


def test_small_cheap_flushes_run_on_the_event_loop_thread() -> None:
    import asyncio
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from graphrecall.service.batcher import MicroBatcher

    where: list[tuple[str, list[str], bool]] = []

    def run(key: str, queries: list[str], vectors: Any) -> list[Any]:
        where.append((key, list(queries), threading.current_thread() is threading.main_thread()))
        if "bad" in queries:
            raise ValueError("bad query")
        return [f"{key}:{q}" for q in queries]

    async def main(keys: str) -> list[Any]:
        with ThreadPoolExecutor(2) as pool:
            b: MicroBatcher[str] = MicroBatcher(
                run,
                pool,
                workers=2,
                wait_s=1.0,
                max_size=8,
                cheap=lambda k: k != "embed",
                inline_max=3,
            )
            subs = [b.submit(k, f"q{i}", None) for i, k in enumerate(keys.split(","))]
            subs.append(b.submit(keys.split(",")[0], "bad", None, render=str.upper))
            return await asyncio.gather(*subs, return_exceptions=True)

    # Two cheap queries and a bad one (3 <= inline_max): one flush on the loop's thread;
    # the failing batch is retried one by one, and only "bad" fails.
    out = asyncio.run(main("a,a"))
    assert out[:2] == ["a:q0", "a:q1"] and isinstance(out[2], ValueError)
    assert all(main_thread for _, _, main_thread in where)
    assert where[0] == ("a", ["q0", "q1", "bad"], True)
    # More queries than inline_max, or a batch that embeds: on the workers.
    for keys in ("a,b,a", "a,embed"):
        where.clear()
        out = asyncio.run(main(keys))
        assert out[:-1] == [f"{k}:q{i}" for i, k in enumerate(keys.split(","))]
        assert not any(main_thread for _, _, main_thread in where)


def test_lean_bodies_write_int_keys_as_orjson_does() -> None:
    orjson = pytest.importorskip("orjson")
    from graphrecall.service import bodies

    opt = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    cases: list[Any] = [
        {"facts_per_hop": {1: 8, 0: 2, -3: 1}, "n": 65},
        {"a": {2: {3: "x"}}, "b": [{4: 5}]},  # nested dicts; a dict inside a list
        {1: "int", "1": "str"},  # converting would merge two keys: kept as it is
        {True: 1, None: 2, 1.5: 3},  # keys JSON writes otherwise: orjson's own option
        {},
    ]
    for stats in cases:
        want = orjson.dumps(stats, option=opt)
        assert orjson.dumps(bodies._str_keys(stats), option=opt) == want
