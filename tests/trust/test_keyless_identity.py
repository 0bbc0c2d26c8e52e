"""Keyless trust lines against real X.509 certificates, as Fulcio issues them.

A local CA issues leaves the way Fulcio does: the identity as the subject alternative
name (an e-mail, or GitHub Actions' workflow URI), the OIDC issuer in Fulcio's v2
extension (a DER UTF8String) or its older v1 one (raw bytes), code-signing usage. The
identity and issuer are read from them in each bundle form (``certificate``, and
``x509CertificateChain``), matched exactly or by a ``*`` pattern, and only a match is
handed to sigstore, with the certificate's own identity. What sigstore then checks (the
chain to Fulcio's root, the SCT, the Rekor entry) needs Sigstore's trust root and is not
run here: see docs/guides/signing.md.
"""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from wgtpm import modfile
from wgtpm.trust import TrustError, cert_identity, check, identity_matches, make_bundle

FILES = {"wgt.mod": "a" * 64, "w/x.bin": "b" * 64}
GHA = "https://token.actions.githubusercontent.com"
WORKFLOW = "https://github.com/acme/m/.github/workflows/release.yml@refs/tags/v1.2.0"


def _ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP384R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "local-fulcio")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
        .sign(key, hashes.SHA384())
    )
    return key, cert


CA = _ca()


def _leaf(
    san: x509.GeneralName | None, issuer: str | None, exts: str = "v1 v2"
) -> tuple[Any, bytes]:
    """A leaf as Fulcio issues it; ``exts`` says which issuer extensions it carries (Fulcio
    writes both: v1, raw bytes, which sigstore's identity policy reads, and v2, DER)."""
    ca_key, ca_cert = CA
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(minutes=10))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
    )
    if san is not None:
        b = b.add_extension(x509.SubjectAlternativeName([san]), critical=True)
    if issuer is not None and "v1" in exts.split():
        oid = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
        b = b.add_extension(x509.UnrecognizedExtension(oid, issuer.encode()), critical=False)
    if issuer is not None and "v2" in exts.split():
        oid = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
        der = b"\x0c" + bytes([len(issuer)]) + issuer.encode()
        b = b.add_extension(x509.UnrecognizedExtension(oid, der), critical=False)
    cert = b.sign(ca_key, hashes.SHA256())
    return key, cert.public_bytes(serialization.Encoding.DER)


def _bundle(key: Any, der: bytes, chain: bool = False) -> bytes:
    doc = json.loads(make_bundle("example.com/m@v1.0.0", FILES, key))
    raw = base64.b64encode(der).decode()
    ca = base64.b64encode(CA[1].public_bytes(serialization.Encoding.DER)).decode()
    doc["verificationMaterial"] = (
        {"x509CertificateChain": {"certificates": [{"rawBytes": raw}, {"rawBytes": ca}]}}
        if chain
        else {"certificate": {"rawBytes": raw}, "tlogEntries": []}
    )
    return json.dumps(doc).encode()


def _rule(identity: str, issuer: str = GHA) -> modfile.Trust:
    text = f"module example.com/app\nwgt 0.1\ntrust example.com/* identity={identity} issuer={issuer}\n"
    return modfile.parse(text.encode()).trusts[0]


@pytest.mark.parametrize(
    ("san", "issuer", "exts", "want"),
    [
        (x509.RFC822Name("release@acme.com"), "https://accounts.google.com", "v1 v2",
         ("release@acme.com", "https://accounts.google.com")),
        (x509.UniformResourceIdentifier(WORKFLOW), GHA, "v2", (WORKFLOW, GHA)),
        (x509.UniformResourceIdentifier(WORKFLOW), GHA, "v1", (WORKFLOW, GHA)),
        (None, None, "", ("", "")),
    ],
)  # fmt: skip
def test_identity_and_issuer_are_read_from_fulcio_shaped_certificates(
    san: x509.GeneralName | None, issuer: str | None, exts: str, want: tuple[str, str]
) -> None:
    _, der = _leaf(san, issuer, exts)
    assert cert_identity(der) == want


