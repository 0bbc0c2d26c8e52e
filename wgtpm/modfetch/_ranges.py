"""A file filled in place as parallel ranges, and hashed in order as they fill it.

On disk: ``<sha256>.partial`` holds every byte at its offset (holes where
nothing has come yet) and ``<sha256>.partial.<start>`` holds, as 20 digits,
how many bytes of the range starting at ``start`` are in the file (its journal).
A journal is written after the bytes it counts, so after a crash it may count
too few (those bytes come again), never too many. The grid of a download that
resumes is the one its journals name, whatever the grid would be now.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _direct, _interrupt
from .. import modfetch as _limits
from ..cache import _disk_error
from ._partial import Syncer
from ._transfer import NoRanges

if TYPE_CHECKING:
    from .._httptransport import BodyReader

__all__ = ["JOURNAL_WIDTH", "Ranges", "drop_journals", "journals", "present", "settle"]

JOURNAL_WIDTH = 20


def present(part: Path) -> bool:
    """Whether ``part`` is a ranged partial file (its first range's journal exists;
    a look at one name, not a listing of the folder, as it is asked for every file)."""
    return part.with_name(f"{part.name}.0").exists()


def journals(part: Path) -> dict[int, int]:
    """``{start: bytes}`` of the journals beside ``part`` (a malformed one counts 0)."""
    out: dict[int, int] = {}
    for q in part.parent.glob(f"{part.name}.*"):
        start = q.name[len(part.name) + 1 :]
        if not start.isdigit():
            continue
        try:
            raw = q.read_bytes()
        except FileNotFoundError:
            continue
        n = raw.decode("ascii", "replace")
        ok = len(raw) == JOURNAL_WIDTH and n.isdigit()
        out[int(start)] = int(n) if ok else 0
    return out


def drop_journals(part: Path) -> None:
    for start in journals(part):
        with contextlib.suppress(FileNotFoundError):
            part.with_name(f"{part.name}.{start}").unlink()


def settle(part: Path) -> None:
    """Turn a ranged partial file back into a plain one: keep only the bytes
    contiguous from the start (the ranges' journals say which), drop the journals."""
    found = journals(part) if present(part) else {}
    if not found:
        return
    prefix = 0
    for start in sorted(found):
        if start != prefix:
            break
        prefix += found[start]
        nxt = min((s for s in found if s > start), default=None)
        if nxt is None or prefix != nxt:
            break
    with contextlib.suppress(FileNotFoundError):
        if part.stat().st_size > prefix:
            os.truncate(part, prefix)
    drop_journals(part)


def _grid(part: Path, size: int, cell: int) -> tuple[list[tuple[int, int]], list[int]]:
    """The ranges of a download of ``size`` bytes into ``part`` and the bytes each has:
    those of its journals when it resumes, else a grid of ``cell`` bytes (a plain
    partial file's bytes kept)."""
    found = {s: n for s, n in journals(part).items() if s < size}
    if found and 0 in found:
        starts = sorted(found)
        segs = [(s, nxt) for s, nxt in zip(starts, [*starts[1:], size], strict=True)]
        return segs, [min(found[s], b - s) for s, b in segs]
    if found:  # no journal for byte 0: what the file holds cannot be placed
        drop_journals(part)
        with contextlib.suppress(FileNotFoundError):
            os.truncate(part, 0)
    try:
        have = min(part.stat().st_size, size)  # a plain partial file: its prefix
    except FileNotFoundError:
        have = 0
    segs = [(s, min(s + cell, size)) for s in range(0, size, cell)]
    return segs, [max(0, min(have - s, b - s)) for s, b in segs]


class Ranges:
    """A file being filled as parallel ranges, in place: the file and each range's journal
    (the module's docstring). The range threads put their bytes in (:meth:`fill`), one
    thread hashes the file in order (:meth:`hash_in_order`); the lock of both is this
    object's own."""

    def __init__(self, path: Path, size: int, segs: list[tuple[int, int]], done: list[int]) -> None:
        self.path = path
        self.size = size
        self.segs = segs
        self.done = done  # bytes of each range written, from its start
        self.resumed = any(done)
        self._errors: list[BaseException] = []  # of the ranges' threads and the writers
        self._reach = list(done)  # bytes of each range come (written, or being written)
        self._early: list[dict[int, int]] = [{} for _ in segs]  # written past a gap: at -> n
        self._pos = 0  # bytes hashed
        self._cond = threading.Condition()
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._jfd = [os.open(self._journal(s), os.O_RDWR | os.O_CREAT, 0o644) for s, _ in segs]
        if os.fstat(self._fd).st_size > size:
            os.ftruncate(self._fd, size)
        dfd = _direct.open_direct(path)  # looked up now: a test turns it off
        self.direct: _direct.Direct | None = (
            None
            if dfd is None
            else _direct.Direct(dfd, self._fd, self._landed_at, self._failed, self.wake)
        )

    @classmethod
    def open(cls, part: Path, size: int, cell: int) -> Ranges:
        """The ranges of a download of ``size`` bytes into ``part`` (see :func:`_grid`)."""
        segs, done = _grid(part, size, cell)
        state = cls(part, size, segs, done)
        for i in range(len(segs)):
            state._record(i)
        return state

    def _journal(self, start: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{start}")

    def _record(self, i: int) -> None:
        os.pwrite(self._jfd[i], b"%020d" % self.done[i], 0)

    def length(self, i: int) -> int:
        s, b = self.segs[i]
        return b - s

    def pending(self) -> list[int]:
        """The ranges not complete yet."""
        return [i for i in range(len(self.segs)) if self.done[i] < self.length(i)]

    def fail(self, exc: BaseException) -> None:
        """A range thread's error, for the hasher to raise."""
        with self._cond:
            self._errors.append(exc)
            self._cond.notify_all()

    # ---- filling and hashing --------------------------------------------

    def fill(
        self,
        i: int,
        body: BodyReader,
        at: int,
        stop: threading.Event,
        tick: Callable[[int], None],
    ) -> int:
        """Put the next bytes of range ``i``'s ``body`` at ``at`` in the file; how many (0:
        the body ended, or ``stop``). Bytes next in line for the hash go into a buffer
        of :attr:`direct`, the hash is taken from there as they are written; any other
        is written into the file (the page cache), a pipe's worth at a time, and
        hashed from it later (as are bytes next in line when no buffer comes free soon:
        a reader that waits loses what a capped line could bring). ``tick(n)`` is called
        as each ``n`` come, and may raise (what came until then is kept)."""
        end = self.segs[i][1]
        direct = self.direct
        piece = None
        if direct is not None and self._next_in_line(i, at):
            piece = direct.take(i, at, stop)  # None: no buffer came free soon (or stop)
        if piece is None:
            if stop.is_set():
                return 0
            n = body.into_file(self._fd, at, end - at)
            if n:
                self._landed_at(i, at, n)
                tick(n)
            return n
        assert direct is not None
        try:
            while not piece.full(end):
                with piece.space(end) as room:
                    n = body.into(room)
                if not n:
                    break
                piece.n += n
                with self._cond:
                    self._reach[i] = max(self._reach[i], at + piece.n - self.segs[i][0])
                tick(n)
        finally:
            direct.submit(piece)
        return piece.n

    def _next_in_line(self, i: int, at: int) -> bool:
        """Whether bytes of range ``i`` at ``at`` are next in line for the hash: every byte
        before the range has come, and the hash is at most :data:`LEAD` bytes behind."""
        assert self.direct is not None
        with self._cond:
            if not self.direct.on or at - self._pos > _limits.LEAD:
                return False
            return all(self._reach[k] >= self.length(k) for k in range(i))

    def _landed_at(self, i: int, at: int, n: int) -> None:
        """Count the ``n`` bytes of range ``i`` at ``at`` as written in the file (they may
        land before bytes in front of them, two writers being at work), in the journal
        too."""
        with self._cond:
            start = self.segs[i][0]
            early = self._early[i]
            early[at] = n
            while (k := start + self.done[i]) in early:
                self.done[i] += early.pop(k)
            self._reach[i] = max(self._reach[i], self.done[i])
            self._cond.notify_all()
            self._record(i)

    def _failed(self, exc: BaseException) -> None:
        """A writer's error, for the hasher to raise."""
        self.fail(_disk_error(exc, self.path) if isinstance(exc, OSError) else exc)

    def drain(self, i: int) -> None:
        """Wait until every byte of range ``i`` that came is written (or has failed); then
        what it has is :attr:`done`."""
        if self.direct is not None:
            self.direct.drain(i)
        with self._cond:
            self._early[i].clear()  # none are left but after a writer's failure
            self._reach[i] = self.done[i]

    def line_bound(self) -> None:
        """More connections come: the line, not the hash, sets the pace. From now on every
        byte goes through the page cache, which keeps the disk's writes off the way
        (on a capped line the buffers' direct writes cost more than they spare: a 311 MB
        get of 40 MiB files at 50 MB/s a connection took 0.45-0.50x snapshot_download's
        time with them, 0.41-0.45x without)."""
        if self.direct is not None:
            self.direct.turn_off()

    def come(self) -> int:
        """Bytes of the file that have come (written, or in a buffer being written)."""
        with self._cond:
            return sum(self._reach)

    def waited(self) -> float:
        """Seconds the bytes next in line have waited for a free buffer, all told."""
        return self.direct.waited if self.direct is not None else 0.0

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def hash_in_order(self, h: hashlib._Hash, tick: Callable[[], None]) -> None:
        """Hash the file into ``h`` from byte 0 as the ranges fill it, then wait until all
        of it is written; raises the first error of a range's thread or a writer; calls
        ``tick`` while it waits for bytes. Bytes in a buffer of :attr:`direct` are
        hashed from there (before they are written, even), the rest from the file;
        every ``SYNC_EVERY`` bytes of those, they are pushed to disk in the background
        so the final fsync has little left to do."""
        pos = i = 0
        unsynced = 0
        syncer = Syncer(self._fd)
        direct = self.direct
        errors = self._errors
        try:
            while pos < self.size:
                if pos >= self.segs[i][1]:
                    i += 1
                    continue
                with self._cond:
                    while True:
                        if errors:
                            raise errors[0]
                        piece = direct.take_ready(pos) if direct is not None else None
                        avail = self.segs[i][0] + self.done[i]
                        if piece is not None or avail > pos:
                            break
                        self._cond.wait(0.1)
                        _interrupt.check()
                        tick()
                    if piece is None and direct is not None:
                        nxt = direct.next_ready(pos)
                        avail = avail if nxt is None else min(avail, nxt)
                if piece is not None:
                    assert direct is not None
                    with piece.data() as v:
                        h.update(v)
                    pos += piece.n
                    direct.hashed(piece)
                else:
                    while pos < avail:
                        n = min(_limits.HASH_READ, avail - pos)
                        self._hash_span(h, pos, n)
                        pos += n
                        unsynced += n
                        if unsynced >= _limits.SYNC_EVERY:
                            syncer.kick()
                            unsynced = 0
                with self._cond:
                    self._pos = pos
            with self._cond:
                while sum(self.done) < self.size:  # hashed from buffers still being written
                    if errors:
                        raise errors[0]
                    self._cond.wait(0.1)
                    _interrupt.check()
        finally:
            syncer.stop()

    def _hash_span(self, h: hashlib._Hash, pos: int, n: int) -> None:
        """Hash ``n`` bytes of the file at ``pos``, straight from the page cache: a map of
        the span, not a read into a buffer (one copy of every byte less)."""
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        if os.fstat(self._fd).st_size < pos + n:  # a map past the end would fault
            raise NoRanges("the partial file is shorter than its journals say")
        span = mmap.mmap(self._fd, pos + n - base, access=mmap.ACCESS_READ, offset=base)
        with span, memoryview(span) as v:
            h.update(v[pos - base :])

    def finish(self) -> None:
        """Push the whole file to disk (before it may be renamed into place)."""
        os.fsync(self._fd)

    def close(self) -> None:
        if self.direct is not None:
            self.direct.close()
        os.close(self._fd)
        for fd in self._jfd:
            os.close(fd)
