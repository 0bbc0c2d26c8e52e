"""The fast path (registry/fastpath.py): the same answers as Starlette's, never a private byte.

Requests are driven straight through ASGI, so headers are compared as the
server would write them (names, values and order); ``live`` tests cross a
real socket.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from registry import FolderBlobStore, Registry, open_metadata_store
from registry.accesslog import configure
from registry.app import create_app

from .helpers import free_port, modtext, publish, registry_token
from .test_proxy import UP, upstream  # noqa: F401 - a fixture

M = "example.com/Acme/Fast"
E = "example.com/!acme/!fast"
P = "example.com/team/secret"  # private
DATA = os.urandom(70_000)
ROOT = Path(__file__).resolve().parents[2]

Reply = tuple[int, list[tuple[bytes, bytes]], bytes]


def call(app: Any, path: str, method: str = "GET", headers: dict[str, str] | None = None) -> Reply:
    """One request through ASGI: the status, the raw headers and the body. Every answer
    carries a request id (checked here), which differs per request: it is left out."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test"), (b"user-agent", b"pytest")]
        + [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "client": ("127.0.0.1", 1234),
        "server": ("127.0.0.1", 80),
    }
    out: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            raw = list(message["headers"])
            assert [v for k, v in raw if k == b"x-request-id"], raw
            out["status"] = message["status"]
            out["headers"] = [(k, v) for k, v in raw if k != b"x-request-id"]
        else:
            out["body"] += message.get("body", b"")

    asyncio.run(app(scope, receive, send))
    return out["status"], out["headers"], out["body"]


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[Registry]:
    r = Registry(open_metadata_store(str(tmp_path / "r.db")), FolderBlobStore(tmp_path / "b"))
    yield r
    r.close()


def _publish(reg: Registry, module: str, version: str, *, private: bool = False) -> str:
    tok = reg.create_token(module, "publish")[0]
    fs = {
        "wgt.mod": modtext(module),
        "w/data.bin": DATA + version.encode(),
        "tiny": b"x",
        "empty": b"",
    }
    r = publish(TestClient(create_app(registry=reg)), tok, module, version, fs, private=private)
    assert r.status_code == 201, r.text
    return tok


URLS = [
    f"/{E}/@v/v1.0.0/w/data.bin",
    f"/{E}/@v/v1.0.0/tiny",
    f"/{E}/@v/v1.0.0/empty",
    f"/{E}/@v/v1.0.0.mod",
    f"/{E}/@v/v1.0.0.info",
    f"/{E}/@v/v1.0.0.index.json",
    f"/{E}/@v/list",
]


@pytest.mark.parametrize("url", URLS)
def test_the_fast_path_answers_as_starlette_does(reg: Registry, url: str) -> None:
    _publish(reg, M, "v1.0.0")
    _publish(reg, M, "v1.1.0")
    slow, fast = create_app(registry=reg, fast_path=False), create_app(registry=reg)
    first = call(fast, url)  # answered by Starlette, remembered
    cache = fast.state.protocol_cache
    assert url in cache.answers or url in cache.lists
    assert first == call(slow, url)
    etag = dict(first[1])[b"etag"].decode()
    for method, headers in [
        ("GET", {}),
        ("HEAD", {}),
        ("GET", {"If-None-Match": etag}),
        ("HEAD", {"If-None-Match": f'"other", {etag}'}),
        ("GET", {"If-None-Match": '"other"'}),
    ]:
        assert call(fast, url, method, headers) == call(slow, url, method, headers), (
            method,
            headers,
        )


def test_a_private_module_is_never_answered_without_its_token(reg: Registry) -> None:
    tok = _publish(reg, P, "v1.0.0", private=True)
    app = create_app(registry=reg)
    auth = {"Authorization": f"Bearer {tok}"}
    urls = [f"/{P}/@v/v1.0.0/w/data.bin", f"/{P}/@v/v1.0.0.info", f"/{P}/@v/list"]
    for url in urls:
        for _ in range(2):
            status, _, body = call(app, url, headers=auth)
            assert status == 200 and body
    other = reg.create_token("example.com/other", "read")[0]
    for url in urls:
        for method in ("GET", "HEAD"):
            assert call(app, url, method)[0] == 404
            assert call(app, url, method, {"Authorization": f"Bearer {other}"})[0] == 404
    cache = app.state.protocol_cache
    assert not cache.answers and not cache.lists
    assert all(not b.startswith(DATA) for b in cache._blobs.values())


