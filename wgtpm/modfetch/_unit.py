"""A file to fetch, and one module version's download under way.

:class:`VersionFile` is what every step of a download is handed: the module version
and the index entry of one of its files (its errors name ``path@version: file``).
:class:`Unit` is a module version's download as its threads share it (the unit's
own and the early downloads'): the bytes it brought, for the progress line, how many
ranges each of its large files comes in, and whether it is to stop. Its lock is
taken here only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from .. import modfetch as _limits
from .._report import Reporter, end
from ..index import IndexEntry
from ._options import FetchOptions

__all__ = ["Stopped", "Unit", "VersionFile"]


@dataclass(frozen=True, slots=True)
class VersionFile:
    """One file of one module version, as the version's index lists it."""

    path: str
    version: str
    entry: IndexEntry

    @property
    def module(self) -> str:
        """``path@version``, as messages name the version."""
        return f"{self.path}@{self.version}"


class Stopped(Exception):
    """An early download stops: its unit failed (:meth:`Unit.stop`)."""


class Unit:
    """One module version's download, reported as ``label``: the bytes it brought (those
    that came before its progress started, by early downloads, are reported when it
    starts), how many ranges its large files come in, and whether its downloads are to
    stop at their next chunk (:meth:`advance` raises :class:`Stopped` then)."""

    def __init__(self, label: str, progress: Reporter) -> None:
        self.label = label
        self._progress = progress
        self._lock = threading.Lock()
        self._done = 0
        self._ranges = 1
        self._started = False
        self._stopping = False

    def advance(self, n: int) -> None:
        """Count ``n`` more bytes."""
        with self._lock:
            if self._stopping:
                raise Stopped()
            if not n:
                return
            self._done += n
            started = self._started
        if started:
            self._progress.advance(self.label, n)

    def start(self, total: int) -> None:
        """Start the progress line, at ``total`` bytes, with what came already."""
        with self._lock:
            self._started = True
            self._progress.start(self.label, total)
            if self._done:
                self._progress.advance(self.label, self._done)

    def end(self, ok: bool) -> None:
        """End the progress line, if it started."""
        with self._lock:
            started, self._started = self._started, False
        if started:
            end(self._progress, self.label, ok)

    def plan(self, entries: Iterable[IndexEntry], opts: FetchOptions) -> None:
        """How many ranges each large file of ``entries`` comes in: large files as many
        as the jobs keep them busy and need no splitting (each connection costs CPU);
        fewer share about twice the jobs' connections in ranges."""
        large = sum(1 for e in entries if e.size >= _limits.RANGED_MIN)
        jobs = opts.jobs
        ranges = 1 if large >= jobs else min(opts.ranges, 2 * jobs // max(1, large))
        with self._lock:
            self._ranges = ranges

    @property
    def ranges(self) -> int:
        with self._lock:
            return self._ranges

    @property
    def done(self) -> int:
        """Bytes brought so far."""
        with self._lock:
            return self._done

    def stop(self) -> None:
        """Stop every download of the unit at its next chunk."""
        with self._lock:
            self._stopping = True
