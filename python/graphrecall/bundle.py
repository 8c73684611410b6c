"""The checksummed directory format shared by snapshots, saved indexes and vector indexes.

A bundle is a directory with a ``header.json`` and payload files::

    header.json    {"magic": <kind>, "format_version": <int>, "graphrecall_version": ...,
                    "files": {<relative path>: {"size": <bytes>, "crc32": <int>, ...}},
                    ...the kind's own fields}
    <payload>      any files, in sub-directories too; arrays are ``.npy`` files and their
                   entries also record ``dtype`` and ``shape``

The magic names the kind (``graphrecall-snapshot``, ``graphrecall-index``,
``graphrecall-vectors``), so one kind is never read as another. A bundle is written into a
temporary sibling directory, its files and header flushed to disk (``fsync``), then moved
into place by rename (:func:`replace_dir`): a reader finds the old bundle or the new one
complete, never half of one; a failed save leaves nothing behind, and what a killed one
leaves is repaired or removed by the next load or save (:func:`recover`). Reading checks
the magic and the version, every file's size (always: a truncated file is refused before
it is parsed) and its CRC-32 (when asked); arrays can be memory-mapped. Every failure is a
:class:`~graphrecall.errors.StorageError` subclass naming the path.
"""

from __future__ import annotations

import glob
import json
import mmap
import os
import shutil
import tempfile
import zlib
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import CorruptStoreError, NotAStoreError, SchemaVersionError

_xxhash: Any
try:  # optional (the "scale" extra): a 64-bit checksum ~6x faster to verify than CRC-32
    import xxhash as _xxhash
except ImportError:  # pragma: no cover - exercised where xxhash is not installed
    _xxhash = None

__all__ = [
    "HEADER",
    "BundleWriter",
    "crc32",
    "crc32_file",
    "file_path",
    "has_xxh3",
    "open_array",
    "read_bytes",
    "read_header",
    "recover",
    "replace_dir",
    "xxh3_file",
]

#: The header's file name in every bundle.
HEADER = "header.json"


def crc32(data: bytes | memoryview | npt.NDArray[Any]) -> int:
    """CRC-32 of bytes or of an array's bytes: one call, which releases the GIL."""
    if isinstance(data, np.ndarray):
        data = memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8).data)
    return zlib.crc32(data)


def crc32_file(path: Path) -> int:
    """CRC-32 of a file's bytes, read through a memory map (one call without the GIL)."""
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return 0
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return zlib.crc32(view)


def has_xxh3() -> bool:
    """Whether XXH3-64 checksums can be written and verified here (``xxhash`` installed)."""
    return _xxhash is not None


def xxh3_file(path: Path) -> int:
    """XXH3-64 of a file's bytes, read through a memory map (needs :func:`has_xxh3`)."""
    if _xxhash is None:
        raise RuntimeError("xxhash is not installed (pip install 'graphrecall[scale]')")
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return int(_xxhash.xxh3_64_intdigest(b""))
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return int(_xxhash.xxh3_64_intdigest(view))


#: Test hook: the name of a step of :func:`replace_dir` / :meth:`BundleWriter.publish` at
#: which the process kills itself (crash-safety tests only).
_KILL_AT = "GRAPHRECALL_TEST_KILL_AT"


