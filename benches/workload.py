"""Synthetic power-law knowledge graph for the W1 / W4 benchmarks (see WORKLOADS.md).

Usage::

    python benches/workload.py --entities 100000 --seed 0 --out benches/data/100k

writes ``entities.parquet``, ``facts.parquet``, ``queries.json`` and ``graph.sqlite`` into ``--out``
and prints the summary numbers of the generated graph. Everything is drawn with numpy from one
seed, so the same ``--entities``/``--seed`` always gives byte-identical columns.

The module also holds :func:`load`, which reads the Parquet files back into the numeric columns
every peer (and graphrecall) builds from, so that all implementations see identical numbers:
``confidence`` and ``strength`` are float32 everywhere (Parquet, SQLite REAL, numpy).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

NOW = 1767225600  # 2026-01-01T00:00:00Z, passed to every query
N_TENANTS = 10
N_PREDICATES = 50
PREDICATES = tuple(f"p{k:02d}" for k in range(N_PREDICATES))
ENTITY_TYPES = (
    "person",
    "project",
    "technology",
    "organization",
    "place",
    "concept",
    "event",
    "document",
)
STATUSES = ("staged", "confirmed", "rejected", "archived")  # codes 0..3
STATUS_P = (0.35, 0.35, 0.15, 0.15)
SOURCES = ("user_edit", "file", "system", "conversation")  # codes 0..3
SOURCE_P = (0.15, 0.30, 0.20, 0.35)
DEGREE_SCALE = 10.55
DEGREE_CAP = 2000
LITERAL_SHARE = 0.20
ATTRACT_ALPHA = 2.5
PREDICATE_ZIPF = 0.8
ACCESS_ZIPF = 2.0
ACCESS_CAP = 10**6
# Rows per slice of the big vectorised steps (bounds their temporaries at 100M facts).
_SLICE = 1 << 22
# Rows per row group of facts.parquet.
ROW_GROUP = 1 << 20
MAX_AGE_S = 365 * 86400
N_QUERIES = 1000
ANCHORS_PER_QUERY = 3
# W4 match scores of anchors a0, a1, a2.
MATCH_SCORES = (1.0, 0.9, 0.8)


@dataclass
class Graph:
    """The generated tables as numpy columns, in fact-id order (row i has id i)."""

    entity_tenant: np.ndarray  # int64 (N,)
    entity_type: np.ndarray  # int64 (N,) index into ENTITY_TYPES
    subject: np.ndarray  # int64 (M,)
    object: np.ndarray  # int64 (M,), -1 = literal
    predicate: np.ndarray  # uint8 (M,) index into PREDICATES
    confidence: np.ndarray  # float32 (M,)
    strength: np.ndarray  # float32 (M,)
    status: np.ndarray  # uint8 (M,) index into STATUSES
    source: np.ndarray  # uint8 (M,) index into SOURCES
    last_accessed: np.ndarray  # int64 (M,) unix seconds
    access_count: np.ndarray  # int64 (M,)
    queries: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))  # (Q, 3)
    query_tenant: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # (Q,)

    @property
    def n_entities(self) -> int:
        return len(self.entity_tenant)

    @property
    def n_facts(self) -> int:
        return len(self.subject)

    @property
    def fact_tenant(self) -> np.ndarray:
        return self.entity_tenant[self.subject]


# --------------------------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------------------------


def _sample_objects(
    rng: np.random.Generator,
    subject: np.ndarray,
    entity_tenant: np.ndarray,
    attractiveness: np.ndarray,
) -> np.ndarray:
    """For every fact, an entity of the subject's tenant, P proportional to attractiveness.

    Vectorised inverse-CDF sampling over one global cumulative sum in which the entities are
    grouped by tenant; self-loops are redrawn until none is left.
    """
    n = len(entity_tenant)
    by_tenant = np.argsort(entity_tenant, kind="stable")
    counts = np.bincount(entity_tenant, minlength=N_TENANTS)
    starts = np.zeros(N_TENANTS + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    with_facts = np.zeros(N_TENANTS, bool)
    for lo_row in range(0, len(subject), _SLICE):
        with_facts[entity_tenant[subject[lo_row : lo_row + _SLICE]]] = True
    if np.any(counts[with_facts] < 2):
        raise ValueError("every tenant with facts needs at least two entities (no self-loops)")
    cum = np.cumsum(attractiveness[by_tenant])  # float64, global
    lo = np.concatenate(([0.0], cum))[starts[:-1]]  # cumulative mass before each tenant
    hi = cum[np.maximum(starts[1:] - 1, 0)]
    hi = np.where(counts > 0, hi, lo)

    out = np.empty(len(subject), np.int64)

    def draw(todo: np.ndarray | slice, subj: np.ndarray) -> np.ndarray:
        t = entity_tenant[subj]
        u = lo[t] + rng.random(len(subj)) * (hi[t] - lo[t])
        k = np.searchsorted(cum, u, side="right")
        # float round-off at a tenant boundary: clamp into the tenant's range
        k = np.clip(k, starts[t], starts[t + 1] - 1)
        obj = by_tenant[k]
        out[todo] = obj
        return obj == subj

    # The first round in slices (consecutive draws continue one stream, so the values are
    # those of one big draw) to bound the temporaries; then the few self-loops are redrawn.
    redo = []
    for lo_row in range(0, len(subject), _SLICE):
        rows = slice(lo_row, min(lo_row + _SLICE, len(subject)))
        redo.append(lo_row + np.flatnonzero(draw(rows, subject[rows])))
    todo = np.concatenate(redo) if redo else np.zeros(0, np.int64)
    while len(todo):
        todo = todo[draw(todo, subject[todo])]
    assert out.max(initial=0) < n
    return out


def generate(n_entities: int, seed: int = 0, n_queries: int = N_QUERIES) -> Graph:
    """Generate the WORKLOADS.md graph and queries (numpy columns, fact-id order)."""
    ss = np.random.SeedSequence([seed, n_entities])
    r_ent, r_deg, r_obj, r_attr, r_cols, r_perm, r_q = (
        np.random.default_rng(s) for s in ss.spawn(7)
    )
    n = n_entities
    entity_tenant = r_ent.integers(0, N_TENANTS, n).astype(np.int64)
    entity_type = r_ent.integers(0, len(ENTITY_TYPES), n).astype(np.int64)

    # out-degree: Lomax(alpha=2) scaled, floored, capped
    u = r_deg.random(n)
    degree = np.floor(DEGREE_SCALE * ((1.0 - u) ** -0.5 - 1.0))
    degree = np.minimum(degree, DEGREE_CAP).astype(np.int64)
    del u
    m = int(degree.sum())
    subject_gen = np.repeat(np.arange(n, dtype=np.int64), degree)  # generation order
    del degree

    # fact ids: a random permutation of generation order; rows stored in id order. Every
    # column is put in id order as soon as it is drawn (each draws from its own stream, so
    # the order of these steps does not change any value), so that at most one column
    # exists twice at a time.
    order = np.empty(m, np.int64)
    order[r_perm.permutation(m)] = np.arange(m)  # order[id] = generation index

    # objects: 20% literals, the rest same-tenant by Pareto(2.5) attractiveness (x_m = 1)
    attractiveness = r_attr.pareto(ATTRACT_ALPHA, n) + 1.0
    object_gen = np.full(m, -1, np.int64)
    linked = np.flatnonzero(r_obj.random(m) >= LITERAL_SHARE)
    object_gen[linked] = _sample_objects(r_obj, subject_gen[linked], entity_tenant, attractiveness)
    del linked, attractiveness
    subject = subject_gen[order]
    del subject_gen
    obj = object_gen[order]
    del object_gen

    # scalar columns (drawn in generation order)
    pz = 1.0 / np.arange(1, N_PREDICATES + 1, dtype=np.float64) ** PREDICATE_ZIPF
    predicate = r_cols.choice(N_PREDICATES, m, p=pz / pz.sum()).astype(np.uint8)[order]
    confidence = r_cols.random(m, dtype=np.float32)[order]
    strength = r_cols.random(m, dtype=np.float32)[order]
    status = r_cols.choice(len(STATUSES), m, p=STATUS_P).astype(np.uint8)[order]
    source = r_cols.choice(len(SOURCES), m, p=SOURCE_P).astype(np.uint8)[order]
    last_accessed = (NOW - r_cols.integers(0, MAX_AGE_S, m, endpoint=True))[order]
    access_count = np.minimum(r_cols.zipf(ACCESS_ZIPF, m) - 1, ACCESS_CAP).astype(np.int64)[order]
    del order

    q_tenant, queries = _generate_queries(r_q, entity_tenant, n_queries)
    return Graph(
        entity_tenant=entity_tenant,
        entity_type=entity_type,
        subject=subject,
        object=obj,
        predicate=predicate,
        confidence=confidence,
        strength=strength,
        status=status,
        source=source,
        last_accessed=last_accessed.astype(np.int64),
        access_count=access_count,
        queries=queries,
        query_tenant=q_tenant,
    )


def _generate_queries(
    rng: np.random.Generator, entity_tenant: np.ndarray, n_queries: int
) -> tuple[np.ndarray, np.ndarray]:
    members = [np.flatnonzero(entity_tenant == t) for t in range(N_TENANTS)]
    usable = [t for t in range(N_TENANTS) if len(members[t]) >= ANCHORS_PER_QUERY]
    tenants = np.empty(n_queries, np.int64)
    queries = np.empty((n_queries, ANCHORS_PER_QUERY), np.int64)
    for i in range(n_queries):
        t = usable[int(rng.integers(len(usable)))]
        tenants[i] = t
        queries[i] = rng.choice(members[t], ANCHORS_PER_QUERY, replace=False)
    return tenants, queries


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _text(codes: np.ndarray, names: tuple[str, ...]) -> pa.Array:
    """Codes -> text column (decoded from a dictionary array: vectorised)."""
    dict_arr = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(names))
    return dict_arr.cast(pa.string())


def write_parquet(g: Graph, out: Path) -> None:
    n, m = g.n_entities, g.n_facts
    ent_ids = pa.array(np.arange(n, dtype=np.int64))
    entities = pa.table(
        {
            "id": ent_ids,
            "name": pc.binary_join_element_wise("entity_", pc.cast(ent_ids, pa.string()), ""),
            "type": _text(g.entity_type, ENTITY_TYPES),
            "tenant": pa.array(g.entity_tenant),
        }
    )
    pq.write_table(entities, out / "entities.parquet")

    # One row group at a time, so that the text columns of 100M facts never exist at once
    # (the file is the one ``pq.write_table(..., row_group_size=ROW_GROUP)`` writes).
    writer: pq.ParquetWriter | None = None
    try:
        for lo in range(0, max(m, 1), ROW_GROUP):
            part = _facts_table(g, lo, min(lo + ROW_GROUP, m))
            if writer is None:
                writer = pq.ParquetWriter(out / "facts.parquet", part.schema)
            writer.write_table(part, row_group_size=ROW_GROUP)
    finally:
        if writer is not None:
            writer.close()


def _facts_table(g: Graph, lo: int, hi: int) -> pa.Table:
    """Rows ``lo:hi`` of ``facts.parquet``."""
    fact_ids = pa.array(np.arange(lo, hi, dtype=np.int64))
    obj = g.object[lo:hi]
    literal = obj < 0
    object_value = pc.if_else(
        pa.array(literal),
        pc.binary_join_element_wise("lit_", pc.cast(fact_ids, pa.string()), ""),
        pa.scalar(None, pa.string()),
    )
    return pa.table(
        {
            "id": fact_ids,
            "subject_id": pa.array(g.subject[lo:hi]),
            "predicate": _text(g.predicate[lo:hi], PREDICATES),
            "object_id": pa.array(obj, mask=literal),
            "object_value": object_value,
            "confidence": pa.array(g.confidence[lo:hi], pa.float32()),
            "status": _text(g.status[lo:hi], STATUSES),
            "source": _text(g.source[lo:hi], SOURCES),
            "last_accessed": pa.array(g.last_accessed[lo:hi]),
            "access_count": pa.array(g.access_count[lo:hi]),
            "strength": pa.array(g.strength[lo:hi], pa.float32()),
            "tenant": pa.array(g.entity_tenant[g.subject[lo:hi]]),
        }
    )


def write_queries(g: Graph, out: Path, seed: int) -> None:
    doc = {
        "now": NOW,
        "seed": seed,
        "entities": g.n_entities,
        "facts": g.n_facts,
        "match_scores": list(MATCH_SCORES),
        "queries": [
            {"tenant": int(t), "anchors": [int(a) for a in q]}
            for t, q in zip(g.query_tenant, g.queries, strict=True)
        ],
    }
    (out / "queries.json").write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")


SQLITE_SCHEMA = """
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    tenant INTEGER NOT NULL
);
CREATE TABLE facts (
    id INTEGER PRIMARY KEY,
    subject_id INTEGER NOT NULL,
    predicate TEXT NOT NULL,
    object_id INTEGER,
    object_value TEXT,
    confidence REAL NOT NULL,
    status TEXT NOT NULL,
    source TEXT NOT NULL,
    last_accessed INTEGER NOT NULL,
    access_count INTEGER NOT NULL,
    strength REAL NOT NULL,
    tenant INTEGER NOT NULL
);
"""


def write_sqlite(g: Graph, path: Path, chunk: int = 500_000) -> None:
    """Import into SQLite from the same columns (float32 values stored as exact doubles)."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA cache_size=-262144")
        con.executescript(SQLITE_SCHEMA)
        con.execute("BEGIN")
        n = g.n_entities
        con.executemany(
            "INSERT INTO entities VALUES (?,?,?,?)",
            zip(
                range(n),
                (f"entity_{i}" for i in range(n)),
                (ENTITY_TYPES[t] for t in g.entity_type.tolist()),
                g.entity_tenant.tolist(),
                strict=True,
            ),
        )
        con.execute("COMMIT")
        pred_names, status_names, source_names = list(PREDICATES), list(STATUSES), list(SOURCES)
        tenant = g.fact_tenant
        for lo in range(0, g.n_facts, chunk):
            hi = min(lo + chunk, g.n_facts)
            obj = g.object[lo:hi]
            ids = range(lo, hi)
            con.execute("BEGIN")
            con.executemany(
                "INSERT INTO facts VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                zip(
                    ids,
                    g.subject[lo:hi].tolist(),
                    [pred_names[p] for p in g.predicate[lo:hi].tolist()],
                    [None if o < 0 else o for o in obj.tolist()],
                    [f"lit_{i}" if o < 0 else None for i, o in zip(ids, obj.tolist(), strict=True)],
                    g.confidence[lo:hi].tolist(),  # float32 -> exact Python float
                    [status_names[s] for s in g.status[lo:hi].tolist()],
                    [source_names[s] for s in g.source[lo:hi].tolist()],
                    g.last_accessed[lo:hi].tolist(),
                    g.access_count[lo:hi].tolist(),
                    g.strength[lo:hi].tolist(),
                    tenant[lo:hi].tolist(),
                    strict=True,
                ),
            )
            con.execute("COMMIT")
        con.execute("CREATE INDEX facts_subject ON facts(subject_id)")
        con.execute("CREATE INDEX facts_object ON facts(object_id)")
        con.execute("ANALYZE")
    finally:
        con.close()


