"""Publishing to a real registry on loopback (uvicorn), and getting the releases back.

- a WeightLang package, then a second that requires it and imports its
  trained layer; a third project gets both and its wgt.sum holds the h1s
  the publishes printed;
- an upload that fails mid-way (the network in between answers 503 to a
  file's PUT) leaves no visible version, and the same publish again succeeds;
- the token is never printed; another h1 for a published version is refused;
- ``wgtpm publish`` closes its HTTP client, whether the publish succeeds or
  is refused (a client left open keeps its watch thread running).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.httpclients import no_client_left_open
from tests.publish.conftest import CLASSIFIER_WGT, commit_all, git, make_package
from tests.registry.conftest import Live
from wgtpm._report import SILENT
from wgtpm._retry import Backoff
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.publish import PublishOptions, RegistryTarget, publish_package

pytestmark = pytest.mark.slow


def h1_of(out: str) -> str:
    return next(w for w in out.split() if w.startswith("h1:"))


def test_publish_two_packages_and_get_them_back(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, live: Live, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 0, r.err
    assert live.token not in r.out + r.err
    base_h1 = h1_of(r.out)
    assert git(base_pkg, "tag") == "v0.1.0"  # tagged once the registry committed it

    monkeypatch.setenv("WGTPROXY", live.url)
    cls = make_package(
        tmp_path / "cls",
        "example.com/acme/classifier",
        {
            "@artifacts": "classifier model.wgt",
            "model.wgt": CLASSIFIER_WGT.format(base="example.com/acme/xor"),
        },
        commit=False,
    )
    assert wgtpm("get", "example.com/acme/xor@v0.1.0", cwd=cls).code == 0
    commit_all(cls, "require xor")
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=cls)
    assert r.code == 0, r.err
    cls_h1 = h1_of(r.out)
    # the build's SLSA statement, beside the version: its dependencies with their h1s
    import httpx

    from wgtpm.publish._slsa import read_envelope, subject_h1

    att = httpx.get(f"{live.url}/example.com/acme/classifier/@v/v0.1.0.slsa.json").content
    stmt, _, _ = read_envelope(att)
    assert subject_h1(stmt) == cls_h1
    deps = stmt["predicate"]["buildDefinition"]["resolvedDependencies"]
    assert {"name": "example.com/acme/xor@v0.1.0", "uri": "wgt:example.com/acme/xor@v0.1.0",
            "digest": {"dirHash": base_h1}} in deps  # fmt: skip

    app = tmp_path / "app"
    app.mkdir()
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    r = wgtpm("get", "example.com/acme/classifier@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    sums = (app / "wgt.sum").read_text()
    assert f"example.com/acme/xor v0.1.0 {base_h1}\n" in sums
    assert f"example.com/acme/classifier v0.1.0 {cls_h1}\n" in sums
    r = wgtpm("inspect", "example.com/acme/classifier/classifier", cwd=app)
    assert r.code == 0, r.err
    assert "example.com/acme/xor@v0.1.0" in r.out  # the imported layer's provenance

    # The same version again from the same commit: a no-op.
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 0, r.err
    assert "already published" in r.out


def test_other_bytes_for_a_published_version_are_refused(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, live: Live, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPM_TOKEN", live.token)
    with no_client_left_open("the publish"):
        r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 0, r.err
    first = h1_of(r.out)
    # Another clone, another commit, the same version: the tag is not here, the registry has it.
    git(base_pkg, "tag", "-d", "v0.1.0")
    model = base_pkg / "model.wgt"
    model.write_text(model.read_text().replace("seed 0", "seed 3"))
    commit_all(base_pkg, "other seed")
    with no_client_left_open("the refused publish"):
        r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 1
    assert (
        f"wgtpm: example.com/acme/xor@v0.1.0 is published already at registry {live.url}: "
        "building it to compare (the same bytes are a no-op, other bytes are refused)\n"
    ) in r.err  # not "publishing it again": other bytes never are
    last = r.err.strip().splitlines()[-1]
    assert first in last and last.count("h1:") == 2, r.err
    assert live.token not in r.err


class _FailingPuts(httpx.BaseTransport):
    """The network between client and registry: answers 503 to every PUT of one blob."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.failed = 0
        self.puts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT":
            self.puts += 1
            if "/files/" in request.url.path and self.puts > 1:
                self.failed += 1
                request.read()
                return httpx.Response(503, json={"error": "storage is down"})
        return self.inner.handle_request(request)


def test_upload_failing_midway_publishes_nothing_and_a_retry_succeeds(  # type: ignore[no-untyped-def]
    base_pkg: Path, live: Live, monkeypatch
) -> None:
    faulty = _FailingPuts()
    client = HttpClient(HttpOptions(deadline=0.3), transport=faulty)
    target = RegistryTarget(
        live.url, client, token=live.token, backoff=Backoff(base=0.01, cap=0.02)
    )
    opts = PublishOptions("v0.1.0", tag=False)
    with pytest.raises(
        Exception,
        match=r"HTTP 503: storage is down \(still after 0.3s of tries; WGTPM_HTTP_DEADLINE sets "
        r"how long\); nothing was published",
    ):
        publish_package(base_pkg, opts, target, SILENT)
    assert faulty.puts > 1 and faulty.failed > 3  # one blob went up, then tries for 0.3 s
    listing = httpx.get(f"{live.url}/example.com/acme/xor/@v/list")
    assert listing.status_code == 404  # no version is visible
    with HttpClient() as http:
        target = RegistryTarget(live.url, http, token=live.token)
        assert target.published_versions("example.com/acme/xor") == []
        done = publish_package(base_pkg, opts, target, SILENT)
    assert done.published.created
    assert httpx.get(f"{live.url}/example.com/acme/xor/@v/list").text.split() == ["v0.1.0"]
    index = httpx.get(f"{live.url}/example.com/acme/xor/@v/v0.1.0.index.json").content
    assert index == done.release.index


def test_a_missing_token_is_one_line_before_anything_is_built(  # type: ignore[no-untyped-def]
    wgtpm, base_pkg: Path, live: Live
) -> None:
    r = wgtpm("publish", "--version", "v0.1.0", "--to", live.url, cwd=base_pkg)
    assert r.code == 1
    assert "building artifact" not in r.err
    assert "WGTPM_TOKEN" in r.err.strip().splitlines()[-1]
