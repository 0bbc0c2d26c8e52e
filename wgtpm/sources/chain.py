"""WGTPROXY: the list of places to look, tried in order, as GOPROXY does.

``WGTPROXY`` is a list of entries separated by ``,`` or ``|``::

    WGTPROXY=https://models.acme.internal,direct
    WGTPROXY=file:///srv/wgt-tree|https://reg.example,direct

After ``,`` the next entry is tried only when this one says the module or
version does not exist (404/410); after ``|`` it is tried after any error.
``direct`` talks to GitHub, Hugging Face and the PAW hub themselves; ``off``
forbids the network (only what is in the cache can be used). The default is
``direct``. Modules matching ``WGTPRIVATE`` (or ``WGTNOPROXY``) patterns skip
every proxy and go ``direct``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import FetchError, NotFoundError, UsageError, WgtpmError
from ..module import match_patterns
from ._base import FileRequest, RevInfo, Source

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["ChainSource", "Entry", "from_env", "parse_proxy_list"]

T = TypeVar("T")
DEFAULT = "direct"


@dataclass(frozen=True)
class Entry:
    """One WGTPROXY entry; ``any_error`` is true when a ``|`` follows it."""

    url: str
    any_error: bool = False


def parse_proxy_list(value: str) -> list[Entry]:
    """Parse a WGTPROXY value; raises :class:`UsageError` on a malformed one."""
    entries: list[Entry] = []
    cur = ""
    for ch in value.strip() + ",":
        if ch in ",|":
            url = cur.strip()
            if not url:
                raise UsageError(f"WGTPROXY={value!r}: empty entry")
            if url not in ("direct", "off") and not url.startswith(
                ("http://", "https://", "file://")
            ):
                raise UsageError(
                    f"WGTPROXY={value!r}: {url!r} is not a URL (http://, https://, file://), 'direct' or 'off'"
                )
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


class _EtagStore:
    """The sources' ETag store (``MetaCache``) kept in the module cache across runs."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache

    def get(self, key: str) -> tuple[str, bytes] | None:
        found: tuple[str, bytes] | None = self.cache.get_etag(key)
        return found

    def put(self, key: str, etag: str, body: bytes) -> None:
        self.cache.put_etag(key, etag, body)


class ChainSource:
    """Tries the entries of a WGTPROXY list in order (see the module docstring)."""

    def __init__(
        self,
        entries: list[Entry],
        private: str = "",
        http: HttpClient | None = None,
        make_direct: Callable[[], Source] | None = None,
    ) -> None:
        self.entries = entries
        self.private = private
        self.name = ",".join(e.url for e in entries)
        self._http = http
        self._make_direct = make_direct
        self._sources: dict[str, Source] = {}
        # The source that served each module version's index serves its files too.
        self._served: dict[tuple[str, str], Source] = {}

    def _source(self, url: str) -> Source:
        src = self._sources.get(url)
        if src is None:
            if url == "off":
                src = _Off()
            elif url == "direct":
                if self._make_direct is not None:
                    src = self._make_direct()
                else:
                    from ..cache import Cache
                    from .direct import DirectSource  # heavy clients load only when used

                    src = DirectSource(http=self._http, meta_cache=_EtagStore(Cache()))
            else:
                from .proxy import ProxySource

                src = ProxySource(url, self._http)
            self._sources[url] = src
        return src

    def _entries_for(self, path: str) -> list[Entry]:
        if self.private and match_patterns(self.private, path):
            return [Entry("direct")]
        return self.entries

    def _try(self, path: str, call: Callable[[Source], T]) -> tuple[T, Source]:
        last: WgtpmError | None = None
        entries = self._entries_for(path)
        for i, e in enumerate(entries):
            src = self._source(e.url)
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
        return self._try(path, lambda s: s.mod(path, version))[0]

    def index(self, path: str, version: str) -> bytes:
        data, src = self._try(path, lambda s: s.index(path, version))
        self._served[(path, version)] = src
        return data

    def file(self, path: str, version: str, name: str) -> FileRequest:
        src = self._served.get((path, version))
        if src is None:  # the index came from the cache: find who has this version now
            _, src = self._try(path, lambda s: s.index(path, version))
            self._served[(path, version)] = src
        return src.file(path, version, name)


def from_env(http: HttpClient | None = None, environ: dict[str, str] | None = None) -> ChainSource:
    """The chain that ``WGTPROXY`` and ``WGTPRIVATE``/``WGTNOPROXY`` describe."""
    env = os.environ if environ is None else environ
    entries = parse_proxy_list(env.get("WGTPROXY") or DEFAULT)
    private = ",".join(p for p in (env.get("WGTPRIVATE", ""), env.get("WGTNOPROXY", "")) if p)
    return ChainSource(entries, private, http)
