"""WGTPROXY: the list of places to look, tried in order, as GOPROXY does.

``WGTPROXY`` is a list of entries separated by ``,`` or ``|``::

    WGTPROXY=https://models.acme.internal,direct
    WGTPROXY=file:///srv/wgt-tree|https://reg.example,direct

After ``,`` the next entry is tried only when this one says the module or
version does not exist (404/410); after ``|`` it is tried after any error.
``direct`` talks to GitHub, Hugging Face and the PAW hub themselves, and to
the OCI registries that ``WGTOCI`` names (:class:`wgtpm.sources.oci.OciDirect`);
``oci://HOST[:PORT]/NAMESPACE`` is an OCI registry holding modules
(:mod:`wgtpm.sources.oci`; plain HTTP only for loopback or a registry that
``WGTOCI_INSECURE`` names); ``off`` forbids the network (only what is in the
cache can be used). The default is ``direct``. Modules matching
``WGTPRIVATE`` (or ``WGTNOPROXY``) patterns skip every proxy and go ``direct``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from .._errors import FetchError, NotFoundError, UsageError, WgtpmError
from ..httpclient import redact_url
from ._base import FileRequest, RevInfo, Source
from ._hosted import CacheMetaStore, MetaCache
from .hosts import match_private

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ..index import IndexEntry

__all__ = ["ChainSource", "Entry", "from_env", "parse_proxy_list"]

T = TypeVar("T")
DEFAULT = "direct"


@dataclass(frozen=True)
class Entry:
    """One WGTPROXY entry; ``any_error`` is true when a ``|`` follows it."""

    url: str
    any_error: bool = False


def _redact(value: str) -> str:
    """A WGTPROXY value (or one entry) with the user information of every URL hidden."""
    return re.sub(r"[^,|]+", lambda m: redact_url(m.group(0)), value)


def parse_proxy_list(value: str) -> list[Entry]:
    """Parse a WGTPROXY value; raises :class:`UsageError` on a malformed one."""
    entries: list[Entry] = []
    cur = ""
    for ch in value.strip() + ",":
        if ch in ",|":
            url = cur.strip()
            if not url:
                raise UsageError(f"WGTPROXY={_redact(value)!r}: empty entry")
            if url not in ("direct", "off") and not url.startswith(
                ("http://", "https://", "file://", "oci://")
            ):
                raise UsageError(
                    f"WGTPROXY={_redact(value)!r}: {_redact(url)!r} is not a URL "
                    "(http://, https://, file://, oci://), 'direct' or 'off'"
                )
            if url.startswith("oci://"):
                from .oci import parse_oci_url

                try:
                    parse_oci_url(url)
                except UsageError as exc:
                    raise UsageError(f"WGTPROXY={_redact(value)!r}: {exc}") from None
            elif url not in ("direct", "off"):
                try:
                    parts = urlsplit(url)
                    parts.port  # noqa: B018 - raises on a malformed port
                except ValueError as exc:
                    raise UsageError(f"WGTPROXY={_redact(value)!r}: {exc}") from exc
                if parts.scheme != "file" and not parts.hostname:
                    raise UsageError(f"WGTPROXY={_redact(value)!r}: {_redact(url)!r} names no host")
            entries.append(Entry(url, ch == "|"))
            cur = ""
        else:
            cur += ch
    return entries


class _Off:
    name = "off"

    def _refuse(self, path: str) -> FetchError:
        return FetchError(
            path,
            None,
            "module lookup disabled by WGTPROXY=off (only the cache and vendor/ can be used)",
        )

    def versions(self, path: str) -> list[str]:
        raise self._refuse(path)

    def info(self, path: str, query: str) -> RevInfo:
        raise self._refuse(path)

    def mod(self, path: str, version: str) -> bytes:
        raise self._refuse(path)

    def index(self, path: str, version: str) -> bytes:
        raise self._refuse(path)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        raise self._refuse(path)

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        return ()


class ChainSource:
    """Tries the entries of a WGTPROXY list in order (see the module docstring).

    The chain is handed what its sources share: ``http``, the one HTTP
    client or a function that makes it (called on first use; made here on
    first use when omitted, so that a chain that never leaves the cache or a
    ``file://`` tree opens no connection pool), and ``meta_cache``, the
    store of listings the direct sources revalidate by ETag (in memory when
    omitted). It never builds the module cache itself.

    A version's files come from the entry that answered its index or wgt.mod;
    for a version whose index came from the cache, the first entry that
    answers its wgt.mod (never its index again: see :meth:`file`).
    """

    def __init__(
        self,
        entries: list[Entry],
        private: str = "",
        http: HttpClient | Callable[[], HttpClient] | None = None,
        make_direct: Callable[[], Source] | None = None,
        *,
        meta_cache: MetaCache | None = None,
        oci: str = "",
        oci_insecure: str = "",
    ) -> None:
        self.entries = entries
        self.oci = oci  # WGTOCI: module paths that name an OCI registry ('direct' serves them)
        self.oci_insecure = oci_insecure  # WGTOCI_INSECURE: registries allowed plain HTTP
        self.private = private
        self.name = ",".join(redact_url(e.url) for e in entries)
        self._http = http
        self._make_direct = make_direct
        self.meta_cache = meta_cache
        self._lock = threading.Lock()
        self._client_lock = threading.Lock()
        self._sources: dict[str, Source] = {}
        # (module, version) -> the source that answered its index or wgt.mod: it serves
        # the version's files too
        self._served: dict[tuple[str, str], Source] = {}
        # (module, version) -> held while the chain looks for that source (see file())
        self._finding: dict[tuple[str, str], threading.Lock] = {}

    def _client(self) -> HttpClient:
        from ..httpclient import HttpClient

        with self._client_lock:
            if self._http is None:
                self._http = HttpClient()
            elif not isinstance(self._http, HttpClient):
                self._http = self._http()
            return self._http

    def source(self, url: str) -> Source:
        """The source of the ``WGTPROXY`` entry ``url`` (made on first use, then kept)."""
        with self._lock:
            src = self._sources.get(url)
            if src is None:
                if url == "off":
                    src = _Off()
                elif url == "direct":
                    if self._make_direct is not None:
                        src = self._make_direct()
                    else:
                        from .direct import DirectSource  # hosts load only when used

                        src = DirectSource(self._client(), meta_cache=self.meta_cache)
                    if self.oci:
                        from .oci import OciDirect

                        src = OciDirect(
                            src, self.oci, self._client, insecure_patterns=self.oci_insecure
                        )
                elif url.startswith("oci://"):
                    from .oci import OciSource

                    src = OciSource.from_url(
                        url, self._client(), insecure_patterns=self.oci_insecure
                    )
                else:
                    from .proxy import ProxySource

                    src = ProxySource(url, None if url.startswith("file:") else self._client())
                self._sources[url] = src
            return src

    def entries_for(self, path: str) -> list[Entry]:
        """The entries asked for ``path``: ``direct`` alone for a ``WGTPRIVATE`` one."""
        if self.private and match_private(self.private, path):
            return [Entry("direct")]
        return self.entries

    def _try(self, path: str, call: Callable[[Source], T]) -> tuple[T, Source]:
        last: WgtpmError | None = None
        entries = self.entries_for(path)
        for i, e in enumerate(entries):
            src = self.source(e.url)
            try:
                return call(src), src
            except NotFoundError as exc:
                last = exc
            except WgtpmError as exc:
                last = exc
                if not e.any_error or i == len(entries) - 1:
                    raise
        assert last is not None
        raise last

    def versions(self, path: str) -> list[str]:
        return self._try(path, lambda s: s.versions(path))[0]

    def info(self, path: str, query: str) -> RevInfo:
        return self._try(path, lambda s: s.info(path, query))[0]

    def mod(self, path: str, version: str) -> bytes:
        data, src = self._try(path, lambda s: s.mod(path, version))
        with self._lock:
            self._served.setdefault((path, version), src)  # the index's source wins
        return data

    def index(self, path: str, version: str) -> bytes:
        data, src = self._try(path, lambda s: s.index(path, version))
        with self._lock:
            self._served[(path, version)] = src
        return data

    def file(self, path: str, version: str, name: str) -> FileRequest:
        """Where ``name`` of ``path@version`` lies, asked of the source that serves the
        version: the one that answered its index or wgt.mod in this process, else the
        first entry that answers its wgt.mod now.

        The index (and wgt.mod) may come from elsewhere: the module cache, or a registry's
        record of a version another replica indexed. Asking for the index again to learn
        who has the version would cost what indexing cost (a Hugging Face index is made by
        downloading the repository's small files); wgt.mod is the cheapest answer every
        source gives about one version (the Source protocol keeps it so; not every proxy
        tree has ``.info`` files, wgtpm's own cache has none). The download
        threads of one version wait for one such answer rather than each asking.
        """
        return self._serving(path, version).file(path, version, name)

    def refresh(self, path: str, version: str, name: str, stale: FileRequest) -> FileRequest | None:
        """``name``'s request again after the server refused ``stale`` with ``401`` (a
        token that expired mid-download), asked of the source that serves the version, as
        :meth:`file` is; ``None`` when that source has no ``refresh`` (the downloader then
        retries as after any other failure). See ``Source`` in sources/_base.py."""
        src = self._serving(path, version)
        again = getattr(src, "refresh", None)
        if again is None:
            return None
        req: FileRequest = again(path, version, name, stale)
        return req

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        """What the source that answered the version's wgt.mod in this process knows of
        its index early; ``()`` when none has (finding one would cost a request)."""
        with self._lock:
            src = self._served.get((path, version))
        return () if src is None else src.known_files(path, version)

    def signature(self, path: str, version: str) -> bytes | None:
        """The release's signature (:mod:`wgtpm.trust`) from the source that serves the
        version; ``None`` when it has none (or keeps none)."""
        return self._beside(path, version, "signature")

    def attestation(self, path: str, version: str) -> bytes | None:
        """The release's SLSA statement (:mod:`wgtpm.publish._slsa`) from the source that
        serves the version; ``None`` when it has none (or keeps none)."""
        return self._beside(path, version, "attestation")

    def tables(self, path: str, version: str) -> bytes | None:
        """The logged tensor tables (:meth:`ProxySource.tables`) from the source that
        serves the version; ``None`` when it serves none (a direct source never does)."""
        return self._beside(path, version, "tables")

    def _beside(self, path: str, version: str, what: str) -> bytes | None:
        """A file served beside the version's index, read by the serving source's method
        named ``what``; ``None`` when that source has no such method or no such file."""
        src = self._serving(path, version)
        read = getattr(src, what, None)
        if read is None:
            return None
        try:
            data: bytes = read(path, version)
        except NotFoundError:
            return None
        return data

    def _serving(self, path: str, version: str) -> Source:
        key = (path, version)
        with self._lock:
            src = self._served.get(key)
            if src is not None:
                return src
            finding = self._finding.setdefault(key, threading.Lock())
        try:
            with finding:
                with self._lock:
                    src = self._served.get(key)
                if src is None:
                    _, src = self._try(path, lambda s: s.mod(path, version))
                    with self._lock:
                        src = self._served.setdefault(key, src)
                return src
        finally:
            with self._lock:
                self._finding.pop(key, None)


def from_env(
    http: HttpClient | Callable[[], HttpClient] | None = None,
    environ: Mapping[str, str] | None = None,
    cache: Any = None,
) -> ChainSource:
    """The chain that ``WGTPROXY``, ``WGTPRIVATE``/``WGTNOPROXY`` and ``WGTOCI`` describe.

    ``http`` is the command's one HTTP client; ``cache`` the module cache
    (:class:`wgtpm.cache.Cache`) whose ETag store the direct sources use. A
    caller that has a cache passes it (``Options.cache``); without one, the
    cache that the environment names (``WGTPMCACHE``) is opened, as before.
    """
    env = os.environ if environ is None else environ
    entries = parse_proxy_list(env.get("WGTPROXY") or DEFAULT)
    private = ",".join(p for p in (env.get("WGTPRIVATE", ""), env.get("WGTNOPROXY", "")) if p)
    if cache is None:
        from ..cache import Cache

        cache = Cache()
    return ChainSource(
        entries,
        private,
        http,
        meta_cache=CacheMetaStore(cache),
        oci=env.get("WGTOCI", ""),
        oci_insecure=env.get("WGTOCI_INSECURE", ""),
    )
