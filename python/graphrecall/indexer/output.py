"""Writing the output of ``graphrecall index``: refusing an output in the way, and moving a
finished snapshot, SQLite store or saved index into place."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

from ..errors import GraphRecallError, StorageError
from ..tables import GraphTables, OnBad

TargetKind = Literal["snapshot", "sqlite", "index"]


def _output_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    total = 0
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.is_file():
            total += p.stat().st_size
    return total


def _is_snapshot(path: Path) -> bool:
    try:
        head = json.loads((path / "header.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    from ..storage.snapshot import MAGIC

    return isinstance(head, dict) and head.get("magic") == MAGIC


def _is_store(path: Path) -> bool:
    from ..storage.sqlite import SQLiteStore

    try:
        with SQLiteStore.open(path):
            return True
    except GraphRecallError:
        return False


def _check_output(out: Path, target: TargetKind, overwrite: bool, source: str) -> None:
    """Refuse an output that is the source, or that exists and may not be replaced."""
    try:
        if out.exists() and Path(source).exists() and out.resolve() == Path(source).resolve():
            raise StorageError(f"{str(out)!r}: the output is the source")
    except OSError:  # pragma: no cover - unresolvable paths: nothing to compare
        pass
    if not out.exists():
        if not out.parent.exists():
            raise StorageError(f"{str(out)!r}: the directory {str(out.parent)!r} does not exist")
        return
    if not overwrite:
        raise StorageError(f"{str(out)!r} exists; pass --overwrite to replace it")
    if target in ("snapshot", "index"):  # directories: empty or one of ours
        from ..index_io import is_saved_index

        ours, what = (
            (_is_snapshot, "graphrecall snapshot")
            if target == "snapshot"
            else (is_saved_index, "saved graphrecall index")
        )
        empty = out.is_dir() and not any(out.iterdir())
        if not (out.is_dir() and (empty or ours(out))):
            raise StorageError(
                f"{str(out)!r} is not a {what}; --overwrite replaces only "
                f"{'snapshots' if target == 'snapshot' else 'saved indexes'} "
                "(remove it yourself if it should go)"
            )
    elif not (out.is_file() and (out.stat().st_size == 0 or _is_store(out))):
        raise StorageError(
            f"{str(out)!r} is not a graphrecall SQLite store; --overwrite replaces only "
            "stores (remove it yourself if it should go)"
        )


def _replace(tmp: Path, out: Path) -> None:
    """Move the finished output into place (replacing what ``_check_output`` allowed)."""
    if out.is_dir():
        shutil.rmtree(out)
    elif out.exists():
        out.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)
    os.replace(tmp, out)


def _write_sqlite(tables: GraphTables, out: Path, on_bad: OnBad) -> None:
    from ..storage.sqlite import SQLiteStore

    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    try:
        with SQLiteStore.create(tmp) as store:
            store.write(tables, on_bad=on_bad)
        _replace(tmp, out)
    finally:
        for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            p.unlink(missing_ok=True)


def _write_snapshot(graph: Any, out: Path) -> None:
    from ..storage.snapshot import save_snapshot

    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        save_snapshot(graph, tmp)
        _replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
