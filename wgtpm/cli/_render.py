"""How the CLI renders a :class:`~wgtpm._report.Reporter`: what a person sees on stderr.

One reporter, :class:`StderrReporter`, serves every command (``get``, ``build``,
``publish``, ``verify --rebuild``, ``paw compile`` ...); :func:`make_reporter` makes it.

- ``notice(message)`` -> ``wgtpm: MESSAGE``;
- ``warning(message)`` -> ``wgtpm: warning: MESSAGE``;
- training progress: a builder reports each step or epoch as a notice of one shape,
  ``LABEL: step S/N REST`` (PAW: ``paw fruit: step 3/40 loss 0.4100 lr 2.00e-04``)
  or ``LABEL: epoch E/N REST`` (WeightLang: ``train xor: epoch 120/500 loss 0.0123``).
  On a terminal it is one line rewritten in place,
  ``train xor [#######.......] epoch 120/500 loss 0.0123 ETA 4s``, ended by a
  newline at the last step or when another line is printed; on a pipe
  ``wgtpm: train xor: epoch 120/500 loss 0.0123 (ETA 4s)`` for the first step, then
  at most one line every :data:`PIPE_PERIOD` seconds, and the last step
  (``... (done in 9s)``): never one line per step;
- download progress: on a terminal a live bar per module version (rich),
  cleared when done and followed by ``downloaded MODULE@VERSION (SIZE)``;
  on a pipe one line per finished module version,
  ``wgtpm: downloaded MODULE@VERSION (SIZE)``, and while downloads run, a line
  every :data:`PIPE_PERIOD` seconds for each unfinished one
  (``wgtpm: downloading MODULE@VERSION: 16.7 MiB of 200.0 MiB (8%)``), so a
  long download in CI is never silent. A download that failed or was
  interrupted (``fail(label)``) gets no ``downloaded`` line. An upload (begun with
  ``start_upload``: a publish's file going up) is shown the same way, worded
  ``uploading``/``uploaded``.

With ``-q`` (and ``--json``) there is no progress, neither training nor download;
notices and warnings are shown all the same.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from .._report import Reporter, human_size, set_network

__all__ = ["PIPE_PERIOD", "StderrReporter", "eta_text", "make_reporter"]

#: Seconds between progress lines on a pipe.
PIPE_PERIOD = 5.0

#: Width of a training bar on a terminal, in characters.
BAR = 24

_STEP = re.compile(
    r"^(?P<label>.+?): (?P<unit>step|epoch) (?P<done>\d+)/(?P<total>\d+)(?: (?P<rest>.*))?$"
)


def eta_text(seconds: float) -> str:
    """``4s``, ``2m05s``, ``1h02m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class _Run:
    """One training run's clock: when it started and when its last pipe line was printed."""

    started: float
    last_line: float


