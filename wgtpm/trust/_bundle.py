"""OpenSSF model-signing bundles, read and written without model-signing or sigstore.

A release's signature (``$module/@v/$version.sig``; GitHub asset and Hugging
Face file ``wgt.sig``) is a Sigstore bundle v0.3 in exactly the form
``model_signing sign key`` (model-signing 1.1) writes::

    {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
     "verificationMaterial": {"publicKey": {"hint": "64 hex"}, "tlogEntries": []},
     "dsseEnvelope": {"payloadType": "application/vnd.in-toto+json",
                      "payload": "base64 of the statement",
                      "signatures": [{"sig": "base64", "keyid": ""}]}}

``hint`` is the sha256 of the public key's PEM SubjectPublicKeyInfo bytes; the
signature is over DSSE's pre-authentication encoding of the payload (ECDSA
with the curve's hash, DER; or Ed25519, which model-signing's own CLI does not
sign with). The statement (in-toto Statement v1)::

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": "MODEL", "digest": {"sha256": "root"}}],
     "predicateType": "https://model_signing/signature/v1.0",
     "predicate": {"resources": [{"name": "PATH", "algorithm": "sha256",
                                  "digest": "64 hex"}, ...],
                   "serialization": {"method": "files", "hash_type": "sha256",
                                     "allow_symlinks": false,
                                     "ignore_paths": [...]}}}

``root`` is the sha256 of the concatenated raw digests of ``resources`` in
their order (sorted by name). Only per-file sha256 serialization is accepted
(model-signing's default; its sharded and blake2 modes name files and digests
that an index cannot be compared with). wgtpm signs exactly the index's
files, so that ``model_signing verify key DIR`` succeeds on the module's
directory as the cache holds it, and a directory signed by model-signing's CLI
and published as-is verifies here: its files are the index's.

A keyless bundle (``verificationMaterial.certificate``, a Fulcio certificate
and a Rekor entry) needs Sigstore's trust root: :func:`verify_keyless` hands it
to the ``sigstore`` package (``pip install 'wgtpm[sign]'``).

Pure apart from ``cryptography``: nothing here reads the network.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUNDLE_MEDIA_TYPE",
    "MAX_BUNDLE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "BadSignature",
    "Signed",
    "key_hint",
    "make_bundle",
    "read_bundle",
    "verify_key",
]

BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
#: model-signing's default ignore list (git's files), recorded as it records it.
IGNORE_PATHS = [".gitattributes", ".git", ".github", ".gitignore"]
#: A bundle larger than this is refused unread: a 100,000-file release's bundle is
#: about 15 MB (each resource is some 150 bytes of JSON, base64 adds a third).
MAX_BUNDLE = 64 << 20


class BadSignature(ValueError):
    """A bundle that is not a valid signature; the message is one short reason."""


@dataclass(frozen=True)
class Signed:
    """A read bundle: what it says was signed, and the material to check it with."""

    model: str  # the subject's name (model-signing: the directory's name)
    files: dict[str, str]  # path -> sha256 hex, as the statement lists them
    hint: str  # verificationMaterial.publicKey.hint ("" when keyless)
    certificate: bytes | None  # DER of a keyless bundle's signing certificate
    payload: bytes
    sig: bytes
    raw: dict[str, Any]


def pae(payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding of an in-toto payload (what is signed)."""
    t = PAYLOAD_TYPE.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def _b64(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise BadSignature(f"the bundle's {what} is not base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadSignature(f"the bundle's {what} is not base64") from exc


def _root(resources: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for _, digest in resources:
        h.update(bytes.fromhex(digest))
    return h.hexdigest()


def read_bundle(data: bytes) -> Signed:
    """The bundle ``data``, parsed and checked for form (not yet for its signature);
    :class:`BadSignature` with a short reason for anything else."""
    if len(data) > MAX_BUNDLE:
        raise BadSignature(f"the bundle is over {MAX_BUNDLE >> 20} MiB")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadSignature("the bundle is not JSON") from exc
    if not isinstance(doc, dict) or not str(doc.get("mediaType", "")).startswith(
        "application/vnd.dev.sigstore.bundle"
    ):
        raise BadSignature("not a Sigstore bundle (no mediaType)")
    vm = doc.get("verificationMaterial")
    env = doc.get("dsseEnvelope")
    if not isinstance(vm, dict) or not isinstance(env, dict):
        raise BadSignature("the bundle has no DSSE envelope and verification material")
    if env.get("payloadType") != PAYLOAD_TYPE:
        raise BadSignature("the bundle's payload is not an in-toto statement")
    payload = _b64(env.get("payload"), "payload")
    sigs = env.get("signatures")
    if not isinstance(sigs, list) or len(sigs) != 1 or not isinstance(sigs[0], dict):
        raise BadSignature("the bundle does not hold exactly one signature")
    sig = _b64(sigs[0].get("sig"), "signature")
    hint, cert = "", None
    pk = vm.get("publicKey")
    if isinstance(pk, dict):
        hint = str(pk.get("hint", ""))
    else:
        c = vm.get("certificate")
        if isinstance(c, dict):
            cert = _b64(c.get("rawBytes"), "certificate")
        else:
            chain = vm.get("x509CertificateChain")
            certs = chain.get("certificates") if isinstance(chain, dict) else None
            if not isinstance(certs, list) or not certs or not isinstance(certs[0], dict):
                raise BadSignature("the bundle names neither a public key nor a certificate")
            cert = _b64(certs[0].get("rawBytes"), "certificate")
    model, files = _statement(payload)
    return Signed(model, files, hint, cert, payload, sig, doc)


def _statement(payload: bytes) -> tuple[str, dict[str, str]]:
    """The model name and the (path, sha256) pairs of a model-signing v1.0 statement."""
    try:
        st = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadSignature("the signed statement is not JSON") from exc
    if not isinstance(st, dict) or st.get("_type") != STATEMENT_TYPE:
        raise BadSignature("the signed payload is not an in-toto Statement v1")
    if st.get("predicateType") != PREDICATE_TYPE:
        raise BadSignature(f"the statement's predicate is not model-signing's ({PREDICATE_TYPE})")
    subj = st.get("subject")
    pred = st.get("predicate")
    if not isinstance(subj, list) or len(subj) != 1 or not isinstance(pred, dict):
        raise BadSignature("the statement does not have one subject and a predicate")
    ser = pred.get("serialization")
    if (
        not isinstance(ser, dict)
        or ser.get("method") != "files"
        or ser.get("hash_type") != "sha256"
    ):
        raise BadSignature(
            "the statement does not list files by sha256 (sign with model-signing's "
            "default file serialization)"
        )
    res = pred.get("resources")
    if not isinstance(res, list):
        raise BadSignature("the statement has no resources")
    pairs: list[tuple[str, str]] = []
    for r in res:
        if (
            not isinstance(r, dict)
            or not isinstance(r.get("name"), str)
            or r.get("algorithm") != "sha256"
            or not isinstance(r.get("digest"), str)
            or len(r["digest"]) != 64
        ):
            raise BadSignature("a resource of the statement is not a path with a sha256")
        try:
            bytes.fromhex(r["digest"])
        except ValueError as exc:
            raise BadSignature("a resource's digest is not hex") from exc
        pairs.append((r["name"], r["digest"].lower()))
    s0 = subj[0]
    root = s0.get("digest", {}).get("sha256") if isinstance(s0, dict) else None
    if root != _root(pairs):
        raise BadSignature("the statement's subject digest does not match its resources")
    files = dict(pairs)
    if len(files) != len(pairs):
        raise BadSignature("the statement lists a path twice")
    return str(s0.get("name", "")), files


def key_hint(public: Any) -> str:
    """model-signing's hint for ``public``: sha256 hex of its PEM SubjectPublicKeyInfo."""
    from cryptography.hazmat.primitives import serialization

    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(pem).hexdigest()


def verify_key(signed: Signed, public: Any) -> None:
    """Check ``signed``'s signature with ``public`` (a ``cryptography`` public key);
    :class:`BadSignature` naming what is wrong."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if signed.certificate is not None:
        raise BadSignature("the bundle is signed keylessly (a certificate), not with a key")
    hint = key_hint(public)
    if signed.hint and signed.hint != hint:
        raise BadSignature(f"signed by another key (hint {signed.hint[:16]}...)")
    try:
        if isinstance(public, ec.EllipticCurvePublicKey):
            algo = {256: hashes.SHA256(), 384: hashes.SHA384(), 521: hashes.SHA512()}
            h = algo.get(public.curve.key_size)
            if h is None:
                raise BadSignature(f"unsupported curve {public.curve.name}")
            public.verify(signed.sig, pae(signed.payload), ec.ECDSA(h))
        elif isinstance(public, ed25519.Ed25519PublicKey):
            public.verify(signed.sig, pae(signed.payload))
        else:
            raise BadSignature("the trusted key is neither ECDSA nor Ed25519")
    except InvalidSignature as exc:
        raise BadSignature("the signature does not verify with the trusted key") from exc


def statement(model: str, files: Mapping[str, str]) -> bytes:
    """The statement model-signing writes for a directory named ``model`` holding ``files``
    (path -> sha256), resources sorted by path as model-signing sorts them."""
    pairs = sorted(files.items())
    st = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": model, "digest": {"sha256": _root(pairs)}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "resources": [{"name": p, "algorithm": "sha256", "digest": d} for p, d in pairs],
            "serialization": {
                "allow_symlinks": False,
                "hash_type": "sha256",
                "ignore_paths": IGNORE_PATHS,
                "method": "files",
            },
        },
    }
    return json.dumps(st, indent=2).encode()


def make_bundle(model: str, files: Mapping[str, str], private: Any) -> bytes:
    """A bundle signing ``files`` (path -> sha256) as model ``model`` with ``private`` (an
    ECDSA P-256 or Ed25519 ``cryptography`` private key), in model-signing's form."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    payload = statement(model, files)
    if isinstance(private, ec.EllipticCurvePrivateKey):
        sig = private.sign(pae(payload), ec.ECDSA(hashes.SHA256()))
    else:
        sig = private.sign(pae(payload))
    doc = {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {
            "publicKey": {"hint": key_hint(private.public_key())},
            "tlogEntries": [],
        },
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": base64.b64encode(sig).decode(), "keyid": ""}],
        },
    }
    return (json.dumps(doc, indent=2) + "\n").encode()
