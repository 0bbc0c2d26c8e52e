"""The checksum database wired to the outside world: ``WGTSUMDB``, HTTP, the cache folder.

:func:`check_from_env` reads the configuration and returns a
:class:`SumdbCheck`, the verifier that :class:`~wgtpm.modload.sums.SumLedger`
calls before it records a wgt.sum line it did not have. The check looks the
module version up in the database (a :class:`~wgtpm.sumdb.client.Client`
over :class:`RemoteOps`) and requires that the line to be recorded is the
one the log holds.

Configuration, read once per command:

- ``WGTSUMDB``: unset, empty or ``off``: no checksum database (the default
  until one is configured). ``name+hash+key``: the database's verifier key;
  it is reached through the first ``WGTPROXY`` proxy that serves
  ``$PROXY/sumdb/NAME/supported`` with a 200, else at ``https://HOST``
  (``HOST``: the name up to its first ``/``). ``name+hash+key URL``: reached
  at ``URL`` only, bypassing the proxies, as Go treats ``GOSUMDB="key url"``.
  Either way the database's paths are ``BASE/sumdb/NAME/latest``,
  ``.../lookup/M@V`` and ``.../tile/...``. Anything else is one
  :class:`~wgtpm.UsageError` naming ``WGTSUMDB``.
- ``WGTNOSUMDB`` and ``WGTPRIVATE``: comma-separated module path patterns
  (as ``GONOSUMDB``, :func:`wgtpm.sources.hosts.match_private`, so
  case-insensitive on GitHub and Hugging Face); a module matching either is
  never looked up (its name never reaches the database). Unlike Go, where
  ``GONOSUMDB`` replaces the ``GOPRIVATE`` default, both lists always apply.
- The proxy search follows Go: an entry answering 404 or 410 passes to the
  next entry (after ``|``, any error does); ``direct`` ends the search at the
  default URL; a list that starts with ``off`` forbids the network, with or
  without a URL in ``WGTSUMDB``, so only lookups already in the cache can be
  used. A ``file://`` proxy is searched the same way.

Files, under ``$WGTPM_CACHE/sumdb/`` (see :mod:`wgtpm.cache`):
``NAME/latest`` (the latest signed tree head seen: the client's
configuration, replaced by compare-and-swap under ``NAME/latest.lock``),
``NAME/lookup/M@V`` and ``NAME/tile/8/...`` (verified answers, cached).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from .._errors import (
    ChecksumMismatchError,
    FetchError,
    ModuleError,
    NotFoundError,
    SumdbConflictError,
    SumdbError,
    SumdbSecurityError,
    SumdbVerifyError,
    UsageError,
    VerifyError,
    WgtpmError,
)
from .._fs import FileLock, write_atomic
from ..sources.hosts import match_private
from .record import MOD_SUFFIX, TABLES_SUFFIX

if TYPE_CHECKING:
    from ..cache import Cache
    from ..httpclient import HttpClient
    from .client import Client

__all__ = [
    "RemoteOps",
    "SumdbCheck",
    "SumdbConfig",
    "SumdbMismatchError",
    "check_from_env",
    "parse_config",
]

ENV = "WGTSUMDB"
_LOG = logging.getLogger("wgtpm.sumdb")
# host[/path]: the name is also a folder under $WGTPM_CACHE/sumdb, so nothing odd in it
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*(/[A-Za-z0-9_.~\-]+)*")


@dataclass(frozen=True)
class SumdbConfig:
    """One checksum database and the modules it is not asked about."""

    vkey: str  # name+hash+base64
    name: str
    url: str | None = None  # explicit base URL (bypasses the proxies); None: proxies, then HOST
    nosumdb: str = ""  # WGTNOSUMDB patterns
    private: str = ""  # WGTPRIVATE patterns

    @property
    def direct(self) -> str:
        """``BASE/sumdb/NAME`` when no proxy serves the database."""
        base = self.url if self.url is not None else "https://" + self.name.split("/", 1)[0]
        return f"{base.rstrip('/')}/sumdb/{self.name}"

    def skips(self, path: str) -> bool:
        """Whether module ``path`` is never looked up (``WGTNOSUMDB`` or ``WGTPRIVATE``)."""
        return any(p and match_private(p, path) for p in (self.nosumdb, self.private))


def parse_config(value: str, nosumdb: str = "", private: str = "") -> SumdbConfig | None:
    """The database a ``WGTSUMDB`` value names; ``None`` for off; :class:`UsageError` if malformed."""
    fields = value.split()
    if not fields or fields == ["off"]:
        return None

    from ..httpclient import redact_url

    def bad(why: str) -> UsageError:
        shown_value = " ".join(redact_url(f) for f in fields)[:200]
        return UsageError(
            f"{ENV}={shown_value!r}: {why}; want 'off', 'NAME+HASH+KEY' "
            "or 'NAME+HASH+KEY URL' (the verifier key the database's operators publish)"
        )

    if len(fields) > 2:
        raise bad("too many fields")
    from . import note

    try:
        verifier = note.new_verifier(fields[0])
    except note.NoteError as exc:
        raise bad(f"not a verifier key ({exc})") from None
    name = verifier.name
    if not _NAME.fullmatch(name) or any(e in (".", "..") for e in name.split("/")):
        raise bad(f"the database name {name!r} is not HOST[/PATH]")
    url = None
    if len(fields) == 2:
        url = fields[1].rstrip("/")
        shown = redact_url(fields[1])[:200]
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError as exc:
            raise bad(f"bad URL ({exc})") from None
        if parts.scheme not in ("http", "https", "file") or (
            parts.scheme != "file" and not parts.hostname
        ):
            raise bad(f"{shown!r} is not an http://, https:// or file:// URL")
        if parts.query or parts.fragment:
            raise bad(f"{shown!r} has a query or fragment")
    return SumdbConfig(fields[0], name, url, nosumdb.strip(), private.strip())


def check_from_env(
    cache: Cache, http: Callable[[], HttpClient], environ: Mapping[str, str] | None = None
) -> SumdbCheck | None:
    """The check of new wgt.sum lines that the environment configures, or ``None`` (off)."""
    import os

    env = os.environ if environ is None else environ
    config = parse_config(env.get(ENV, ""), env.get("WGTNOSUMDB", ""), env.get("WGTPRIVATE", ""))
    if config is None:
        return None
    ops = RemoteOps(config, cache.sumdb_root, http, env.get("WGTPROXY", ""))
    return SumdbCheck(config, ops)


class SumdbMismatchError(ChecksumMismatchError):
    """A downloaded hash that is not the one the checksum database's log holds: a SECURITY ERROR."""

    def __init__(self, path: str, version: str, db: str, want: list[str], got: str) -> None:
        base = version.removesuffix(MOD_SUFFIX).removesuffix(TABLES_SUFFIX)
        what = (
            "wgt.mod"
            if version.endswith(MOD_SUFFIX)
            else "its tensor tables"
            if version.endswith(TABLES_SUFFIX)
            else "the release (its index)"
        )
        self.what, self.want, self.got, self.got_from = what, "\n".join(want), got, "downloaded"
        label = f"checksum database {db}:"
        width = len(label) + 2
        shown = "".join(f"\t{label:<{width}}{line}\n" for line in want)
        VerifyError.__init__(
            self,
            path,
            base,
            f"SECURITY ERROR: checksum mismatch for {what}\n{shown}"
            f"\t{'downloaded:':<{width}}{got}\n"
            "The log of the checksum database records other bytes for this version than the\n"
            "source served: the source (or the way to it) is tampering with them, or the\n"
            "release was changed after it was first published. Nothing was written.",
        )


