"""Keyless signatures verified end to end against a Sigstore made on the spot.

Sigstore's public services are out of reach here; :mod:`.localsigstore` plays Fulcio,
the CT log and Rekor, and a trust line's ``trusted-root=`` points the ``sigstore``
package at its ``trusted_root.json`` (as a private Sigstore deployment is used). The
whole of sigstore's verification runs: the chain to the CA, the SCT, the Rekor entry's
inclusion proof, checkpoint and signed timestamp, the DSSE signature, and the identity
policy. A bundle of another Sigstore, a changed signature or payload, another identity
and a bad trusted root are each refused in one line.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tests.publish.test_conformance import make_release
from wgtpm import modfile
from wgtpm.publish import DirectoryTarget
from wgtpm.trust import TrustError, check, make_bundle

from .localsigstore import LocalSigstore
from .test_signatures import MODULE, V, _get, _Quiet

pytest.importorskip("sigstore")

GHA = "https://token.actions.githubusercontent.com"
WORKFLOW = "https://github.com/acme/conf/.github/workflows/release.yml@refs/tags/v0.1.0"
FILES = {"wgt.mod": "a" * 64, "w/x.bin": "b" * 64}


@pytest.fixture(scope="module")
def sigstore() -> LocalSigstore:
    return LocalSigstore()


def _keyless(sigstore: LocalSigstore, files: dict[str, str], identity: str = WORKFLOW) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())  # the ephemeral key Fulcio certifies
    return sigstore.keyless(make_bundle(f"{MODULE}@{V}", files, key), identity, GHA, key)


def _rule(root: str = "root.json") -> modfile.Trust:
    line = f"trust example.com/acme/* identity=https://github.com/acme/conf/* issuer={GHA}"
    text = f"module example.com/app\nwgt 0.1\n{line} trusted-root={root}\n"
    return modfile.parse(text.encode()).trusts[0]


def _root(d: Path, sigstore: LocalSigstore) -> None:
    (d / "root.json").write_text(json.dumps(sigstore.trusted_root()))


def test_a_keyless_signature_verifies_against_its_trusted_root(
    sigstore: LocalSigstore, tmp_path: Path
) -> None:
    _root(tmp_path, sigstore)
    bundle = _keyless(sigstore, FILES)
    check(MODULE, V, FILES, bundle, _rule(), tmp_path)
    with pytest.raises(TrustError, match=r"not over this release's index: w/x\.bin"):
        check(MODULE, V, {**FILES, "w/x.bin": "c" * 64}, bundle, _rule(), tmp_path)


def _refused(sigstore: LocalSigstore, tmp_path: Path, bundle: bytes, *words: str) -> None:
    _root(tmp_path, sigstore)
    with pytest.raises(TrustError) as err:
        check(MODULE, V, FILES, bundle, _rule(), tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and MODULE in msg and "identity https://github.com/acme/conf/*" in msg
    for w in words:
        assert w in msg, msg


def test_another_sigstore_s_bundle_is_refused(sigstore: LocalSigstore, tmp_path: Path) -> None:
    _refused(
        sigstore,
        tmp_path,
        _keyless(LocalSigstore(), FILES),
        "keyless verification failed",
    )


def test_a_changed_signature_or_payload_is_refused(sigstore: LocalSigstore, tmp_path: Path) -> None:
    doc = json.loads(_keyless(sigstore, FILES))
    sig = bytearray(base64.b64decode(doc["dsseEnvelope"]["signatures"][0]["sig"]))
    sig[-1] ^= 1
    doc["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    _refused(sigstore, tmp_path, json.dumps(doc).encode(), "keyless verification failed")
    # another statement under the same signature (and the Rekor entry of the first)
    doc = json.loads(_keyless(sigstore, FILES))
    other = json.loads(
        make_bundle(
            f"{MODULE}@{V}", FILES | {"x": "d" * 64}, ec.generate_private_key(ec.SECP256R1())
        )
    )
    doc["dsseEnvelope"]["payload"] = other["dsseEnvelope"]["payload"]
    with pytest.raises(TrustError, match="keyless verification failed"):
        check(MODULE, V, FILES | {"x": "d" * 64}, json.dumps(doc).encode(), _rule(), tmp_path)


def test_another_identity_is_refused_before_sigstore(
    sigstore: LocalSigstore, tmp_path: Path
) -> None:
    bundle = _keyless(sigstore, FILES, identity=WORKFLOW.replace("acme/conf", "mallory/conf"))
    _refused(sigstore, tmp_path, bundle, "signed by identity https://github.com/mallory/conf/")


def test_a_bad_trusted_root_is_one_line(sigstore: LocalSigstore, tmp_path: Path) -> None:
    bundle = _keyless(sigstore, FILES)
    (tmp_path / "junk.json").write_text("{}")
    for name in ("junk.json", "missing.json"):
        with pytest.raises(TrustError) as err:
            check(MODULE, V, FILES, bundle, _rule(name), tmp_path)
        assert f"trusted-root={name} is not a Sigstore trusted root" in str(err.value)
        assert "\n" not in str(err.value)


def test_get_and_verify_check_a_keyless_release(
    sigstore: LocalSigstore,
    wgtpm,
    project: Path,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    from dataclasses import replace

    release = make_release(tmp_path / "r", MODULE)
    files = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    tree = DirectoryTarget(tmp_path / "tree")
    tree.publish(replace(release, signature=_keyless(sigstore, files)), _Quiet())
    (project / "sigstore").mkdir()
    (project / "sigstore" / "root.json").write_text(json.dumps(sigstore.trusted_root()))
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\n\n"
        f"trust example.com/acme/* identity=https://github.com/acme/conf/* issuer={GHA} "
        "trusted-root=sigstore/root.json\n"
    )
    r = _get(wgtpm, project, monkeypatch, tree)
    assert r.code == 0, r.err
    assert wgtpm("verify", cwd=project).code == 0
    # the same release checked against another Sigstore's root: refused
    (project / "sigstore" / "root.json").write_text(json.dumps(LocalSigstore().trusted_root()))
    r = wgtpm("verify", cwd=project)
    out = (r.out + r.err).strip()
    assert r.code != 0 and MODULE in out and "keyless verification failed" in out, out
