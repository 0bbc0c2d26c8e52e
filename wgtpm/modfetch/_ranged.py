"""Ranged downloads: a large file as parallel ranges written in place, and their pacing.

:func:`fill` decides how a file comes: as up to ``ranges`` parallel ranges where that
pays and the server allows it, else as one stream (:func:`~._transfer.transfer`).
A ranged file starts with :data:`~wgtpm.modfetch.RANGES_FIRST` connections;
:class:`Pace` adds the others once each connection is slow, or at once when the
first range's answer shows a far server (:data:`~wgtpm.modfetch.FAR_ANSWER`). Each range is a transfer
under the one retry policy and rate rule of :mod:`._transfer`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

from .. import _interrupt
from .. import modfetch as _limits
from ..sources import FileRequest
from . import _ranges
from ._partial import Partial
from ._ranges import Ranges
from ._transfer import (
    Again,
    Cut,
    Fresh,
    Host,
    NoRanges,
    RateWindow,
    http_failure,
    resuming,
    transfer,
)
from ._unit import Unit, VersionFile

__all__ = ["Location", "Pace", "fill", "range_size"]


def fill(host: Host, vf: VersionFile, unit: Unit, fresh: Fresh, part: Partial, ranges: int) -> bool:
    """Fill ``part``: as up to ``ranges`` parallel ranges where that pays and the server
    allows it, else as one stream; whether any bytes were resumed."""
    req = fresh.req
    http = req.body is None and req.url.startswith(("http:", "https:"))
    journals = _ranges.present(part.path)
    if not http or ((ranges < 2 or vf.entry.size < _limits.RANGED_MIN) and not journals):
        _ranges.settle(part.path)
        return transfer(host, vf, unit, fresh, part)
    try:
        return _Ranged(host, vf, unit, fresh).run(part, max(2, ranges))
    except NoRanges:
        _ranges.settle(part.path)  # one stream from what the file holds in order
        return transfer(host, vf, unit, fresh, part) or part.have > 0


def range_size(size: int, ranges: int) -> int:
    """The length of each range of a file of ``size`` bytes (whole MiB; the last is shorter)."""
    cell = max(_limits.RANGE_MIN, -(-size // max(1, ranges)))
    return -(-cell // (1 << 20)) << 20


class _Ranged:
    """One file fetched as parallel ranges written in place into its partial file.

    Each range's thread writes its bytes at their offsets and then records how
    many it has in the range's journal (``<sha256>.partial.<start>``, 20 digits),
    so a killed download resumes every range where it stopped. The calling thread
    hashes the file in order as the ranges fill it, while the download goes on, so
    the hash is done soon after the last byte arrives: the bytes next in line from
    memory as they come (written past the page cache, :mod:`wgtpm._direct`), those
    that came ahead of their turn from a map of the page cache.
    A server that answers a range with anything but that range raises
    :class:`NoRanges` (the caller goes on with one stream).
    """

    def __init__(self, host: Host, vf: VersionFile, unit: Unit, fresh: Fresh) -> None:
        self._host, self._vf, self._unit = host, vf, unit
        self._fresh = fresh
        self._where = Location(fresh)
        self._stop = threading.Event()
        self._far = threading.Event()  # a range's answer was slow to come: a far server
        self._threads: list[threading.Thread] = []

    def run(self, part: Partial, ranges: int) -> bool:
        """Fill ``part`` in ``ranges`` ranges (fewer when it resumes on another grid);
        whether any bytes were resumed."""
        size = self._vf.entry.size
        state = Ranges.open(part.path, size, range_size(size, ranges))
        resumed = state.resumed
        pending = state.pending()
        todo, take = iter(pending), threading.Lock()  # the next range a connection fills

        def work() -> None:
            try:
                while not self._stop.is_set():
                    with take:
                        i = next(todo, None)
                    if i is None:
                        return
                    self._fetch_range(state, i)
            except BaseException as exc:  # handed to the thread that hashes
                state.fail(exc)
                self._stop.set()
            finally:
                state.wake()

        def widen(n: int) -> None:
            if self._threads:
                state.line_bound()
            for _ in range(min(n, len(pending) - len(self._threads))):
                th = threading.Thread(target=work, daemon=True)
                self._threads.append(th)
                th.start()

        try:
            self._unit.advance(sum(state.done))
            widen(_limits.RANGES_FIRST)
            pace = Pace(state, lambda: len(self._threads), widen, self._far.is_set)
            h = hashlib.sha256()
            state.hash_in_order(h, pace.tick)
            state.finish()
        finally:
            self._stop.set()
            state.wake()
            if not _interrupt.CANCEL.is_set():
                for th in self._threads:  # nothing may write the file once we go on
                    th.join()
            state.close()
        part.adopt(h, size)
        _ranges.drop_journals(part.path)
        return resumed

    def _fetch_range(self, state: Ranges, i: int) -> None:
        """Fill range ``i`` of ``state`` in place, resuming after cuts."""
        start, end = state.segs[i]
        resuming(
            lambda: self._range_once(state, i),
            self._host,
            self._vf,
            state.path,
            what=f" (bytes {start}-{end - 1})",
            notice=False,
            stopped=self._stop.is_set,
            renew=self._fresh.renewer(),
        )

    def _range_once(self, state: Ranges, i: int) -> None:
        """One try at the rest of range ``i``."""
        from .._httptransport import BodyReader, TooLong
        from ..httpclient import HTTPStatusError, network_errors

        stop, unit, size = self._stop, self._unit, self._vf.entry.size
        start, end = state.segs[i]
        state.drain(i)  # resumed from what was written, not what was in flight
        have = state.done[i]
        if have == end - start:
            return
        used = self._fresh.req
        url, headers = self._where.get()
        hdrs = {"Accept-Encoding": "identity", **headers}
        hdrs["Range"] = f"bytes={start + have}-{end - 1}"
        asked = time.monotonic()
        try:
            with self._host.http().stream(url, headers=hdrs) as resp:
                self._where.learn(str(resp.request.url))
                want = f"bytes {start + have}-{end - 1}/{size}"
                if resp.status_code != 206 or resp.headers.get("content-range") != want:
                    raise NoRanges("the server answered a range with something else")
                if time.monotonic() - asked >= _limits.FAR_ANSWER and not self._far.is_set():
                    self._far.set()
                    state.wake()  # the hasher's pace starts the other ranges now
                rate = RateWindow(self._host.opts)

                def tick(n: int) -> None:
                    unit.advance(n)
                    _interrupt.check()
                    rate.add(n)

                at = start + have
                with BodyReader(resp, end - at) as body:
                    while at < end and not stop.is_set():
                        n = state.fill(i, body, at, stop, tick)
                        if not n:
                            break
                        at += n
        except TooLong as exc:
            raise NoRanges(f"the server sent more than the range asked for ({exc})") from exc
        except HTTPStatusError as exc:
            if self._where.forget(url):  # a learned URL that expired: ask the file's own again
                raise Again(str(exc)) from exc
            if exc.status == 416:
                raise NoRanges(str(exc)) from exc
            raise http_failure(self._vf, exc, used) from exc
        except network_errors() as exc:
            raise http_failure(self._vf, exc) from exc
        if stop.is_set():
            return
        state.drain(i)
        if state.done[i] < end - start:
            raise Cut(f"connection closed after {state.done[i]} of {end - start} bytes of a range")


class Location:
    """Where the ranges of one file are asked for: the file's URL until a range has been
    answered, then the URL its redirects led to (a CDN's signed URL), so that each
    further range skips the redirect (a round trip to the API per range). The headers
    follow the redirect rule (:func:`~wgtpm.httpclient.forwarded`): every one to the
    file's own origin, the safe ones only to another. A learned URL that fails (it
    expired) is forgotten, and the next try asks the file's URL again. The file's request
    is ``fresh``'s at each call (renewed after a ``401``)."""

    def __init__(self, fresh: Fresh) -> None:
        self._fresh = fresh
        self._learned: str | None = None

    @property
    def _req(self) -> FileRequest:
        return self._fresh.req

    def get(self) -> tuple[str, dict[str, str]]:
        from ..httpclient import forwarded

        url = self._learned
        if url is None:
            return self._req.url, dict(self._req.headers)
        return url, forwarded(self._req.headers, self._req.url, url)

    def learn(self, url: str) -> None:
        if url != self._req.url:
            self._learned = url

    def forget(self, url: str) -> bool:
        """Forget ``url`` if it is the learned one; whether it was."""
        if url != self._learned:
            return False
        self._learned = None
        return True


