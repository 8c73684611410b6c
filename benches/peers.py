"""W1 / W4 (WORKLOADS.md) implemented by a plain reference (the oracle) and by every peer.

Every class has the same small interface:

* ``build(g)`` builds the peer's index from the columns of :class:`workload.Graph` (which
  :func:`workload.load` reads from the shared Parquet files; the SQLite peer opens
  ``graph.sqlite``, imported from the same columns). Adjacency may be pre-sorted at build (that is
  an index); scores are always computed at query time from raw columns with ``now`` passed in.
* ``prepare(queries)`` converts the ``(Q, 3)`` anchor array into the per-query argument the peer
  takes natively (tuples of ints, 1-D numpy rows); it is not timed.
* ``w1(anchors, now)`` / ``w4(anchors)`` return the ranked fact ids of one query (a list or an
  int64 array: whatever the peer produces naturally).
* optional ``w1_batch(queries, now)`` / ``w4_batch(queries)`` take the whole ``(Q, 3)`` array and
  return ``(ids, offsets)``: flat ids and ``Q + 1`` offsets.

All peers must return exactly :class:`Reference`'s ids; ``compare.py`` and
``tests/benchmarks`` check that before timing anything.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from workload import MATCH_SCORES, NOW, SOURCES, STATUSES, Graph

# ------------------------------------------------------------------------------------------
# W1 / W4 parameters (WORKLOADS.md)
# ------------------------------------------------------------------------------------------
MAX_HOPS = 2
PER_ENTITY_LIMIT = 10
MAX_FACTS = 30
TOP_K = 20
STAGED, CONFIRMED = STATUSES.index("staged"), STATUSES.index("confirmed")
ELIGIBLE = frozenset((STAGED, CONFIRMED))  # W1 status filter, as codes
SOURCE_WEIGHT = {"user_edit": 2.0, "file": 1.5, "system": 1.2, "conversation": 1.0}
SOURCE_WEIGHT_BY_CODE = tuple(SOURCE_WEIGHT[s] for s in SOURCES)
WEEK_S = 604800.0

Ids = Sequence[int] | np.ndarray


def score_fact(
    confidence: float, source: int, status: int, access_count: int, last_accessed: int, now: int
) -> float:
    """seed 000 ``scoreFact``, multiplications left to right in IEEE double precision."""
    source_weight = SOURCE_WEIGHT_BY_CODE[source]
    age_weeks = (now - last_accessed) / WEEK_S
    decay = 0.95 ** (age_weeks - 1) if age_weeks > 1 else 1.0
    usage = 1 + math.log10(access_count + 1) * 0.5
    status_weight = 1.2 if status == CONFIRMED else 1.0
    return confidence * source_weight * decay * usage * status_weight


def _csr(keys: np.ndarray, n: int) -> np.ndarray:
    """CSR offsets of rows ``0..n-1`` for entries grouped by row key (``keys`` in any order)."""
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


def _split(values: list[Any], ptr: np.ndarray) -> list[list[Any]]:
    p = ptr.tolist()
    return [values[p[i] : p[i + 1]] for i in range(len(p) - 1)]


def _sorted_out_order(g: Graph) -> np.ndarray:
    """Fact ids grouped by subject, each group by confidence DESC, id ASC (the W1 order)."""
    ids = np.arange(g.n_facts)
    return np.lexsort((ids, -g.confidence.astype(np.float64), g.subject))


def _incident_order(g: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(entity, fact, other endpoint) of every edge end, grouped by entity (fact id order)."""
    linked = np.flatnonzero(g.object >= 0)
    ent = np.concatenate((g.subject[linked], g.object[linked]))
    fact = np.concatenate((linked, linked))
    other = np.concatenate((g.object[linked], g.subject[linked]))
    order = np.lexsort((fact, ent))
    return ent[order], fact[order], other[order]


class Peer:
    """Interface (see module docstring)."""

    name = "peer"
    package: str | None = None  # distribution the peer needs, for skip messages
    modules: tuple[str, ...] = ()  # modules build() imports (imported before measuring it)

    def build(self, g: Graph) -> None:
        raise NotImplementedError

    def prepare(self, queries: np.ndarray) -> list[Any]:
        return [tuple(q) for q in queries.tolist()]

    def w1(self, anchors: Any, now: int = NOW) -> Ids:
        raise NotImplementedError

    def w4(self, anchors: Any) -> Ids:
        raise NotImplementedError

    def close(self) -> None:
        """Release what ``build`` acquired (connections); memory goes with the object."""


# ------------------------------------------------------------------------------------------
# Reference (the oracle): WORKLOADS.md pseudo-code, literally
# ------------------------------------------------------------------------------------------


