"""Spreading activation (seed 000) and graph recall (seed 004, W1 / W4) against the
pure-Python references in ``reference/graph_ref.py``, on random graphs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable
from typing import Any

import numpy as np
import pytest
from conftest import (
    NOW,
    PROPERTY,
    GraphData,
    anchors_of,
    examples,
    f32,
    filters_st,
    graph_and_anchors,
    graph_data,
)
from graphrecall import KnowledgeGraph
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import graph_ref

SETTINGS = settings(PROPERTY, max_examples=examples(120))

spread_params_st = st.fixed_dictionaries(
    {
        "max_hops": st.integers(0, 4),
        "per_entity_limit": st.none() | st.integers(1, 3),
        "max_facts": st.none() | st.integers(0, 8),
        "direction": st.sampled_from(["out", "in", "both"]),
    }
)


def ref_filters(filters: dict[str, Any]) -> dict[str, Any]:
    """The reference's view of the filters: min_confidence is compared in float32, like the
    stored confidences (a fact given confidence 0.9 passes min_confidence=0.9)."""
    out = dict(filters)
    if "min_confidence" in out:
        out["min_confidence"] = f32(out["min_confidence"])
    return out


def no_parent(p: Any) -> Any:
    return None if p in (-1, None) else p


def view(q: Any) -> dict[str, list[Any]]:
    """A QueryActivation as plain lists."""
    return {
        "facts": q.fact_ids.tolist(),
        "hops": q.hops.tolist(),
        "anchors": q.anchors.tolist(),
        "parents": [no_parent(p) for p in q.parents.tolist()],
        "via": q.via.tolist(),
        "entities": q.entity_ids.tolist(),
        "entity_hops": q.entity_hops.tolist(),
        "entity_strengths": q.entity_strengths.tolist(),
    }


def ref_view(data: GraphData, r: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """A reference spread in the same shape as :func:`view`."""
    return {
        "facts": data.fact_ids(r["rows"]),
        "hops": r["hops"],
        "anchors": r["anchors"],
        "parents": [None if p is None else data.facts[p]["id"] for p in r["parents"]],
        "via": r["via"],
        "entities": r["entities"],
        "entity_hops": r["entity_hops"],
        "entity_strengths": r["entity_strengths"],
    }


def test_both_without_a_limit_walks_facts_by_confidence() -> None:
    """Direction "both" takes an entity's facts by confidence whichever way they point, with
    or without a per-entity limit, so the BFS order and the parents never depend on it."""
    rows = [
        ("f0", "a", "b", 0.2),
        ("f1", "c", "a", 0.9),
        ("f2", "b", "d", 0.5),
        ("f3", "c", "d", 0.4),
        ("f4", "d", "e", 0.3),
    ]
    facts = [
        {"id": i, "subject": s, "object": o, "confidence": c, "status": "staged"}
        for i, s, o, c in rows
    ]
    g = KnowledgeGraph.from_records([{"id": e} for e in "abcde"], facts)
    for limit in (None, 5):
        q = g.spread(["a"], max_hops=3, per_entity_limit=limit, direction="both")[0]
        # a: f1 (0.9, in) before f0 (0.2, out); so c, then b, is expanded; d first via f3.
        assert q.fact_ids.tolist() == ["f1", "f0", "f3", "f2", "f4"]
        assert [no_parent(p) for p in q.parents.tolist()] == [None, None, "f1", "f0", "f3"]


def other_end(fact: dict[str, Any], via: Hashable) -> Hashable | None:
    """The endpoint of a fact that is not ``via`` (the object for a self-loop or literal)."""
    return fact["object"] if fact["subject"] == via else fact["subject"]


# ------------------------------------------------------------------------------------------
# Seed 000: the BFS itself


@SETTINGS
@given(graph_and_anchors(), spread_params_st, filters_st)
def test_spread_matches_reference(
    ga: tuple[GraphData, list[Hashable]], params: dict[str, Any], filters: dict[str, Any]
) -> None:
    data, anchors = ga
    g = data.build()
    got = view(g.spread(anchors, **params, **filters)[0])
    want = ref_view(data, graph_ref.spread(data.facts, anchors, **params, **ref_filters(filters)))
    assert got == want


@SETTINGS
@given(graph_and_anchors(max_anchors=4), spread_params_st)
def test_spread_invariants(ga: tuple[GraphData, list[Hashable]], params: dict[str, Any]) -> None:
    data, anchors = ga
    act = data.build().spread(anchors, **params)
    q = act[0]
    facts = q.fact_ids.tolist()
    assert len(set(facts)) == len(facts)  # a fact is collected once
    hops = q.hops.tolist()
    assert hops == sorted(hops)  # BFS order
    assert all(h < params["max_hops"] for h in hops)
    if params["per_entity_limit"] is not None:  # the per-entity cap
        per_via: dict[Hashable, int] = {}
        for v in q.via.tolist():
            per_via[v] = per_via.get(v, 0) + 1
        assert max(per_via.values(), default=0) <= params["per_entity_limit"]
    if params["max_facts"] is not None and facts:  # checked between hops only
        assert sum(1 for h in hops if h < hops[-1]) < params["max_facts"]
    if facts:  # (an empty unranked result is test_unranked_empty_result_has_no_scores)
        assert act.scores is None and q.scores is None
    # Anchors are the hop-0 entities, and no fact belongs to another tenant.
    tenant = data.tenant_of(anchors[0])
    assert set(q.entity_ids[q.entity_hops == 0].tolist()) == set(anchors)
    assert all(data.tenant_of(e) == tenant for e in q.entity_ids.tolist())
    by_id = {f["id"]: f for f in data.facts}
    assert all(data.tenant_of(by_id[f]["subject"]) == tenant for f in facts)


@SETTINGS
@given(graph_and_anchors(max_anchors=4), spread_params_st, filters_st)
def test_path_leads_back_to_anchor(
    ga: tuple[GraphData, list[Hashable]], params: dict[str, Any], filters: dict[str, Any]
) -> None:
    data, anchors = ga
    q = data.build().spread(anchors, **params, **filters)[0]
    by_id = {f["id"]: f for f in data.facts}
    via = dict(zip(q.fact_ids.tolist(), q.via.tolist(), strict=True))
    hop = dict(zip(q.fact_ids.tolist(), q.hops.tolist(), strict=True))
    anchor = dict(zip(q.fact_ids.tolist(), q.anchors.tolist(), strict=True))
    for i, f in enumerate(q.fact_ids.tolist()):
        path = q.path(i)
        assert path[-1] == f
        assert len(path) == hop[f] + 1
        assert [hop[p] for p in path] == list(range(hop[f] + 1))
        first = path[0]
        assert via[first] == anchor[f] and via[first] in anchors
        assert all(anchor[p] == anchor[f] for p in path)
        for a, b in itertools.pairwise(path):  # each step continues the walk
            assert other_end(by_id[a], via[a]) == via[b]


@SETTINGS
@given(
    graph_and_anchors(),
    spread_params_st,
    st.sampled_from(["score_fact", "composite"]),
    st.none() | st.integers(1, 6),
    st.data(),
)
def test_ranked_spread_matches_reference(
    ga: tuple[GraphData, list[Hashable]],
    params: dict[str, Any],
    rank: str,
    top_k: int | None,
    data_st: st.DataObject,
) -> None:
    data, anchors = ga
    scores = data_st.draw(
        st.lists(st.floats(0.0, 1.0), min_size=len(anchors), max_size=len(anchors))
    )
    now = data_st.draw(st.sampled_from([NOW, NOW + 3 * 86_400]))
    g = data.build()
    q = g.spread(anchors, scores, now=now, rank=rank, top_k=top_k, **params)[0]
    ref = graph_ref.spread(data.facts, anchors, **params)
    best_score: dict[Hashable, float] = {}
    for a, s in zip(anchors, scores, strict=True):
        best_score[a] = max(best_score.get(a, -math.inf), s)
    if rank == "score_fact":
        value = [graph_ref.score_fact(data.facts[r], now) for r in ref["rows"]]
    else:  # seed 004 composite: match x 1/(1+hop) x confidence, in that order
        value = [
            best_score[a] * (1.0 / (1 + h)) * data.facts[r]["confidence"]
            for r, h, a in zip(ref["rows"], ref["hops"], ref["anchors"], strict=True)
        ]
    order = sorted(range(len(value)), key=lambda i: (-value[i], ref["rows"][i]))[:top_k]
    assert q.fact_ids.tolist() == data.fact_ids([ref["rows"][i] for i in order])
    assert q.scores.tolist() == [value[i] for i in order]
    assert q.scores.dtype == np.float64
    assert q.hops.tolist() == [ref["hops"][i] for i in order]
    assert q.anchors.tolist() == [ref["anchors"][i] for i in order]
    assert q.via.tolist() == [ref["via"][i] for i in order]


# ------------------------------------------------------------------------------------------
# W1: exact semantics and bit-identical scores


def w1(g: KnowledgeGraph, anchors: Any, now: int = NOW) -> Any:
    return g.spread(
        anchors,
        now=now,
        max_hops=2,
        per_entity_limit=10,
        max_facts=30,
        statuses=["staged", "confirmed"],
        rank="score_fact",
    )


@SETTINGS
@given(graph_and_anchors(max_entities=14, max_facts=60, max_anchors=3, unique=True))
def test_w1_matches_workloads_literally(ga: tuple[GraphData, list[Hashable]]) -> None:
    data, anchors = ga
    q = w1(data.build(), anchors)[0]
    want = graph_ref.w1(data.facts, anchors, NOW)
    assert q.fact_ids.tolist() == data.fact_ids([r for r, _ in want])
    assert q.scores.tobytes() == np.array([s for _, s in want], dtype=np.float64).tobytes()


def test_w1_scores_are_bit_identical_to_the_formula() -> None:
    """Wide fan-out (more than 10 facts per entity, more than 30 in all) and awkward
    float32 confidences; every score equals the formula evaluated left to right."""
    rng = np.random.default_rng(7)
    n_ent, n_facts = 60, 900
    subject = rng.integers(0, n_ent, n_facts)
    obj = np.where(rng.random(n_facts) < 0.2, -1, rng.integers(0, n_ent, n_facts))
    conf = rng.random(n_facts)
    conf[::7] = 0.3  # ties
    status = rng.integers(0, 4, n_facts)
    source = rng.integers(0, 4, n_facts)
    access = np.minimum(rng.zipf(2.0, n_facts) - 1, 10**6)
    last = NOW - rng.integers(0, 365 * 86_400, n_facts)
    g = KnowledgeGraph.from_arrays(
        fact_subject=subject,
        fact_object=obj,
        n_entities=n_ent,
        confidence=conf,
        status=status,
        source=source,
        access_count=access,
        last_accessed=last,
    )
    sw = {0: 2.0, 1: 1.5, 2: 1.2, 3: 1.0}
    for anchors in ([0, 1, 2], [5], [10, 11, 12], [59, 3, 8]):
        act = w1(g, np.array(anchors))
        q = act[0]
        assert len(q) >= 30
        for f, score in zip(q.fact_indices.tolist(), q.scores.tolist(), strict=True):
            c = float(np.float32(conf[f]))
            age_weeks = (NOW - int(last[f])) / 604800.0
            decay = 0.95 ** (age_weeks - 1) if age_weeks > 1 else 1.0
            ac = int(access[f])
            stw = 1.2 if status[f] == 1 else 1.0
            want = c * sw[int(source[f])] * decay * (1 + math.log10(ac + 1) * 0.5) * stw
            assert np.float64(score).tobytes() == np.float64(want).tobytes()
        rows = [
            {
                "subject": int(subject[i]),
                "object": None if obj[i] < 0 else int(obj[i]),
                "confidence": float(np.float32(conf[i])),
                "status": ("staged", "confirmed", "rejected", "archived")[status[i]],
                "source": ("user_edit", "file", "system", "conversation")[source[i]],
                "access_count": int(access[i]),
                "last_accessed": int(last[i]),
            }
            for i in range(n_facts)
        ]
        want_ids = [r for r, _ in graph_ref.w1(rows, anchors, NOW)]
        assert q.fact_indices.tolist() == want_ids


# ------------------------------------------------------------------------------------------
# W4 / seed 004: graph recall


recall_params_st = st.fixed_dictionaries(
    {
        "max_hops": st.integers(0, 3),
        "direction": st.sampled_from(["both", "both", "out", "in"]),
        "top_k": st.integers(1, 25),
    }
)
match_scores_st = st.one_of(
    st.floats(-1.0, 1.0),
    st.sampled_from([1.0, 0.9, 0.8, 0.5, 0.0]),
)


@st.composite
def recall_case(draw: st.DrawFn) -> tuple[GraphData, list[Hashable], list[float]]:
    data, anchors = draw(graph_and_anchors(max_entities=12, max_facts=40, max_anchors=4))
    scores = draw(st.lists(match_scores_st, min_size=len(anchors), max_size=len(anchors)))
    return data, anchors, scores


@SETTINGS
@given(graph_and_anchors(max_anchors=3, unique=True))
def test_w4_defaults_match_the_literal_bfs(ga: tuple[GraphData, list[Hashable]]) -> None:
    data, anchors = ga
    scores = [1.0, 0.9, 0.8][: len(anchors)]
    q = data.build().graph_recall(anchors, scores)[0]
    want = graph_ref.graph_recall(data.facts, anchors, scores)
    assert q.fact_ids.tolist() == data.fact_ids([r for r, _ in want])
    assert q.scores.tolist() == [s for _, s in want]


@SETTINGS
@given(recall_case(), recall_params_st, filters_st)
def test_graph_recall_matches_literal_bfs(
    case: tuple[GraphData, list[Hashable], list[float]],
    params: dict[str, Any],
    filters: dict[str, Any],
) -> None:
    data, anchors, scores = case
    rf = ref_filters(filters)
    literal = graph_ref.recall_best(
        data.facts,
        anchors,
        scores,
        max_hops=params["max_hops"],
        direction=params["direction"],
        **rf,
    )
    closed = graph_ref.recall_closed_form(
        data.facts,
        anchors,
        scores,
        max_hops=params["max_hops"],
        direction=params["direction"],
        **rf,
    )
    assert closed == literal  # the two reference forms agree, value for value
    q = data.build().graph_recall(anchors, scores, **params, **filters)[0]
    want = graph_ref.top(literal, params["top_k"])
    assert q.fact_ids.tolist() == data.fact_ids([r for r, _ in want])
    assert q.scores.tolist() == [s for _, s in want]
    # hops / anchors / via explain each score.
    by_id = {f["id"]: f for f in data.facts}
    for f, s, h, a, v in zip(
        q.fact_ids.tolist(),
        q.scores.tolist(),
        q.hops.tolist(),
        q.anchors.tolist(),
        q.via.tolist(),
        strict=True,
    ):
        fact = by_id[f]
        assert v in (fact["subject"], fact["object"])
        assert h < params["max_hops"]
        assert any(
            a == a2 and s == (s2 * (1.0 / (1 + h))) * fact["confidence"]
            for a2, s2 in zip(anchors, scores, strict=True)
        )


@SETTINGS
@given(recall_case(), recall_params_st, filters_st)
def test_graph_recall_triple_dedupe(
    case: tuple[GraphData, list[Hashable], list[float]],
    params: dict[str, Any],
    filters: dict[str, Any],
) -> None:
    data, anchors, scores = case
    q = data.build().graph_recall(anchors, scores, dedupe="triple", **params, **filters)[0]
    want = graph_ref.graph_recall(
        data.facts, anchors, scores, dedupe="triple", **params, **ref_filters(filters)
    )
    assert q.fact_ids.tolist() == data.fact_ids([r for r, _ in want])
    assert q.scores.tolist() == [s for _, s in want]


@SETTINGS
@given(recall_case(), st.integers(0, 3), st.none() | st.integers(1, 30))
def test_independent_anchor_spread_is_seed_004(
    case: tuple[GraphData, list[Hashable], list[float]], max_hops: int, top_k: int | None
) -> None:
    """spread(independent_anchors=True, rank="composite") is the literal per-anchor BFS,
    literal facts included."""
    data, anchors, scores = case
    q = data.build().spread(
        anchors,
        scores,
        max_hops=max_hops,
        direction="both",
        independent_anchors=True,
        rank="composite",
        top_k=top_k,
    )[0]
    best = graph_ref.recall_best(data.facts, anchors, scores, max_hops=max_hops, literals=True)
    want = graph_ref.top(best, len(best) if top_k is None else top_k)
    assert q.fact_ids.tolist() == data.fact_ids([r for r, _ in want])
    assert q.scores.tolist() == [s for _, s in want]


# ------------------------------------------------------------------------------------------
# Batches: one FFI call, the same answers as single calls


@st.composite
def batch_case(draw: st.DrawFn) -> tuple[GraphData, list[list[Hashable]]]:
    data = draw(graph_data(max_tenants=3))
    n = draw(st.integers(1, 5))
    same_len = draw(st.booleans())
    if same_len:
        k = draw(st.integers(1, 3))
        queries = [
            draw(
                st.sampled_from(data.tenants()).flatmap(
                    lambda t: st.lists(
                        st.sampled_from(data.tenant_entities(t)), min_size=k, max_size=k
                    )
                )
            )
            for _ in range(n)
        ]
    else:
        queries = [draw(anchors_of(data)) for _ in range(n)]
    return data, queries


ACTIVATION_FIELDS = (
    "fact_ids hops anchors parents via entity_ids entity_hops entity_strengths entity_anchors "
    "entity_parents"
).split()


def assert_same_activation(batch: Any, singles: list[Any]) -> None:
    assert len(batch) == len(singles)
    for q, s in zip(batch, singles, strict=True):
        one = s[0]
        for name in ACTIVATION_FIELDS:
            assert getattr(q, name).tolist() == getattr(one, name).tolist(), name
        if len(one):  # (None vs [] when empty: test_unranked_empty_result_has_no_scores)
            assert (q.scores is None) == (one.scores is None)
            if one.scores is not None:
                assert q.scores.tolist() == one.scores.tolist()


@SETTINGS
@given(
    batch_case(),
    spread_params_st,
    st.sampled_from([None, "score_fact", "composite"]),
    st.booleans(),
)
def test_batched_spread_equals_single_calls(
    case: tuple[GraphData, list[list[Hashable]]],
    params: dict[str, Any],
    rank: str | None,
    independent: bool,
) -> None:
    data, queries = case
    g = data.build()
    plan = g.spread_plan(rank=rank, independent_anchors=independent, **params)
    singles = [plan(q, now=NOW) for q in queries]
    assert_same_activation(plan(queries, now=NOW), singles)
    direct = g.spread(queries, now=NOW, rank=rank, independent_anchors=independent, **params)
    assert_same_activation(direct, singles)
    if len({len(q) for q in queries}) == 1:
        arr = np.array(queries, dtype=object if isinstance(queries[0][0], str) else None)
        assert_same_activation(plan(arr, now=NOW), singles)


@SETTINGS
@given(batch_case(), recall_params_st, st.sampled_from(["fact", "triple"]), st.data())
def test_batched_recall_equals_single_calls(
    case: tuple[GraphData, list[list[Hashable]]],
    params: dict[str, Any],
    dedupe: str,
    data_st: st.DataObject,
) -> None:
    data, queries = case
    scores = [
        data_st.draw(st.lists(match_scores_st, min_size=len(q), max_size=len(q))) for q in queries
    ]
    plan = data.build().recall_plan(dedupe=dedupe, **params)
    singles = [plan(q, s)[0] for q, s in zip(queries, scores, strict=True)]
    batches = [plan(queries, scores)]
    if len({len(q) for q in queries}) == 1:
        batches.append(plan(np.array(queries, dtype=object), np.array(scores)))
    for batch in batches:
        assert len(batch) == len(queries)
        for q, one in zip(batch, singles, strict=True):
            for name in ("fact_ids", "scores", "hops", "anchors", "via"):
                assert getattr(q, name).tolist() == getattr(one, name).tolist(), name


def test_2d_batch_reuses_one_row_of_scores() -> None:
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0, 1, 2, 3], fact_object=[1, 2, 3, 0], confidence=[0.5, 0.6, 0.7, 0.8]
    )
    anchors = np.array([[0, 1], [2, 3]])
    scores = np.array([1.0, 0.5])
    batch = g.graph_recall(anchors, scores)
    for q, row in zip(batch, anchors, strict=True):
        one = g.graph_recall(row, scores)[0]
        assert q.fact_ids.tolist() == one.fact_ids.tolist()
        assert q.scores.tolist() == one.scores.tolist()


# ------------------------------------------------------------------------------------------
# Hand-checked examples


def test_seed_000_example_two_hops() -> None:
    g = KnowledgeGraph.from_records(
        entities=[{"id": "user"}, {"id": "jacq"}, {"id": "duckdb"}, {"id": "nextjs"}],
        facts=[
            {"id": "f1", "subject": "user", "object": "jacq", "confidence": 0.9},
            {"id": "f2", "subject": "jacq", "object": "duckdb", "confidence": 0.8},
            {"id": "f3", "subject": "jacq", "object": "nextjs", "confidence": 0.8},
            {
                "id": "f4",
                "subject": "user",
                "object": None,
                "confidence": 0.95,
                "object_value": "dark mode",
            },
            {
                "id": "f5",
                "subject": "jacq",
                "object": "user",
                "confidence": 0.1,
                "status": "rejected",
            },
        ],
    )
    q = g.spread(["user"], max_hops=2, statuses=["staged", "confirmed"])[0]
    assert q.fact_ids.tolist() == ["f4", "f1", "f2", "f3"]
    assert q.hops.tolist() == [0, 0, 1, 1]
    assert q.parents.tolist() == [None, None, "f1", "f1"]
    assert q.path(3) == ["f1", "f3"]
    assert dict(zip(q.entity_ids.tolist(), q.entity_hops.tolist(), strict=True)) == {
        "user": 0,
        "jacq": 1,
        "duckdb": 2,
        "nextjs": 2,
    }
    # max_facts is checked between hops only: 2 facts >= 1 stops before hop 1.
    assert g.spread(["user"], max_facts=1)[0].fact_ids.tolist() == ["f4", "f1"]
    assert g.spread(["user"], per_entity_limit=1)[0].fact_ids.tolist() == ["f4"]
    # Without the status filter the rejected back-edge is walked, to an already visited user.
    assert g.spread(["user"], max_hops=3)[0].fact_ids.tolist() == ["f4", "f1", "f2", "f3", "f5"]


def test_both_directions_collect_a_fact_once() -> None:
    # a <-> b twice (a cycle) and a self-loop on b.
    g = KnowledgeGraph.from_arrays(
        fact_subject=[0, 1, 1], fact_object=[1, 0, 1], confidence=[0.9, 0.8, 0.7]
    )
    q = g.spread(np.array([0]), direction="both", max_hops=3)[0]
    assert q.fact_indices.tolist() == [0, 1, 2]
    assert q.hops.tolist() == [0, 0, 1]
    assert q.entity_ids.tolist() == [0, 1]


def test_unranked_empty_result_has_no_scores() -> None:
    """``Activation.scores`` is None when unranked (documented), also when nothing was
    reached; ranked results always have a float64 array."""
    g = KnowledgeGraph.from_arrays(fact_subject=[0], fact_object=[1], n_entities=3)
    assert g.spread(np.array([0])).scores is None
    assert g.spread(np.array([2]), rank="composite").scores.dtype == np.float64
    assert g.spread(np.array([2])).scores is None  # no facts reached


def test_int_fact_id_minus_one_is_not_a_missing_parent() -> None:
    """With int fact ids, results mark "no parent" with -1, so a fact whose id is -1
    must still be followed by path() and reported as a parent."""
    g = KnowledgeGraph.from_records(
        entities=[{"id": 10}, {"id": 20}, {"id": 30}],
        facts=[
            {"id": -1, "subject": 10, "object": 20, "confidence": 0.9},
            {"id": 7, "subject": 20, "object": 30, "confidence": 0.9},
        ],
    )
    q = g.spread([10], max_hops=2)[0]
    assert q.fact_ids.tolist() == [-1, 7]
    assert q.path(1) == [-1, 7]
    assert q.to_records()[1]["parent"] == -1


def test_graph_recall_w4_example() -> None:
    # a0 - x - y chain plus a literal; anchors a0 (1.0) and y (0.8).
    g = KnowledgeGraph.from_records(
        entities=[{"id": n} for n in ("a0", "x", "y", "z")],
        facts=[
            {"id": 0, "subject": "a0", "object": "x", "confidence": 0.5},
            {"id": 1, "subject": "x", "object": "y", "confidence": 1.0},
            {"id": 2, "subject": "y", "object": "z", "confidence": 0.25},
            {"id": 3, "subject": "a0", "object": None, "confidence": 1.0},
        ],
    )
    q = g.graph_recall(["a0", "y"], [1.0, 0.8])[0]
    # fact 1: from y (0.8 x 1.0) beats from x (0.5 x 1.0); fact 0: 1.0 x 0.5;
    # fact 2: from y, 0.8 x 0.25.
    assert q.fact_ids.tolist() == [1, 0, 2]
    assert q.scores.tolist() == [0.8, 0.5, 0.2]
    assert q.hops.tolist() == [0, 0, 0]
    assert q.via.tolist() == ["y", "a0", "y"]
    assert q.anchors.tolist() == ["y", "a0", "y"]
    assert g.graph_recall(["a0"], [1.0], top_k=1)[0].fact_ids.tolist() == [0]
    with pytest.raises(ValueError):
        g.graph_recall(["a0"], [1.0], top_k=0)


def test_one_shot_calls_reuse_their_plan_and_equal_the_plan() -> None:
    """`spread(...)` keeps a plan per parameter set; a different parameter is a new plan."""
    g = KnowledgeGraph.from_records(
        [{"id": "a"}, {"id": "b"}, {"id": "c"}],
        [
            {"subject": "a", "object": "b", "confidence": 0.9, "status": "staged"},
            {"subject": "b", "object": "c", "confidence": 0.8, "status": "rejected"},
        ],
    )
    r1 = g.spread(["a"], max_hops=2, statuses=["staged", "confirmed"])
    n_plans = len(g._plans)
    r2 = g.spread(["a"], max_hops=2, statuses=["staged", "confirmed"])
    assert len(g._plans) == n_plans
    assert list(r1[0].fact_ids) == list(r2[0].fact_ids) == [0]
    r3 = g.spread(["a"], max_hops=2, statuses=["staged", "rejected"])
    assert len(g._plans) == n_plans + 1
    assert list(r3[0].fact_ids) == [0, 1]
    plan = g.spread_plan(max_hops=2, statuses=["staged", "confirmed"])
    assert list(plan(["a"])[0].fact_ids) == [0]
