"""The bundle format's crash safety: a save killed at any step leaves the last completed
save loadable, and the next save or load repairs or removes what the killed one left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graphrecall import KnowledgeGraph
from graphrecall.anchors.vectors import VectorIndex
from graphrecall.bundle import recover
from graphrecall.storage import load_snapshot, save_snapshot

STEPS = ["files-written", "header-written", "moved-aside", "renamed"]


def _graph(ids: list[int]) -> KnowledgeGraph:
    return KnowledgeGraph.from_arrays(
        fact_subject=ids[:2], fact_object=ids[1:], entity_ids=ids, fact_ids=[7, 9]
    )


def _killed(code: str, step: str) -> None:
    """Run ``code`` in a subprocess that kills itself at ``step`` of its save."""
    src = str(Path(__file__).resolve().parents[1] / "python")
    env = {**os.environ, "GRAPHRECALL_TEST_KILL_AT": step}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


@pytest.mark.skipif(os.name == "nt", reason="SIGKILL")
@pytest.mark.parametrize("step", STEPS)
def test_a_killed_snapshot_save_leaves_the_last_one_loadable(tmp_path: Path, step: str) -> None:
    path = tmp_path / "s"
    save_snapshot(_graph([10, 20, 30]), path)  # acknowledged
    _killed(
        "from graphrecall import KnowledgeGraph\n"
        "from graphrecall.storage import save_snapshot\n"
        "g = KnowledgeGraph.from_arrays(fact_subject=[40, 50], fact_object=[50, 60],\n"
        "    entity_ids=[40, 50, 60], fact_ids=[7, 9])\n"
        f"save_snapshot(g, {str(path)!r})",
        step,
    )
    ids = load_snapshot(path).entity_ids.tolist()
    # Until the new directory is in place, the earlier save is what loads.
    assert ids == ([40, 50, 60] if step == "renamed" else [10, 20, 30])
    save_snapshot(_graph([1, 2, 3]), path)
    assert load_snapshot(path).entity_ids.tolist() == [1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # nothing left over


@pytest.mark.skipif(os.name == "nt", reason="SIGKILL")
@pytest.mark.parametrize("step", STEPS)
def test_a_killed_vector_index_save_leaves_the_last_one_loadable(tmp_path: Path, step: str) -> None:
    path = tmp_path / "v"
    vectors = np.eye(4, dtype=np.float32)
    VectorIndex(vectors).save(path)
    _killed(
        "import numpy as np\n"
        "from graphrecall.anchors.vectors import VectorIndex\n"
        f"VectorIndex(np.eye(5, dtype=np.float32)).save({str(path)!r})",
        step,
    )
    assert len(VectorIndex.load(path)) == (5 if step == "renamed" else 4)
    recover(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v"]


def test_leftovers_of_a_live_process_are_kept(tmp_path: Path) -> None:
    """Another process's save in progress is never touched (its id is alive: ours)."""
    save_snapshot(_graph([10, 20, 30]), tmp_path / "s")
    mine = tmp_path / f".s.tmp-{os.getpid()}-abc"
    mine.mkdir()
    save_snapshot(_graph([10, 20, 30]), tmp_path / "s")
    assert mine.is_dir()
