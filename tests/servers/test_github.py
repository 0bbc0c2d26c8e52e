"""The loopback GitHub API answers in GitHub's shapes (checked with plain httpx)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.servers import CdnServer
from tests.servers.github import GitHubServer

TOKEN = "ghp_secret"


@pytest.fixture
def gh(cdn: CdnServer) -> Iterator[GitHubServer]:
    with GitHubServer(cdn, token=TOKEN) as server:
        yield server


def test_releases_are_paginated_newest_first_with_link_headers(gh: GitHubServer) -> None:
    repo = gh.repo("acme", "xor")
    for i in range(5):
        repo.release(f"v0.{i}.0", {})
    first = httpx.get(f"{gh.url}/repos/acme/xor/releases", params={"per_page": 2})
    assert [r["tag_name"] for r in first.json()] == ["v0.4.0", "v0.3.0"]
    assert first.links["next"]["url"].endswith("per_page=2&page=2")
    assert first.links["last"]["url"].endswith("page=3")
    last = httpx.get(first.links["last"]["url"])
    assert [r["tag_name"] for r in last.json()] == ["v0.0.0"]
    assert "next" not in last.links and last.links["first"]["url"].endswith("page=1")


def test_drafts_are_visible_only_with_the_token(gh: GitHubServer) -> None:
    repo = gh.repo("acme", "xor")
    repo.release("v1.0.0", {})
    repo.release("v2.0.0", {}, draft=True)
    anon = httpx.get(f"{gh.url}/repos/acme/xor/releases").json()
    authed = httpx.get(
        f"{gh.url}/repos/acme/xor/releases", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()
    assert [r["tag_name"] for r in anon] == ["v1.0.0"]
    assert (authed[0]["tag_name"], authed[0]["draft"], authed[0]["published_at"]) == (
        "v2.0.0",
        True,
        None,
    )
    assert httpx.get(f"{gh.url}/repos/acme/xor/releases/tags/v2.0.0").status_code == 404
    assert "v2.0.0" not in repo.tags


def test_latest_tags_and_commits(gh: GitHubServer) -> None:
    repo = gh.repo("acme", "xor")
    repo.release("v1.0.0", {})
    repo.release("v1.1.0-rc.1", {}, prerelease=True)
    assert httpx.get(f"{gh.url}/repos/acme/xor/releases/latest").json()["tag_name"] == "v1.0.0"
    tags = httpx.get(f"{gh.url}/repos/acme/xor/tags").json()
    assert {t["name"]: t["commit"]["sha"] for t in tags} == repo.tags
    sha = repo.tags["v1.0.0"]
    only_sha = httpx.get(
        f"{gh.url}/repos/acme/xor/commits/v1.0.0", headers={"Accept": "application/vnd.github.sha"}
    )
    assert only_sha.text == sha
    assert httpx.get(f"{gh.url}/repos/acme/xor/commits/{sha[:7]}").json()["sha"] == sha
    assert httpx.get(f"{gh.url}/repos/acme/xor/commits/nope").status_code == 422


def test_assets_redirect_to_the_cdn(gh: GitHubServer, cdn: CdnServer) -> None:
    rel = gh.repo("acme", "xor").release("v1.0.0", {"w.bin": b"weights", "old.bin": b"o"})
    rel.assets[1].digest = False
    doc = httpx.get(f"{gh.url}/repos/acme/xor/releases/tags/v1.0.0").json()
    w, old = doc["assets"]
    assert w["digest"].startswith("sha256:") and old["digest"] is None
    meta = httpx.get(w["url"])
    assert meta.json()["name"] == "w.bin"
    raw = httpx.get(w["url"], headers={"Accept": "application/octet-stream"})
    assert raw.status_code == 302 and raw.headers["location"].startswith(cdn.url)
    assert httpx.get(raw.headers["location"]).content == b"weights"
    assert httpx.get(w["browser_download_url"], follow_redirects=True).content == b"weights"


def test_etags_rate_limits_and_credentials(gh: GitHubServer) -> None:
    gh.repo("acme", "xor").release("v1.0.0", {})
    gh.repo("acme", "secret", private=True)
    url = f"{gh.url}/repos/acme/xor/releases"
    gh.rate_limit(remaining=2, reset_in=600)
    first = httpx.get(url)
    assert first.headers["x-ratelimit-remaining"] == "1"
    again = httpx.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.headers["x-ratelimit-remaining"] == "1"
    assert httpx.get(url).status_code == 200
    limited = httpx.get(url)
    assert limited.status_code == 403 and limited.headers["x-ratelimit-remaining"] == "0"
    assert "rate limit exceeded" in limited.json()["message"]
    assert int(limited.headers["x-ratelimit-reset"]) > 0
    gh.rate_limit(remaining=100)
    assert httpx.get(f"{gh.url}/repos/acme/secret").status_code == 404
    assert (
        httpx.get(
            f"{gh.url}/repos/acme/secret", headers={"Authorization": f"token {TOKEN}"}
        ).status_code
        == 200
    )
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
