"""The other libraries' internals that wgtpm uses (:mod:`wgtpm._compat`): each is there in
the versions installed, and where one is not, the public path works and says so once.

A test of the first kind fails naming what went missing (``httpcore 1.0.2 lacks
ConnectionPool._assign_requests_to_connections``): raise the floor in
pyproject.toml or teach the compat module the new shape. A test of the second kind
takes a piece away (as an older or newer version would) and runs the fallback
over a real loopback connection.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterator

import pytest

from tests.servers import LoopbackServer, Request, Response, serve_bytes
from wgtpm import _compat, _httptransport
from wgtpm._compat import h11 as compat_h11
from wgtpm._compat import httpcore as compat_httpcore
from wgtpm._report import Silent, set_network
from wgtpm.httpclient import HttpClient, HttpOptions

BIG = bytes(range(256)) * (8 << 10)  # 2 MiB: over RAW_MIN, so read past h11


class _Files(LoopbackServer):
    def route(self, req: Request) -> Response:
        return serve_bytes(req, BIG if req.path == "/big" else b"ok")


@pytest.fixture
def server() -> Iterator[_Files]:
    with _Files() as srv:
        yield srv


class _Notices(Silent):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def notice(self, message: str) -> None:
        self.lines.append(message)


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Notices]:
    """``wgtpm -x``: the notices of the network code, and a fresh list of fallbacks."""
    monkeypatch.setattr(_compat, "FALLBACKS", [])
    notices = _Notices()
    set_network(notices, trace=True)
    try:
        yield notices
    finally:
        set_network(Silent(), trace=False)


def _lacks(library: str, missing: list[str]) -> str:
    version = importlib.metadata.version(library)
    return (
        f"{library} {version} lacks {', '.join(missing)}, which wgtpm/_compat/{library}.py "
        "uses: raise the floor in pyproject.toml or teach that module the new shape"
    )


def _download(http: HttpClient, url: str) -> bytes:
    with http.stream(url) as resp:
        return b"".join(resp.iter_bytes())


# ---- what the installed versions have ---------------------------------------------


def test_httpcore_has_the_pool_bookkeeping() -> None:
    missing = compat_httpcore.pool_missing()
    assert not missing, _lacks("httpcore", missing)
    assert _httptransport.Pool is compat_httpcore.FastPool


def test_httpcore_has_its_sync_stream() -> None:
    missing = compat_httpcore.stream_missing()
    assert not missing, _lacks("httpcore", missing)


def test_httpcore_keeps_the_h11_state_where_wgtpm_looks() -> None:
    missing = compat_httpcore.state_missing()
    assert not missing, _lacks("httpcore", missing)


def test_h11_has_the_reader_count() -> None:
    missing = compat_h11.reader_missing()
    assert not missing, _lacks("h11", missing)


def test_httpx_imports_its_command_line_client() -> None:
    spec = importlib.util.find_spec("httpx")
    assert spec is not None and spec.loader is not None
    source = spec.loader.get_source("httpx")  # type: ignore[attr-defined]
    assert "._main import main" in source, _lacks("httpx", ["the import of httpx._main"])


def test_no_fallback_was_taken() -> None:
    assert not _compat.FALLBACKS, f"fallbacks taken in this process: {_compat.FALLBACKS}"


def test_a_large_body_keeps_its_connection(server: _Files) -> None:
    """The fast path the h11 and httpcore pieces make: two 2 MiB bodies read past h11, one
    connection (the fallback below closes it after each)."""
    with HttpClient(HttpOptions(retries=0)) as http:
        assert _download(http, server.url + "/big") == BIG
        assert _download(http, server.url + "/big") == BIG
    assert server.connections == 1


# ---- the fallbacks, with the piece taken away ----------------------------------------


def test_a_fallback_is_one_trace_line(traced: _Notices) -> None:
    _compat.fallback("somelib", "Thing._field", "the slow way")
    _compat.fallback("somelib", "Thing._field", "the slow way")
    assert traced.lines == ["compat: somelib has no Thing._field; the slow way"]
    assert _compat.FALLBACKS == [("somelib", "Thing._field", "the slow way")]


def test_without_the_pool_method_httpcores_pool_is_used(
    monkeypatch: pytest.MonkeyPatch, traced: _Notices, server: _Files
) -> None:
    import httpcore

    with monkeypatch.context() as m:  # httpcore 1.0.0-1.0.2 has no such method
        m.delattr(httpcore.ConnectionPool, "_assign_requests_to_connections")
        missing = compat_httpcore.pool_missing()
    assert missing == ["ConnectionPool._assign_requests_to_connections"]
    pool = compat_httpcore.pool_class(missing)
    assert pool is httpcore.ConnectionPool
    assert traced.lines == [
        "compat: httpcore has no ConnectionPool._assign_requests_to_connections; "
        "its own pool bookkeeping is used (slower)"
    ]
    monkeypatch.setattr(_httptransport, "Pool", pool)
    with HttpClient(HttpOptions(retries=0)) as http:
        assert http.get_bytes(server.url + "/a") == b"ok"
        assert _download(http, server.url + "/big") == BIG


def test_a_pool_field_gone_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpcore

    def init(self: object, *a: object, **k: object) -> None:
        self.__dict__["_pool_connections"] = []  # renamed, as a new httpcore might

    monkeypatch.setattr(httpcore.ConnectionPool, "__init__", init)
    assert "ConnectionPool._connections" in compat_httpcore.pool_missing()


def test_without_sync_stream_the_connection_is_made_again(
    monkeypatch: pytest.MonkeyPatch, server: _Files
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "httpcore._backends.sync", None)
    assert compat_httpcore.stream_missing() == ["httpcore._backends.sync.SyncStream"]
    monkeypatch.setattr(compat_httpcore, "_STREAM_MISSING", ["httpcore._backends.sync.SyncStream"])
    with HttpClient(HttpOptions(retries=0)) as http:
        assert http.get_bytes(server.url + "/a") == b"ok"
        assert http.get_bytes(server.url + "/b") == b"ok"
    assert server.connections == 2  # the one opened ahead, closed; then one made for both


def test_without_the_h11_count_a_large_body_closes_its_connection(
    monkeypatch: pytest.MonkeyPatch, server: _Files
) -> None:
    import h11._readers

    class ContentLengthReader:  # a newer h11's, counting under another name
        def __init__(self, length: int) -> None:
            self._left = length

    monkeypatch.setattr(h11._readers, "ContentLengthReader", ContentLengthReader)
    assert compat_h11.reader_missing() == ["ContentLengthReader._remaining"]
    monkeypatch.undo()
    monkeypatch.setattr(compat_h11, "MISSING", ["ContentLengthReader._remaining"])
    with HttpClient(HttpOptions(retries=0)) as http:
        assert _download(http, server.url + "/big") == BIG
        assert _download(http, server.url + "/big") == BIG
    assert server.connections == 2  # each body's connection closed after it


def test_without_httpcores_state_a_large_body_closes_its_connection(
    monkeypatch: pytest.MonkeyPatch, server: _Files
) -> None:
    from httpcore._sync.http11 import HTTP11Connection

    real = HTTP11Connection.__init__

    def init(self: object, *a: object, **k: object) -> None:  # keeps h11 under another name
        real(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(HTTP11Connection, "__init__", init)
    assert compat_httpcore.state_missing() == ["HTTP11Connection._h11_state"]
    monkeypatch.undo()
    monkeypatch.setattr(compat_httpcore, "_STATE_MISSING", ["HTTP11Connection._h11_state"])
    with HttpClient(HttpOptions(retries=0)) as http:
        assert _download(http, server.url + "/big") == BIG
        assert _download(http, server.url + "/big") == BIG
    assert server.connections == 2
