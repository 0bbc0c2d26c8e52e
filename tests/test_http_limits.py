"""Named limits of the HTTP client against a loopback server that lies, bombs and trickles."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.servers.hostile import HostileServer
from wgtpm.httpclient import (
    MAX_METADATA,
    DeadlineExceededError,
    HttpClient,
    HttpOptions,
    HTTPStatusError,
    ResponseTooLargeError,
    redact_url,
)


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        yield server


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(HttpOptions(timeout=5, retries=1, backoff=0.01, deadline=3.0)) as client:
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
