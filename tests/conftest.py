"""Shared Hypothesis strategies: small random knowledge graphs as plain rows.

A drawn :class:`GraphData` holds the rows given to ``KnowledgeGraph.from_records`` and read by
the pure-Python references in ``tests/reference/graph_ref.py``. The graphs have several
tenants, cycles, self-loops, parallel facts, isolated entities, literal facts, tied
confidences, string or int external ids (entities, facts and chunks independently), random
statuses / sources / predicates, optional timestamps, validity intervals and sequence
numbers, and chunks with mentions. Confidences and strengths are float32 values widened to
Python floats, exactly what the graph stores.

Test modules import the strategies with ``from conftest import ...`` (``tests/`` is on
``sys.path`` under pytest's default import mode).
"""

from __future__ import annotations

import os
import random
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from graphrecall import KnowledgeGraph
from hypothesis import settings
from hypothesis import strategies as st

#: WORKLOADS.md's NOW (2026-01-01Z).
NOW = 1_767_225_600
DAY = 86_400
STATUSES = ("staged", "confirmed", "rejected", "archived")
SOURCES = ("user_edit", "file", "system", "conversation")
PREDICATES = ("p0", "p1", "p2", "p3")


#: ``GRAPHRECALL_HYPOTHESIS=random`` (``.ci/run`` runs the property tests so beside the fixed
#: profile): new random examples on every run, three times as many.
RANDOM = os.environ.get("GRAPHRECALL_HYPOTHESIS", "fixed") == "random"


def examples(n: int) -> int:
    """A property test's example count under the active profile."""
    return 3 * n if RANDOM else n


#: Settings of the property tests: deterministic by default (derandomized, no example
#: database) and without deadlines (a 2-core machine under load). Tests that want another
#: count than 100 set ``max_examples=examples(n)``.
PROPERTY = settings(
    deadline=None, derandomize=not RANDOM, database=None, max_examples=examples(100)
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every Hypothesis test carries the `property` marker, so one profile can run them alone.
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "property: a Hypothesis property test")
    # On a failure Hypothesis imports libcst (to write a patch), which emits a
    # DeprecationWarning from mypy_extensions; with filterwarnings=error that turns the
    # failure report into an INTERNALERROR. Ignore that one warning.
    config.addinivalue_line(
        "filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
    )


def f32(x: float) -> float:
    """The float32 value nearest ``x``, as a Python float."""
    return float(np.float32(x))


@dataclass
class GraphData:
    """Rows of a random graph (see the module docstring)."""

    entities: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    chunks: list[dict[str, Any]] = field(default_factory=list)
    mentions: list[dict[str, Any]] = field(default_factory=list)

    def build(self) -> KnowledgeGraph:
        return KnowledgeGraph.from_records(
            self.entities,
            self.facts,
            self.chunks or None,
            self.mentions or None,
            predicates=PREDICATES,
        )

    def tenants(self) -> list[Hashable]:
        """Tenants holding at least one entity, in first-seen order."""
        return list(dict.fromkeys(e["tenant"] for e in self.entities))

    def tenant_entities(self, tenant: Hashable) -> list[Hashable]:
        return [e["id"] for e in self.entities if e["tenant"] == tenant]

    def tenant_of(self, entity: Hashable) -> Hashable:
        return next(e["tenant"] for e in self.entities if e["id"] == entity)

    def fact_ids(self, rows: list[int]) -> list[Hashable]:
        return [self.facts[r]["id"] for r in rows]


def _ids(draw: st.DrawFn, n: int, prefix: str, rng: random.Random) -> list[Hashable]:
    """n distinct external ids: strings or ints (any order, negatives too) or 0..n-1."""
    kind = draw(st.sampled_from(["str", "int", "dense"]))
    if kind == "dense":
        return list(range(n))
    perm = rng.sample(range(n), n)
    if kind == "str":
        return [f"{prefix}{k}" for k in perm]
    # -1 is left out: results use -1 for "no parent" with int ids (see
    # test_activation.py::test_int_fact_id_minus_one_is_not_a_missing_parent).
    pool = [v for v in range(-3, 3) if v != -1] + [10**9, -(10**9), 2**40]
    out: list[Hashable] = []
    while len(out) < n:
        v = rng.choice(pool) if rng.random() < 0.3 else rng.randint(-(10**6), 10**6)
        if v not in out and v != -1:
            out.append(v)
    return out


def _confidence(rng: random.Random) -> float:
    return f32(rng.choice([0.0, 0.25, 0.5, 0.9, 1.0]) if rng.random() < 0.5 else rng.random())


def _strength(rng: random.Random) -> float:
    return f32(rng.choice([0.0, 0.5, 1.0, 2.0]) if rng.random() < 0.5 else 4 * rng.random())