def _step(name: str) -> None:
    if os.environ.get(_KILL_AT) == name:  # pragma: no cover - runs in a killed subprocess
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _fsync(path: Path) -> None:
    """Flush a file's or a directory's contents to disk (directories: where the platform
    allows opening them)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if path.is_dir():
            return  # a platform that cannot open directories (Windows)
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not path.is_dir():
            raise
    finally:
        os.close(fd)


def _old_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.old-{os.getpid()}")


def _leftovers(target: Path) -> list[tuple[Path, int]]:
    """Directories that saves to ``target`` leave beside it while they run, with the id of
    the process that made each: ``.<name>.tmp-<pid>-*`` and ``.<name>.old-<pid>``."""
    out = []
    for kind in ("tmp", "old"):
        for path in target.parent.glob(f".{glob.escape(target.name)}.{kind}-*"):
            pid = path.name[len(target.name) + len(kind) + 3 :].split("-")[0]
            if pid.isdigit():
                out.append((path, int(pid)))
    return out


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":
        return True  # (Windows: os.kill would end the process; leftovers are kept)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def recover(target: Path) -> None:
    """Repair what a save killed while replacing ``target`` left behind: with ``target``
    missing, the earlier bundle a save had moved aside goes back; then the temporary and
    moved-aside directories of saves whose process is gone are removed. Readers call it
    when ``target`` is missing, saves before they start.

    Raises:
        OSError: A rename failed.
    """
    parent = target.parent
    if not parent.is_dir():
        return
    dead = [(p, pid) for p, pid in _leftovers(target) if not _alive(pid)]
    if not target.exists():
        olds = [p for p, _ in dead if ".old-" in p.name and (p / HEADER).is_file()]
        if olds:
            newest = max(olds, key=lambda p: (p / HEADER).stat().st_mtime)
            newest.rename(target)
            _fsync(parent)
            dead = [(p, pid) for p, pid in dead if p != newest]
    for path, _ in dead:
        shutil.rmtree(path, ignore_errors=True)


def replace_dir(tmp: Path, target: Path) -> None:
    """Move the finished directory ``tmp`` to ``target``, replacing an earlier one.

    An existing ``target`` is renamed aside first and removed last; a reader finds the old
    directory or the new one complete. A process killed between the two renames leaves the
    old one aside, and :func:`recover` (run by the next load or save) puts it back. The
    renames are flushed to disk (``fsync`` of the parent directory) before this returns.

    Args:
        tmp: The completely written directory (a sibling of ``target``).
        target: Where it goes.

    Raises:
        OSError: A rename failed (``tmp`` is left for the caller to remove).
    """
    parent = target.parent
    if not target.exists():
        tmp.rename(target)
        _step("renamed")
        _fsync(parent)
        return
    old = _old_name(target)
    target.rename(old)
    _step("moved-aside")
    try:
        tmp.rename(target)
    except OSError:
        old.rename(target)
        raise
    _step("renamed")
    _fsync(parent)
    shutil.rmtree(old, ignore_errors=True)


class BundleWriter:
    """Writes one bundle: files go into a temporary sibling of ``target``; :meth:`publish`
    writes the header and moves the directory into place. Used as a context manager, an
    exception removes the temporary directory.

    Args:
        target: The bundle's directory (its parent is created).
        magic: The kind of bundle.
        version: Its format version.
        xxh3: Also record each file's XXH3-64 (when xxhash is installed), which readers
            that know it verify instead of the CRC-32: large bundles load faster.
    """

    def __init__(
        self, target: str | os.PathLike[str], *, magic: str, version: int, xxh3: bool = False
    ):
        self.xxh3 = xxh3 and has_xxh3()
        self.target = Path(target)
        self.magic = magic
        self.version = version
        self.files: dict[str, dict[str, Any]] = {}
        self.target.parent.mkdir(parents=True, exist_ok=True)
        recover(self.target)
        self.root = Path(
            tempfile.mkdtemp(
                prefix=f".{self.target.name}.tmp-{os.getpid()}-", dir=self.target.parent
            )
        )

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary directory (nothing is published)."""
        shutil.rmtree(self.root, ignore_errors=True)

    def path(self, rel: str) -> Path:
        """Where payload ``rel`` is written (its directory is created)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def add_file(self, rel: str, **extra: Any) -> None:
        """List a payload file already written at :meth:`path` (its size and CRC-32)."""
        path = self.root / rel
        self.files[rel] = {"size": path.stat().st_size, "crc32": crc32_file(path), **extra}
        if self.xxh3:
            self.files[rel]["xxh3"] = xxh3_file(path)

    def add_bytes(self, rel: str, data: bytes, **extra: Any) -> None:
        """Write and list a payload file."""
        self.path(rel).write_bytes(data)
        self.files[rel] = {"size": len(data), "crc32": crc32(data), **extra}

    def add_array(self, rel: str, arr: npt.NDArray[Any], **extra: Any) -> None:
        """Write an array as ``.npy`` and list it with its dtype and shape."""
        arr = np.ascontiguousarray(arr)
        np.save(self.path(rel), arr, allow_pickle=False)
        self.add_file(rel, dtype=arr.dtype.str, shape=list(arr.shape), **extra)

    def publish(self, fields: dict[str, Any]) -> Path:
        """Write the header (``fields`` plus magic, version and the file table) and move the
        bundle into place, replacing an earlier one.

        Returns:
            The bundle's directory.

        Raises:
            OSError: Writing or renaming failed.
        """
        from . import _core

        header = {
            "magic": self.magic,
            "format_version": self.version,
            "graphrecall_version": _core.__version__,
            **fields,
            "files": self.files,
        }
        for rel in self.files:
            _fsync(self.root / rel)
        _step("files-written")
        (self.root / HEADER).write_text(json.dumps(header, indent=1), encoding="utf-8")
        _fsync(self.root / HEADER)
        for path in sorted(self.root.rglob("*"), reverse=True):
            if path.is_dir():
                _fsync(path)  # nested bundles (vector indexes) flushed their own files
        _fsync(self.root)
        _step("header-written")
        replace_dir(self.root, self.target)
        return self.target


def read_header(
    root: Path, *, magic: str, versions: tuple[int, ...], what: str, name: str = HEADER
) -> dict[str, Any]:
    """A bundle's header, after checking its magic and version.

    Args:
        root: The bundle's directory.
        magic: The kind expected.
        versions: The format versions the caller reads.
        what: The kind in words, for messages ("snapshot", "vector index").
        name: The header's file name (an older layout's).

    Raises:
        NotAStoreError: No directory, no header, or another magic.
        CorruptStoreError: The header is not a JSON object.
        SchemaVersionError: A version not in ``versions``.
    """
    if not root.exists():
        try:
            recover(root)
        except OSError:
            pass  # a read-only place: reported as missing below
    if not root.is_dir():
        raise NotAStoreError(f"{root}: not a graphrecall {what} (no such directory)")
    path = root / name
    if not path.is_file():
        raise NotAStoreError(f"{root}: not a graphrecall {what} (no {name})")
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptStoreError(f"{path}: unreadable {what} header ({exc})") from None
    if not isinstance(header, dict) or header.get("magic") != magic:
        raise NotAStoreError(f"{root}: not a graphrecall {what} (header has no {magic!r} magic)")
    version = header.get("format_version")
    if version not in versions:
        raise SchemaVersionError(
            f"{root}: {what} format version {version!r}; "
            f"this graphrecall reads versions {', '.join(map(str, versions))}"
        )
    return header


def _entry(root: Path, rel: object, files: object, what: str) -> tuple[Path, dict[str, Any]]:
    meta = files.get(rel) if isinstance(files, dict) and isinstance(rel, str) else None
    if not isinstance(meta, dict):
        raise CorruptStoreError(f"{root}: the header lists no size and checksum for {rel!r}")
    path = root / str(rel)
    if not path.resolve().is_relative_to(root.resolve()):
        raise CorruptStoreError(f"{root}: {rel!r} points outside the {what}")
    return path, meta


def _check_size(path: Path, meta: dict[str, Any], size: int) -> None:
    want = meta.get("size")
    if want is not None and size != want:
        raise CorruptStoreError(
            f"{path}: {size} bytes, the header says {want} (truncated or replaced)"
        )


def _check_crc(path: Path, meta: dict[str, Any], crc: int) -> None:
    if crc != meta.get("crc32"):
        raise CorruptStoreError(f"{path}: checksum mismatch (fails its CRC-32: corrupted)")


def file_path(root: Path, rel: object, files: object, *, verify: bool, what: str) -> Path:
    """The path of listed payload ``rel`` after checking it exists with its size, and its
    CRC-32 when ``verify``.

    Raises:
        CorruptStoreError: Unlisted, outside the bundle, missing, another size or checksum.
    """
    path, meta = _entry(root, rel, files, what)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CorruptStoreError(f"{path}: missing from the {what}") from None
    except OSError as exc:
        raise CorruptStoreError(f"{path}: unreadable ({exc})") from None
    _check_size(path, meta, size)
    if verify:
        _check_crc(path, meta, crc32_file(path))
    return path


def read_bytes(root: Path, rel: object, files: object, *, verify: bool, what: str) -> bytes:
    """The bytes of listed payload ``rel``, checked as :func:`file_path` checks."""
    path, meta = _entry(root, rel, files, what)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CorruptStoreError(f"{path}: missing from the {what}") from None
    except OSError as exc:
        raise CorruptStoreError(f"{path}: unreadable ({exc})") from None
    _check_size(path, meta, len(data))
    if verify:
        _check_crc(path, meta, crc32(data))
    return data


def open_array(path: Path, meta: dict[str, Any], *, mmap_mode: bool) -> npt.NDArray[Any]:
    """The ``.npy`` file at ``path`` (memory-mapped when ``mmap_mode``), refused unless it
    has the dtype and shape its header entry records (when it records them).

    Raises:
        CorruptStoreError: Not a numpy array, or another dtype or shape.
    """
    try:
        arr = np.load(path, mmap_mode="r" if mmap_mode else None, allow_pickle=False)
    except FileNotFoundError:
        raise CorruptStoreError(f"{path}: missing") from None
    except Exception as exc:  # a garbled .npy header fails in numpy's parser any which way
        raise CorruptStoreError(f"{path}: truncated or not a numpy array ({exc!r})") from None
    if not isinstance(arr, np.ndarray):
        raise CorruptStoreError(f"{path}: truncated or not a numpy array")
    dtype, shape = meta.get("dtype"), meta.get("shape")
    if (dtype is not None and arr.dtype.str != dtype) or (
        shape is not None and list(arr.shape) != shape
    ):
        raise CorruptStoreError(
            f"{path}: holds {arr.dtype.str}{list(arr.shape)}, the header says {dtype}{shape}"
        )
    out: npt.NDArray[Any] = arr
    return out
