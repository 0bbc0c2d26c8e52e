"""``wgtpm publish --sign-key`` signs a real build; consumers and model-signing's CLI verify it.

A package is built and published with a key ``wgtpm key generate`` made into a
proxy tree (``-o``); the tree holds ``$module/@v/$version.sig`` beside the index,
not in its files; a consumer whose wgt.mod trusts the key gets the module, one
trusting another key is refused in one line with nothing in wgt.sum; and
``model_signing verify key`` accepts the module's directory as the cache holds it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wgtpm.index import parse as parse_index

pytestmark = pytest.mark.slow

MODULE = "example.com/acme/xor"
CLI = Path(sys.executable).with_name("model_signing")


def test_publish_signs_and_get_checks_it(
    wgtpm, base_pkg: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    keys = tmp_path / "keys"
    keys.mkdir()
    assert wgtpm("key", "generate", "--out", str(keys / "acme"), cwd=tmp_path).code == 0
    assert wgtpm("key", "generate", "--out", str(keys / "other"), cwd=tmp_path).code == 0
    assert (keys / "acme.pem").stat().st_mode & 0o777 == 0o600
    out = tmp_path / "tree"
    r = wgtpm(
        "publish", "--version", "v0.1.0", "-o", str(out), "--sign-key", str(keys / "acme.pem"),
        cwd=base_pkg,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "signed the release" in r.err
    vdir = out / MODULE / "@v"
    sig = vdir / "v0.1.0.sig"
    assert sig.is_file()
    idx = parse_index((vdir / "v0.1.0.index.json").read_bytes(), MODULE, "v0.1.0")
    assert all(not e.path.endswith(".sig") for e in idx.files)

    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", out.as_uri())
    (app / "wgt.mod").write_text(f"module example.com/app\nwgt 0.1\ntrust {MODULE} key=other.pub\n")
    (app / "other.pub").write_bytes((keys / "other.pub").read_bytes())
    r = wgtpm("get", f"{MODULE}@v0.1.0", cwd=app)
    assert r.code != 0 and r.err.strip().count("\n") == 0, r.err
    assert MODULE in r.err and "key other.pub" in r.err and "another key" in r.err
    assert not (app / "wgt.sum").exists()

    (app / "wgt.mod").write_text(f"module example.com/app\nwgt 0.1\ntrust {MODULE} key=acme.pub\n")
    (app / "acme.pub").write_bytes((keys / "acme.pub").read_bytes())
    r = wgtpm("get", f"{MODULE}@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    assert wgtpm("verify", cwd=app).code == 0

    if CLI.exists():
        moddir = Path(os.environ["WGTPM_CACHE"]) / "mod" / f"{MODULE}@v0.1.0"
        r2 = subprocess.run(
            [str(CLI), "verify", "key", str(moddir), "--signature", str(sig),
             "--public_key", str(keys / "acme.pub")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r2.returncode == 0, r2.stdout + r2.stderr


def test_keyless_signing_failure_is_one_line_and_publishes_nothing(
    wgtpm,
    base_pkg: Path,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """With an OIDC token but no reachable Sigstore (this sandbox: no network), publish
    refuses in one line rather than publish the release unsigned. The signing itself
    needs Sigstore's services and is not tested end to end here."""
    pytest.importorskip("model_signing")
    monkeypatch.setenv("SIGSTORE_ID_TOKEN", "not-a-jwt")
    out = tmp_path / "tree"
    r = wgtpm("publish", "--version", "v0.1.0", "-o", str(out), cwd=base_pkg)
    assert r.code != 0
    last = r.err.strip().splitlines()[-1]
    assert "keyless signing through Sigstore failed" in last and "--sign-key" in last, r.err
    assert not (out / MODULE / "@v" / "v0.1.0.index.json").exists()
