"""How the CLI renders a :class:`~wgtpm._report.Reporter`: what a person sees on stderr.

- ``notice(message)`` -> ``wgtpm: MESSAGE``;
- ``warning(message)`` -> ``wgtpm: warning: MESSAGE``;
- download progress: on a terminal a live bar per module version (rich),
  cleared when done and followed by ``downloaded MODULE@VERSION (SIZE)``;
  on a pipe one line per finished module version,
  ``wgtpm: downloaded MODULE@VERSION (SIZE)``, and while downloads run, a line
  every :data:`PIPE_PERIOD` seconds for each unfinished one
  (``wgtpm: downloading MODULE@VERSION: 16.7 MiB of 200.0 MiB (8%)``), so a
  long download in CI is never silent; with ``-q`` nothing. A download
  that failed or was interrupted (``fail(label)``) gets no ``downloaded`` line.

Notices and warnings are shown also with ``-q`` (it silences progress only).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from .._report import Reporter, human_size, set_network

__all__ = ["PIPE_PERIOD", "LineReporter", "RichReporter", "make_reporter"]

#: Seconds between progress lines on a pipe.
PIPE_PERIOD = 5.0


class LineReporter:
    """Lines on stderr: notices, warnings and one ``downloaded`` line per module version."""

    def __init__(
        self,
        out: TextIO | None = None,
        progress: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._out = out
        self._progress = progress
        self._lock = threading.Lock()
        self._total: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._clock = clock
        self._last = clock()

    def _print(self, line: str) -> None:
        with self._lock:
            print(line, file=self._out or sys.stderr)

    def notice(self, message: str) -> None:
        self._print(f"wgtpm: {message}")

    def warning(self, message: str) -> None:
        self._print(f"wgtpm: warning: {message}")

    def start(self, label: str, total: int) -> None:
        with self._lock:
            if not self._total:
                self._last = self._clock()
            self._total[label] = total
            self._done[label] = 0

    def advance(self, label: str, n: int) -> None:
        if not self._progress:
            return
        lines = []
        with self._lock:
            if label in self._done:
                self._done[label] += n
            now = self._clock()
            if now - self._last >= PIPE_PERIOD:
                self._last = now
                for lbl, total in self._total.items():
                    done = min(self._done.get(lbl, 0), total)
                    pct = f" ({100 * done // total}%)" if total else ""
                    lines.append(
                        f"wgtpm: downloading {lbl}: {human_size(done)} of {human_size(total)}{pct}"
                    )
        for line in lines:
            self._print(line)

    def finish(self, label: str) -> None:
        with self._lock:
            total = self._total.pop(label, 0)
            self._done.pop(label, None)
        if self._progress:
            self._print(f"wgtpm: downloaded {label} ({human_size(total)})")

    def fail(self, label: str) -> None:
        with self._lock:
            self._total.pop(label, None)
            self._done.pop(label, None)


class RichReporter(LineReporter):
    """A live bar per module version (only on a terminal); notices and warnings as lines."""

    def __init__(self) -> None:
        super().__init__()
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TransferSpeedColumn,
        )

        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            transient=True,
        )
        self._tasks: dict[str, Any] = {}
        self._bar_lock = threading.Lock()
        self._started = False

    def start(self, label: str, total: int) -> None:
        with self._bar_lock:
            if not self._started:
                self._p.start()
                self._started = True
            self._tasks[label] = self._p.add_task(label, total=total)

    def advance(self, label: str, n: int) -> None:
        t = self._tasks.get(label)
        if t is not None and n:
            self._p.advance(t, n)

    def finish(self, label: str) -> None:
        with self._bar_lock:
            t = self._tasks.pop(label, None)
            if t is not None:
                total = self._p.tasks[t].total or 0
                self._p.remove_task(t)
                self._p.console.print(f"downloaded {label} ({human_size(int(total))})")
            if not self._tasks and self._started:
                self._p.stop()
                self._started = False

    def fail(self, label: str) -> None:
        with self._bar_lock:
            t = self._tasks.pop(label, None)
            if t is not None:
                self._p.remove_task(t)
            if not self._tasks and self._started:
                self._p.stop()
                self._started = False


def make_reporter(quiet: bool = False) -> Reporter:
    """A live display on a terminal; quiet lines on a pipe; no progress with ``quiet``.

    The network code of the process reports through it too (slow servers, retries, ``-x``).
    """
    r: Reporter
    if quiet:
        r = LineReporter(progress=False)
    elif sys.stderr.isatty():
        r = RichReporter()
    else:
        r = LineReporter()
    set_network(r)
    return r
