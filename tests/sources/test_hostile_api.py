"""API answers of the wrong shape give one clear wgtpm error, never a traceback (issue 9).

A loopback server answers every request with the bytes a test sets: not
JSON, not UTF-8, nested 100,000 deep, or JSON whose fields have the wrong
type. Each source must raise a :class:`FetchError` naming the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.servers import LoopbackServer, Request, Response
from wgtpm._errors import FetchError
from wgtpm.httpclient import HttpClient
from wgtpm.sources.github import GitHubSource
from wgtpm.sources.huggingface import HuggingFaceSource
from wgtpm.sources.pawhub import PawHubSource
from wgtpm.sources.proxy import ProxySource

DEEP = b"[" * 100_000 + b"]" * 100_000


class Canned(LoopbackServer):
    """Answers every GET with ``body`` (200, JSON content type)."""

    name = "canned"
    body = b"{}"

    def route(self, req: Request) -> Response:
        return Response(200, {"Content-Type": "application/json"}, self.body)


@pytest.fixture
def canned() -> Iterator[Canned]:
    with Canned() as server:
        yield server


def _release(**fields: object) -> bytes:
    rel = {"tag_name": "v0.1.0", "assets": [], "published_at": "2026-01-01T00:00:00Z"}
    rel.update(fields)
    return json.dumps([rel]).encode()


@pytest.mark.parametrize(
    "body",
    [
        b"<html>rate limited</html>",
        b'["\xff\xfe"]',
        DEEP,
        b'{"not": "a list"}',
        _release(tag_name=7),
        _release(assets={"name": "x"}),
        _release(published_at="99999-01-01T00:00:00Z"),
        _release(published_at=12),
    ],
    ids=[
        "not-json",
        "not-utf8",
        "deep",
        "not-a-list",
        "tag-int",
        "assets-dict",
        "time-range",
        "time-int",
    ],
)
def test_github_listing(body: bytes, canned: Canned, http: HttpClient) -> None:
    canned.body = body
    with pytest.raises(FetchError, match=r"^github\.com/acme/x: listing releases: "):
        GitHubSource(http, api_url=canned.url).versions("github.com/acme/x")


@pytest.mark.parametrize(
    "body",
    [b"not json", DEEP, b'{"program_id": 5}', b'{"versions": "all"}'],
    ids=["not-json", "deep", "id-int", "versions-str"],
)
def test_paw_hub(body: bytes, canned: Canned, http: HttpClient) -> None:
    canned.body = body
    src = PawHubSource(http, api_url=canned.url)
    with pytest.raises(FetchError, match=r"^programasweights\.com/acme/t@"):
        src.info("programasweights.com/acme/t", "v0.0.0-20260101000000-0123456789ab")


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "acme/t", "sha": 5, "lastModified": "2026-01-01T00:00:00.000Z"}',
        b'{"id": "acme/t", "sha": "abc", "lastModified": null}',
        b'{"sha": "abc"}',
        b"not json",
    ],
    ids=["sha-int", "no-time", "no-id", "not-json"],
)
def test_hugging_face(body: bytes, canned: Canned, http: HttpClient) -> None:
    canned.body = body
    src = HuggingFaceSource(http, endpoint=canned.url, token="")
    with pytest.raises(FetchError, match=r"^hf\.co/acme/t@main: "):
        src.info("hf.co/acme/t", "main")


@pytest.mark.parametrize("body", [DEEP, b"[1]", b"\xff"], ids=["deep", "list", "not-utf8"])
def test_proxy_info(body: bytes, canned: Canned, http: HttpClient) -> None:
    canned.body = body
    with pytest.raises(FetchError, match=r"malformed \.info"):
        ProxySource(canned.url, http).info("example.com/m", "v1.0.0")


@pytest.mark.parametrize("route", ["/endless", "/huge-length", "/bomb"])
def test_hugging_face_api_bodies_are_capped(route: str, http: HttpClient) -> None:
    from tests.servers.hostile import HostileServer

    with HostileServer() as hostile:
        src = HuggingFaceSource(http, endpoint=hostile.url + route, token="")
        with pytest.raises(FetchError, match=r"^hf\.co/acme/t@main: ") as err:
            src.info("hf.co/acme/t", "main")
    assert "larger than" in str(err.value) or "encoded body" in str(err.value)
