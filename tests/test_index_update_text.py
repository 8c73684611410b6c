"""Retrieval-index updates after appends: the name index, BM25 and the vectors of appended
entities, chunks, aliases and mentions are extended from the previous index (not rebuilt),
and every recipe answers exactly as ``GraphIndex.build`` of the same tables from scratch."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bag_embedder import BagEmbedder
from graphrecall import GraphRAG, GraphTables, LiveGraph
from graphrecall.anchors.keyword import BM25Index
from graphrecall.anchors.names import NameIndex
from graphrecall.errors import DataError, ParameterError
from graphrecall.index import GraphIndex
from graphrecall.index import vectors as index_vectors
from graphrecall.recipes import RECIPES
from graphrecall.storage.sqlite import SQLiteStore
from graphrecall.tables import EmbeddingSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WORDS = ["red", "blue", "lake", "tower", "graph", "river", "stone", "cloud", "the", "Ned's"]
QUERIES = ["red lake", "entity 3 tower", "blue river stone", "entity 7", "cloud", "rde laek"]
BM25_ARRAYS = ("_p_local", "_p_score", "_p_tf", "_g_term", "_g_off", "_t_info", "_t_rows")


def _base() -> GraphTables:
    ents = [f"e{i}" for i in range(10)]
    tenant = ["t0" if i < 6 else "t1" for i in range(10)]
    chunks = [f"c{i}" for i in range(10)]
    return GraphTables(
        entities={
            "id": ents,
            "name": [f"entity {i} {WORDS[i % 8]}" for i in range(10)],
            "tenant": tenant,
        },
        facts={
            "id": list(range(8)),
            "subject": ["e0", "e1", "e2", "e3", "e4", "e6", "e7", "e8"],
            "object": ["e1", "e2", "e3", "e4", "e5", "e7", "e8", "e9"],
            "predicate": ["next"] * 8,
        },
        chunks={
            "id": chunks,
            "text": [f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} entity {i}" for i in range(10)],
            "tenant": tenant,
        },
        mentions={"chunk": chunks, "entity": ents},
        aliases={"entity": ["e1"], "alias": ["the first one"]},
    )


@contextmanager
def _live_rag() -> Iterator[tuple[LiveGraph, GraphRAG]]:
    """A LiveGraph on a fresh SQLite store and an exact-vector GraphRAG over it."""
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore.create(Path(d) / "g.db")
        store.write(_base())
        live = store.load()
        assert isinstance(live, LiveGraph)
        index = GraphIndex.build(live.tables, embedder=BagEmbedder(), vector_backend="exact")
        yield live, GraphRAG(index, cache=None)
        store.close()


def _write(live: LiveGraph, op: tuple[str, int], n: int) -> None:
    kind, k = op
    ents = live.tables.entities
    chunks = live.tables.chunks
    assert chunks is not None
    tenant = "t0" if k % 2 else "t1"
    pick = [e for e, t in zip(ents["id"], ents["tenant"], strict=True) if t == tenant]
    if kind == "add_entities":
        # Some names repeat an existing one (several entities share it) or hold stopwords.
        live.add_entities(
            [
                {"id": f"e{n}", "name": f"entity {k % 12} {WORDS[k % 10]}", "tenant": tenant},
                {"id": f"e{n}b", "name": f"{WORDS[(k + 3) % 10]} {WORDS[k % 8]}", "tenant": tenant},
            ][: 1 + k % 2]
        )
    elif kind == "add_chunk":
        live.add_chunks(
            [
                {
                    "id": f"c{n}",
                    "text": f"{WORDS[k % 10]} {WORDS[(k + n) % 8]} news",
                    "tenant": tenant,
                }
            ]
        )
    elif kind == "add_alias":
        alias = {"entity": pick[k % len(pick)], "alias": f"{WORDS[k % 8]} alias"}
        live.add_aliases([alias], on_bad="skip")
    elif kind == "add_mention":
        same = [c for c, t in zip(chunks["id"], chunks["tenant"], strict=True) if t == tenant]
        mention = {"chunk": same[-1 - k % len(same)], "entity": pick[-1], "count": 2}
        live.add_mentions([mention], on_bad="skip")  # a repeated mention is skipped
    else:
        live.add_facts([{"id": n, "subject": pick[k % len(pick)], "object": pick[-1]}])


@contextmanager
def _no_full_vector_comparison() -> Iterator[None]:
    """Within the block, an update that compares every row's vector fails (appended rows
    must be found without it)."""

    def refuse(*_: Any) -> Any:
        raise AssertionError("every vector compared")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_vectors, "_row_map", refuse)
        yield


def _answers(rag: GraphRAG) -> list[dict[str, Any]]:
    out = []
    for q in QUERIES:
        for tenant in ("t0", "t1"):
            for recipe in RECIPES:
                got = rag.retrieve(q, recipe=recipe, tenant=tenant, now=0).to_dict()
                got.pop("timings")
                out.append(got)
    return out


def _same_text_indexes(a: GraphIndex, b: GraphIndex) -> None:
    """Names match alike and BM25 holds the same arrays, bit for bit."""
    for q in [*QUERIES, "the first one", "red alias", "ned s lake"]:
        for t in (0, 1):
            assert a.names.recognize(q, tenant=t, limit=20) == b.names.recognize(
                q, tenant=t, limit=20
            )
            assert a.names.fuzzy(q, tenant=t, limit=20, min_score=60) == b.names.fuzzy(
                q, tenant=t, limit=20, min_score=60
            )
            assert a.names.keyword(q, tenant=t, limit=20) == b.names.keyword(q, tenant=t, limit=20)
    ka, kb = a.chunk_keywords, b.chunk_keywords
    assert ka is not None and kb is not None
    for name in BM25_ARRAYS:
        np.testing.assert_array_equal(getattr(ka, name), getattr(kb, name))
    assert ka.n_terms == kb.n_terms


OPS = st.tuples(
    st.sampled_from(["add_entities", "add_chunk", "add_alias", "add_mention", "add_fact"]),
    st.integers(0, 50),
)


@settings(
    max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.lists(OPS, min_size=1, max_size=6))
def test_appends_through_a_live_graph_answer_as_a_fresh_build(ops: list[tuple[str, int]]) -> None:
    with _live_rag() as (live, rag), _no_full_vector_comparison():
        for i, op in enumerate(ops):
            if i % 2:  # the lazily built fuzzy / keyword tables are extended too
                rag.index.names.fuzzy("entity", tenant=0)
                rag.index.names.keyword("entity", tenant=0)
            _write(live, op, 1000 + i)
            cur = live.current()
            idx = rag.update(cur.tables, graph=cur.graph, checked=True)
            kept = idx.kept_text_indexes + idx.extended_text_indexes
            assert sorted(kept) == ["chunk_keywords", "names"]
        fresh = GraphIndex.build(live.tables, embedder=BagEmbedder(), vector_backend="exact")
        np.testing.assert_array_equal(rag.index.entity_matrix, fresh.entity_matrix)  # type: ignore[arg-type]
        np.testing.assert_array_equal(rag.index.chunk_matrix, fresh.chunk_matrix)  # type: ignore[arg-type]
        _same_text_indexes(rag.index, fresh)
        assert _answers(rag) == _answers(GraphRAG(fresh, cache=None))


def _with_vectors(t: GraphTables, seed: int) -> GraphTables:
    rng = np.random.default_rng(seed)
    ch = t.chunks
    assert ch is not None
    return dataclasses.replace(
        t,
        embeddings=[
            EmbeddingSet(
                "entity", t.entities["id"], rng.standard_normal((t.n_rows("entities"), 8))
            ),
            EmbeddingSet("chunk", ch["id"], rng.standard_normal((len(ch["id"]), 8))),
        ],
    )


def test_stored_vectors_of_appended_rows_are_looked_up_alone() -> None:
    """With stored vectors, an entity and a chunk add keep the previous matrix and add the
    new rows' stored vectors: the same matrices and answers as a fresh build."""
    base = _with_vectors(_base(), 0)
    rag = GraphRAG(GraphIndex.build(base, embedder=None, vector_backend="exact"), cache=None)
    t = rag.index.tables
    rows = {
        "entities": {"id": ["enew"], "name": ["new red lake"], "tenant": ["t1"]},
        "chunks": {"id": ["cnew"], "text": ["red lake news"], "tenant": ["t0"]},
    }
    for table, kind in (("entities", "entity"), ("chunks", "chunk")):
        cols = t.table(table)
        assert cols is not None
        grown = {
            c: np.concatenate([v, np.asarray(rows[table][c], dtype=v.dtype)])
            for c, v in cols.items()
        }
        sets = [
            EmbeddingSet(
                s.kind,
                np.append(s.ids, rows[table]["id"]),
                np.vstack([s.vectors, np.full((1, 8), 3.0)]),
            )
            if s.kind == kind
            else s
            for s in t.embeddings
        ]
        t = dataclasses.replace(t, embeddings=sets, **{table: grown})
        before = rag.index
        with _no_full_vector_comparison():
            idx = rag.update(t, checked=True)
        assert idx.reused[kind]["vectors_kept"] == len(before.vectors_of(kind)[0])  # type: ignore[arg-type]
        fresh = GraphIndex.build(t, embedder=None, vector_backend="exact")
        for k in ("entity", "chunk"):
            np.testing.assert_array_equal(idx.vectors_of(k)[0], fresh.vectors_of(k)[0])  # type: ignore[arg-type]
        _same_text_indexes(idx, fresh)
        assert _answers_or_errors(rag) == _answers_or_errors(GraphRAG(fresh, cache=None))


