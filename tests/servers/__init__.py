"""Loopback HTTP servers that speak the protocols wgtpm talks to.

Every server here listens on ``127.0.0.1`` on an ephemeral port, runs in a
background thread, and is a context manager::

    with CdnServer() as cdn, GitHubServer(cdn) as gh:
        repo = gh.repo("acme", "xor")
        repo.release("v0.1.0", {"wgt.mod": b"module github.com/acme/xor\\n"})
        ...  # point the client at gh.url
        assert not cdn.log.where(header="authorization")

What the servers share:

- a :class:`RequestLog` of every request (method, raw path, *all* headers as
  sent, the status answered), shared between servers when the test passes
  one log to several, so a test can assert which port saw which header;
- fault injection by path (:class:`Fault`): an error status (500, 404, 410,
  429 with ``Retry-After``), a body cut short with or without an honest
  ``Content-Length``, a flipped byte, a connection reset mid-stream, a slow
  drip; each fault fires ``times`` times (``-1``: for ever) and then the
  server behaves again;
- :func:`serve_bytes`, which answers ``Range`` requests (``206``/``416``) the
  way object stores do, and a :class:`CdnServer` holding blobs behind signed
  URLs that refuses requests carrying credentials (as S3 does when a
  pre-signed URL comes with an ``Authorization`` header).

The protocol servers (:mod:`.github`, :mod:`.huggingface`, :mod:`.paw`)
subclass :class:`LoopbackServer` and implement :meth:`LoopbackServer.route`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import hmac
import json
import re
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = [
    "CdnServer",
    "Fault",
    "LoopbackServer",
    "Request",
    "RequestLog",
    "Response",
    "Seen",
    "serve_bytes",
]


# --------------------------------------------------------------------------
# Requests, responses and the log


@dataclass(frozen=True)
class Request:
    """One request as a route sees it.

    ``path`` is the URL path, percent-decoded; ``segments`` are the raw
    path elements each decoded on its own (so ``a%2Fb`` stays one element);
    ``query`` holds the first value of each parameter.
    """

    method: str
    raw_path: str
    path: str
    segments: tuple[str, ...]
    query: dict[str, str]
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def bearer(self) -> str | None:
        """The token of ``Authorization: Bearer T`` (or GitHub's ``token T``)."""
        auth = self.header("authorization")
        if not auth or " " not in auth:
            return None
        scheme, _, token = auth.partition(" ")
        return token.strip() if scheme.lower() in ("bearer", "token") else None


@dataclass
class Response:
    """What a route answers. ``Content-Length`` is added when writing."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def json(cls, obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        h = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        return cls(status, h, json.dumps(obj).encode())

    @classmethod
    def redirect(
        cls, location: str, status: int = 302, headers: dict[str, str] | None = None
    ) -> Response:
        return cls(status, {"Location": location, **(headers or {})})

    @classmethod
    def text(cls, text: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        h = {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}
        return cls(status, h, text.encode())


@dataclass(frozen=True)
class Seen:
    """One request a server received, the status it answered and the fault it met.

    Entries are logged once the answer's status is decided, before its body
    is sent, so a client that has read a response always finds it logged.
    """

    server: str
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    status: int
    fault: str | None = None
    at: float = field(default_factory=time.monotonic)  # when it was logged

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None


class RequestLog:
    """Every request seen by the servers that share this log, in arrival order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Seen] = []

    def add(self, seen: Seen) -> None:
        with self._lock:
            self._entries.append(seen)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __iter__(self) -> Iterator[Seen]:
        with self._lock:
            return iter(list(self._entries))

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def where(
        self,
        *,
        server: str | None = None,
        method: str | None = None,
        path: str | None = None,
        header: str | None = None,
        status: int | None = None,
    ) -> list[Seen]:
        """Entries matching every given filter; ``path`` is a glob on the raw path (query included)."""
        out = []
        for s in self:
            if server is not None and s.server != server:
                continue
            if method is not None and s.method != method:
                continue
            if path is not None and not fnmatch.fnmatchcase(s.path, path):
                continue
            if header is not None and s.header(header) is None:
                continue
            if status is not None and s.status != status:
                continue
            out.append(s)
        return out


# --------------------------------------------------------------------------
# Faults