class SumdbCheck:
    """Checks a wgt.sum line about to be recorded against the checksum database.

    Called as ``check(path, version, h1)`` (``version`` may end in
    ``/wgt.mod``). Modules that ``WGTNOSUMDB`` or ``WGTPRIVATE`` name pass
    unchecked. Raises :class:`SumdbMismatchError` when the log holds another
    hash, :class:`~wgtpm.SumdbVerifyError` when the database cannot vouch for
    the version (unreachable, no record, a bad proof), and
    :class:`~wgtpm.SumdbSecurityError` (both signed tree heads and the proof)
    when the log forked; after a fork every later check raises it again, as
    Go's client stops for good. Safe to call from several threads.
    """

    def __init__(self, config: SumdbConfig, ops: RemoteOps) -> None:
        self.config = config
        self.ops = ops
        self._client: Client | None = None
        self._lock = threading.Lock()
        self._fork: SumdbSecurityError | None = None

    @property
    def client(self) -> Client:
        """The verifying client (made on first use)."""
        with self._lock:
            if self._client is None:
                from .client import Client

                self._client = Client(self.config.vkey, self.ops)
            return self._client

    def __call__(self, path: str, version: str, h1: str) -> None:
        if self.config.skips(path):
            return
        client = self.client
        if self._fork is not None:
            raise self._fork
        name = self.config.name
        base = version.removesuffix(MOD_SUFFIX).removesuffix(TABLES_SUFFIX)
        try:
            lines = client.lookup(path, version)
        except SumdbSecurityError as exc:
            self._fork = SumdbSecurityError(path, base, exc.report, exc.old_note, exc.new_note)
            raise self._fork from None
        except SumdbVerifyError as exc:
            raise SumdbVerifyError(path, base, exc.message) from exc
        except UsageError:
            raise  # a malformed WGTPROXY says so itself
        except WgtpmError as exc:
            why = exc.message if isinstance(exc, ModuleError) else str(exc)
            hint = (
                "the database has no record of it"
                if isinstance(exc, NotFoundError) and "/lookup/" in str(exc)
                else "the database could not be asked"
            )
            raise SumdbVerifyError(
                path,
                base,
                f"verifying against the checksum database {name}: {why}\n"
                f"({hint}; nothing was written. A module the database cannot know, such as "
                "a private one, belongs in WGTPRIVATE or WGTNOSUMDB.)",
            ) from exc
        got = f"{path} {version} {h1}"
        if got not in lines:
            raise SumdbMismatchError(path, version, name, lines, got)


