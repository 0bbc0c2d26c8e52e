"""The verified metadata of module versions: version lists, wgt.mod files and indexes,
each checked against wgt.sum (and an index against the trust lines) before it is
used or cached."""

from __future__ import annotations

import contextlib
import hashlib
import threading

from .. import dirhash
from .. import index as _index
from .._errors import CacheError, ChecksumMismatchError, NotFoundError, VerifyError
from ..cache import Cache
from ..sources import Source
from ..sumfile import MOD_SUFFIX
from ._options import SumChecker, TrustHook

__all__ = ["Metadata"]


class Metadata:
    """The verified metadata of the versions of one source (the fetcher's)."""

    def __init__(
        self,
        cache: Cache,
        source: Source,
        sums: SumChecker,
        trust: TrustHook | None,
        list_ttl: float,
    ) -> None:
        self.cache = cache
        self.source = source
        self.sums = sums
        self.trust = trust
        self._list_ttl = list_ttl  # seconds a version list is trusted
        self._indexes: dict[tuple[str, str], _index.ReleaseIndex] = {}  # verified ones
        self._indexes_lock = threading.Lock()

    def versions(self, path: str) -> list[str]:
        key = "list/" + hashlib.sha256(path.encode()).hexdigest()
        cached = self.cache.read_ttl(key, self._list_ttl)
        if isinstance(cached, list):
            return [str(v) for v in cached]
        vs = self.source.versions(path)
        with contextlib.suppress(CacheError):
            self.cache.write_ttl(key, vs)
        return vs

    def _check(
        self, path: str, version: str, h1: str, *, record: bool = True, cached: bool
    ) -> None:
        """``sums.check``; a mismatch of bytes read from the cache says they were cached."""
        try:
            self.sums.check(path, version, h1, record)
        except ChecksumMismatchError as exc:
            if not cached:
                raise
            raise ChecksumMismatchError(
                exc.path, exc.version or version, exc.what, exc.want, exc.got, got_from="cached"
            ) from exc

    def mod(self, path: str, version: str, record: bool = True) -> bytes:
        """The verified wgt.mod of ``path@version``."""
        data = self.cache.read_meta(path, version, "mod")
        fresh = data is None
        if data is None:
            data = self.source.mod(path, version)
        h1 = dirhash.hash1_bytes({"wgt.mod": data})
        self._check(path, version + MOD_SUFFIX, h1, record=record, cached=not fresh)
        if fresh:
            with self.cache.using():
                self.cache.write_meta(path, version, "mod", data)
        return data

    def index(self, path: str, version: str) -> _index.ReleaseIndex:
        """The verified index of ``path@version`` (kept once verified: a command asks for
        it again, and a large one costs much to parse)."""
        with self._indexes_lock:
            known = self._indexes.get((path, version))
        if known is not None:
            return known
        data = self.cache.read_meta(path, version, "index.json")
        fresh = data is None
        if data is None:
            data = self.source.index(path, version)
        idx = _index.parse(data, path, version)
        sig = self._signature(path, version, idx) if self.trust is not None else None
        self._check(path, version, idx.h1(), cached=not fresh)
        mod_entry = idx.entry("wgt.mod")
        mod = self.mod(path, version)
        if mod_entry is not None and hashlib.sha256(mod).hexdigest() != mod_entry.sha256:
            raise VerifyError(
                path,
                version,
                "the wgt.mod served for this version is not the one its index lists; the source is inconsistent",
            )
        if sig is not None:  # fetched now: kept for 'wgtpm verify' (and the next get)
            with self.cache.using():
                self.cache.write_meta(path, version, "sig", sig)
        if fresh:
            with self.cache.using():
                self.cache.write_meta(path, version, "index.json", data)
        with self._indexes_lock:
            self._indexes[(path, version)] = idx
        return idx

    def known_index(self, path: str, version: str) -> _index.ReleaseIndex | None:
        """The index of ``path@version`` verified already, or the cached one checked
        against wgt.sum (a changed or missing line is caught here too); ``None`` when the
        cache has none."""
        with self._indexes_lock:
            idx = self._indexes.get((path, version))
        if idx is None:
            raw = self.cache.read_meta(path, version, "index.json")
            if raw is None:
                return None
            idx = _index.parse(raw, path, version)
            self._check(path, version, idx.h1(), cached=True)
        return idx

    def _signature(self, path: str, version: str, idx: _index.ReleaseIndex) -> bytes | None:
        """Run the trust hook on ``idx`` with the version's signature (the cached one, else
        the source's; ``None`` when there is none) before wgt.sum hears of it; returns the
        signature to keep beside the cached index when it was fetched now (``None`` when
        it was cached already, or none is needed). The hook raises to refuse."""
        assert self.trust is not None
        if not self.trust.covers(path):
            return None
        cached = self.cache.read_meta(path, version, "sig")
        sig = cached
        if sig is None:
            read = getattr(self.source, "signature", None)
            try:
                sig = read(path, version) if read is not None else None
            except NotFoundError:
                sig = None
        self.trust.check(path, version, {e.path: e.sha256 for e in idx.files}, sig)
        return sig if cached is None else None
