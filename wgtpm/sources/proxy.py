"""The proxy protocol over http(s) and ``file://`` (docs/design.md section 7).

A registry, a static web server, a directory and wgtpm's own download cache
all answer the same plain GETs, ``$module`` escaped (capitals as ``!`` +
lower case) and ``$version`` a full version::

    $base/$module/@v/list                 versions, one per line
    $base/$module/@v/$version.info        {"Version", "Time", "Commit"}
    $base/$module/@v/$version.mod         wgt.mod
    $base/$module/@v/$version.index.json  the index (section 5)
    $base/$module/@v/$version/$path       a file of the release (Range requests allowed)
    $base/$module/@latest                 the .info of the latest version
    $base/$module/@v/$version.slsa.json   the SLSA provenance statement, if any (not in h1)
    $base/$module/@v/$version.sig         the model-signing bundle signing the index, if any
    $base/$module/@v/$version.tensors.json  tensor tables a registry computed and logged, if any

A query that is not a version (a branch, a commit) may be asked for as
``$base/$module/@v/$query.info``; a proxy that can resolve it answers with
the canonical version.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from .._errors import FetchError, NotFoundError, UsageError, WgtpmError
from ..httpclient import redact_url
from ..module import escape_path, escape_version
from ..query import check_query
from ._base import FileRequest, RevInfo

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ..index import IndexEntry

__all__ = ["ProxySource", "parse_info"]

# Characters left as they are in URLs: escaped module paths use "!" and the protocol "@v".
_SAFE = "/!@~+"


def parse_info(data: bytes, path: str, query: str) -> RevInfo:
    """Parse a ``.info`` document; raises :class:`FetchError` when it is malformed."""
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise TypeError("not a JSON object")
        v = doc["Version"]
        if not isinstance(v, str):
            raise TypeError("Version is not a string")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise FetchError(path, query, f"malformed .info from the proxy: {exc}") from exc
    t, c = doc.get("Time"), doc.get("Commit")
    return RevInfo(v, t if isinstance(t, str) else None, c if isinstance(c, str) else None)


class ProxySource:
    """A proxy-protocol server at ``base`` (``https://...`` or ``file:///dir``).

    ``http`` is the HTTP client (unused for ``file://``). Every document is
    read whole, so each is capped at ``limit`` bytes
    (:data:`~wgtpm.httpclient.MAX_METADATA` unless given), over http and on disk alike.
    """

    def __init__(self, base: str, http: HttpClient | None, *, limit: int | None = None) -> None:
        from ..httpclient import MAX_METADATA

        self.base = base.rstrip("/")
        self.name = redact_url(self.base)
        self.http = http
        self.limit = MAX_METADATA if limit is None else limit
        self._local = (
            Path(unquote(urlsplit(self.base).path)) if self.base.startswith("file:") else None
        )

    def _url(self, path: str, rest: str) -> str:
        return f"{self.base}/{quote(escape_path(path), safe=_SAFE)}/{rest}"

    def _local_file(self, path: str, version: str | None, rest: str) -> Path:
        """The file of ``rest`` in the tree; it must not lie outside it, also through a symlink."""
        assert self._local is not None
        f = self._local / escape_path(path) / rest
        try:
            real, root = f.resolve(), self._local.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise FetchError(path, version, f"{f}: {exc}") from exc
        if not real.is_relative_to(root):
            raise FetchError(
                path,
                version,
                f"{f} lies outside the proxy tree {self._local} (a '..' or a symlink "
                "out of it); refusing to read it",
            )
        return f

    def _get(self, path: str, version: str | None, rest: str) -> bytes:
        if self._local is not None:
            f = self._local_file(path, version, rest)
            try:
                with open(f, "rb") as fin:
                    data = fin.read(self.limit + 1)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
                raise NotFoundError(path, version, f"not found in {self.name}") from exc
            except OSError as exc:
                raise FetchError(path, version, f"reading {f}: {exc}") from exc
            if len(data) > self.limit:
                raise FetchError(
                    path, version, f"{f} is larger than the {self.limit} bytes allowed for it"
                )
            return data
        from ..httpclient import HTTPStatusError

        if self.http is None:
            raise FetchError(path, version, f"{self.name}: no HTTP client was given to this source")
        url = self._url(path, rest)
        try:
            return self.http.get_bytes(url, limit=self.limit)
        except HTTPStatusError as exc:
            if exc.status in (404, 410):
                raise NotFoundError(
                    path, version, f"not found at {self.name} (HTTP {exc.status})"
                ) from exc
            raise FetchError(path, version, f"{exc}") from exc
        except WgtpmError as exc:
            raise FetchError(path, version, f"{exc}") from exc

    def versions(self, path: str) -> list[str]:
        data = self._get(path, None, "@v/list")
        return [v for v in data.decode("utf-8", "replace").split() if v]

    def info(self, path: str, query: str) -> RevInfo:
        why = check_query(query)
        if why is not None:
            raise UsageError(f"{path}@{query[:80]}: invalid version query: {why}")
        if query == "latest":
            return parse_info(self._get(path, None, "@latest"), path, query)
        return parse_info(
            self._get(path, query, f"@v/{quote(escape_version(query), safe=_SAFE)}.info"),
            path,
            query,
        )

    def mod(self, path: str, version: str) -> bytes:
        return self._get(path, version, f"@v/{escape_version(version)}.mod")

    def index(self, path: str, version: str) -> bytes:
        return self._get(path, version, f"@v/{escape_version(version)}.index.json")

    def attestation(self, path: str, version: str) -> bytes:
        """The SLSA provenance statement served beside the index (``@v/$version.slsa.json``,
        :mod:`wgtpm.publish._slsa`); :class:`NotFoundError` when there is none. Not covered
        by h1: the caller checks what it says of the release."""
        return self._get(path, version, f"@v/{escape_version(version)}.slsa.json")

    def signature(self, path: str, version: str) -> bytes:
        """The release's signature served beside the index (``@v/$version.sig``, a
        model-signing bundle, :mod:`wgtpm.trust`); :class:`NotFoundError` when there is
        none. The caller checks it against the index and the main module's trust lines."""
        return self._get(path, version, f"@v/{escape_version(version)}.sig")

    def tables(self, path: str, version: str) -> bytes:
        """The tensor tables a registry computed for a release that locks none, and logged
        in its checksum database (``@v/$version.tensors.json``); :class:`NotFoundError`
        when there are none. The caller checks them against the log
        (:func:`wgtpm.tensors.logged_tables`)."""
        return self._get(path, version, f"@v/{escape_version(version)}.tensors.json")

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        return ()  # the index is served whole, as fast as anything about it

    def file(self, path: str, version: str, name: str) -> FileRequest:
        rest = f"@v/{escape_version(version)}/{name}"
        if self._local is not None:
            return FileRequest(self._local_file(path, version, rest).as_uri())
        return FileRequest(self._url(path, quote(rest, safe=_SAFE)))