class RemoteOps:
    """The :class:`~wgtpm.sumdb.client.ClientOps` of a command: HTTP, and files under ``root``.

    ``root`` is ``$WGTPM_CACHE/sumdb``; ``proxies`` the ``WGTPROXY`` value
    (default ``direct``), searched for a proxy of the database on the first
    remote read (see the module docstring).
    """

    def __init__(
        self, config: SumdbConfig, root: Path, http: Callable[[], HttpClient], proxies: str = ""
    ) -> None:
        self.config = config
        self.root = Path(root)
        self._http = http
        self._proxies = proxies
        self._base: str | None = None
        self._base_error: WgtpmError | None = None
        self._base_lock = threading.Lock()
        self.reports: list[str] = []  # security errors reported by the client

    # ---- remote ---------------------------------------------------------------------

    @property
    def base(self) -> str:
        """``.../sumdb/NAME``: where the database is read (found on first use, like Go's initBase)."""
        with self._base_lock:
            if self._base is None and self._base_error is None:
                try:
                    self._base = self._find_base()
                except WgtpmError as exc:
                    self._base_error = exc
            if self._base_error is not None:
                raise self._base_error
            assert self._base is not None
            return self._base

    def _find_base(self) -> str:
        from ..sources.chain import DEFAULT, parse_proxy_list

        entries = parse_proxy_list(self._proxies or DEFAULT)
        if entries[0].url == "off":
            raise FetchError(
                f"checksum database {self.config.name}",
                None,
                "WGTPROXY=off forbids the network, so the database cannot be asked "
                "(only its answers already in the cache can be used)",
            )
        if self.config.url is not None:
            return self.config.direct
        suffix = f"/sumdb/{self.config.name}"
        for entry in entries:
            if entry.url in ("direct", "off"):
                break
            base = entry.url.rstrip("/") + suffix
            try:
                self._get(base + "/supported")
            except NotFoundError:
                continue
            except WgtpmError:
                if entry.any_error:
                    continue
                raise
            self.log(f"checksum database {self.config.name} through the proxy {entry.url}")
            return base
        return self.config.direct

    def read_remote(self, path: str) -> bytes:
        return self._get(self.base + path)

    def _get(self, url: str) -> bytes:
        """The body at ``url`` (http, https or file); NotFoundError on 404/410, else FetchError."""
        from ..httpclient import MAX_METADATA, HTTPStatusError, redact_url

        where = f"checksum database {self.config.name}"
        if url.startswith("file:"):
            p = Path(unquote(urlsplit(url).path))
            try:
                with open(p, "rb") as f:
                    data = f.read(MAX_METADATA + 1)
            except FileNotFoundError:
                raise NotFoundError(where, None, f"{p}: no such file") from None
            except OSError as exc:
                raise FetchError(where, None, f"{p}: {exc.strerror or exc}") from None
            if len(data) > MAX_METADATA:
                raise FetchError(where, None, f"{p}: larger than {MAX_METADATA} bytes")
            return data
        try:
            return self._http().get_bytes(url, limit=MAX_METADATA)
        except HTTPStatusError as exc:
            if exc.status in (404, 410):
                raise NotFoundError(where, None, str(exc)) from exc
            raise FetchError(where, None, str(exc)) from exc
        except WgtpmError as exc:
            raise FetchError(where, None, str(exc) or redact_url(url)) from exc

    # ---- configuration and cache ------------------------------------------------------

    def _file(self, file: str) -> Path:
        """``root/file``, refusing a name that would leave ``root``."""
        p = self.root / file
        if ".." in Path(file).parts or Path(file).is_absolute():
            raise SumdbError(f"refusing the checksum-database file name {file!r}")
        return p

    def read_config(self, file: str) -> bytes:
        try:
            return self._file(file).read_bytes()
        except FileNotFoundError:
            return b""

    def write_config(self, file: str, old: bytes, new: bytes) -> None:
        p = self._file(file)
        p.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(p.with_name(p.name + ".lock")):
            try:
                have = p.read_bytes()
            except FileNotFoundError:
                have = b""
            if have != old:
                raise SumdbConflictError(f"{p} changed while it was being replaced")
            write_atomic(p, new)

    def read_cache(self, file: str) -> bytes | None:
        try:
            return self._file(file).read_bytes()
        except (OSError, SumdbError):
            return None

    def write_cache(self, file: str, data: bytes) -> None:
        try:
            p = self._file(file)
            p.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(p, data)
        except (OSError, SumdbError) as exc:
            self.log(f"not caching {file}: {exc}")

    # ---- reports ----------------------------------------------------------------------

    def log(self, msg: str) -> None:
        _LOG.debug("%s", msg)

    def security_error(self, msg: str) -> None:
        # Library code does not print: the client raises SumdbSecurityError with this very
        # report right after, and the command line prints it (both notes and the proof).
        self.reports.append(msg)
        _LOG.debug("security error reported: %s", msg)
