"""Slow, obviously-correct pure-Python graph algorithms, written straight from the seeds.

Everything works on plain lists of dicts (the rows given to ``KnowledgeGraph.from_records``):

* entities: ``{"id", "tenant"}``;
* facts: ``{"id", "subject", "object" (None for a literal), "predicate", "confidence",
  "strength", "status", "source", "access_count", "last_accessed", "valid_from",
  "valid_to", "sequence"}`` with names (not codes) for statuses, sources and predicates
  and external entity ids for subject / object;
* chunks: ``{"id", "tenant"}``; mentions: ``{"chunk", "entity", "count"}``.

A fact's *row* (its position in the list) is its dense id: "ties by fact id" means ties by
row. Confidences and strengths must already be the float32 values the graph stores, widened
to Python floats. No numpy, no cleverness: loops, dicts and ``sorted``.

Sources: seed 000 (spreading activation, ``scoreFact``), seed 001 (mention boosts), seed 004
and WORKLOADS.md W1 / W4 (graph recall), HippoRAG (Personalized PageRank).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from . import scoring_ref

Row = Mapping[str, Any]

STATUSES = ("staged", "confirmed", "rejected", "archived")
SOURCES = ("user_edit", "file", "system", "conversation")


# ------------------------------------------------------------------------------------------
# Filters and adjacency


def admits(
    fact: Row,
    *,
    statuses: Sequence[str] | None = None,
    predicates: Sequence[Hashable] | None = None,
    min_confidence: float | None = None,
    as_of: int | None = None,
    max_sequence: int | None = None,
) -> bool:
    """Whether a fact passes the filters (None = no filter)."""
    if statuses is not None and fact["status"] not in statuses:
        return False
    if predicates is not None and fact["predicate"] not in predicates:
        return False
    if min_confidence is not None and fact["confidence"] < min_confidence:
        return False
    if as_of is not None:
        vf, vt = fact.get("valid_from"), fact.get("valid_to")
        if vf is not None and not vf <= as_of:
            return False
        if vt is not None and not as_of < vt:
            return False
    if max_sequence is not None:
        seq = fact.get("sequence")
        if seq is None or not seq <= max_sequence:
            return False
    return True


def incident(
    facts: Sequence[Row], entity: Hashable, direction: str, **filters: Any
) -> list[tuple[int, Hashable | None]]:
    """(row, other endpoint) of the admitted facts walked from ``entity``, by confidence
    desc then row asc. "out": facts whose subject is the entity (other = object, None for
    a literal); "in": facts whose object is the entity (other = subject); "both": either
    (a self-loop once)."""
    found = []
    for row, f in enumerate(facts):
        if not admits(f, **filters):
            continue
        if direction in ("out", "both") and f["subject"] == entity:
            found.append((row, f["object"]))
        elif direction in ("in", "both") and f["object"] is not None and f["object"] == entity:
            found.append((row, f["subject"]))
    found.sort(key=lambda item: (-facts[item[0]]["confidence"], item[0]))
    return found


def adjacency(facts: Sequence[Row], entity: Hashable) -> tuple[list[int], list[int]]:
    """(out rows, in rows) of an entity, confidence desc then row asc, no filter."""
    out = [r for r, _ in incident(facts, entity, "out") if facts[r]["subject"] == entity]
    inn = [r for r, f in enumerate(facts) if f["object"] is not None and f["object"] == entity]
    inn.sort(key=lambda r: (-facts[r]["confidence"], r))
    return out, inn


# ------------------------------------------------------------------------------------------
# Seed 000: spreading activation


def spread(
    facts: Sequence[Row],
    anchors: Sequence[Hashable],
    *,
    max_hops: int = 2,
    per_entity_limit: int | None = None,
    max_facts: int | None = None,
    direction: str = "out",
    **filters: Any,
) -> dict[str, list[Any]]:
    """Seed 000's ``spreadingActivation``: one BFS with a shared visited set.

    Each expanded entity contributes its first ``per_entity_limit`` admitted facts (by
    confidence desc, row asc); a fact already collected (only possible with "both") is not
    collected twice. ``max_facts`` is checked before each hop only. Each frontier entry
    carries the anchor and the fact its path started from / came through; an entity is
    expanded on the first entry that reaches it.

    Returns lists: ``rows``, ``hops``, ``anchors``, ``parents`` (row or None), ``via``, and
    the reached entities ``entities``, ``entity_hops``, ``entity_strengths`` (anchors at hop
    0 with strength 0; others at their BFS distance with the largest strength among the
    collected facts reaching them at that distance), in order of first reach.
    """
    out: dict[str, list[Any]] = {k: [] for k in ("rows", "hops", "anchors", "parents", "via")}
    ent_hop: dict[Hashable, int] = {}
    ent_strength: dict[Hashable, float] = {}
    ent_order: list[Hashable] = []

    def reach(e: Hashable, hop: int, strength: float) -> None:
        if e not in ent_hop:
            ent_order.append(e)
            ent_hop[e] = hop
            ent_strength[e] = strength
        elif hop == ent_hop[e] and strength > ent_strength[e]:
            ent_strength[e] = strength

    for a in anchors:
        reach(a, 0, 0.0)
    frontier: list[tuple[Hashable, Hashable, int | None]] = [(a, a, None) for a in anchors]
    visited: set[Hashable] = set()
    collected: set[int] = set()
    for hop in range(max_hops):
        if max_facts is not None and len(out["rows"]) >= max_facts:
            break
        nxt: list[tuple[Hashable, Hashable, int | None]] = []
        for e, anchor, parent in frontier:
            if e in visited:
                continue
            visited.add(e)
            taken = incident(facts, e, direction, **filters)
            if per_entity_limit is not None:
                taken = taken[:per_entity_limit]
            for row, other in taken:
                if row in collected:
                    continue
                collected.add(row)
                out["rows"].append(row)
                out["hops"].append(hop)
                out["anchors"].append(anchor)
                out["parents"].append(parent)
                out["via"].append(e)
                if other is not None:
                    reach(other, hop + 1, facts[row]["strength"])
                    nxt.append((other, anchor, row))
        frontier = nxt
    out["entities"] = ent_order
    out["entity_hops"] = [ent_hop[e] for e in ent_order]
    out["entity_strengths"] = [ent_strength[e] for e in ent_order]
    return out


def score_fact(fact: Row, now: int) -> float:
    """Seed 000 ``scoreFact`` of a fact row (source / status by name)."""
    return scoring_ref.score_fact(
        fact["confidence"],
        SOURCES.index(fact["source"]),
        STATUSES.index(fact["status"]),
        fact.get("last_accessed"),
        fact["access_count"],
        now,
    )


def rank_facts(facts: Sequence[Row], rows: Sequence[int], now: int) -> list[tuple[int, float]]:
    """Seed 000 ``rankFacts``: (row, score) by score desc, ties by row asc."""
    scored = [(r, score_fact(facts[r], now)) for r in rows]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def w1(facts: Sequence[Row], anchors: Sequence[Hashable], now: int) -> list[tuple[int, float]]:
    """WORKLOADS.md W1, literally: (row, score), all facts, by score desc then row asc."""
    frontier = list(anchors)
    visited: set[Hashable] = set()
    collected: list[int] = []
    for _hop in range(2):
        if len(collected) >= 30:
            break
        nxt = []
        for e in frontier:
            if e in visited:
                continue
            visited.add(e)
            own = [
                r
                for r, f in enumerate(facts)
                if f["subject"] == e and f["status"] in ("staged", "confirmed")
            ]
            own.sort(key=lambda r: (-facts[r]["confidence"], r))
            for r in own[:10]:
                collected.append(r)
                if facts[r]["object"] is not None:
                    nxt.append(facts[r]["object"])
        frontier = nxt
    source_weight = {"user_edit": 2.0, "file": 1.5, "system": 1.2, "conversation": 1.0}

    def score(f: Row) -> float:
        if f.get("last_accessed") is None:
            decay = 1.0
        else:
            age_weeks = (now - f["last_accessed"]) / 604800.0
            decay = 0.95 ** (age_weeks - 1) if age_weeks > 1 else 1.0
        return (
            f["confidence"]
            * source_weight[f["source"]]
            * decay
            * (1 + math.log10(f["access_count"] + 1) * 0.5)
            * (1.2 if f["status"] == "confirmed" else 1.0)
        )

    scored = [(r, score(facts[r])) for r in collected]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


# ------------------------------------------------------------------------------------------
# Seed 004 / W4: graph recall


def recall_best(
    facts: Sequence[Row],
    anchors: Sequence[Hashable],
    scores: Sequence[float],
    *,
    max_hops: int = 2,
    direction: str = "both",
    literals: bool = False,
    **filters: Any,
) -> dict[int, float]:
    """W4's literal per-anchor BFS: best composite value of every reached edge (row).

    Only facts with an object entity are edges (literal facts count too, as dead ends,
    with ``literals``). Each anchor runs its own BFS; an edge walked from an endpoint at
    distance h scores ``(s * (1.0 / (1 + h))) * confidence`` and keeps its best over
    anchors and hops.
    """
    best: dict[int, float] = {}
    for a, s in zip(anchors, scores, strict=True):
        dist = {a: 0}
        frontier = [a]
        for h in range(max_hops):
            nxt = []
            for e in frontier:
                for row, other in incident(facts, e, direction, **filters):
                    if other is None and not literals:
                        continue
                    value = (s * (1.0 / (1 + h))) * facts[row]["confidence"]
                    if row not in best or value > best[row]:
                        best[row] = value
                    if other is not None and other not in dist:
                        dist[other] = h + 1
                        nxt.append(other)
            frontier = nxt
    return best


def recall_closed_form(
    facts: Sequence[Row],
    anchors: Sequence[Hashable],
    scores: Sequence[float],
    *,
    max_hops: int = 2,
    direction: str = "both",
    **filters: Any,
) -> dict[int, float]:
    """W4's closed form: ``g(x) = max over anchors a with d_a(x) < max_hops of
    s_a * (1 / (1 + d_a(x)))``; ``composite(f) = max over walkable endpoints x of f with g(x)
    defined of g(x) * confidence(f)``."""
    g: dict[Hashable, float] = {}
    for a, s in zip(anchors, scores, strict=True):
        dist = {a: 0}
        level = [a]
        for d in range(max_hops):
            for x in level:
                value = s * (1.0 / (1 + d))
                if x not in g or value > g[x]:
                    g[x] = value
            nxt = []
            for x in level:
                for _, other in incident(facts, x, direction, **filters):
                    if other is not None and other not in dist:
                        dist[other] = d + 1
                        nxt.append(other)
            level = nxt
    best: dict[int, float] = {}
    for x, gx in g.items():
        for row, other in incident(facts, x, direction, **filters):
            if other is None:
                continue
            value = gx * facts[row]["confidence"]
            if row not in best or value > best[row]:
                best[row] = value
    return best


def top(best: Mapping[int, float], k: int) -> list[tuple[int, float]]:
    """The k best (row, value), by value desc then row asc."""
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]


def dedupe_triples(facts: Sequence[Row], best: Mapping[int, float]) -> dict[int, float]:
    """Seed 004's dedupe: one edge per (subject, object, predicate), the best by value desc
    then row asc."""
    keep: dict[tuple[Hashable, Hashable, Hashable], int] = {}
    for row, value in best.items():
        f = facts[row]
        key = (f["subject"], f["object"], f["predicate"])
        cur = keep.get(key)
        if cur is None or (-value, row) < (-best[cur], cur):
            keep[key] = row
    return {row: best[row] for row in keep.values()}


def graph_recall(
    facts: Sequence[Row],
    anchors: Sequence[Hashable],
    scores: Sequence[float],
    *,
    max_hops: int = 2,
    direction: str = "both",
    top_k: int = 20,
    dedupe: str = "fact",
    **filters: Any,
) -> list[tuple[int, float]]:
    """Seed 004 ``graph_recall``: literal BFS, dedupe, top-k by (value desc, row asc)."""
    best = recall_best(facts, anchors, scores, max_hops=max_hops, direction=direction, **filters)
    if dedupe == "triple":
        best = dedupe_triples(facts, best)
    return top(best, top_k)


# ------------------------------------------------------------------------------------------
# Seed 001: mention boosts


def mention_boost(
    mentions: Sequence[Row],
    chunks: Sequence[Hashable],
    similarity: Sequence[float],
    query_entities: Sequence[Hashable],
    related: Sequence[Hashable],
    related_distance: Sequence[int],
    related_strength: Sequence[float],
    *,
    direct: float = 0.3,
    indirect: float = 0.1,
    use_strength: bool = True,
) -> dict[str, list[Any]]:
    """Seed 001 step 4 and 5 for one query (``related`` entities unique).

    ``direct_boost = len(mentioned & query_entities) * direct``; ``indirect_boost = sum over
    mentioned & related - query_entities of indirect * (1 / distance) * strength``;
    ``adjusted = similarity + direct_boost + indirect_boost``; ``order`` = positions sorted
    by adjusted desc with a stable sort.
    """
    info = {
        e: (d, s if use_strength else 1.0)
        for e, d, s in zip(related, related_distance, related_strength, strict=True)
    }
    qset = set(query_entities)
    related_ids = set(info) - qset
    out: dict[str, list[Any]] = {"direct": [], "indirect": [], "adjusted": []}
    for c, sim in zip(chunks, similarity, strict=True):
        mentioned = {m["entity"] for m in mentions if m["chunk"] == c}
        direct_boost = len(mentioned & qset) * direct
        indirect_boost = 0.0
        for e in mentioned & related_ids:
            distance, strength = info[e]
            distance_penalty = 1.0 / distance
            indirect_boost += indirect * distance_penalty * strength
        out["direct"].append(direct_boost)
        out["indirect"].append(indirect_boost)
        out["adjusted"].append(sim + direct_boost + indirect_boost)
    adjusted = out["adjusted"]
    out["order"] = sorted(range(len(chunks)), key=lambda i: adjusted[i], reverse=True)
    return out


# ------------------------------------------------------------------------------------------
# Personalized PageRank (HippoRAG)


def ppr_edges(
    entities: Sequence[Row],
    facts: Sequence[Row],
    tenant: Hashable,
    *,
    weight: str = "strength",
    direction: str = "both",
    **filters: Any,
) -> tuple[list[Hashable], list[tuple[Hashable, Hashable, float]]]:
    """(the tenant's entities in row order, weighted directed edges u -> v). "both" makes
    every fact an undirected edge (u -> v and v -> u; a self-loop once); edges of weight 0
    are dropped."""
    nodes = [e["id"] for e in entities if e["tenant"] == tenant]
    members = set(nodes)
    edges = []
    for f in facts:
        s, o = f["subject"], f["object"]
        if o is None or s not in members or not admits(f, **filters):
            continue
        w = {"strength": f["strength"], "confidence": f["confidence"], "uniform": 1.0}[weight]
        if w <= 0:
            continue
        if direction in ("out", "both"):
            edges.append((s, o, w))
        if direction == "in" or (direction == "both" and s != o):
            edges.append((o, s, w))
    return nodes, edges


def pagerank(
    entities: Sequence[Row],
    facts: Sequence[Row],
    seeds: Sequence[Hashable],
    weights: Sequence[float] | None = None,
    *,
    damping: float = 0.5,
    weight: str = "strength",
    direction: str = "both",
    tenant: Hashable | None = None,
    tol: float = 1e-15,
    max_iter: int = 100_000,
    **filters: Any,
) -> dict[Hashable, float]:
    """Personalized PageRank by dense power iteration over the seeds' tenant.

    ``x <- (1 - d) p + d (x P + dangling_mass(x) p)`` with ``P`` the row-normalised weight
    matrix, ``p`` the normalised seed weights; iterates until the L1 change is below ``tol``.
    Returns the entities with a positive score.
    """
    if tenant is None:
        tenant = next(e["tenant"] for e in entities if e["id"] == seeds[0])
    nodes, edges = ppr_edges(entities, facts, tenant, weight=weight, direction=direction, **filters)
    n = len(nodes)
    index = {e: i for i, e in enumerate(nodes)}
    matrix = [[0.0] * n for _ in range(n)]
    for u, v, w in edges:
        matrix[index[u]][index[v]] += w
    for i in range(n):
        total = sum(matrix[i])
        if total > 0:
            matrix[i] = [w / total for w in matrix[i]]
    dangling = [sum(matrix[i]) == 0 for i in range(n)]
    ws = [1.0] * len(seeds) if weights is None else list(weights)
    p = [0.0] * n
    for s, w in zip(seeds, ws, strict=True):
        p[index[s]] += w / sum(ws)
    x = list(p)
    for _ in range(max_iter):
        mass = sum(x[i] for i in range(n) if dangling[i])
        nxt = [
            (1 - damping) * p[v]
            + damping * (sum(x[u] * matrix[u][v] for u in range(n)) + mass * p[v])
            for v in range(n)
        ]
        delta = sum(abs(a - b) for a, b in zip(nxt, x, strict=True))
        x = nxt
        if delta < tol:
            break
    return {nodes[i]: x[i] for i in range(n) if x[i] > 0}


def pagerank_push(
    entities: Sequence[Row],
    facts: Sequence[Row],
    seeds: Sequence[Hashable],
    weights: Sequence[float] | None = None,
    *,
    epsilon: float,
    damping: float = 0.5,
    weight: str = "strength",
    direction: str = "both",
    tenant: Hashable | None = None,
    **filters: Any,
) -> tuple[dict[Hashable, float], int]:
    """Approximate Personalized PageRank by forward push (Andersen, Chung and Lang, 2006).

    Every node starts with its normalised seed weight as residual. A FIFO queue holds the
    nodes whose residual exceeds ``epsilon x max(degree, 1)`` (degree: the facts at the node
    in the walked direction, literal and filtered ones included); popping ``u`` moves ``(1 -
    damping) x r_u`` to its score and ``damping x r_u`` to its admitted edges in proportion to
    their weight (out-edges by confidence desc, then fact row; for "both" the out-edges
    first, then the in-edges except self-loops), or back to the seeds when it has none.
    Returns (the positive scores, the number of pushes); the same arithmetic in the same
    order as the kernel.
    """
    if tenant is None:
        tenant = next(e["tenant"] for e in entities if e["id"] == seeds[0])
    members = {e["id"] for e in entities if e["tenant"] == tenant}
    rows = list(enumerate(facts))

    def f32(x: float) -> float:  # stored confidences and strengths are float32
        return float(struct.unpack("f", struct.pack("f", x))[0])

    def order(items: list[tuple[int, Row]]) -> list[tuple[int, Row]]:
        return sorted(items, key=lambda it: (-f32(it[1]["confidence"]), it[0]))

    def out_facts(u: Hashable) -> list[tuple[int, Row]]:
        return order([(i, f) for i, f in rows if f["subject"] == u])

    def in_facts(u: Hashable) -> list[tuple[int, Row]]:
        return order([(i, f) for i, f in rows if f["object"] == u])

    def edges(u: Hashable) -> list[tuple[Hashable, float]]:
        walked: list[tuple[Row, Hashable]] = []
        if direction in ("out", "both"):
            walked += [(f, f["object"]) for _, f in out_facts(u)]
        if direction in ("in", "both"):
            walked += [
                (f, f["subject"]) for _, f in in_facts(u) if direction == "in" or f["subject"] != u
            ]
        out = []
        for f, other in walked:
            if other is None or not admits(f, **filters):
                continue
            w = {"strength": f32(f["strength"]), "confidence": f32(f["confidence"])}.get(
                weight, 1.0
            )
            if w > 0:
                out.append((other, w))
        return out

    def degree(u: Hashable) -> int:
        n = 0
        if direction in ("out", "both"):
            n += len(out_facts(u))
        if direction in ("in", "both"):
            n += len(in_facts(u))
        return n

    ws = [1.0] * len(seeds) if weights is None else list(weights)
    top = max(ws)
    total = sum(w / top for w in ws)
    reset = [(s, (w / top) / total) for s, w in zip(seeds, ws, strict=True)]
    reset = [(s, v) for s, v in reset if v > 0]
    assert all(s in members for s, _ in reset)
    score: dict[Hashable, float] = {}
    residual: dict[Hashable, float] = {}
    threshold: dict[Hashable, float] = {}
    queue: list[Hashable] = []
    queued: set[Hashable] = set()

    def add(v: Hashable, m: float) -> None:
        if v not in threshold:
            threshold[v] = epsilon * max(degree(v), 1)
        residual[v] = residual.get(v, 0.0) + m
        if v not in queued and residual[v] > threshold[v]:
            queued.add(v)
            queue.append(v)

    for s, v in reset:
        add(s, v)
    pushes = 0
    while queue:
        u = queue.pop(0)
        queued.discard(u)
        r = residual[u]
        residual[u] = 0.0
        score[u] = score.get(u, 0.0) + (1 - damping) * r
        pushes += 1
        moved = damping * r
        out = edges(u)
        tot = 0.0
        for _, w in out:
            tot += w
        if tot > 0:
            for v, w in out:
                add(v, moved * (w / tot))
        else:
            for s, v in reset:
                add(s, moved * v)
    return {e: x for e, x in score.items() if x > 0}, pushes


def reachable(
    entities: Sequence[Row],
    facts: Sequence[Row],
    seeds: Sequence[Hashable],
    *,
    weight: str = "strength",
    direction: str = "both",
    tenant: Hashable | None = None,
    **filters: Any,
) -> set[Hashable]:
    """Entities reachable from the seeds along PPR edges (the support of the PPR vector)."""
    if tenant is None:
        tenant = next(e["tenant"] for e in entities if e["id"] == seeds[0])
    _, edges = ppr_edges(entities, facts, tenant, weight=weight, direction=direction, **filters)
    seen = set(seeds)
    stack = list(seeds)
    while stack:
        u = stack.pop()
        for a, b, _ in edges:
            if a == u and b not in seen:
                seen.add(b)
                stack.append(b)
    return seen


def chunk_scores(
    mentions: Sequence[Row], entity_scores: Mapping[Hashable, float], *, weight_by_count: bool
) -> dict[Hashable, float]:
    """HippoRAG's passage scores: sum over the entities a chunk mentions of their score
    (x the mention count with ``weight_by_count``); chunks mentioning no scored entity are
    left out."""
    out: dict[Hashable, float] = {}
    for m in mentions:
        s = entity_scores.get(m["entity"])
        if s is None or s <= 0:
            continue
        w = m.get("count", 1) if weight_by_count else 1
        out[m["chunk"]] = out.get(m["chunk"], 0.0) + s * w
    return out
