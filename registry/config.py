"""Where the registry keeps its data, from flags or the environment.

=========================  =================================  ==============================================
flag                       environment                        default
=========================  =================================  ==============================================
``--data DIR``             ``WGTPM_REGISTRY_DATA``            platformdirs user data dir ``/wgtpm-registry``
``--db URL``               ``WGTPM_REGISTRY_DB``              ``sqlite:///DATA/registry.db``
``--store URL``            ``WGTPM_REGISTRY_STORE``           ``DATA/blobs`` (a folder)
``--s3-endpoint URL``      ``AWS_ENDPOINT_URL``               AWS itself
``--sumdb-name NAME``      ``WGTPM_REGISTRY_SUMDB_NAME``      this host's name (naming a new key only)
``--sumdb-key-file FILE``  ``WGTPM_REGISTRY_SUMDB_KEY_FILE``  ``DATA/sumdb.key``, made on first start
(none)                     ``WGTPM_REGISTRY_SUMDB_KEY``       the signer key itself (wins over a file)
``--upstream LIST``        ``WGTPM_REGISTRY_UPSTREAM``        ``off``: no caching proxy (see below)
``--hf-allow LIST``        ``WGTPM_REGISTRY_HF_ALLOW``        every repository (:mod:`registry.hfpolicy`)
``--offline``              ``WGTPM_REGISTRY_OFFLINE=1``       off: serve only what is stored when on
``--public-url URL``       ``WGTPM_REGISTRY_PUBLIC_URL``      ``serve``: ``http://HOST:PORT`` it listens on
(none)                     ``WGTPM_REGISTRY_REVOKED_KEYS``    ``DATA/revoked-keys`` (if it exists)
=========================  =================================  ==============================================

``--upstream`` is a ``WGTPROXY`` list (``direct``, registry or proxy URLs,
``,`` and ``|``): modules this registry does not host are fetched from it,
verified, stored and logged (:mod:`registry.proxy`). ``direct`` reads
``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``HF_TOKEN``, ``HF_ENDPOINT``,
``PAW_API_KEY`` and ``PAW_API_URL`` from the server's environment; those
credentials are only ever sent upstream.

``--db`` takes ``postgresql://user:pass@host/db`` for PostgreSQL (through
psycopg 3); ``--store`` takes ``s3://bucket/prefix`` or ``oci://REGISTRY/REPOSITORY``
(:mod:`registry.ocistore`). Replicas on one
database must share the checksum log's key (:mod:`registry.sumkey`).

``--public-url`` is the URL clients reach this registry at (behind a proxy or
a DNS name: ``https://models.example.com``, or with a path prefix
``https://example.com/registry``); the pages print it in the lines users
paste (``HF_ENDPOINT=URL ...``). It is configuration, never read from a
request's ``Host``: pages are cached and shared, so a request naming another
host must not change what the next reader is told to run. Without it (and
outside ``serve``, which defaults it to the address it listens on) the pages
leave those lines out.

The revoked-keys file is a revocation list of signing keys
(:mod:`wgtpm.trust._revoked`): the version page of a release signed by a key it
lists says the key is revoked, and a publish carrying such a signature is
refused. It is read again whenever it changes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .hfpolicy import HfPolicy
from .limits import Limits

__all__ = ["Config", "check_public_url", "default_data_dir"]

# what a public URL may hold: a scheme, a host (a name, an IPv4 or a [bracketed] IPv6
# address), a port and a path; no credentials, query or fragment, and nothing a shell or
# an HTML attribute reads specially, since it is printed in a line users paste into a shell
_PUBLIC_URL = re.compile(
    r"https?://(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~/-]*)?"
)


def check_public_url(url: str) -> str:
    """``url`` without its trailing ``/``, or :class:`ValueError` saying what a public URL is.

    >>> check_public_url("https://models.example.com/")
    'https://models.example.com'
    """
    if not _PUBLIC_URL.fullmatch(url):
        raise ValueError(
            f"public URL {url!r}: give the http(s) URL clients reach this registry at, like "
            "https://models.example.com or http://10.0.0.5:8080/registry (no user, query or "
            "fragment)"
        )
    return url.rstrip("/")


def default_data_dir() -> Path:
    """``$WGTPM_REGISTRY_DATA``, else the platform's user data dir + ``wgtpm-registry``."""
    env = os.environ.get("WGTPM_REGISTRY_DATA")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("wgtpm-registry", appauthor=False))


