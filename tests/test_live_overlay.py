"""Live fact changes and added entities, chunks, mentions and aliases land in an overlay
over the graph's base (no rebuild), and every query answers exactly as a fresh build of
the same tables: any interleaving of adds, updates (of facts, entities, chunks), deletes
(of facts, entities, chunks, mentions, aliases), usage write-backs and compactions, for
every recipe."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import PROPERTY, examples
from graphrecall import GraphIndex, GraphRAG, LiveGraph
from graphrecall.demo import demo_data, demo_tables
from graphrecall.embed import CallableEmbedder
from graphrecall.errors import UnknownIdError
from graphrecall.live.dead import ChunkTombstones, EntityTombstones
from graphrecall.live.dead import live_tables as live_rows
from graphrecall.live.tombstones import Tombstones
from graphrecall.recipes import list_recipe_names
from graphrecall.storage.sqlite import SQLiteStore
from graphrecall.tables import BadDataError
from hypothesis import given, settings
from hypothesis import strategies as st

NOW = int(demo_data()["now"])
TENANTS = ("alice", "stark")
QUERIES = ("What is the JACQ project?", "Who fights beside Tony?")
CONFIDENCES = (0.5, 0.7, 0.9, 0.95)
DIM = 16


@contextmanager
def live_demo() -> Iterator[LiveGraph]:
    """The demo graph in a fresh SQLite store, loaded live."""
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore.create(Path(d) / "g.db")
        try:
            tables, _ = demo_tables(demo_data()).check()
            store.write(tables)
            yield store.load()
        finally:
            store.close()


def embed(texts: list[str]) -> Any:
    """A deterministic bag-of-characters embedding."""
    out = np.zeros((len(texts), DIM))
    for i, t in enumerate(texts):
        for j, ch in enumerate(t.encode()):
            out[i, (ch * 7 + j) % DIM] += 1.0 + (j % 3)
        out[i, len(t) % DIM] += 0.5
    return out


EMBEDDER = CallableEmbedder(embed, dim=DIM)


def answers(
    graph: Any, tables: Any, like: GraphIndex | None = None
) -> tuple[GraphIndex, list[Any]]:
    """Every recipe's results for every tenant and query (external ids and scores), on
    ``graph`` with the vectors of ``like`` (embedded now when None)."""
    if like is None or len(graph.core.dead_entities()) or len(graph.core.dead_chunks()):
        # With deleted entities or chunks an index is built over a new base without them.
        index = GraphIndex.build(tables, graph=graph, embedder=EMBEDDER, checked=True)
    else:
        index = GraphIndex(
            tables,
            graph,
            embedder=EMBEDDER,
            entity_matrix=like.entity_matrix,
            chunk_matrix=like.chunk_matrix,
        )
    rag = GraphRAG(index)
    out = []
    for name in list_recipe_names():
        for tenant, q in zip(TENANTS, QUERIES, strict=True):
            res = rag.retrieve(q, recipe=name, tenant=tenant, now=NOW, use_cache=False)
            d = res.to_dict()
            d.pop("timings", None)
            out.append((name, tenant, q, d))
    return index, out


def assert_fresh(live: LiveGraph) -> None:
    """The current graph answers as a fresh build of its tables without the rows of the
    facts and entities deleted since the last compaction, whose ids it does not know."""
    cur = live.current()
    dead, dead_e, dead_c = cur.dead_facts, cur.dead_entities, cur.dead_chunks
    clean = live_rows(cur.tables, cur.graph)
    fresh = clean.build_graph()
    assert cur.graph.n_facts - len(dead) == fresh.n_facts
    assert cur.graph.n_entities - len(dead_e) == fresh.n_entities
    assert cur.graph.n_chunks - len(dead_c) == fresh.n_chunks
    index, want = answers(fresh, clean)
    assert index.graph.n_facts == fresh.n_facts
    assert answers(cur.graph, cur.tables, index)[1] == want
    ents = clean.entities["id"].tolist()
    for e in ents:
        got, want = cur.graph.adjacency(e), fresh.adjacency(e)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
    fids = clean.facts["id"].tolist()
    assert cur.graph.facts(fids) == fresh.facts(fids)
    for f in cur.tables.facts["id"][dead].tolist():
        with pytest.raises(UnknownIdError):
            cur.graph.fact_index([f])
    for e in cur.tables.entities["id"][dead_e].tolist():
        with pytest.raises(UnknownIdError):
            cur.graph.entity_index([e])
    if cur.tables.chunks is not None:
        for c in cur.tables.chunks["id"][dead_c].tolist():
            with pytest.raises(UnknownIdError):
                cur.graph.chunk_index([c])
    # Tenant listings and mentions, by id: a deleted entity is in none.
    g, f = cur.graph, fresh
    assert list(g.tenants.names) == list(f.tenants.names)
    for t in range(f.n_tenants):
        listed = g.entity_ids[g.core.tenant_entities(t)].tolist()
        assert listed == f.entity_ids[f.core.tenant_entities(t)].tolist()
    for c in clean.chunks["id"].tolist() if clean.chunks is not None else []:
        mine = g.core.chunk_entities(int(g.chunk_index([c])[0]))
        theirs = f.core.chunk_entities(int(f.chunk_index([c])[0]))
        assert g.entity_ids[mine[0]].tolist() == f.entity_ids[theirs[0]].tolist()
        assert mine[1].tolist() == theirs[1].tolist()


def _same_tenant_pair(tables: Any, i: int, j: int) -> tuple[Any, Any]:
    ids = tables.entities["id"].tolist()
    tenants = tables.entities["tenant"].tolist()
    s = ids[i % len(ids)]
    t = tenants[i % len(ids)]
    mates = [x for x, tt in zip(ids, tenants, strict=True) if tt == t]
    return s, mates[j % len(mates)]


#: Far more facts than the core's DELTA_ROW_MIN (4): a row this long that a change
#: touches keeps its base runs and takes the change as delta runs instead of being
#: rewritten (the demo's own rows cross the threshold too).
LONG_ROW = 40


def hub_facts(tables: Any, a: int, b: int, c: int, n: int | None = None) -> list[dict[str, Any]]:
    """One batch of facts (``n``, or 2 to 6) into and out of one entity (a hub), from and
    to its tenant's other entities: the hub's rows take several facts at once, and the
    rows of its neighbours (holding facts that point at it) are rewritten too."""
    fids = tables.facts["id"].tolist()
    next_id = max(int(f) for f in fids) + 1
    hub, _ = _same_tenant_pair(tables, a, 0)
    preds = sorted({str(p) for p in tables.facts["predicate"].tolist()})
    out = []
    for k in range(2 + (a + b) % 5 if n is None else n):
        _, mate = _same_tenant_pair(tables, a, b + k)
        s, o = (hub, mate) if (k + c) % 2 else (mate, hub)
        out.append(
            {
                "id": next_id + k,
                "subject": s,
                "object": o,
                "predicate": preds[(b + k) % len(preds)],
                "confidence": CONFIDENCES[(c + k) % len(CONFIDENCES)],
            }
        )
    return out


step = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 99), st.integers(0, 99), st.integers(0, 3)),
    st.tuples(st.just("update"), st.integers(0, 999), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("access"), st.integers(0, 999), st.integers(1, 3), st.just(0)),
    st.tuples(st.just("compact"), st.just(0), st.just(0), st.just(0)),
    st.tuples(st.just("entity"), st.integers(0, 1), st.integers(0, 99), st.integers(0, 3)),
    st.tuples(st.just("delete_fact"), st.integers(0, 999), st.just(0), st.just(0)),
    st.tuples(st.just("delete_entity"), st.integers(0, 999), st.just(0), st.just(0)),
    st.tuples(st.just("chunk"), st.integers(0, 99), st.integers(0, 99), st.just(0)),
    st.tuples(st.just("mention"), st.integers(0, 999), st.integers(0, 999), st.just(0)),
    st.tuples(st.just("delete_chunk"), st.integers(0, 999), st.just(0), st.just(0)),
    st.tuples(st.just("hub"), st.integers(0, 99), st.integers(0, 99), st.integers(0, 3)),
    st.tuples(st.just("long_rows"), st.integers(0, 99), st.integers(0, 99), st.integers(0, 3)),
    st.tuples(st.just("rename"), st.integers(0, 999), st.integers(0, 99), st.integers(0, 3)),
    st.tuples(st.just("rechunk"), st.integers(0, 999), st.integers(0, 99), st.integers(0, 3)),
    st.tuples(st.just("unmention"), st.integers(0, 999), st.just(0), st.just(0)),
    st.tuples(st.just("unalias"), st.integers(0, 999), st.just(0), st.just(0)),
    st.tuples(st.just("move"), st.integers(0, 999), st.integers(0, 1), st.booleans()),
)
#: Steps that land as a generation over the current graph (never a rebuild).
GENERATIONS = (
    *("add", "update", "access", "entity", "chunk", "mention", "hub", "long_rows"),
    *("rename", "rechunk", "unmention", "unalias", "move"),
)
#: Names, types and descriptions the "rename" step gives (one shared with the demo's
#: words, so that name matching finds it).
NAMES = ("Tony", "Stark Industries", "A renamed one", "JACQ")
VOCABULARIES = ("predicates", "statuses", "sources", "tenants")


def _words(graph: Any) -> list[list[Any]]:
    return [list(getattr(graph, v).names) for v in VOCABULARIES]


def live_tables(live: LiveGraph) -> Any:
    """The current tables without the rows of deleted facts and entities (the tombstones
    stay in the graph: ``live.tables`` would compact them)."""
    cur = live.current()
    return live_rows(cur.tables, cur.graph)


def run_step(live: LiveGraph, op: tuple[str, int, int, Any], k: int) -> None:
    kind, a, b, c = op
    tables = live_tables(live)
    fids = tables.facts["id"].tolist()
    if kind == "add":
        s, o = _same_tenant_pair(tables, a, b)
        preds = sorted({str(p) for p in tables.facts["predicate"].tolist()})
        live.add_facts(
            [
                {
                    "id": max(int(f) for f in fids) + 1,
                    "subject": s,
                    "object": o,
                    "predicate": preds[(a + b) % len(preds)],
                    "confidence": CONFIDENCES[c],
                    "strength": 0.5 + c,
                }
            ]
        )
    elif kind == "hub":
        live.add_facts(hub_facts(tables, a, b, c))
    elif kind == "long_rows":  # a hub whose rows later changes splice into
        live.add_facts(hub_facts(tables, a % 4, b, c, n=2 * LONG_ROW))
    elif kind == "update":
        change: dict[str, Any] = {"id": fids[a % len(fids)], "confidence": CONFIDENCES[b]}
        if c:
            change["status"] = "staged"
        live.update_facts([change])
    elif kind == "access":
        live.record_access([fids[(a + i) % len(fids)] for i in range(b)], at=NOW - k)
    elif kind == "entity":  # a new entity of a held tenant, then facts may reach it
        eid = f"new{k}"
        live.add_entities([{"id": eid, "tenant": TENANTS[a], "name": f"New {k}"}])
        if c:
            tenant = TENANTS[a]
            ents = live_tables(live).entities
            ids = ents["id"].tolist()
            mates = [
                x
                for x, t in zip(ids, ents["tenant"].tolist(), strict=True)
                if t == tenant and x != eid
            ]
            live.add_facts(
                [
                    {
                        "id": max(int(f) for f in fids) + 1,
                        "subject": eid if c % 2 else mates[b % len(mates)],
                        "object": mates[b % len(mates)] if c % 2 else eid,
                        "predicate": "prefers",
                        "confidence": CONFIDENCES[c],
                    }
                ]
            )
    elif kind == "delete_fact":
        live.delete_facts([fids[a % len(fids)]])
    elif kind == "delete_entity":
        ids = tables.entities["id"].tolist()
        live.delete_entities([ids[a % len(ids)]])
    elif kind == "chunk":
        s, o = _same_tenant_pair(tables, a, b)
        tenant = tables.entities["tenant"].tolist()[tables.entities["id"].tolist().index(s)]
        cid = f"chunk{k}"
        live.add_chunks([{"id": cid, "tenant": tenant, "text": f"{s} and {o} met."}])
        live.add_mentions([{"chunk": cid, "entity": e, "count": 1 + a % 3} for e in {s, o}])
    elif kind == "mention":
        chunks = tables.chunks
        assert chunks is not None
        cids, ctenants = chunks["id"].tolist(), chunks["tenant"].tolist()
        cid, tenant = cids[a % len(cids)], ctenants[a % len(cids)]
        ids, tenants = tables.entities["id"].tolist(), tables.entities["tenant"].tolist()
        held = set()
        if tables.mentions is not None:
            held = {
                e
                for ch, e in zip(
                    tables.mentions["chunk"].tolist(),
                    tables.mentions["entity"].tolist(),
                    strict=True,
                )
                if ch == cid
            }
        free = [e for e, t in zip(ids, tenants, strict=True) if t == tenant and e not in held]
        if free:
            live.add_mentions([{"chunk": cid, "entity": free[b % len(free)], "count": 2}])
    elif kind == "rename":  # names, types and descriptions change; the core stays
        ids = tables.entities["id"].tolist()
        change = {"id": ids[a % len(ids)], "name": NAMES[c], "type": ("person", "place")[b % 2]}
        if b % 3 == 0:
            change["description"] = f"Described {k}."
        live.update_entities([change])
    elif kind == "rechunk":  # text and times change; the core stays
        chunks = tables.chunks
        assert chunks is not None
        cids = chunks["id"].tolist()
        live.update_chunks(
            [
                {
                    "id": cids[a % len(cids)],
                    "text": f"{NAMES[c]} met Tony {b}.",
                    "created_at": NOW - b,
                }
            ]
        )
    elif kind == "unmention":
        m = tables.mentions
        if m is not None and len(m["chunk"]):
            r = a % len(m["chunk"])
            live.delete_mentions([(m["chunk"][r], m["entity"][r])])
    elif kind == "unalias":
        al = tables.aliases
        if al is not None and len(al["entity"]):
            r = a % len(al["entity"])
            live.delete_aliases([{"entity": al["entity"][r], "alias": al["alias"][r]}])
    elif kind == "move":  # another tenant; refused where a fact or mention would cross
        table = "chunks" if c else "entities"
        cols = tables.table(table)
        assert cols is not None
        ids = cols["id"].tolist()
        if not c and a % 3 == 0:
            ids = [e for e in ids if str(e).startswith("new")] or ids  # lonely ones
        update = live.update_chunks if c else live.update_entities
        try:
            update([{"id": ids[a % len(ids)], "tenant": TENANTS[b]}])
        except BadDataError:
            pass
    elif kind == "delete_chunk":
        chunks = tables.chunks
        assert chunks is not None
        cids = chunks["id"].tolist()
        live.delete_chunks([cids[a % len(cids)]])
    else:
        live.compact()


@settings(PROPERTY, max_examples=examples(30))
@given(st.lists(step, min_size=1, max_size=6))
def test_any_interleaving_answers_as_a_fresh_build(ops: list[tuple[str, int, int, Any]]) -> None:
    with live_demo() as live:
        for k, op in enumerate(ops):
            cur = live.current()
            epoch, words, dead = live._epoch, _words(cur.graph), len(cur.dead_facts)
            dead_e, dead_c = len(cur.dead_entities), len(cur.dead_chunks)
            run_step(live, op, k)
            if op[0] in GENERATIONS and live._epoch != epoch:
                # Only a new id that a deleted row still holds (the next fact id, after
                # a deleted entity's facts) drops the tombstones first.
                now = live.current()
                assert dead + dead_e + dead_c and not len(now.dead_entities)
            if op[0] == "delete_fact":
                # A tombstone: no rebuild, no new base (no `without`) outside compaction.
                assert live._epoch == epoch and isinstance(live._log[-1], Tombstones)
                assert len(live.current().dead_facts) == dead + 1
            elif op[0] == "delete_entity" and live._epoch == epoch:
                # Tombstones: no rebuild, no new base (no `without`) outside compaction.
                assert isinstance(live._log[-1], EntityTombstones)
                assert len(live.current().dead_entities) == dead_e + 1
            elif op[0] == "delete_chunk" and live._epoch == epoch:
                assert isinstance(live._log[-1], ChunkTombstones)
                assert len(live.current().dead_chunks) == dead_c + 1
            elif op[0] == "delete_chunk":
                # A new base only for a chunk of a tenant without entities.
                t = cur.tables
                assert t.chunks is not None
                held = set(live_rows(t, cur.graph).entities["tenant"].tolist())
                assert not set(t.chunks["tenant"].tolist()) <= held
            elif op[0] == "delete_entity":
                # A new base only where a fresh build's vocabularies (tenants, statuses,
                # sources) lose a word with the deleted rows.
                assert words != _words(live_tables(live).build_graph())
            assert_fresh(live)
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)


def test_hub_rows_and_moved_facts_answer_as_a_fresh_build() -> None:
    """A hub gains facts in several batches while facts of its neighbours (pointing at it)
    change and move: every recipe answers as a fresh build after each batch."""
    with live_demo() as live:
        for i in range(4):
            live.add_facts(hub_facts(live.tables, 3, 7 * i, i))
            fids = live.tables.facts["id"].tolist()
            live.update_facts([{"id": fids[(5 * i + 1) % len(fids)], "confidence": 0.55}])
            live.add_facts(hub_facts(live.tables, 11 + i, 3 * i, i + 1))
            assert_fresh(live)
        assert live.overlay_len > 0
        live.compact()
        assert_fresh(live)


def test_long_rows_take_changes_as_delta_runs() -> None:
    """A hub with rows longer than the core's rewrite threshold, compacted into the base,
    then changed batch by batch (facts added into and out of it, its facts' confidences
    changed, facts deleted): every recipe answers as a fresh build after each step and
    after compaction (the core's tests check that such rows keep their base runs)."""
    with live_demo() as live:
        live.add_facts(hub_facts(live.tables, 3, 0, 0, n=2 * LONG_ROW))
        live.compact()
        hub, _ = _same_tenant_pair(live.tables, 3, 0)
        out_row, in_row = live.graph.adjacency(hub)[:2]
        assert min(len(out_row), len(in_row)) >= LONG_ROW
        for i in range(3):
            live.add_facts(hub_facts(live.tables, 3, 5 * i + 1, i))
            assert live.overlay_len > 0
            facts = live.tables.facts
            ids = facts["id"].tolist()
            touching = [
                f
                for f, s, o in zip(
                    ids, facts["subject"].tolist(), facts["object"].tolist(), strict=True
                )
                if hub in (s, o)
            ]
            live.update_facts(
                [
                    {"id": touching[(7 * i) % len(touching)], "confidence": 0.55},
                    {"id": touching[(7 * i + 3) % len(touching)], "confidence": 0.95},
                ]
            )
            assert_fresh(live)
            live.delete_facts([touching[(11 * i + 5) % len(touching)]])
            assert_fresh(live)
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)


