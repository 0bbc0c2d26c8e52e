"""Named limits of the HTTP client against a loopback server that lies, bombs and trickles."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import Request, Response
from tests.servers.hostile import HostileServer
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.conftest import RecordingSums
from wgtpm._errors import FetchError
from wgtpm.cache import Cache
from wgtpm.httpclient import (
    MAX_METADATA,
    DeadlineExceededError,
    HttpClient,
    HttpOptions,
    HTTPStatusError,
    RedirectError,
    RedirectRefusedError,
    ResponseTooLargeError,
    TransportError,
    redact_url,
)
from wgtpm.modfetch import Fetcher, FetchOptions
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.proxy import ProxySource


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        yield server


@pytest.fixture
def http() -> Iterator[HttpClient]:
    # The deadline is generous: a gzip bomb is inflated up to the cap on a loaded machine too.
    with HttpClient(HttpOptions(timeout=5, retries=1, backoff=0.01, deadline=8.0)) as client:
        yield client


@pytest.mark.parametrize("route", ["/endless", "/huge-length", "/bomb"])
def test_a_metadata_body_stops_at_its_limit(
    route: str, hostile: HostileServer, http: HttpClient
) -> None:
    t = time.monotonic()
    with pytest.raises(ResponseTooLargeError) as err:
        http.get_bytes(hostile.url + route)
    assert time.monotonic() - t < 10
    assert err.value.limit == MAX_METADATA
    assert err.value.url == hostile.url + route
    assert str(MAX_METADATA) in str(err.value) and route in str(err.value)
    assert len(hostile.paths) == 1  # too large is not retried


def test_a_smaller_limit_is_honoured(hostile: HostileServer, http: HttpClient) -> None:
    with pytest.raises(ResponseTooLargeError, match="larger than the 1 bytes"):
        http.get_bytes(hostile.url + "/ok", limit=1)
    assert http.get_bytes(hostile.url + "/ok", limit=2) == b"ok"


def test_an_endless_error_body_is_read_only_so_far(hostile: HostileServer) -> None:
    with (
        HttpClient(HttpOptions(timeout=5, retries=0, deadline=3.0)) as http,
        pytest.raises(HTTPStatusError) as err,
    ):
        http.get(hostile.url + "/error-endless")
    assert err.value.status == 500
    assert len(err.value.body) <= 2000


def test_a_trickle_meets_the_deadline(hostile: HostileServer) -> None:
    with HttpClient(HttpOptions(timeout=5, retries=0, deadline=0.5)) as http:
        t = time.monotonic()
        with pytest.raises(DeadlineExceededError, match=r"within 0\.5s"):
            http.get(hostile.url + "/trickle")
    assert time.monotonic() - t < 3


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pass@reg.example/x", "http://***@reg.example/x"),
        ("https://ghp_TOKEN@reg.example:8443/a?b", "https://***@reg.example:8443/a?b"),
        ("https://user@reg.example/", "https://***@reg.example/"),
        ("https://reg.example/a@b", "https://reg.example/a@b"),
    ],
)
def test_user_information_is_never_shown(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def _redirecting(target: str) -> Any:
    import httpx

    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.path == "/start":
            return httpx.Response(302, headers={"Location": target})
        return httpx.Response(200, content=b"ok")

    return httpx.MockTransport(handler), seen


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:8080/admin",
        "http://localhost/x",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/x",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
    ],
)
def test_a_public_server_cannot_redirect_inwards(target: str) -> None:
    transport, seen = _redirecting(target)
    with HttpClient(HttpOptions(retries=2, backoff=0.01), transport=transport) as http:
        with pytest.raises(RedirectRefusedError, match="refused a redirect"):
            http.get("https://models.example/start")
        with pytest.raises(RedirectRefusedError), http.stream("https://models.example/start"):
            pass
    assert seen == ["https://models.example/start"] * 2  # never followed, never retried


@pytest.mark.parametrize(
    ("start", "target"),
    [
        ("http://127.0.0.1:9000/start", "http://127.0.0.1:9001/blob"),  # tests, local mirrors
        ("http://10.0.0.2/start", "http://10.0.0.3/blob"),  # a private mirror
        ("https://models.example/start", "https://cdn.example/blob"),
    ],
)
def test_other_redirects_are_followed(start: str, target: str) -> None:
    transport, seen = _redirecting(target)
    with HttpClient(HttpOptions(retries=0), transport=transport) as http:
        assert http.get_bytes(start) == b"ok"
    assert seen == [start, target]


@pytest.mark.parametrize(
    ("errno_name", "tries"), [("EAI_NONAME", 1), ("EAI_AGAIN", 3)], ids=["no such name", "later"]
)
def test_an_unknown_host_is_not_retried(
    monkeypatch: pytest.MonkeyPatch, errno_name: str, tries: int
) -> None:
    import socket

    from wgtpm.httpclient._retrying import Retries

    calls = []

    def resolve(host: str, *a: Any, **k: Any) -> Any:
        calls.append(host)
        raise socket.gaierror(getattr(socket, errno_name), "resolver says no")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "2")
    http = HttpClient()
    monkeypatch.setattr(Retries, "sleep", lambda *a, **k: None)
    with http, pytest.raises(TransportError) as err:
        http.get("http://no-such-host.example/x")
    assert len(calls) == tries  # a name that does not exist is final; "try later" is retried
    if tries == 1:
        assert "no such host: no-such-host.example" in str(err.value), err.value


# ---- redirects that cannot succeed are final (issue 26) ----------------------------


@pytest.mark.parametrize(
    ("route", "what"),
    [
        ("/loop/x", "more than 10 redirects in a row"),
        ("/to-file/x", "refused a redirect to file:///etc/passwd"),
    ],
)
def test_a_redirect_loop_or_to_file_is_final(route: str, what: str, hostile: HostileServer) -> None:
    opts = HttpOptions(timeout=5, retries=4, backoff=0.2)
    for read in ("get", "stream"):
        hostile.paths.clear()
        t = time.monotonic()
        with HttpClient(opts) as http, pytest.raises(RedirectError) as err:
            if read == "get":
                http.get(hostile.url + route)
            else:
                with http.stream(hostile.url + route):
                    pass
        assert time.monotonic() - t < 3  # no retry waits
        assert len(hostile.paths) <= opts.max_redirects + 1, (read, len(hostile.paths))
        text = str(err.value)
        assert what in text and route in text and "\n" not in text, text
        assert "retrying" not in text and "gave up" not in text


@pytest.mark.parametrize(
    "location",
    ["ftp://files.example/x", "javascript:alert(1)", "http://[bad/x", "http://h.example:99999/"],
)
def test_a_redirect_to_no_http_url_is_one_error(location: str) -> None:
    transport, seen = _redirecting(location)
    with (
        HttpClient(HttpOptions(retries=3, backoff=0.01), transport=transport) as http,
        pytest.raises(RedirectError, match="refused a redirect"),
    ):
        http.get("https://models.example/start")
    assert seen == ["https://models.example/start"]


@pytest.mark.parametrize("route", ["/loop", "/to-file"])
def test_get_through_a_looping_proxy_fails_at_once_in_one_line(  # type: ignore[no-untyped-def]
    route: str, hostile: HostileServer, project: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPROXY", hostile.url + route)
    t = time.monotonic()
    r = wgtpm("get", "example.com/acme/x@v0.1.0", cwd=project)
    assert r.code == 1
    assert time.monotonic() - t < 5
    assert len(hostile.paths) <= 11, hostile.paths  # one try: the redirect limit, no retries
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "redirect" in lines[0] and "Traceback" not in r.err, r.err
    assert "passwd" not in r.out and "root:" not in r.err


class _RedirectingTree(ProxyTreeServer):
    """A proxy tree whose ``w.bin`` redirects to itself, or to ``file:///etc/passwd``."""

    def __init__(self, root: Path, to_file: bool) -> None:
        super().__init__(root)
        self.to_file = to_file

    def route(self, req: Request) -> Response:
        if req.path.endswith("/w.bin"):
            return Response.redirect("file:///etc/passwd" if self.to_file else req.raw_path)
        return super().route(req)


@pytest.mark.parametrize(
    ("to_file", "size"),
    [(False, 700), (True, 700), (False, 33 << 20)],  # the last is fetched as parallel ranges
    ids=["loop", "file", "loop-ranged"],
)
def test_a_download_redirected_in_a_loop_is_not_resumed(
    tmp_path: Path, to_file: bool, size: int
) -> None:
    tree = ProxyTree(tmp_path / "tree")
    tree.add("example.com/acme/loop", "v0.1.0", {"w.bin": b"w" * size})
    opts = HttpOptions(timeout=5, retries=4, backoff=0.01)
    with _RedirectingTree(tree.root, to_file) as srv, HttpClient(opts) as http:
        fetcher = Fetcher(
            Cache(tmp_path / "cache"),
            ProxySource(srv.url, http),
            RecordingSums(),
            http=lambda: http,
            opts=FetchOptions(resume_backoff=0.01),
        )
        with pytest.raises(FetchError, match="redirect") as err:
            fetcher.download("example.com/acme/loop", "v0.1.0")
        gets = srv.log.where(path="*/w.bin")
    assert 1 <= len(gets) <= opts.max_redirects + 1  # not 5 tries x 6 resumes
    assert "gave up" not in str(err.value) and "w.bin" in str(err.value)
