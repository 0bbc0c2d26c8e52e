"""Credentials for an OCI registry, found where the container tools keep them.

In order, the first that has the registry:

1. ``REGISTRY_AUTH_FILE`` (podman, skopeo, buildah: the same format as Docker's);
2. Docker's ``config.json`` (``$DOCKER_CONFIG/config.json``, else
   ``~/.docker/config.json``): ``credHelpers[HOST]``, else ``auths[HOST]``
   (``auth``: base64 ``user:password``; ``username``/``password``;
   ``identitytoken``: an OAuth2 refresh token; ``registrytoken``: a bearer
   token), else ``credsStore``; a helper is the program
   ``docker-credential-NAME``, asked with ``get`` and the host on its input;
3. ``~/.netrc`` (``NETRC`` names another file): ``machine HOST``.

``HOST`` is the registry as written in an ``oci://`` URL (``host`` or
``host:port``); an ``auths`` key may also be written with a scheme or path
(``https://reg.example/v1/``), as ``docker login`` writes some. Credentials are
only ever offered to the registry they were found for (and to the token
service that registry names, as every OCI client does); every secret is
registered with :func:`wgtpm.httpclient.redact` the moment it is read, so
no message shows it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .._errors import UsageError
from ..httpclient import netrc_login, register_secret

__all__ = ["Credentials", "Keychain", "normalise_host"]

#: The variable a credential helper is looked for along (the shell's, not a wgtpm setting).
_SEARCH_PATH = "PATH"
#: How long a credential helper may take to answer.
HELPER_TIMEOUT = 30.0


@dataclass(frozen=True)
class Credentials:
    """What a registry is offered: a user and password, or an identity (refresh) token,
    or a bearer token. ``source`` says where they came from (no secret in it)."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)
    identity_token: str | None = field(default=None, repr=False)
    registry_token: str | None = field(default=None, repr=False)
    source: str = ""

    def __post_init__(self) -> None:
        register_secret(
            *(s for s in (self.password, self.identity_token, self.registry_token) if s)
        )

    @property
    def basic(self) -> str | None:
        """The ``Authorization`` value for HTTP Basic, if there is a user and password."""
        if self.username is None or self.password is None:
            return None
        value = "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        register_secret(value, value.rsplit(" ", 1)[-1])
        return value


def normalise_host(key: str) -> str:
    """A registry as ``config.json`` or a URL writes it, as ``host[:port]`` in lower case:
    ``https://Reg.Example/v1/`` -> ``reg.example``."""
    key = key.strip()
    key = urlsplit(key).netloc if "://" in key else key.split("/", 1)[0]
    return key.rsplit("@", 1)[-1].lower()


def _config_files(environ: Mapping[str, str]) -> list[Path]:
    files = []
    if environ.get("REGISTRY_AUTH_FILE"):
        files.append(Path(environ["REGISTRY_AUTH_FILE"]))
    docker = environ.get("DOCKER_CONFIG")
    base = Path(docker) if docker else Path(os.path.expanduser("~")) / ".docker"
    files.append(base / "config.json")
    return files


def _read_config(path: Path) -> dict[str, object] | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not a JSON object; fix or remove it")
    return doc


def _from_auths(entry: object, where: str) -> Credentials | None:
    if not isinstance(entry, dict):
        return None
    ident = entry.get("identitytoken")
    regtok = entry.get("registrytoken")
    auth = entry.get("auth")
    user, password = entry.get("username"), entry.get("password")
    if isinstance(auth, str) and auth:
        try:
            user, _, password = base64.b64decode(auth, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            raise UsageError(
                f"{where}: the 'auth' value is not base64 of user:password; log in again"
            ) from None
    creds = Credentials(
        user if isinstance(user, str) and user else None,
        password if isinstance(password, str) and password else None,
        ident if isinstance(ident, str) and ident else None,
        regtok if isinstance(regtok, str) and regtok else None,
        where,
    )
    if creds.basic or creds.identity_token or creds.registry_token:
        return creds
    return None


def _helper(name: str, host: str, where: str, path: str | None) -> Credentials | None:
    prog = f"docker-credential-{name}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise UsageError(f"{where}: {name[:60]!r} is not a credential helper's name")
    exe = shutil.which(prog, path=path)
    if exe is None:
        raise UsageError(
            f"{where} names the credential helper {name!r} for {host}, but {prog} is not "
            "on PATH; install it or remove it from the file"
        )
    try:
        done = subprocess.run(
            [exe, "get"],
            input=host.encode(),
            capture_output=True,
            timeout=HELPER_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"{prog} get did not answer in {HELPER_TIMEOUT:g}s (for {host})") from None
    except OSError as exc:
        raise UsageError(f"{prog}: cannot run it ({exc.strerror})") from None
    if done.returncode != 0:
        # "credentials not found in native keychain": the helper has none for this host
        return None
    try:
        doc = json.loads(done.stdout)
        user, secret = doc["Username"], doc["Secret"]
        if not isinstance(user, str) or not isinstance(secret, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise UsageError(
            f"{prog} get answered something other than its JSON (Username, Secret) for {host}"
        ) from None
    source = f"{prog} (named in {where})"
    if user == "<token>":  # Docker's convention: Secret is an identity token
        return Credentials(identity_token=secret, source=source)
    return Credentials(user, secret, source=source)


def _netrc(host: str, environ: Mapping[str, str]) -> Credentials | None:
    found = netrc_login(host, host.rsplit(":", 1)[0], environ=environ)
    if found is None:
        return None
    return Credentials(*found, source=environ.get("NETRC") or os.path.expanduser("~/.netrc"))


class Keychain:
    """Finds the credentials of a registry (see the module docstring); each registry is
    looked up once per keychain. ``environ`` defaults to the process's."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ
        self._found: dict[str, Credentials | None] = {}

    def lookup(self, registry: str) -> Credentials | None:
        host = normalise_host(registry)
        if host not in self._found:
            self._found[host] = self._lookup(host)
        return self._found[host]

    def _lookup(self, host: str) -> Credentials | None:
        for path in _config_files(self.environ):
            doc = _read_config(path)
            if doc is None:
                continue
            helpers = doc.get("credHelpers")
            if isinstance(helpers, dict):
                for key, name in helpers.items():
                    if normalise_host(str(key)) == host and isinstance(name, str) and name:
                        return _helper(name, host, str(path), self.environ.get(_SEARCH_PATH))
            auths = doc.get("auths")
            if isinstance(auths, dict):
                for key, entry in auths.items():
                    if normalise_host(str(key)) == host:
                        creds = _from_auths(entry, str(path))
                        if creds is not None:
                            return creds
            store = doc.get("credsStore")
            if isinstance(store, str) and store:
                creds = _helper(store, host, str(path), self.environ.get(_SEARCH_PATH))
                if creds is not None:
                    return creds
        return _netrc(host, self.environ)


class StaticKeychain(Keychain):
    """Fixed credentials per registry (tests; a caller that got them elsewhere)."""

    def __init__(self, found: Mapping[str, Credentials]) -> None:
        super().__init__({})
        self._found = {normalise_host(k): v for k, v in found.items()}

    def _lookup(self, host: str) -> Credentials | None:
        return None