def test_fact_changes_use_the_overlay_and_compaction_merges_it() -> None:
    with live_demo() as live:
        base_graph = live.graph
        assert live.overlay_len == 0
        live.add_facts(
            [
                {
                    "id": 1000,
                    "subject": "user",
                    "object": "jacq",
                    "predicate": "prefers",
                    "confidence": 0.8,
                }
            ]
        )
        assert live.overlay_len > 0  # no rebuild
        live.update_facts([{"id": 0, "confidence": 0.5}])
        live.record_access([0, 1, 1], at=NOW)
        assert_fresh(live)
        version = live.version
        live.compact()
        assert live.overlay_len == 0
        assert live.version == version  # the same state, merged
        assert_fresh(live)
        # The graph a reader kept is unchanged.
        assert base_graph.n_facts == 39 and base_graph.core.overlay_len == 0


def test_a_compaction_running_while_updates_land_keeps_them() -> None:
    with live_demo() as live:
        live.add_facts(
            [
                {
                    "id": 1000,
                    "subject": "user",
                    "object": "jacq",
                    "predicate": "prefers",
                    "confidence": 0.8,
                }
            ]
        )
        core = live.graph.core
        epoch, n_log = live._epoch, len(live._log)
        live.add_facts(
            [
                {
                    "id": 1001,
                    "subject": "jacq",
                    "object": "user",
                    "predicate": "prefers",
                    "confidence": 0.9,
                }
            ]
        )
        live.update_facts([{"id": 1000, "confidence": 0.1}])
        live._compact(core, epoch, n_log)
        assert live.compaction_error is None
        assert live.overlay_len > 0  # the two later changes, replayed on the new base
        assert_fresh(live)


