"""httpx's transport for :class:`wgtpm.httpclient.HttpClient`, with reads a download may enlarge.

httpx's ``HTTPTransport`` over httpcore's connection pool, but with a network
backend whose sockets (:class:`Stream`) read ``read_size`` bytes at a time
while it is set: httpcore asks 64 KiB a read, and each read costs a pass
through h11 and httpx, which dominates a loopback download's Python time.
:meth:`~wgtpm.httpclient.HttpClient.stream` sets it for the body of a download.
A download's body of :data:`RAW_MIN` bytes or more skips h11 after its first
chunk (:class:`Body`; the connection is still kept for the next request), and
:class:`BodyReader` reads such a body straight into a file (spliced from a
plain socket) or into the caller's buffers (from the socket, TLS or not).
httpcore's exceptions are raised as the httpx exceptions of the same name,
as httpx's own transport does.

Imported only when a client is made (httpx is not imported by a no-op command).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import httpcore
import httpx

from . import _preconnect
from ._compat import h11 as _h11
from ._compat.httpcore import Pool, h11_state, sync_stream
from ._fs import pwrite_all

__all__ = [
    "PIPE_SIZE",
    "RAW_MIN",
    "Backend",
    "BodyReader",
    "LazyTLS",
    "Stream",
    "TooLong",
    "Transport",
    "downloaded",
    "transport",
]

RAW_MIN = 1 << 20  # bodies of this many bytes or more are read past h11 by a download
PIPE_SIZE = 1 << 20  # bytes moved per splice of such a body (the pipe's size)
BODY = "wgtpm.body"  # the response's extension holding its Body


def transport(limits: httpx.Limits) -> httpx.BaseTransport:
    """httpx's transport over httpcore's pool, with sockets whose reads a download may enlarge."""
    pool = Pool(
        ssl_context=LazyTLS(),  # type: ignore[arg-type]  # Stream.start_tls takes its context
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=Backend(httpcore.SyncBackend()),
    )
    return Transport(pool)


class LazyTLS:
    """The pool's TLS context, made when the first TLS connection starts.

    Making it (httpx's: the CA bundle of ``SSL_CERT_FILE``, ``SSL_CERT_DIR`` or
    certifi) loads and parses every root certificate, about 50 ms, which a command
    that talks plain HTTP only (a registry or proxy on the local network, loopback)
    never needs. httpcore sets the ALPN protocols on the pool's context before each
    TLS handshake, then hands it to :meth:`Stream.start_tls`, which takes the real
    one from here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ctx: ssl.SSLContext | None = None
        self._alpn: list[str] | None = None

    def set_alpn_protocols(self, protocols: list[str]) -> None:
        self._alpn = list(protocols)

    def context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ctx is None:
                self._ctx = httpx.create_ssl_context()
            if self._alpn is not None:
                self._ctx.set_alpn_protocols(self._alpn)
            return self._ctx


