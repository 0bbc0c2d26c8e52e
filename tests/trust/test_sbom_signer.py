"""``wgtpm sbom`` names a module's signer once the main module's trust line verified it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.publish.test_conformance import make_release
from wgtpm.publish import DirectoryTarget
from wgtpm.publish._slsa import load_signing_key
from wgtpm.trust import key_hint

from .test_signatures import MODULE, _consumer, _get, _keypair, _Quiet, _signed


def test_the_sbom_names_the_verified_signer(
    wgtpm,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    pytest.importorskip("cyclonedx")
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    tree = DirectoryTarget(tmp_path / "tree")
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    _consumer(project, pub)
    assert _get(wgtpm, project, monkeypatch, tree).code == 0
    want = f"key sha256:{key_hint(load_signing_key(priv).key.public_key())}"

    r = wgtpm("sbom", cwd=project)
    assert r.code == 0, r.err
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(r.out) is None
    (comp,) = json.loads(r.out)["components"]
    assert {"name": "wgtpm:signer", "value": want} in comp["properties"]
    r = wgtpm("sbom", "--format", "spdx", cwd=project)
    assert r.code == 0 and f"signer: {want}" in r.out, r.out + r.err

    # WGTTRUST=off: nothing verified, no signer claimed; a trust line the cached signature
    # does not satisfy: the sbom is refused as get and verify are
    monkeypatch.setenv("WGTTRUST", "off")
    r = wgtpm("sbom", cwd=project)
    assert r.code == 0 and "wgtpm:signer" not in r.out, r.out
    monkeypatch.delenv("WGTTRUST")
    _, other = _keypair(tmp_path, "other")
    (project / "keys" / "acme.pub").write_bytes(other.read_bytes())
    r = wgtpm("sbom", cwd=project)
    assert r.code != 0 and "another key" in r.err and r.err.count("\n") == 1, r.err
