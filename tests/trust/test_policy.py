"""wgt.mod trust lines, their matching, and model-signing bundles checked without the network:
each refusal says what was found; keyless bundles are checked for identity offline."""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from wgtpm import modfile
from wgtpm._errors import ParseError
from wgtpm.trust import TrustError, check, enabled, policy, rule_for
from wgtpm.trust._bundle import BadSignature, make_bundle, read_bundle

FILES = {"wgt.mod": "a" * 64, "w/x.bin": "b" * 64}
ISSUER = "https://token.actions.githubusercontent.com"


def _mod(text: str) -> modfile.ModFile:
    return modfile.parse(f"module example.com/app\nwgt 0.1\n{text}".encode())


def test_trust_lines_parse() -> None:
    mf = _mod(
        "trust github.com/acme/* key=keys/acme.pub\n"
        "trust (\n\thf.co/acme/m identity=release@acme.com issuer=" + ISSUER + "\n)\n"
    )
    assert [(t.pattern, t.key, t.identity, t.issuer) for t in mf.trusts] == [
        ("github.com/acme/*", "keys/acme.pub", None, None),
        ("hf.co/acme/m", None, "release@acme.com", ISSUER),
    ]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("trust github.com/acme/*", "usage: trust PATTERN"),
        ("trust github.com/* key=a key=b", "usage: trust PATTERN"),
        ("trust github.com/a* key=a", "a pattern is a module path"),
        ("trust x identity=a", "usage: trust PATTERN"),
        ("trust x identity=a issuer=http://x", "https:// URL"),
        ("trust x key=a identity=b issuer=https://i", "usage: trust PATTERN"),
    ],
)
def test_a_bad_trust_line_is_one_error(line: str, said: str) -> None:
    with pytest.raises(ParseError) as err:
        _mod(line + "\n")
    assert said in str(err.value) and "wgt.mod:3:" in str(err.value)


def test_the_most_specific_line_wins() -> None:
    mf = _mod(
        "trust example.com/* key=all.pub\ntrust example.com/acme/* key=acme.pub\n"
        "trust example.com/acme/m key=m.pub\n"
    )
    assert rule_for(mf.trusts, "example.com/acme/m").key == "m.pub"  # type: ignore[union-attr]
    assert rule_for(mf.trusts, "example.com/acme/n").key == "acme.pub"  # type: ignore[union-attr]
    assert rule_for(mf.trusts, "example.com/b").key == "all.pub"  # type: ignore[union-attr]
    assert rule_for(mf.trusts, "example.org/b") is None
    assert rule_for(mf.trusts, "example.com") is None  # below it, not itself


def test_wgttrust_off() -> None:
    mf = _mod("trust example.com/* key=k.pub\n")
    assert policy(mf.trusts, Path("."), {"WGTTRUST": "off"}) is None
    assert policy(mf.trusts, Path("."), {}) is not None
    assert enabled({}) and not enabled({"WGTTRUST": " OFF "})


def _pub(key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey, where: Path) -> None:
    where.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


@pytest.mark.parametrize("kind", ["p256", "ed25519"])
def test_check_with_a_key(tmp_path: Path, kind: str) -> None:
    key = (
        ec.generate_private_key(ec.SECP256R1())
        if kind == "p256"
        else ed25519.Ed25519PrivateKey.generate()
    )
    _pub(key, tmp_path / "k.pub")
    rule = _mod("trust example.com/* key=k.pub\n").trusts[0]
    bundle = make_bundle("example.com/m@v1.0.0", FILES, key)
    check("example.com/m", "v1.0.0", FILES, bundle, rule, tmp_path)
    with pytest.raises(TrustError) as err:
        check("example.com/m", "v1.0.0", {**FILES, "w/x.bin": "c" * 64}, bundle, rule, tmp_path)
    assert "w/x.bin has another sha256" in str(err.value)
    with pytest.raises(TrustError) as err:
        check("example.com/m", "v1.0.0", {**FILES, "extra": "c" * 64}, bundle, rule, tmp_path)
    assert "it does not sign extra" in str(err.value)
    with pytest.raises(TrustError) as err:
        check("example.com/m", "v1.0.0", FILES, b"{", rule, tmp_path)
    assert "not JSON" in str(err.value) and "want a signature by key k.pub" in str(err.value)
    with pytest.raises(TrustError) as err:
        check(
            "example.com/m",
            "v1.0.0",
            FILES,
            bundle,
            _mod("trust x key=nope.pub\n").trusts[0],
            tmp_path,
        )
    assert "cannot read nope.pub" in str(err.value)


