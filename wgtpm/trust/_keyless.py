"""Keyless signing of a release through Sigstore, with model-signing's own signer.

Used by ``wgtpm publish`` when no ``--sign-key`` is given and an OIDC
identity is at hand: a token in ``SIGSTORE_ID_TOKEN``, or the workload
identity of a CI job (GitHub Actions' ``ACTIONS_ID_TOKEN_REQUEST_URL``, or
whatever sigstore's ambient detection finds). Fulcio certifies a short-lived
key for that identity and Rekor logs the signature; the bundle carries both.

model-signing signs a directory, so the release's files are laid out under
their logical paths (hard links where the file system allows, else copies)
in a temporary directory named after the module's last path element; the
bundle is checked to list exactly the index's files before it is used.
Needs the ``sign`` extra (model-signing, sigstore, pyOpenSSL) and the
network; nothing here runs without an identity.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .._errors import UsageError
from ._bundle import BadSignature, read_bundle

__all__ = ["OIDC_ENV", "identity_available", "sign_keyless"]

#: Where an OIDC identity for Sigstore is found: an explicit token, or GitHub Actions'
#: id-token endpoint (the job has ``permissions: id-token: write``).
OIDC_ENV = ("SIGSTORE_ID_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL")


def identity_available(env: Mapping[str, str] | None = None) -> bool:
    """Whether an OIDC identity for keyless signing is at hand (see :data:`OIDC_ENV`)."""
    e = env if env is not None else os.environ
    return any(e.get(v, "").strip() for v in OIDC_ENV)


def sign_keyless(module: str, files: Mapping[str, Path], shas: Mapping[str, str]) -> bytes:
    """The model-signing bundle of the release whose logical paths ``files`` map to local
    files with sha256 ``shas``, signed keylessly through Sigstore; one line on failure."""
    from .._extras import require

    require("sign", purpose="keyless signing (an OIDC identity is set)")
    from model_signing import signing

    with tempfile.TemporaryDirectory(prefix="wgtpm-sign-") as tmp:
        model = Path(tmp) / module.rstrip("/").rsplit("/", 1)[-1]
        for logical, src in files.items():
            dst = model / logical
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        out = Path(tmp) / "wgt.sig"
        token = os.environ.get(OIDC_ENV[0], "").strip() or None
        try:
            signing.Config().use_sigstore_signer(  # type: ignore[no-untyped-call]
                use_ambient_credentials=True, identity_token=token, force_oob=True
            ).sign(model, out)
        except Exception as exc:  # sigstore's and the network's errors are many
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UsageError(
                f"keyless signing through Sigstore failed: {first}; sign with --sign-key FILE "
                "instead, or publish again"
            ) from exc
        data = out.read_bytes()
    try:
        signed = read_bundle(data)
    except BadSignature as exc:
        raise UsageError(f"keyless signing made an unreadable bundle: {exc}") from exc
    if signed.files != dict(shas):
        raise UsageError("keyless signing did not sign exactly the release's files")
    return data
