"""Credentials go to their own origin only, and secrets never reach a message (issue 9).

A hostile (or compromised) API names URLs on other origins: an asset ``url``,
a ``Link: rel="next"`` page. The token must not follow them. Servers that
echo the Authorization header must not get the token printed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import LoopbackServer, Request, Response
from wgtpm._errors import WgtpmError
from wgtpm.httpclient import Credential, HttpClient, HTTPStatusError, redact
from wgtpm.sources.github import GitHubSource
from wgtpm.sources.pawhub import PawHubSource

TOKEN = "ghp_0123456789abcdef"


class Elsewhere(LoopbackServer):
    """Another origin: answers everything with an empty JSON list, and logs what it got."""

    name = "elsewhere"

    def route(self, req: Request) -> Response:
        return Response.json([])


class LyingApi(LoopbackServer):
    """A GitHub-like API whose asset URLs and next pages point at ``elsewhere``."""

    name = "api"

    def __init__(self, elsewhere: Elsewhere) -> None:
        super().__init__()
        self.elsewhere = elsewhere

    def route(self, req: Request) -> Response:
        other = self.elsewhere.url
        if req.path.startswith("/echo"):
            return Response.text(f"bad credentials: {req.header('authorization')}", 500)
        if req.path.endswith("/releases"):
            rel = {
                "tag_name": "v0.1.0",
                "draft": False,
                "prerelease": False,
                "published_at": "2026-01-01T00:00:00Z",
                "assets": [{"name": "w.bin", "url": f"{other}/asset/1", "size": 2}],
            }
            link = f'<{other}/repos/acme/x/releases?page=2>; rel="next"'
            return Response.json([rel], headers={"Link": link})
        return Response.json({"message": "Not Found"}, 404)


@pytest.fixture
def servers() -> Iterator[tuple[LyingApi, Elsewhere]]:
    with Elsewhere() as other, LyingApi(other) as api:
        yield api, other


def test_the_github_token_stays_on_the_api_origin(
    servers: tuple[LyingApi, Elsewhere], http: HttpClient
) -> None:
    api, other = servers
    src = GitHubSource(http, api_url=api.url, token=TOKEN)
    assert src.versions("github.com/acme/x") == ["v0.1.0"]
    req = src.file("github.com/acme/x", "v0.1.0", "w.bin")
    assert "Authorization" not in req.headers
    assert other.log.where(path="/repos/*")  # the next page was fetched ...
    assert not other.log.where(header="authorization")  # ... without the token
    assert all(s.header("authorization") == f"Bearer {TOKEN}" for s in api.log)


def test_the_paw_key_goes_to_the_hub_only(http: HttpClient) -> None:
    src = PawHubSource(http, api_url="https://hub.example", api_key="paw_key_123456")
    assert src._headers("https://hub.example/api/v1/programs/x") == {"X-API-Key": "paw_key_123456"}
    assert src._headers("https://hub.example:8443/x") == {}
    assert src._headers("http://hub.example/x") == {}


def test_a_credential_names_one_origin() -> None:
    cred = Credential("https://api.github.com", "Authorization", f"Bearer {TOKEN}")
    assert cred.headers_for("https://api.github.com/repos/a/b") == {
        "Authorization": f"Bearer {TOKEN}"
    }
    for url in ("http://api.github.com/x", "https://api.github.com.evil/x", "https://cdn/x"):
        assert cred.headers_for(url) == {}
    assert TOKEN not in repr(cred)


def test_an_echoed_token_is_redacted(servers: tuple[LyingApi, Elsewhere], http: HttpClient) -> None:
    api, _ = servers
    cred = Credential(api.url, "Authorization", f"Bearer {TOKEN}")
    with pytest.raises(HTTPStatusError) as err:
        http.get(api.url + "/echo", headers=cred.headers_for(api.url))
    assert TOKEN not in str(err.value)
    assert "bad credentials: ***" in str(err.value)
    assert redact(f"x {TOKEN} y") == "x *** y"


def test_a_module_error_shows_no_token(
    servers: tuple[LyingApi, Elsewhere], http: HttpClient
) -> None:
    api, _ = servers
    src = GitHubSource(http, api_url=api.url + "/echo", token=TOKEN)
    with pytest.raises(WgtpmError) as err:
        src.versions("github.com/acme/x")
    assert TOKEN not in str(err.value)