@dataclass
class Fault:
    """A misbehaviour for requests whose URL path matches the glob ``path``.

    Kinds: ``status`` (answer ``status``, with ``Retry-After`` when
    ``retry_after`` is set, instead of routing), ``truncate`` (declare the full
    ``Content-Length``, send the first ``at`` of the body, close), ``short``
    (send the first ``at`` of the body with a matching ``Content-Length``: the
    cut is invisible to HTTP), ``flip`` (invert one byte at ``at``), ``reset``
    (send the first ``at`` of the body, then a TCP RST), ``drip`` (send the
    body ``chunk`` bytes at a time, ``delay`` seconds apart). Body faults wait
    for a response that has a body (a redirect passes them by).
    """

    kind: str
    path: str
    times: int = 1
    status: int = 500
    retry_after: str | None = None
    at: float = 0.5
    delay: float = 0.01
    chunk: int = 256
    method: str | None = None

    @classmethod
    def error(
        cls, path: str, status: int = 500, *, times: int = 1, retry_after: str | None = None
    ) -> Fault:
        return cls("status", path, times=times, status=status, retry_after=retry_after)

    @classmethod
    def too_many(cls, path: str, retry_after: str = "1", *, times: int = 1) -> Fault:
        return cls("status", path, times=times, status=429, retry_after=retry_after)

    @classmethod
    def truncate(cls, path: str, at: float = 0.5, *, times: int = 1) -> Fault:
        return cls("truncate", path, times=times, at=at)

    @classmethod
    def short(cls, path: str, at: float = 0.5, *, times: int = 1) -> Fault:
        return cls("short", path, times=times, at=at)

    @classmethod
    def flip(cls, path: str, at: float = 0.5, *, times: int = 1) -> Fault:
        return cls("flip", path, times=times, at=at)

    @classmethod
    def reset(cls, path: str, at: float = 0.5, *, times: int = 1) -> Fault:
        return cls("reset", path, times=times, at=at)

    @classmethod
    def drip(cls, path: str, delay: float = 0.01, chunk: int = 256, *, times: int = 1) -> Fault:
        return cls("drip", path, times=times, delay=delay, chunk=chunk)

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        return fnmatch.fnmatchcase(path, self.path)


class _Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, method: str, path: str, *, body_phase: bool) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.times == 0 or (f.kind != "status") != body_phase:
                    continue
                if f.matches(method, path):
                    if f.times > 0:
                        f.times -= 1
                    return f
        return None

    def pending(self) -> list[Fault]:
        with self._lock:
            return [f for f in self._faults if f.times != 0]


# --------------------------------------------------------------------------
# Range requests

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def serve_bytes(req: Request, data: bytes, headers: dict[str, str] | None = None) -> Response:
    """Answer ``req`` with ``data``, honouring a single ``Range: bytes=A-B`` like an object store."""
    h = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream", **(headers or {})}
    rng = req.header("range")
    if rng is None:
        return Response(200, h, data)
    m = _RANGE.match(rng.strip())
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return Response(200, h, data)  # unparseable ranges are ignored, as RFC 9110 allows
    n = len(data)
    if m.group(1) == "":  # suffix range: the last N bytes
        start, end = max(0, n - int(m.group(2))), n - 1
    else:
        start = int(m.group(1))
        end = min(int(m.group(2)), n - 1) if m.group(2) else n - 1
    if start >= n or start > end:
        return Response(416, {**h, "Content-Range": f"bytes */{n}"})
    h["Content-Range"] = f"bytes {start}-{end}/{n}"
    return Response(206, h, data[start : end + 1])


