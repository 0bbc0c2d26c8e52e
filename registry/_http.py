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

Both protocols cut a connection whose client stalls (:class:`Watchdog`, with
the app's :class:`~registry.limits.Timeouts`): uvicorn arms its keep-alive
timer only after a response, and any byte received disarms it, so on its own
a socket that never sends a request, a head sent one header line at a time
and a body that stops coming would each hold a connection (and a request's
buffers) for ever. Over httptools, which has no limit of its own, a request
head over :data:`~registry.limits.MAX_REQUEST_HEAD` bytes is refused (431);
h11 refuses one over 16 KiB itself.

``protocol_class()`` is what :func:`registry.server.serve` gives uvicorn: the
protocol uvicorn itself would pick (httptools when installed, else h11) over
that transport.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import h11

from wgtpm._compat.uvicorn import (
    H11_MISSING,
    HTTPTOOLS_MISSING,
    H11Protocol,
    HttpToolsProtocol,
    Watched,
    status_line,
)

from .accesslog import REQUEST_ID_HEADER, log_access, new_request_id
from .fastpath import FastPath
from .limits import MAX_REQUEST_HEAD, Timeouts

__all__ = [
    "CoalescingTransport",
    "Watchdog",
    "fast_path_of",
    "protocol_class",
    "response_head",
    "timeouts_of",
]

HOLD = 16 << 10  # writes up to this size wait for the next one (a response's head fits)
T = TypeVar("T")
log = logging.getLogger("registry.http")

# What a connection waits for (Watchdog): the client's next request, the rest of a
# request's head, more of a body the app reads, the rest of a body whose request was
# answered; or nothing the client owes (the app's turn: no deadline).
IDLE, HEAD, BODY, DRAIN, APP = "idle", "head", "body", "drain", ""


class Watchdog:
    """The deadline of one connection, by what it waits for from the client.

    ``phase()`` says what that is (:data:`IDLE`, :data:`HEAD`, :data:`BODY`,
    :data:`DRAIN` or :data:`APP`) and how many requests the connection has
    begun; :meth:`check` is called after each event (bytes received, a response
    sent). An idle connection gets ``keep_alive`` seconds, a head ``header``
    seconds from its first byte, a body ``body`` seconds from its last byte
    (while the app does not read, the server stops reading and no deadline
    runs out), and what is left of a body after its answer ``drain`` seconds.
    When one passes, the connection is closed.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        timeouts: Timeouts,
        phase: Callable[[], tuple[str, int]],
        reading_paused: Callable[[], bool],
        close: Callable[[str], None],
    ) -> None:
        self._loop = loop
        self._limits = {
            IDLE: timeouts.keep_alive,
            HEAD: timeouts.header,
            BODY: timeouts.body,
            DRAIN: timeouts.drain,
        }
        self._phase = phase
        self._paused = reading_paused
        self._close = close
        self._armed: tuple[str, int] = (APP, -1)
        self._deadline: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def check(self, received: bool = False) -> None:
        """Move the deadline if what the connection waits for changed (or a body's bytes
        came: its deadline runs from the last one). The timer is moved only when the
        deadline comes sooner: a later one is found when the timer fires, so a busy
        keep-alive connection costs a clock read per request, not a new timer."""
        now = self._phase()
        if now == self._armed and not (received and now[0] == BODY):
            return
        self._armed = now
        if now[0] == APP:
            self._deadline = None
            return
        deadline = self._deadline = self._loop.time() + self._limits[now[0]]
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = self._loop.call_at(deadline, self._expired)

    def stop(self) -> None:
        self._deadline = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None:
            return
        if self._loop.time() < deadline:  # moved on since the timer was set
            self._timer = self._loop.call_at(deadline, self._expired)
            return
        now = self._phase()
        # judged afresh: an event that was not reported, or a body the app does not read now
        # (the server stopped reading it: not the client's fault)
        if now != self._armed or (now[0] == BODY and self._paused()):
            self._armed = (APP, -1)
            self.check()
        else:
            limit = self._limits[now[0]]
            self._close(f"no {_WAITED_FOR[now[0]]} within {limit:g} s")


_WAITED_FOR = {
    IDLE: "request",
    HEAD: "complete request head",
    BODY: "byte of the request body",
    DRAIN: "end of the answered request's body",
}


def _cut(protocol: Any, why: str) -> None:
    """Close ``protocol``'s connection, saying why (at debug level: a flood of stalled
    clients must not flood the log)."""
    if not protocol.transport.is_closing():
        client = protocol.client[0] if protocol.client else "?"
        log.debug("closing the connection of %s: %s", client, why)
        protocol.transport.close()


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


class Coalescing(Watched):
    """What both of uvicorn's protocols get (a base before uvicorn's): writes over
    :class:`CoalescingTransport`, and a :class:`Watchdog` on the client."""

    app: Any
    flow: Any
    watchdog: Watchdog

    def wrap_transport(self, transport: asyncio.BaseTransport) -> Any:
        return CoalescingTransport(cast(asyncio.Transport, transport), self.loop)

    def opened(self) -> None:
        self.watchdog = Watchdog(
            self.loop,
            timeouts_of(self.app),
            self._phase,
            lambda: self.flow.read_paused,
            lambda why: _cut(self, why),
        )
        self.watchdog.check()

    def closing(self) -> None:
        self.watchdog.stop()

    def _phase(self) -> tuple[str, int]:
        raise NotImplementedError


class CoalescingH11(Coalescing, H11Protocol):
    """uvicorn's h11 protocol over :class:`CoalescingTransport`, with a :class:`Watchdog`."""

    _cycles = 0  # requests begun on this connection
    _cycle: Any = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self.watchdog.check(received=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.watchdog.check()

    def _phase(self) -> tuple[str, int]:
        cycle = self.cycle
        if cycle is not self._cycle:
            self._cycle, self._cycles = cycle, self._cycles + 1
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if cycle is None or cycle.response_complete:
                return DRAIN, self._cycles
            return (APP if cycle.waiting_for_100_continue else BODY), self._cycles
        if cycle is not None and not cycle.response_complete:
            return APP, self._cycles
        if state is h11.IDLE:
            return (HEAD if self.conn.trailing_data[0] else IDLE), self._cycles
        return APP, self._cycles


if HttpToolsProtocol is not None:  # else httptools is not installed: uvicorn picks h11 too
    import httptools

    class CoalescingHttpTools(Coalescing, HttpToolsProtocol):
        """uvicorn's httptools protocol over :class:`CoalescingTransport`, with a
        :class:`Watchdog` and a limit on a request head's size."""

        _reading = IDLE  # what of a request the parser is in: IDLE (none), HEAD or BODY
        _begun = 0  # requests begun on this connection
        _head_raw = 0  # bytes of the chunks before this one while the head was incomplete
        _chunk = 0  # bytes of the chunk being parsed
        _refused = False  # a head over MAX_REQUEST_HEAD came: nothing more is parsed

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            self._chunk = len(data)
            super().data_received(data)
            self._chunk = 0  # out of data_received: on_response_complete checks
            if self._reading == HEAD:  # httptools keeps what it has of the head meanwhile
                self._head_raw += len(data)
            if self._refused or self._head_raw > MAX_REQUEST_HEAD:
                self._refused = True
                if not self.transport.is_closing():
                    _refuse(self, 431, f"a request head may have at most {MAX_REQUEST_HEAD} bytes")
                return
            self.watchdog.check(received=True)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self._chunk:  # else data_received checks once it is done
                self.watchdog.check()

        def on_message_begin(self) -> None:
            self._reading, self._begun, self._head_raw = HEAD, self._begun + 1, 0
            super().on_message_begin()

        def head_refused(self) -> bool:
            """Whether the head just parsed is refused (over :data:`MAX_REQUEST_HEAD`), or
            one before it was: then no app sees it, and :meth:`data_received` answers 431.
            The head is measured only when the chunks it came in could hold that much."""
            if not self._refused and self._head_raw + self._chunk > MAX_REQUEST_HEAD:
                size = len(self.url) + sum(len(k) + len(v) + 4 for k, v in self.headers)
                self._refused = size > MAX_REQUEST_HEAD
            return self._refused

        def on_headers_complete(self) -> None:
            self._reading = BODY
            if not self.head_refused():
                super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            if not self._refused:
                super().on_body(body)

        def on_message_complete(self) -> None:
            self._reading = IDLE
            if not self._refused:
                super().on_message_complete()

        def _phase(self) -> tuple[str, int]:
            cycle = self.cycle
            if self._reading == HEAD:
                return HEAD, self._begun
            if self._reading == BODY:
                if cycle is None or cycle.response_complete:
                    return DRAIN, self._begun
                return (APP if cycle.waiting_for_100_continue else BODY), self._begun
            if (cycle is not None and not cycle.response_complete) or self.pipeline:
                return APP, self._begun
            return IDLE, self._begun

    class FastHttpTools(CoalescingHttpTools):
        """:class:`CoalescingHttpTools` that sends what the app's :class:`FastPath` holds in
        memory as soon as a request's head is read, with no ASGI request cycle at all."""

        fast: FastPath | None = None
        _answered = False  # the request being parsed was answered here

        def opened(self) -> None:
            super().opened()
            if not (self.access_log and self.access_logger.isEnabledFor(logging.INFO)):
                self.fast = fast_path_of(self.app)  # unless uvicorn writes access lines too

        def on_headers_complete(self) -> None:
            self._answered = (
                self.fast is not None and not self.head_refused() and self._answer_now(self.fast)
            )
            if self._answered:
                self._reading = BODY  # of none: the message completes in the same turn
            else:
                super().on_headers_complete()

        def on_message_complete(self) -> None:
            if self._answered:
                self._reading = IDLE
            else:
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
            rid = new_request_id()
            head = response_head(
                reply.status,
                [
                    *self.server_state.default_headers,
                    *reply.headers,
                    (REQUEST_ID_HEADER, rid.encode()),
                ],
                keep_alive,
            )
            if reply.body:
                self.transport.writelines((head, reply.body))
            else:
                self.transport.write(head)
            if not keep_alive:
                self.transport.close()
            self.on_response_complete()  # uvicorn's count, and the keep-alive timeout
            client = self.client[0] if self.client else None
            log_access(
                method, path, reply.status, len(reply.body), start, client, ua=reply.ua, rid=rid
            )
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
    out = [status_line(status)]
    for name, value in headers:
        out += (name.lower(), b": ", value, b"\r\n")
    if not keep_alive:
        out.append(b"connection: close\r\n")
    out.append(b"\r\n")
    return b"".join(out)


def _refuse(protocol: Any, status: int, message: str) -> None:
    """Answer ``status`` with ``message`` (plain text) and close, as uvicorn answers a
    request it cannot parse."""
    body = message.encode("ascii")
    head = response_head(
        status,
        [
            *protocol.server_state.default_headers,
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("ascii")),
        ],
        keep_alive=False,
    )
    protocol.transport.write(head + body)
    protocol.transport.close()