class Reference(Peer):
    """The oracle: the WORKLOADS.md pseudo-code line by line.

    Its only index is "fact ids of each subject" and "edges incident to each entity", both in
    fact-id order (what ``WHERE subject_id = ?`` would return): W1 filters and sorts per entity
    at query time, W4 runs the literal per-anchor BFS, not the closed form.
    """

    name = "reference"

    def build(self, g: Graph) -> None:
        n = g.n_entities
        by_subject = np.argsort(g.subject, kind="stable")
        self.out = _split(by_subject.tolist(), _csr(g.subject, n))
        ent, fact, _ = _incident_order(g)
        self.incident = _split(fact.tolist(), _csr(ent, n))
        self.subject = g.subject.tolist()
        self.object = g.object.tolist()
        self.confidence = g.confidence.tolist()  # float32 -> exact doubles
        self.status = g.status.tolist()
        self.source = g.source.tolist()
        self.access_count = g.access_count.tolist()
        self.last_accessed = g.last_accessed.tolist()

    def score(self, f: int, now: int) -> float:
        return score_fact(
            self.confidence[f],
            self.source[f],
            self.status[f],
            self.access_count[f],
            self.last_accessed[f],
            now,
        )

    def w1(self, anchors: Sequence[int], now: int = NOW) -> list[int]:
        frontier = list(anchors)
        visited: set[int] = set()
        facts: list[int] = []
        for _hop in range(MAX_HOPS):
            if len(facts) >= MAX_FACTS:
                break
            nxt: list[int] = []
            for e in frontier:
                if e in visited:
                    continue
                visited.add(e)
                cand = [f for f in self.out[e] if self.status[f] in ELIGIBLE]
                cand.sort(key=lambda f: (-self.confidence[f], f))
                for f in cand[:PER_ENTITY_LIMIT]:
                    facts.append(f)
                    if self.object[f] >= 0:
                        nxt.append(self.object[f])
            frontier = nxt
        return sorted(facts, key=lambda f: (-self.score(f, now), f))

    def w4_scores(self, anchors: Sequence[int]) -> dict[int, float]:
        """``best[f]`` of every reached edge (literal per-anchor BFS)."""
        best: dict[int, float] = {}
        for a, s in zip(anchors, MATCH_SCORES, strict=True):
            dist = {a: 0}
            frontier = [a]
            for h in (0, 1):
                nxt: list[int] = []
                for e in frontier:
                    for f in self.incident[e]:
                        o = self.object[f] if self.subject[f] == e else self.subject[f]
                        v = (s * (1.0 / (1 + h))) * self.confidence[f]
                        if f not in best or v > best[f]:
                            best[f] = v
                        if o not in dist:
                            dist[o] = h + 1
                            nxt.append(o)
                frontier = nxt
        return best

    def w4(self, anchors: Sequence[int]) -> list[int]:
        best = self.w4_scores(anchors)
        return sorted(best, key=lambda f: (-best[f], f))[:TOP_K]


# ------------------------------------------------------------------------------------------
# pure Python: dict of pre-sorted adjacency lists
# ------------------------------------------------------------------------------------------


class DictPeer(Peer):
    """The fastest naive peer: ``dict`` entity -> list of fact tuples, pre-sorted at build.

    W1 walks each entity's list (confidence DESC, id ASC) and keeps the first 10 eligible facts;
    W4 uses the closed form over a ``dict`` entity -> incident ``(fact, confidence, other)``.
    """

    name = "dict"

    def build(self, g: Graph) -> None:
        order = _sorted_out_order(g)
        rows = list(
            zip(
                order.tolist(),
                g.confidence[order].tolist(),
                g.status[order].tolist(),
                g.object[order].tolist(),
                g.source[order].tolist(),
                g.last_accessed[order].tolist(),
                g.access_count[order].tolist(),
                strict=True,
            )
        )
        subj = g.subject[order]
        ptr = _csr(subj, g.n_entities).tolist()
        self.out = {
            e: rows[ptr[e] : ptr[e + 1]] for e in range(g.n_entities) if ptr[e + 1] > ptr[e]
        }
        ent, fact, other = _incident_order(g)
        edges = list(zip(fact.tolist(), g.confidence[fact].tolist(), other.tolist(), strict=True))
        iptr = _csr(ent, g.n_entities).tolist()
        self.incident = {
            e: edges[iptr[e] : iptr[e + 1]] for e in range(g.n_entities) if iptr[e + 1] > iptr[e]
        }

    def w1(self, anchors: Sequence[int], now: int = NOW) -> list[int]:
        out = self.out
        visited: set[int] = set()
        facts: list[tuple[Any, ...]] = []
        frontier: Sequence[int] = anchors
        for _hop in range(MAX_HOPS):
            if len(facts) >= MAX_FACTS:
                break
            nxt: list[int] = []
            for e in frontier:
                if e in visited:
                    continue
                visited.add(e)
                k = 0
                for t in out.get(e, ()):
                    if t[2] <= CONFIRMED:  # staged (0) or confirmed (1)
                        facts.append(t)
                        if t[3] >= 0:
                            nxt.append(t[3])
                        k += 1
                        if k == PER_ENTITY_LIMIT:
                            break
            frontier = nxt
        log10, weight = math.log10, SOURCE_WEIGHT_BY_CODE
        ranked = []
        for f, conf, status, _o, src, la, ac in facts:
            age_weeks = (now - la) / WEEK_S
            decay = 0.95 ** (age_weeks - 1) if age_weeks > 1 else 1.0
            s = (
                conf
                * weight[src]
                * decay
                * (1 + log10(ac + 1) * 0.5)
                * (1.2 if status == 1 else 1.0)
            )
            ranked.append((-s, f))
        ranked.sort()
        return [f for _, f in ranked]

    def w4_scores(self, anchors: Sequence[int]) -> dict[int, float]:
        """Closed form: ``g`` over anchors and their neighbours, then ``g(x) * confidence``
        maxed over each edge's endpoints (each entity's adjacency read once per query)."""
        inc = self.incident
        g: dict[int, float] = {}
        for a, s in zip(anchors, MATCH_SCORES, strict=True):
            if g.get(a, -1.0) < s:
                g[a] = s
            half = s * 0.5
            for _f, _c, o in inc.get(a, ()):
                if g.get(o, -1.0) < half:
                    g[o] = half
        best: dict[int, float] = {}
        get = best.get
        for x, gx in g.items():
            for f, c, _o in inc.get(x, ()):
                v = gx * c
                if v > get(f, -1.0):
                    best[f] = v
        return best

    def w4(self, anchors: Sequence[int]) -> list[int]:
        top = heapq.nsmallest(TOP_K, ((-v, f) for f, v in self.w4_scores(anchors).items()))
        return [f for _, f in top]


