"""``WGTPROXY=direct``: one source that sends each module path to its host."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.paw import PawServer
from tests.sources.conftest import fetch
from wgtpm._errors import NotFoundError
from wgtpm.httpclient import HttpClient
from wgtpm.module import normalise
from wgtpm.sources import Source
from wgtpm.sources.direct import DirectSource
from wgtpm.sources.github import GitHubSource
from wgtpm.sources.huggingface import HuggingFaceSource
from wgtpm.sources.pawhub import PawHubSource


@pytest.fixture
def direct(
    github: GitHubServer,
    hf: HuggingFaceServer,
    paw: PawServer,
    http: HttpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> DirectSource:
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    monkeypatch.setenv("PAW_API_URL", paw.url)
    return DirectSource(http)


def test_direct_is_a_source(direct: DirectSource) -> None:
    src: Source = direct
    assert src.name == "direct"


def test_dispatch_by_host(direct: DirectSource) -> None:
    assert isinstance(direct.source_for("github.com/acme/xor"), GitHubSource)
    assert isinstance(direct.source_for("hf.co/acme/tiny"), HuggingFaceSource)
    assert isinstance(direct.source_for("huggingface.co/acme/tiny"), HuggingFaceSource)
    assert isinstance(direct.source_for("programasweights.com/acme/triage"), PawHubSource)
    assert direct.source_for("github.com/a/b") is direct.source_for("github.com/c/d")


def test_other_hosts_need_a_registry(direct: DirectSource) -> None:
    with pytest.raises(
        NotFoundError,
        match=r"^models\.acme\.internal/m: no direct source for host models\.acme\.internal .*"
        r"set WGTPROXY to a wgtpm registry",
    ):
        direct.versions("models.acme.internal/m")


def test_all_three_hosts_through_one_source(
    direct: DirectSource,
    github: GitHubServer,
    hf: HuggingFaceServer,
    paw: PawServer,
    http: HttpClient,
    tmp_path: Path,
) -> None:
    github.repo("acme", "plain").release("v1.0.0", {"w.bin": b"gh" * 100})
    repo = hf.repo("acme", "tiny")
    repo.commit({"w.safetensors": b"hf" * 100})
    repo.tag("v0.1.0")
    paw.publish("triage", slug="acme/triage", pending=0)
    for path, query, name in [
        ("github.com/acme/plain", "latest", "w.bin"),
        ("huggingface.co/acme/tiny", "latest", "w.safetensors"),
        ("programasweights.com/acme/triage", "latest", "program.paw"),
    ]:
        version = direct.info(path, query).version
        # The resolver normalises paths before it fetches: an index names hf.co, not huggingface.co.
        tree = fetch(direct, tmp_path / "cache", normalise(path), version, http=http)
        assert (tree / name).stat().st_size > 0
    assert (tmp_path / "cache" / "mod" / "hf.co").is_dir()  # normalised before it reached the cache