class Pace:
    """How many connections fill a ranged file: :data:`RANGES_FIRST` at first, and one
    per range once a :data:`PACE_WINDOW` shows each connection bringing less than
    :data:`RANGE_SLOW` bytes a second (the line caps each connection, so more
    connections bring more: all of them at once, as each step up costs a round trip
    or two before its bytes come). On a fast line one connection is all it takes,
    and each more one costs CPU the hashing needs, and sends bytes ahead of their
    turn through the page cache (a 1 GiB file on loopback: 8 connections 1.8 s, 2
    connections 1.5 s, before bytes next in line skipped the page cache; then 1
    connection 1.3-1.6 s). A window in which the bytes next in line waited for
    their buffers half the time or more (:meth:`Ranges.waited`: the hash, not the
    line, set the pace) widens nothing, nor does one that lasted :data:`PACE_STALE`
    windows or more and still brought half of :data:`RANGE_SLOW` a connection: the
    machine stopped this process for a while (a 1 GiB get on loopback once saw 29 MB
    in a 0.3 s window, widened, and sent the rest of the file through the page cache,
    as a capped line's are). A capped line's windows last 0.1-0.2 s on a busy machine,
    and one of 50 MB/s a connection is slow whatever its window's length.

    ``far`` says a range's answer took :data:`FAR_ANSWER` or more: then every range
    starts at the next tick, without a window. A far server's connections are capped
    by their round trip, and the window, with the new connects after it, cost a
    311 MB get at 40 ms a request and 50 MB/s a connection about 0.1 s in 1.1 s."""

    def __init__(
        self,
        state: Ranges,
        running: Callable[[], int],
        widen: Callable[[int], None],
        far: Callable[[], bool] = lambda: False,
    ) -> None:
        self._state = state
        self._running = running
        self._widen = widen
        self._far = far
        self._wide = False
        self._since = 0.0
        self._had = state.come()
        self._waited = state.waited()

    def tick(self) -> None:
        if self._wide:
            return
        if self._far():
            self._wide = True
            self._widen(_limits.ALL_RANGES)
            return
        now = time.monotonic()
        have = self._state.come()
        if not self._since:  # the window starts with the first bytes, not the connects
            if have > self._had:
                self._since, self._had = now, have
                self._waited = self._state.waited()
            return
        span = now - self._since
        window, slow = _limits.PACE_WINDOW, _limits.RANGE_SLOW
        if span < window:
            return
        waited = self._state.waited()
        rate = (have - self._had) / span / max(1, self._running())  # a second a connection
        stalled = span >= _limits.PACE_STALE * window and rate >= slow / 2
        if rate < slow and not stalled and waited - self._waited < span / 2:
            self._wide = True
            self._widen(_limits.ALL_RANGES)
        self._since, self._had, self._waited = now, have, waited
