"""``wgtpm publish --signature FILE``: a bundle made elsewhere attached to the release.

The CI flow: ``wgtpm publish -o DIR`` builds the release into a tree, ``model_signing
sign`` (or any signer of model-signing's format) signs ``DIR/MODULE/@v/VERSION``, and
``wgtpm publish --signature BUNDLE`` publishes it, refusing in one line a bundle over
other files (before anything is published), a file that is no bundle (before anything is
built), and ``--sign-key`` given too.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, make_package
from wgtpm.publish._slsa import load_signing_key
from wgtpm.trust import make_bundle

from .test_signatures import _keypair

pytestmark = pytest.mark.slow

MODULE = "example.com/acme/xor"
V = "v0.1.0"
CLI = Path(sys.executable).with_name("model_signing")


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    return make_package(
        tmp_path / "xor", MODULE, {"@artifacts": "xor model.wgt", "model.wgt": base_wgt()}
    )


def _files(vdir: Path) -> dict[str, str]:
    return {
        p.relative_to(vdir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(vdir.rglob("*"))
        if p.is_file()
    }


def test_a_bundle_made_elsewhere_is_attached_and_checked(
    wgtpm,
    pkg: Path,
    tmp_path: Path,
    project: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    priv, pub = _keypair(tmp_path, "ci")
    r = wgtpm("publish", "--version", V, "-o", str(tmp_path / "built"), cwd=pkg)
    assert r.code == 0, r.err
    vdir = tmp_path / "built" / MODULE / "@v" / V
    sig = tmp_path / "ci.sig"
    if CLI.exists():  # the signer CI would run
        done = subprocess.run(
            [str(CLI), "sign", "key", str(vdir), "--private_key", str(priv),
             "--signature", str(sig)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    else:
        sig.write_bytes(make_bundle(V, _files(vdir), load_signing_key(priv).key))

    out = tmp_path / "tree"
    r = wgtpm("publish", "--version", V, "-o", str(out), "--signature", str(sig), cwd=pkg)
    assert r.code == 0, r.err
    assert f"attached the signature {sig}" in r.err
    assert (out / MODULE / "@v" / f"{V}.sig").read_bytes() == sig.read_bytes()
    (project / "ci.pub").write_bytes(pub.read_bytes())
    (project / "wgt.mod").write_text(
        f"module example.com/app\nwgt 0.1\ntrust {MODULE} key=ci.pub\n"
    )
    monkeypatch.setenv("WGTPROXY", out.as_uri())
    r = wgtpm("get", f"{MODULE}@{V}", cwd=project)
    assert r.code == 0, r.err

    # a bundle over other files: refused naming the file, nothing published
    files = _files(vdir)
    files["xor/weights.safetensors"] = "0" * 64
    other = tmp_path / "other.sig"
    other.write_bytes(make_bundle(V, files, load_signing_key(priv).key))
    out2 = tmp_path / "tree2"
    r = wgtpm("publish", "--version", V, "-o", str(out2), "--signature", str(other), cwd=pkg)
    assert r.code != 0 and r.err.strip().splitlines()[-1].startswith("wgtpm: --signature"), r.err
    last = r.err.strip().splitlines()[-1]
    assert "xor/weights.safetensors has another sha256" in last and str(other) in last, r.err
    assert not (out2 / MODULE / "@v" / f"{V}.index.json").exists()


def test_a_bad_signature_file_or_two_signers_is_one_line_before_any_build(
    wgtpm,
    pkg: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    junk = tmp_path / "junk.sig"
    junk.write_text("{}")
    r = wgtpm(
        "publish", "--version", V, "-o", str(tmp_path / "t"), "--signature", str(junk), cwd=pkg
    )
    assert r.code != 0 and r.err.strip().count("\n") == 0, r.err
    assert f"--signature {junk}: not a model-signing bundle" in r.err
    r = wgtpm(
        "publish",
        "--version",
        V,
        "-o",
        str(tmp_path / "t"),
        "--signature",
        str(tmp_path / "nope"),
        cwd=pkg,
    )
    assert r.code != 0 and "cannot read it" in r.err and r.err.strip().count("\n") == 0, r.err
    priv, _ = _keypair(tmp_path, "k")
    r = wgtpm(
        "publish", "--version", V, "-o", str(tmp_path / "t"), "--signature", str(junk),
        "--sign-key", str(priv), cwd=pkg,
    )  # fmt: skip
    assert r.code != 0 and "give one of them" in r.err, r.err
    assert not (tmp_path / "t").exists()
