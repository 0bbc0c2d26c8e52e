"""Signed releases (wgtpm.trust): model-signing bundles beside the index, checked against the
main module's ``trust`` lines by ``wgtpm get`` and ``wgtpm verify``.

Releases are hand-made (tests/publish/test_conformance.py's ``make_release``) and
published into a ``file://`` proxy tree by the directory target, with the bundle
``wgtpm publish --sign-key`` makes; the consumer is a real ``wgtpm get`` in a
main module with trust lines. Every refusal is one line naming the module, the
expected signer and what was found, and writes nothing to wgt.sum.
Interoperability runs model-signing's own CLI (a subprocess) both ways.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from tests.publish.test_conformance import make_release
from wgtpm.publish import DirectoryTarget, Release
from wgtpm.publish._slsa import load_signing_key
from wgtpm.trust import make_bundle

MODULE = "example.com/acme/conf"
V = "v0.1.0"
CLI = Path(sys.executable).with_name("model_signing")
needs_cli = pytest.mark.skipif(not CLI.exists(), reason="model-signing's CLI is not installed")


def _keypair(d: Path, name: str, kind: str = "p256") -> tuple[Path, Path]:
    key = (
        ed25519.Ed25519PrivateKey.generate()
        if kind == "ed25519"
        else ec.generate_private_key(ec.SECP256R1())
    )
    priv, pub = d / f"{name}.pem", d / f"{name}.pub"
    priv.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return priv, pub


def _signed(release: Release, priv: Path) -> Release:
    files = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    sig = make_bundle(f"{release.module}@{release.version}", files, load_signing_key(priv).key)
    return replace(release, signature=sig)


def _consumer(project: Path, pub: Path, pattern: str = "example.com/acme/*") -> None:
    (project / "keys").mkdir(exist_ok=True)
    shutil.copy(pub, project / "keys" / "acme.pub")
    (project / "wgt.mod").write_text(
        f"module example.com/app\nwgt 0.1\n\ntrust {pattern} key=keys/acme.pub\n"
    )


@pytest.fixture
def tree(tmp_path: Path) -> DirectoryTarget:
    return DirectoryTarget(tmp_path / "tree")


def _sig_path(t: DirectoryTarget) -> Path:
    return t.signature_path(MODULE, V)


def _get(wgtpm, project: Path, monkeypatch: pytest.MonkeyPatch, t: DirectoryTarget):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WGTPROXY", t.tree.url)
    return wgtpm("get", f"{MODULE}@{V}", cwd=project)


def _refused(r, project: Path, *words: str) -> None:  # type: ignore[no-untyped-def]
    assert r.code != 0
    line = r.err.strip()
    assert line.count("\n") == 0, r.err
    assert MODULE in line and "key keys/acme.pub" in line, line
    for w in words:
        assert w in line, line
    assert not (project / "wgt.sum").exists() or MODULE not in (project / "wgt.sum").read_text()


@pytest.mark.parametrize("kind", ["p256", "ed25519"])
def test_a_signed_release_round_trips_through_a_proxy_tree(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,
    kind: str,  # type: ignore[no-untyped-def]
) -> None:
    priv, pub = _keypair(tmp_path, "acme", kind)
    release = _signed(make_release(tmp_path / "r", MODULE), priv)
    tree.publish(release, _Quiet())
    assert _sig_path(tree).read_bytes() == release.signature
    assert "wgt.sig" not in release.index.decode()  # beside the index, not in it
    _consumer(project, pub)
    r = _get(wgtpm, project, monkeypatch, tree)
    assert r.code == 0, r.err
    assert MODULE in (project / "wgt.sum").read_text()
    # verify checks the cached signature again
    r = wgtpm("verify", cwd=project)
    assert r.code == 0, r.err


def test_a_missing_signature_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    _, pub = _keypair(tmp_path, "acme")
    tree.publish(make_release(tmp_path / "r", MODULE), _Quiet())
    _consumer(project, pub)
    _refused(_get(wgtpm, project, monkeypatch, tree), project, "no signature")


def test_wgttrust_off_skips_the_check(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    _, pub = _keypair(tmp_path, "acme")
    tree.publish(make_release(tmp_path / "r", MODULE), _Quiet())
    _consumer(project, pub)
    monkeypatch.setenv("WGTTRUST", "off")
    assert _get(wgtpm, project, monkeypatch, tree).code == 0


def test_a_module_no_trust_line_names_needs_no_signature(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    _, pub = _keypair(tmp_path, "acme")
    tree.publish(make_release(tmp_path / "r", MODULE), _Quiet())
    _consumer(project, pub, pattern="example.com/other/*")
    assert _get(wgtpm, project, monkeypatch, tree).code == 0


def test_a_wrong_key_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    priv, _ = _keypair(tmp_path, "mallory")
    _, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    _consumer(project, pub)
    _refused(_get(wgtpm, project, monkeypatch, tree), project, "another key")


def test_a_tampered_bundle_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    doc = json.loads(_sig_path(tree).read_bytes())
    import base64

    st = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    st["predicate"]["resources"][0]["digest"] = "0" * 64
    res = st["predicate"]["resources"]
    h = hashlib.sha256(b"".join(bytes.fromhex(x["digest"]) for x in res)).hexdigest()
    st["subject"][0]["digest"]["sha256"] = h  # consistent, but no longer what was signed
    doc["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    _sig_path(tree).write_text(json.dumps(doc))
    _consumer(project, pub)
    _refused(_get(wgtpm, project, monkeypatch, tree), project, "does not verify")


def test_a_signature_over_other_files_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """The index (and so a file) changed after signing: the signature is valid, over another index."""
    priv, pub = _keypair(tmp_path, "acme")
    signed = _signed(make_release(tmp_path / "r", MODULE), priv)
    other = make_release(tmp_path / "r2", MODULE, salt=b"evil")  # another data/a.bin
    tree.publish(replace(other, signature=signed.signature), _Quiet())
    _consumer(project, pub)
    _refused(
        _get(wgtpm, project, monkeypatch, tree),
        project,
        "not over this release's index",
        "data/a.bin",
    )


def test_a_signature_for_another_version_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    priv, pub = _keypair(tmp_path, "acme")
    release = make_release(tmp_path / "r", MODULE)
    files = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    sig = make_bundle(f"{MODULE}@v0.0.9", files, load_signing_key(priv).key)
    tree.publish(replace(release, signature=sig), _Quiet())
    _consumer(project, pub)
    _refused(_get(wgtpm, project, monkeypatch, tree), project, f"{MODULE}@v0.0.9")


def test_a_tampered_cached_signature_fails_verify(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    _consumer(project, pub)
    assert _get(wgtpm, project, monkeypatch, tree).code == 0
    cached = list(Path(os.environ["WGTPM_CACHE"]).rglob("*.sig"))
    assert len(cached) == 1
    cached[0].write_bytes(cached[0].read_bytes().replace(b'"sig": "', b'"sig": "AAAA'))
    r = wgtpm("verify", cwd=project)
    assert r.code != 0 and MODULE in r.err, r.err


# ---- interoperability with model-signing's CLI ------------------------------------------


@needs_cli
def test_model_signing_verifies_a_wgtpm_release(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """``model_signing verify key`` on the module's directory as the cache holds it."""
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    _consumer(project, pub)
    assert _get(wgtpm, project, monkeypatch, tree).code == 0
    moddir = Path(os.environ["WGTPM_CACHE"]) / "mod" / f"{MODULE}@{V}"
    assert (moddir / "data" / "a.bin").is_file(), sorted(Path(os.environ["WGTPM_CACHE"]).rglob("*"))
    r = subprocess.run(
        [str(CLI), "verify", "key", str(moddir), "--signature", str(_sig_path(tree)),
         "--public_key", str(pub)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and "Verification succeeded" in r.stdout, r.stdout + r.stderr
    # and it refuses the tampered file, so the check above could fail
    tampered = tmp_path / "copy"
    shutil.copytree(moddir, tampered)
    (tampered / "data" / "a.bin").chmod(0o644)
    (tampered / "data" / "a.bin").write_bytes(b"x")
    r = subprocess.run(
        [str(CLI), "verify", "key", str(tampered), "--signature", str(_sig_path(tree)),
         "--public_key", str(pub)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode != 0


@needs_cli
def test_wgtpm_verifies_a_directory_signed_by_model_signing(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """A release's files signed with ``model_signing sign key``, the bundle published as-is."""
    priv, pub = _keypair(tmp_path, "acme")
    release = make_release(tmp_path / "r", MODULE)
    model = tmp_path / "model"
    for p, f in release.files.items():
        (model / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, model / p)
    r = subprocess.run(
        [str(CLI), "sign", "key", str(model), "--private_key", str(priv),
         "--signature", str(tmp_path / "model.sig")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    sig = (tmp_path / "model.sig").read_bytes()
    tree.publish(replace(release, signature=sig), _Quiet())
    _consumer(project, pub)
    r = _get(wgtpm, project, monkeypatch, tree)
    assert r.code == 0, r.err


class _Quiet:
    """A reporter that says nothing (the directory target reports nothing)."""

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda *a, **k: None


def test_trust_added_after_the_module_was_cached_fetches_the_signature(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """The index is cached from before the trust line; get still checks (and keeps) the
    signature, so verify finds it."""
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    assert _get(wgtpm, project, monkeypatch, tree).code == 0  # no trust line yet
    mod = (project / "wgt.mod").read_text()
    _consumer(project, pub)
    (project / "wgt.mod").write_text(
        (project / "wgt.mod").read_text() + mod.split("wgt 0.1\n", 1)[1]
    )
    r = wgtpm("verify", cwd=project)  # offline, as Go's: it says what to run, not "unsigned"
    assert r.code != 0
    assert "no signature was kept when it was downloaded" in r.out + r.err
    assert "run 'wgtpm get' to fetch and check it" in r.out + r.err
    r = wgtpm("get", f"{MODULE}@{V}", cwd=project)
    assert r.code == 0, r.err
    r = wgtpm("verify", cwd=project)
    assert r.code == 0, r.out + r.err


def test_vendor_keeps_the_signature_and_mod_vendor_checks_it(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    priv, pub = _keypair(tmp_path, "acme")
    release = _signed(make_release(tmp_path / "r", MODULE), priv)
    tree.publish(release, _Quiet())
    _consumer(project, pub)
    assert _get(wgtpm, project, monkeypatch, tree).code == 0
    r = wgtpm("vendor", cwd=project)
    assert r.code == 0, r.err
    manifest = project / "vendor" / "wgt.vendor.json"
    doc = json.loads(manifest.read_text())
    assert doc["modules"][0]["signature"].encode() == release.signature
    r = wgtpm("verify", "-mod=vendor", cwd=project)
    assert r.code == 0, r.out + r.err
    del doc["modules"][0]["signature"]
    manifest.write_text(json.dumps(doc))
    r = wgtpm("verify", "-mod=vendor", cwd=project)
    assert r.code != 0 and MODULE in r.err + r.out and "no signature" in r.err + r.out, (
        r.out + r.err
    )


def test_a_tampered_index_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """The served index names other bytes for a file (and the file is swapped to match):
    the signature no longer covers it."""
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    vdir = tree.tree.root / MODULE / "@v"
    doc = json.loads((vdir / f"{V}.index.json").read_bytes())
    evil = b"evil weights"
    for e in doc["files"]:
        if e["path"] == "data/a.bin":
            e["sha256"], e["size"] = hashlib.sha256(evil).hexdigest(), len(evil)
    (vdir / f"{V}.index.json").write_text(json.dumps(doc))
    f = vdir / V / "data" / "a.bin"
    f.chmod(0o644)
    f.write_bytes(evil)
    _consumer(project, pub)
    _refused(_get(wgtpm, project, monkeypatch, tree), project, "data/a.bin has another sha256")


def test_a_tampered_file_is_refused(
    wgtpm,
    project: Path,
    tree: DirectoryTarget,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """A file changed behind a signed index: its bytes do not hash to the signed sha256."""
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    f = tree.tree.root / MODULE / "@v" / V / "data" / "a.bin"
    f.chmod(0o644)
    f.write_bytes(b"B" * f.stat().st_size)
    _consumer(project, pub)
    r = _get(wgtpm, project, monkeypatch, tree)
    assert r.code != 0 and MODULE in r.err and "data/a.bin" in r.err, r.err
    assert r.err.strip().count("\n") == 0 and "tampered" in r.err, r.err
    sums = project / "wgt.sum"
    assert not sums.exists() or MODULE not in sums.read_text()