def write_all(g: Graph, out: Path, seed: int, sqlite: bool = True) -> dict[str, float]:
    """Write every file; returns seconds per step."""
    out.mkdir(parents=True, exist_ok=True)
    t = {}
    t0 = time.perf_counter()
    write_parquet(g, out)
    t["parquet_s"] = time.perf_counter() - t0
    write_queries(g, out, seed)
    if sqlite:
        t0 = time.perf_counter()
        write_sqlite(g, out / "graph.sqlite")
        t["sqlite_s"] = time.perf_counter() - t0
    return t


# --------------------------------------------------------------------------------------------
# loading (what every peer builds from)
# --------------------------------------------------------------------------------------------


def _codes(col: pa.ChunkedArray, names: tuple[str, ...]) -> np.ndarray:
    codes = pc.index_in(col, value_set=pa.array(names))
    if codes.null_count:
        raise ValueError(f"unknown value in column; expected one of {names}")
    return codes.to_numpy().astype(np.uint8)


def load(data: str | Path) -> Graph:
    """Read ``entities.parquet``, ``facts.parquet`` and ``queries.json`` into numpy columns."""
    data = Path(data)
    ent = pq.read_table(data / "entities.parquet")
    facts = pq.read_table(data / "facts.parquet")
    ids = facts["id"].to_numpy()
    if not np.array_equal(ids, np.arange(len(ids))):
        raise ValueError("facts.parquet rows must be in id order with ids 0..M-1")
    if not np.array_equal(ent["id"].to_numpy(), np.arange(ent.num_rows)):
        raise ValueError("entities.parquet rows must be in id order with ids 0..N-1")
    doc = json.loads((data / "queries.json").read_text())
    q = doc["queries"]
    return Graph(
        entity_tenant=ent["tenant"].to_numpy().astype(np.int64),
        entity_type=_codes(ent["type"], ENTITY_TYPES).astype(np.int64),
        subject=facts["subject_id"].to_numpy().astype(np.int64),
        object=pc.fill_null(facts["object_id"], -1).to_numpy().astype(np.int64),
        predicate=_codes(facts["predicate"], PREDICATES),
        confidence=facts["confidence"].to_numpy().astype(np.float32),
        strength=facts["strength"].to_numpy().astype(np.float32),
        status=_codes(facts["status"], STATUSES),
        source=_codes(facts["source"], SOURCES),
        last_accessed=facts["last_accessed"].to_numpy().astype(np.int64),
        access_count=facts["access_count"].to_numpy().astype(np.int64),
        queries=np.array([d["anchors"] for d in q], dtype=np.int64).reshape(-1, 3),
        query_tenant=np.array([d["tenant"] for d in q], dtype=np.int64),
    )


