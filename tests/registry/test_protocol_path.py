"""The protocol path (registry/_http.py FastHttpTools): the fast path's answers sent by the
server's protocol itself, byte for byte as uvicorn sends the app's.

Three uvicorn servers on loopback share one registry: ``on`` with
:func:`registry._http.protocol_class` (the protocol path), ``asgi`` over the
protocol without it (the ASGI fast path) and ``slow`` with neither (every
request through Starlette). Requests are written and responses read as raw
bytes; only the ``date`` header's value is masked when they are compared.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn

from registry import FolderBlobStore, Registry, open_metadata_store
from registry._http import CoalescingHttpTools, protocol_class
from registry.accesslog import UVICORN_LOG_CONFIG, configure
from registry.app import RegistryApp, create_app
from registry.fastpath import FastPath

from .helpers import modtext, publish

M = "example.com/acme/proto"
P = "example.com/acme/secret"  # private
DATA = os.urandom(70_000)
FILES = {"wgt.mod": modtext(M), "w/data.bin": DATA, "tiny": b"x", "empty": b""}
BASE = f"/{M}/@v/v1.0.0"
URLS = [f"{BASE}/w/data.bin", f"{BASE}/tiny", f"{BASE}/empty", f"{BASE}.mod", f"{BASE}.info"]
URLS += [f"{BASE}.index.json"]


class Server:
    """uvicorn with ``app`` over ``http`` in a thread, configured as ``registry serve`` does."""

    def __init__(self, app: RegistryApp, http: Any) -> None:
        self.app = app
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            http=http,
            log_config=UVICORN_LOG_CONFIG,
            log_level="warning",
            access_log=False,
            lifespan="on",
            proxy_headers=True,
            server_header=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()

    @property
    def fast(self) -> FastPath:
        assert self.app.fast is not None
        return self.app.fast


@dataclass
class Servers:
    on: Server
    asgi: Server
    slow: Server
    registry: Registry


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    tmp = tmp_path_factory.mktemp("proto")
    reg = Registry(open_metadata_store(str(tmp / "r.db")), FolderBlobStore(tmp / "b"))
    on = Server(create_app(registry=reg), protocol_class())
    asgi = Server(create_app(registry=reg), CoalescingHttpTools)
    slow = Server(create_app(registry=reg, fast_path=False), CoalescingHttpTools)
    try:
        tok = reg.create_token("example.com", "publish")[0]
        with httpx.Client(base_url=f"http://127.0.0.1:{slow.port}") as client:
            for module, private in ((M, False), (P, True)):
                fs = {**FILES, "wgt.mod": modtext(module)}
                r = publish(client, tok, module, "v1.0.0", fs, private=private)
                assert r.status_code == 201, r.text
        for s in (on, asgi):  # remembered by Starlette, then blobs read by the ASGI fast path
            for url in URLS:
                for _ in range(2):
                    assert httpx.get(f"http://127.0.0.1:{s.port}{url}").status_code == 200
        yield Servers(on, asgi, slow, reg)
    finally:
        for s in (on, asgi, slow):
            s.stop()
        reg.close()


def request(method: str, url: str, *headers: str, version: str = "1.1") -> bytes:
    lines = [f"{method} {url} HTTP/{version}", "Host: test", "User-Agent: pytest", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_responses(sock: socket.socket, methods: list[str]) -> list[bytes]:
    """One whole response (head and body) for each request made with ``methods``, in order."""
    buf, out = b"", []
    for method in methods:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(1 << 16)
            assert chunk, f"closed before a response: {buf[:200]!r}"
            buf += chunk
        end = buf.index(b"\r\n\r\n") + 4
        head = buf[:end]
        m = re.search(rb"\r\ncontent-length: (\d+)\r\n", head)
        size = 0 if method == "HEAD" or b" 304 " in head[:13] or m is None else int(m.group(1))
        while len(buf) < end + size:
            chunk = sock.recv(1 << 16)
            assert chunk, "closed in a body"
            buf += chunk
        out.append(buf[: end + size])
        buf = buf[end + size :]
    assert buf == b""
    return out


def exchange(
    server: Server, raw: bytes, methods: list[str], linger: float = 0.05
) -> tuple[list[bytes], bool]:
    """Send ``raw`` (requests, pipelined) on one new connection: the responses, and whether
    the server closed the connection within ``linger`` seconds after them."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw)
        answers = read_responses(sock, methods)
        sock.settimeout(linger)
        try:
            closed = sock.recv(1) == b""
        except TimeoutError:
            closed = False
    return answers, closed