def _maybe(rng: random.Random, p_none: float, value: Any) -> Any:
    return None if rng.random() < p_none else value


@st.composite
def graph_data(
    draw: st.DrawFn,
    *,
    max_entities: int = 10,
    max_facts: int = 30,
    max_tenants: int = 3,
    literal_share: float = 0.2,
) -> GraphData:
    """A random graph as rows (see the module docstring).

    Sizes and id kinds are drawn by Hypothesis (so they shrink); the rows themselves come
    from a ``random.Random`` seeded by a drawn integer (drawing every field through
    Hypothesis made each example ~100x slower).
    """
    n_tenants = draw(st.integers(1, max_tenants))
    tenant_names: list[Hashable] = draw(
        st.sampled_from([list(range(n_tenants)), ["zulu", "alpha", "mike"][:n_tenants]])
    )
    n_ent = draw(st.integers(1, max_entities))
    # At least one fact: graphs without facts are built in test_graph_build.py (an int-id
    # graph without facts fails to build; see test_from_records_without_facts).
    n_facts = draw(st.integers(1, max_facts))
    n_chunks = draw(st.integers(0, 6))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    ent_ids = _ids(draw, n_ent, "e", rng)
    fact_ids = _ids(draw, n_facts, "f", rng)
    chunk_ids = _ids(draw, n_chunks, "c", rng)

    ent_tenant = [rng.choice(tenant_names) for _ in range(n_ent)]
    entities = [{"id": i, "tenant": t} for i, t in zip(ent_ids, ent_tenant, strict=True)]
    members: dict[Hashable, list[Hashable]] = {}
    for e in entities:
        members.setdefault(e["tenant"], []).append(e["id"])
    facts = []
    for row in range(n_facts):
        s = rng.randrange(n_ent)
        literal = rng.random() < literal_share
        obj = None if literal else rng.choice(members[ent_tenant[s]])
        vf, vt = _maybe(rng, 0.5, rng.randint(0, 6)), _maybe(rng, 0.5, rng.randint(0, 6))
        if vf is not None and vt is not None and vf > vt:
            vf, vt = vt, vf
        facts.append(
            {
                "id": fact_ids[row],
                "subject": ent_ids[s],
                "object": obj,
                "object_value": f"lit_{row}" if literal else None,
                "predicate": rng.choice(PREDICATES),
                "confidence": _confidence(rng),
                "strength": _strength(rng),
                "status": rng.choice(STATUSES),
                "source": rng.choice(SOURCES),
                "access_count": rng.choice([0, 0, 1, 9, rng.randint(0, 10**6)]),
                "last_accessed": _maybe(rng, 0.2, rng.randint(NOW - 400 * DAY, NOW + DAY)),
                "valid_from": vf,
                "valid_to": vt,
                "sequence": _maybe(rng, 0.3, rng.randint(0, 4)),
            }
        )
    chunks: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    for c in chunk_ids:
        t = rng.choice(sorted(members, key=str))
        chunks.append({"id": c, "tenant": t})
        for e in rng.sample(members[t], min(len(members[t]), rng.randint(0, 4))):
            mentions.append({"chunk": c, "entity": e, "count": rng.randint(1, 3)})
    return GraphData(entities, facts, chunks, mentions)


@st.composite
def graph_and_anchors(
    draw: st.DrawFn, *, max_anchors: int = 3, unique: bool = False, **kwargs: Any
) -> tuple[GraphData, list[Hashable]]:
    """A graph and 1..max_anchors anchors of one tenant (repeats allowed unless unique)."""
    data = draw(graph_data(**kwargs))
    return data, draw(anchors_of(data, max_anchors=max_anchors, unique=unique))


def anchors_of(data: GraphData, *, max_anchors: int = 3, unique: bool = False) -> Any:
    """Strategy: 1..max_anchors entities of one tenant of ``data``."""
    return st.sampled_from(data.tenants()).flatmap(
        lambda t: st.lists(
            st.sampled_from(data.tenant_entities(t)),
            min_size=1,
            max_size=max_anchors,
            unique=unique,
        )
    )


#: Filters for spread / recall / pagerank, as keyword arguments (None = no filter).
filters_st = st.fixed_dictionaries(
    {},
    optional={
        "statuses": st.lists(st.sampled_from(STATUSES), unique=True, min_size=1),
        "predicates": st.lists(st.sampled_from(PREDICATES), unique=True, min_size=1),
        "min_confidence": st.sampled_from([0.25, 0.5, 0.9]),
        "as_of": st.integers(-1, 7),
        "max_sequence": st.integers(-1, 5),
    },
)
