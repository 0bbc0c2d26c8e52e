"""uvicorn's HTTP/1.1 protocol, sending a response's head in one write with its body.

uvicorn writes a response's status line and headers, then its body, as two
writes to the socket, and each write is a trip through the network stack (on
loopback, the receiver's side of it too). A profile of ``registry serve``
answering 64 KiB files to 16 keep-alive clients put 18% of the server's
samples in the head's write and 31% in the body's. :class:`CoalescingTransport`
holds a short write (a head, a small chunk) until the next write or the end
of the event loop's turn, whichever comes first, and sends it with that next
write in one ``writelines`` (one ``writev`` on uvloop). Nothing waits longer
than the turn in which it was written, and the bytes keep their order.

Over httptools, :class:`FastHttpTools` also answers what the app's
:class:`~registry.fastpath.FastPath` holds in memory (a remembered answer and
its body) as soon as a request's head is parsed, without uvicorn's ASGI
request cycle (the scope, a task, the cycle's objects and its ``send``): the
same bytes (:func:`response_head` writes the head as uvicorn does, its
``date`` header included), the same access line and keep-alive handling,
about a fifth less CPU per request (``registry serve``, ``wrk -c16``: 27-36
against 35-49 µs for a 27-byte ``.mod``; benchmarks/README.md). It answers only a GET or HEAD
with no body, no ``Authorization``, ``Range`` or ``X-Forwarded-*`` header
and a plain (unescaped) path, and only when nothing else is in flight on the
connection (pipelined answers keep their order), the connection is open (a
server shutting down has closed its idle ones), its writes are not paused,
and uvicorn runs with no ``root_path``, concurrency limit or access log of
its own (``registry serve`` turns that off: the registry writes its own).
Everything else takes uvicorn's cycle and the app, unchanged. Over h11 (no
httptools) every request does.

``protocol_class()`` is what :func:`registry.server.serve` gives uvicorn: the
protocol uvicorn itself would pick (httptools when installed, else h11) over
that transport.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .accesslog import log_access
from .fastpath import FastPath

__all__ = ["CoalescingTransport", "fast_path_of", "protocol_class", "response_head"]

HOLD = 16 << 10  # writes up to this size wait for the next one (a response's head fits)


class CoalescingTransport:
    """``transport``, holding a short write until the next write or the end of the loop's turn."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._t = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._t.writelines((held, data))
        elif len(data) <= HOLD and not self._t.is_closing():
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self._t.write(data)

    def writelines(self, lines: Iterable[bytes | bytearray | memoryview]) -> None:
        self.flush()
        self._t.writelines(lines)

    def flush(self) -> None:
        """Send what is held now."""
        held = self._held
        if held is not None:
            self._held = None
            if not self._t.is_closing():
                self._t.write(held)

    def write_eof(self) -> None:
        self.flush()
        self._t.write_eof()

    def close(self) -> None:
        self.flush()
        self._t.close()

    def abort(self) -> None:
        self._held = None
        self._t.abort()

    def __getattr__(self, name: str) -> Any:  # the rest of the transport, unchanged
        return getattr(self._t, name)


class CoalescingH11(H11Protocol):
    """uvicorn's h11 protocol over :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        wrapped: Any = CoalescingTransport(transport, self.loop)
        super().connection_made(wrapped)


try:
    import httptools
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
except ImportError:  # httptools is not installed: uvicorn would pick h11 too
    HttpToolsProtocol = None  # type: ignore[assignment,misc]
else:

    class CoalescingHttpTools(HttpToolsProtocol):
        """uvicorn's httptools protocol over :class:`CoalescingTransport`."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            wrapped: Any = CoalescingTransport(transport, self.loop)
            super().connection_made(wrapped)

    class FastHttpTools(CoalescingHttpTools):
        """:class:`CoalescingHttpTools` that sends what the app's :class:`FastPath` holds in
        memory as soon as a request's head is read, with no ASGI request cycle at all."""

        fast: FastPath | None = None
        _answered = False  # the request being parsed was answered here

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not (self.access_log and self.access_logger.isEnabledFor(logging.INFO)):
                self.fast = fast_path_of(self.app)  # unless uvicorn writes access lines too

        def on_headers_complete(self) -> None:
            self._answered = self.fast is not None and self._answer_now(self.fast)
            if not self._answered:
                super().on_headers_complete()

        def on_message_complete(self) -> None:
            if not self._answered:
                super().on_message_complete()

        def _answer_now(self, fast: FastPath) -> bool:
            """Send the request's answer from ``fast``'s memory if it may (see the module's
            docstring); ``False`` when uvicorn's cycle must take it (nothing was sent)."""
            cycle = self.cycle
            if (
                (cycle is not None and not cycle.response_complete)  # answers go out in order
                or self.transport.is_closing()  # shutting down, or closed
                or self.flow.write_paused  # the ASGI cycle waits for the client
                or self.root_path
                or self.limit_concurrency is not None
                or self.parser.should_upgrade()
            ):
                return False
            start = time.perf_counter()
            raw_path = httptools.parse_url(self.url).path
            if b"%" in raw_path or not raw_path.isascii():
                return False
            for name, _ in self.headers:
                if name in APP_HEADERS:
                    return False
            method = self.parser.get_method().decode("ascii")
            path = raw_path.decode("ascii")
            reply = fast.answer_now(method, path, self.headers)
            if reply is None:
                return False
            keep_alive = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
            head = response_head(
                reply.status, self.server_state.default_headers + reply.headers, keep_alive
            )
            if reply.body:
                self.transport.writelines((head, reply.body))
            else:
                self.transport.write(head)
            if not keep_alive:
                self.transport.close()
            self.on_response_complete()  # uvicorn's count, and the keep-alive timeout
            client = self.client[0] if self.client else None
            log_access(method, path, reply.status, len(reply.body), start, client, ua=reply.ua)
            return True


#: request headers that send a request through uvicorn's cycle and the app: a body to
#: read, or client details that uvicorn's proxy-headers middleware rewrites
APP_HEADERS = frozenset(
    [b"content-length", b"transfer-encoding", b"x-forwarded-for", b"x-forwarded-proto"]
)


def response_head(status: int, headers: Iterable[tuple[bytes, bytes]], keep_alive: bool) -> bytes:
    """A response's status line and headers as uvicorn writes them for
    ``http.response.start`` (the server's default headers first: ``date``, any
    configured), for headers that hold no ``connection`` or ``transfer-encoding``."""
    out = [STATUS_LINE[status]]
    for name, value in headers:
        out += (name.lower(), b": ", value, b"\r\n")
    if not keep_alive:
        out.append(b"connection: close\r\n")
    out.append(b"\r\n")
    return b"".join(out)


def fast_path_of(app: object) -> FastPath | None:
    """The :class:`FastPath` of the registry app that uvicorn runs as ``app``, under the
    middleware uvicorn may wrap it in (each holds the next as ``.app``)."""
    for _ in range(8):  # proxy headers, message logger, ...: a few at most
        fast = getattr(app, "fast", None)
        if isinstance(fast, FastPath):
            return fast
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


def protocol_class() -> type[asyncio.Protocol]:
    """The protocol uvicorn would pick (httptools when installed, else h11), coalescing;
    over httptools, answering from the fast path's memory too."""
    if HttpToolsProtocol is None:
        return CoalescingH11
    return FastHttpTools