# ------------------------------------------------------------------------------------------
# graph libraries: literal facts are edges to one sentinel node (index N)
# ------------------------------------------------------------------------------------------


def _w4_closed_form(
    anchors: Sequence[int], neighbors: Callable[[int], Any], incident: Callable[[int], Any]
) -> list[int]:
    """W4 closed form given ``neighbors(e)`` -> other endpoints and ``incident(e)`` ->
    ``(fact, confidence)`` pairs (both over linked facts only, both directions)."""
    g: dict[int, float] = {}
    for a, s in zip(anchors, MATCH_SCORES, strict=True):
        if g.get(a, -1.0) < s:
            g[a] = s
        half = s * 0.5
        for o in neighbors(a):
            if g.get(o, -1.0) < half:
                g[o] = half
    best: dict[int, float] = {}
    get = best.get
    for x, gx in g.items():
        for f, c in incident(x):
            v = gx * c
            if v > get(f, -1.0):
                best[f] = v
    top = heapq.nsmallest(TOP_K, ((-v, f) for f, v in best.items()))
    return [f for _, f in top]


def _rank_w1(facts: list[tuple[Any, ...]], now: int) -> list[int]:
    """facts: (fact, confidence, status, source, last_accessed, access_count)."""
    ranked = [(-score_fact(c, src, st, ac, la, now), f) for f, c, st, src, la, ac in facts]
    ranked.sort()
    return [f for _, f in ranked]


class NetworkXPeer(Peer):
    """networkx ``MultiDiGraph``: one edge per fact (key = fact id) with its columns as edge
    attributes; literal facts point at a sentinel node. W1 sorts an entity's eligible out-edges
    per query (``heapq.nsmallest``): networkx keeps adjacency grouped by neighbour, so it
    cannot hold a pre-sorted order."""

    name = "networkx"
    package = "networkx"
    modules = ("networkx",)

    def build(self, g: Graph) -> None:
        import networkx as nx

        n = g.n_entities
        self.sentinel = n
        G = nx.MultiDiGraph()
        G.add_nodes_from(range(n + 1))
        obj = np.where(g.object >= 0, g.object, n)
        G.add_edges_from(
            (
                s,
                o,
                f,
                {
                    "confidence": c,
                    "status": st,
                    "source": src,
                    "last_accessed": la,
                    "access_count": ac,
                },
            )
            for f, (s, o, c, st, src, la, ac) in enumerate(
                zip(
                    g.subject.tolist(),
                    obj.tolist(),
                    g.confidence.tolist(),
                    g.status.tolist(),
                    g.source.tolist(),
                    g.last_accessed.tolist(),
                    g.access_count.tolist(),
                    strict=True,
                )
            )
        )
        self.G = G

    def w1(self, anchors: Sequence[int], now: int = NOW) -> list[int]:
        # the underlying dict-of-dicts (what G.succ views): the fastest way to read adjacency
        succ = self.G._succ
        sentinel = self.sentinel
        visited: set[int] = set()
        facts: list[tuple[Any, ...]] = []
        frontier: Sequence[int] = anchors
        for _hop in range(MAX_HOPS):
            if len(facts) >= MAX_FACTS:
                break
            nxt: list[int] = []
            for e in frontier:
                if e in visited:
                    continue
                visited.add(e)
                cand = [
                    (-d["confidence"], f, o, d)
                    for o, keyed in succ[e].items()
                    for f, d in keyed.items()
                    if d["status"] in ELIGIBLE
                ]
                for negc, f, o, d in heapq.nsmallest(PER_ENTITY_LIMIT, cand, key=lambda t: t[:2]):
                    facts.append(
                        (f, -negc, d["status"], d["source"], d["last_accessed"], d["access_count"])
                    )
                    if o != sentinel:
                        nxt.append(o)
            frontier = nxt
        return _rank_w1(facts, now)

    def w4(self, anchors: Sequence[int]) -> list[int]:
        succ, pred, sentinel = self.G._succ, self.G._pred, self.sentinel

        def neighbors(e: int) -> Any:
            for o, keyed in succ[e].items():
                if o != sentinel:
                    for _ in keyed:
                        yield o
            for o, keyed in pred[e].items():
                for _ in keyed:
                    yield o

        def incident(e: int) -> Any:
            for o, keyed in succ[e].items():
                if o != sentinel:
                    for f, d in keyed.items():
                        yield f, d["confidence"]
            for keyed in pred[e].values():
                for f, d in keyed.items():
                    yield f, d["confidence"]

        return _w4_closed_form(anchors, neighbors, incident)


