"""The project's :class:`~wgtpm.modfetch.Fetcher`: one source chain, one HTTP client, one cache.

:func:`open_fetcher` wires a fetcher to the ``WGTPROXY`` chain (unless the
options name a source), to the project's sum ledger and to its reporter.
Nothing is built until it is used: a no-op ``get`` that finds every file in
the cache never imports httpx or builds the chain. The sources and the
downloads share one HTTP client, so connections are reused.

When ``WGTSUMDB`` names a checksum database, the ledger's new lines are
checked against it (:func:`wgtpm.sumdb.remote.check_from_env`) through the
same HTTP client; under ``-mod=readonly`` nothing is recorded, so nothing is
looked up.

The fetcher is opened for a block (``with open_fetcher(...) as fetcher:``)
and its HTTP client, if one was made, is closed when the block ends, however
it ends (an error, Ctrl-C): a client left open keeps its connections and its
watch thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..modfetch import Fetcher, FetchOptions, SumChecker, TrustHook
from .sums import SumLedger

if TYPE_CHECKING:
    from ..cache import Cache
    from ..httpclient import HttpClient
    from ..index import IndexEntry
    from ..sources import FileRequest, RevInfo, Source
    from .options import Options

__all__ = ["open_fetcher"]

#: The checksum database setting (``wgtpm.sumdb.remote.ENV``; a test checks they agree).
SUMDB_ENV = "WGTSUMDB"


@contextmanager
def open_fetcher(
    opts: Options, cache: Cache, sums: SumChecker, trust: TrustHook | None = None
) -> Iterator[Fetcher]:
    """A fetcher into ``cache`` from ``opts.source`` (default ``WGTPROXY``), checking ``sums``
    (and, where the main module's trust lines name a module, its signature: ``trust``),
    for the block; its HTTP client is closed when the block ends."""
    http = _SharedHttp()
    try:
        # Unset or blank, WGTSUMDB is off: the checks' module is not even imported then.
        if (
            isinstance(sums, SumLedger)
            and not opts.readonly
            and os.environ.get(SUMDB_ENV, "").strip()
        ):
            from ..sumdb.remote import check_from_env

            sums.verify_new_lines(check_from_env(cache, http))
        yield Fetcher(
            cache,
            opts.source or _LazySource(http, cache),
            sums,
            http=http,
            opts=FetchOptions(jobs=opts.jobs),
            progress=opts.reporter,
            trust=trust,
        )
    finally:
        http.close()


class _SharedHttp:
    """Makes the one HTTP client on first call, from whichever thread comes first;
    :meth:`close` closes it (a call after that is a bug: it raises)."""

    def __init__(self) -> None:
        from ..httpclient import HttpOptions

        # read now, so that a bad WGTPM_HTTP_* setting is an error also when no request
        # is made (a file:// proxy, everything cached), as it is when one is
        self._opts = HttpOptions()
        self._client: HttpClient | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __call__(self) -> HttpClient:
        with self._lock:
            if self._closed:
                raise RuntimeError("the fetcher's block has ended: its HTTP client is closed")
            if self._client is None:
                from ..httpclient import HttpClient

                self._client = HttpClient(self._opts)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None:
            client.close()


class _LazySource:
    """The WGTPROXY chain, built on first use (a no-op ``get`` never needs it)."""

    def __init__(self, http: _SharedHttp, cache: Cache) -> None:
        self._http = http
        self._cache = cache
        self._src: Source | None = None
        self._lock = threading.Lock()

    def _get(self) -> Source:
        with self._lock:
            if self._src is None:
                from ..sources.chain import from_env

                self._src = from_env(self._http, cache=self._cache)  # the client when first needed
            return self._src

    @property
    def name(self) -> str:
        return self._get().name

    def versions(self, path: str) -> list[str]:
        return self._get().versions(path)

    def info(self, path: str, query: str) -> RevInfo:
        return self._get().info(path, query)

    def mod(self, path: str, version: str) -> bytes:
        return self._get().mod(path, version)

    def index(self, path: str, version: str) -> bytes:
        return self._get().index(path, version)

    def file(self, path: str, version: str, name: str) -> FileRequest:
        return self._get().file(path, version, name)

    def refresh(self, path: str, version: str, name: str, stale: FileRequest) -> FileRequest | None:
        again = getattr(self._get(), "refresh", None)
        return again(path, version, name, stale) if again is not None else None

    def known_files(self, path: str, version: str) -> Sequence[IndexEntry]:
        return self._get().known_files(path, version)

    def signature(self, path: str, version: str) -> bytes | None:
        read = getattr(self._get(), "signature", None)
        return read(path, version) if read is not None else None

    def tables(self, path: str, version: str) -> bytes | None:
        read = getattr(self._get(), "tables", None)
        return read(path, version) if read is not None else None
