"""A Sigstore instance made on the spot, for end-to-end keyless verification offline.

:class:`LocalSigstore` holds what Sigstore's public instance holds: a Fulcio-like CA,
a certificate-transparency log key and a Rekor key. :meth:`LocalSigstore.trusted_root`
is their ``trusted_root.json`` (sigstore's format), and :meth:`LocalSigstore.keyless`
turns a model-signing bundle signed with an ephemeral key into the keyless bundle that
Fulcio and Rekor would have made of it: a leaf certificate naming the identity (its SAN)
and the OIDC issuer (Fulcio's v1 and v2 extensions) with an embedded SCT over the
precertificate, and a Rekor ``dsse`` 0.0.1 entry with its signed entry timestamp, an
inclusion proof in a one-entry log and that log's signed checkpoint. The ``sigstore``
package verifies it all against the local root exactly as against the public one.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import time
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["LocalSigstore"]

_SCT_LIST = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
_ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
_ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")


def _spki(key: Any) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _octet_string(b: bytes) -> bytes:
    n = len(b)
    size = (
        bytes([n])
        if n < 0x80
        else b"\x81" + bytes([n])
        if n < 0x100
        else b"\x82" + n.to_bytes(2, "big")
    )
    return b"\x04" + size + b


def _usage(**on: bool) -> x509.KeyUsage:
    names = [
        "digital_signature",
        "content_commitment",
        "key_encipherment",
        "data_encipherment",
        "key_agreement",
        "key_cert_sign",
        "crl_sign",
        "encipher_only",
        "decipher_only",
    ]
    return x509.KeyUsage(**{n: on.get(n, False) for n in names})


class LocalSigstore:
    """A CA, a CT log key and a Rekor key, and the keyless bundles they would make."""

    def __init__(self) -> None:
        now = datetime.datetime.now(datetime.timezone.utc)
        self.ca_key = ec.generate_private_key(ec.SECP384R1())
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "local-sigstore"),
                x509.NameAttribute(NameOID.COMMON_NAME, "local-fulcio"),
            ]
        )
        self.ca = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(_usage(key_cert_sign=True, crl_sign=True), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False
            )
            .sign(self.ca_key, hashes.SHA384())
        )
        self.ct_key = ec.generate_private_key(ec.SECP256R1())
        self.rekor_key = ec.generate_private_key(ec.SECP256R1())

    def trusted_root(self) -> dict[str, Any]:
        """The ``trusted_root.json`` of this instance (sigstore's TrustedRoot v0.1)."""
        valid = {"start": "2000-01-01T00:00:00Z"}

        def log(key: Any, url: str) -> dict[str, Any]:
            der = _spki(key)
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": _b64(der),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": valid,
                },
                "logId": {"keyId": _b64(hashlib.sha256(der).digest())},
            }

        ca = self.ca.public_bytes(serialization.Encoding.DER)
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log(self.rekor_key, "https://rekor.local")],
            "certificateAuthorities": [
                {
                    "subject": {"organization": "local-sigstore", "commonName": "local-fulcio"},
                    "uri": "https://fulcio.local",
                    "certChain": {"certificates": [{"rawBytes": _b64(ca)}]},
                    "validFor": valid,
                }
            ],
            "ctlogs": [log(self.ct_key, "https://ctfe.local")],
            "timestampAuthorities": [],
        }

    def leaf(self, identity: str, issuer: str, key: Any) -> x509.Certificate:
        """Fulcio's certificate for ``key``: the identity (an e-mail, else a URI), the
        issuer, code signing, and an SCT the CT log key signed over the precertificate."""
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        san: x509.GeneralName = (
            x509.UniformResourceIdentifier(identity)
            if "://" in identity
            else x509.RFC822Name(identity)
        )
        serial = x509.random_serial_number()
        v2 = b"\x0c" + bytes([len(issuer)]) + issuer.encode()

        def builder() -> x509.CertificateBuilder:
            return (
                x509.CertificateBuilder()
                .subject_name(x509.Name([]))
                .issuer_name(self.ca.subject)
                .public_key(key.public_key())
                .serial_number(serial)
                .not_valid_before(now - datetime.timedelta(seconds=5))
                .not_valid_after(now + datetime.timedelta(minutes=10))
                .add_extension(_usage(digital_signature=True), critical=True)
                .add_extension(
                    x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False
                )
                .add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                    critical=False,
                )
                .add_extension(x509.SubjectAlternativeName([san]), critical=True)
                .add_extension(x509.UnrecognizedExtension(_ISSUER_V1, issuer.encode()), False)
                .add_extension(x509.UnrecognizedExtension(_ISSUER_V2, v2), False)
            )

        tbs = builder().sign(self.ca_key, hashes.SHA384()).tbs_certificate_bytes
        when = int(time.time() * 1000).to_bytes(8, "big")
        signed = (  # RFC 6962 3.2: v1, certificate_timestamp, precert_entry
            b"\x00\x00" + when + b"\x00\x01" + hashlib.sha256(_spki(self.ca_key)).digest()
            + len(tbs).to_bytes(3, "big") + tbs + b"\x00\x00"
        )  # fmt: skip
        sig = self.ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
        log_id = hashlib.sha256(_spki(self.ct_key)).digest()
        sct = (
            b"\x00" + log_id + when + b"\x00\x00" + b"\x04\x03" + len(sig).to_bytes(2, "big") + sig
        )
        scts = len(sct).to_bytes(2, "big") + sct
        scts = len(scts).to_bytes(2, "big") + scts
        cert = (
            builder()
            .add_extension(x509.UnrecognizedExtension(_SCT_LIST, _octet_string(scts)), False)
            .sign(self.ca_key, hashes.SHA384())
        )
        assert cert.tbs_precertificate_bytes == tbs
        return cert

    def keyless(self, bundle: bytes, identity: str, issuer: str, key: Any) -> bytes:
        """``bundle`` (a model-signing bundle signed with the ephemeral ``key``) as Sigstore
        would have made it keylessly for ``identity`` as ``issuer`` certified it."""
        doc = json.loads(bundle)
        cert = self.leaf(identity, issuer, key)
        env = doc["dsseEnvelope"]
        pem = cert.public_bytes(serialization.Encoding.PEM)
        body = {
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(json.dumps(env).encode()).hexdigest(),
                },
                "payloadHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(base64.b64decode(env["payload"])).hexdigest(),
                },
                "signatures": [{"signature": env["signatures"][0]["sig"], "verifier": _b64(pem)}],
            },
        }
        canon = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        log_id = hashlib.sha256(_spki(self.rekor_key)).digest()
        integrated = int(time.time())
        promise = json.dumps(
            {
                "body": _b64(canon),
                "integratedTime": integrated,
                "logID": log_id.hex(),
                "logIndex": 0,
            },
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
        root = hashlib.sha256(b"\x00" + canon).digest()  # a one-entry log: the leaf is the root
        note = f"rekor.local - 1\n1\n{_b64(root)}\n"
        note_sig = self.rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        ecdsa = ec.ECDSA(hashes.SHA256())
        doc["verificationMaterial"] = {
            "certificate": {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))},
            "tlogEntries": [
                {
                    "logIndex": "0",
                    "logId": {"keyId": _b64(log_id)},
                    "kindVersion": {"kind": "dsse", "version": "0.0.1"},
                    "integratedTime": str(integrated),
                    "inclusionPromise": {
                        "signedEntryTimestamp": _b64(self.rekor_key.sign(promise, ecdsa))
                    },
                    "inclusionProof": {
                        "logIndex": "0",
                        "rootHash": _b64(root),
                        "treeSize": "1",
                        "hashes": [],
                        "checkpoint": {
                            "envelope": f"{note}\n\u2014 rekor.local {_b64(log_id[:4] + note_sig)}\n"
                        },
                    },
                    "canonicalizedBody": _b64(canon),
                }
            ],
        }
        return json.dumps(doc, indent=2).encode()