# --------------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------------


def summary(g: Graph) -> dict[str, float]:
    n, m = g.n_entities, g.n_facts
    out_deg = np.bincount(g.subject, minlength=n)
    linked = g.object >= 0
    in_deg = np.bincount(g.object[linked], minlength=n)
    anchors = g.queries.ravel()
    return {
        "entities": n,
        "facts": m,
        "facts_per_entity": m / n,
        "literal_share": float(1.0 - linked.mean()),
        "no_facts_share": float((out_deg == 0).mean()),
        "out_degree_median": float(np.median(out_deg)),
        "out_degree_p99": float(np.percentile(out_deg, 99)),
        "out_degree_max": int(out_deg.max()),
        "in_degree_p99": float(np.percentile(in_deg, 99)),
        "in_degree_max": int(in_deg.max()),
        "self_loops": int(np.sum(g.subject[linked] == g.object[linked])),
        "cross_tenant": int(
            np.sum(g.entity_tenant[g.subject[linked]] != g.entity_tenant[g.object[linked]])
        ),
        "access_count_zero_share": float((g.access_count == 0).mean()),
        "status_shares": np.bincount(g.status, minlength=4).astype(float).round(0).tolist(),
        "queries": len(g.queries),
        "anchors_without_facts_share": float((out_deg[anchors] == 0).mean()),
    }


