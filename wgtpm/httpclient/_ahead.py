"""Where URLs redirect to, asked ahead of their downloads (:class:`Locator`)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from .. import _interrupt

if TYPE_CHECKING:
    from ._client import HttpClient

__all__ = ["Locator"]

_Job = tuple[str, Mapping[str, str], "Future[tuple[str | None, float]]"]


class Locator:
    """The redirects of URLs a caller downloads soon, asked on ``jobs`` threads of its own
    while the caller downloads others (:meth:`HttpClient.locate`, one HEAD each).

    A file whose URL answers with a redirect to another host (an LFS file of Hugging
    Face: the API, then a CDN) costs two round trips; asked ahead, it costs one at its
    turn, and the two halves of many files overlap. :meth:`ahead` names the URLs coming
    next (each is asked once); :meth:`take` gives where one leads, waiting for an answer
    on its way, or ``None``: never asked, no redirect, failed, or answered more than
    ``fresh`` seconds ago (a signed URL expires). Then the caller downloads the URL
    itself, and reports its errors as always.
    """

    def __init__(self, http: HttpClient, jobs: int = 16, fresh: float = 60.0) -> None:
        self._http = http
        self._jobs = max(1, jobs)
        self._fresh = fresh
        self._lock = threading.Lock()
        self._asked: dict[str, Future[tuple[str | None, float]]] = {}
        self._seen: set[str] = set()  # asked or taken: never asked again
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._threads = 0

    def ahead(self, requests: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        """Ask where each of ``requests`` (URL, headers) leads, unless asked or taken before."""
        with self._lock:
            for url, headers in requests:
                if url in self._seen:
                    continue
                self._seen.add(url)
                fut: Future[tuple[str | None, float]] = Future()
                self._asked[url] = fut
                self._queue.put((url, headers, fut))
            while self._threads < min(self._jobs, len(self._asked)):
                self._threads += 1
                threading.Thread(target=self._work, daemon=True, name="wgtpm-locate").start()

    def take(self, url: str) -> str | None:
        """Where ``url`` leads, if it was asked ahead and answered with a redirect lately."""
        with self._lock:
            self._seen.add(url)
            fut = self._asked.pop(url, None)
        if fut is None:
            return None
        while True:
            try:
                location, when = fut.result(timeout=0.1)
                break
            except FutureTimeout:
                _interrupt.check()
        if location is None or time.monotonic() - when > self._fresh:
            return None
        return location

    def _work(self) -> None:
        while True:
            url, headers, fut = self._queue.get()
            location: str | None = None
            try:
                location = self._http.locate(url, headers=headers)
            except Exception:  # the download asks the URL itself and reports what it gets
                location = None
            finally:
                fut.set_result((location, time.monotonic()))