@dataclass(frozen=True)
class Config:
    """One registry's storage settings."""

    data: Path = field(default_factory=default_data_dir)
    db: str | None = None
    store: str | None = None
    s3_endpoint: str | None = None
    sumdb_name: str | None = None
    sumdb_key_file: Path | None = None
    upstream: str | None = None
    hf_allow: str | None = None
    offline: bool | None = None
    public_url: str | None = None
    limits: Limits = field(default_factory=Limits)

    def db_url(self) -> str:
        return (
            self.db
            or os.environ.get("WGTPM_REGISTRY_DB")
            or f"sqlite:///{self.data.absolute() / 'registry.db'}"
        )

    def store_url(self) -> str:
        return (
            self.store
            or os.environ.get("WGTPM_REGISTRY_STORE")
            or str(self.data.absolute() / "blobs")
        )

    def environ(self) -> dict[str, str]:
        """The environment variables that make ``Config()`` equal this config in another
        process (uvicorn's workers): one for every field set here; limits are not carried."""
        pairs = {
            "WGTPM_REGISTRY_DATA": str(self.data.absolute()),
            "WGTPM_REGISTRY_DB": self.db,
            "WGTPM_REGISTRY_STORE": self.store,
            "AWS_ENDPOINT_URL": self.s3_endpoint,
            "WGTPM_REGISTRY_SUMDB_NAME": self.sumdb_name,
            "WGTPM_REGISTRY_SUMDB_KEY_FILE": (
                str(self.sumdb_key_file.absolute()) if self.sumdb_key_file else None
            ),
            "WGTPM_REGISTRY_UPSTREAM": self.upstream,
            "WGTPM_REGISTRY_HF_ALLOW": self.hf_allow,
            "WGTPM_REGISTRY_OFFLINE": None if self.offline is None else str(int(self.offline)),
            "WGTPM_REGISTRY_PUBLIC_URL": self.public_url,
        }
        return {k: v for k, v in pairs.items() if v is not None}

    def upstream_list(self) -> str:
        """The caching proxy's upstream (a ``WGTPROXY`` list), ``off`` by default."""
        return self.upstream or os.environ.get("WGTPM_REGISTRY_UPSTREAM") or "off"

    def hf_policy(self) -> HfPolicy:
        """The Hub API's policy; raises :class:`ValueError` on a malformed allow-list."""
        offline = self.offline
        if offline is None:
            offline = os.environ.get("WGTPM_REGISTRY_OFFLINE", "").lower() in ("1", "true", "yes")
        allow = (
            self.hf_allow
            if self.hf_allow is not None
            else os.environ.get("WGTPM_REGISTRY_HF_ALLOW")
        )
        return HfPolicy.parse(allow, offline)

    def revoked_keys_file(self) -> Path:
        """The revocation list of signing keys (``$WGTPM_REGISTRY_REVOKED_KEYS``, else
        ``DATA/revoked-keys``); it need not exist."""
        env = os.environ.get("WGTPM_REGISTRY_REVOKED_KEYS")
        return Path(env) if env else self.data.absolute() / "revoked-keys"

    def public_base(self) -> str:
        """The URL clients reach this registry at, without a trailing ``/`` (``--public-url``,
        else ``$WGTPM_REGISTRY_PUBLIC_URL``); ``""`` when neither is set. Raises
        :class:`ValueError` on a malformed one (:func:`check_public_url`)."""
        url = self.public_url or os.environ.get("WGTPM_REGISTRY_PUBLIC_URL") or ""
        return check_public_url(url) if url else ""
