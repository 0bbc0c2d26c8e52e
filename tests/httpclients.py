"""Whether code left an HTTP client open.

An :class:`~wgtpm.httpclient.HttpClient` starts one ``http-watch`` thread on
its first request and stops it when it is closed, so a watch thread still
running after a command means a client (and its pooled connections) was
left open.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_client_left_open", "watchers"]


def watchers() -> set[threading.Thread]:
    """The live watch threads of open HTTP clients (one each, from its first request)."""
    return {t for t in threading.enumerate() if t.name == "http-watch"}


@contextmanager
def no_client_left_open(what: str = "the command") -> Iterator[None]:
    """Fail if a client that made its first request inside the block is open after it
    (an error or Ctrl-C to check: catch it inside the block)."""
    before = watchers()
    yield
    for t in watchers() - before:
        t.join(timeout=5)  # a closed client's thread ends within a quarter second
        assert not t.is_alive(), f"an HTTP client of {what} was left open"
