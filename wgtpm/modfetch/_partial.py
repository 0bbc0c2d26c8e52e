"""A partial download on disk, hashed as it is written, and the helpers that keep its
writes off the receiving thread: a queue bounded in bytes and a background syncer."""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
from pathlib import Path
from typing import BinaryIO

from .. import _interrupt
from .. import modfetch as _limits
from .._errors import VerifyError
from ..index import IndexEntry
from ._unit import VersionFile

__all__ = ["ByteQueue", "Partial", "Syncer"]


class Syncer:
    """Pushes a file's written bytes to disk on a background thread when kicked."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._q: queue.Queue[int | None] = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None

    def kick(self) -> None:
        if not hasattr(os, "fdatasync"):
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        with contextlib.suppress(queue.Full):
            self._q.put_nowait(self._fd)

    def _run(self) -> None:
        while (fd := self._q.get()) is not None:
            with contextlib.suppress(OSError):  # the final fsync reports errors
                os.fdatasync(fd)

    def stop(self) -> None:
        if self._thread is not None:
            self._q.put(None)
            self._thread.join()
            self._thread = None


class ByteQueue(queue.Queue[bytes | None]):
    """A queue of chunks bounded by the bytes it holds (``maxsize`` is in bytes), not by
    their number: a source read 1 MiB at a time must not pile up hundreds of MiB behind
    a slower disk. A put waits while ``maxsize`` bytes or more are held, so at most
    ``maxsize`` plus one chunk are. ``None`` (the end) counts as one byte."""

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.held = 0

    def _qsize(self) -> int:
        return self.held

    def _put(self, item: bytes | None) -> None:
        super()._put(item)
        self.held += len(item) if item else 1

    def _get(self) -> bytes | None:
        item = super()._get()
        self.held -= len(item) if item else 1
        return item


class Partial:
    """A partial download: the file, how much of it there is, and the hash of that much.

    A previous attempt's bytes (from this process or a killed one) are kept
    and hashed once, so the download resumes where it stopped. For a file over
    :data:`INLINE_MAX`, writing and hashing run on a second thread (hashlib and
    file writes release the GIL), so receiving the next bytes overlaps with
    hashing the last ones, and over :data:`SYNC_EVERY` a third one pushes the
    written bytes to disk as they come, so that the fsync in :meth:`close`
    (before the file may be renamed into place) has little left to wait for.
    Smaller files are written and hashed inline: no threads to start.
    """

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size
        self.h = hashlib.sha256()
        self.have = 0  # bytes accepted (written or queued)
        self._f: BinaryIO | None = None
        self._hashed = False
        self._q: ByteQueue | None = None
        self._worker: threading.Thread | None = None
        self._syncer: Syncer | None = None
        self._error: BaseException | None = None

    def load(self) -> None:
        """Hash what a previous attempt left (once), so that ``have`` is known."""
        if not self._hashed:
            self._hashed = True
            try:
                if self.path.stat().st_size > self.size:
                    self.path.unlink()
            except FileNotFoundError:
                pass
            if self.path.exists():
                with open(self.path, "rb") as f:
                    while chunk := f.read(_limits.CHUNK):
                        _interrupt.check()
                        self.h.update(chunk)
                        self.have += len(chunk)

    def open(self) -> None:
        self.load()
        self._f = open(self.path, "ab")
        self._start()

    def _drain(self) -> None:
        assert self._q is not None and self._f is not None
        unsynced = 0
        while (chunk := self._q.get()) is not None:
            if self._error is None:
                try:
                    self._f.write(chunk)
                    self.h.update(chunk)
                    unsynced += len(chunk)
                    if unsynced >= _limits.SYNC_EVERY and self._syncer is not None:
                        # Let the syncer push these bytes to disk while we go on, so the
                        # final fsync (before the rename) has little left to wait for.
                        self._f.flush()
                        self._syncer.kick()
                        unsynced = 0
                except BaseException as exc:  # reported by write() or close()
                    self._error = exc

    def _start(self) -> None:
        if self.size - self.have <= _limits.INLINE_MAX:
            return  # write() writes and hashes itself
        self._q = ByteQueue(_limits.QUEUE_BYTES)
        self._worker = threading.Thread(target=self._drain, daemon=True)
        self._worker.start()
        if self.size - self.have > _limits.SYNC_EVERY:
            assert self._f is not None
            self._syncer = Syncer(self._f.fileno())

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def write(self, chunk: bytes, vf: VersionFile) -> None:
        self._raise()
        if self.have + len(chunk) > self.size:
            self.discard()
            raise VerifyError(
                vf.path,
                vf.version,
                f"{vf.entry.path}: the source sends more than the {vf.entry.size} bytes "
                "the index lists",
            )
        if self._q is None:
            assert self._f is not None
            self._f.write(chunk)
            self.h.update(chunk)
        else:
            self._q.put(chunk)
        self.have += len(chunk)

    def adopt(self, h: hashlib._Hash, have: int) -> None:
        """Take the hash of the file's first ``have`` bytes, computed elsewhere (ranges)."""
        self.h, self.have, self._hashed = h, have, True

    def restart(self) -> None:
        self._stop()
        assert self._f is not None
        self._f.seek(0)
        self._f.truncate()
        self.h = hashlib.sha256()
        self.have = 0
        self._start()

    def _stop(self) -> None:
        if self._worker is not None and self._q is not None:
            self._q.put(None)
            self._worker.join()
            self._worker = None
        self._q = None
        if self._syncer is not None:
            self._syncer.stop()
            self._syncer = None

    def close(self) -> None:
        self._stop()
        if self._f is not None:
            try:
                self._f.flush()
                os.fsync(self._f.fileno())
            finally:
                self._f.close()
                self._f = None
        if self._error is not None:
            # what was queued but not written must not count as downloaded
            self.have = self.path.stat().st_size if self.path.exists() else 0
        self._raise()

    def matches(self, e: IndexEntry) -> bool:
        """Whether what was written is exactly the file the index lists."""
        return self.have == e.size and self.h.hexdigest() == e.sha256

    def discard(self) -> None:
        try:
            self.close()
        except OSError:
            pass
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.h = hashlib.sha256()
        self.have = 0
