"""Named limits of the HTTP client against a loopback server that lies, bombs and trickles."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.hostile import HostileServer
from wgtpm.httpclient import (
    MAX_METADATA,
    DeadlineExceededError,
    HttpClient,
    HttpOptions,
    HTTPStatusError,
    RedirectRefusedError,
    ResponseTooLargeError,
    TransportError,
    redact_url,
)


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

    calls = []

    def resolve(host: str, *a: Any, **k: Any) -> Any:
        calls.append(host)
        raise socket.gaierror(getattr(socket, errno_name), "resolver says no")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "2")
    http = HttpClient()
    monkeypatch.setattr(HttpClient, "_sleep", lambda *a, **k: None)
    with http, pytest.raises(TransportError) as err:
        http.get("http://no-such-host.example/x")
    assert len(calls) == tries  # a name that does not exist is final; "try later" is retried
    if tries == 1:
        assert "no such host: no-such-host.example" in str(err.value), err.value
