"""Revoked keys and expiring trust: ``trust PATTERN key=FILE revoked=LIST not-after=DAY``.

- a signature by a key the revocation list names is refused, in one line naming the
  module, the trusted signer, the key's fingerprint and the list's reason; the same
  key's release passed before the list named it, and ``verify`` refuses it after;
- ``key=`` may be a keyring (a rotation): the new key's releases verify, the revoked
  old key's do not;
- ``not-after=`` ends a line's trust after that day (UTC), for keys and identities;
- the registry (``WGTPM_REGISTRY_REVOKED_KEYS``) shows a revoked signer on the version
  page, picks up an edit of the list without a restart, and refuses a publish whose
  signature is by a revoked key.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tests.publish.test_conformance import make_release
from tests.registry.conftest import Live, _live
from tests.registry.helpers import index_bytes, modtext
from wgtpm import modfile
from wgtpm._errors import ParseError
from wgtpm.publish import DirectoryTarget
from wgtpm.publish._slsa import load_signing_key
from wgtpm.trust import TrustError, check, key_hint, make_bundle, parse_revoked
from wgtpm.trust._revoked import RevocationFile

from .test_policy import ISSUER, _keyless_bundle, _pub
from .test_signatures import MODULE, V, _get, _keypair, _Quiet, _signed

FILES = {"wgt.mod": "a" * 64, "w/x.bin": "b" * 64}


def _mod(text: str) -> modfile.ModFile:
    return modfile.parse(f"module example.com/app\nwgt 0.1\n{text}".encode())


def _fpr(key: ec.EllipticCurvePrivateKey) -> str:
    return key_hint(key.public_key())


def test_trust_lines_take_not_after_and_revoked() -> None:
    mf = _mod(
        "trust example.com/* key=k.pub revoked=k.revoked not-after=2027-06-30\n"
        f"trust hf.co/acme/* identity=r@acme.com issuer={ISSUER} not-after=2027-01-01\n"
    )
    a, b = mf.trusts
    assert (a.key, a.revoked, a.not_after) == ("k.pub", "k.revoked", "2027-06-30")
    assert (b.identity, b.revoked, b.not_after) == ("r@acme.com", None, "2027-01-01")
    assert mf.format().decode().count("not-after=") == 2  # written back as it was


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("trust x key=k not-after=2027-13-01", "not-after= takes a day, YYYY-MM-DD"),
        ("trust x key=k not-after=tomorrow", "a day, YYYY-MM-DD"),
        (f"trust x identity=a issuer={ISSUER} revoked=r", "it goes with key=FILE"),
        ("trust x revoked=r", "it goes with key=FILE"),
        ("trust x key=k expires=2027-01-01", "usage: trust PATTERN"),
        ("trust x key=k trusted-root=r.json", "for keyless lines"),
    ],
)
def test_a_bad_option_is_one_error(line: str, said: str) -> None:
    with pytest.raises(ParseError) as err:
        _mod(line + "\n")
    assert said in str(err.value) and "wgt.mod:3:" in str(err.value), str(err.value)


def test_the_revocation_list_format() -> None:
    got = parse_revoked(
        "# acme's revoked keys\n\n"
        f"sha256:{'A' * 64}  2026-11-02  the CI key leaked  # noted by ops\n"
        f"{'b' * 64}\n",
        "acme.revoked",
    )
    assert got["a" * 64].said() == "revoked 2026-11-02: the CI key leaked"
    assert got["b" * 64].said() == "revoked"
    for bad, why in (
        ("sha256:abc", "not a key fingerprint"),
        ("a" * 64 + " 2026-02-30", "not a date"),
    ):
        with pytest.raises(ValueError, match=rf"acme\.revoked:2: .*{why}"):
            parse_revoked("# x\n" + bad + "\n", "acme.revoked")


def test_a_revoked_key_is_refused_and_a_rotated_keyring_verifies(tmp_path: Path) -> None:
    old, new = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    _pub(old, tmp_path / "a.pem")
    _pub(new, tmp_path / "b.pem")
    (tmp_path / "acme.pub").write_bytes(
        (tmp_path / "a.pem").read_bytes() + (tmp_path / "b.pem").read_bytes()
    )
    rule = _mod("trust example.com/* key=acme.pub revoked=acme.revoked\n").trusts[0]
    by_old = make_bundle("example.com/m@v1.0.0", FILES, old)
    by_new = make_bundle("example.com/m@v1.0.0", FILES, new)
    (tmp_path / "acme.revoked").write_text("# none yet\n")
    check("example.com/m", "v1.0.0", FILES, by_old, rule, tmp_path)  # either key of the ring
    check("example.com/m", "v1.0.0", FILES, by_new, rule, tmp_path)
    (tmp_path / "acme.revoked").write_text(f"sha256:{_fpr(old)} 2026-11-02 the CI key leaked\n")
    with pytest.raises(TrustError) as err:
        check("example.com/m", "v1.0.0", FILES, by_old, rule, tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("example.com/m@v1.0.0: "), msg
    assert "want a signature by key acme.pub" in msg
    assert (
        f"signed by key sha256:{_fpr(old)}, which acme.revoked lists as revoked 2026-11-02: the CI key leaked"
        in msg
    )
    check("example.com/m", "v1.0.0", FILES, by_new, rule, tmp_path)  # the rotated key
    # a bundle that carries no hint is refused too, once the ring's key verifying it is revoked
    doc = json.loads(by_old)
    doc["verificationMaterial"]["publicKey"]["hint"] = ""
    with pytest.raises(TrustError, match=r"which acme\.revoked lists as revoked"):
        check("example.com/m", "v1.0.0", FILES, json.dumps(doc).encode(), rule, tmp_path)
    # a malformed or missing list is a refusal naming it, never a pass
    (tmp_path / "acme.revoked").write_text("not-a-key\n")
    with pytest.raises(
        TrustError, match=r"trust line: acme\.revoked:1: 'not-a-key' is not a key fingerprint"
    ):
        check("example.com/m", "v1.0.0", FILES, by_new, rule, tmp_path)
    (tmp_path / "acme.revoked").unlink()
    with pytest.raises(TrustError, match=r"cannot read the revocation list acme\.revoked"):
        check("example.com/m", "v1.0.0", FILES, by_new, rule, tmp_path)


def test_not_after_ends_the_trust_after_that_day(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    _pub(key, tmp_path / "k.pub")
    rule = _mod("trust example.com/* key=k.pub not-after=2027-06-30\n").trusts[0]
    bundle = make_bundle("example.com/m@v1.0.0", FILES, key)
    check("example.com/m", "v1.0.0", FILES, bundle, rule, tmp_path, datetime.date(2027, 6, 30))
    with pytest.raises(TrustError) as err:
        check("example.com/m", "v1.0.0", FILES, bundle, rule, tmp_path, datetime.date(2027, 7, 1))
    msg = str(err.value)
    assert "\n" not in msg and "example.com/m@v1.0.0" in msg and "key k.pub" in msg
    assert "trusts it until 2027-06-30 (not-after=), which has passed" in msg
    # the clock: a day long past is refused without a date given
    past = _mod("trust example.com/* key=k.pub not-after=2001-01-01\n").trusts[0]
    with pytest.raises(TrustError, match="until 2001-01-01"):
        check("example.com/m", "v1.0.0", FILES, bundle, past, tmp_path)
    # keyless lines expire too, before any certificate is looked at
    line = f"trust example.com/* identity=r@acme.com issuer={ISSUER} not-after=2001-01-01\n"
    with pytest.raises(TrustError, match=r"identity r@acme\.com .* until 2001-01-01"):
        check(
            "example.com/m",
            "v1.0.0",
            FILES,
            _keyless_bundle("r@acme.com", ISSUER),
            _mod(line).trusts[0],
            tmp_path,
        )


def test_get_and_verify_refuse_a_revoked_key(
    wgtpm,
    project: Path,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    tree = DirectoryTarget(tmp_path / "tree")
    priv, pub = _keypair(tmp_path, "acme")
    tree.publish(_signed(make_release(tmp_path / "r", MODULE), priv), _Quiet())
    (project / "keys").mkdir()
    (project / "keys" / "acme.pub").write_bytes(pub.read_bytes())
    (project / "keys" / "acme.revoked").write_text("# acme's revoked keys\n")
    (project / "wgt.mod").write_text(
        "module example.com/app\nwgt 0.1\n\n"
        "trust example.com/acme/* key=keys/acme.pub revoked=keys/acme.revoked\n"
    )
    r = _get(wgtpm, project, monkeypatch, tree)
    assert r.code == 0, r.err
    fpr = key_hint(load_signing_key(priv).key.public_key())
    (project / "keys" / "acme.revoked").write_text(f"sha256:{fpr} 2026-11-02 leaked\n")
    r = wgtpm("verify", cwd=project)
    out = (r.out + r.err).strip()
    assert r.code != 0 and MODULE in out and f"sha256:{fpr}" in out, out
    assert "revoked 2026-11-02: leaked" in out and "key keys/acme.pub" in out, out
    assert "Traceback" not in out
    (project / "wgt.sum").unlink()
    r = wgtpm("get", f"{MODULE}@{V}", cwd=project)
    assert r.code != 0 and r.err.strip().count("\n") == 0, r.err
    assert MODULE in r.err and "revoked 2026-11-02: leaked" in r.err, r.err


def test_key_fingerprint_prints_what_a_list_names(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    priv, pub = _keypair(tmp_path, "acme")
    fpr = key_hint(load_signing_key(priv).key.public_key())
    for f in (pub, priv):
        r = wgtpm("key", "fingerprint", str(f), cwd=tmp_path)
        assert r.code == 0 and r.out.split()[0] == f"sha256:{fpr}", r.out + r.err
    (tmp_path / "junk").write_text("junk")
    r = wgtpm("key", "fingerprint", str(tmp_path / "junk"), cwd=tmp_path)
    assert r.code != 0 and "not a PEM public or private key" in r.err and "Traceback" not in r.err


# -- the registry


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    yield from _live(f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool")


M = "example.com/acme/rev"


def _publish(
    live: Live, c: httpx.Client, key: ec.EllipticCurvePrivateKey, version: str
) -> httpx.Response:
    fs = {"wgt.mod": modtext(M), "w.bin": b"\x02" * 64}
    shas = {p: hashlib.sha256(b).hexdigest() for p, b in fs.items()}
    auth = {"Authorization": f"Bearer {live.token}"}
    body = {"module": M, "version": version, "index": index_bytes(M, version, fs).decode()}
    r = c.post("/api/v1/uploads", json=body, headers=auth)
    assert r.status_code == 201, r.text
    doc = r.json()
    by_sha = {hashlib.sha256(b).hexdigest(): b for b in fs.values()}
    for m in doc["missing"]:
        c.put(f"{doc['files_url']}{m['sha256']}", content=by_sha[m["sha256"]], headers=auth)
    sig = make_bundle(f"{M}@{version}", shas, key).decode()
    return c.post(doc["commit_url"], json={"signature": sig}, headers=auth)


def test_the_registry_shows_a_revoked_signer_and_refuses_its_publishes(
    live: Live, tmp_path: Path
) -> None:
    revoked = tmp_path / "revoked-keys"
    live.registry.revoked = RevocationFile(revoked)  # type: ignore[attr-defined]
    key = ec.generate_private_key(ec.SECP256R1())
    with httpx.Client(base_url=live.url, timeout=10) as c:
        r = _publish(live, c, key, "v0.1.0")
        assert r.status_code == 201, r.text
        page = c.get(f"/-/module/{M}/@v/v0.1.0").text
        assert f"signed by key <code>{_fpr(key)[:16]}</code>" in page and "revoked" not in page
        # the operator revokes the key: the cached page is rendered again, saying so
        revoked.write_text(f"sha256:{_fpr(key)} 2026-11-02 the CI key leaked\n")
        page = c.get(f"/-/module/{M}/@v/v0.1.0").text
        assert "key revoked 2026-11-02: the CI key leaked" in page, page
        r = _publish(live, c, key, "v0.2.0")
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert f"sha256:{_fpr(key)}" in err and "revoked 2026-11-02: the CI key leaked" in err
        assert "v0.2.0" not in c.get(f"/{M}/@v/list").text
        # a list the operator broke is logged and counts as empty (pages still render)
        revoked.write_text("garbage\n")
        assert c.get(f"/-/module/{M}/@v/v0.1.0").status_code == 200