def test_sharded_or_other_predicates_are_refused() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    doc = json.loads(make_bundle("m", FILES, key))
    st = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    st["predicate"]["serialization"]["method"] = "shards"
    doc["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    with pytest.raises(BadSignature, match="does not list files by sha256"):
        read_bundle(json.dumps(doc).encode())
    st["predicateType"] = "https://slsa.dev/provenance/v1"
    doc["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    with pytest.raises(BadSignature, match="predicate is not model-signing's"):
        read_bundle(json.dumps(doc).encode())


def _keyless_bundle(identity: str, issuer: str) -> bytes:
    """A bundle shaped as Sigstore's keyless ones: a certificate with the identity as its
    e-mail SAN and Fulcio's issuer extension (self-made: it would fail the chain check)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sigstore-intermediate")])
    now = datetime.datetime.now(datetime.timezone.utc)
    der_issuer = b"\x0c" + bytes([len(issuer)]) + issuer.encode()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(minutes=10))
        .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(identity)]), critical=True)
        .add_extension(
            x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8"), der_issuer),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    doc = json.loads(make_bundle("m@v1.0.0", FILES, key))
    raw = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
    doc["verificationMaterial"] = {"certificate": {"rawBytes": raw}, "tlogEntries": []}
    return json.dumps(doc).encode()


def test_an_unknown_identity_is_refused_offline(tmp_path: Path) -> None:
    rule = _mod(f"trust example.com/* identity=release@acme.com issuer={ISSUER}\n").trusts[0]
    bundle = _keyless_bundle("mallory@evil.example", ISSUER)
    with pytest.raises(TrustError) as err:
        check("example.com/m", "v1.0.0", FILES, bundle, rule, tmp_path)
    msg = str(err.value)
    assert "want a signature by identity release@acme.com" in msg
    assert f"signed by identity mallory@evil.example (issuer {ISSUER})" in msg
    other = _keyless_bundle("release@acme.com", "https://accounts.google.com")
    with pytest.raises(TrustError, match=r"issuer https://accounts\.google\.com"):
        check("example.com/m", "v1.0.0", FILES, other, rule, tmp_path)


def test_a_key_signature_where_keyless_is_trusted_is_refused(tmp_path: Path) -> None:
    rule = _mod(f"trust example.com/* identity=release@acme.com issuer={ISSUER}\n").trusts[0]
    bundle = make_bundle("m", FILES, ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(TrustError, match="signed with a key, not keylessly"):
        check("example.com/m", "v1.0.0", FILES, bundle, rule, tmp_path)


def test_a_keyless_signature_where_a_key_is_trusted_is_refused(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    _pub(key, tmp_path / "k.pub")
    rule = _mod("trust example.com/* key=k.pub\n").trusts[0]
    with pytest.raises(TrustError, match="signed keylessly"):
        check("example.com/m", "v1.0.0", FILES, _keyless_bundle("a@b", ISSUER), rule, tmp_path)


def test_an_issuer_url_is_no_comment_and_formats_back_bare() -> None:
    text = f"module example.com/app\nwgt 0.1\n\ntrust hf.co/acme/* identity=r@acme.com issuer={ISSUER} // CI\n"
    mf = modfile.parse(text.encode())
    assert mf.trusts[0].issuer == ISSUER
    assert mf.format().decode() == text
    assert (
        modfile.parse(b"module example.com/app\nrequire example.com/x v1.0.0 // indirect\n")
        .requires[0]
        .indirect
    )