class RustworkxPeer(Peer):
    """rustworkx ``PyDiGraph`` (multigraph): one edge per fact with a tuple payload
    ``(fact, confidence, status, source, last_accessed, access_count)``; literal facts point
    at a sentinel node. ``out_edges`` / ``in_edges`` per entity, sorted per query."""

    name = "rustworkx"
    package = "rustworkx"
    modules = ("rustworkx",)

    def build(self, g: Graph) -> None:
        import rustworkx as rx

        n = g.n_entities
        self.sentinel = n
        G = rx.PyDiGraph(multigraph=True, node_count_hint=n + 1, edge_count_hint=g.n_facts)
        G.add_nodes_from(range(n + 1))
        obj = np.where(g.object >= 0, g.object, n)
        G.add_edges_from(
            list(
                zip(
                    g.subject.tolist(),
                    obj.tolist(),
                    zip(
                        range(g.n_facts),
                        g.confidence.tolist(),
                        g.status.tolist(),
                        g.source.tolist(),
                        g.last_accessed.tolist(),
                        g.access_count.tolist(),
                        strict=True,
                    ),
                    strict=True,
                )
            )
        )
        self.G = G

    def w1(self, anchors: Sequence[int], now: int = NOW) -> list[int]:
        G, sentinel = self.G, self.sentinel
        visited: set[int] = set()
        facts: list[tuple[Any, ...]] = []
        frontier: Sequence[int] = anchors
        for _hop in range(MAX_HOPS):
            if len(facts) >= MAX_FACTS:
                break
            nxt: list[int] = []
            for e in frontier:
                if e in visited:
                    continue
                visited.add(e)
                cand = [(-p[1], p[0], o, p) for _s, o, p in G.out_edges(e) if p[2] <= CONFIRMED]
                for _negc, _f, o, p in heapq.nsmallest(PER_ENTITY_LIMIT, cand, key=lambda t: t[:2]):
                    facts.append(p)
                    if o != sentinel:
                        nxt.append(o)
            frontier = nxt
        return _rank_w1(facts, now)

    def w4(self, anchors: Sequence[int]) -> list[int]:
        G, sentinel = self.G, self.sentinel

        def neighbors(e: int) -> Any:
            return [o for _s, o, _p in G.out_edges(e) if o != sentinel] + [
                s for s, _t, _p in G.in_edges(e)
            ]

        def incident(e: int) -> Any:
            return [(p[0], p[1]) for _s, o, p in G.out_edges(e) if o != sentinel] + [
                (p[0], p[1]) for _s, _t, p in G.in_edges(e)
            ]

        return _w4_closed_form(anchors, neighbors, incident)


