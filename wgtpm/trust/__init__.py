"""Whom the main module trusts to publish what: signatures checked against ``trust`` lines.

The main module's wgt.mod says, per module path pattern, whose signature a
release must carry (:class:`wgtpm.modfile.Trust`)::

    trust github.com/acme/* key=keys/acme.pub
    trust hf.co/acme/* identity=release@acme.com issuer=https://token.actions.githubusercontent.com

A pattern is a module path (that module) or a path followed by ``/*`` (every
module below it); the most specific matching line counts. Only the main
module's lines count, as for ``exclude`` and ``replace``. For a module some
line covers, ``wgtpm get`` and ``verify`` require the release's signature
(:mod:`._bundle`, served beside the index as ``$module/@v/$version.sig``) to
verify with that signer and to list exactly the index's files with their
sha256 -- the index whose h1 wgt.sum locks. A missing or wrong one is a
:class:`TrustError`, one line naming the module, the expected signer and what
was found. ``WGTTRUST=off`` turns the check off for one command.

A key that is no longer to be trusted is handled two ways, as a trust line
says (:mod:`._revoked`)::

    trust github.com/acme/* key=keys/acme.pub revoked=keys/acme.revoked not-after=2027-06-30

``key=`` may hold several PEM public keys (a keyring: the publisher's current
and next key, for a rotation); the bundle's hint picks the one that signed.
``revoked=`` names a revocation list: a signature by a key it lists is refused,
whatever the keyring holds. ``not-after=`` ends the line's trust after that day
(UTC, by this machine's clock), for a key or an identity: past it, every
signature the line would accept is refused until the line is renewed. Both
refusals are one line naming the module, the signer and why. A registry's
operator installs the same list (``WGTPM_REGISTRY_REVOKED_KEYS``) so its version
pages and publishes know the key is revoked.

Key-based bundles are checked here with ``cryptography`` only; keyless ones
(a Fulcio certificate and a Rekor entry) need Sigstore's trust root and the
``sigstore`` package (the ``sign`` extra).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import ModuleError
from ..modfile import Trust
from ._bundle import BadSignature, key_hint, make_bundle, read_bundle, verify_key
from ._revoked import Revoked, parse_revoked, read_revoked

__all__ = [
    "SIG_ASSET",
    "TRUST_ENV",
    "BadSignature",
    "Policy",
    "Revoked",
    "TrustError",
    "cert_identity",
    "check",
    "enabled",
    "fingerprint",
    "identity_matches",
    "key_hint",
    "load_public_key",
    "load_public_keys",
    "make_bundle",
    "mismatch",
    "parse_revoked",
    "policy",
    "read_public_keys",
    "read_revoked",
    "rule_for",
    "signed_by",
    "signer",
]

#: The file name of a release's signature as a GitHub asset or a Hugging Face file.
SIG_ASSET = "wgt.sig"
#: ``WGTTRUST=off`` skips signature checks for one command.
TRUST_ENV = "WGTTRUST"


class TrustError(ModuleError):
    """A release whose signature is missing or not by the signer the main module trusts."""


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether signatures are checked (``WGTTRUST`` is not ``off``)."""
    return (env if env is not None else os.environ).get(TRUST_ENV, "").strip().lower() != "off"


def _matches(pattern: str, path: str) -> bool:
    if pattern.endswith("/*"):
        return path.startswith(pattern[:-1])
    return path == pattern


def rule_for(trusts: Sequence[Trust], path: str) -> Trust | None:
    """The trust line covering module ``path``: an exact one, else the longest prefix."""
    hits = [t for t in trusts if _matches(t.pattern, path)]
    if not hits:
        return None
    return max(hits, key=lambda t: (not t.pattern.endswith("/*"), len(t.pattern)))


def signer(rule: Trust) -> str:
    """The expected signer of ``rule`` as an error names it."""
    if rule.key is not None:
        return f"key {rule.key}"
    return f"identity {rule.identity} (issuer {rule.issuer})"


def load_public_keys(root: Path, rule: Trust) -> list[Any]:
    """The public keys a ``key=`` line names (a PEM file relative to the main module's
    directory, holding one key or several); :class:`ValueError` in one line."""
    assert rule.key is not None
    return read_public_keys(root / rule.key, rule.key)


def read_public_keys(p: Path, name: str) -> list[Any]:
    """The PEM public keys in the file ``p`` (``name`` in errors), one or several;
    :class:`ValueError` in one line."""
    import re

    from cryptography.hazmat.primitives import serialization

    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {name} ({exc.strerror or exc})") from exc
    blocks = re.findall(
        rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----\s*", data, flags=re.DOTALL
    )
    try:
        keys = [serialization.load_pem_public_key(b) for b in blocks]
    except ValueError as exc:
        raise ValueError(f"{name} holds a PEM block that is not a public key") from exc
    if not keys:
        raise ValueError(f"{name} is not a PEM public key")
    return keys