def test_tokens_and_ranges_still_go_through_starlette(reg: Registry) -> None:
    _publish(reg, M, "v1.0.0")
    app = create_app(registry=reg)
    url = f"/{E}/@v/v1.0.0/w/data.bin"
    assert call(app, url)[0] == 200 and url in app.state.protocol_cache.answers
    bad = "wgt_0123456789abcdef_" + "A" * 43
    assert call(app, url, headers={"Authorization": f"Bearer {bad}"})[0] == 401
    status, _, body = call(app, url, headers={"Range": "bytes=10-19"})
    assert status == 206 and body == DATA[10:20]
    assert call(app, f"/{E}/@v/v1.0.0/w/none.bin")[0] == 410
    assert call(app, f"/{E}/@v/v1.0.0/w/data.bin", "POST")[0] == 405


def test_a_lost_blob_is_reported_by_the_slow_path(reg: Registry) -> None:
    _publish(reg, M, "v1.0.0")
    app = create_app(registry=reg)
    url = f"/{E}/@v/v1.0.0.index.json"  # read through the store, not kept from the first answer
    assert call(app, url, "HEAD")[0] == 200 and url in app.state.protocol_cache.answers
    v = reg.meta.get_version(M, "v1.0.0")
    assert v is not None
    path = reg.blobs.path(v.index_sha256)  # type: ignore[attr-defined]
    os.chmod(path, 0o644)
    path.unlink()
    status, _, body = call(app, url)
    assert status == 500 and b"request id" in body  # the detail is in the log only
    assert url not in app.state.protocol_cache.answers


def test_a_blob_changed_on_disk_is_not_kept_in_memory(reg: Registry) -> None:
    _publish(reg, M, "v1.0.0")
    app = create_app(registry=reg)
    url = f"/{E}/@v/v1.0.0.index.json"  # remembered by a HEAD: its blob not yet read
    assert call(app, url, "HEAD")[0] == 200 and url in app.state.protocol_cache.answers
    v = reg.meta.get_version(M, "v1.0.0")
    assert v is not None
    path = reg.blobs.path(v.index_sha256)  # type: ignore[attr-defined]
    good = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    call(app, url)  # whatever the slow path serves, the client checks it against wgt.sum
    assert app.state.protocol_cache.blob(v.index_sha256) is None
    path.write_bytes(good)
    call(app, url, "HEAD")  # remembered again
    assert call(app, url)[2] == good
    assert app.state.protocol_cache.blob(v.index_sha256) == good


def test_a_version_published_on_one_replica_is_listed_by_the_other(tmp_path: Path) -> None:
    db, blobs = str(tmp_path / "r.db"), tmp_path / "b"
    a = Registry(open_metadata_store(db), FolderBlobStore(blobs))
    b = Registry(open_metadata_store(db), FolderBlobStore(blobs))
    try:
        _publish(a, M, "v1.0.0")
        app_b = create_app(registry=b)
        url = f"/{E}/@v/list"
        assert call(app_b, url)[2] == b"v1.0.0\n"
        assert call(app_b, url)[2] == b"v1.0.0\n" and url in app_b.state.protocol_cache.lists
        etag = dict(call(app_b, url)[1])[b"etag"].decode()
        _publish(a, M, "v1.1.0")
        t0 = time.monotonic()  # b answers from memory until it reads the change count again
        while (got := call(app_b, url, headers={"If-None-Match": etag}))[0] == 304:
            assert time.monotonic() - t0 < 1.0, "not listed by the other replica within 1 s"
        assert got[0::2] == (200, b"v1.0.0\nv1.1.0\n")
    finally:
        a.close()
        b.close()