def test_identity_patterns() -> None:
    pat = "https://github.com/acme/m/.github/workflows/release.yml@refs/tags/*"
    assert identity_matches(pat, WORKFLOW)
    assert not identity_matches(pat, WORKFLOW.replace("acme/m/", "acme/mallory/"))
    assert not identity_matches(pat, WORKFLOW.replace("refs/tags", "refs/heads"))
    assert identity_matches("release@acme.com", "release@acme.com")
    assert not identity_matches("release@acme.com", "release@acme.com.evil")
    assert not identity_matches("release@acme.c?m", "release@acme.com")  # only * is special


class _Recorder:
    """Stands in for sigstore's production verifier (and its bundle parser, which wants a
    Rekor entry): records the policy it is asked with."""

    seen: ClassVar[list[Any]] = []

    @staticmethod
    def from_json(raw: str) -> str:
        return raw

    @classmethod
    def production(cls) -> _Recorder:
        return cls()

    def verify_dsse(self, bundle: Any, policy: Any) -> None:
        """sigstore's own identity policy, on the bundle's certificate (sigstore's code
        reads the SAN and the issuer extension, not wgtpm's)."""
        vm = json.loads(bundle)["verificationMaterial"]
        c = vm.get("certificate") or vm["x509CertificateChain"]["certificates"][0]
        policy.verify(x509.load_der_x509_certificate(base64.b64decode(c["rawBytes"])))
        self.seen.append(policy)


@pytest.mark.parametrize("chain", [False, True], ids=["certificate", "chain"])
def test_a_matching_identity_goes_to_sigstore_a_stranger_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chain: bool
) -> None:
    pytest.importorskip("sigstore")
    import sigstore.models
    import sigstore.verify

    monkeypatch.setattr(sigstore.verify, "Verifier", _Recorder)
    monkeypatch.setattr(sigstore.models, "Bundle", _Recorder)
    _Recorder.seen.clear()
    key, der = _leaf(x509.UniformResourceIdentifier(WORKFLOW), GHA)
    bundle = _bundle(key, der, chain)
    rule = _rule("https://github.com/acme/m/.github/workflows/release.yml@refs/tags/*")
    check("example.com/m", "v1.0.0", FILES, bundle, rule, tmp_path)
    assert len(_Recorder.seen) == 1  # and sigstore's policy accepted the certificate

    stranger_key, stranger = _leaf(
        x509.UniformResourceIdentifier(WORKFLOW.replace("acme/m/", "mallory/m/")), GHA
    )
    with pytest.raises(TrustError) as err:
        check(
            "example.com/m", "v1.0.0", FILES, _bundle(stranger_key, stranger, chain), rule, tmp_path
        )
    assert "signed by identity https://github.com/mallory/m/" in str(err.value)
    other_issuer = _leaf(x509.UniformResourceIdentifier(WORKFLOW), "https://gitlab.com")
    with pytest.raises(TrustError, match=r"issuer https://gitlab\.com"):
        check("example.com/m", "v1.0.0", FILES, _bundle(*other_issuer, chain), rule, tmp_path)
    assert len(_Recorder.seen) == 1  # strangers never reached sigstore


def test_without_the_stand_in_sigstore_refuses_a_locally_issued_certificate(tmp_path: Path) -> None:
    """The real verifier runs on a matching identity, and refuses what Sigstore's root did
    not certify (here: no Rekor entry, a local CA): a match alone is never enough."""
    pytest.importorskip("sigstore")
    key, der = _leaf(x509.RFC822Name("release@acme.com"), GHA)
    with pytest.raises(TrustError, match="keyless verification failed"):
        check(
            "example.com/m", "v1.0.0", FILES, _bundle(key, der), _rule("release@acme.com"), tmp_path
        )
