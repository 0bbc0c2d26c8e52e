"""The registry's caching proxy passes a release's signature and SLSA statement through.

Upstreams on loopback: a proxy tree (a signed release as ``wgtpm publish -o`` writes it,
served over HTTP) and GitHub through ``direct`` (the assets ``wgt.sig`` and
``wgt.slsa.json``). Through the registry, ``wgtpm get`` with a trust line accepts the
release; ``.sig`` and ``.slsa.json`` come back byte for byte and stay served once the
upstream is gone; ``wgtpm vendor`` keeps the signature; the version page names the
signer. An upstream signature over other files is left out (and the consumer's trust
line then refuses the release, as it would upstream).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from tests.publish.test_conformance import _attestation, make_release
from tests.registry.test_proxy import _proxied
from tests.servers import CdnServer
from tests.servers.github import GitHubServer
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.publish import DirectoryTarget
from wgtpm.publish._slsa import load_signing_key
from wgtpm.trust import key_hint, make_bundle

from .test_signatures import _keypair, _Quiet, _signed

UP = "example.org/acme/conf"  # not under the registry token's example.com: proxied
V = "v0.1.0"


def _trusting(project: Path, pub: Path, module: str) -> None:
    (project / "acme.pub").write_bytes(pub.read_bytes())
    (project / "wgt.mod").write_text(
        f"module example.com/app\nwgt 0.1\n\ntrust {module} key=acme.pub\n"
    )


def test_a_proxy_tree_upstream_s_signature_and_statement_pass_through(
    wgtpm,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    priv, pub = _keypair(tmp_path, "acme")
    release = _signed(make_release(tmp_path / "r", UP), priv)
    assert release.signature and release.attestation
    tree = DirectoryTarget(tmp_path / "tree")
    tree.publish(release, _Quiet())
    with ProxyTreeServer(tree.tree.root) as srv:
        for p in _proxied(tmp_path / "reg", srv.url, {"WGTPM_HTTP_RETRIES": "0"}):
            _trusting(project, pub, UP)
            monkeypatch.setenv("WGTPROXY", p.url)
            r = wgtpm("get", f"{UP}@{V}", cwd=project)
            assert r.code == 0, r.err
            srv.stop()  # cached: the registry serves them without its upstream
            with httpx.Client(base_url=p.url, timeout=10) as c:
                assert c.get(f"/{UP}/@v/{V}.sig").content == release.signature
                assert c.get(f"/{UP}/@v/{V}.slsa.json").content == release.attestation
                page = c.get(f"/-/module/{UP}/@v/{V}").text
            hint = key_hint(load_signing_key(priv).key.public_key())
            assert f"signed by key <code>{hint[:16]}</code>" in page
            r = wgtpm("vendor", cwd=project)
            assert r.code == 0, r.err
            doc = json.loads((project / "vendor" / "wgt.vendor.json").read_text())
            assert doc["modules"][0]["signature"].encode() == release.signature
            assert wgtpm("verify", "-mod=vendor", cwd=project).code == 0


def test_an_upstream_signature_over_other_files_is_left_out(
    wgtpm,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    priv, pub = _keypair(tmp_path, "acme")
    release = make_release(tmp_path / "r", UP)
    other = {"wgt.mod": "a" * 64}
    bad = make_bundle(f"{UP}@{V}", other, load_signing_key(priv).key)
    tree = DirectoryTarget(tmp_path / "tree")
    tree.publish(replace(release, signature=bad), _Quiet())
    with ProxyTreeServer(tree.tree.root) as srv:
        for p in _proxied(tmp_path / "reg", srv.url, {"WGTPM_HTTP_RETRIES": "0"}):
            _trusting(project, pub, UP)
            monkeypatch.setenv("WGTPROXY", p.url)
            r = wgtpm("get", f"{UP}@{V}", cwd=project)
            assert r.code != 0 and r.err.strip().count("\n") == 0, r.err
            assert UP in r.err and "no signature" in r.err, r.err
            with httpx.Client(base_url=p.url, timeout=10) as c:
                assert c.get(f"/{UP}/@v/{V}.sig").status_code == 404
                assert c.get(f"/{UP}/@v/{V}.slsa.json").content == release.attestation


def test_github_direct_assets_pass_through(
    wgtpm,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    from wgtpm import index as _index
    from wgtpm.publish.github import asset_name

    mod = "github.com/acme/xor"
    files = {"wgt.mod": f"module {mod}\n".encode(), "xor/w.bin": b"w" * 3000}
    shas = {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}
    idx = _index.ReleaseIndex(
        mod, V, [_index.IndexEntry(p, len(d), shas[p]) for p, d in files.items()]
    ).to_json()
    priv, pub = _keypair(tmp_path, "acme")
    sig = make_bundle(f"{mod}@{V}", shas, load_signing_key(priv).key)
    att = _attestation(mod, idx, files, "0.19.0")
    with CdnServer() as cdn, GitHubServer(cdn) as gh:
        assets = {asset_name(p): d for p, d in files.items()}
        assets.update({"wgt.index.json": idx, "wgt.sig": sig, "wgt.slsa.json": att})
        gh.repo("acme", "xor").release(V, assets)
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        for p in _proxied(tmp_path / "reg", "direct", None):
            _trusting(project, pub, mod)
            monkeypatch.setenv("WGTPROXY", p.url)
            r = wgtpm("get", f"{mod}@{V}", cwd=project)
            assert r.code == 0, r.err
            with httpx.Client(base_url=p.url, timeout=10) as c:
                assert c.get(f"/{mod}/@v/{V}.sig").content == sig
                assert c.get(f"/{mod}/@v/{V}.slsa.json").content == att
