"""The same commit gives the same h1 everywhere; the build environment goes into an SLSA statement.

- one commit published from two environments that differ only in an
  installed package (a second ``gguf`` whose real package metadata says
  0.18.0, first on the child interpreter's path) gives one h1, the second
  publish into the same tree is a no-op, and the two builds' statements
  differ in the gguf version they record;
- the statement is an in-toto Statement v1 with an SLSA provenance v1
  predicate in a DSSE envelope, beside the index and not in ``files``;
  unsigned without ``--sign-key`` (said in the output), signed with an
  Ed25519 or ECDSA P-256 key over DSSE's PAE; a changed payload or another
  key does not verify; a bad key file is one line;
- ``verify --rebuild`` reads the statement and names the tool versions that
  differ from the rebuilding machine's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from wgtpm.index import parse as parse_index
from wgtpm.publish import PROVENANCE_FILE
from wgtpm.publish._slsa import (
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    pae,
    read_envelope,
    recorded_environment,
    subject_h1,
    verify_signature,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODULE = "example.com/acme/xor"


def _vdir(tree: Path) -> Path:
    return tree / MODULE / "@v"


def _fake_gguf(where: Path, version: str) -> Path:
    """A directory holding only ``gguf-VERSION.dist-info``: real package metadata, which
    ``importlib.metadata`` finds first when the directory leads the path."""
    d = where / f"gguf-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gguf\nVersion: {version}\n")
    return where


def _publish_in_child(pkg: Path, out: Path, path_first: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path_first), str(ROOT)]))
    return subprocess.run(
        [sys.executable, "-m", "wgtpm", "publish", "--version", "v0.1.0", "-o", str(out)],
        cwd=pkg,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_one_commit_from_two_environments_gives_one_h1(
    wgtpm,  # type: ignore[no-untyped-def]
    base_pkg: Path,
    tmp_path: Path,
) -> None:
    first = wgtpm("publish", "--version", "v0.1.0", "-o", str(tmp_path / "a"), cwd=base_pkg)
    assert first.code == 0, first.err
    assert "published example.com/acme/xor@v0.1.0" in first.out
    statement_a = (_vdir(tmp_path / "a") / "v0.1.0.slsa.json").read_bytes()

    other = _fake_gguf(tmp_path / "site", "0.18.0")
    again = _publish_in_child(base_pkg, tmp_path / "a", other)
    assert again.returncode == 0, again.stderr
    assert "already published" in again.stdout  # the same h1: a no-op
    h1 = next(w for w in first.out.split() if w.startswith("h1:"))
    assert h1 in again.stdout
    # the no-op left the first build's statement
    assert (_vdir(tmp_path / "a") / "v0.1.0.slsa.json").read_bytes() == statement_a

    fresh = _publish_in_child(base_pkg, tmp_path / "b", other)
    assert fresh.returncode == 0, fresh.stderr
    index_a = (_vdir(tmp_path / "a") / "v0.1.0.index.json").read_bytes()
    assert (_vdir(tmp_path / "b") / "v0.1.0.index.json").read_bytes() == index_a
    for name in (PROVENANCE_FILE, "xor/manifest.json", "xor/weights.safetensors"):
        assert (_vdir(tmp_path / "b") / "v0.1.0" / name).read_bytes() == (
            _vdir(tmp_path / "a") / "v0.1.0" / name
        ).read_bytes()
    statement_b = (_vdir(tmp_path / "b") / "v0.1.0.slsa.json").read_bytes()
    env_a = recorded_environment(read_envelope(statement_a)[0])
    env_b = recorded_environment(read_envelope(statement_b)[0])
    assert env_b["gguf"] == "0.18.0" and env_a.get("gguf") != "0.18.0"
    assert {k: v for k, v in env_a.items() if k != "gguf"} == {
        k: v for k, v in env_b.items() if k != "gguf"
    }


def test_the_statement_is_slsa_provenance_in_a_dsse_envelope(
    wgtpm,  # type: ignore[no-untyped-def]
    base_pkg: Path,
) -> None:
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=base_pkg)
    assert r.code == 0, r.err
    assert "unsigned (no --sign-key)" in r.err
    vdir = _vdir(base_pkg / "dist")
    index_bytes = (vdir / "v0.1.0.index.json").read_bytes()
    index = parse_index(index_bytes, MODULE, "v0.1.0")
    assert "slsa" not in " ".join(e.path for e in index.files)  # not in files: outside h1

    env = json.loads((vdir / "v0.1.0.slsa.json").read_bytes())
    assert env["payloadType"] == PAYLOAD_TYPE and env["signatures"] == []
    stmt = json.loads(base64.b64decode(env["payload"]))
    assert stmt["_type"] == STATEMENT_TYPE and stmt["predicateType"] == PREDICATE_TYPE
    assert stmt["subject"][0] == {
        "name": "wgt.index.json",
        "digest": {"sha256": hashlib.sha256(index_bytes).hexdigest()},
    }
    assert subject_h1(stmt) == index.h1()
    bd = stmt["predicate"]["buildDefinition"]
    assert bd["externalParameters"]["module"] == MODULE
    assert bd["externalParameters"]["commit"] == index.commit
    tools = bd["internalParameters"]["tools"]
    assert tools["torch"] and tools["wgtpm"] and tools["python"]
    meta = stmt["predicate"]["runDetails"]["metadata"]
    assert meta["startedOn"] <= meta["finishedOn"] and meta["invocationId"]


@pytest.mark.parametrize("kind", ["ed25519", "p256"])
def test_signed_with_sign_key(wgtpm, base_pkg: Path, tmp_path: Path, kind: str) -> None:  # type: ignore[no-untyped-def]
    key = (
        ed25519.Ed25519PrivateKey.generate()
        if kind == "ed25519"
        else ec.generate_private_key(ec.SECP256R1())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp_path / "key.pem").write_bytes(pem)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    r = wgtpm(
        "publish", "--version", "v0.1.0", "--dry-run", "--sign-key", str(tmp_path / "key.pem"),
        cwd=base_pkg,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "signed the SLSA provenance statement" in r.err
    data = (_vdir(base_pkg / "dist") / "v0.1.0.slsa.json").read_bytes()
    assert verify_signature(data, public)

    other = ed25519.Ed25519PrivateKey.generate().public_key()
    assert not verify_signature(
        data,
        other.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    env = json.loads(data)
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["buildDefinition"]["internalParameters"]["tools"]["torch"] = "0.0"
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    assert not verify_signature(json.dumps(env).encode(), public)


def test_pae_is_dsse_v1() -> None:
    # the example of the DSSE v1 protocol text
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_a_bad_sign_key_is_one_line(wgtpm, base_pkg: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "k.pem").write_text("not a key\n")
    r = wgtpm(
        "publish", "--version", "v0.1.0", "--dry-run", "--sign-key", str(tmp_path / "k.pem"),
        cwd=base_pkg,
    )  # fmt: skip
    assert r.code != 0
    assert r.err.strip().count("\n") == 0 and "--sign-key" in r.err and "k.pem" in r.err
    assert "Traceback" not in r.err
    assert not (base_pkg / "dist").exists()  # refused before anything was built
