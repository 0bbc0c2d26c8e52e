"""The one retry policy of wgtpm's network code: exponential backoff with full jitter.

Every loop that tries a network operation again (an HTTP request that met a
5xx, a 429 or a reset; a download cut short and resumed; a Hugging Face API
call) asks a :class:`Backoff` how long to wait and how often to try::

    policy = Backoff(attempts=5, base=0.5, cap=30.0)
    for attempt in policy.attempts_range():
        try:
            return op()
        except Transient:
            if policy.last(attempt):
                raise
            policy.sleep(attempt)

The wait before try ``attempt + 1`` is uniform in
``[0, min(cap, base * 2**attempt)]`` (AWS's "full jitter": clients that
failed together do not come back together). A server's ``Retry-After`` takes
its place when given, up to ``max_retry_after``; a longer one is not waited
out, and :meth:`Backoff.wait_for` says so with ``None``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Backoff"]


@dataclass(frozen=True)
class Backoff:
    """How often to try an operation and how long to wait in between.

    ``attempts`` counts every try, the first included (``1``: never retry).
    ``sleep`` is what waits (tests pass a recorder).
    """

    attempts: int = 5
    base: float = 0.5
    cap: float = 30.0
    max_retry_after: float = 60.0
    sleep_fn: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def attempts_range(self) -> range:
        """``range(attempts)``, at least one try."""
        return range(max(1, self.attempts))

    def last(self, attempt: int) -> bool:
        """Whether try number ``attempt`` (0-based) is the final one."""
        return attempt >= max(1, self.attempts) - 1

    def delay(self, attempt: int) -> float:
        """The jittered wait after failed try ``attempt`` (0-based)."""
        return random.uniform(0, min(self.cap, self.base * (2**attempt)))

    def wait_for(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait after try ``attempt``: ``retry_after`` when the server named one
        (``None`` when that is longer than ``max_retry_after``), else :meth:`delay`."""
        if retry_after is None:
            return self.delay(attempt)
        if retry_after > self.max_retry_after:
            return None
        return retry_after

    def sleep(self, attempt: int, retry_after: float | None = None) -> None:
        """Wait before the next try (a ``Retry-After`` over the maximum waits the maximum)."""
        wait = self.wait_for(attempt, retry_after)
        self.sleep_fn(self.max_retry_after if wait is None else wait)
