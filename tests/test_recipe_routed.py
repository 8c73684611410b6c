"""The ``routed_hybrid`` recipe (seed 002) against a literal port of the seed's search
functions and ``rerank_memories``, on random tiered memories."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from conftest import NOW, PROPERTY
from graphrecall.index import GraphIndex
from graphrecall.recipes import routed_hybrid
from graphrecall.router import MemoryRoute, QueryType, Route
from graphrecall.storage import EmbeddingSet, GraphTables
from hypothesis import assume, given
from hypothesis import strategies as st
from reference import scoring_ref

DAY = 86_400
TIERS = ("personal", "project", "task", "character_conversations")
TAGS = ("running", "piano", "mood", "milestone")
GOALS = ("g1", "g2", None)


class FixedRouter:
    """A router that returns one route (the recipe's filtering is what is under test)."""

    def __init__(self, route: Route):
        self.r = route

    def route(self, query: str, context: Mapping[str, Any] | None = None) -> Route:
        return self.r


def memories(seed: int, n: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": f"m{i}",
                "tenant": rng.choice(["u1", "u2"]),
                "text": f"memory {i}",
                "scope": rng.choice(TIERS),
                "category": rng.choice(["a", "b"]),
                "tags": rng.sample(TAGS, rng.randint(0, 2)),
                "metadata": {
                    k: v
                    for k, v in (
                        ("goal_id", rng.choice(GOALS)),
                        ("mission_id", rng.choice(["m1", "m2", None])),
                        ("character_id", rng.choice(["lyra", None])),
                    )
                    if v is not None
                },
                "created_at": None
                if rng.random() < 0.1
                else NOW - rng.randint(0, 40) * DAY - rng.randint(0, DAY),
                "expires_at": None if rng.random() < 0.3 else NOW + rng.randint(-5, 5) * DAY,
                "confidence": None if rng.random() < 0.2 else rng.choice([0.5, 0.9, 1.0]),
                "access_count": 0,
            }
        )
    vec = np.random.default_rng(seed).integers(-2, 3, size=(n, 8)).astype(np.float32)
    vec[np.all(vec == 0, axis=1), 0] = 1.0
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    return rows, vec


def seed_search(
    rows: list[dict[str, Any]],
    vec: np.ndarray,
    q: np.ndarray,
    tenant: str,
    tier: str,
    f: Mapping[str, Any],
    limit: int,
) -> list[int]:
    """Seed 002's search_*_memories as SQL would run them (null expiry: never expires)."""
    out = []
    for i, r in enumerate(rows):
        if r["tenant"] != tenant or r["scope"] != tier:
            continue
        meta = r["metadata"]
        if tier == "personal":
            if f.get("category") and r["category"] != f["category"]:
                continue
            if f.get("tags") and not set(r["tags"]) & set(f["tags"]):
                continue
        elif tier == "project":
            if f.get("goal_id") and meta.get("goal_id") != f["goal_id"]:
                continue
            if f.get("tags") and not set(r["tags"]) & set(f["tags"]):
                continue
        elif tier == "task":
            if r["expires_at"] is not None and not r["expires_at"] > NOW:
                continue
            if f.get("mission_id") and meta.get("mission_id") != f["mission_id"]:
                continue
            if f.get("goal_id") and meta.get("goal_id") != f["goal_id"]:
                continue
            if f.get("days"):
                if r["created_at"] is None or r["created_at"] < NOW - f["days"] * DAY:
                    continue
        elif tier == "character_conversations":
            if f.get("character_id") and meta.get("character_id") != f["character_id"]:
                continue
            if f.get("days"):
                if r["created_at"] is None or r["created_at"] < NOW - f["days"] * DAY:
                    continue
        out.append(i)
    sims = (vec @ q).tolist()
    out.sort(key=lambda i: (-sims[i], i))
    return out[:limit]


@PROPERTY
@given(
    st.integers(0, 2**16),
    st.integers(1, 40),
    st.lists(st.sampled_from(TIERS), min_size=1, max_size=3, unique=True),
    st.fixed_dictionaries(
        {},
        optional={
            "goal_id": st.sampled_from(["g1", "g2"]),
            "mission_id": st.sampled_from(["m1", "m2"]),
            "character_id": st.just("lyra"),
            "days": st.sampled_from([1, 7, 30]),
            "tags": st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True),
            "category": st.sampled_from(["a", "b"]),
        },
    ),
    st.integers(1, 5),
)
def test_routed_hybrid_matches_seed_002(
    seed: int, n: int, scope: list[str], filters: dict[str, Any], limit: int
) -> None:
    rows, vec = memories(seed, n)
    tenants = sorted({r["tenant"] for r in rows})
    tenant = tenants[seed % len(tenants)]
    entities = [{"id": f"e_{t}", "tenant": t, "name": t} for t in tenants]
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    tables = GraphTables(
        entities={k: [e[k] for e in entities] for k in ("id", "tenant", "name")},
        facts={"subject": [], "object": []},
        chunks=cols,
        embeddings=[EmbeddingSet("chunk", cols["id"], vec, "random")],
    )
    index = GraphIndex.build(tables, embedder=None)
    q = vec[seed % n] + 0.1
    q = (q / np.linalg.norm(q)).astype(np.float32)
    route = Route(
        QueryType.GENERAL,
        ("users",),
        dict(filters),
        tuple(scope),
        MemoryRoute.SEMANTIC,
        "routed_hybrid",
        (),
    )
    res = routed_hybrid(
        index,
        "q",
        tenant=tenant,
        now=NOW,
        router=FixedRouter(route),
        query_vectors=q,
        limit=limit,
        context_filters=False,
    )[0]
    qn = q / np.linalg.norm(q)
    for tier in scope:
        hits = seed_search(rows, vec, qn, tenant, tier, filters, limit)
        # Cosines closer than 1e-6 (summed in another order by the kernel) may swap places.
        more = seed_search(rows, vec, qn, tenant, tier, filters, limit + 1)
        cos = vec.astype(np.float64) @ qn.astype(np.float64)
        assume(all(cos[i] - cos[j] > 1e-6 for i, j in itertools.pairwise(more)))
        scores, order = scoring_ref.rerank_memories(
            [rows[i]["created_at"] for i in hits], NOW, [rows[i]["confidence"] for i in hits]
        )
        got = (res.tiers or {}).get(tier, [])
        assert [c.id for c in got] == [rows[hits[j]]["id"] for j in order]
        assert [c.score for c in got] == pytest.approx([scores[j] for j in order], rel=1e-12)
    for c in res.chunks:
        assert c.id in {r["id"] for r in rows if r["tenant"] == tenant}