def _of_app(app: object, attr: str, kind: type[T]) -> T | None:
    """The ``attr`` of the registry app that uvicorn runs as ``app``, under the middleware
    uvicorn may wrap it in (each holds the next as ``.app``), if it is a ``kind``."""
    for _ in range(8):  # proxy headers, message logger, ...: a few at most
        found = getattr(app, attr, None)
        if isinstance(found, kind):
            return found
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


def fast_path_of(app: object) -> FastPath | None:
    """The :class:`FastPath` of the registry app that uvicorn runs as ``app``."""
    return _of_app(app, "fast", FastPath)


def timeouts_of(app: object) -> Timeouts:
    """The :class:`~registry.limits.Timeouts` of the registry app that uvicorn runs as
    ``app`` (:func:`registry.app.create_app`); the defaults for another app."""
    return _of_app(app, "timeouts", Timeouts) or Timeouts()


def protocol_class() -> type[asyncio.Protocol]:
    """The protocol uvicorn would pick (httptools when installed, else h11), coalescing;
    over httptools, answering from the fast path's memory too. Where this uvicorn lacks
    what those use (:mod:`wgtpm._compat.uvicorn`), uvicorn's own protocol, unchanged."""
    if HttpToolsProtocol is None:
        return H11Protocol if H11_MISSING else CoalescingH11
    return HttpToolsProtocol if HTTPTOOLS_MISSING else FastHttpTools
