"""The first connection of a client, opened while httpx loads (:mod:`wgtpm._preconnect`):
used for the first request, never a second connection, never a different error."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.servers import LoopbackServer, Request, Response
from wgtpm import _preconnect
from wgtpm.httpclient import HttpClient, HttpOptions, UnknownHostError


class _Ok(LoopbackServer):
    def route(self, req: Request) -> Response:
        return Response.text("ok")


def test_the_first_request_goes_on_the_connection_opened_ahead() -> None:
    with _Ok() as srv, HttpClient(HttpOptions(retries=0)) as http:
        assert http.get_bytes(srv.url + "/a") == b"ok"
        assert http.get_bytes(srv.url + "/b") == b"ok"
        assert srv.connections == 1  # the one opened ahead, kept alive for the second
    assert not _preconnect._ahead


def test_it_is_opened_before_httpx_is_imported(tmp_path: Path) -> None:
    code = (
        "import json, socket, sys\n"
        "seen = []\n"
        "real = socket.create_connection\n"
        "def connect(*a, **k):\n"
        "    seen.append('httpx' in sys.modules)\n"
        "    return real(*a, **k)\n"
        "socket.create_connection = connect\n"
        "from wgtpm.httpclient import HttpClient, HttpOptions\n"
        "with HttpClient(HttpOptions(retries=0)) as http:\n"
        "    body = http.get_bytes(sys.argv[1])\n"
        "print(json.dumps([seen, body.decode()]))\n"
    )
    with _Ok() as srv:
        done = subprocess.run(
            [sys.executable, "-c", code, srv.url + "/x"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [[False], "ok"]  # one connect, made before httpx
        assert srv.connections == 1


def test_a_connection_the_server_closed_meanwhile_is_not_used() -> None:
    # a server that hangs up on its first connection at once (a keep-alive timeout between
    # the connect and the first request), and answers on the next one
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    first_closed = threading.Event()
    accepted = []

    def serve() -> None:
        conn, _ = listener.accept()
        accepted.append(conn)
        conn.close()
        first_closed.set()
        conn, _ = listener.accept()
        accepted.append(conn)
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    real = _preconnect.take

    def take(host: str, port: int, timeout: float | None) -> object:
        first_closed.wait(5)  # the hang-up has happened before the first request
        return real(host, port, timeout)

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_preconnect, "take", take)
            with HttpClient(HttpOptions(retries=0)) as http:
                assert http.get_bytes(f"http://127.0.0.1:{port}/a") == b"ok"
    finally:
        t.join(5)
        listener.close()
    assert len(accepted) == 2  # the one opened ahead, dropped; then the backend's own


def test_a_failed_connect_ahead_is_the_error_of_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lookups = []
    real = socket.getaddrinfo

    def resolve(host: str, *a: object, **k: object) -> object:
        if host == "nowhere.invalid":
            lookups.append(host)
            raise socket.gaierror(socket.EAI_NONAME, "no such name")
        return real(host, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with HttpClient(HttpOptions(retries=2)) as http, pytest.raises(UnknownHostError):
        http.get("http://nowhere.invalid/x")
    assert lookups == ["nowhere.invalid"]  # looked up once, by the connect opened ahead


def test_connections_nobody_took_are_closed_with_the_client() -> None:
    with _Ok() as srv:
        http = HttpClient(HttpOptions(retries=0))
        _preconnect.ahead(srv.url + "/unused", 5.0)
        (ahead,) = _preconnect._ahead[("127.0.0.1", int(srv.url.rsplit(":", 1)[1]))]
        assert ahead.done.wait(5)
        sock = ahead.sock
        assert sock is not None
        http.close()
        assert sock.fileno() == -1  # closed
        assert not _preconnect._ahead


def test_requests_expected_at_once_each_take_a_connection_opened_ahead() -> None:
    """Two first requests sent at once (HttpClient.expect): two connections opened ahead,
    one taken by each, and no third."""
    with _Ok() as srv, HttpClient(HttpOptions(retries=0)) as http:
        srv.latency = 0.2  # both requests are in flight together
        http.expect(srv.url, 2)
        key = ("127.0.0.1", int(srv.url.rsplit(":", 1)[1]))
        assert len(_preconnect._ahead[key]) == 2
        bodies: list[bytes] = []
        t = threading.Thread(target=lambda: bodies.append(http.get_bytes(srv.url + "/a")))
        t.start()
        bodies.append(http.get_bytes(srv.url + "/b"))
        t.join(10)
        assert bodies == [b"ok", b"ok"]
        assert srv.connections == 2
        assert key not in _preconnect._ahead
        http.expect(srv.url, 2)  # the client is made: its pool opens what it needs
        assert key not in _preconnect._ahead


def test_a_client_with_its_own_transport_opens_nothing_ahead() -> None:
    import httpx

    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=b"mock")

    with HttpClient(HttpOptions(retries=0), transport=httpx.MockTransport(handler)) as http:
        assert http.get_bytes("http://127.0.0.1:9/x") == b"mock"
    assert seen == ["http://127.0.0.1:9/x"] and not _preconnect._ahead
