"""Session fixtures for the W1 / W4 benchmarks: a 10k-entity workload (WORKLOADS.md generator,
seed 0) written once into a temporary directory, the oracle's answers, and built peers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"
if str(BENCHES) not in sys.path:
    sys.path.insert(0, str(BENCHES))

import peers as P  # noqa: E402
import workload as W  # noqa: E402

N_ENTITIES = 10_000
SEED = 0


@pytest.fixture(scope="session")
def workload_params() -> tuple[int, int]:
    """(entities, seed) of the session's workload."""
    return N_ENTITIES, SEED


@pytest.fixture(scope="session")
def workload_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("workload_10k")
    W.write_all(W.generate(N_ENTITIES, SEED), out, SEED)
    return out


@pytest.fixture(scope="session")
def graph(workload_dir: Path) -> W.Graph:
    """The columns every peer builds from, read back from the Parquet files."""
    return W.load(workload_dir)


@pytest.fixture(scope="session")
def queries(graph: W.Graph) -> np.ndarray:
    return graph.queries


@pytest.fixture(scope="session")
def oracle(graph: W.Graph) -> P.Reference:
    ref = P.Reference()
    ref.build(graph)
    return ref


@pytest.fixture(scope="session")
def expected(oracle: P.Reference, queries: np.ndarray) -> dict[str, list[list[int]]]:
    """The oracle's ids for every query: ``{"W1": [...], "W4": [...]}``."""
    qs = [tuple(q) for q in queries.tolist()]
    return {"W1": [oracle.w1(q) for q in qs], "W4": [oracle.w4(q) for q in qs]}


@pytest.fixture(scope="session")
def make_peer(workload_dir: Path, graph: W.Graph) -> Callable[[str], P.Peer]:
    """``make_peer(name)`` builds a peer once per session, or skips if its package is missing."""
    cache: dict[str, P.Peer] = {}

    def get(name: str) -> P.Peer:
        if name not in cache:
            pkg = P.PEERS[name].package
            if pkg is not None:
                mod = pytest.importorskip(pkg)
                if pkg == "graphrecall" and not hasattr(mod, "KnowledgeGraph"):
                    pytest.skip("graphrecall.KnowledgeGraph is not available")
            peer = P.make_peer(name, workload_dir)
            peer.build(graph)
            cache[name] = peer
        return cache[name]

    yield get
    for peer in cache.values():
        peer.close()
