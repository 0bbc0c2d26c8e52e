"""How the CLI shows a builder's training progress.

Builders report each training step or epoch as a notice of one shape::

    LABEL: step S/N REST        (PAW: "paw fruit: step 3/40 loss 0.4100 lr 2.00e-04")
    LABEL: epoch E/N REST       (WeightLang: "train xor: epoch 120/500 loss 0.0123")

:class:`ProgressPrinter` turns them into

- on a terminal, one line rewritten in place:
  ``train xor [#######.......] epoch 120/500 loss 0.0123 ETA 4s``, ended by a
  newline when the last step arrives or another message is printed;
- on a pipe (CI logs), ``train xor: epoch 120/500 loss 0.0123 (ETA 4s)``
  for the first step, then at most one line every :data:`EVERY` seconds, and
  the last step: never one line per step.

Every other notice is a line as it is (a builder's notices name what they
are about: ``paw fruit: wrote build/fruit.paw``) and every warning a
``wgtpm: warning: MESSAGE`` line.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from .._report import Silent

__all__ = ["EVERY", "ProgressPrinter", "make_progress"]

#: Seconds between progress lines on a pipe.
EVERY = 5.0

#: Width of the bar on a terminal, in characters.
BAR = 24

_STEP = re.compile(
    r"^(?P<label>.+?): (?P<unit>step|epoch) (?P<done>\d+)/(?P<total>\d+)(?: (?P<rest>.*))?$"
)


@dataclass
class _Run:
    started: float
    last_line: float


def eta_text(seconds: float) -> str:
    """``4s``, ``2m05s``, ``1h02m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ProgressPrinter(Silent):
    """A :class:`~wgtpm._report.Reporter` for builds (see the module docstring)."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        tty: bool | None = None,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._out = out
        self._tty = tty
        self._every = every
        self._clock = clock
        self._runs: dict[str, _Run] = {}
        self._open = False  # a progress line is on screen without its newline

    @property
    def out(self) -> TextIO:
        return self._out or sys.stderr

    def _is_tty(self) -> bool:
        return self._tty if self._tty is not None else self.out.isatty()

    def _line(self, text: str) -> None:
        if self._open:
            self.out.write("\n")
            self._open = False
        print(text, file=self.out, flush=True)

    def notice(self, message: str) -> None:
        m = _STEP.match(message)
        if m is None:
            self._line(message)
            return
        label, unit, rest = m["label"], m["unit"], m["rest"] or ""
        done, total = int(m["done"]), int(m["total"])
        now = self._clock()
        run = self._runs.get(label)
        if run is None or done <= 1:
            run = self._runs[label] = _Run(started=now, last_line=-1e18)
            first = True
        else:
            first = False
        last = done >= total
        eta = (now - run.started) / max(done, 1) * (total - done)
        what = f"{unit} {done}/{total}" + (f" {rest}" if rest else "")
        if self._is_tty():
            filled = BAR * min(done, total) // max(total, 1)
            bar = "#" * filled + "." * (BAR - filled)
            tail = f"done in {eta_text(now - run.started)}" if last else f"ETA {eta_text(eta)}"
            self.out.write(f"\r\x1b[2K{label} [{bar}] {what} {tail}")
            self.out.flush()
            self._open = True
            if last:
                self.out.write("\n")
                self._open = False
        elif first or last or now - run.last_line >= self._every:
            run.last_line = now
            tail = f"done in {eta_text(now - run.started)}" if last else f"ETA {eta_text(eta)}"
            self._line(f"{label}: {what} ({tail})")
        if last:
            self._runs.pop(label, None)

    def warning(self, message: str) -> None:
        self._line(f"wgtpm: warning: {message}")


def make_progress() -> ProgressPrinter:
    return ProgressPrinter()
