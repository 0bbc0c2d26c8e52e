"""One request, its redirects followed safely, over the httpx client made at the first one."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .. import _interrupt
from .._compat.httpx import import_httpx
from ._body import read_capped
from ._credentials import netrc_authorization, origin, register_userinfo, shown_target
from ._errors import RedirectError, RedirectRefusedError, TransportError, transport_error
from ._redirects import REDIRECTS, forwarded, internal, redirect_target
from ._settings import MAX_ERROR_BODY, HttpOptions
from ._watch import Watch

if TYPE_CHECKING:
    import httpx

__all__ = ["Sender"]


class Sender:
    """What every request of an :class:`~wgtpm.httpclient.HttpClient` goes through: the
    httpx client (made at the first request), the requests in flight (:class:`Watch`),
    the redirects (:meth:`open`) and the translation of httpx's errors (:meth:`error`)."""

    def __init__(self, opts: HttpOptions, transport: Any = None) -> None:
        self.opts = opts
        self._transport = transport
        self._httpx: httpx.Client | None = None  # made at the first request (client)
        self._making = threading.Lock()
        self._closed = False
        self.watch = Watch(opts)

    def client(self, url: str) -> httpx.Client:
        """The httpx client, made at the first request, to ``url``: first a TCP connection
        to its host is started (:mod:`wgtpm._preconnect`), so that it comes up while httpx
        and httpcore are imported, then those are."""
        client = self._httpx
        if client is not None:
            return client
        with self._making:
            if self._httpx is None:
                if self._closed:
                    raise RuntimeError("this HTTP client is closed")
                connect = min(10.0, self.opts.timeout)
                if self._transport is None:
                    from .. import _preconnect

                    _preconnect.ahead(url, connect)
                httpx = import_httpx()
                from .. import _httptransport

                limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
                transport = self._transport
                self._httpx = httpx.Client(
                    follow_redirects=False,
                    timeout=httpx.Timeout(self.opts.timeout, connect=connect),
                    transport=transport
                    if transport is not None
                    else _httptransport.transport(limits),
                    headers={"User-Agent": self.opts.user_agent},
                    limits=limits,
                )
            return self._httpx

    def expect(self, url: str, count: int) -> None:
        """``count`` requests to the host of ``url`` are about to start at once: when they
        will be the first, open that many connections ahead (:mod:`wgtpm._preconnect`)."""
        if self._httpx is None and self._transport is None and not self._closed:
            from .. import _preconnect

            _preconnect.ahead(url, min(10.0, self.opts.timeout), count)

    def close(self) -> None:
        self.watch.stop()
        with self._making:
            client, self._httpx, self._closed = self._httpx, None, True
        if client is not None:
            client.close()
        if self._transport is None:
            from .. import _preconnect

            _preconnect.drop()

    @contextlib.contextmanager
    def open(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | None,
        params: Mapping[str, str] | None,
        follow: bool = True,
    ) -> Iterator[httpx.Response]:
        """One request with redirects followed safely; the response is streamed. Without
        ``follow`` a redirect is the response (:meth:`target` checks where it leads)."""
        client = self.client(url)  # made at the first request (httpx imported then)
        import httpx

        register_userinfo(url)
        hdrs = dict(headers or {})
        if not any(k.lower() == "authorization" for k in hdrs):
            auth = netrc_authorization(url)
            if auth:
                hdrs["Authorization"] = auth
        cur, cur_params = url, params
        for _ in range(self.opts.max_redirects + 1):
            _interrupt.check()
            send = forwarded(hdrs, url, cur)
            live = self.watch.begin(method, cur)
            try:
                try:
                    req = client.build_request(method, cur, headers=send, params=cur_params)
                except httpx.InvalidURL as exc:
                    live.fail(type(exc).__name__)
                    raise self.error(cur, exc) from exc
                try:
                    resp = client.send(req, stream=True)
                except httpx.InvalidURL as exc:
                    # httpx parses a redirect's Location, whether it follows redirects or not
                    live.fail(type(exc).__name__)
                    raise RedirectError(
                        url,
                        cur,
                        f"refused a redirect: the server's Location is not a valid URL ({exc})",
                    ) from exc
                except httpx.HTTPError as exc:
                    live.fail(type(exc).__name__)
                    raise self.error(cur, exc) from exc
                live.answered(resp)
                if follow and resp.status_code in REDIRECTS and "location" in resp.headers:
                    # read to the end (it is small) so the connection is kept for the next request
                    with contextlib.suppress(httpx.HTTPError):
                        read_capped(resp, MAX_ERROR_BODY, None, cut=True)
                    resp.close()
                    cur, cur_params = self.target(url, cur, resp.headers["location"]), None
                    continue
                try:
                    yield resp
                finally:
                    resp.close()
                return
            finally:
                self.watch.end(live)
        raise RedirectError(
            url,
            cur,
            f"more than {self.opts.max_redirects} redirects in a row (the last to "
            f"{shown_target(cur)}): the server redirects in a loop; tell its owner",
        )

    @staticmethod
    def target(start: str, cur: str, location: str) -> str:
        """The URL a redirect from ``cur`` (of a request begun at ``start``) to ``location``
        leads to, if it may be followed: :class:`RedirectError` for a URL that is not
        ``http`` or ``https``, :class:`RedirectRefusedError` from a public address to an
        internal one."""
        nxt = redirect_target(start, cur, location)
        if not internal(origin(start)[1]) and internal(origin(nxt)[1]):
            raise RedirectRefusedError(start, nxt)
        return nxt

    def error(self, url: str, exc: Exception, method: str = "GET") -> TransportError:
        """The :class:`TransportError` of a request that failed with httpx's ``exc``."""
        return transport_error(url, exc, self.opts.timeout, method)
