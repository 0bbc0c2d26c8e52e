"""A loopback server that misbehaves the ways a hostile host can: bodies without end,
lying lengths, compression bombs, trickles and redirects to other addresses.

Routes (also with anything after them, ``/endless/api/x``; any other path: 404)::

    /endless          200, chunked, zeros for ever
    /huge-length      200, Content-Length: 10 GB, then zeros for ever
    /bomb             200, Content-Encoding: gzip, 128 KiB that inflate to 128 MiB of zeros
    /trickle          200, chunked, one byte every ``trickle_delay`` seconds, for ever
    /error-endless    500, chunked, an error page for ever
    /redirect?to=URL  302 to URL
    /loop             302 to the same path, for ever
    /to-file          302 to ``file:///etc/passwd``
    /ok               200, ``ok``
    /silent           reads the request and never answers (the connection stays open)

Every request is logged in ``paths``. The server writes raw HTTP/1.1 so that it
can lie; it is a test of the client's limits, not of HTTP.
"""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["HostileServer", "gzip_bomb"]


def gzip_bomb(size: int = 128 << 20) -> bytes:
    """A gzip stream of ``size`` zero bytes (about ``size / 1000`` bytes long)."""
    return gzip.compress(b"\0" * size, compresslevel=9)


def _is(path: str, route: str) -> bool:
    """``route`` itself or anything under it (``/endless/api/models/...``)."""
    return path == route or path.startswith(route + "/")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.server.owner
        owner.paths.append(self.path)
        split = urlsplit(self.path)
        try:
            if _is(split.path, "/endless"):
                self._chunked_forever(200, b"\0" * 65536)
            elif _is(split.path, "/error-endless"):
                self._chunked_forever(500, b"<html>error</html>" * 1000)
            elif _is(split.path, "/trickle"):
                self._chunked_forever(200, b"x", delay=owner.trickle_delay)
            elif _is(split.path, "/huge-length"):
                self.send_response(200)
                self.send_header("Content-Length", str(10 << 30))
                self.end_headers()
                while not owner.stopping.is_set():
                    self.wfile.write(b"\0" * 65536)
            elif _is(split.path, "/bomb"):
                body = owner.bomb
                self.send_response(200)
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif _is(split.path, "/redirect"):
                to = parse_qs(split.query).get("to", ["/ok"])[0]
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif _is(split.path, "/loop") or _is(split.path, "/to-file"):
                to = self.path if _is(split.path, "/loop") else "file:///etc/passwd"
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif _is(split.path, "/silent"):
                owner.stopping.wait()
                self.close_connection = True
            elif _is(split.path, "/ok"):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _chunked_forever(self, status: int, piece: bytes, delay: float = 0.0) -> None:
        self.send_response(status)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        owner = self.server.owner
        while not owner.stopping.is_set():
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            if delay:
                owner.stopping.wait(delay)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: HostileServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class HostileServer:
    """The server above on ``127.0.0.1:<ephemeral>``; a context manager."""

    def __init__(self, *, trickle_delay: float = 0.05) -> None:
        self.trickle_delay = trickle_delay
        self.paths: list[str] = []
        self.stopping = threading.Event()
        self._bomb: bytes | None = None
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def bomb(self) -> bytes:
        if self._bomb is None:
            self._bomb = gzip_bomb()
        return self._bomb

    def __enter__(self) -> HostileServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"
