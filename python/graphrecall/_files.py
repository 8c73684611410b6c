"""Directory publishing shared by every on-disk format (snapshots, vector indexes, saved
indexes): each is written into a temporary sibling directory and then moved into place."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["replace_dir"]


def replace_dir(tmp: Path, target: Path) -> None:
    """Move the finished directory ``tmp`` to ``target``, replacing an earlier one.

    An existing ``target`` is renamed aside first and removed last, so a reader finds either
    the old directory or the new one complete, never neither; if the final rename fails the
    old directory is put back.

    Args:
        tmp: The completely written directory (a sibling of ``target``).
        target: Where it goes.

    Raises:
        OSError: A rename failed (``tmp`` is left for the caller to remove).
    """
    if not target.exists():
        tmp.rename(target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    target.rename(old)
    try:
        tmp.rename(target)
    except OSError:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)