def masked(response: bytes) -> bytes:
    head, sep, body = response.partition(b"\r\n\r\n")
    assert len(re.findall(rb"\r\ndate: ", head)) == 1, head
    assert len(re.findall(rb"\r\nx-request-id: ", head)) == 1, head  # each answer has its own
    head = re.sub(rb"\r\nx-request-id: [^\r]+", b"\r\nx-request-id: *", head)
    return re.sub(rb"\r\ndate: [^\r]+", b"\r\ndate: *", head) + sep + body


def all_three(
    s: Servers, raw: bytes, methods: list[str], linger: float = 0.05
) -> list[tuple[list[bytes], bool]]:
    """The same exchange with each server, dates masked."""
    out = []
    for server in (s.on, s.asgi, s.slow):
        answers, closed = exchange(server, raw, methods, linger)
        out.append(([masked(a) for a in answers], closed))
    return out


def etag_of(s: Servers, url: str) -> str:
    return httpx.get(f"http://127.0.0.1:{s.slow.port}{url}").headers["etag"]


@pytest.mark.parametrize("url", URLS)
def test_the_protocol_path_sends_the_bytes_the_app_sends(servers: Servers, url: str) -> None:
    etag = etag_of(servers, url)
    for method, headers in [
        ("GET", []),
        ("HEAD", []),
        ("GET", [f"If-None-Match: {etag}"]),
        ("HEAD", [f'If-None-Match: "other", {etag}']),
        ("GET", ['If-None-Match: "other"']),
        ("GET", ["Accept: */*", "Connection: keep-alive"]),
    ]:
        hits = servers.on.fast.protocol_hits
        on, asgi, slow = all_three(servers, request(method, url, *headers), [method])
        assert servers.on.fast.protocol_hits == hits + 1, (method, headers)
        assert on == asgi == slow, (method, headers)
        assert on[1] is False  # kept alive


def test_pipelined_requests_are_answered_in_order(servers: Servers) -> None:
    data, tiny, info = URLS[0], URLS[1], f"{BASE}.info"
    fast = [("GET", data), ("HEAD", tiny), ("GET", info), ("GET", tiny)]
    raw = b"".join(request(m, u) for m, u in fast)
    hits = servers.on.fast.protocol_hits
    on, asgi, slow = all_three(servers, raw, [m for m, _ in fast])
    assert servers.on.fast.protocol_hits == hits + 4
    assert on == asgi == slow
    assert on[0][0].endswith(DATA) and on[0][3].endswith(b"\r\n\r\nx")

    # a request in flight through the app holds back those behind it: they take its way
    mixed = [("GET", tiny), ("GET", data, "Range: bytes=5-9"), ("GET", info), ("HEAD", data)]
    raw = b"".join(request(*r[:2], *r[2:]) for r in mixed)
    hits = servers.on.fast.protocol_hits
    on, asgi, slow = all_three(servers, raw, [r[0] for r in mixed])
    assert servers.on.fast.protocol_hits == hits + 1  # the first only
    assert on == asgi == slow
    assert b" 206 " in on[0][1][:13] and on[0][1].endswith(DATA[5:10])


@pytest.mark.parametrize(
    ("version", "headers"),
    [("1.1", ["Connection: close"]), ("1.0", []), ("1.0", ["Connection: keep-alive"])],
)
def test_connection_close_and_http_1_0(servers: Servers, version: str, headers: list[str]) -> None:
    for method in ("GET", "HEAD"):
        hits = servers.on.fast.protocol_hits
        raw = request(method, URLS[0], *headers, version=version)
        on, asgi, slow = all_three(servers, raw, [method], linger=3)
        assert servers.on.fast.protocol_hits == hits + 1
        assert on == asgi == slow
        assert b"\r\nconnection: close\r\n" in on[0][0] and on[1] is True  # closed


