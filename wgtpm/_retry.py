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

__all__ = ["Backoff", "refused_for_good"]


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


def refused_for_good(url: str, exc: BaseException) -> bool:
    """Whether ``exc``, met asking for ``url``, is a refused connection that another try
    soon would meet again: nothing listens on a loopback address (a local registry that is
    stopped), or at a proxy (``WGTPROXY``'s hosts, an ``HTTPS_PROXY``): such a machine says
    so at once and does not come back in the seconds the backoff waits. A refusal by any
    other host is tried again (a server restarting behind a load balancer).

    A read gives up on this answer at once (``wgtpm.httpclient``'s ``Retries.again``); a
    publish keeps trying through an outage until its deadline (:mod:`wgtpm.publish._registry`).
    """
    if not _refused(exc):
        return False
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return _loopback(host) or host in _wgtproxy_hosts() or _http_proxy_set(urlsplit(url).scheme)


def _refused(exc: BaseException | None) -> bool:
    import errno

    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, ConnectionRefusedError):
            return True
        if isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED:
            return True
        if "[Errno 111]" in str(exc) or "Connection refused" in str(exc):  # httpcore's text
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _wgtproxy_hosts() -> set[str]:
    """The hosts of ``WGTPROXY``'s URLs."""
    import os
    import re
    from urllib.parse import urlsplit

    return {
        (urlsplit(u).hostname or "").lower()
        for u in re.split(r"[,|]", os.environ.get("WGTPROXY", ""))
        if "://" in u
    }


def _http_proxy_set(scheme: str) -> bool:
    """Whether a request of ``scheme`` goes through an HTTP proxy (``HTTPS_PROXY``,
    ``HTTP_PROXY``, ``ALL_PROXY``, either case): then a refused connection is the proxy's."""
    import os

    return any(
        os.environ.get(var) or os.environ.get(var.upper())
        for var in (f"{scheme}_proxy", "all_proxy")
    )