class Stream(httpcore.NetworkStream):
    """A socket stream of httpcore whose reads ask for ``read_size`` bytes when it is set.

    httpcore asks 64 KiB a read; :meth:`HttpClient.stream` sets ``read_size`` on the
    connection of a download while its body streams (:meth:`Body.read_more`: a socket
    read returns what has arrived, up to that), and the body clears it as it closes,
    before the connection goes back to the pool. ``sock`` is the socket a body may be
    read from directly (:class:`BodyReader`): a TCP one, or the TLS one over it
    (``None`` for TLS inside a proxy's TLS, which memory BIOs decrypt).
    """

    def __init__(self, inner: Any, sock: socket.socket | None = None) -> None:
        self._inner = inner
        self.sock = sock
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
        if isinstance(ssl_context, LazyTLS):
            ssl_context = ssl_context.context()
        inner = self._inner.start_tls(ssl_context, server_hostname, timeout)
        over_tcp = type(self.sock) is socket.socket  # then the TLS socket reads into buffers
        return Stream(inner, inner.get_extra_info("socket") if over_tcp else None)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def recv_into(self, view: memoryview, timeout: float | None) -> int:
        """Read what has come, up to ``len(view)`` bytes, into ``view`` (decrypted, on TLS);
        how many (0: the peer closed). Errors are httpcore's, as :meth:`read`'s."""
        if self.sock is None:
            data = self._inner.read(len(view), timeout)
            view[: len(data)] = data
            return len(data)
        try:
            self.sock.settimeout(timeout)
            return self.sock.recv_into(view)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def splice(
        self, pipe: tuple[int, int], fd: int, offset: int, count: int, timeout: float | None
    ) -> int:
        """Move up to ``count`` bytes (at most a pipe's worth) of a plain TCP socket into
        file ``fd`` at ``offset`` without copying them through this process (``splice``
        through ``pipe``: the kernel hands the socket's pages to the pipe, and copies them
        once into the page cache); how many (0: the peer closed). A socket error is
        httpcore's ``ReadError`` (or ``ReadTimeout``); an error writing the file is the
        ``OSError`` it is."""
        assert self.sock is not None
        r, w = pipe
        while True:
            try:
                n = os.splice(
                    self.sock.fileno(), w, min(count, PIPE_SIZE), flags=os.SPLICE_F_NONBLOCK
                )
                break
            except BlockingIOError:
                if not _readable(self.sock, timeout):
                    raise httpcore.ReadTimeout("timed out") from None
            except OSError as exc:
                raise httpcore.ReadError(str(exc)) from exc
        left = n
        while left:
            left -= os.splice(r, fd, left, offset_dst=offset + n - left)
        return n


class TooLong(Exception):
    """A body longer than the room it was given (:class:`BodyReader`); nothing past the
    room was handed over."""


def downloaded(resp: httpx.Response) -> int:
    """Bytes of ``resp``'s body that have come so far: httpx's count, plus what a
    :class:`BodyReader` read from the socket past it."""
    body = resp.extensions.get(BODY)
    return resp.num_bytes_downloaded + (body.past if isinstance(body, Body) else 0)


class BodyReader:
    """The body of a download's response, at most ``room`` bytes (a longer one raises
    :class:`TooLong` before its excess is handed over), read piece by piece into a
    file (:meth:`into_file`) or into the caller's memory (:meth:`into`), as the
    caller chooses for each piece.

    Its first chunk comes through h11 and httpx. After it, a large body on a socket
    (:attr:`Body.raw`) is read past them: :meth:`into_file` splices it from a plain
    TCP socket (no copy through this process), :meth:`into` has the socket read into
    the caller's buffer (decrypting into it, on TLS); any other body is copied from
    the chunks httpx yields. Once the whole body has come, h11 is told, and the
    connection goes back to the pool. Use it as a context manager (it may own a pipe).
    """

    def __init__(self, resp: httpx.Response, room: int) -> None:
        length = _content_length(resp.headers.raw)
        if length is not None and length > room:
            raise TooLong(f"{length} bytes where {room} were asked for")
        self._request = resp.request
        self._room = room
        self._got = 0
        self._chunks = resp.iter_bytes()
        self._held = memoryview(b"")
        self._hold(next(self._chunks, b""))
        body = resp.extensions.get(BODY)
        self._body = body if isinstance(body, Body) else None
        self._net = body.raw if isinstance(body, Body) else None
        self._left = body.take() if isinstance(body, Body) and self._net is not None else 0
        self._ended = False
        self._pipe: tuple[int, int] | None = None
        self._timeout = resp.request.extensions.get("timeout", {}).get("read")

    def __enter__(self) -> BodyReader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None

    def _hold(self, chunk: bytes) -> None:
        if self._got + len(chunk) > self._room:
            raise TooLong(f"more than the {self._room} bytes asked for")
        self._got += len(chunk)
        self._held = memoryview(chunk)

    def _take_held(self, most: int) -> memoryview:
        """Up to ``most`` bytes that came through httpx (the first chunk, or any chunk of a
        body read through it); empty once the body has ended."""
        if not self._held and self._net is None:
            self._hold(next(self._chunks, b""))
        out, self._held = self._held[:most], self._held[most:]
        return out

    def _end(self) -> int:
        if not self._ended:
            self._ended = True
            for _ in self._chunks:  # nothing is left: the body ends for h11 too
                pass
        return 0

    def into_file(self, fd: int, at: int, most: int) -> int:
        """Write up to ``most`` of the next bytes into file ``fd`` at ``at``; how many (0:
        the body has ended)."""
        net = self._net
        if self._held or net is None:
            chunk = self._take_held(most)
            pwrite_all(fd, chunk, at)
            return len(chunk)
        if not self._left:
            return self._end()
        with _httpx_errors(self._request):
            if type(net.sock) is socket.socket and hasattr(os, "splice"):
                if self._pipe is None:
                    self._pipe = _pipe()
                return self._count(
                    net.splice(self._pipe, fd, at, min(most, self._left), self._timeout)
                )
            data = net.read(min(most, self._left, PIPE_SIZE), self._timeout)  # TLS: decrypted here
            n = self._count(len(data))
            pwrite_all(fd, memoryview(data), at)
            return n

    def into(self, view: memoryview) -> int:
        """Read the next bytes into the start of ``view``, up to its length; how many (0:
        the body has ended)."""
        net = self._net
        if self._held or net is None:
            chunk = self._take_held(len(view))
            view[: len(chunk)] = chunk
            return len(chunk)
        if not self._left:
            return self._end()
        with _httpx_errors(self._request):
            return self._count(net.recv_into(view[: self._left], self._timeout))

    def _count(self, n: int) -> int:
        if n == 0:
            raise httpcore.RemoteProtocolError(
                "peer closed connection without sending complete message body: "
                f"{self._left} bytes short"
            )
        if n > self._left:  # a read of more than was asked (TLS reads what it has)
            raise TooLong(f"more than the {self._room} bytes asked for")
        self._left -= n
        if self._body is not None:
            self._body.past += n
        return n


