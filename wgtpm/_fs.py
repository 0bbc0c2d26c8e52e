"""File-system helpers: the one place that writes atomically, swaps, locks and hashes.

Every writer of a file others may read at the same time goes through here:

- :func:`write_atomic` writes a unique temporary file in the target's
  directory, fsyncs it, and renames it over the target, so a reader sees the
  old bytes or the new, never half of them, also when the process is killed.
- :func:`replace_dir` swaps a fully written directory into place (a directory
  cannot be renamed over a non-empty one, so the old one is moved aside first
  and put back if the swap fails).
- :class:`FileLock` is a cross-process advisory lock on one file, shared or
  exclusive (``flock``; ``msvcrt`` on Windows, exclusive only).
- :func:`sha256_file` hashes a file in 1 MiB blocks; :func:`sha256_blob` hashes one of the
  cache's read-only blobs from a map of the page cache.
- :func:`canonical_json` is the one JSON byte form, in two shapes: ``compact``
  for bytes that are hashed into identifiers (sorted keys, no whitespace,
  UTF-8), and ``pretty`` for files people read (sorted keys, two-space
  indent, UTF-8, one final newline). Both refuse NaN and infinities.
- :func:`pwrite_all` writes all of a buffer at an offset (``pwrite`` may write less).
- :data:`HEX64` matches a lower-case hex sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, TypeGuard

__all__ = [
    "HEX64",
    "FileLock",
    "canonical_json",
    "is_hex64",
    "pwrite_all",
    "replace_dir",
    "sha256_blob",
    "sha256_file",
    "temp_dir",
    "write_atomic",
]

HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def is_hex64(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a string of 64 lower-case hex digits (a sha256)."""
    return isinstance(value, str) and HEX64.match(value) is not None


def pwrite_all(fd: int, data: memoryview, at: int) -> None:
    """Write all of ``data`` into file ``fd`` at offset ``at``."""
    while data:
        n = os.pwrite(fd, data, at)
        data, at = data[n:], at + n


def write_atomic(path: Path, data: bytes | Iterable[bytes], mode: int | None = None) -> None:
    """Write ``data`` (bytes, or chunks of them) to ``path`` through a unique temporary
    file renamed into place.

    The temporary file lives beside ``path`` (same file system), is fsynced
    before the rename, and is removed if anything fails. The new file keeps
    the old one's permission bits, or gets ``mode`` (default 0o644).
    """
    import tempfile  # not at the top: a no-op ``wgtpm get`` writes nothing

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, bytes | bytearray | memoryview):
                f.write(data)
            else:
                f.writelines(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            try:
                mode = path.stat().st_mode & 0o777
            except FileNotFoundError:
                mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def temp_dir(beside: Path) -> Iterator[Path]:
    """A unique empty directory next to ``beside``, removed on exit unless it was moved away."""
    import tempfile

    beside = Path(beside)
    beside.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{beside.name}.", suffix=".tmp", dir=beside.parent))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(new: Path, dest: Path) -> None:
    """Move the finished directory ``new`` to ``dest``, replacing what is there.

    ``new`` must be on the same file system (see :func:`temp_dir`). If the
    final rename fails, the old ``dest`` is put back.
    """
    new, dest = Path(new), Path(dest)
    if not (dest.exists() or dest.is_symlink()):
        os.replace(new, dest)
        return
    import uuid  # imports platform: kept off the start-up of every command

    old = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.old"
    os.replace(dest, old)
    try:
        os.replace(new, dest)
    except BaseException:
        os.replace(old, dest)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's content, read in 1 MiB blocks.

    The blocks are read into one buffer, unbuffered: no new 1 MiB object (and its
    page faults) per block, and no copy through a read buffer. hashlib lets other
    threads run while it hashes, so several files hash in parallel on threads.
    """
    h = hashlib.sha256()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


#: Bytes of a file mapped at once by :func:`sha256_blob`.
MAP_WINDOW = 64 << 20


def sha256_blob(path: Path) -> str:
    """The hex sha256 of a file of the module cache, hashed from a map of the page cache.

    No copy of each byte into a buffer: for a 1 GiB file read from the page cache that
    copy cost as much as a third of the hash (``wgtpm verify`` at 1.5x ``openssl dgst``).
    Only for files nobody changes in place: a map past a file's end faults the process
    (``SIGBUS``), and the cache's blobs are read-only, replaced whole by a rename, never
    truncated. The size is read once, and each window is no longer than what is left of it.
    """
    import mmap

    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        if size < MAP_WINDOW // 64:  # small: one read costs less than a map
            return hashlib.sha256(f.read()).hexdigest()
        h = hashlib.sha256()
        for pos in range(0, size, MAP_WINDOW):
            n = min(MAP_WINDOW, size - pos)
            m = mmap.mmap(f.fileno(), n, access=mmap.ACCESS_READ, offset=pos)
            with m, memoryview(m) as v:
                h.update(v)
        return h.hexdigest()


def canonical_json(value: Any, *, pretty: bool = False) -> bytes:
    """``value`` as canonical JSON bytes.

    >>> canonical_json({"b": 1, "a": "é"})
    b'{"a":"\\xc3\\xa9","b":1}'
    >>> canonical_json({"b": [1], "a": 2}, pretty=True).decode()
    '{\\n  "a": 2,\\n  "b": [\\n    1\\n  ]\\n}\\n'
    """
    if pretty:
        text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
        return (text + "\n").encode("utf-8")
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


class FileLock:
    """A cross-process advisory lock on ``path`` (created if missing).

    ``with FileLock(p):`` holds it exclusively; :meth:`acquire` also takes a
    shared lock or a non-blocking attempt. Where the platform has no locking
    call, the lock is a no-op (locks are advisory everywhere).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self, exclusive: bool = True, blocking: bool = True) -> bool:
        """Take the lock; ``False`` when ``blocking`` is off and another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if not _lock_fd(fd, exclusive, blocking):
                os.close(fd)
                return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        """Let go of the lock (closing the descriptor releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _lock_fd(fd: int, exclusive: bool, blocking: bool) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        try:
            import msvcrt
        except ImportError:
            return True
        if os.lseek(fd, 0, os.SEEK_END) == 0:
            os.write(fd, b"\0")
        os.lseek(fd, 0, os.SEEK_SET)
        mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK  # type: ignore[attr-defined]
        try:
            msvcrt.locking(fd, mode, 1)  # type: ignore[attr-defined]
        except OSError:
            if blocking:
                raise
            return False
        return True
    flags = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        fcntl.flock(fd, flags | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True