class IGraphPeer(Peer):
    """python-igraph ``Graph`` (directed, multi-edges): edge id = fact id (edges added in id
    order), attributes in ``g.es[...]`` read once into lists; literal facts point at a sentinel
    vertex. ``incident(v, mode)`` per entity, sorted per query."""

    name = "igraph"
    package = "igraph"
    modules = ("igraph",)

    def build(self, g: Graph) -> None:
        import igraph as ig

        n = g.n_entities
        self.sentinel = n
        obj = np.where(g.object >= 0, g.object, n)
        G = ig.Graph(n=n + 1, edges=np.column_stack((g.subject, obj)).tolist(), directed=True)
        G.es["confidence"] = g.confidence.tolist()
        G.es["status"] = g.status.tolist()
        G.es["source"] = g.source.tolist()
        G.es["last_accessed"] = g.last_accessed.tolist()
        G.es["access_count"] = g.access_count.tolist()
        self.G = G
        # attribute columns by edge id (= fact id): igraph's own lists, no per-edge proxies
        self.conf = G.es["confidence"]
        self.status = G.es["status"]
        self.source = G.es["source"]
        self.last_accessed = G.es["last_accessed"]
        self.access_count = G.es["access_count"]
        self.obj = obj.tolist()
        self.subj = g.subject.tolist()

    def w1(self, anchors: Sequence[int], now: int = NOW) -> list[int]:
        G, conf, status, obj, sentinel = self.G, self.conf, self.status, self.obj, self.sentinel
        visited: set[int] = set()
        facts: list[tuple[Any, ...]] = []
        frontier: Sequence[int] = anchors
        for _hop in range(MAX_HOPS):
            if len(facts) >= MAX_FACTS:
                break
            nxt: list[int] = []
            for e in frontier:
                if e in visited:
                    continue
                visited.add(e)
                cand = [(-conf[f], f) for f in G.incident(e, mode="out") if status[f] <= CONFIRMED]
                for _negc, f in heapq.nsmallest(PER_ENTITY_LIMIT, cand):
                    facts.append(
                        (
                            f,
                            conf[f],
                            status[f],
                            self.source[f],
                            self.last_accessed[f],
                            self.access_count[f],
                        )
                    )
                    if obj[f] != sentinel:
                        nxt.append(obj[f])
            frontier = nxt
        return _rank_w1(facts, now)

    def w4(self, anchors: Sequence[int]) -> list[int]:
        G, conf, obj, subj, sentinel = self.G, self.conf, self.obj, self.subj, self.sentinel

        def neighbors(e: int) -> Any:
            return [obj[f] for f in G.incident(e, mode="out") if obj[f] != sentinel] + [
                subj[f] for f in G.incident(e, mode="in")
            ]

        def incident(e: int) -> Any:
            return [(f, conf[f]) for f in G.incident(e, mode="all") if obj[f] != sentinel]

        return _w4_closed_form(anchors, neighbors, incident)


# ------------------------------------------------------------------------------------------
# scipy.sparse CSR + numpy: vectorised frontier, one set of array ops per hop
# ------------------------------------------------------------------------------------------