# --------------------------------------------------------------------------
# The server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 drops the SYNs of a client that opens dozens of
    # connections at once, and the kernel resends them a second later; real servers queue more.
    request_queue_size = 128
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (a test that stops reading, an injected reset) are normal here.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def setup(self) -> None:
        super().setup()
        owner = self.server.owner
        owner._connected()
        if owner.connect_latency:  # a new connection's handshakes (TCP, TLS) to a far server
            time.sleep(owner.connect_latency)
        self._sent = 0
        self._since = time.monotonic()
        # Headers and body leave in separate writes: without TCP_NODELAY, Nagle's algorithm
        # holds the body back until the client's delayed ACK (40 ms on Linux), per response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().finish()

    def _dispatch(self) -> None:
        owner = self.server.owner
        if owner.latency:
            time.sleep(owner.latency)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        segments = tuple(unquote(s) for s in split.path.split("/")[1:])
        req = Request(
            method=self.command,
            raw_path=self.path,
            path=unquote(split.path),
            segments=segments,
            query={k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()},
            headers=tuple(self.headers.items()),
            body=body,
        )
        fault = owner.faults.take(req.method, req.path, body_phase=False)
        if fault is not None:
            resp = Response.json({"error": f"injected {fault.status}"}, fault.status)
            if fault.retry_after is not None:
                resp.headers["Retry-After"] = fault.retry_after
        else:
            try:
                resp = owner.handle(req)
            except Exception as exc:  # a bug in a test server must show, not hang the client
                resp = Response.text(f"test server error: {exc!r}", 500)
            if resp.body and req.method != "HEAD" and 200 <= resp.status < 300:
                fault = owner.faults.take(req.method, req.path, body_phase=True)
        owner.log.add(
            Seen(
                owner.name,
                req.method,
                req.raw_path,
                req.headers,
                resp.status,
                fault.kind if fault else None,
            )
        )
        self._write(req, resp, fault)

    def _write(self, req: Request, resp: Response, fault: Fault | None) -> None:
        body = resp.body
        kind = fault.kind if fault else None
        cut = int(len(body) * fault.at) if fault else len(body)
        if kind == "flip" and body:
            i = min(cut, len(body) - 1)
            body = body[:i] + bytes([body[i] ^ 0xFF]) + body[i + 1 :]
        if kind == "short":
            body = body[:cut]
        try:
            self.send_response(resp.status)
            for k, v in resp.headers.items():
                if k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            if kind in ("truncate", "reset"):
                self.send_header("Connection", "close")
            self.end_headers()
            if req.method == "HEAD":
                return
            if kind in ("truncate", "reset"):
                self.wfile.write(body[:cut])
                self.wfile.flush()
                if kind == "reset":  # linger 0: close() sends RST instead of FIN
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                self.close_connection = True
                self.connection.close()
                return
            if kind == "drip" and fault is not None:
                for i in range(0, len(body), fault.chunk):
                    self.wfile.write(body[i : i + fault.chunk])
                    self.wfile.flush()
                    time.sleep(fault.delay)
                return
            rate = self.server.owner.rate
            if not rate:
                self.wfile.write(body)
                return
            view = memoryview(body)
            for i in range(
                0, len(body), 64 << 10
            ):  # at most `rate` bytes a second on this connection
                piece = view[i : i + (64 << 10)]
                self.wfile.write(piece)
                self._sent += len(piece)
                ahead = self._sent / rate - (time.monotonic() - self._since)
                if ahead > 0:
                    time.sleep(ahead)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class LoopbackServer:
    """A threaded HTTP/1.1 server on ``127.0.0.1:<ephemeral>``; subclasses implement :meth:`route`.

    ``url`` is ``http://127.0.0.1:PORT`` (no trailing slash). ``log`` records
    every request; ``faults`` misbehave on purpose (see :class:`Fault`).
    ``latency`` is slept before answering each request (a far-away server),
    by the request's own thread, so that requests in parallel wait in parallel.
    ``connections`` counts the TCP connections accepted. ``connect_latency``
    is slept when a connection opens and ``rate`` caps each connection's
    bytes a second (a realistic network for benchmarks).
    """

    name = "server"
    latency: float = 0.0
    #: Seconds slept when a connection opens, before its first request is read.
    connect_latency: float = 0.0
    #: Bytes a second that one connection's response bodies may go at (0: no cap).
    rate: float = 0.0
    #: Serve HTTPS with this context (set before :meth:`start`); ``url`` is then https://.
    tls: ssl.SSLContext | None = None

    def __init__(self, *, log: RequestLog | None = None) -> None:
        self.log = log if log is not None else RequestLog()
        self.faults = _Faults()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self._count_lock = threading.Lock()
        #: TCP connections accepted so far (a client that keeps connections alive opens few).
        self.connections = 0

    def _connected(self) -> None:
        with self._count_lock:
            self.connections += 1

    # lifecycle

    def start(self) -> LoopbackServer:
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        if self.tls is not None:
            httpd.socket = self.tls.wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name=f"{self.name}-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{self.name} server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def inject(self, fault: Fault) -> Fault:
        """Add a fault; returns it so a test can look at ``times`` afterwards."""
        self.faults.add(fault)
        return fault

    # routing

    def handle(self, req: Request) -> Response:
        with self._lock:
            return self.route(req)

    def route(self, req: Request) -> Response:
        raise NotImplementedError


class CdnServer(LoopbackServer):
    """A blob store behind signed URLs, the second origin that downloads redirect to.

    ``put(data, name)`` returns ``http://127.0.0.1:PORT/blobs/<sha256>/<name>?sig=<hmac>``.
    Requests without the right signature get 403; requests that carry
    ``Authorization``, ``X-API-Key`` or ``Cookie`` get 400 when
    ``refuse_credentials`` is set (the default), the way S3 refuses a
    pre-signed URL sent with a second credential. Range requests work.
    """

    name = "cdn"

    def __init__(self, *, log: RequestLog | None = None, refuse_credentials: bool = True) -> None:
        super().__init__(log=log)
        self.refuse_credentials = refuse_credentials
        self._blobs: dict[str, bytes] = {}
        self._key = b"loopback-cdn-key"

    def _sig(self, digest: str) -> str:
        return hmac.new(self._key, digest.encode(), "sha256").hexdigest()[:32]

    def put(self, data: bytes, name: str = "blob", *, digest: str | None = None) -> str:
        """Store ``data``; ``digest`` is its sha256 when the caller knows it (saves hashing again)."""
        digest = digest or hashlib.sha256(data).hexdigest()
        with self._lock:
            self._blobs[digest] = data
        return f"{self.url}/blobs/{digest}/{name.replace('/', '_')}?sig={self._sig(digest)}"

    def route(self, req: Request) -> Response:
        if req.method not in ("GET", "HEAD") or len(req.segments) < 2 or req.segments[0] != "blobs":
            return Response.text("not found", 404)
        digest = req.segments[1]
        if req.query.get("sig") != self._sig(digest):
            return Response.text("SignatureDoesNotMatch", 403)
        if self.refuse_credentials and any(
            req.header(h) is not None for h in ("authorization", "x-api-key", "cookie")
        ):
            return Response.text("InvalidArgument: only one auth mechanism allowed", 400)
        data = self._blobs.get(digest)
        if data is None:
            return Response.text("NoSuchKey", 404)
        return serve_bytes(req, data, {"ETag": f'"{digest}"'})
