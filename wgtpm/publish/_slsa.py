"""The SLSA provenance of a release: an in-toto Statement v1 in a DSSE envelope, outside h1.

h1 locks what a release *is* (its files, and in ``wgt.provenance.json`` the
facts that determine them); this statement says how one publisher *built*
it: the tool versions, the platform, when. Two honest publishers of one
commit get one h1 and two statements. Every target serves the envelope
beside the version's index, never in the index's ``files`` (docs/design.md
section 13): ``$module/@v/$version.slsa.json`` in a proxy tree or a wgtpm
registry, the asset ``wgt.slsa.json`` of a GitHub release, the file
``wgt.slsa.json`` of a Hugging Face repository.

The envelope (DSSE v1, https://github.com/secure-systems-lab/dsse)::

    {"payloadType": "application/vnd.in-toto+json",
     "payload": "base64 of the statement's canonical JSON",
     "signatures": [{"keyid": "64 hex", "sig": "base64"}]}

Each signature is over DSSE's pre-authentication encoding
(:func:`pae`) of the payload type and the payload bytes, made with
``wgtpm publish --sign-key FILE``: an ECDSA P-256 key (ECDSA with SHA-256,
DER signature) or an Ed25519 key, PEM (PKCS#8 or traditional), unencrypted.
``keyid`` is the sha256 of the public key's DER SubjectPublicKeyInfo, in hex.
Without a key ``signatures`` is empty: the statement is then a record, not
evidence (who may sign for what is the trust policy's job, not this file's).

The statement (in-toto Statement v1, SLSA provenance v1)::

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": "wgt.index.json", "digest": {"sha256": "…"}},
                 {"name": "wgt.mod", "digest": {"sha256": "…"}}, …],
     "predicateType": "https://slsa.dev/provenance/v1",
     "predicate": {
       "buildDefinition": {
         "buildType": "https://wgtpm.dev/publish/v1",
         "externalParameters": {"module": "…", "version": "v0.1.0",
                                "repository": "https://github.com/acme/xor" or null,
                                "commit": "40 hex", "dir": ""},
         "internalParameters": {"tools": {"python": "3.12.3", "wgtpm": "0.1.0",
                                          "torch": "2.5.1", …},
                                "platform": "Linux-6.8-x86_64-with-glibc2.39"},
         "resolvedDependencies": [
           {"uri": "git+https://github.com/acme/xor", "digest": {"gitCommit": "40 hex"}},
           {"name": "example.com/acme/base@v0.1.0", "uri": "wgt:example.com/acme/base@v0.1.0",
            "digest": {"dirHash": "h1:…"}}]},
       "runDetails": {
         "builder": {"id": "https://wgtpm.dev/publish/v1/wgtpm@0.1.0"},
         "metadata": {"invocationId": "uuid4", "startedOn": "RFC 3339 UTC",
                      "finishedOn": "RFC 3339 UTC"}}}}

The subject is the index (which lists every file with its sha256, so it
covers them all) and, so that a tool holding one file finds its statement by
digest, every file the index lists. Dependencies are every module whose
content the package's (tidy) wgt.sum locks, with its h1 as in-toto's
``dirHash`` (Go's directory hash, which h1 is). The platform string names the
operating system and machine, not the host: no host name is recorded.

Pure: nothing here reads the network or the release's files beyond what it
is given; the caller measures the times and the tools.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import UsageError
from .._fs import canonical_json

__all__ = [
    "BUILD_TYPE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "SLSA_ASSET",
    "STATEMENT_TYPE",
    "BuildRun",
    "SigningKey",
    "envelope_bytes",
    "load_signing_key",
    "pae",
    "read_envelope",
    "recorded_environment",
    "statement",
    "subject_h1",
    "verify_signature",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
BUILD_TYPE = "https://wgtpm.dev/publish/v1"
#: The statement's name where a host stores it as a file of the version (GitHub, Hugging Face).
SLSA_ASSET = "wgt.slsa.json"
#: A statement is metadata read whole: larger is no statement wgtpm wrote (a 10,000-file
#: release's subject list is about 1.5 MB).
MAX_ENVELOPE = 8 << 20


@dataclass(frozen=True)
class BuildRun:
    """What one build was, beyond the release: where it came from, its environment, when."""

    module: str
    version: str
    commit: str
    repository: str | None
    dir: str
    tools: Mapping[str, str]
    platform: str
    started: str  # RFC 3339 UTC
    finished: str
    invocation: str
    dependencies: Sequence[tuple[str, str, str]] = ()  # (module, version, h1)


def statement(run: BuildRun, index: bytes, files: Mapping[str, str]) -> dict[str, Any]:
    """The in-toto statement of ``run`` for the release whose index is ``index`` and whose
    files are ``files`` (logical path -> sha256 hex, as the index lists them)."""
    subject = [{"name": "wgt.index.json", "digest": {"sha256": hashlib.sha256(index).hexdigest()}}]
    subject += [{"name": p, "digest": {"sha256": sha}} for p, sha in sorted(files.items())]
    deps: list[dict[str, Any]] = []
    if run.repository:
        deps.append({"uri": f"git+{run.repository}", "digest": {"gitCommit": run.commit}})
    for mod, ver, h1 in sorted(run.dependencies):
        ref = f"{mod}@{ver}"
        deps.append({"name": ref, "uri": f"wgt:{ref}", "digest": {"dirHash": h1}})
    wgtpm_version = run.tools.get("wgtpm", "unknown")
    return {
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "module": run.module,
                    "version": run.version,
                    "repository": run.repository,
                    "commit": run.commit,
                    "dir": run.dir,
                },
                "internalParameters": {"tools": dict(run.tools), "platform": run.platform},
                "resolvedDependencies": deps,
            },
            "runDetails": {
                "builder": {"id": f"{BUILD_TYPE}/wgtpm@{wgtpm_version}"},
                "metadata": {
                    "invocationId": run.invocation,
                    "startedOn": run.started,
                    "finishedOn": run.finished,
                },
            },
        },
    }


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding: what a signature is over.

    ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``, lengths in ASCII decimal bytes.
    """
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


