"""What a client may make the registry hold: bodies within caps, heads and stalls within limits.

Against ``wgtpm registry serve`` in a child process (its protocol, its
settings), with short timeouts from the environment, over raw sockets where
a real client would not misbehave so: a body declared over its cap is
refused before it is sent, a chunked one once past the cap, the publish
API asks for the token before it reads a byte, bad JSON is a 400 with one
line and no traceback in the server's log, a path with control characters
gets a clean 404, and an idle socket, a head sent one line at a time and a
body that stops are cut.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from registry import limits
from registry._errors import TooLargeError

from .helpers import free_port, publish, registry_token

ROOT = Path(__file__).resolve().parents[2]
WGTPM = (sys.executable, "-m", "wgtpm", "registry")
KEEP_ALIVE, HEADER, BODY, DRAIN = 1.0, 1.5, 1.5, 1.0
SLACK = 1.5  # seconds a cut may come after its limit on a loaded machine
PATHS_INFO = "/api/models/acme/tiny/paths-info/v1.0.0"
FILES = {"wgt.mod": b"module hf.co/acme/tiny\nwgt 0.1\n", "config.json": b'{"a": 1}\n'}


@dataclass
class Server:
    url: str
    port: int
    pid: int
    log: Path
    token: str  # may publish hf.co/acme
    read_token: str  # may only read

    def log_since(self, offset: int) -> str:
        return self.log.read_bytes()[offset:].decode("utf-8", "replace")

    def log_size(self) -> int:
        return self.log.stat().st_size


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``wgtpm registry serve`` with short timeouts, ``hf.co/acme/tiny v1.0.0`` published."""
    data = tmp_path_factory.mktemp("reg")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "WGTPM_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT=str(KEEP_ALIVE),
        WGTPM_REGISTRY_HEADER_TIMEOUT=str(HEADER),
        WGTPM_REGISTRY_BODY_TIMEOUT=str(BODY),
        WGTPM_REGISTRY_DRAIN_TIMEOUT=str(DRAIN),
    )
    token = registry_token(data, "hf.co/acme", env)
    read = subprocess.run(
        [
            *WGTPM,
            "token",
            "create",
            "--data",
            str(data),
            "--prefix",
            "hf.co/acme",
            "--scope",
            "read",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.splitlines()[-1]
    port = free_port()
    log = data / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*WGTPM, "serve", "--data", str(data), "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        with httpx.Client(base_url=url, timeout=30) as c:
            r = publish(c, token, "hf.co/acme/tiny", "v1.0.0", FILES)
            assert r.status_code == 201, r.text
        yield Server(url, port, proc.pid, log, token, read)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture
def quiet(server: Server) -> Iterator[None]:
    """The test leaves no traceback (nor an aborted response) in the server's log."""
    start = server.log_size()
    yield
    time.sleep(0.2)  # the server's log is written in batches
    text = server.log_since(start)
    assert "Traceback" not in text and "Exception in ASGI" not in text, text


@pytest.fixture(params=["serve", "h11"])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """:func:`server` (httptools, with the fast path) and the same app in this process over
    :class:`registry._http.CoalescingH11`, the protocol ``serve`` takes without httptools."""
    if request.param == "serve":
        request.getfixturevalue("quiet")
        yield request.getfixturevalue("server")
        return
    import uvicorn

    from registry._http import CoalescingH11
    from registry.app import create_app
    from registry.metadata import open_metadata_store
    from registry.service import Registry
    from registry.stores import open_blob_store

    reg = Registry(
        open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}"),
        open_blob_store(str(tmp_path / "blobs"), spool=tmp_path / "spool"),
    )
    token, _ = reg.create_token("hf.co/acme", "publish")
    read, _ = reg.create_token("hf.co/acme", "read")
    app = create_app(registry=reg, timeouts=limits.Timeouts(KEEP_ALIVE, HEADER, BODY, DRAIN))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, http=CoalescingH11, timeout_keep_alive=KEEP_ALIVE, log_level="warning"
    )  # type: ignore[arg-type]
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not uv.started:
            assert thread.is_alive()
            time.sleep(0.01)
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=30) as c:
            assert publish(c, token, "hf.co/acme/tiny", "v1.0.0", FILES).status_code == 201
        yield Server(url, port, os.getpid(), tmp_path / "none.log", token, read)
    finally:
        uv.should_exit = True
        thread.join(10)
        sock.close()
        reg.close()


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def response(sock: socket.socket, wait: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """The next response on ``sock`` (a ``Content-Length`` body), within ``wait`` seconds."""
    sock.settimeout(wait)
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(65536)
        assert got, f"the server closed the connection without an answer: {data!r}"
        data += got
    top, rest = data.split(b"\r\n\r\n", 1)
    status_line, *lines = top.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    size = int(headers.get("content-length", "0"))
    while len(rest) < size:
        got = sock.recv(65536)
        assert got, "the answer was cut short"
        rest += got
    return int(status_line.split()[1]), headers, rest[:size]


def closed_after(sock: socket.socket, limit: float) -> float:
    """Seconds until the server closes ``sock`` (reading and dropping what it sends), or
    fails once ``limit`` seconds passed with it open."""
    start = time.monotonic()
    sock.settimeout(0.1)
    while time.monotonic() - start < limit:
        try:
            if sock.recv(65536) == b"":
                return time.monotonic() - start
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - start
    pytest.fail(f"the connection was still open after {limit:g} s")


def rss(pid: int) -> int:
    """The resident memory of process ``pid``, in bytes (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


# -- bodies within their caps


@pytest.mark.usefixtures("quiet")
def test_a_paths_info_body_declared_over_its_cap_is_refused_before_it_is_sent(
    server: Server,
) -> None:
    before = rss(server.pid) if Path("/proc/self/status").exists() else None
    with connect(server) as s:
        declared = 600 << 20
        s.sendall(
            head(
                "POST",
                PATHS_INFO,
                {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Content-Length": str(declared),
                },
            )
        )
        status, _, body = response(s)  # not one byte of the body sent
        assert status == 413, body
        assert str(limits.MAX_PATHS_INFO_BODY) in json.loads(body)["error"]
        chunk = b"paths=" + b"x" * ((1 << 20) - 6)
        try:  # send it anyway: the server drops it, then cuts the connection
            for _ in range(64):
                s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
    if before is not None:
        assert rss(server.pid) - before < 32 << 20


@pytest.mark.usefixtures("quiet")
def test_a_chunked_paths_info_body_past_its_cap_is_refused(server: Server) -> None:
    with connect(server) as s:
        s.sendall(
            head(
                "POST",
                PATHS_INFO,
                {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            )
        )
        piece = b'{"paths": [' + b'"a",' * 16000
        sent = 0
        try:
            while sent < 8 << 20 and not select.select([s], [], [], 0)[0]:
                s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, _, body = response(s)
    assert status == 413, body
    assert json.loads(body)["error"].endswith(f"at most {limits.MAX_PATHS_INFO_BODY} bytes")


@pytest.mark.parametrize(
    ("content_type", "body", "says"),
    [
        ("application/json", b'{"paths": ["a"', "is not JSON: "),
        ("application/json", b"\xff\xfe{", "is not JSON: "),
        ("application/json", b'{"paths": 5}', "'paths'"),
        ("application/json", b'{"paths": [1, "a"]}', "'paths'"),
        ("application/json", b'[1, "a"]', "must be a JSON object, not an array"),
        ("application/json", b"[" * 100_000 + b"]" * 100_000, "nests deeper than 64"),
        ("application/json", b'{"paths": ' + b"[" * 100 + b"]" * 100 + b"}", "nests deeper"),
    ],
)
@pytest.mark.usefixtures("quiet")
def test_a_bad_paths_info_body_is_a_400_with_one_line(
    server: Server, content_type: str, body: bytes, says: str
) -> None:
    r = httpx.post(
        server.url + PATHS_INFO, content=body, headers={"Content-Type": content_type}, timeout=10
    )
    assert r.status_code == 400, r.text
    message = r.json()["error"]
    assert says in message and "\n" not in message, message
    assert r.headers["x-error-message"].startswith(message[:40])


def test_paths_info_answers_forms_and_json(server: Server) -> None:
    form = httpx.post(
        server.url + PATHS_INFO, data={"paths": ["config.json", "nothing"]}, timeout=10
    )
    asked = httpx.post(server.url + PATHS_INFO, json={"paths": "config.json"}, timeout=10)
    for r in (form, asked):
        assert r.status_code == 200, r.text
        assert [e["path"] for e in r.json()] == ["config.json"]


@pytest.mark.parametrize("char", ["%00", "%0D%0A", "%0A", "%1B", "%7F", "%C3%A9"])
@pytest.mark.parametrize(
    "route",
    [
        "/api/models/acme/ti{}ny",
        "/api/models/acme/ti{}ny/revision/v1.0.0",
        "/acme/ti{}ny/resolve/v1.0.0/config.json",
        "/acme/tiny/resolve/v1.0.0/a{}b",
        "/api/models/acme/tiny/tree/v1.0.0/a{}b",
    ],
)
@pytest.mark.usefixtures("quiet")
def test_a_hub_path_with_control_characters_gets_a_clean_4xx(
    server: Server, route: str, char: str
) -> None:
    with connect(server) as s:
        s.sendall(head("GET", route.format(char), {}))
        status, headers, body = response(s)
    assert status in (404, 410), body  # not found; a malformed repository name is gone
    message = headers.get("x-error-message")
    if message is None:  # a newline in a {path:path}: no route matches
        assert "%0A" in char and body == b"Not Found"
        return
    assert message.isascii() and message.isprintable(), message
    named = next(part for part in route.split("/") if "{}" in part)
    assert named.format(char) in message  # escaped as it was in the URL
    assert json.loads(body)["error"]


# -- the publish API: the token first


@pytest.mark.parametrize(
    ("path", "auth", "want"),
    [
        ("/api/v1/uploads", None, 401),
        ("/api/v1/uploads", "Bearer wgt_0123456789abcdef_wrong", 401),
        ("/api/v1/uploads", "read", 403),
        ("/api/v1/uploads/0123/commit", None, 401),
        ("/api/v1/uploads/0123/files/" + "0" * 64, None, 401),
    ],
)
@pytest.mark.usefixtures("quiet")
def test_the_publish_api_asks_for_the_token_before_it_reads_a_body(
    server: Server, path: str, auth: str | None, want: int
) -> None:
    headers = {"Content-Type": "application/json", "Content-Length": str(16 << 20)}
    if auth is not None:
        headers["Authorization"] = f"Bearer {server.read_token}" if auth == "read" else auth
    with connect(server) as s:
        s.sendall(head("PUT" if "/files/" in path else "POST", path, headers))
        status, _, body = response(s)  # no byte of the body sent
    assert status == want, body
    assert "token" in json.loads(body)["error"]


@pytest.mark.usefixtures("quiet")
def test_a_publish_body_declared_over_its_cap_is_refused_before_it_is_sent(
    server: Server,
) -> None:
    with connect(server) as s:
        headers = {
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/json",
            "Content-Length": str(limits.MAX_REQUEST_JSON + 1),
        }
        s.sendall(head("POST", "/api/v1/uploads", headers))
        status, _, body = response(s)
    assert status == 413, body


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"module": ' * 50_000, "nests deeper than 64"),
        (b'{"module": "hf.co/acme/x", "index": ' + b"[" * 200 + b"]" * 200 + b"}", "nests"),
        (b"{", "is not JSON: "),
        (b"5", "must be a JSON object"),
    ],
)
@pytest.mark.usefixtures("quiet")
def test_a_bad_publish_body_is_a_400_with_one_line(server: Server, body: bytes, says: str) -> None:
    r = httpx.post(
        server.url + "/api/v1/uploads",
        content=body,
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert r.status_code == 400, r.text
    assert says in r.json()["error"] and "\n" not in r.json()["error"]


# -- stalled clients are cut


def test_an_idle_connection_is_closed(either: Server) -> None:
    server = either
    with connect(server) as s:
        assert closed_after(s, KEEP_ALIVE + SLACK) >= KEEP_ALIVE * 0.8


def test_a_head_sent_a_line_at_a_time_is_closed(either: Server) -> None:
    server = either
    with connect(server) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        start = time.monotonic()
        while time.monotonic() - start < HEADER + SLACK:
            if select.select([s], [], [], 0.3)[0]:
                break
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
        assert closed_after(s, 0.5) >= 0
    assert time.monotonic() - start < HEADER + SLACK


def test_a_body_that_stops_is_closed(either: Server) -> None:
    server = either
    with connect(server) as s:
        s.sendall(
            head(
                "POST",
                PATHS_INFO,
                {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": "100"},
            )
        )
        s.sendall(b"paths=conf")
        assert closed_after(s, BODY + SLACK) >= BODY * 0.8


def test_the_rest_of_an_answered_body_is_cut_short(either: Server) -> None:
    server = either
    with connect(server) as s:
        s.sendall(head("POST", "/api/v1/uploads", {"Content-Length": str(16 << 20)}))
        assert response(s)[0] == 401
        start = time.monotonic()
        try:  # a byte every 0.2 s: never idle long enough for the body's limit
            while time.monotonic() - start < DRAIN + SLACK:
                s.sendall(b"x")
                if select.select([s], [], [], 0.2)[0]:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_after(s, 0.5) >= 0
    assert time.monotonic() - start < DRAIN + SLACK


def test_a_busy_keep_alive_connection_stays_open(either: Server) -> None:
    server = either
    with connect(server) as s:
        for _ in range(int(3 * KEEP_ALIVE / 0.25)):  # 3 keep-alive limits in all
            s.sendall(head("GET", "/hf.co/acme/tiny/@v/v1.0.0.mod", {}))
            status, _, body = response(s)
            assert status == 200 and body == FILES["wgt.mod"]
            time.sleep(0.25)


@pytest.mark.parametrize("pieces", [1, 40])
@pytest.mark.usefixtures("quiet")
def test_a_request_head_over_its_limit_is_refused(server: Server, pieces: int) -> None:
    """At once (the whole head parsed, then measured) and in pieces (one header line that
    never ends: what httptools holds of it is counted as it comes)."""
    big = head("GET", "/healthz", {"X-Big": "x" * limits.MAX_REQUEST_HEAD})
    if pieces > 1:
        big = big[: big.index(b"xxx")] + b"x" * (limits.MAX_REQUEST_HEAD + 4096)
    with connect(server) as s:
        step = -(-len(big) // pieces)
        try:
            for i in range(0, len(big), step):
                s.sendall(big[i : i + step])
                time.sleep(0.01 if pieces > 1 else 0)
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, _, body = response(s)
    assert status == 431, body
    assert str(limits.MAX_REQUEST_HEAD).encode() in body


# -- the pieces, as tables


@pytest.mark.parametrize(
    ("message", "want"),
    [
        ("a/b does not exist", "a/b does not exist"),
        ("a\r\nb", "a%0D%0Ab"),
        ("a\x00b\x1b\x7f", "a%00b%1B%7F"),
        ("té 5%", "t%C3%A9 5%25"),
        ("x" * 999 + "\n", "x" * 999),  # cut, and not half an escape
    ],
)
def test_header_text_escapes_what_a_header_may_not_hold(message: str, want: str) -> None:
    from registry.hfmirror import header_text

    assert header_text(message) == want


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, limits.Timeouts()),
        (
            {"WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT": "2", "WGTPM_REGISTRY_BODY_TIMEOUT": " 0.5 "},
            limits.Timeouts(keep_alive=2, body=0.5),
        ),
        ({"WGTPM_REGISTRY_HEADER_TIMEOUT": ""}, limits.Timeouts()),
    ],
)
def test_timeouts_from_the_environment(env: dict[str, str], want: limits.Timeouts) -> None:
    assert limits.Timeouts.from_env(env) == want


@pytest.mark.parametrize("bad", ["x", "0", "-1", "nan", "inf"])
def test_a_malformed_timeout_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=f"WGTPM_REGISTRY_DRAIN_TIMEOUT='{bad}'"):
        limits.Timeouts.from_env({"WGTPM_REGISTRY_DRAIN_TIMEOUT": bad})


@pytest.mark.parametrize(
    ("length", "refused"),
    [("10", None), ("11", TooLargeError), ("9" * 20, TooLargeError), ("9" * 5000, TooLargeError)],
)
def test_a_content_length_of_any_size_is_read_without_a_500(
    length: str, refused: type[Exception] | None
) -> None:
    from starlette.requests import Request

    from registry.body import declared_length

    request = Request({"type": "http", "headers": [(b"content-length", length.encode())]})
    if refused is None:
        assert declared_length(request, 10, "a body") == int(length)
    else:
        with pytest.raises(refused):
            declared_length(request, 10, "a body")
