"""Entity and chunk deletes in the retrieval index: ``GraphRAG.update`` over a live graph
with tombstones masks the dead rows in every room (names and aliases, BM25, vectors,
mentions, primary chunks, tenant listings) instead of indexing a new base, and answers
every recipe, in both tenants, exactly as a fresh build of the live rows."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from bag_embedder import BagEmbedder
from graphrecall import GraphRAG, GraphTables, LiveGraph
from graphrecall.index import GraphIndex, dead_rows
from graphrecall.live.dead import live_tables
from graphrecall.recipes import RECIPES
from graphrecall.storage.sqlite import SQLiteStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WORDS = ["red", "blue", "lake", "tower", "graph", "river", "stone", "cloud"]
QUERIES = ["red lake", "blue river stone", "tower cloud graph", "stone alias"]
TENANTS = ("t0", "t1")


def _tables(seed: int, n: int) -> GraphTables:
    """A random graph of ``n`` entities over two tenants: names, aliases, facts within a
    tenant, chunks with mentions, and primary chunks."""
    rng = np.random.default_rng(seed)
    tenant = [TENANTS[i % 2] for i in range(n)]
    names = [f"{WORDS[rng.integers(8)]} {WORDS[rng.integers(8)]} {i}" for i in range(n)]
    facts: list[tuple[int, int]] = []
    for _ in range(2 * n):
        s, o = rng.integers(n, size=2).tolist()
        if tenant[s] == tenant[o] and s != o:
            facts.append((s, o))
    chunks = [
        (f"c{j}", " ".join(WORDS[k] for k in rng.integers(8, size=4)), TENANTS[j % 2])
        for j in range(n)
    ]
    mentions = [
        (c[0], f"e{i}")
        for c in chunks
        for i in range(n)
        if tenant[i] == c[2] and names[i].split()[0] in c[1].split()
    ]
    aliases = [(f"e{i}", f"{WORDS[i % 8]} alias") for i in range(0, n, 3)]
    primary = [f"c{i}" if i % 2 == 0 else None for i in range(n)]
    return GraphTables(
        entities={
            "id": [f"e{i}" for i in range(n)],
            "name": names,
            "tenant": tenant,
            "primary_chunk": primary,
        },
        facts={
            "id": list(range(len(facts))),
            "subject": [f"e{s}" for s, _ in facts],
            "object": [f"e{o}" for _, o in facts],
            "predicate": ["next"] * len(facts),
            "confidence": [0.5 + 0.01 * (i % 40) for i in range(len(facts))],
        },
        chunks={
            "id": [c[0] for c in chunks],
            "text": [c[1] for c in chunks],
            "tenant": [c[2] for c in chunks],
        },
        mentions={"chunk": [m[0] for m in mentions], "entity": [m[1] for m in mentions]}
        if mentions
        else None,
        aliases={"entity": [a[0] for a in aliases], "alias": [a[1] for a in aliases]},
    )


@contextmanager
def _live(tables: GraphTables, **build: Any) -> Iterator[tuple[LiveGraph, GraphRAG]]:
    """A LiveGraph on a SQLite store of ``tables`` and a GraphRAG indexing its graph."""
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore.create(Path(d) / "g.db")
        store.write(tables)
        live = store.load()
        assert isinstance(live, LiveGraph)
        cur = live.current()
        index = GraphIndex.build(
            cur.tables, graph=cur.graph, checked=True, embedder=BagEmbedder(), **build
        )
        yield live, GraphRAG(index)
        store.close()


def _answers(rag: GraphRAG) -> list[dict[str, Any]]:
    out = []
    for q in QUERIES:
        for tenant in TENANTS:
            for recipe in RECIPES:
                got = rag.retrieve(q, recipe=recipe, tenant=tenant, now=0).to_dict()
                got.pop("timings")
                out.append(got)
    return out


def _fresh(live: LiveGraph, **build: Any) -> GraphRAG:
    """A fresh index of the live rows (the current tables without the deleted ones)."""
    cur = live.current()
    rows = live_tables(cur.tables, cur.graph)
    return GraphRAG(GraphIndex.build(rows, embedder=BagEmbedder(), **build))


def _live_ids(live: LiveGraph, table: str) -> list[Any]:
    cur = live.current()
    dead = cur.dead_entities if table == "entities" else cur.dead_chunks
    cols = cur.tables.table(table)
    assert cols is not None
    ids = np.asarray(cols["id"]).tolist()
    gone = set(np.asarray(dead).tolist())
    return [x for i, x in enumerate(ids) if i not in gone]


def _write(live: LiveGraph, op: tuple[str, int], n: int) -> None:
    kind, k = op
    if kind == "delete_entity":
        ids = _live_ids(live, "entities")
        if len(ids) > 4:
            live.delete_entities([ids[k % len(ids)]])
    elif kind == "delete_chunk":
        ids = _live_ids(live, "chunks")
        if len(ids) > 2:
            live.delete_chunks([ids[k % len(ids)]])
    elif kind == "add_entity":
        live.add_entities(
            [{"id": f"n{n}", "name": f"{WORDS[k % 8]} new {n}", "tenant": TENANTS[k % 2]}]
        )
    elif kind == "add_chunk":
        text = f"{WORDS[k % 8]} {WORDS[(k * 3) % 8]} news"
        live.add_chunks([{"id": f"k{n}", "text": text, "tenant": TENANTS[k % 2]}])
    else:
        ids = _live_ids(live, "entities")
        cur = live.current()
        ents = cur.tables.entities
        tenant_of = dict(zip(np.asarray(ents["id"]).tolist(), ents["tenant"], strict=True))
        s = ids[k % len(ids)]
        same = [e for e in ids if tenant_of[e] == tenant_of[s]]
        live.add_facts([{"id": 10_000 + n, "subject": s, "object": same[(k // 3) % len(same)]}])


@contextmanager
def _calls_to_without_dead() -> Iterator[list[int]]:
    """Counts the calls of the O(facts) path (the new base without the dead rows)."""
    real = dead_rows._WITHOUT_DEAD
    assert real is not None
    calls: list[int] = []

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    with mock.patch.object(dead_rows, "_WITHOUT_DEAD", counted):
        yield calls


OPS = st.tuples(
    st.sampled_from(
        ["delete_entity", "delete_chunk", "delete_entity", "add_fact", "add_entity", "add_chunk"]
    ),
    st.integers(0, 60),
)


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.integers(0, 2**16), st.integers(8, 14), st.lists(OPS, min_size=1, max_size=5))
def test_masked_deletes_answer_as_a_fresh_build(
    seed: int, n: int, ops: list[tuple[str, int]]
) -> None:
    """Random graphs, random entity and chunk deletes between appends: each update is the
    previous index with the dead rows masked, over the live graph itself, and every recipe
    answers as a fresh build of the live rows."""
    with _live(_tables(seed, n), vector_backend="exact") as (live, rag):
        with _calls_to_without_dead() as calls:
            for i, op in enumerate(ops):
                _write(live, op, i)
                cur = live.current()
                idx = rag.update(cur.tables, graph=cur.graph, checked=True)
                assert idx.graph is cur.graph
        assert not calls
        assert _answers(rag) == _answers(_fresh(live, vector_backend="exact"))


@pytest.mark.parametrize(
    "ops",
    [
        [("delete_entity", 1)],
        [("delete_chunk", 2)],
        [("delete_entity", 0), ("delete_chunk", 5), ("delete_entity", 3)],
        [("delete_chunk", 1), ("add_chunk", 4), ("delete_entity", 2), ("add_entity", 5)],
    ],
)
def test_a_plain_delete_never_takes_the_new_base(ops: list[tuple[str, int]]) -> None:
    """An entity or chunk delete updates the index without ``without_dead`` (the O(facts)
    pass that renumbers every row)."""
    with _live(_tables(7, 12), vector_backend="exact") as (live, rag):
        with _calls_to_without_dead() as calls:
            for i, op in enumerate(ops):
                _write(live, op, i)
                cur = live.current()
                idx = rag.update(cur.tables, graph=cur.graph, checked=True)
                assert idx.graph is cur.graph
        assert not calls
        assert _answers(rag) == _answers(_fresh(live, vector_backend="exact"))


def test_a_sketch_tenant_takes_the_new_base() -> None:
    """A dead row in a sketch vector tenant (its centre would move) is indexed over the new
    base without the dead rows, and still answers as a fresh build."""
    build: dict[str, Any] = {"vector_backend": "auto", "exact_below": 0}
    with _live(_tables(3, 12), **build) as (live, rag):
        with _calls_to_without_dead() as calls:
            _write(live, ("delete_entity", 2), 0)
            cur = live.current()
            idx = rag.update(cur.tables, graph=cur.graph, checked=True)
        assert calls and idx.graph is not cur.graph
        assert idx.graph.n_entities == cur.graph.n_entities - 1
        assert _answers(rag) == _answers(_fresh(live, **build))


def test_a_saved_masked_index_holds_no_dead_row(tmp_path: Path) -> None:
    """Saving an index with masked deletes writes the live rows only; it loads and answers
    as before."""
    with _live(_tables(5, 12), vector_backend="exact") as (live, rag):
        for i, op in enumerate([("delete_entity", 1), ("delete_chunk", 3)]):
            _write(live, op, i)
            cur = live.current()
            rag.update(cur.tables, graph=cur.graph, checked=True)
        rag.index.save(tmp_path / "idx")
        loaded = GraphIndex.load(tmp_path / "idx", embedder=BagEmbedder())
        cur = live.current()
        assert loaded.graph.n_entities == cur.graph.n_entities - len(cur.dead_entities)
        assert loaded.graph.n_chunks == cur.graph.n_chunks - len(cur.dead_chunks)
        assert not len(loaded.graph.core.dead_entities())
        assert _answers(GraphRAG(loaded)) == _answers(rag)


def test_rooms_hide_the_dead_rows() -> None:
    """The dead rows leave the tenant listings, mention links, primary chunks, names and
    keyword statistics; the previous index is left as it was."""
    with _live(_tables(11, 12), vector_backend="exact") as (live, rag):
        old = rag.index
        primary = sorted(set(old.entity_primary_chunk.tolist()) - {-1})
        chunk = next(c for c in primary if len(old.mentions.entities_of(c)[0]))
        entity = int(old.mentions.entities_of(chunk)[0][0])
        cur = live.current()
        live.delete_chunks([np.asarray(cur.tables.chunks["id"])[chunk]])  # type: ignore[index]
        live.delete_entities([np.asarray(cur.tables.entities["id"])[entity]])
        cur = live.current()
        idx = rag.update(cur.tables, graph=cur.graph, checked=True)
        assert idx.graph is cur.graph
        assert chunk not in idx.entity_primary_chunk.tolist()
        assert idx.entity_primary_chunk[entity] == -1
        live_c = [np.flatnonzero(idx.chunk_tenant == t).tolist() for t in range(2)]
        assert chunk not in live_c[0] + live_c[1]
        assert entity not in np.flatnonzero(idx.entity_tenant < 2).tolist()
        assert not len(idx.mentions.entities_of(chunk)[0])
        assert not len(idx.mentions.chunks_of(entity)[0])
        assert chunk not in idx.mentions.entity_chunks.tolist()
        name = old.entity_name[entity]
        t = int(old.entity_tenant[entity])
        assert entity in [m.row for m in old.names.recognize(name, tenant=t, limit=50)]
        assert entity not in [m.row for m in idx.names.recognize(name, tenant=t, limit=50)]
        assert entity not in [m.row for m in idx.names.keyword(name, tenant=t, limit=50)]
        assert chunk in old.mentions.entity_chunks.tolist()  # the previous index unchanged


def test_an_update_back_to_the_rows_before_the_delete_unmasks_them() -> None:
    """An index with masked rows updated with a graph that holds them live again (the
    generation before the delete) keeps none of its masked rooms."""
    with _live(_tables(9, 12), vector_backend="exact") as (live, rag):
        before = live.current()
        want = _answers(rag)
        _write(live, ("delete_entity", 4), 0)
        _write(live, ("delete_chunk", 1), 1)
        cur = live.current()
        assert rag.update(cur.tables, graph=cur.graph, checked=True).graph is cur.graph
        assert _answers(rag) != want
        rag.update(before.tables, graph=before.graph, checked=True)
        assert _answers(rag) == want