# What WORKLOADS.md says its generator gave (entities -> facts), for the printed comparison.
REFERENCE_FACTS = {10_000: 102_494, 100_000: 1_000_863, 1_000_000: 10_012_987}


def _print_summary(s: dict[str, float]) -> None:
    n = int(s["entities"])
    ref = REFERENCE_FACTS.get(n)
    shares = np.array(s["status_shares"]) / s["facts"]
    lines = [
        f"entities            {n:>12,}",
        f"facts               {int(s['facts']):>12,}"
        + (f"   (WORKLOADS.md: {ref:,}, {100 * (s['facts'] / ref - 1):+.2f}%)" if ref else ""),
        f"facts / entity      {s['facts_per_entity']:>12.3f}   (expected ~10.0)",
        f"literal share       {s['literal_share']:>12.4f}   (expected 0.20)",
        f"no own facts        {s['no_facts_share']:>12.4f}   (expected 0.166)",
        f"out-degree median   {s['out_degree_median']:>12.0f}   (expected 4)",
        f"out-degree p99      {s['out_degree_p99']:>12.0f}   (expected 95)",
        f"out-degree max      {s['out_degree_max']:>12,}   (expected 2000 = cap)",
        f"in-degree p99       {s['in_degree_p99']:>12.0f}   (expected 32)",
        f"in-degree max       {s['in_degree_max']:>12,}   (expected 422 at 100k, 3,314 at 1M)",
        f"access_count == 0   {s['access_count_zero_share']:>12.4f}   (expected 0.61)",
        "status shares       "
        + " ".join(f"{x:.3f}" for x in shares)
        + "   (expected .35/.35/.15/.15)",
        f"self-loops          {s['self_loops']:>12}",
        f"cross-tenant edges  {s['cross_tenant']:>12}",
        f"anchors w/o facts   {s['anchors_without_facts_share']:>12.3f}   (expected ~0.17)",
    ]
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=N_QUERIES)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--no-sqlite", action="store_true", help="skip graph.sqlite")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    g = generate(args.entities, args.seed, args.queries)
    gen_s = time.perf_counter() - t0
    times = write_all(g, args.out, args.seed, sqlite=not args.no_sqlite)
    s = summary(g)
    _print_summary(s)
    print(
        f"generate {gen_s:.2f} s, parquet {times['parquet_s']:.2f} s"
        + (f", sqlite {times['sqlite_s']:.2f} s" if "sqlite_s" in times else "")
        + f" -> {args.out}"
    )
    (args.out / "summary.json").write_text(json.dumps({**s, "seed": args.seed}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