class StderrReporter:
    """Notices, warnings, training and download progress on stderr (see the module docstring).

    ``tty``: render for a terminal (live bars) rather than a pipe; by default,
    whether ``out`` is one. ``progress=False`` is ``-q``.
    """

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        progress: bool = True,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._out = out
        self._progress = progress
        self._tty = tty
        self._clock = clock
        self._lock = threading.RLock()
        self._open = False  # a training line is on screen without its newline
        self._runs: dict[str, _Run] = {}
        # downloads on a pipe
        self._total: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._last = clock()
        # downloads on a terminal
        self._bars: Any = None
        self._tasks: dict[str, tuple[Any, int]] = {}  # label -> (rich task id, total)
        self._uploads: set[str] = set()  # labels begun with start_upload

    @property
    def out(self) -> TextIO:
        return self._out or sys.stderr  # looked up late: the CLI's tests swap sys.stderr

    def _is_tty(self) -> bool:
        return self._tty if self._tty is not None else self.out.isatty()

    def _print(self, line: str) -> None:
        with self._lock:
            if self._open:
                self.out.write("\n")
                self._open = False
            print(line, file=self.out, flush=True)

    def notice(self, message: str) -> None:
        m = _STEP.match(message)
        if m is None:
            self._print(f"wgtpm: {message}")
        elif self._progress:
            self._step(m)

    def warning(self, message: str) -> None:
        self._print(f"wgtpm: warning: {message}")

    def _step(self, m: re.Match[str]) -> None:
        label, unit, rest = m["label"], m["unit"], m["rest"] or ""
        done, total = int(m["done"]), int(m["total"])
        with self._lock:
            now = self._clock()
            run = self._runs.get(label)
            first = run is None or done <= 1
            if run is None or first:
                run = self._runs[label] = _Run(started=now, last_line=-1e18)
            last = done >= total
            eta = (now - run.started) / max(done, 1) * (total - done)
            tail = f"done in {eta_text(now - run.started)}" if last else f"ETA {eta_text(eta)}"
            what = f"{unit} {done}/{total}" + (f" {rest}" if rest else "")
            if last:
                self._runs.pop(label, None)
            if self._is_tty():
                filled = BAR * min(done, total) // max(total, 1)
                bar = "#" * filled + "." * (BAR - filled)
                self.out.write(f"\r\x1b[2K{label} [{bar}] {what} {tail}" + ("\n" if last else ""))
                self.out.flush()
                self._open = not last
            elif first or last or now - run.last_line >= PIPE_PERIOD:
                run.last_line = now
                self._print(f"wgtpm: {label}: {what} ({tail})")

    def start(self, label: str, total: int) -> None:
        if not self._progress:
            return
        with self._lock:
            if self._is_tty():
                self._bar_start(label, total)
                return
            if not self._total:
                self._last = self._clock()
            self._total[label] = total
            self._done[label] = 0

    def start_upload(self, label: str, total: int) -> None:
        with self._lock:
            self._uploads.add(label)
            self.start(label, total)

    def _verb(self, label: str, done: bool) -> str:
        if label in self._uploads:
            return "uploaded" if done else "uploading"
        return "downloaded" if done else "downloading"

    def advance(self, label: str, n: int) -> None:
        if not self._progress:
            return
        lines = []
        with self._lock:
            if label in self._tasks:
                if n:
                    self._bars.advance(self._tasks[label][0], n)
                return
            if label in self._done:
                self._done[label] += n
            now = self._clock()
            if self._total and now - self._last >= PIPE_PERIOD:
                self._last = now
                for lbl, total in self._total.items():
                    done = min(self._done.get(lbl, 0), total)
                    pct = f" ({100 * done // total}%)" if total else ""
                    lines.append(
                        f"wgtpm: {self._verb(lbl, False)} {lbl}: "
                        f"{human_size(done)} of {human_size(total)}{pct}"
                    )
            for line in lines:
                self._print(line)

    def finish(self, label: str) -> None:
        with self._lock:
            if label in self._tasks:
                self._bar_end(label, ok=True)
            elif label in self._total:
                total = self._total.pop(label)
                self._done.pop(label, None)
                self._print(f"wgtpm: {self._verb(label, True)} {label} ({human_size(total)})")
            self._uploads.discard(label)

    def fail(self, label: str) -> None:
        with self._lock:
            if label in self._tasks:
                self._bar_end(label, ok=False)
            self._total.pop(label, None)
            self._done.pop(label, None)
            self._uploads.discard(label)

    def _bar_start(self, label: str, total: int) -> None:
        if self._bars is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TransferSpeedColumn,
            )

            self._bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(file=self.out),
                transient=True,
            )
            self._bars.start()
        self._tasks[label] = (self._bars.add_task(label, total=total), total)

    def _bar_end(self, label: str, ok: bool) -> None:
        task, total = self._tasks.pop(label)
        self._bars.remove_task(task)
        if ok:
            self._bars.console.print(f"{self._verb(label, True)} {label} ({human_size(total)})")
        if not self._tasks:
            self._bars.stop()
            self._bars = None


def make_reporter(quiet: bool = False) -> Reporter:
    """The CLI's reporter: live bars on a terminal, lines on a pipe, no progress with ``quiet``.

    The network code of the process reports through it too (slow servers, retries, ``-x``).
    """
    r = StderrReporter(progress=not quiet)
    set_network(r)
    return r
