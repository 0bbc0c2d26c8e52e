"""The HTTP client of wgtpm: reads with retries and limits, streams, and writes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .. import _interrupt
from ._body import buffered, read_capped
from ._credentials import Credential, register_userinfo
from ._errors import HTTPStatusError, TransportError, network_errors
from ._pace import Deadline, MinRate, Pace
from ._redirects import REDIRECTS
from ._retrying import IDEMPOTENT, Retries
from ._sender import Sender
from ._settings import DOWNLOAD_READ, MAX_ERROR_BODY, MAX_METADATA, HttpOptions

if TYPE_CHECKING:
    import httpx

__all__ = ["Body", "HttpClient"]

#: A request body for :meth:`HttpClient.send`: bytes, or a function giving the chunks of a stream.
Body: TypeAlias = bytes | Callable[[], Iterable[bytes]] | None


class HttpClient:
    """A thread-safe HTTP client; one per command is plenty.

    Reads (:meth:`get`, :meth:`get_bytes`, :meth:`stream`) and writes
    (:meth:`send`) are this class's; each request, its redirects and its
    errors are its :class:`Sender`'s, and when to try again is its :class:`Retries`'.
    """

    def __init__(self, opts: HttpOptions | None = None, transport: Any = None) -> None:
        self.opts = opts or HttpOptions()
        self._sender = Sender(self.opts, transport)
        self._retries = Retries(self.opts)

    def close(self) -> None:
        self._sender.close()

    def expect(self, url: str, count: int) -> None:
        """Say that ``count`` requests to the host of ``url`` are about to be sent at once,
        so that, if they are this client's first, their connections are opened while the
        HTTP stack loads rather than one after the other."""
        self._sender.expect(url, count)

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        ok: Collection[int] = (200,),
        method: str = "GET",
        limit: int = MAX_METADATA,
        file: bool = False,
        follow: bool = True,
    ) -> httpx.Response:
        """GET ``url`` with retries; the body is read, at most ``limit`` decoded bytes of it.
        Redirects are followed unless not ``follow`` (then one is an answer like any other).

        Raises :class:`HTTPStatusError` unless the status is in ``ok``,
        :class:`ResponseTooLargeError` for a longer body, and
        :class:`DeadlineExceededError` when it all takes longer than
        ``HttpOptions.deadline`` (the waits between tries not counted). With
        ``file`` the body is a file's bytes, not metadata: instead of the deadline,
        each try must keep ``HttpOptions.min_rate`` bytes a second (:class:`_MinRate`).
        """
        pace: Pace = (
            MinRate(url, self.opts.min_rate, self.opts.rate_window)
            if file
            else Deadline(url, self.opts.deadline)
        )
        attempt = 0
        while True:
            pace.begin()
            try:
                with self._sender.open(method, url, headers, params, follow) as resp:
                    if resp.status_code in ok:
                        body = read_capped(resp, limit, pace)
                        return buffered(resp, body)
                    body = read_capped(resp, MAX_ERROR_BODY, pace, cut=True)
                    if (
                        not self._retries.retryable(resp.status_code)
                        or attempt >= self.opts.retries
                    ):
                        raise HTTPStatusError(resp.status_code, str(resp.url), resp.headers, body)
                    rh: Mapping[str, str] | None = resp.headers
                    why = f"HTTP {resp.status_code}"
            except network_errors() as exc:
                _interrupt.check()
                err = exc if isinstance(exc, TransportError) else self._sender.error(url, exc)
                if not self._retries.again(err, url, attempt, exc):
                    raise self._retries.gave_up(err, url, attempt + 1) from exc
                rh, why = None, err.reason
            pace.check()  # out of time: no wait, no other try
            slept = time.monotonic()
            self._retries.sleep(attempt, rh, url, why)
            pace.waited(time.monotonic() - slept)
            attempt += 1

    def locate(self, url: str, *, headers: Mapping[str, str] | None = None) -> str | None:
        """Where ``url`` redirects to, asked with a HEAD (retried as :meth:`get`) and checked
        as every redirect is (:meth:`Sender.target`); ``None`` when the answer is no
        redirect. :class:`HTTPStatusError` for an answer that is neither a redirect nor 200.

        A caller that knows a file comes by redirect (an LFS file of Hugging Face) asks
        ahead, so that its download costs one round trip instead of two."""
        ok = REDIRECTS | {200}
        resp = self.get(url, headers=headers, method="HEAD", ok=ok, follow=False)
        location = resp.headers.get("location")
        if resp.status_code == 200 or location is None:
            return None
        return self._sender.target(url, url, location)

    def get_bytes(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        limit: int = MAX_METADATA,
        file: bool = False,
    ) -> bytes:
        """The body of a 200 answer to GET ``url``, at most ``limit`` bytes (see :meth:`get`)."""
        return self.get(url, headers=headers, limit=limit, file=file).content

    @contextlib.contextmanager
    def stream(
        self, url: str, *, headers: Mapping[str, str] | None = None, offset: int = 0
    ) -> Iterator[httpx.Response]:
        """GET ``url`` for streaming, from byte ``offset``; yields a 200 or 206 response.

        Retries happen only before the body starts; a cut in the middle of
        the body is the caller's to resume with a new ``offset``. An
        identity-encoded body is read :data:`DOWNLOAD_READ` bytes at a time
        (as the socket has them), so ``iter_bytes`` yields chunks up to that size.
        """
        hdrs = dict(headers or {})
        if offset:
            hdrs["Range"] = f"bytes={offset}-"
        attempt = 0
        while True:
            stack = contextlib.ExitStack()
            try:
                resp = stack.enter_context(self._sender.open("GET", url, hdrs, None))
            except TransportError as exc:
                stack.close()
                _interrupt.check()
                if not self._retries.again(exc, url, attempt, exc):
                    raise self._retries.gave_up(exc, url, attempt + 1) from exc
                self._retries.sleep(attempt, None, url, exc.reason)
                attempt += 1
                continue
            with stack:
                if resp.status_code in (200, 206):
                    from .._httptransport import BODY, Body

                    body = resp.extensions.get(BODY)
                    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
                    if isinstance(body, Body) and encoding in ("", "identity"):
                        body.read_more(DOWNLOAD_READ)  # until the body closes
                    yield resp
                    return
                body = read_capped(resp, MAX_ERROR_BODY, None, cut=True)
                if not self._retries.retryable(resp.status_code) or attempt >= self.opts.retries:
                    raise HTTPStatusError(resp.status_code, str(resp.url), resp.headers, body)
                rh = resp.headers
            self._retries.sleep(attempt, rh, url, f"HTTP {resp.status_code}")
            attempt += 1

    # ---- writes (publishing): apart from the read path above ---------------------

    def send(
        self,
        method: str,
        url: str,
        *,
        content: Body = None,
        headers: Mapping[str, str] | None = None,
        credentials: Iterable[Credential] = (),
        retry: bool | None = None,
        limit: int = MAX_METADATA,
    ) -> httpx.Response:
        """Send one request with a body (POST, PUT, PATCH, DELETE); any status is answered.

        ``content`` is bytes, or a function that gives the body's chunks (a
        file streamed while it uploads; called again for each try; set
        ``Content-Length`` in ``headers`` or it goes chunked). Each of
        ``credentials`` adds its header when the URL has its origin
        (:meth:`Credential.headers_for`). No redirect is followed (a token
        must not follow it, and a redirected body would be lost): a 3xx is
        answered like any other status. A network error, a 5xx or a 429 is
        retried as :meth:`get` retries only for an idempotent request:
        ``retry=None`` takes HTTP's word (PUT and DELETE are, POST and PATCH
        are not); a caller that knows better says ``True`` or ``False``. Of the answer at
        most ``limit`` bytes of a 2xx body are read
        (:class:`ResponseTooLargeError` beyond), :data:`MAX_ERROR_BODY` of another.

        Raises :class:`TransportError` (naming the method and URL, secrets
        redacted) when no complete answer came back.
        """
        client = self._sender.client(url)  # made at the first request (httpx imported then)
        import httpx

        register_userinfo(url)
        hdrs = dict(headers or {})
        for cred in credentials:
            hdrs.update(cred.headers_for(url))
        if retry is None:
            retry = method.upper() in IDEMPOTENT
        attempt = 0
        while True:
            _interrupt.check()
            live = self._sender.watch.begin(method, url)
            rh: Mapping[str, str] | None = None
            try:
                body = content() if callable(content) else content
                req = client.build_request(method, url, headers=hdrs, content=body)
                resp = client.send(req, stream=True)
                live.answered(resp)
                try:
                    ok = 200 <= resp.status_code < 300
                    data = read_capped(resp, limit if ok else MAX_ERROR_BODY, None, cut=not ok)
                finally:
                    resp.close()
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                live.fail(type(exc).__name__)
                err = self._sender.error(url, exc, method)
                if not retry or err.final or attempt >= self.opts.retries:
                    raise err from exc
                why = err.reason
            else:
                if not (
                    retry
                    and self._retries.retryable(resp.status_code)
                    and attempt < self.opts.retries
                ):
                    return buffered(resp, data)
                rh, why = resp.headers, f"HTTP {resp.status_code}"
            finally:
                self._sender.watch.end(live)
            self._retries.sleep(attempt, rh, url, why, method)
            attempt += 1
