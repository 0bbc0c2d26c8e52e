"""One transfer of a byte range, with the one retry policy and the one minimum-rate rule.

A transfer brings the bytes of a file (or of one range of it) from where its
:class:`~wgtpm.sources.FileRequest` says, into a partial file, from what that file
holds already. Two rules hold for every transfer, a whole file's or a range's:

- **retry** (:func:`resuming`): a cut (:class:`Cut`: the connection dropped, the
  server answered another range, the bytes came too slowly) or a
  :class:`~wgtpm._errors.FetchError` (a 5xx answer) is tried again from what was
  written, after the wait :attr:`FetchOptions.resume_policy` gives, up to its
  attempts; then one error says what failed and that running the command again
  resumes. A :class:`Final` error, a missing file and a disk error are not tried
  again.
- **minimum rate** (:class:`RateWindow`): bytes slower than ``min_rate`` a second
  over ``rate_window`` seconds are a cut, so the transfer reconnects (maybe by
  another route), as after a dropped connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from .. import _interrupt
from .. import modfetch as _limits
from .._errors import FetchError, NotFoundError, WgtpmError
from ..cache import _disk_error
from ..sources import FileRequest
from ._options import FetchOptions
from ._partial import Partial
from ._unit import Unit, VersionFile

if TYPE_CHECKING:
    from .._report import Reporter
    from ..httpclient import HttpClient

__all__ = [
    "Again",
    "Cut",
    "Final",
    "Fresh",
    "Host",
    "NoRanges",
    "RateWindow",
    "Unauthorized",
    "http_failure",
    "resuming",
    "transfer",
]

T = TypeVar("T")


class Host(Protocol):
    """What a transfer uses of the fetcher that runs it."""

    opts: FetchOptions
    progress: Reporter

    def http(self) -> HttpClient:
        """The fetcher's one HTTP client."""
        ...


class Cut(WgtpmError):
    """A transfer stopped early; it resumes from what was written."""


class Again(Cut):
    """A transfer is tried again at once, without a wait (a learned URL expired)."""


class Final(FetchError):
    """A transfer failed in a way that trying again cannot help (a redirect loop, a
    redirect to ``file://``, an unknown host: a ``final`` transport error); not resumed."""


class Unauthorized(FetchError):
    """The server answered ``401`` to the request ``used``: its credentials (a token that
    expired) are no longer good; a fresh request may be."""

    used: FileRequest | None = None


class Fresh:
    """A file's request, and how to ask its source for it again after a ``401``
    (``again(stale)``: the source's ``refresh``, which answers ``None`` when the source
    that serves the file cannot renew it; ``again`` ``None``: the source has none). The
    whole-file stream and each range read :attr:`req` at each try; the first range that
    meets a ``401`` renews it, and the others, refused with the same stale request, take
    the new one."""

    def __init__(
        self, req: FileRequest, again: Callable[[FileRequest], FileRequest | None] | None = None
    ) -> None:
        self.req = req
        self._again = again
        self._lock = threading.Lock()

    def renewer(self) -> Callable[[FileRequest], bool] | None:
        """What :func:`resuming` calls on a ``401`` to the request it names (whether there
        is a fresh one); ``None`` when the source has no ``refresh``."""
        return None if self._again is None else self._renew

    def _renew(self, stale: FileRequest) -> bool:
        assert self._again is not None
        with self._lock:
            if self.req is not stale:
                return True  # renewed already, after another range's 401
            req = self._again(stale)
            if req is None:
                return False
            self.req = req
            return True


class NoRanges(WgtpmError):
    """The server does not serve the ranges asked for (ignores Range, other lengths)."""


class RateWindow:
    """The minimum-rate rule of a transfer (:class:`wgtpm.httpclient.RateRule`, the one a
    body read whole keeps too): :meth:`add` raises :class:`Cut` once the bytes of a
    window of ``rate_window`` seconds came slower than ``min_rate`` a second."""

    def __init__(self, opts: FetchOptions) -> None:
        from ..httpclient import RateRule

        self._rule = RateRule(opts.min_rate, opts.rate_window)

    def add(self, n: int) -> None:
        """Count ``n`` bytes that came now."""
        if self._rule.add(n):
            raise Cut(f"{self._rule}; reconnecting")


def _never() -> bool:
    return False


