"""``wgtpm key generate [--out PREFIX] [--type p256|ed25519]``: a keypair to sign releases with;
``wgtpm key fingerprint FILE``: its ``sha256:HEX`` fingerprint, as revocation lists name it.

Writes ``PREFIX.pem`` (the private key, PKCS#8 PEM, unencrypted, mode 0600) and
``PREFIX.pub`` (the public key, SubjectPublicKeyInfo PEM) -- the files
``wgtpm publish --sign-key PREFIX.pem`` and a consumer's
``trust PATTERN key=PREFIX.pub`` take (:mod:`wgtpm.trust`). The default is
ECDSA P-256, which model-signing's own CLI signs and verifies with too;
Ed25519 verifies in wgtpm but model-signing 1.1's CLI cannot sign with it.
An existing file is never overwritten.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .._errors import UsageError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "key", help="make a keypair to sign releases with (wgtpm publish --sign-key)"
    )
    ksub = p.add_subparsers(dest="key_command", metavar="COMMAND", required=True)
    g = ksub.add_parser("generate", help="write PREFIX.pem (private, 0600) and PREFIX.pub")
    g.add_argument("--out", default="wgt-sign", metavar="PREFIX", help="file name prefix")
    g.add_argument(
        "--type",
        choices=("p256", "ed25519"),
        default="p256",
        help="ECDSA P-256 (default; model-signing's CLI uses it too) or Ed25519",
    )
    g.set_defaults(run=_generate, mod="")
    f = ksub.add_parser(
        "fingerprint", help="print a public key's fingerprint (as revocation lists name it)"
    )
    f.add_argument("file", metavar="FILE", help="a PEM public key (or private key) file")
    f.set_defaults(run=_fingerprint, mod="")


def _fingerprint(args: argparse.Namespace) -> int:
    """``sha256:HEX`` of each public key in FILE: model-signing's key hint, which a
    revocation list (:mod:`wgtpm.trust._revoked`) names."""
    from cryptography.hazmat.primitives import serialization

    from ..trust import fingerprint, key_hint, read_public_keys

    path = Path(args.file)
    try:
        keys = read_public_keys(path, args.file)
    except ValueError:
        try:
            keys = [serialization.load_pem_private_key(path.read_bytes(), None).public_key()]
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"{args.file}: not a PEM public or private key") from exc
    for k in keys:
        print(f"{fingerprint(key_hint(k))}  # {args.file}")  # a revocation list's line
    return 0


def _generate(args: argparse.Namespace) -> int:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    from .._fs import write_atomic

    priv_path, pub_path = Path(args.out + ".pem"), Path(args.out + ".pub")
    for f in (priv_path, pub_path):
        if f.exists():
            raise UsageError(f"{f} exists; remove it or choose another --out PREFIX")
    key: Any = (
        ed25519.Ed25519PrivateKey.generate()
        if args.type == "ed25519"
        else ec.generate_private_key(ec.SECP256R1())
    )
    priv = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        # the private key is created 0600: it never exists readable by others
        fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(priv)
        write_atomic(pub_path, pub)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}.pem/.pub: {exc.strerror or exc}") from exc
    print(f"wrote {priv_path} (private: keep it secret; wgtpm publish --sign-key {priv_path})")
    print(f"wrote {pub_path} (public: consumers write 'trust PATTERN key={pub_path}')")
    return 0
