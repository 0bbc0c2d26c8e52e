"""The one table from a module path's host to the source that serves it directly.

======================  ==============================  =====================================
host                    module                          environment
======================  ==============================  =====================================
``github.com``          :mod:`wgtpm.sources.github`     ``GITHUB_TOKEN``, ``GITHUB_API_URL``
``hf.co``               :mod:`wgtpm.sources.huggingface` ``HF_TOKEN``, ``HF_ENDPOINT``
``programasweights.com``:mod:`wgtpm.sources.pawhub`     ``PAW_API_KEY``, ``PAW_API_URL``
======================  ==============================  =====================================

(``huggingface.co/...`` paths are normalised to ``hf.co`` by
:func:`wgtpm.module.normalise` before they get here.)

Each module named here defines ``from_host(http, meta) -> Source``: it is
handed the one HTTP client and the metadata store (:class:`MetaCache`) and
reads its own environment. The module is imported only when a path on its
host is used (``huggingface_hub`` is heavy). A new host costs its module and
one line of :data:`HOSTS`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import module as _module

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ._base import Source
    from ._hosted import MetaCache

__all__ = ["HOSTS", "Host", "host_of", "match_private"]


@dataclass(frozen=True)
class Host:
    """A host whose modules a source serves directly: ``module`` defines ``from_host``."""

    name: str
    module: str
    what: str
    #: Whether the host treats OWNER/REPO case-insensitively (``WGTPRIVATE`` then matches so too).
    case_insensitive: bool = False

    def make(self, http: HttpClient, meta: MetaCache) -> Source:
        """The source for this host (imports its module now)."""
        mod = importlib.import_module(self.module)
        src: Source = mod.from_host(http, meta)
        return src


#: host -> the source that serves it.
HOSTS: dict[str, Host] = {
    h.name: h
    for h in (
        Host("github.com", "wgtpm.sources.github", "GitHub releases", case_insensitive=True),
        Host("hf.co", "wgtpm.sources.huggingface", "Hugging Face model repositories", True),
        Host("programasweights.com", "wgtpm.sources.pawhub", "the PAW program hub"),
    )
}


def host_of(path: str) -> Host | None:
    """The :class:`Host` for module ``path`` (after normalisation), or ``None``."""
    return HOSTS.get(_module.normalise(path).split("/", 1)[0])


def match_private(patterns: str, path: str) -> bool:
    """Whether ``path`` matches a ``WGTPRIVATE`` pattern, ignoring case on hosts that do.

    ``github.com/Acme`` covers ``github.com/acme/xor``: GitHub and Hugging
    Face resolve owner and repository names whatever their case, so a
    case-sensitive match would send a private module to a proxy.
    """
    host = host_of(path)
    if host is not None and host.case_insensitive:
        pats = ",".join(_module.normalise(p.strip()) for p in patterns.split(","))
        return _module.match_patterns(pats.lower(), _module.normalise(path).lower())
    return _module.match_patterns(patterns, path)
