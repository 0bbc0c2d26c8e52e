"""``WGTPROXY=direct``: each module from the host its path names.

The hosts and their sources are listed in one table,
:data:`wgtpm.sources.hosts.HOSTS` (``github.com``, ``hf.co`` with
``huggingface.co`` normalised to it, ``programasweights.com``). A path on any
other host is a :class:`~wgtpm.NotFoundError`: only a registry named in
``WGTPROXY`` can serve it.

Each source is made on first use, reading its environment then
(``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``HF_TOKEN``, ``HF_ENDPOINT``,
``PAW_API_KEY``, ``PAW_API_URL``); ``huggingface_hub`` is imported only when
a Hugging Face module is used.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import module as _module
from .._errors import NotFoundError
from ._base import FileRequest, RevInfo, Source
from ._hosted import MemoryMetaCache, MetaCache
from .hosts import HOSTS, host_of

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ..index import IndexEntry

__all__ = ["DirectSource", "read_optional"]


def read_optional(src: Source, method: str, path: str, version: str, what: str) -> bytes:
    """``src.METHOD(path, version)`` for one of the Source protocol's optional reads
    (``signature``, ``attestation``); :class:`NotFoundError` saying ``src`` keeps no
    ``what`` when it has no such method."""
    read = getattr(src, method, None)
    if read is None:
        raise NotFoundError(path, version, f"{src.name} keeps no {what}")
    data: bytes = read(path, version)
    return data


class DirectSource:
    """Dispatches each module path to the source of its host.

    ``http`` is shared by every host's source; ``meta_cache`` keeps the
    ETags of listings (in memory when omitted; the caller passes the module
    cache's store, :class:`~wgtpm.sources._hosted.CacheMetaStore`).
    """

    name = "direct"

    def __init__(self, http: HttpClient, *, meta_cache: MetaCache | None = None) -> None:
        self.http = http
        self.meta_cache: MetaCache = meta_cache if meta_cache is not None else MemoryMetaCache()
        self._lock = threading.Lock()
        self._sources: dict[str, Source] = {}

    def source_for(self, path: str) -> Source:
        """The source for ``path``; raises :class:`NotFoundError` for hosts with none."""
        host = host_of(path)
        if host is None:
            name = path.split("/", 1)[0]
            known = ", ".join(HOSTS)
            raise NotFoundError(
                path,
                None,
                f"no direct source for host {name} (only {known} are fetched directly): "
                "set WGTPROXY to a wgtpm registry",
            )
        with self._lock:
            src = self._sources.get(host.name)
            if src is None:
                src = self._sources[host.name] = host.make(self.http, self.meta_cache)
        return src

    # ---- the Source protocol: normalise, then delegate ---------------------

    def versions(self, path: str) -> list[str]:
        path = _module.normalise(path)
        return self.source_for(path).versions(path)

    def info(self, path: str, query: str) -> RevInfo:
        path = _module.normalise(path)
        return self.source_for(path).info(path, query)

    def mod(self, path: str, version: str) -> bytes:
        path = _module.normalise(path)
        return self.source_for(path).mod(path, version)

    def index(self, path: str, version: str) -> bytes:
        path = _module.normalise(path)
        return self.source_for(path).index(path, version)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        path = _module.normalise(path)
        return self.source_for(path).file(path, version, name)

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        path = _module.normalise(path)
        return self.source_for(path).known_files(path, version)

    def attestation(self, path: str, version: str) -> bytes:
        """The release's SLSA statement from its host (the GitHub asset or Hugging Face file
        ``wgt.slsa.json``); :class:`NotFoundError` when it has none or the host keeps none."""
        path = _module.normalise(path)
        return read_optional(self.source_for(path), "attestation", path, version, "attestations")

    def signature(self, path: str, version: str) -> bytes:
        """The release's signature from its host (:mod:`wgtpm.trust`); :class:`NotFoundError`
        when it has none or the host keeps no signatures."""
        path = _module.normalise(path)
        return read_optional(self.source_for(path), "signature", path, version, "signatures")