def test_changes_only_a_rebuild_can_show_still_answer_exactly() -> None:
    with live_demo() as live:
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "new"}])
        assert live.overlay_len == 0  # a new predicate: rebuilt
        live.add_entities([{"id": "zed", "tenant": "alice", "name": "Zed"}])
        live.add_facts([{"id": 1001, "subject": "zed", "object": "user", "predicate": "prefers"}])
        assert_fresh(live)
        with pytest.raises(BadDataError):
            live.add_facts([{"id": 1002, "subject": "user", "confidence": 7.0}])
        assert_fresh(live)


def test_overlay_generations_do_not_copy_the_base() -> None:
    with live_demo() as live:
        before = live.graph.stats()["bytes"]
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        core = live.graph.core
        assert 0 < core.overlay_len < 39
        assert live.graph.stats()["bytes"] < 2 * before
        assert np.array_equal(core.compacted().entity_tenants(), core.entity_tenants())


def test_tables_a_reader_holds_do_not_change_as_facts_are_appended() -> None:
    with live_demo() as live:
        held = live.current()
        snapshot = {c: a.copy() for c, a in held.tables.facts.items()}
        for k in range(5):
            live.add_facts(
                [
                    {"id": 2000 + 2 * k + i, "subject": "user", "object": "jacq"}
                    | {"predicate": "prefers", "confidence": 0.1 * (k + 1)}
                    for i in range(2)
                ]
            )
            with pytest.raises(BadDataError):  # refused: nothing appended
                live.add_facts([{"id": 3000 + k, "subject": "nobody", "predicate": "prefers"}])
        for c, a in held.tables.facts.items():
            assert len(a) == len(snapshot[c])
            assert a.tolist() == snapshot[c].tolist()
        assert live.tables.n_rows("facts") == 39 + 10
        assert_fresh(live)


