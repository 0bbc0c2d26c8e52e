"""The requests in flight: a notice for a slow server, and ``-x``'s line per request."""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING

from .._report import human_size, network, tracing
from ._credentials import shown_url
from ._settings import HttpOptions

if TYPE_CHECKING:
    import httpx

__all__ = ["Live", "Watch"]


class Live:
    """One request in flight: when it last heard from the server, and what it got."""

    def __init__(self, method: str, url: str) -> None:
        self.method = method
        self.url = url
        self.started = self.last = time.monotonic()
        self.status: int | None = None
        self.error: str | None = None
        self.nbytes = 0
        self.noticed = False
        self._resp: httpx.Response | None = None

    def answered(self, resp: httpx.Response) -> None:
        self.status = resp.status_code
        self.last = time.monotonic()
        self.noticed = False
        self._resp = resp

    def fail(self, what: str) -> None:
        self.error = what

    def idle(self, now: float) -> float:
        """Seconds since the server last sent something (headers or body bytes)."""
        resp = self._resp
        if resp is not None:
            from .._httptransport import downloaded

            n = downloaded(resp)
            if n != self.nbytes:
                self.nbytes, self.last, self.noticed = n, now, False
        return now - self.last


class Watch:
    """The requests in flight of one client: says which URL is slow, and traces (``-x``).

    A daemon thread looks at them a few times a second while there are any;
    a request that has heard nothing for ``slow_after`` seconds gets one notice
    (again if it stalls again after more bytes).
    """

    def __init__(self, opts: HttpOptions) -> None:
        self._opts = opts
        self._lock = threading.Lock()
        self._live: set[Live] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def begin(self, method: str, url: str) -> Live:
        live = Live(method, url)
        with self._lock:
            self._live.add(live)
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="http-watch", daemon=True)
                self._thread.start()
        return live

    def end(self, live: Live) -> None:
        with self._lock:
            self._live.discard(live)
        if tracing():
            live.idle(time.monotonic())
            took = (time.monotonic() - live.started) * 1000
            got = live.error or (str(live.status) if live.status is not None else "interrupted")
            got += _range_shown(live)
            network().notice(
                f"{live.method} {shown_url(live.url)} -> {got} ({human_size(live.nbytes)}, "
                f"{took:.0f} ms)"
            )

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._wake.set()

    def _run(self) -> None:
        slow = self._opts.slow_after
        while not self._wake.wait(min(0.25, slow / 4)):
            now = time.monotonic()
            with self._lock:
                live = list(self._live)
            for r in live:
                idle = r.idle(now)
                if idle >= slow and not r.noticed:
                    r.noticed = True
                    what = "no answer" if r.status is None else "no bytes"
                    network().notice(
                        f"{r.method} {shown_url(r.url)}: {what} for {idle:.0f}s, still waiting "
                        f"(up to {self._opts.timeout:g}s: WGTPM_HTTP_TIMEOUT)"
                    )


def _range_shown(live: Live) -> str:
    """`` bytes 30.0 MiB-120.0 MiB of 120.0 MiB``: the part of the file a 206 holds (a
    resumed download), from its ``Content-Range``; ``""`` for any other answer."""
    resp = live._resp
    cr = resp.headers.get("content-range", "") if resp is not None and live.status == 206 else ""
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", cr.strip())
    if m is None:
        return ""
    first, last, total = m.groups()
    of = f" of {human_size(int(total))}" if total != "*" else ""
    return f" bytes {human_size(int(first))}-{human_size(int(last) + 1)}{of}"