def _answers_or_errors(rag: GraphRAG) -> list[Any]:
    """Every recipe's answer, or its error (without an embedder, vector recipes refuse)."""
    out: list[Any] = []
    for q in QUERIES:
        for tenant in ("t0", "t1"):
            for recipe in RECIPES:
                try:
                    got = rag.retrieve(q, recipe=recipe, tenant=tenant, now=0).to_dict()
                except ParameterError as exc:
                    out.append(str(exc))
                    continue
                got.pop("timings")
                out.append(got)
    return out


TEXTS = st.one_of(
    st.none(), st.lists(st.sampled_from([*WORDS, "É", "x_y", "a-b"]), max_size=6).map(" ".join)
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(TEXTS, st.integers(0, 2)), max_size=12),
    st.lists(st.lists(st.tuples(TEXTS, st.integers(0, 2)), max_size=4), max_size=3),
)
def test_bm25_appended_equals_a_fresh_build(
    first: list[tuple[str | None, int]], more: list[list[tuple[str | None, int]]]
) -> None:
    rows = list(first)
    index = BM25Index([r[0] for r in rows], [r[1] for r in rows], n_tenants=3)
    for batch in more:
        index = index.appended([r[0] for r in batch], [r[1] for r in batch])
        rows += batch
    fresh = BM25Index([r[0] for r in rows], [r[1] for r in rows], n_tenants=3)
    for name in (*BM25_ARRAYS, "lengths"):
        np.testing.assert_array_equal(getattr(index, name), getattr(fresh, name))
    assert index.n_terms == fresh.n_terms and index.n_rows == fresh.n_rows
    for q in ["red lake", "é x", "the the tower", "a b y", "nothing"]:
        for t in range(3):
            for mode in ("or", "and"):
                got = index.search(q, 5, tenant=t, mode=mode)  # type: ignore[arg-type]
                want = fresh.search(q, 5, tenant=t, mode=mode)  # type: ignore[arg-type]
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
            np.testing.assert_array_equal(index.scores(q, tenant=t), fresh.scores(q, tenant=t))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(TEXTS, st.integers(0, 1)), min_size=1, max_size=10),
    st.lists(st.tuples(TEXTS, st.integers(0, 1)), max_size=4),
    st.lists(st.tuples(st.integers(0, 13), st.sampled_from(WORDS)), max_size=6),
    st.booleans(),
)
def test_names_extended_match_as_a_fresh_build(
    first: list[tuple[str | None, int]],
    more: list[tuple[str | None, int]],
    aliases: list[tuple[int, str]],
    warm: bool,
) -> None:
    n0, n = len(first), len(first) + len(more)
    old_al = [(r % n0, a) for r, a in aliases[: len(aliases) // 2]]
    new_al = [(r % n, a) for r, a in aliases[len(aliases) // 2 :]]
    index = NameIndex([r[0] for r in first], [r[1] for r in first], aliases=old_al, n_tenants=2)
    if warm:
        index.fuzzy("red", tenant=0)
        index.keyword("red", tenant=0)
    got = index.extended([r[0] for r in more], [r[1] for r in more], aliases=new_al)
    rows = first + more
    fresh = NameIndex(
        [r[0] for r in rows], [r[1] for r in rows], aliases=old_al + new_al, n_tenants=2
    )
    assert got.n_rows == fresh.n_rows and got.n_aliases == fresh.n_aliases
    for q in ["red lake tower", "the blue river of stone", "Ned's graph", "rde lkae", "x"]:
        for t in (0, 1):
            assert got.recognize(q, tenant=t, limit=20) == fresh.recognize(q, tenant=t, limit=20)
            assert got.fuzzy(q, tenant=t, limit=20, min_score=50) == fresh.fuzzy(
                q, tenant=t, limit=20, min_score=50
            )
            assert got.keyword(q, tenant=t, limit=20) == fresh.keyword(q, tenant=t, limit=20)


def test_appended_rows_refuse_unknown_tenants() -> None:
    with pytest.raises(DataError, match="tenant"):
        BM25Index(["a b"], [0], n_tenants=1).appended(["c"], [1])
    with pytest.raises(DataError, match="tenant"):
        NameIndex(["a b"], [0], n_tenants=1).extended(["c"], [1])


def test_generations_of_one_base_do_not_see_each_other() -> None:
    """Two generations extended from one base, and the base itself, each match as a fresh
    index of their own rows (the shared entry lists are never read past a generation's
    own entries)."""
    base = NameIndex(["red lake", "blue tower"], aliases=[(0, "the lake")])
    a = base.extended(["red river"], aliases=[(1, "red tower")])
    b = base.extended(["stone lake"])
    a2 = a.extended(["cloud"], aliases=[(3, "red cloud")])
    cases = [
        (base, ["red lake", "blue tower"], [(0, "the lake")]),
        (a, ["red lake", "blue tower", "red river"], [(0, "the lake"), (1, "red tower")]),
        (b, ["red lake", "blue tower", "stone lake"], [(0, "the lake")]),
        (
            a2,
            ["red lake", "blue tower", "red river", "cloud"],
            [(0, "the lake"), (1, "red tower"), (3, "red cloud")],
        ),
    ]
    for got, names, aliases in cases:
        fresh = NameIndex(names, aliases=aliases)
        for q in ["red lake and stone lake", "the red tower by the red river", "red cloud"]:
            assert got.recognize(q, limit=10) == fresh.recognize(q, limit=10)
            assert got.keyword(q, limit=10) == fresh.keyword(q, limit=10)
            assert got.fuzzy(q, limit=10, min_score=60) == fresh.fuzzy(q, limit=10, min_score=60)
