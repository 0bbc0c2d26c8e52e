"""Download progress: a live display on a terminal, one quiet line per module otherwise."""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

__all__ = ["LineProgress", "make_progress"]


def _size(n: int) -> str:
    f = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if f < 1024 or unit == "GiB":
            return f"{f:.0f} {unit}" if unit == "B" else f"{f:.1f} {unit}"
        f /= 1024
    return f"{n} B"


class LineProgress:
    """Prints ``wgtpm: downloaded MODULE@VERSION (SIZE)`` when a module is done."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self._lock = threading.Lock()
        self._total: dict[str, int] = {}

    def start(self, label: str, total: int) -> None:
        with self._lock:
            self._total[label] = total

    def advance(self, label: str, n: int) -> None:
        pass

    def finish(self, label: str) -> None:
        with self._lock:
            total = self._total.pop(label, 0)
            print(f"wgtpm: downloaded {label} ({_size(total)})", file=self.out)


class RichProgress:
    """A live bar per module version (only on a terminal)."""

    def __init__(self) -> None:
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
        self._lock = threading.Lock()
        self._started = False

    def start(self, label: str, total: int) -> None:
        with self._lock:
            if not self._started:
                self._p.start()
                self._started = True
            self._tasks[label] = self._p.add_task(label, total=total)

    def advance(self, label: str, n: int) -> None:
        t = self._tasks.get(label)
        if t is not None and n:
            self._p.advance(t, n)

    def finish(self, label: str) -> None:
        with self._lock:
            t = self._tasks.pop(label, None)
            if t is not None:
                total = self._p.tasks[t].total or 0
                self._p.remove_task(t)
                self._p.console.print(f"downloaded {label} ({_size(int(total))})")
            if not self._tasks and self._started:
                self._p.stop()
                self._started = False


def make_progress(quiet: bool = False) -> Any:
    """A live display on a terminal; quiet lines on a pipe; nothing when ``quiet``."""
    if quiet:
        return None
    if sys.stderr.isatty():
        return RichProgress()
    return LineProgress()
