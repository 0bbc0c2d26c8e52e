"""A large download's next bytes: into memory, hashed there, written past the page cache.

A ranged download (:class:`wgtpm.modfetch._ranges.Ranges`) hashes its file in order.
The bytes next in line for the hash (every byte before them has come) are read
into buffers of this module (:class:`Direct`): the hash is taken from the buffer
while writer threads write it with ``O_DIRECT``, from the buffer to the disk.
Two costs of the page cache go: a copy of every byte, and above all its fresh
pages. Filling memory the kernel has not handed out lately costs far more than
hashing it on a virtual machine whose host backs guest memory lazily: on this
project's CI machines a buffered write of 1 GiB took 3.2-5.8 s of system time,
92% of it in the copy into new page-cache pages, where ``openssl dgst`` hashes
the same bytes in 0.9 s. Bytes that come ahead of their turn (the other ranges,
on a slow line) still go through the page cache, and are hashed from a map of
it when their turn comes.

Where ``O_DIRECT`` is not to be had (tmpfs on older kernels, some network and FUSE
file systems) :func:`open_direct` gives ``None``; where a write is refused as
misaligned (a device with blocks larger than :data:`ALIGN`), the writer turns it
off; the bytes then go through the page cache as all others do.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ._fs import pwrite_all

__all__ = ["ALIGN", "BUF", "BUFFERS", "POOL", "Direct", "Piece", "open_direct"]

#: Offsets, lengths and buffer addresses of direct writes are multiples of this (the
#: page size; a device's logical block is at most this on all but a few).
ALIGN = 4096
#: Bytes a buffer holds (a direct write of 4 MiB keeps this disk busy where 1 MiB
#: writes cost 0.3 s more per GiB).
BUF = 4 << 20
#: Buffers of one file at most: one filling, one hashed, two written.
BUFFERS = 4
#: Buffers of the whole process (made as first needed, then kept): the bound on this
#: path's memory however many files are fetched at once. A file that finds none free
#: goes through the page cache: a fresh buffer's pages cost what fresh page-cache
#: pages do, so a buffer pays only as it is filled again and again.
POOL = 6
#: Threads writing one file's buffers: two writes in flight keep the disk busy.
WRITERS = 2
#: Seconds a range thread waits for a free buffer before its next bytes go through the
#: page cache instead: on loopback the hash frees one every few ms; a line capped per
#: connection loses what it could have brought while its reader waits.
TAKE_WAIT = 0.02


def open_direct(path: Path) -> int | None:
    """``path`` opened for direct writes, or ``None`` where its file system takes none."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_WRONLY | flag | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


