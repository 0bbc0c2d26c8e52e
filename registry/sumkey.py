"""The checksum log's signing key: found, or generated on first start, and its verifier key.

Where the signer key (``PRIVATE+KEY+NAME+HASH+BASE64``, Go's format) comes from,
first match wins:

1. ``WGTPM_REGISTRY_SUMDB_KEY``: the key itself (for secrets injected into
   containers);
2. ``--sumdb-key-file FILE`` or ``WGTPM_REGISTRY_SUMDB_KEY_FILE``: a file holding it;
3. ``DATA/sumdb.key``, created on first use (mode 0600) with a new Ed25519 key
   named ``--sumdb-name`` / ``WGTPM_REGISTRY_SUMDB_NAME``, else this host's
   name (``localhost`` when it has none usable).

Replicas on one database must share one key: give each the same key by 1
or 2, or copy ``DATA/sumdb.key``. The first server to start records its
verifier key in the database; a server with another key refuses to start
(:meth:`registry.sumlog.SqlSumLog.claim_key`), so a log is never signed by
two keys. ``wgtpm registry key`` prints the verifier key clients configure
(``WGTSUMDB="NAME+HASH+BASE64 URL"``).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import socket
from pathlib import Path

from wgtpm.sumdb import note

from ._errors import RegistryError

__all__ = [
    "KEY_FILE",
    "SumdbKeyError",
    "default_name",
    "load_or_create_key",
    "signer_key",
    "verifier_key",
]

log = logging.getLogger("registry.sumkey")

KEY_FILE = "sumdb.key"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-_]{0,252}\Z")


class SumdbKeyError(RegistryError):
    """The checksum log's key is malformed, unreadable, or not the one its database records."""


def default_name() -> str:
    """This host's name, lower case (no DNS lookup); ``localhost`` when it has none usable.

    Clients keep their state per name, so a registry reached by a public host
    name should be given that name (``--sumdb-name registry.example.com``).
    """
    try:
        name = socket.gethostname().lower().rstrip(".")
    except OSError:
        name = ""
    return name if _NAME.match(name) else "localhost"


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise SumdbKeyError(
            f"checksum database name {name!r}: use a host name like sum.example.com "
            "(letters, digits, '.', '-', '_'; no '/', '+', ':' or spaces)"
        )
    return name


def verifier_key(skey: str) -> str:
    """The verifier key (``NAME+HASH+BASE64``) of the signer key ``skey``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        signer = note.new_signer(skey)
    except note.NoteError as exc:
        raise SumdbKeyError(f"the checksum database's signer key is malformed: {exc}") from exc
    seed = base64.b64decode(skey.split("+", 4)[4])[1:]  # base64 may hold "+"
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    return note.new_ed25519_verifier_key(signer.name, public)


def _read_key(path: Path) -> str:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SumdbKeyError(f"reading the checksum database key {path}: {exc}") from exc


def load_or_create_key(data: Path, name: str | None = None) -> str:
    """The signer key in ``DATA/sumdb.key``, created (mode 0600) named ``name`` if missing.

    Safe against concurrent first starts: the file appears whole (a link of a
    finished temporary file), and whoever loses the race reads the winner's.
    """
    path = data / KEY_FILE
    if not path.exists():
        skey, _ = note.generate_key(_check_name(name or default_name()))
        data.mkdir(parents=True, exist_ok=True)
        tmp = data / f".{KEY_FILE}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(skey + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process created it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        log.warning("%s is readable by others (mode %o): chmod 600 it", path, mode)
    return _read_key(path)


def signer_key(data: Path, name: str | None = None, key_file: Path | None = None) -> str:
    """The signer key as the module docstring says, checked; ``name``, when given, must be
    the key's name."""
    env = os.environ.get("WGTPM_REGISTRY_SUMDB_KEY", "").strip()
    file_env = os.environ.get("WGTPM_REGISTRY_SUMDB_KEY_FILE")
    name = name or os.environ.get("WGTPM_REGISTRY_SUMDB_NAME") or None
    if env:
        skey = env
    elif key_file is not None or file_env:
        skey = _read_key(key_file or Path(str(file_env)))
    else:
        skey = load_or_create_key(data, name)
    vkey = verifier_key(skey)  # checks it
    have = vkey.split("+")[0]
    if name is not None and have != name:
        raise SumdbKeyError(
            f"the checksum database key is for {have!r}, not the name {name!r} asked for "
            "(a name is fixed when its key is made: drop --sumdb-name, or use another key)"
        )
    _check_name(have)
    return skey