def test_tokens_ranges_and_forwarded_requests_take_the_app(servers: Servers) -> None:
    good = servers.registry.create_token(P, "read")[0]
    bad = "wgt_0123456789abcdef_" + "A" * 43
    private = f"/{P}/@v/v1.0.0/w/data.bin"
    for url, headers, status in [
        (URLS[0], [f"Authorization: Bearer {good}"], 200),
        (URLS[0], [f"Authorization: Bearer {bad}"], 401),
        (URLS[0], ["Range: bytes=0-9"], 206),
        (URLS[0], ["X-Forwarded-For: 10.1.2.3"], 200),
        (URLS[0], ["X-Forwarded-Proto: https"], 200),
        (URLS[0], ["Content-Length: 0"], 200),
        (URLS[0] + "?x=%41", [], 200),  # a query is ignored, as by the ASGI fast path
        (URLS[0].replace("data", "d%61ta"), [], 200),  # escaped: uvicorn unquotes it
        (private, [f"Authorization: Bearer {good}"], 200),
        (private, [], 404),
    ]:
        hits = servers.on.fast.protocol_hits
        on, asgi, slow = all_three(servers, request("GET", url, *headers), ["GET"])
        assert f" {status} ".encode() in on[0][0][:13], (url, headers)
        assert on == asgi == slow, (url, headers)
        expect = 1 if "?" in url else 0
        assert servers.on.fast.protocol_hits == hits + expect, (url, headers)


def test_protocol_answers_are_logged_as_the_app_logs_them(servers: Servers) -> None:
    out = io.StringIO()
    logger = logging.getLogger("registry")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    url, etag = URLS[0], etag_of(servers, URLS[0])
    reqs = [("GET", []), ("HEAD", []), ("GET", [f"If-None-Match: {etag}"])]
    try:
        configure(out)
        for server in (servers.on, servers.asgi):
            hits = servers.on.fast.protocol_hits
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                sock.sendall(request("GET", url, "X-Forwarded-For: 10.9.9.9"))  # the app's
                read_responses(sock, ["GET"])
                for method, headers in reqs:  # one at a time: none waits behind another
                    sock.sendall(request(method, url, *headers))
                    read_responses(sock, [method])
            assert servers.on.fast.protocol_hits == hits + (3 if server is servers.on else 0)
        logger.handlers[0].flush()
    finally:
        for h in logger.handlers:
            h.close()
        logger.handlers[:], logger.level, logger.propagate = saved
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert len(lines) == 8
    for line in lines:
        assert line.keys() == {
            *("time", "id", "method", "path", "status", "bytes", "ms", "client", "ua")
        }
        del line["time"], line["ms"], line["id"]  # the request id: each request's own
    assert lines[:4] == lines[4:]  # the protocol path's lines, then the ASGI fast path's
    assert lines[:4] == [
        {"method": "GET", "path": url, "status": 200, "bytes": len(DATA)}
        | {"client": "10.9.9.9", "ua": "pytest"},
        *(
            {"method": m, "path": url, "status": st, "bytes": n, "client": "127.0.0.1"}
            | {"ua": "pytest"}
            for m, st, n in [("GET", 200, len(DATA)), ("HEAD", 200, 0), ("GET", 304, 0)]
        ),
    ]


def test_shutdown_closes_idle_keep_alive_connections(servers: Servers) -> None:
    server = Server(create_app(registry=servers.registry), protocol_class())
    stopped = False
    try:
        socks = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in "ab"]
        for _ in range(2):  # remembered, then its blob read: the next is the protocol's
            socks[0].sendall(request("GET", URLS[0]))
            read_responses(socks[0], ["GET"])
        hits = server.fast.protocol_hits
        for sock in socks:
            sock.sendall(request("GET", URLS[0]))
            assert read_responses(sock, ["GET"])[0].endswith(DATA)
        assert server.fast.protocol_hits == hits + 2
        t0 = time.monotonic()
        server.stop()
        stopped = True
        assert not server.thread.is_alive()
        assert time.monotonic() - t0 < 4  # not left to the keep-alive timeout (5 s)
        for sock in socks:
            assert sock.recv(1) == b""  # closed by the server
            sock.close()
    finally:
        if not stopped:
            server.stop()


def test_an_app_without_the_fast_path_is_served_as_uvicorn_serves_it(servers: Servers) -> None:
    server = Server(create_app(registry=servers.registry, fast_path=False), protocol_class())
    try:
        assert server.app.fast is None
        raw = request("GET", URLS[0])
        for _ in range(2):
            answer = exchange(server, raw, ["GET"])[0][0]
            assert masked(answer) == masked(exchange(servers.slow, raw, ["GET"])[0][0])
    finally:
        server.stop()