def load_public_key(root: Path, rule: Trust) -> Any:
    """The first public key a ``key=`` line names (:func:`load_public_keys`)."""
    return load_public_keys(root, rule)[0]


def fingerprint(hint: str) -> str:
    """A key's fingerprint as revocation lists and messages write it: ``sha256:HEX``."""
    return f"sha256:{hint}"


def _today() -> datetime.date:
    return datetime.datetime.now(datetime.timezone.utc).date()


def check(
    module: str,
    version: str,
    files: Mapping[str, str],
    bundle: bytes | None,
    rule: Trust,
    root: Path,
    today: datetime.date | None = None,
) -> None:
    """Require ``bundle`` to be ``rule``'s signer's signature over exactly ``files``
    (path -> sha256, the index's), by a key ``rule``'s revocation list does not list,
    on or before its ``not_after`` day (``today``: UTC's, unless given); :class:`TrustError`
    in one line otherwise."""
    want = signer(rule)

    def refuse(found: str) -> TrustError:
        return TrustError(
            module, version, f"signature check failed: want a signature by {want}; {found}"
        )

    if rule.not_after is not None and (today or _today()) > datetime.date.fromisoformat(
        rule.not_after
    ):
        raise refuse(
            f"the trust line trusts it until {rule.not_after} (not-after=), which has passed: "
            "renew the line, or trust the publisher's new key"
        )
    if bundle is None:
        raise refuse("the release has no signature (.sig)")
    try:
        signed = read_bundle(bundle)
        if rule.key is not None:
            try:
                keys = load_public_keys(root, rule)
                revoked = read_revoked(root / rule.revoked, rule.revoked) if rule.revoked else {}
            except ValueError as exc:
                raise TrustError(module, version, f"trust line: {exc}") from exc
            _verify_keyring(signed, keys, revoked, rule)
        else:
            _verify_keyless(signed, rule, root)
    except BadSignature as exc:
        raise refuse(str(exc)) from exc
    wrong = mismatch(signed, module, version, files)
    if wrong is not None:
        # the signer checked out above: only what it signs is wrong
        raise refuse("the signature " + wrong.replace("is not over", "is valid but not over", 1))


def mismatch(signed: Any, module: str, version: str, files: Mapping[str, str]) -> str | None:
    """Why the read bundle ``signed`` is not over exactly ``module@version``'s index
    ``files`` (path -> sha256), to follow "the signature": ``is for OTHER@VERSION`` or
    ``is not over this release's index: WHAT``; ``None`` when it is. Its signature is
    not looked at."""
    named = signed.model
    if "@" in named and named != f"{module}@{version}":
        return f"is for {named}"
    if signed.files == dict(files):
        return None
    extra = sorted(set(signed.files) - set(files))
    missing = sorted(set(files) - set(signed.files))
    changed = sorted(p for p in set(files) & set(signed.files) if files[p] != signed.files[p])
    what = (
        f"{changed[0]} has another sha256"
        if changed
        else f"it does not sign {missing[0]}"
        if missing
        else f"it signs {extra[0]}, which the release does not hold"
    )
    return f"is not over this release's index: {what}"


def signed_by(bundle: bytes) -> str:
    """Who a bundle says signed it: ``key sha256:HEX`` (the key's fingerprint) or
    ``identity ID (issuer URL)``; :class:`BadSignature` for a bundle that cannot be read.
    Says nothing of whether the signature verifies."""
    signed = read_bundle(bundle)
    if signed.certificate is not None:
        ident, issuer = cert_identity(signed.certificate)
        return f"identity {ident or '(none)'} (issuer {issuer or '(none)'})"
    return f"key {fingerprint(signed.hint)}" if signed.hint else "a key (no hint)"


def _verify_keyring(
    signed: Any, keys: Sequence[Any], revoked: Mapping[str, Revoked], rule: Trust
) -> None:
    """Check ``signed`` with the key of ``keys`` its hint names (each in turn when it names
    none); :class:`BadSignature` for a key ``revoked`` lists, or no key that verifies."""

    def refuse_revoked(hint: str) -> BadSignature:
        return BadSignature(
            f"signed by key {fingerprint(hint)}, which {rule.revoked} lists as "
            f"{revoked[hint].said()}"
        )

    if signed.hint and signed.hint in revoked:
        raise refuse_revoked(signed.hint)
    ring = [(k, key_hint(k)) for k in keys]
    chosen = [(k, h) for k, h in ring if h == signed.hint] or ring
    last: BadSignature | None = None
    for key, hint in chosen:
        try:
            verify_key(signed, key)
        except BadSignature as exc:
            last = exc
            continue
        if hint in revoked:  # a bundle without a hint, by a revoked key of the ring
            raise refuse_revoked(hint)
        return
    assert last is not None
    raise last


