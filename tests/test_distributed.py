"""graphrecall.distributed on a real local Ray cluster: two nodes (Ray's own multi-node test
cluster), two shards, two replicas per shard.

One cluster and one deployment serve the whole module. The embedder is a hash of the text
(no model), pickled by value to the replicas.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.serve")

from graphrecall import GraphRAG  # noqa: E402
from graphrecall.demo import EXAMPLES, ROUTED, demo_data, demo_tables  # noqa: E402
from graphrecall.distributed import (  # noqa: E402
    DistributedRAG,
    ShardLayout,
    ShardUnavailableError,
    shard_of,
    split_tables,
    tenant_key,
    write_shards,
)
from graphrecall.errors import ParameterError, UnknownIdError, UnknownTenantError  # noqa: E402
from graphrecall.storage import SQLiteStore  # noqa: E402
from graphrecall.tables import GraphTables  # noqa: E402

pytestmark = [
    # Ray Data copies its own context, deprecated settings included, while it runs.
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context"),
    # The tiny graph's texts make fewer blocks than the pool has actors.
    pytest.mark.filterwarnings("ignore:The minimum number of concurrent actors:UserWarning"),
]

NOW = 1_767_225_600
DIM = 16
#: The demo's tenants, two renamed so that each of the two shards holds two of them.
RENAME = {"eliza": "eliza-1", "devteam": "devteam-1"}


class HashEmbedder:
    """Deterministic unit vectors from a hash of each text."""

    model_name = "hash-embedder"
    dim = DIM

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]).reshape(len(texts), DIM)


def _tables() -> GraphTables:
    tables = demo_tables(demo_data())
    for cols in (tables.entities, tables.chunks):
        assert cols is not None
        cols["tenant"] = np.array([RENAME.get(t, t) for t in cols["tenant"].tolist()], object)
    return tables


def _tenant(t: str) -> str:
    return RENAME.get(t, t)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ray import serve
    from ray.cluster_utils import Cluster

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    c.add_node(num_cpus=2)
    ray.init(address=c.address, log_to_driver=False)
    serve.start(proxy_location="Disabled")
    try:
        yield c
    finally:
        serve.shutdown()
        ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> ShardLayout:
    return write_shards(_tables(), tmp_path_factory.mktemp("shards"), 2, embedder=HashEmbedder())


@pytest.fixture(scope="module")
def single() -> GraphRAG:
    return GraphRAG.from_tables(_tables(), embedder=HashEmbedder())


@pytest.fixture(scope="module")
def rag(cluster: Any, layout: ShardLayout) -> DistributedRAG:
    # serve.shutdown() at the cluster's teardown removes the applications.
    return DistributedRAG.deploy(
        layout.directory, replicas=2, embedder=HashEmbedder(), num_cpus=0.25, timeout_s=20
    )


def _answer(r: Any) -> tuple[Any, ...]:
    """Everything of a result but its timings."""
    return (
        r.recipe,
        r.tenant,
        [(e.id, e.score) for e in r.anchors],
        [(e.id, e.score) for e in r.entities],
        [(f.id, f.score) for f in r.facts],
        [(c.id, c.score) for c in r.chunks],
        None if r.tiers is None else {k: [c.id for c in v] for k, v in r.tiers.items()},
        None if r.route is None else r.route.recipe,
    )


# ---------------------------------------------------------------------------- layout


def test_the_shard_of_a_tenant_is_stable_and_typed() -> None:
    # A fixed hash, the same in every process (Python's hash() of a str is salted).
    assert [shard_of(t, 2) for t in ("alice", "stark", "eliza-1", "devteam-1")] == [1, 1, 0, 0]
    assert tenant_key(7) != tenant_key("7")
    with pytest.raises(ParameterError):
        tenant_key(1.5)  # type: ignore[arg-type]


def test_split_tables_puts_every_row_on_its_tenants_shard() -> None:
    tables = _tables()
    parts = split_tables(tables, 2)
    assert sum(len(p.entities["id"]) for p in parts.values()) == len(tables.entities["id"])
    assert sum(len(p.facts["id"]) for p in parts.values()) == len(tables.facts["id"])
    for s, part in parts.items():
        assert {shard_of(t, 2) for t in part.entities["tenant"].tolist()} == {s}
        part.check()  # every shard is a valid graph on its own


def test_a_layout_names_its_tenants(layout: ShardLayout) -> None:
    assert layout.tenants == (("devteam-1", "eliza-1"), ("alice", "stark"))
    with pytest.raises(UnknownTenantError):
        layout.shard_of("nobody")
    with pytest.raises(ParameterError, match="holds 4 tenants"):
        layout.shard_of(None)


# ---------------------------------------------------------------------------- serving


def test_answers_equal_the_single_process_engine(rag: DistributedRAG, single: GraphRAG) -> None:
    asked = [(r, t, q, c) for r, t, q, c in EXAMPLES] + [(None, t, q, c) for t, q, c in ROUTED]
    for recipe, tenant, query, ctx in asked:
        t = _tenant(tenant)
        reply = rag.retrieve_reply([query], recipe=recipe, tenant=t, now=NOW, context=ctx)
        assert reply.shard == shard_of(t, 2)
        want = single.retrieve(query, recipe=recipe, tenant=t, now=NOW, context=ctx)
        assert _answer(reply.results[0]) == _answer(want), (recipe, tenant, query)
    # A batch for one tenant goes to one shard, as one request.
    qs = ["What is JACQ?", "Who uses JACQ?", "What does alice like?"]
    got = rag.retrieve_batch(qs, recipe="spreading_activation", tenant="alice", now=NOW)
    want_b = single.retrieve_batch(qs, recipe="spreading_activation", tenant="alice", now=NOW)
    assert [_answer(r) for r in got] == [_answer(r) for r in want_b]


def test_a_mixed_batch_scatters_and_gathers_in_order(rag: DistributedRAG, single: GraphRAG) -> None:
    items: list[tuple[str, Hashable | None]] = [
        ("What is JACQ?", "alice"),
        ("How do I usually feel about running?", "eliza-1"),
        ("Who are Ned Stark's allies?", "stark"),
        ("What happens if we change the OAuth provider?", "devteam-1"),
        ("anything", "nobody"),
    ]
    got = rag.retrieve_many(items, recipe="chunk_boost", now=NOW)
    for (q, t), r in zip(items[:-1], got[:-1], strict=True):
        assert not isinstance(r, Exception)
        assert _answer(r) == _answer(single.retrieve(q, recipe="chunk_boost", tenant=t, now=NOW))
    assert isinstance(got[-1], UnknownTenantError)


def test_errors_reach_the_caller_as_graphrecall_errors(rag: DistributedRAG) -> None:
    with pytest.raises(UnknownTenantError):
        rag.retrieve("What is JACQ?", tenant="nobody")
    with pytest.raises(ParameterError, match="name one"):
        rag.retrieve("What is JACQ?")
    with pytest.raises(ParameterError):
        rag.retrieve("What is JACQ?", tenant="alice", recipe="no_such_recipe")
    # Another tenant's entity reads as unknown: a write never crosses tenants.
    with pytest.raises(UnknownIdError):
        rag.add_facts([{"subject": "ned", "predicate": "p", "object_value": "x"}], tenant="alice")


def _replicas(app: str) -> list[Any]:
    from ray.util.state import list_actors

    names = [
        a.name
        for a in list_actors(filters=[("state", "=", "ALIVE")])
        if a.name and a.name.startswith(f"SERVE_REPLICA::{app}#")
    ]
    return [ray.get_actor(n, namespace="serve") for n in names]


def test_killing_a_replica_mid_load_loses_no_acknowledged_write(
    rag: DistributedRAG, layout: ShardLayout
) -> None:
    tenant = "alice"
    shard = layout.shard_of(tenant)
    acked: list[int] = []
    failed: list[str] = []
    wrong: list[str] = []
    stop = threading.Event()

    def write(fid: int) -> None:
        while not stop.is_set():
            fact = {"id": fid, "subject": "jacq", "predicate": "note", "object_value": f"n{fid}"}
            try:
                ack = rag.add_facts([fact], tenant=tenant)
            except Exception as exc:  # the killed replica's write in flight
                failed.append(type(exc).__name__)
            else:
                assert ack["shard"] == shard
                acked.append(fid)
            fid += 1

    def read() -> None:
        while not stop.is_set():
            for t in ("alice", "eliza-1"):
                try:
                    reply = rag.retrieve_reply(["What is JACQ?"], recipe="ppr", tenant=t, now=NOW)
                except Exception:
                    continue
                if reply.shard != shard_of(t, 2) or reply.results[0].tenant != t:
                    wrong.append(f"{t} answered by shard {reply.shard}")

    # Two writers, so that writes are in flight on both replicas when one is killed.
    threads = [threading.Thread(target=write, args=(50_000 + 10_000 * i,)) for i in range(2)]
    threads.append(threading.Thread(target=read))
    for th in threads:
        th.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        victims = _replicas(f"graphrecall-shard-{shard}")
        assert len(victims) == 2
        ray.kill(victims[0], no_restart=True)
        at_kill = len(acked)
        while len(acked) < at_kill + 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for th in threads:
            th.join(60)
    assert len(acked) >= at_kill + 5, f"no writes after the kill ({failed[-3:]})"
    assert not wrong
    with SQLiteStore.open(layout.store_path(shard)) as store:
        stored = set(store.read().facts["id"].tolist())
    assert set(acked) <= stored
    # Every acknowledged fact is in the index of whichever replica answers now.
    ack = rag.record_usage(tenant=tenant, facts=acked, at=NOW)
    assert ack["rows"]


def test_a_shard_that_is_down_fails_only_its_tenants(
    rag: DistributedRAG, layout: ShardLayout
) -> None:
    down = layout.shard_of("eliza-1")
    rag.stop_shard(down)
    try:
        for t in ("eliza-1", "devteam-1"):
            with pytest.raises(ShardUnavailableError, match=f"shard {down}") as err:
                rag.retrieve("What did I do yesterday?", tenant=t, recipe="chunk_boost")
            assert err.value.ctx == {"shard": down, "tenant": t}
        for t in ("alice", "stark"):
            assert rag.retrieve("What is JACQ?", tenant=t, recipe="ppr").tenant == t
        listing = rag.tenants()
        assert isinstance(listing[down], ShardUnavailableError)
        assert listing[1 - down] == ["alice", "stark"]
    finally:
        rag.start_shard(down)
    assert rag.retrieve("What did I do yesterday?", tenant="eliza-1").tenant == "eliza-1"


# ---------------------------------------------------------------------------- Ray Data


class RefusingEmbedder(HashEmbedder):
    """Fails on any text: a build that needs no embedding never calls it."""

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("nothing should be embedded")


def _vectors(path: Path) -> dict[tuple[str, Any], bytes]:
    with SQLiteStore.open(path) as store:
        sets = store.read().embeddings
    return {
        (e.kind, i): v.tobytes()
        for e in sets
        for i, v in zip(e.ids.tolist(), e.vectors, strict=True)
    }


def test_ray_data_builds_the_same_shards_and_resumes(
    cluster: Any, layout: ShardLayout, tmp_path: Path
) -> None:
    import json
    import shutil

    from graphrecall.distributed import build_indexes
    from graphrecall.distributed.data import DONE_FILE

    # Shard 1 finished by an earlier, killed run: only shard 0 is embedded and written.
    shutil.copytree(layout.shard_dir(1), tmp_path / "shard-001")
    (tmp_path / "shard-001" / DONE_FILE).write_text(
        json.dumps({"shard": 1, "tenants": ["alice", "stark"], "model": "hash-embedder"})
    )
    kept = (tmp_path / "shard-001" / "store.sqlite").stat().st_mtime_ns
    built = build_indexes(_tables(), tmp_path, 2, embedder=HashEmbedder(), actors=2, num_cpus=0.5)
    assert built.tenants == layout.tenants
    assert built.store_path(1).stat().st_mtime_ns == kept
    assert (built.shard_dir(0) / DONE_FILE).is_file()
    # The Ray Data vectors are the single-process build's, bit for bit, and so are answers.
    assert _vectors(built.store_path(0)) == _vectors(layout.store_path(0))
    q, t = "How do I usually feel about running?", "eliza-1"
    loaded = GraphRAG.load(built.index_dir(0), embedder=HashEmbedder())
    want = GraphRAG.load(layout.index_dir(0), embedder=HashEmbedder())
    assert _answer(loaded.retrieve(q, recipe="chunk_boost", tenant=t, now=NOW)) == _answer(
        want.retrieve(q, recipe="chunk_boost", tenant=t, now=NOW)
    )
    # A pool that would hold every CPU (Ray Data's reads could never run) is refused at once.
    with pytest.raises(ParameterError, match="leaving less than the one CPU"):
        build_indexes(_tables(), tmp_path / "full", 2, embedder=HashEmbedder(), actors=4)
    # Every shard finished: a re-run embeds nothing.
    again = build_indexes(_tables(), tmp_path, 2, embedder=RefusingEmbedder())
    assert again.tenants == layout.tenants