def test_fast_answers_are_logged_as_slow_ones(reg: Registry) -> None:
    _publish(reg, M, "v1.0.0")
    app = create_app(registry=reg)
    out = io.StringIO()
    logger = logging.getLogger("registry")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    configure(out)
    try:
        url = f"/{E}/@v/v1.0.0/w/data.bin"
        call(app, url, headers={"Range": "bytes=0-9"})  # slow, and remembered
        call(app, url, headers={"Range": "bytes=0-9"})  # slow (a range)
        call(app, url)  # fast
        logger.handlers[0].flush()
    finally:
        for h in logger.handlers:
            h.close()
        logger.handlers[:], logger.level, logger.propagate = saved
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(x["status"], x["bytes"]) for x in lines] == [
        (206, 10),
        (206, 10),
        (200, len(DATA) + 6),
    ]
    assert lines[0].keys() - {"range"} == lines[2].keys()
    assert lines[2]["path"] == url and lines[2]["ua"] == "pytest"


def test_serve_with_two_workers(tmp_path: Path) -> None:
    data = tmp_path / "reg"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    wgtpm = [sys.executable, "-m", "wgtpm", "registry"]
    token = registry_token(data, "example.com", env)
    port = free_port()
    proc = subprocess.Popen(
        [*wgtpm, "serve", "--port", str(port), "--data", str(data), "--workers", "2"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        fs = {"wgt.mod": modtext("example.com/m"), "a.bin": b"abc"}
        with httpx.Client(base_url=url) as http:
            assert publish(http, token, "example.com/m", "v1.0.0", fs).status_code == 201
            for _ in range(6):  # new connections: both workers answer
                assert httpx.get(f"{url}/example.com/m/@v/v1.0.0/a.bin").content == b"abc"
                assert httpx.get(f"{url}/example.com/m/@v/list").text == "v1.0.0\n"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    started = [r for r in records if r.get("message", "").startswith("registry started")]
    stopped = [r for r in records if r.get("message", "").startswith("registry stopped")]
    assert len(started) == 2 and len(stopped) == 2, err
    assert token not in err


def test_the_quick_access_line_is_what_json_dumps_writes() -> None:
    from registry.accesslog import JsonFormatter, log_request

    out = io.StringIO()
    logger = logging.getLogger("registry")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    scope = {
        "method": "GET",
        "path": '/example.com/m/@v/v1.0.0/é "q"\\\n',
        "client": ("::1", 5),
        "headers": [(b"range", b"bytes=0-1"), (b"user-agent", "wgtpm/ü".encode("latin-1"))],
    }
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    try:
        configure(out)
        log_request(scope, 206, 2, time.perf_counter())
        logger.handlers[0].flush()
        logger.handlers[:] = [Keep()]
        log_request(scope, 206, 2, time.perf_counter())
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
    quick = json.loads(out.getvalue())
    slow = json.loads(JsonFormatter().format(records[0]))
    assert (
        quick.keys() == slow.keys() and quick["path"] == scope["path"] and quick["ua"] == "wgtpm/ü"
    )
    assert {k: v for k, v in quick.items() if k not in ("time", "ms")} == {
        k: v for k, v in slow.items() if k not in ("time", "ms")
    }
    assert out.getvalue().isascii() and out.getvalue().endswith("}\n")
    assert len(quick["time"]) == len(slow["time"]) == len("2026-12-01T01:33:53.120+00:00")


def test_a_proxied_module_is_remembered_only_once_committed_here(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from registry.proxy import open_proxy

    server = request.getfixturevalue("upstream")[1]  # a proxy tree on loopback
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    reg = Registry(
        open_metadata_store(str(tmp_path / "r.db")),
        FolderBlobStore(tmp_path / "b"),
        proxy=open_proxy(server.url, tmp_path / "proxy", {"WGTPM_HTTP_RETRIES": "0"}),
    )
    try:
        app = create_app(registry=reg)
        cache = app.state.protocol_cache
        info, listing = f"/{UP}/@v/v0.2.0.info", f"/{UP}/@v/list"
        first = call(app, info)
        assert first[0] == 200 and info not in cache.answers  # the upstream's, not committed
        assert call(app, listing)[2] == b"v0.1.0\nv0.2.0\n" and listing not in cache.lists
        file = f"/{UP}/@v/v0.2.0/tiny/weights.bin"
        assert call(app, file)[2] == b"\x02" * 4000 and file in cache.answers  # filled
        assert call(app, info) == first and info in cache.answers
        assert call(app, info) == first
    finally:
        reg.close()