class _Pool:
    """The process's buffers: at most ``size``, each :data:`BUF` bytes on a page boundary."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._free: list[mmap.mmap] = []
        self._made = 0
        self.size = size

    def get(self) -> mmap.mmap | None:
        """A free buffer, a new one while fewer than ``size`` are made, else ``None``."""
        with self._lock:
            if self._free:
                return self._free.pop()
            if self._made >= self.size:
                return None
            self._made += 1
        return mmap.mmap(-1, BUF)

    def put(self, buf: mmap.mmap) -> None:
        with self._lock:
            self._free.append(buf)


_POOL = _Pool(POOL)


class Piece:
    """A buffer with ``n`` bytes of range ``i`` of the file from offset ``at``. They start
    at ``lo = at % ALIGN`` in the buffer, so the buffer and the file line up on
    :data:`ALIGN` and the aligned middle can be written directly."""

    __slots__ = ("at", "buf", "hashed", "i", "lo", "n", "written")

    def __init__(self, buf: mmap.mmap, i: int, at: int) -> None:
        self.buf = buf
        self.i, self.at, self.lo, self.n = i, at, at % ALIGN, 0
        self.written = self.hashed = False

    def space(self, end: int) -> memoryview:
        """The room left for the bytes that follow, up to file offset ``end``; release it."""
        top = min(BUF, self.lo + end - self.at)
        return memoryview(self.buf)[self.lo + self.n : top]

    def full(self, end: int) -> bool:
        return self.lo + self.n >= min(BUF, self.lo + end - self.at)

    def data(self) -> memoryview:
        """The bytes held (release the view)."""
        return memoryview(self.buf)[self.lo : self.lo + self.n]


class Direct:
    """The buffers, direct writes and hand-over to the hasher of one file's next bytes.

    Everything here is guarded by this object's own lock. A range thread takes a
    buffer (:meth:`take`; it waits while all :data:`BUFFERS` are in use), fills it,
    and hands it over (:meth:`submit`): it is then ready for the hasher
    (:meth:`take_ready`) and queued for a writer, and ``wake()`` tells the hasher. A
    writer writes it (the unaligned head and tail through ``fd``, the rest with
    ``O_DIRECT``), then calls ``landed(i, at, n)``, or ``failed(exc)``, before it
    counts the buffer written (so that :meth:`drain` returns after the file's owner
    heard of it). The buffer is free again once it is both written and hashed
    (:meth:`hashed`). The three callbacks are called without this object's lock
    held: the file's owner may ask this object while it holds its own lock, never
    the other way round.
    """

    def __init__(
        self,
        dfd: int,
        fd: int,
        landed: Callable[[int, int, int], None],
        failed: Callable[[BaseException], None],
        wake: Callable[[], None],
    ) -> None:
        self._dfd = dfd
        self._fd = fd
        self._cond = threading.Condition(threading.Lock())
        self._landed = landed
        self._failed = failed
        self._wake = wake
        self._on = True  # direct writes work (off after a refusal, or turn_off())
        self._ready: dict[int, Piece] = {}  # file offset -> piece, not hashed yet
        self._held = 0  # buffers of this file taken and not yet free
        self._writing: dict[int, int] = {}  # range -> pieces queued or being written
        self._queue: queue.SimpleQueue[Piece | None] = queue.SimpleQueue()
        self._writers: list[threading.Thread] = []
        self._dead = False
        self._waited = 0.0  # seconds range threads have waited in take(), all told

    @property
    def on(self) -> bool:
        """Whether bytes go past the page cache (direct writes work, and are wanted)."""
        return self._on

    @property
    def waited(self) -> float:
        """Seconds range threads have waited in :meth:`take` for a buffer, all told."""
        with self._cond:
            return self._waited

    def turn_off(self) -> None:
        """Write every byte from now on through the page cache (:meth:`take` still
        hands out buffers; their bytes are written through ``fd``)."""
        self._on = False

    # ---- range threads ---------------------------------------------------

    def take(self, i: int, at: int, stop: threading.Event) -> Piece | None:
        """A buffer for the bytes of range ``i`` from ``at``; ``None`` if this file's
        :data:`BUFFERS` stay in use for :data:`TAKE_WAIT` seconds (its hash lags), if
        the process has none free (other files hold them), or once ``stop`` is set."""
        with self._cond:
            if self._held >= BUFFERS:
                t0 = time.monotonic()
                while self._held >= BUFFERS:
                    left = t0 + TAKE_WAIT - time.monotonic()
                    if stop.is_set() or self._dead or left <= 0:
                        self._waited += time.monotonic() - t0
                        return None
                    self._cond.wait(left)
                self._waited += time.monotonic() - t0
            buf = _POOL.get()
            if buf is None:
                return None
            self._held += 1
        return Piece(buf, i, at)

    def _free(self, p: Piece) -> None:
        """``p``'s buffer back to the process (``cond`` held)."""
        _POOL.put(p.buf)
        self._held -= 1
        self._cond.notify_all()

    def submit(self, p: Piece) -> None:
        """Hand over a filled buffer: to the hasher and to a writer (an empty one is freed)."""
        with self._cond:
            if not p.n:
                self._free(p)
                return
            self._ready[p.at] = p
            self._writing[p.i] = self._writing.get(p.i, 0) + 1
            if len(self._writers) < WRITERS:
                t = threading.Thread(target=self._write_all, daemon=True)
                self._writers.append(t)
                t.start()
            self._cond.notify_all()
        self._queue.put(p)
        self._wake()

    def drain(self, i: int) -> None:
        """Wait until every buffer of range ``i`` handed over is written (or failed)."""
        with self._cond:
            while self._writing.get(i, 0):
                self._cond.wait(0.1)

    # ---- the hasher --------------------------------------------------------

    def take_ready(self, at: int) -> Piece | None:
        """The piece of bytes from file offset ``at``, if one is ready; the hasher's from
        now (hand it back with :meth:`hashed`)."""
        with self._cond:
            return self._ready.pop(at, None)

    def next_ready(self, after: int) -> int | None:
        """The offset of the first piece ready past ``after``, if any."""
        with self._cond:
            return min((k for k in self._ready if k > after), default=None)

    def hashed(self, p: Piece) -> None:
        """The hasher is done with ``p`` (taken out of ``ready``)."""
        with self._cond:
            p.hashed = True
            if p.written:
                self._free(p)

    # ---- writers -------------------------------------------------------------

    def _write_all(self) -> None:
        while (p := self._queue.get()) is not None:
            try:
                self._write(p)
                self._landed(p.i, p.at, p.n)
            except BaseException as exc:  # handed to the hasher
                with self._cond:
                    self._dead = True
                self._failed(exc)
            with self._cond:
                p.written = True
                self._writing[p.i] -= 1
                if p.hashed:
                    self._free(p)
                self._cond.notify_all()

    def _write(self, p: Piece) -> None:
        at, lo, n = p.at, p.lo, p.n
        head = min(at + n, -(-at // ALIGN) * ALIGN)  # the head ends here ...
        tail = max(head, (at + n) // ALIGN * ALIGN)  # ... and the tail starts here
        with memoryview(p.buf) as v:
            if head > at:
                pwrite_all(self._fd, v[lo : lo + head - at], at)
            if tail > head:
                middle = v[lo + head - at : lo + tail - at]
                if self._on:
                    try:
                        pwrite_all(self._dfd, middle, head)
                    except OSError as exc:
                        if exc.errno != errno.EINVAL:
                            raise
                        self._on = False  # misaligned for this device: the page cache then
                        pwrite_all(self._fd, middle, head)
                else:
                    pwrite_all(self._fd, middle, head)
                middle.release()
            if at + n > tail:
                pwrite_all(self._fd, v[lo + tail - at : lo + n], tail)

    def close(self) -> None:
        """Let the writers write what was handed over, stop them; the buffers not hashed
        go back to the process (a buffer a range thread still fills, after an interrupt,
        is left to it)."""
        for _ in self._writers:
            self._queue.put(None)
        for t in self._writers:
            t.join()
        self._writers.clear()
        with self._cond:
            for p in self._ready.values():
                if p.written:
                    self._free(p)
            self._ready.clear()
        with contextlib.suppress(OSError):
            os.close(self._dfd)
