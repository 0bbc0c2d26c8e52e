"""How slowly a body read whole may come: a metadata request's deadline, a file's
minimum rate."""

from __future__ import annotations

import time
from typing import Protocol

from ._errors import DeadlineExceededError, TransportError

__all__ = ["Deadline", "MinRate", "Pace", "RateRule"]


class RateRule:
    """The one minimum-rate rule of a transfer, whether read whole (:class:`MinRate`) or
    streamed to disk (``modfetch._transfer.RateWindow``): over each ``window`` seconds,
    at least ``rate`` bytes a second. :meth:`add` says when a window closed too slow."""

    def __init__(self, rate: int, window: float) -> None:
        self.rate = rate
        self.window = window
        self.restart()

    def restart(self) -> None:
        """A new try: its first window starts now."""
        self._since, self._got = time.monotonic(), 0

    def add(self, n: int) -> bool:
        """Count ``n`` bytes that came now; whether the window they close came too slowly."""
        self._got += n
        elapsed = time.monotonic() - self._since
        if elapsed < self.window:
            return False
        if self._got < self.rate * elapsed:
            return True
        self.restart()
        return False

    def __str__(self) -> str:
        return f"slower than {self.rate} bytes/s for {self.window:g}s"


class Pace(Protocol):
    """How slowly a body read whole (:meth:`HttpClient.get`) may come; raises when too slowly."""

    def begin(self) -> None:
        """A try starts."""

    def chunk(self, n: int) -> None:
        """``n`` more bytes of the body came."""

    def check(self) -> None:
        """A try failed: raise if no other may be made."""

    def waited(self, seconds: float) -> None:
        """The client waited ``seconds`` before the next try."""


class Deadline:
    """A metadata request's pace: all of it within ``seconds`` (:data:`METADATA_DEADLINE`),
    every try included, the waits between tries not (each is bounded and announced)."""

    def __init__(self, url: str, seconds: float) -> None:
        self.url = url
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def begin(self) -> None:
        pass

    def chunk(self, n: int) -> None:
        self.check()

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise DeadlineExceededError(self.url, self.seconds)

    def waited(self, seconds: float) -> None:
        self.at += seconds


class MinRate:
    """A file's pace (``get(..., file=True)``): each try brings at least ``rate`` bytes a
    second over each ``window`` seconds, as a download must (:data:`FILE_MIN_RATE`); a
    slower one is cut with a :class:`TransportError`, which is retried."""

    def __init__(self, url: str, rate: int, window: float) -> None:
        self.url = url
        self.rule = RateRule(rate, window)

    def begin(self) -> None:
        self.rule.restart()

    def chunk(self, n: int) -> None:
        if self.rule.add(n):
            raise TransportError(self.url, f"{self.rule}; cut")

    def check(self) -> None:
        pass

    def waited(self, seconds: float) -> None:
        pass
