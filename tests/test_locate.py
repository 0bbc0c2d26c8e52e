"""Where a URL redirects to, asked without following it (HttpClient.locate) and ahead of
the downloads that need it (Locator): issue 30's files that come by redirect."""

from __future__ import annotations

from typing import Any

import pytest

from wgtpm.httpclient import (
    HttpClient,
    HttpOptions,
    Locator,
    RedirectError,
    RedirectRefusedError,
)


def _hub(locations: dict[str, str]) -> tuple[Any, list[tuple[str, str]]]:
    """A mock server: each path in ``locations`` redirects there; every other answers 200
    (``/gone``: 404). Returns its transport and the (method, URL) of each request."""
    import httpx

    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, str(request.url)))
        if request.url.path in locations:
            return httpx.Response(302, headers={"Location": locations[request.url.path]})
        if request.url.path == "/gone":
            return httpx.Response(404)
        return httpx.Response(200, content=b"the bytes")

    return httpx.MockTransport(handler), seen


def _client(transport: Any) -> HttpClient:
    return HttpClient(HttpOptions(retries=1, backoff=0.01), transport=transport)


def test_locate_names_the_target_without_following_it() -> None:
    transport, seen = _hub({"/a": "/blob/a?sig=1", "/b": "https://cdn.example/b?sig=2"})
    with _client(transport) as http:
        assert http.locate("https://hub.example/a") == "https://hub.example/blob/a?sig=1"
        assert http.locate("https://hub.example/b") == "https://cdn.example/b?sig=2"
        assert http.locate("https://hub.example/plain") is None  # answered, no redirect
    assert seen == [
        ("HEAD", "https://hub.example/a"),
        ("HEAD", "https://hub.example/b"),
        ("HEAD", "https://hub.example/plain"),
    ]


@pytest.mark.parametrize(
    ("location", "error"),
    [("http://127.0.0.1:8080/admin", RedirectRefusedError), ("file:///etc/passwd", RedirectError)],
)
def test_locate_keeps_the_redirect_rules(location: str, error: type[Exception]) -> None:
    transport, seen = _hub({"/a": location})
    with _client(transport) as http, pytest.raises(error, match="refused a redirect"):
        http.locate("https://hub.example/a")
    assert len(seen) == 1  # final: not retried


def test_locator_asks_each_url_once_and_hands_its_target_once() -> None:
    transport, seen = _hub({"/a": "https://cdn.example/a", "/b": "https://cdn.example/b"})
    a, b = "https://hub.example/a", "https://hub.example/b"
    with _client(transport) as http:
        loc = Locator(http, jobs=2)
        loc.ahead([(a, {}), (b, {})])
        loc.ahead([(a, {}), (b, {})])  # asked already: not again
        assert loc.take(a) == "https://cdn.example/a"
        assert loc.take(b) == "https://cdn.example/b"
        assert loc.take(a) is None  # taken: the caller's own download goes to the URL
        loc.ahead([(a, {})])  # taken: never asked again
        assert loc.take("https://hub.example/never-asked") is None
    assert sorted(seen) == [("HEAD", a), ("HEAD", b)]


def test_locator_hands_nothing_failed_or_stale() -> None:
    transport, _ = _hub({"/a": "https://cdn.example/a", "/inwards": "http://10.0.0.1/x"})
    gone, inwards, a = (f"https://hub.example/{p}" for p in ("gone", "inwards", "a"))
    with _client(transport) as http:
        loc = Locator(http, jobs=2)
        loc.ahead([(gone, {}), (inwards, {})])
        assert loc.take(gone) is None  # the download asks again and reports the 404
        assert loc.take(inwards) is None  # the download's own request is refused, and says so
        stale = Locator(http, fresh=-1.0)  # every answer too old (a signed URL expires)
        stale.ahead([(a, {})])
        assert stale.take(a) is None


def test_small_lfs_makes_each_files_request_once() -> None:
    """A commit's small LFS files, asked in order: each one's request (its credential
    made) once for the look-ahead, not once for each of the files before it."""
    from wgtpm.sources._base import FileRequest
    from wgtpm.sources._hflocate import LOCATE_AHEAD, SmallLfs
    from wgtpm.sources._hubapi import HubFile

    names = [f"f{i:03d}.bin" for i in range(3 * LOCATE_AHEAD)]
    tree = {n: HubFile(n, 10, None, "0" * 64) for n in names}
    transport, seen = _hub({f"/{n}": f"https://cdn.example/{n}" for n in names})
    made: list[str] = []

    def request(path: str, commit: str, name: str) -> FileRequest:
        made.append(name)
        return FileRequest(f"https://hub.example/{name}")

    with _client(transport) as http:
        small = SmallLfs(http, lambda rid, commit: tree, request)
        for n in names:
            got = small.located("acme/tiny", "hub.example/acme/tiny", "c0", n, request("", "", n))
            assert got.url in (f"https://hub.example/{n}", f"https://cdn.example/{n}")
    assert sorted(made) == sorted(names + names[1:])  # the file's own, and one look-ahead
    assert sorted(seen) == sorted(("HEAD", f"https://hub.example/{n}") for n in names[1:])