#: Fulcio's certificate extensions naming the OIDC issuer: v2 (a DER UTF8String), v1 (raw).
_ISSUER_V2 = "1.3.6.1.4.1.57264.1.8"
_ISSUER_V1 = "1.3.6.1.4.1.57264.1.1"


def cert_identity(der: bytes) -> tuple[str, str]:
    """The identity (the first e-mail or URI of the subject alternative names) and the OIDC
    issuer (Fulcio's extension) a keyless bundle's certificate names; "" where absent."""
    from cryptography import x509

    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise BadSignature("the bundle's certificate is not X.509 DER") from exc
    ident = ""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [*san.get_values_for_type(x509.RFC822Name)]
        names += san.get_values_for_type(x509.UniformResourceIdentifier)
        ident = names[0] if names else ""
    except x509.ExtensionNotFound:
        pass
    issuer = ""
    for oid in (_ISSUER_V2, _ISSUER_V1):
        try:
            ext = cert.extensions.get_extension_for_oid(x509.ObjectIdentifier(oid)).value
        except x509.ExtensionNotFound:
            continue
        raw = bytes(getattr(ext, "value", b""))
        if oid == _ISSUER_V2 and len(raw) >= 2 and raw[0] == 0x0C and raw[1] < 0x80:
            raw = raw[2 : 2 + raw[1]]  # a short DER UTF8String (an issuer URL is short)
        issuer = raw.decode("utf-8", "replace")
        break
    return ident, issuer


def identity_matches(pattern: str, identity: str) -> bool:
    """Whether a certificate's ``identity`` is the one a trust line's ``identity=`` names:
    equal, or where the line has ``*``, anything in its place (GitHub Actions' identity
    names the workflow and the ref: ``https://github.com/acme/m/.github/workflows/
    release.yml@refs/tags/*``, as cosign's ``--certificate-identity-regexp`` is used)."""
    import re

    if "*" not in pattern:
        return identity == pattern
    rx = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(rx, identity, flags=re.DOTALL) is not None


def _verify_keyless(signed: Any, rule: Trust, root: Path) -> None:
    """A keyless bundle: its certificate must name ``rule``'s identity and issuer (checked
    here, so a stranger's bundle is refused offline), then the ``sigstore`` package
    verifies the certificate chain, its SCT, the Rekor entry and the signature against
    Sigstore's trust root: the public instance's, or the ``trusted_root.json`` the line's
    ``trusted-root=`` names (a private Sigstore; relative to the main module)."""
    if signed.certificate is None:
        raise BadSignature("the release is signed with a key, not keylessly")
    ident, issuer = cert_identity(signed.certificate)
    if not identity_matches(rule.identity or "", ident) or issuer != rule.issuer:
        raise BadSignature(f"signed by identity {ident or '(none)'} (issuer {issuer or '(none)'})")
    try:
        from sigstore.models import Bundle, TrustedRoot
        from sigstore.verify import Verifier, policy
    except ImportError as exc:
        raise BadSignature(
            "keyless verification needs sigstore: pip install 'wgtpm[sign]'"
        ) from exc
    import json

    def first(exc: Exception) -> str:
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]

    verifier: Any = None
    if rule.trusted_root is not None:
        try:
            verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root / rule.trusted_root)))
        except Exception as exc:  # unreadable, not JSON, not a trusted root: one line
            raise BadSignature(
                f"trusted-root={rule.trusted_root} is not a Sigstore trusted root: {first(exc)}"
            ) from exc
    try:
        b = Bundle.from_json(json.dumps(signed.raw))
        if verifier is None:  # the public instance's root, refreshed through TUF
            verifier = Verifier.production()
        # the certificate's own identity, which matched the line's (a pattern, maybe)
        verifier.verify_dsse(b, policy.Identity(identity=ident, issuer=rule.issuer))
    except Exception as exc:  # sigstore's (and TUF's) errors are many; each is a refusal
        raise BadSignature(f"keyless verification failed: {first(exc)}") from exc


class Policy:
    """The main module's trust lines, as :class:`wgtpm.modfetch.TrustHook` asks them."""

    def __init__(self, trusts: Sequence[Trust], root: Path) -> None:
        self.trusts = list(trusts)
        self.root = root

    def covers(self, path: str) -> bool:
        return rule_for(self.trusts, path) is not None

    def check(
        self, path: str, version: str, files: Mapping[str, str], bundle: bytes | None
    ) -> None:
        rule = rule_for(self.trusts, path)
        if rule is not None:
            check(path, version, files, bundle, rule, self.root)


def policy(
    trusts: Sequence[Trust], root: Path, env: Mapping[str, str] | None = None
) -> Policy | None:
    """The policy of the main module's ``trusts`` (its directory ``root``); ``None`` when
    it has no trust lines or ``WGTTRUST=off``."""
    if not trusts or not enabled(env):
        return None
    return Policy(trusts, root)
