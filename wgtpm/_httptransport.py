"""httpx's transport for :class:`wgtpm.httpclient.HttpClient`, with reads a download may enlarge.

httpx's ``HTTPTransport`` over httpcore's connection pool, but with a network
backend whose sockets (:class:`Stream`) read ``read_size`` bytes at a time
while it is set: httpcore asks 64 KiB a read, and each read costs a pass
through h11 and httpx, which dominates a loopback download's Python time.
:meth:`~wgtpm.httpclient.HttpClient.stream` sets it for the body of a download.
httpcore's exceptions are raised as the httpx exceptions of the same name,
as httpx's own transport does.

Imported only when a client is made (httpx is not imported by a no-op command).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpcore
import httpx

__all__ = ["Backend", "Stream", "Transport", "transport"]


def transport(limits: httpx.Limits) -> httpx.BaseTransport:
    """httpx's transport over httpcore's pool, with sockets whose reads a download may enlarge."""
    pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=Backend(httpcore.SyncBackend()),
    )
    return Transport(pool)


class Stream(httpcore.NetworkStream):
    """A socket stream of httpcore whose reads ask for ``read_size`` bytes when it is set.

    httpcore asks 64 KiB a read; :meth:`HttpClient.stream` sets ``read_size`` on the
    connection of a download while its body streams (a socket read returns what has
    arrived, up to that), and clears it before the connection goes back to the pool.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.read_size = 0

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max(max_bytes, self.read_size), timeout)  # type: ignore[no-any-return]

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Stream:
        return Stream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class Backend(httpcore.NetworkBackend):
    """httpcore's network backend (``SyncBackend``) handing out :class:`Stream` sockets."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> Stream:
        return Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> Stream:
        return Stream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class Transport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool (httpx's ``HTTPTransport`` takes no network
    backend); httpcore's errors become the httpx errors of the same name."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors(request):
            resp = self._pool.handle_request(req)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=Body(resp.stream, request),
            extensions=resp.extensions,
        )

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Body(httpx.SyncByteStream):
    """A response body of :class:`Transport` (an httpx ``SyncByteStream``)."""

    def __init__(self, inner: Any, request: httpx.Request) -> None:
        self._inner = inner
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors(self._request):
            yield from self._inner

    def close(self) -> None:
        with _httpx_errors(self._request):
            self._inner.close()


@contextlib.contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    """httpcore's exceptions as httpx's (``httpcore.ReadTimeout`` -> ``httpx.ReadTimeout``)."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise _as_httpx(exc, httpx.TimeoutException, request) from exc
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError) as exc:
        raise _as_httpx(exc, httpx.TransportError, request) from exc
    except httpcore.UnsupportedProtocol as exc:
        raise httpx.UnsupportedProtocol(str(exc), request=request) from exc


def _as_httpx(exc: Exception, base: type[httpx.HTTPError], request: httpx.Request) -> Exception:
    import httpx

    cls = getattr(httpx, type(exc).__name__, None)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        cls = base
    return cls(str(exc), request=request)  # type: ignore[call-arg]
