"""The release wheel installs and runs where there is no Rust: a fresh virtual environment
(no system site-packages), the wheel and its dependencies installed offline from a wheelhouse,
``cargo`` / ``rustc`` off ``PATH``, then ``graphrecall demo``.

``.ci/wheel`` builds the wheel (``maturin build --release``), downloads its dependencies into
the wheelhouse, and runs this file with ``GRAPHRECALL_WHEEL`` (the .whl) and
``GRAPHRECALL_WHEELHOUSE`` (the folder) set. Without them this test is skipped: one release
build is too slow for every ``pytest`` run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


def _path(name: str) -> str | None:
    value = os.environ.get(name)
    return str(Path(value).resolve()) if value else None


WHEEL = _path("GRAPHRECALL_WHEEL")
WHEELHOUSE = _path("GRAPHRECALL_WHEELHOUSE")

pytestmark = pytest.mark.skipif(
    not (WHEEL and WHEELHOUSE),
    reason="set GRAPHRECALL_WHEEL and GRAPHRECALL_WHEELHOUSE (.ci/wheel does) to test the wheel",
)


def test_the_wheel_is_abi3_and_manylinux() -> None:
    assert WHEEL is not None
    name = Path(WHEEL).name
    assert "-cp310-abi3-" in name, name
    assert "manylinux" in name and "linux_x86_64" not in name.replace("manylinux", ""), name
    with zipfile.ZipFile(WHEEL) as z:
        names = z.namelist()
    assert "graphrecall/_core.abi3.so" in names
    assert "graphrecall/py.typed" in names and "graphrecall/_core.pyi" in names
    assert "graphrecall/data/demo_graph.json" in names
    assert "graphrecall/explain/html.py" in names


def test_the_wheel_runs_the_demo_without_rust(tmp_path: Path) -> None:
    assert WHEEL is not None and WHEELHOUSE is not None
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bindir = venv / "bin"
    path = os.pathsep.join([str(bindir), "/usr/local/bin", "/usr/bin", "/bin"])
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on the test's PATH"
    env = {"PATH": path, "HOME": str(tmp_path), "LANG": "C.UTF-8", "PIP_NO_INDEX": "1"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [str(bindir / "python"), "-m", "pip", "install", "-q", "--no-index"]
    subprocess.run(
        [*pip, "--find-links", WHEELHOUSE, WHEEL], check=True, env=env, cwd=tmp_path, timeout=600
    )
    where = subprocess.run(
        [str(bindir / "python"), "-c", "import graphrecall; print(graphrecall.__file__)"],
        check=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert where.startswith(str(venv)), where  # the wheel's copy, not a source tree
    done = subprocess.run(
        [str(bindir / "graphrecall"), "demo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "=== explain" in done.stdout and "JACQ Project" in done.stdout
