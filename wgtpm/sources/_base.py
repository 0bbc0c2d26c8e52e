"""The one interface every source of modules implements.

A source answers the questions of the proxy protocol (docs/design.md section 7):
which versions a module has, what a query (a version, ``latest``, a branch or
a commit) resolves to, the wgt.mod and the index of a version, and where each
file of the index can be downloaded. Sources never verify hashes and never
write to the cache: :mod:`wgtpm.modfetch` does both, for every source alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from ..index import IndexEntry

__all__ = ["FileRequest", "RevInfo", "Source"]


class RevInfo(NamedTuple):
    """What a query resolved to: the ``$version.info`` of the proxy protocol.

    ``version`` is canonical (a release tag or a pseudo-version); ``time`` is
    RFC 3339 UTC (``2026-11-29T12:00:00Z``) or ``None``; ``commit`` is the
    source revision (a git commit, a PAW program ID) when the source knows it.
    """

    version: str
    time: str | None = None
    commit: str | None = None

    def to_json(self) -> dict[str, str]:
        out = {"Version": self.version}
        if self.time:
            out["Time"] = self.time
        if self.commit:
            out["Commit"] = self.commit
        return out


class FileRequest(NamedTuple):
    """Where to GET one file of a release.

    ``url`` is ``http(s)://`` or ``file://``. ``headers`` are sent to the
    origin of ``url`` only: the downloader drops them (``Authorization``,
    ``X-API-Key``, cookies) on a redirect to any other origin. ``body``, when
    set, is the file's bytes, which the source already downloaded (Hugging Face
    downloads a repository's small files to hash them for the index it
    synthesises): the downloader verifies them against the index like any
    download instead of fetching ``url``.
    """

    url: str
    headers: Mapping[str, str] = MappingProxyType({})
    body: bytes | None = None

    def __repr__(self) -> str:
        body = "None" if self.body is None else f"<{len(self.body)} bytes>"
        return f"FileRequest(url={self.url!r}, headers={dict(self.headers)!r}, body={body})"


class Source(Protocol):
    """A place modules come from (a proxy, a file tree, GitHub, Hugging Face, the PAW hub).

    Errors: :class:`~wgtpm.NotFoundError` when the module or version does not
    exist here (a proxy list falls through to the next entry on it),
    :class:`~wgtpm.FetchError` for anything else that went wrong.

    Optional, outside the protocol (found with ``getattr``): ``refresh(path, version,
    name, stale) -> FileRequest | None``, the request of a file again after the server
    answered ``401`` to ``stale`` mid-download (a registry token that expired: the OCI
    sources forget it and fetch another). ``None``: no fresh one (the downloader retries
    as after any other failure). The downloader (``modfetch._transfer``) asks once per
    ``401``; a second ``401`` in a row ends the download.
    """

    @property
    def name(self) -> str:
        """Shown in messages: a URL, or "direct"."""
        ...

    def versions(self, path: str) -> list[str]:
        """The release and pre-release versions of ``path`` (``@v/list``), in any order."""
        ...

    def info(self, path: str, query: str) -> RevInfo:
        """Resolve ``query``: a full version, ``latest``, a branch, a tag or a commit."""
        ...

    def mod(self, path: str, version: str) -> bytes:
        """The wgt.mod of ``path@version`` (``module PATH\\n`` when the release has none).

        Also how :class:`~wgtpm.sources.chain.ChainSource` learns which source serves a
        version whose index it did not ask for (it came from the cache), before
        :meth:`file`. So it stays cheap: it never builds or downloads the index, and
        downloads no file but the release's own wgt.mod; and :meth:`file` works after it
        alone, without :meth:`index`.
        """
        ...

    def index(self, path: str, version: str) -> bytes:
        """The raw ``wgt.index.json`` of ``path@version`` (synthesised when the release has none)."""
        ...

    def file(self, path: str, version: str, name: str) -> FileRequest:
        """Where the file ``name`` (a logical path of the index) of ``path@version`` lies."""
        ...

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        """Entries of the index of ``path@version`` known before :meth:`index` is done.

        For a source whose index takes long to make (Hugging Face synthesises it by
        downloading and hashing a repository's small files, while the API already
        states the size and sha256 of every LFS file): the fetcher starts downloading
        these files while :meth:`index` runs. Each entry given is listed by the index
        exactly (path, size, sha256). It is cheap: no call but those :meth:`mod` makes,
        and ``()`` where the source has nothing to tell early (most have not).
        """
        ...