def test_a_failed_commit_leaves_rows_written_in_place_as_they_were(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphrecall.errors import CorruptStoreError
    from graphrecall.live import updates, usage

    with live_demo() as live:
        live.write_in_place = True
        facts = live.tables.facts
        before = {c: facts[c].copy() for c in ("confidence", "access_count", "last_accessed")}
        version, graph = live.version, live.graph

        def refuse(*_: Any, **__: Any) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(updates, "commit_fact_updates", refuse)
        with pytest.raises(OSError):
            live.update_facts([{"id": 0, "confidence": 0.25}, {"id": 3, "confidence": 0.5}])
        monkeypatch.undo()
        with pytest.raises(CorruptStoreError):  # the access batch fails at its SQL
            with monkeypatch.context() as m:
                m.setattr(usage, "access_changes", _failing(usage.access_changes))
                live.record_access([0, 1, 1], at=NOW)
        for c, a in before.items():
            assert live.tables.facts[c].tolist() == a.tolist()
        assert live.version == version and live.graph is graph
        assert_fresh(live)
        live.update_facts([{"id": 0, "confidence": 0.25}])  # and a later update lands
        live.record_access([0, 1, 1], at=NOW)
        assert live.tables.facts["confidence"][0] == np.float32(0.25)
        assert_fresh(live)


def _failing(inner: Any) -> Any:
    """``access_changes`` whose statements fail when run (after the in-place writes)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        tables, _sql, counts = inner(*args, **kwargs)
        return tables, [("UPDATE no_such_table SET x = ?", [(1,)])], counts

    return call


def test_id_map_extension_and_lookups_cost_the_new_ids() -> None:
    from graphrecall.tables.ids import IdMap

    ids = np.array([3, 5, 9], dtype=np.int64)
    m = IdMap(ids, 3, "fact")
    assert m.largest == 9
    assert m.holds_any(np.array([1, 5])) and not m.holds_any(np.array([4, 10]))
    more = np.array([3, 5, 9, 10, 12], dtype=np.int64)
    e = m.extended(more)
    assert e.largest == 12 and e.to_index(np.array([12, 3]), "facts", "id").tolist() == [4, 0]
    # Out of order: built anew, with its checks.
    back = m.extended(np.array([3, 5, 9, 4], dtype=np.int64))
    assert back.to_index(np.array([4]), "facts", "id").tolist() == [3]
    assert IdMap(None, 4, "fact").largest == 3
    s = IdMap(np.array(["a", "b"], dtype=object), 2, "fact")
    assert s.largest is None and s.holds_any(np.array(["b"], dtype=object))


def test_added_entities_are_a_generation_and_survive_a_running_compaction() -> None:
    with live_demo() as live:
        epoch = live._epoch
        live.add_facts([{"id": 1000, "subject": "user", "object": "jacq", "predicate": "prefers"}])
        core, n_log = live.graph.core, len(live._log)
        live.add_entities([{"id": "zed", "tenant": "alice", "name": "Zed"}])
        live.add_facts([{"id": 1001, "subject": "zed", "object": "user", "predicate": "prefers"}])
        assert live._epoch == epoch  # no rebuild
        assert live.graph.n_entities == 33
        live._compact(core, epoch, n_log)  # the entity and its fact, replayed on the new base
        assert live.compaction_error is None
        assert live.graph.n_entities == 33 and live.overlay_len > 0
        assert_fresh(live)
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)
        live.add_entities([{"id": "yan", "tenant": "stark"}, {"id": "xu", "tenant": "alice"}])
        assert live._epoch == epoch and live.overlay_len == 0  # appended to the base
        assert_fresh(live)
        live.add_entities([{"id": "wu", "tenant": "a new tenant"}])  # tenant codes change
        assert live._epoch == epoch + 1
        assert_fresh(live)


def test_added_chunks_mentions_and_aliases_are_generations() -> None:
    with live_demo() as live:
        epoch = live._epoch
        core, n_log = live.graph.core, len(live._log)
        live.add_facts([{"id": 1000, "subject": "ned", "object": "robert", "predicate": "knows"}])
        live.add_chunks([{"id": "c_new", "tenant": "stark", "text": "Ned rides to Winterfell."}])
        live.add_mentions(
            [
                {"chunk": "c_new", "entity": "ned", "count": 2},
                {"chunk": "c_new", "entity": "winterfell"},
                {"chunk": "c_ned_children", "entity": "robert"},
            ]
        )
        live.add_aliases([{"entity": "ned", "alias": "Lord Stark"}])
        assert live._epoch == epoch  # no rebuild
        assert live.graph.core.n_chunks == 31
        assert_fresh(live)
        with pytest.raises(BadDataError):  # held already
            live.add_mentions([{"chunk": "c_new", "entity": "ned"}])
        live._compact(core, epoch, n_log)  # all four changes, replayed on the new base
        assert live.compaction_error is None and live.overlay_len > 0
        assert_fresh(live)
        live.compact()
        assert live.overlay_len == 0
        assert_fresh(live)
        live.add_chunks([{"id": "c_other", "tenant": "a new tenant"}])  # tenant codes change
        assert live._epoch == epoch + 1
        assert_fresh(live)


def test_rows_checked_alone_refuse_what_the_full_check_refuses() -> None:
    with live_demo() as live:
        version = live.version
        bad = [
            ("entities", {"id": "user", "tenant": "alice"}),  # held already
            ("chunks", {"id": "c_jacq", "tenant": "alice"}),
            ("mentions", {"chunk": "c_ned_lord", "entity": "user"}),  # crosses tenants
            ("mentions", {"chunk": "c_ned_lord", "entity": "nobody"}),
            ("mentions", {"chunk": "c_ned_lord", "entity": "ned"}),  # held already
            ("entities", {"id": "e0", "tenant": 7}),  # not a str, as the other tenants
        ]
        for table, record in bad:
            with pytest.raises(BadDataError):
                getattr(live, f"add_{table}")([record])
        assert live.version == version
        live.add_entities([{"id": "e1", "tenant": "alice", "primary_chunk": "c_jacq"}])
        live.add_entities([{"id": "e2", "tenant": "alice"}, {"id": "e3", "tenant": "alice"}])
        report = live.add_entities(
            [{"id": "e4", "tenant": "alice"}, {"id": "e4", "tenant": "alice"}], on_bad="skip"
        )
        assert report.rows == {"entities": 1}
        assert_fresh(live)
