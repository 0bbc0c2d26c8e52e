"""``WGTPROXY=direct wgtpm get`` against the loopback GitHub, Hugging Face and PAW servers.

The whole path of a user's command: queries, pseudo-versions for branches,
commits and program IDs in wgt.mod, hashes in wgt.sum, verified files in the
cache, credentials only where they belong, and ETags kept across runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers import CdnServer
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.paw import PawServer
from tests.sources.test_github import publish
from wgtpm import version as v
from wgtpm.cache import Cache


@pytest.fixture
def direct_env(
    monkeypatch: pytest.MonkeyPatch, github: GitHubServer, hf: HuggingFaceServer, paw: PawServer
) -> None:
    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("PAW_API_URL", paw.url)
    monkeypatch.setenv("PAW_API_KEY", "paw_secret")
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "2")


def test_get_from_all_three_hosts(
    wgtpm,
    project: Path,
    direct_env: None,
    github: GitHubServer,
    hf: HuggingFaceServer,
    paw: PawServer,
    cdn: CdnServer,
) -> None:
    repo = github.repo("acme", "xor")
    publish(repo, "github.com/acme/xor", "v0.1.0", {"xor/weights.safetensors": b"w1" * 500})
    publish(repo, "github.com/acme/xor", "v0.2.0", {"xor/weights.safetensors": b"w2" * 500})
    tiny = hf.repo("acme", "tiny")
    tiny.commit({"config.json": b'{"hidden": 8}', "model.safetensors": b"M" * 5000})
    tiny.tag("v0.1.0")
    tiny.commit({"model.safetensors": b"N" * 5000})
    pid = paw.publish("sort tickets", slug="acme/triage")

    r = wgtpm(
        "get",
        "github.com/acme/xor@latest",
        "huggingface.co/acme/tiny@main",
        "programasweights.com/acme/triage",
        cwd=project,
    )
    assert r.code == 0, r.err
    mod = (project / "wgt.mod").read_text()
    assert "github.com/acme/xor v0.2.0" in mod
    hf_v = next(ln.split()[-1] for ln in mod.splitlines() if "hf.co/acme/tiny" in ln)
    assert v.is_pseudo(hf_v) and v.pseudo_base(hf_v) == "v0.1.0"
    assert tiny.branches["main"].startswith(v.pseudo_rev(hf_v))
    paw_v = next(
        ln.split()[-1] for ln in mod.splitlines() if "programasweights.com/acme/triage" in ln
    )
    assert v.is_pseudo(paw_v) and pid.startswith(v.pseudo_rev(paw_v))
    sums = (project / "wgt.sum").read_text()
    for m in (
        "github.com/acme/xor v0.2.0 h1:",
        f"hf.co/acme/tiny {hf_v} h1:",
        f"programasweights.com/acme/triage {paw_v} h1:",
    ):
        assert m in sums
    cache = Cache()
    assert (
        cache.mod_dir("hf.co/acme/tiny", hf_v) / "model.safetensors"
    ).read_bytes() == b"N" * 5000
    assert (
        cache.mod_dir("github.com/acme/xor", "v0.2.0") / "xor/weights.safetensors"
    ).read_bytes() == b"w2" * 500
    # Tokens went to their own API and never to the CDN the downloads were redirected to.
    assert cdn.log.where(server="cdn", status=200)
    assert not cdn.log.where(server="cdn", header="authorization")
    assert not cdn.log.where(server="cdn", header="x-api-key")
    # A second run needs nothing new; the pinned versions verify from the cache.
    assert wgtpm("verify", cwd=project).code == 0


def test_github_listing_revalidated_by_etag_across_runs(
    wgtpm, project: Path, direct_env: None, github: GitHubServer
) -> None:
    repo = github.repo("acme", "xor")
    publish(repo, "github.com/acme/xor", "v0.1.0", {"xor/weights.safetensors": b"w1" * 500})
    assert wgtpm("get", "github.com/acme/xor@latest", cwd=project).code == 0
    listings = github.log.where(path="/repos/acme/xor/releases[?]per_page=*")
    assert listings and all(s.status == 200 for s in listings)
    for p in (Cache().root / "meta" / "list").glob("*.json"):
        p.unlink()  # expire the version list, so the next command asks GitHub again
    github.log.clear()
    assert wgtpm("get", "github.com/acme/xor@upgrade", cwd=project).code == 0  # a new process
    again = github.log.where(path="/repos/acme/xor/releases[?]per_page=*")
    assert again and all(s.status == 304 for s in again)


def test_paw_bundle_is_downloaded_once(
    wgtpm, project: Path, direct_env: None, paw: PawServer, cdn: CdnServer
) -> None:
    pid = paw.publish("sort tickets", slug="acme/triage")
    r = wgtpm("get", "programasweights.com/acme/triage", cwd=project)
    assert r.code == 0, r.err
    gets = [
        s
        for s in cdn.log.where(server="cdn", method="GET")
        if f"{pid}.paw" in s.path and s.status == 200
    ]
    assert len(gets) == 1  # hashed for the index, then handed to the verifying downloader
    pv = next(
        ln.split()[-1]
        for ln in (project / "wgt.mod").read_text().splitlines()
        if "acme/triage" in ln
    )
    bundle = Cache().mod_dir("programasweights.com/acme/triage", pv)
    assert any(p.suffix == ".paw" for p in bundle.iterdir())
