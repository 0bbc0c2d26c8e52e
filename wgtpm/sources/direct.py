"""``WGTPROXY=direct``: each module from the host its path names.

=====================================  ==========================================
module path                            source
=====================================  ==========================================
``github.com/OWNER/REPO[/DIR]``        :class:`~wgtpm.sources.github.GitHubSource`
``hf.co/OWNER/REPO``                   :class:`~wgtpm.sources.huggingface.HuggingFaceSource`
(``huggingface.co/...`` normalised)
``programasweights.com/ID``,           :class:`~wgtpm.sources.pawhub.PawHubSource`
``programasweights.com/OWNER/NAME``
anything else                          :class:`~wgtpm.NotFoundError`: only a registry
                                       named in ``WGTPROXY`` can serve it
=====================================  ==========================================

Each source is made on first use, reading its environment then
(``GITHUB_TOKEN``, ``GITHUB_API_URL``, ``HF_TOKEN``, ``HF_ENDPOINT``,
``PAW_API_KEY``, ``PAW_API_URL``); ``huggingface_hub`` is imported only when
a Hugging Face module is used.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .. import module as _module
from .._errors import NotFoundError
from ._base import FileRequest, RevInfo, Source
from ._remote import MetaCache

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = ["DirectSource"]


class DirectSource:
    """Dispatches each module path to GitHub, Hugging Face or the PAW hub.

    ``http`` is shared by the three (one is made when omitted);
    ``meta_cache`` keeps the ETags of GitHub listings (in memory when omitted).
    """

    name = "direct"

    def __init__(
        self, http: HttpClient | None = None, *, meta_cache: MetaCache | None = None
    ) -> None:
        self._http = http
        self.meta_cache = meta_cache
        self._lock = threading.Lock()
        self._sources: dict[str, Source] = {}

    def source_for(self, path: str) -> Source:
        """The source for ``path``; raises :class:`NotFoundError` for hosts with none."""
        kind = _module.source_kind(path)
        if kind == "other":
            host = path.split("/", 1)[0]
            raise NotFoundError(
                path,
                None,
                f"no direct source for host {host} (only github.com, hf.co and "
                "programasweights.com are fetched directly): set WGTPROXY to a wgtpm registry",
            )
        with self._lock:
            src = self._sources.get(kind)
            if src is None:
                src = self._sources[kind] = self._make(kind)
        return src

    def _make(self, kind: str) -> Source:
        http = self._client()
        if kind == "github":
            from .github import GitHubSource

            return GitHubSource(http, meta_cache=self.meta_cache)
        if kind == "huggingface":
            from .huggingface import HuggingFaceSource

            return HuggingFaceSource(http)
        from .pawhub import PawHubSource

        return PawHubSource(http)

    def _client(self) -> HttpClient:
        if self._http is None:
            from ..httpclient import HttpClient

            self._http = HttpClient()
        return self._http

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