def _gather(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of all entries of ``rows`` in a CSR, and the row-slot of each entry."""
    starts = indptr[rows]
    lens = indptr[rows + 1] - starts
    total = int(lens.sum())
    slot = np.repeat(np.arange(len(rows)), lens)
    seg_start = np.cumsum(lens) - lens
    pos = np.arange(total) - seg_start[slot] + starts[slot]
    return pos, slot


class ScipyPeer(Peer):
    """``scipy.sparse.csr_array`` adjacency with numpy ops over the whole frontier per hop.

    ``out`` is the entity x fact CSR of out-facts, each row pre-sorted by confidence DESC, id
    ASC; ``inc`` is the entity x fact CSR of incident linked facts (both directions) with the
    other endpoint as data. W1 ranks eligible facts within each row with a cumulative count;
    W4 is the closed form with lexsort-based max-reductions. ``w1_batch`` / ``w4_batch`` do
    the same for all queries at once, keyed by ``query * N + entity``.

    numpy's SIMD ``power`` / ``log10`` may differ from libm by 1 ulp; rankings are verified to
    be identical all the same.
    """

    name = "scipy"
    package = "scipy"
    modules = ("scipy.sparse",)

    def build(self, g: Graph) -> None:
        import scipy.sparse as sp

        n, m = g.n_entities, g.n_facts
        order = _sorted_out_order(g)
        ptr = _csr(g.subject, n)
        self.out = sp.csr_array((np.ones(m, np.int8), order, ptr), shape=(n, m))
        ent, fact, other = _incident_order(g)
        iptr = _csr(ent, n)
        self.inc = sp.csr_array((other, fact, iptr), shape=(n, m))
        # own copies of the columns read per query, so that the footprint counts them
        self.n = n
        self.obj = g.object.copy()
        self.conf = g.confidence.astype(np.float64)  # exact; float64 arithmetic as specified
        self.status = g.status.copy()
        self.source = g.source.copy()
        self.last_accessed = g.last_accessed.copy()
        self.access_count = g.access_count.copy()
        self.eligible = np.zeros(len(STATUSES), bool)
        self.eligible[list(ELIGIBLE)] = True
        self.source_weight = np.array(SOURCE_WEIGHT_BY_CODE)
        self.match = np.array(MATCH_SCORES)

    def prepare(self, queries: np.ndarray) -> list[Any]:
        return list(np.ascontiguousarray(queries, dtype=np.int64))

    # -- W1 ---------------------------------------------------------------------------------

    def _top(self, ents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First PER_ENTITY_LIMIT eligible facts of each entity, and each fact's entity slot."""
        pos, slot = _gather(self.out.indptr, ents)
        f = self.out.indices[pos]
        elig = self.eligible[self.status[f]]
        c = np.cumsum(elig)
        # eligible count before each row's first entry
        first = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1]]) if len(slot) else slot
        base = np.zeros(len(ents), np.int64)
        base[slot[first]] = c[first] - elig[first]
        keep = elig & (c - base[slot] <= PER_ENTITY_LIMIT)
        return f[keep], slot[keep]

    def _score(self, f: np.ndarray, now: int) -> np.ndarray:
        age_weeks = (now - self.last_accessed[f]) / WEEK_S
        decay = np.where(age_weeks > 1, 0.95 ** (age_weeks - 1), 1.0)
        usage = 1 + np.log10(self.access_count[f] + 1) * 0.5
        st = self.status[f]
        return (
            self.conf[f]
            * self.source_weight[self.source[f]]
            * decay
            * usage
            * np.where(st == CONFIRMED, 1.2, 1.0)
        )

    def w1(self, anchors: np.ndarray, now: int = NOW) -> np.ndarray:
        ents = np.unique(anchors)
        f, _ = self._top(ents)
        if len(f) < MAX_FACTS:
            o = self.obj[f]
            nxt = np.setdiff1d(o[o >= 0], ents)
            f = np.concatenate((f, self._top(nxt)[0]))
        s = self._score(f, now)
        return f[np.lexsort((f, -s))]

    def w1_batch(self, queries: np.ndarray, now: int = NOW) -> tuple[np.ndarray, np.ndarray]:
        n, nq = self.n, len(queries)
        key0 = np.unique(np.arange(nq).repeat(queries.shape[1]) * n + queries.ravel())
        f0, slot0 = self._top(key0 % n)
        q0 = key0[slot0] // n
        cont = np.bincount(q0, minlength=nq) < MAX_FACTS
        o = self.obj[f0]
        sel = cont[q0] & (o >= 0)
        key1 = np.setdiff1d(q0[sel] * n + o[sel], key0)
        f1, slot1 = self._top(key1 % n)
        f = np.concatenate((f0, f1))
        q = np.concatenate((q0, key1[slot1] // n))
        s = self._score(f, now)
        order = np.lexsort((f, -s, q))
        offsets = np.zeros(nq + 1, np.int64)
        np.cumsum(np.bincount(q, minlength=nq), out=offsets[1:])
        return f[order], offsets

    # -- W4 ---------------------------------------------------------------------------------

    def _w4_candidates(
        self, q: np.ndarray, anchors: np.ndarray, scores: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, fact, composite) of every distinct reached edge, grouped by query.

        Closed form: ``g`` over ``query * N + entity`` keys (anchors and their neighbours,
        max-reduced with one lexsort), then ``composite(f) = confidence(f) * max(g(subject),
        g(object))``; an edge with both endpoints in ``g`` is kept once (from its smaller end),
        so no per-fact max-reduction is needed.
        """
        n, inc = self.n, self.inc
        pos, slot = _gather(inc.indptr, anchors)
        keys = np.concatenate((q * n + anchors, q[slot] * n + inc.data[pos]))
        vals = np.concatenate((scores, scores[slot] * 0.5))
        o = np.lexsort((-vals, keys))
        keys, vals = keys[o], vals[o]
        first = np.empty(len(keys), bool)
        first[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        gk, gv = keys[first], vals[first]
        ge = gk % n
        pos, slot = _gather(inc.indptr, ge)
        f, other = inc.indices[pos], inc.data[pos]
        x = ge[slot]
        okey = gk[slot] - x + other  # query * N + other endpoint
        idx = np.minimum(np.searchsorted(gk, okey), len(gk) - 1)
        in_g = gk[idx] == okey
        keep = ~in_g | (x < other)
        go = np.where(in_g, gv[idx], 0.0)
        v = self.conf[f] * np.maximum(gv[slot], go)
        return (gk[slot] // n)[keep], f[keep], v[keep]

    @staticmethod
    def _top_k(f: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The TOP_K facts by value DESC, id ASC (partition to the top values and their ties,
        then sort only those)."""
        if len(v) > TOP_K:
            thr = np.partition(v, len(v) - TOP_K)[len(v) - TOP_K]
            sel = v >= thr
            f, v = f[sel], v[sel]
        return f[np.lexsort((f, -v))[:TOP_K]]

    def w4(self, anchors: np.ndarray) -> np.ndarray:
        _, f, v = self._w4_candidates(np.zeros(len(anchors), np.int64), anchors, self.match)
        return self._top_k(f, v)

    def w4_batch(self, queries: np.ndarray, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Candidates vectorised over chunks of queries; top-k per query (a partition each)."""
        nq, k = queries.shape
        ids: list[np.ndarray] = []
        for lo in range(0, nq, chunk):
            qs = queries[lo : lo + chunk]
            m = len(qs)
            q, f, v = self._w4_candidates(
                np.arange(m).repeat(k), qs.ravel(), np.tile(self.match, m)
            )
            bounds = np.searchsorted(q, np.arange(m + 1)).tolist()  # q is ascending
            ids.extend(self._top_k(f[b0:b1], v[b0:b1]) for b0, b1 in pairwise(bounds))
        offsets = np.zeros(nq + 1, np.int64)
        np.cumsum([len(x) for x in ids], out=offsets[1:])
        return np.concatenate(ids) if ids else np.zeros(0, np.int64), offsets


# ------------------------------------------------------------------------------------------
# SQLite: one SQL query per entity per hop, as the sources do
# ------------------------------------------------------------------------------------------

SQL_W1 = (
    "SELECT id, object_id, confidence, source, status, last_accessed, access_count "
    "FROM facts WHERE subject_id = ? AND status IN ('staged', 'confirmed') "
    "ORDER BY confidence DESC, id ASC LIMIT 10"
)
SQL_W4 = (
    "SELECT id, subject_id, object_id, confidence FROM facts "
    "WHERE (subject_id = ?1 AND object_id IS NOT NULL) OR object_id = ?1"
)
SQL_STATUS_CONFIRMED = "confirmed"


class SQLitePeer(Peer):
    """``graph.sqlite`` (indexes ``facts_subject``, ``facts_object``, ANALYZEd), queried the way
    the source designs do: W1 (seed 000) one ``SELECT ... ORDER BY confidence DESC LIMIT 10``
    per frontier entity and scoreFact in Python; W4 (seed 004) an independent BFS per anchor
    with one ``subject_id = ? OR object_id = ?`` query per expanded entity.

    The connection uses a 256 MiB page cache; timings are hot (after a warm-up pass)."""

    name = "sqlite"
    cache_mib = 256

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = path

    def build(self, g: Graph) -> None:
        if self.path is None:
            raise ValueError("SQLitePeer needs the path of graph.sqlite")
        uri = f"file:{Path(self.path).resolve()}?mode=ro"
        self.con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self.con.execute(f"PRAGMA cache_size = -{self.cache_mib * 1024}")
        n = self.con.execute("SELECT count(*) FROM facts").fetchone()[0]
        if n != g.n_facts:
            raise ValueError(f"{self.path} has {n} facts, the Parquet files {g.n_facts}")

    def close(self) -> None:
        if getattr(self, "con", None) is not None:
            self.con.close()
            self.con = None

    def w1(self, anchors: Sequence[int], now: int = NOW) -> list[int]:
        execute = self.con.execute
        visited: set[int] = set()
        ranked: list[tuple[float, int]] = []
        n_facts = 0
        frontier: Sequence[int] = anchors
        log10 = math.log10
        for _hop in range(MAX_HOPS):
            if n_facts >= MAX_FACTS:
                break
            nxt: list[int] = []
            for e in frontier:
                if e in visited:
                    continue
                visited.add(e)
                for f, o, conf, source, status, la, ac in execute(SQL_W1, (e,)):
                    n_facts += 1
                    if o is not None:
                        nxt.append(o)
                    age_weeks = (now - la) / WEEK_S
                    decay = 0.95 ** (age_weeks - 1) if age_weeks > 1 else 1.0
                    s = (
                        conf
                        * SOURCE_WEIGHT.get(source, 1.0)
                        * decay
                        * (1 + log10(ac + 1) * 0.5)
                        * (1.2 if status == SQL_STATUS_CONFIRMED else 1.0)
                    )
                    ranked.append((-s, f))
            frontier = nxt
        ranked.sort()
        return [f for _, f in ranked]

    def w4(self, anchors: Sequence[int]) -> list[int]:
        execute = self.con.execute
        best: dict[int, float] = {}
        get = best.get
        for a, s in zip(anchors, MATCH_SCORES, strict=True):
            dist = {a: 0}
            frontier = [a]
            for h in (0, 1):
                w = s * (1.0 / (1 + h))
                nxt: list[int] = []
                for e in frontier:
                    for f, subj, obj, conf in execute(SQL_W4, (e,)):
                        v = w * conf
                        if v > get(f, -1.0):
                            best[f] = v
                        o = obj if subj == e else subj
                        if o not in dist:
                            dist[o] = h + 1
                            nxt.append(o)
                frontier = nxt
        top = heapq.nsmallest(TOP_K, ((-v, f) for f, v in best.items()))
        return [f for _, f in top]


# ------------------------------------------------------------------------------------------
# graphrecall
# ------------------------------------------------------------------------------------------


class GraphRecallPeer(Peer):
    """graphrecall's ``KnowledgeGraph`` (Rust core through PyO3), through its prepared plans:
    ``spread_plan(...)`` / ``recall_plan(...)`` validate the configuration once at build, and
    each query (or batch: 2-D anchors) is then one call of the plan, i.e. one FFI call."""

    name = "graphrecall"
    package = "graphrecall"
    modules = ("graphrecall",)
    use_plans = True

    def build(self, g: Graph) -> None:
        import graphrecall as gr

        self.kg = gr.KnowledgeGraph.from_arrays(
            entity_tenant=g.entity_tenant,
            fact_subject=g.subject,
            fact_object=g.object,
            predicate=g.predicate,
            confidence=g.confidence,
            strength=g.strength,
            status=g.status,
            source=g.source,
            access_count=g.access_count,
            last_accessed=g.last_accessed,
            fact_ids=None,
        )
        self.w1_params: dict[str, Any] = {
            "max_hops": MAX_HOPS,
            "per_entity_limit": PER_ENTITY_LIMIT,
            "max_facts": MAX_FACTS,
            "direction": "out",
            "statuses": tuple(STATUSES[s] for s in sorted(ELIGIBLE)),
            "rank": "score_fact",
        }
        self.w4_params: dict[str, Any] = {"max_hops": MAX_HOPS, "direction": "both", "top_k": TOP_K}
        self.match = np.array(MATCH_SCORES)
        if self.use_plans and hasattr(self.kg, "spread_plan"):
            self._spread = self.kg.spread_plan(**self.w1_params)
        else:
            self._spread = self._spread_call
        if self.use_plans and hasattr(self.kg, "recall_plan"):
            self._recall = self.kg.recall_plan(**self.w4_params)
        else:
            self._recall = self._recall_call

    def _spread_call(self, anchors: np.ndarray, *, now: int) -> Any:
        return self.kg.spread(anchors, now=now, **self.w1_params)

    def _recall_call(self, anchors: np.ndarray, match_scores: np.ndarray) -> Any:
        return self.kg.graph_recall(anchors, match_scores=match_scores, **self.w4_params)

    def prepare(self, queries: np.ndarray) -> list[Any]:
        return list(np.ascontiguousarray(queries, dtype=np.int64))

    def w1(self, anchors: np.ndarray, now: int = NOW) -> np.ndarray:
        return self._spread(anchors, now=now).fact_ids

    def w4(self, anchors: np.ndarray) -> np.ndarray:
        return self._recall(anchors, self.match).fact_ids

    @staticmethod
    def _flat(res: Any, nq: int) -> tuple[np.ndarray, np.ndarray]:
        offsets = getattr(res, "fact_offsets", None)
        if offsets is None:
            parts = [np.asarray(res[i].fact_ids) for i in range(nq)]
            offsets = np.cumsum([0] + [len(p) for p in parts])
            return np.concatenate(parts), offsets
        return np.asarray(res.fact_ids), np.asarray(offsets)

    def w1_batch(self, queries: np.ndarray, now: int = NOW) -> tuple[np.ndarray, np.ndarray]:
        return self._flat(self._spread(queries, now=now), len(queries))

    def w4_batch(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._flat(self._recall(queries, self.match), len(queries))


class GraphRecallCallPeer(GraphRecallPeer):
    """graphrecall through the one-shot convenience calls ``kg.spread(anchors, **params)`` /
    ``kg.graph_recall(...)``, which validate the parameters again on every call."""

    name = "graphrecall-call"
    use_plans = False


PEERS: dict[str, type[Peer]] = {
    "graphrecall": GraphRecallPeer,
    "graphrecall-call": GraphRecallCallPeer,
    "dict": DictPeer,
    "scipy": ScipyPeer,
    "igraph": IGraphPeer,
    "rustworkx": RustworkxPeer,
    "networkx": NetworkXPeer,
    "sqlite": SQLitePeer,
}


def make_peer(name: str, data: str | Path | None = None) -> Peer:
    """Instantiate a peer by name (``sqlite`` needs the data directory)."""
    if name == "reference":
        return Reference()
    cls = PEERS[name]
    if cls is SQLitePeer:
        return SQLitePeer(Path(data) / "graph.sqlite" if data is not None else None)
    return cls()


def peer_available(name: str) -> str | None:
    """None when the peer can run, else why not (missing package)."""
    pkg = PEERS[name].package if name in PEERS else None
    if pkg is None:
        return None
    try:
        mod = __import__(pkg)
    except ImportError as exc:
        return f"{pkg} not importable: {exc}"
    if name.startswith("graphrecall") and not hasattr(mod, "KnowledgeGraph"):
        return "graphrecall.KnowledgeGraph does not exist yet"
    return None


def as_list(ids: Ids) -> list[int]:
    return ids.tolist() if isinstance(ids, np.ndarray) else list(ids)


def split_batch(ids: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    flat, off = np.asarray(ids).tolist(), np.asarray(offsets).tolist()
    return [flat[off[i] : off[i + 1]] for i in range(len(off) - 1)]