def resuming(
    once: Callable[[], T],
    host: Host,
    vf: VersionFile,
    disk: Path,
    *,
    what: str = "",
    notice: bool = True,
    stopped: Callable[[], bool] = _never,
    renew: Callable[[FileRequest], bool] | None = None,
) -> T | None:
    """Run ``once`` until it returns, under the retry policy (the module's docstring).

    ``what`` follows the file's name in the error of the last try (a range's bytes);
    ``notice``: each retry is told (the one stream of a file; not each range of it);
    ``stopped``: a failure once this is true ends the transfer quietly (``None``: the
    whole file failed, or is done, elsewhere); ``renew``: asks for a fresh request after
    a ``401`` (:meth:`Fresh.renewer`). An ``OSError`` is ``disk``'s.
    """
    policy = host.opts.resume_policy
    attempt = 0
    renewed = False  # the last try was made with a request renewed after a 401
    while True:
        err: WgtpmError
        try:
            return once()
        except Final:
            raise
        except Unauthorized as exc:
            if renew is not None and exc.used is not None:
                if renewed:
                    raise Final(
                        vf.path,
                        vf.version,
                        f"downloading {vf.entry.path}{what}: {exc}, again with fresh "
                        "credentials; check that they may still read it (log in again)",
                    ) from exc
                if renew(exc.used):  # what was written stays; not a try
                    renewed = True
                    continue
            err = exc
        except (FetchError, Cut) as exc:
            err = exc
        except OSError as exc:
            raise _disk_error(exc, disk) from exc
        renewed = False
        if not isinstance(err, Again):
            _interrupt.check()  # a connection cut by Ctrl-C is not worth a retry
            if stopped():
                return None
        if policy.last(attempt):
            raise FetchError(
                vf.path,
                vf.version,
                f"downloading {vf.entry.path}{what}: {err} (gave up after {attempt + 1} "
                "tries; run the command again to resume)",
            ) from err
        if not isinstance(err, Again):
            if notice:
                host.progress.notice(
                    f"{vf.module}: {vf.entry.path}: {err}; resuming "
                    f"(try {attempt + 2} of {policy.attempts})"
                )
            _interrupt.sleep(policy.wait_for(attempt) or 0.0)
        attempt += 1


def http_failure(vf: VersionFile, exc: Exception, used: FileRequest | None = None) -> WgtpmError:
    """What a failed HTTP exchange (an error status, or a transport error) of the request
    ``used`` means to a transfer: a missing file, :class:`Unauthorized`, a :class:`Final`
    error, a cut, or another failure."""
    from ..httpclient import HTTPStatusError

    if isinstance(exc, HTTPStatusError):
        if exc.status in (404, 410):
            return NotFoundError(vf.path, vf.version, f"{vf.entry.path}: {exc}")
        if exc.status == 401:
            err = Unauthorized(vf.path, vf.version, f"{vf.entry.path}: {exc}")
            err.used = used
            return err
        return FetchError(vf.path, vf.version, f"{vf.entry.path}: {exc}")
    if getattr(exc, "final", False):
        return Final(vf.path, vf.version, f"{vf.entry.path}: {exc}")
    return Cut(f"{type(exc).__name__}: {exc}")


def transfer(host: Host, vf: VersionFile, unit: Unit, fresh: Fresh, part: Partial) -> bool:
    """Fill ``part`` from ``fresh``'s request as one stream, resuming after cuts; whether
    any bytes were resumed (kept from before)."""
    resumed = False

    def once() -> bool:
        nonlocal resumed
        req = fresh.req
        part.open()
        resumed = resumed or part.have > 0
        try:
            if req.body is not None:
                _copy_body(req.body, vf, unit, part)
            elif req.url.startswith("file:"):
                _copy_local(req.url, vf, unit, part)
            else:
                _stream_http(host, req, vf, unit, part)
        finally:
            part.close()
        return resumed

    return bool(resuming(once, host, vf, part.path, renew=fresh.renewer()))


def _copy_body(body: bytes, vf: VersionFile, unit: Unit, part: Partial) -> None:
    # bytes the source already holds; like a resumed download, they are hashed from the start
    rest = body[part.have :]
    unit.advance(part.have)
    part.write(rest, vf)
    unit.advance(len(rest))


def _copy_local(url: str, vf: VersionFile, unit: Unit, part: Partial) -> None:
    src = Path(unquote(urlsplit(url).path))
    try:
        fin = open(src, "rb")
    except FileNotFoundError as exc:
        raise NotFoundError(
            vf.path, vf.version, f"{vf.entry.path}: not in the file tree ({src})"
        ) from exc
    with fin:
        fin.seek(part.have)
        unit.advance(part.have)
        while chunk := fin.read(_limits.CHUNK):
            _interrupt.check()
            part.write(chunk, vf)
            unit.advance(len(chunk))


def _stream_http(host: Host, req: FileRequest, vf: VersionFile, unit: Unit, part: Partial) -> None:
    from ..httpclient import HTTPStatusError, network_errors

    end = vf.entry.size
    if part.have >= end:
        return
    try:
        # identity encoding: Range offsets and the sha256 are about the stored bytes
        hdrs = {"Accept-Encoding": "identity", **req.headers}
        with host.http().stream(req.url, headers=hdrs, offset=part.have) as resp:
            if part.have and resp.status_code == 200:  # the server ignored Range: start over
                part.restart()
            elif resp.status_code == 206 and not _range_starts_at(
                resp.headers.get("content-range", ""), part.have
            ):
                part.restart()
                raise Cut("the server answered a different range; restarting")
            unit.advance(part.have)
            rate = RateWindow(host.opts)
            for chunk in resp.iter_bytes():
                _interrupt.check()
                part.write(chunk, vf)
                unit.advance(len(chunk))
                rate.add(len(chunk))
    except HTTPStatusError as exc:
        raise http_failure(vf, exc, req) from exc
    except network_errors() as exc:
        raise http_failure(vf, exc) from exc
    if part.have < end:
        raise Cut(f"connection closed after {part.have} of {end} bytes")


def _range_starts_at(content_range: str, offset: int) -> bool:
    # "bytes 100-199/200"
    try:
        return int(content_range.split()[1].split("-")[0]) == offset
    except (IndexError, ValueError):
        return False