def _pipe() -> tuple[int, int]:
    import fcntl

    r, w = os.pipe()
    with contextlib.suppress(OSError):  # a larger pipe: fewer, larger moves
        fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    return r, w


def _readable(sock: socket.socket, timeout: float | None) -> bool:
    p = select.poll()
    p.register(sock.fileno(), select.POLLIN)
    return bool(p.poll(None if timeout is None else timeout * 1000))


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
        sock = _preconnect.take(host, port, timeout) if local_address is None else None
        if isinstance(sock, OSError):  # the connect failed: raised as httpcore's connect does,
            try:  # from inside the handler, so that the cause stays the context too (the pool
                raise sock  # raises its errors "from None")
            except OSError as exc:
                if isinstance(exc, TimeoutError):
                    raise httpcore.ConnectTimeout(exc) from exc
                raise httpcore.ConnectError(exc) from exc
        if sock is not None:  # opened while httpx was loading
            with contextlib.suppress(OSError):  # as httpcore's own connect sets them
                for option in socket_options or ():
                    sock.setsockopt(*option)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                inner = sync_stream(sock)
                if inner is not None:
                    return Stream(inner, sock)
            sock.close()
        inner = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return Stream(inner, inner.get_extra_info("socket"))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> Stream:
        inner = self._inner.connect_unix_socket(path, timeout, socket_options)
        return Stream(inner, inner.get_extra_info("socket"))

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
        net = resp.extensions.get("network_stream")
        length = _content_length(resp.headers) if request.method != "HEAD" else None
        body = Body(resp.stream, request, net if isinstance(net, Stream) else None, length)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=body,
            extensions={**resp.extensions, BODY: body},  # httpx wraps the stream it is given
        )

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Body(httpx.SyncByteStream):
    """A response body of :class:`Transport` (an httpx ``SyncByteStream``).

    A download's body of :data:`RAW_MIN` bytes or more skips h11. h11 copies every
    byte it is given twice (into its buffer, then out of it), and on loopback
    those copies cost as much as hashing the bytes. So once the first chunk of a
    body of a known length has come through h11 (what h11 buffered beyond the
    head, or its first read: after it, h11 holds nothing, as it hands over all it
    holds up to the body's length), and while a download has set its stream's
    ``read_size``, the rest is read from the socket as it comes (or by the
    caller: :meth:`take`, :class:`BodyReader`), counted against
    ``Content-Length``. Once all of it has come, h11 is told so
    (:func:`_h11_read_outside`), so the message ends and httpcore pools the
    connection for the next request, as after a body h11 read itself; a body cut
    short closes it. (Before h11 was told, each such body closed its connection,
    which cost a new connection per range: the threshold was 64 MiB then.)
    """

    def __init__(
        self,
        inner: Any,
        request: httpx.Request,
        net: Stream | None = None,
        length: int | None = None,
    ) -> None:
        self._inner = inner
        self._request = request
        self._net = net
        self._length = length
        self._first = -1  # bytes of the first chunk, once it has come through h11
        self._taken = False
        self.past = 0  # bytes a BodyReader read from the socket itself, which httpx never saw

    @property
    def raw(self) -> Stream | None:
        """The socket the rest of the body is read from past h11, or ``None`` (h11 reads it)."""
        net, length = self._net, self._length
        if net is None or length is None or not net.read_size or length < RAW_MIN:
            return None
        return net

    def take(self) -> int:
        """Leave the rest of the body, after its first chunk, to the caller, who reads it
        from the socket (:attr:`raw`) itself; returns how many bytes that is. Iterating
        on after the caller has read them ends the body."""
        assert self._first >= 0 and self.raw is not None and self._length is not None
        self._taken = True
        return self._length - self._first

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors(self._request):
            chunks = iter(self._inner)
            first = next(chunks, b"")
            self._first = len(first)
            if first:
                yield first
            net, length = self.raw, self._length
            if net is None or length is None:
                yield from chunks
                return
            left = length - len(first)
            if not self._taken:
                timeout = self._request.extensions.get("timeout", {}).get("read")
                while left > 0:
                    chunk = net.read(min(net.read_size, left), timeout)
                    if not chunk:
                        raise httpcore.RemoteProtocolError(
                            "peer closed connection without sending complete message body: "
                            f"received {length - left} bytes, expected {length}"
                        )
                    left -= len(chunk)
                    yield chunk
            if _h11_read_outside(self._inner, length - len(first)):
                for extra in chunks:  # h11 ends the message: no byte comes here
                    if extra:
                        raise httpcore.RemoteProtocolError("a byte after the body's end")

    def read_more(self, n: int) -> None:
        """Read the body ``n`` bytes a socket read (a download's; see :class:`Stream`)
        until it is closed."""
        if self._net is not None:
            self._net.read_size = n

    def close(self) -> None:
        # The reads go back to their size before the connection goes back to the pool: a
        # request on it from another thread may set its own at once.
        if self._net is not None:
            self._net.read_size = 0
        with _httpx_errors(self._request):
            self._inner.close()


def _h11_read_outside(stream: Any, n: int) -> bool:
    """Tell the h11 state of ``stream``'s connection that the last ``n`` bytes of the body
    it is reading were read past it, so that it ends the message and httpcore keeps the
    connection; whether it was told.

    h11 has no call for this: :mod:`wgtpm._compat.h11` sets what its reader has left,
    reached through httpcore's pool stream and connection (:mod:`wgtpm._compat.httpcore`).
    Where either is not what this was written against, nothing is touched and the
    connection is closed after the body, as it would be without this.
    """
    conn = h11_state(stream)
    return conn is not None and _h11.read_outside(conn, n)


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The body's length from ``Content-Length`` (one value, digits), else None (chunked,
    unknown, or malformed: then h11 reads the body, and judges it)."""
    values = [v for k, v in headers if k.lower() == b"content-length"]
    if len(values) != 1 or not values[0].strip().isdigit():
        return None
    if any(k.lower() == b"transfer-encoding" for k, _ in headers):
        return None
    return int(values[0])


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