@dataclass(frozen=True)
class SigningKey:
    """A private key of ``--sign-key``: ECDSA P-256 or Ed25519."""

    key: Any  # cryptography's private key object
    keyid: str

    def sign(self, message: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        if isinstance(self.key, ec.EllipticCurvePrivateKey):
            return bytes(self.key.sign(message, ec.ECDSA(hashes.SHA256())))
        return bytes(self.key.sign(message))


def _keyid(public: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


def load_signing_key(path: Path) -> SigningKey:
    """The key in the PEM file ``path``; one line naming the file for anything else."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--sign-key {path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:
        raise UsageError(
            f"--sign-key {path}: the key is encrypted; give an unencrypted PEM private key"
        ) from exc
    except ValueError as exc:
        raise UsageError(
            f"--sign-key {path}: not a PEM private key (want ECDSA P-256 or Ed25519)"
        ) from exc
    ok = isinstance(key, ed25519.Ed25519PrivateKey) or (
        isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    )
    if not ok:
        raise UsageError(
            f"--sign-key {path}: a {type(key).__name__.removeprefix('_')} key; "
            "want ECDSA P-256 or Ed25519"
        )
    return SigningKey(key, _keyid(key.public_key()))


def envelope_bytes(stmt: Mapping[str, Any], key: SigningKey | None) -> bytes:
    """The DSSE envelope of ``stmt``, signed with ``key`` (no signature without one)."""
    payload = canonical_json(stmt)
    sigs = []
    if key is not None:
        sig = key.sign(pae(PAYLOAD_TYPE, payload))
        sigs.append({"keyid": key.keyid, "sig": base64.b64encode(sig).decode()})
    env = {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": sigs,
    }
    return canonical_json(env, pretty=True)


def read_envelope(data: bytes) -> tuple[dict[str, Any], bytes, list[dict[str, Any]]]:
    """The statement, the payload bytes and the signatures of a DSSE envelope; raises
    ``ValueError`` (a short reason) for anything that is not an SLSA v1 in-toto statement."""
    if len(data) > MAX_ENVELOPE:
        raise ValueError(f"larger than {MAX_ENVELOPE} bytes")
    env = json.loads(data)
    if not isinstance(env, dict) or env.get("payloadType") != PAYLOAD_TYPE:
        raise ValueError(f"not a DSSE envelope of {PAYLOAD_TYPE}")
    payload = base64.b64decode(str(env.get("payload", "")), validate=True)
    stmt = json.loads(payload)
    if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE:
        raise ValueError(f"its payload is not an in-toto statement ({STATEMENT_TYPE})")
    if stmt.get("predicateType") != PREDICATE_TYPE:
        raise ValueError(f"its predicate is not {PREDICATE_TYPE}")
    sigs = env.get("signatures")
    if not isinstance(sigs, list) or not all(isinstance(s, dict) for s in sigs):
        raise ValueError("its signatures are not a list")
    return stmt, payload, sigs


def verify_signature(data: bytes, public_pem: bytes) -> bool:
    """Whether the envelope ``data`` holds a valid signature by the key of ``public_pem``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    _, payload, sigs = read_envelope(data)
    public: Any = serialization.load_pem_public_key(public_pem)
    kid, message = _keyid(public), pae(PAYLOAD_TYPE, payload)
    for s in sigs:
        if s.get("keyid") not in (None, "", kid):
            continue
        try:
            sig = base64.b64decode(str(s.get("sig", "")), validate=True)
            if isinstance(public, ec.EllipticCurvePublicKey):
                public.verify(sig, message, ec.ECDSA(hashes.SHA256()))
            else:
                public.verify(sig, message)
        except (InvalidSignature, ValueError):
            continue
        return True
    return False


def recorded_environment(stmt: Mapping[str, Any]) -> dict[str, str]:
    """The tool versions a statement records (``internalParameters.tools``), strings only."""
    pred = stmt.get("predicate")
    bd = pred.get("buildDefinition") if isinstance(pred, dict) else None
    ip = bd.get("internalParameters") if isinstance(bd, dict) else None
    tools = ip.get("tools") if isinstance(ip, dict) else None
    if not isinstance(tools, dict):
        return {}
    return {str(k): v for k, v in tools.items() if isinstance(v, str)}


def subject_h1(stmt: Mapping[str, Any]) -> str | None:
    """The h1 of the files a statement's subject names (all but the index), so that a reader
    tells whether it is about the release that wgt.sum locks; ``None`` when malformed."""
    from ..dirhash import hash1

    subject = stmt.get("subject")
    if not isinstance(subject, list):
        return None
    pairs = []
    for s in subject:
        digest = s.get("digest") if isinstance(s, dict) else None
        name, sha = s.get("name") if isinstance(s, dict) else None, None
        if isinstance(digest, dict):
            sha = digest.get("sha256")
        if not isinstance(name, str) or not isinstance(sha, str):
            return None
        if name != "wgt.index.json":
            pairs.append((name, sha))
    return hash1(pairs)
