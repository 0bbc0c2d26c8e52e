"""The caching proxy: modules this registry does not host, fetched from an upstream.

``wgtpm registry serve --upstream LIST`` (``WGTPM_REGISTRY_UPSTREAM``; off
unless given) takes a ``WGTPROXY`` list (``direct``, proxy URLs, ``,`` and
``|``), read by the client's own :func:`wgtpm.sources.chain.from_env`:
``direct`` reaches GitHub, Hugging Face and the PAW hub with the server's
``GITHUB_TOKEN``, ``HF_TOKEN``, ``PAW_API_KEY`` and their ``*_URL`` settings.

A module is proxied when it is not hosted: no token's prefix reserves it and
it was not published here (:meth:`registry.service.Registry.proxied`). A
prefix reserves every spelling of its paths that the upstream would resolve
to the same repository (:func:`registry.tokens.reserves`): on GitHub and
Hugging Face, which ignore the case of owner and repository names, a token
for ``github.com/acme`` keeps ``github.com/Acme/secret`` from being fetched
with the server's ``GITHUB_TOKEN``, served and logged. ``huggingface.co/...``
is refused (410, naming the ``hf.co/...`` path): one repository, one name.
For a proxied module

- ``@v/list``, ``@latest`` and the ``.info`` of a version not cached yet
  are asked of the upstream and kept :data:`META_TTL` seconds in memory
  (its answers and its 404s, never its failures);
  when the upstream fails or no longer has the module, the list and
  ``@latest`` fall back to the cached versions;
- the version's signature and SLSA statement (``.sig``, ``.slsa.json``) are
  fetched with it and kept beside it (:meth:`CachingProxy.beside`);
- the ``.mod``, ``.index.json`` or a file of a version not cached yet makes
  :meth:`CachingProxy.fill` fetch the version once, with
  :class:`wgtpm.modfetch.Fetcher` into a temporary cache under the spool
  folder (every file checked against the index's size and sha256 while it
  streams), copy the verified files into the blob store (which checks the
  sha256 again), and commit the version through
  :meth:`~registry.metadata.MetadataStore.commit_version`, which logs it in
  the checksum log as it does a published one. Only then is it served.
  An index wgtpm synthesised (a Hugging Face repository without a
  ``wgt.mod``) lists only the repository's files: its h1 covers exactly those,
  and the version's ``wgt.mod`` is stored beside them (its own ``/wgt.mod`` line).
  Files the blob store holds already (fetched on demand for the Hub API, or
  the same bytes in another version) are not fetched again, and a version the
  Hub API logged while pending is filled from its recorded index, not the
  upstream's (:meth:`CachingProxy.pending_index`).

The Hub API (:mod:`registry.hfmirror`) does not wait for a whole version: it
fetches a version's files one at a time as they are asked for
(:mod:`registry.ondemand`, with :meth:`CachingProxy.fetch_index`,
:meth:`~CachingProxy.store` and :meth:`~CachingProxy.commit`).

One fetch per version: a lock per version in the process, and across
replicas a reservation row in the database
(:meth:`~registry.metadata.MetadataStore.reserve_version`); the others
wait for the version to be committed (:data:`FILL_WAIT` seconds at most).
The filler renews its reservation every ``FILL_STALE / 5`` seconds; one not
renewed for :data:`FILL_STALE` seconds (its process died) is taken over.

Errors: the upstream's 404/410 is a 404; any other failure, or bytes that do
not match the index, is a 502 (:class:`~registry._errors.UpstreamError`),
nothing is kept or cached, and the next request tries again. Messages never
carry the upstream credentials: the server's tokens are blanked out of them.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from wgtpm import dirhash
from wgtpm._errors import NotFoundError as WgtNotFound
from wgtpm._errors import VerifyError, WgtpmError
from wgtpm.index import IndexEntry, ReleaseIndex
from wgtpm.sources import RevInfo, Source

from ._errors import BadRequestError, NotFoundError, RegistryError, StoreError, UpstreamError
from ._keylock import KeyedLocks
from .metadata import FileRecord, NewVersion, PendingRecord, VersionRecord, now
from .service import MOD_FILE

if TYPE_CHECKING:
    from wgtpm.cache import Cache
    from wgtpm.httpclient import HttpClient
    from wgtpm.modfetch import Fetcher, FetchOptions

    from .service import Registry

__all__ = ["FILL_STALE", "FILL_WAIT", "META_TTL", "CachingProxy", "Fetched", "open_proxy"]

T = TypeVar("T")

META_TTL = 60.0  # seconds an upstream list or .info is reused
FILL_WAIT = 300.0  # seconds a request waits for another process filling the same version
FILL_STALE = 900  # seconds after which a reservation is presumed dead and taken over
_SECRET_VARS = ("GITHUB_TOKEN", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "PAW_API_KEY")
_MAX_MESSAGE = 400
_CHUNK = 1 << 20

log = logging.getLogger("registry.proxy")


@dataclass(frozen=True)
class Fetched:
    """What the upstream gave for a version before its files: the checked index, its bytes,
    and the version's wgt.mod."""

    index: ReleaseIndex
    raw: bytes
    mod: bytes
    time: str | None = None  # the version's time and commit when the index lacks them
    commit: str | None = None


class _Recorded:
    """The :class:`~wgtpm.modfetch.SumChecker` of a fill: the registry is where hashes are
    first recorded (in its checksum log, at commit), so every h1 is accepted here."""

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        return None


class CachingProxy:
    """The upstream side of the registry: cached metadata and verified fills."""

    def __init__(
        self,
        source: Source,
        spool: Path,
        *,
        http: HttpClient | None = None,
        ttl: float = META_TTL,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.source = source
        self.spool = spool
        self.ttl = ttl
        _sweep(spool)
        self._http = http
        self._secrets = tuple(s for s in secrets if len(s) >= 4)
        self._lock = threading.Lock()
        self._meta: dict[tuple[str, str, str], tuple[float, object]] = {}
        self._fills: KeyedLocks[tuple[str, str]] = KeyedLocks()  # one fill per version

    @property
    def name(self) -> str:
        return self.source.name

    # -- errors

    def _message(self, exc: Exception) -> str:
        msg = str(exc)
        for s in self._secrets:
            msg = msg.replace(s, "***")
        return msg if len(msg) <= _MAX_MESSAGE else msg[:_MAX_MESSAGE] + "…"

    def ask(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` with wgtpm's errors translated: 404 stays 404, the rest is a 502."""
        try:
            return fn()
        except WgtNotFound as exc:
            raise NotFoundError(f"upstream {self.name}: {self._message(exc)}") from exc
        except VerifyError as exc:
            raise UpstreamError(
                f"upstream {self.name} served bad bytes for {what}; nothing was kept: "
                f"{self._message(exc)}"
            ) from exc
        except WgtpmError as exc:
            raise UpstreamError(
                f"upstream {self.name} failed for {what}: {self._message(exc)}"
            ) from exc

    # -- metadata, cached in memory

    def _cached(self, kind: str, module: str, query: str, fn: Callable[[], T]) -> T:
        key = (kind, module, query)
        t = time.monotonic()
        with self._lock:
            hit = self._meta.get(key)
        if hit is not None and t - hit[0] < self.ttl:
            if isinstance(hit[1], NotFoundError):
                raise NotFoundError(str(hit[1]))
            return hit[1]  # type: ignore[return-value]
        value: object
        try:
            value = self.ask(f"{module} {kind} {query}".strip(), fn)
        except NotFoundError as exc:  # a miss is kept as long (failures are not kept at all)
            value = exc
        with self._lock:
            if len(self._meta) > 10_000:
                self._meta.clear()
            self._meta[key] = (t, value)
        if isinstance(value, NotFoundError):
            raise value
        return value

    def versions(self, module: str) -> list[str]:
        """The upstream's ``@v/list`` of ``module``."""
        return self._cached("list", module, "", lambda: list(self.source.versions(module)))

    def info(self, module: str, query: str) -> RevInfo:
        """What the upstream resolves ``query`` (a version, ``latest``, a branch) to."""
        return self._cached("info", module, query, lambda: self.source.info(module, query))

    # -- fills

    @staticmethod
    def admit(reg: Registry, module: str) -> None:
        """Raise :class:`NotFoundError` unless ``module`` is proxied
        (:meth:`~registry.service.Registry.proxied`): checked again at the door of every
        fetch that uses the server's credentials and ends in the checksum log, so that no
        caller can fill a module of the hosted namespace, in any spelling of it."""
        if not reg.proxied(module):
            raise NotFoundError(
                f"{module}: no such module here (a private module needs a read token)"
            )

    def fill(self, reg: Registry, module: str, version: str) -> VersionRecord:
        """``module@version`` committed here, fetched from the upstream first if need be."""
        self.admit(reg, module)
        with self._fills.hold((module, version)):
            deadline = time.monotonic() + FILL_WAIT
            while True:
                have = reg.meta.get_version(module, version)
                if have is not None:
                    return have
                stale = datetime.now(timezone.utc) - timedelta(seconds=FILL_STALE)
                state = reg.meta.reserve_version(
                    module, version, stale.strftime("%Y-%m-%dT%H:%M:%SZ")
                )
                if state == "reserved":
                    break
                if state == "busy" and time.monotonic() > deadline:
                    raise UpstreamError(
                        f"{module}@{version} is still being fetched by another registry "
                        "process; try again later"
                    )
                if state == "busy":
                    time.sleep(0.1)
            done = threading.Event()
            beat = threading.Thread(
                target=self._heartbeat, args=(reg, module, version, done), daemon=True
            )
            beat.start()
            try:
                return self._fetch(reg, module, version)
            finally:
                done.set()
                beat.join()
                reg.meta.release_version(module, version)  # a no-op once committed

    @staticmethod
    def _heartbeat(reg: Registry, module: str, version: str, done: threading.Event) -> None:
        """Renew the reservation while the fill runs, so a long one is not taken over."""
        while not done.wait(FILL_STALE / 5):
            try:
                reg.meta.renew_reservation(module, version)
            except RegistryError as exc:  # the fill goes on; at worst another one starts
                log.warning("renewing the reservation of %s@%s: %s", module, version, exc)

    def fetcher(self, cache: Cache, opts: FetchOptions | None = None) -> Fetcher:
        """A :class:`~wgtpm.modfetch.Fetcher` from the upstream into ``cache`` (a temporary
        one under the spool folder), with this proxy's HTTP client."""
        from wgtpm.modfetch import Fetcher

        return Fetcher(cache, self.source, _Recorded(), http=self._client, opts=opts)

    def fetch_index(self, reg: Registry, fetcher: Fetcher, module: str, version: str) -> Fetched:
        """The index and wgt.mod of ``module@version`` from the upstream (kept in the
        fetcher's cache), checked against the registry's limits before any file is fetched."""
        what = f"{module}@{version}"
        self.ask(what, lambda: fetcher.index(module, version))
        raw = fetcher.cache.read_meta(module, version, "index.json")
        mod = fetcher.cache.read_meta(module, version, "mod")
        assert raw is not None and mod is not None, "the fetcher keeps what it verified"
        try:
            idx = reg.check_index(raw, module, version, need_mod=False)
            reg.check_mod(module, version, mod)
        except BadRequestError as exc:
            raise UpstreamError(f"upstream {self.name}: {what}: {exc}") from exc
        return Fetched(idx, raw, mod)

    def commit(self, reg: Registry, module: str, version: str, got: Fetched) -> VersionRecord:
        """Record ``module@version`` once every file of ``got.index`` is in the blob store:
        its index and wgt.mod are stored, the version committed and logged."""
        idx, raw, mod = got.index, got.raw, got.mod
        gone = self.missing(reg, idx)  # as a publish's commit checks, right before it records
        if gone:
            raise UpstreamError(
                f"{module}@{version}: {gone[0].path} left the blob store before the version "
                "was recorded (garbage collection?); ask again"
            )
        files = [FileRecord(e.path, e.size, e.sha256) for e in idx.files]
        if idx.entry(MOD_FILE) is None:  # a synthesised index: the wgt.mod is kept beside it
            mod_sha = hashlib.sha256(mod).hexdigest()
            reg.blobs.put(mod_sha, [mod], max_size=len(mod))
            files.append(FileRecord(MOD_FILE, len(mod), mod_sha))
        index_sha = hashlib.sha256(raw).hexdigest()
        reg.blobs.put(index_sha, [raw], max_size=len(raw))
        when, commit = idx.time or got.time, idx.commit or got.commit
        info = None if when is not None else self.info(module, version)
        sig_sha, att_sha = self.beside(reg, module, version, idx)
        outcome = reg.meta.commit_version(
            NewVersion(
                module=module,
                version=version,
                h1=idx.h1(),
                mod_h1=dirhash.hash1_bytes({"wgt.mod": mod}),
                index_sha256=index_sha,
                files=files,
                time=when or (info.time if info else None) or now(),
                commit=commit or (info.commit if info else None),
                private=False,
                proxied=True,
                attestation_sha256=att_sha,
                signature_sha256=sig_sha,
            )
        )
        if outcome.created:
            for listener in reg.on_commit:
                listener(outcome.version)
        return outcome.version

    def beside(
        self, reg: Registry, module: str, version: str, idx: ReleaseIndex
    ) -> tuple[str | None, str | None]:
        """The upstream's signature and SLSA statement of the version (served beside its
        index: ``.sig``, ``.slsa.json``; a GitHub asset or Hugging Face file through
        ``direct``), stored as a publish stores them; the blob sha256 of each, ``None``
        where the upstream has none. One that does not fit the release (over other files,
        not a bundle or statement) is left out and logged: the consumer's trust lines then
        find no signature, as they would upstream find a wrong one. A failure to ask is a
        502, as for the files: nothing is kept, and the next request tries again."""
        sig = self._upstream(module, version, "signature")
        att = self._upstream(module, version, "attestation")
        return (
            self._keep(
                module,
                version,
                "signature",
                sig,
                lambda d: reg.store_signature(d, idx, revoked_ok=True),
            ),
            self._keep(
                module, version, "attestation", att, lambda d: reg.store_attestation(d, idx.h1())
            ),
        )

    def _upstream(self, module: str, version: str, kind: str) -> bytes | None:
        """The source's ``kind`` (``signature``, ``attestation``) of the version; ``None``
        when it has none or keeps none."""
        read = getattr(self.source, kind, None)
        if read is None:
            return None
        try:
            data: bytes | None = self.ask(
                f"{module}@{version} {kind}", lambda: read(module, version)
            )
        except NotFoundError:
            return None
        return data

    @staticmethod
    def _keep(
        module: str, version: str, kind: str, data: bytes | None, store: Callable[[bytes], str]
    ) -> str | None:
        if not data:
            return None
        try:
            return store(data)
        except BadRequestError as exc:
            log.warning("%s@%s: the upstream's %s is left out: %s", module, version, kind, exc)
            return None

    def pending_index(self, reg: Registry, rec: PendingRecord) -> Fetched:
        """The index and wgt.mod recorded (and logged) for a pending version, from the blob
        store; checked against the registry's limits again."""
        try:
            raw = reg.blobs.read(rec.index_sha256, reg.limits.max_index_size)
            mod = reg.blobs.read(rec.mod_sha256, reg.limits.max_mod_size)
            idx = reg.check_index(raw, rec.module, rec.version, need_mod=False)
        except RegistryError as exc:
            raise StoreError(
                f"{rec.module}@{rec.version}: the index recorded for it cannot be read: {exc}"
            ) from exc
        return Fetched(idx, raw, mod, rec.time, rec.commit)

    @staticmethod
    def seed(fetcher: Fetcher, module: str, version: str, got: Fetched) -> None:
        """Give ``fetcher``'s cache the index and wgt.mod of ``got``, so that its downloads
        are checked against them and the upstream is not asked for them again."""
        cache = fetcher.cache
        with cache.using():
            cache.write_meta(module, version, "index.json", got.raw)
            cache.write_meta(module, version, "mod", got.mod)

    @staticmethod
    def missing(reg: Registry, idx: ReleaseIndex) -> list[IndexEntry]:
        """The files of ``idx`` the blob store lacks (one entry per sha256)."""
        unique = {e.sha256: e for e in idx.files}.values()
        return [e for e in unique if reg.blobs.size(e.sha256) != e.size]

    @staticmethod
    def orphans(reg: Registry, idx: ReleaseIndex, missing: list[IndexEntry]) -> list[IndexEntry]:
        """The files of ``idx`` stored (not in ``missing``) that no row references: left by a
        fill that failed or an upload that expired, :mod:`registry.gc` may remove one at any
        moment, so a fill fetches and writes it again (:meth:`store`) instead of relying on
        it; a fresh write is kept for gc's grace period, until the commit references it."""
        lacking = {e.sha256 for e in missing}
        stored = {e.sha256: e for e in idx.files if e.sha256 not in lacking}
        referenced = reg.meta.blob_references(stored) if stored else set()
        return [e for sha, e in stored.items() if sha not in referenced]

    def download(
        self, fetcher: Fetcher, module: str, version: str, entries: list[IndexEntry]
    ) -> None:
        """Fetch ``entries`` of ``module@version`` into ``fetcher``'s cache, verified."""
        if entries:
            patterns = [glob.escape(e.path) for e in entries]
            what = f"{module}@{version}" + (f" {entries[0].path}" if len(entries) == 1 else "")
            self.ask(what, lambda: fetcher.download(module, version, patterns))

    def store(
        self, reg: Registry, fetcher: Fetcher, idx: ReleaseIndex, again: Collection[str] = ()
    ) -> None:
        """Copy into the blob store every file of ``idx`` the fetcher's cache holds (verified
        while it was fetched) and the store lacks, or whose sha256 is in ``again`` (written
        anew: :meth:`orphans`); the store checks the sha256 again."""
        for e in {e.sha256: e for e in idx.files}.values():
            if not fetcher.cache.has_blob(e.sha256):
                continue
            if e.sha256 not in again and reg.blobs.size(e.sha256) == e.size:
                continue
            with open(fetcher.cache.blob_path(e.sha256), "rb") as f:
                reg.blobs.put(
                    e.sha256, iter(functools.partial(f.read, _CHUNK), b""), max_size=e.size
                )

    def _fetch(self, reg: Registry, module: str, version: str) -> VersionRecord:
        from wgtpm.cache import Cache

        self.spool.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="fill-", dir=self.spool))
        try:
            fetcher = self.fetcher(Cache(tmp))
            what = f"{module}@{version}"
            pending = reg.meta.get_pending(module, version)
            if pending is not None:  # logged already: its files are those of that index
                got = self.pending_index(reg, pending)
                self.seed(fetcher, module, version, got)
            else:
                got = self.fetch_index(reg, fetcher, module, version)
            started = time.monotonic()
            todo = self.missing(reg, got.index)
            # a pending version's row names its index, and so its files; else none may be
            # relied on unless a row references it
            again = [] if pending is not None else self.orphans(reg, got.index, todo)
            self.download(fetcher, module, version, todo + again)
            self.store(reg, fetcher, got.index, {e.sha256 for e in again})
            v = self.commit(reg, module, version, got)
            log.info(
                "cached %s from %s: %d files, %d bytes in %.2fs",
                what,
                self.name,
                len(got.index.files),
                sum(e.size for e in got.index.files),
                time.monotonic() - started,
            )
            return v
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _client(self) -> HttpClient:
        if self._http is None:
            from wgtpm.httpclient import HttpClient

            with self._lock:
                if self._http is None:
                    self._http = HttpClient()
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()


def open_proxy(
    upstream: str, spool: Path, environ: Mapping[str, str] | None = None
) -> CachingProxy | None:
    """The caching proxy for a ``WGTPROXY`` list; ``None`` for ``off``.

    ``environ`` (``os.environ`` when omitted) gives ``WGTPRIVATE`` and the secrets to
    blank out of messages; the direct sources read their settings from ``os.environ``
    when first used. Raises :class:`ValueError` on a malformed list.
    """
    from wgtpm.cache import Cache
    from wgtpm.httpclient import HttpClient
    from wgtpm.sources.chain import from_env, parse_proxy_list

    env = dict(os.environ if environ is None else environ)
    try:
        entries = parse_proxy_list(upstream)
    except WgtpmError as exc:
        raise ValueError(f"--upstream: {exc}") from exc
    if [e.url for e in entries] == ["off"]:
        return None
    env["WGTPROXY"] = upstream
    http = HttpClient()
    # the direct sources keep listing ETags in a wgtpm cache of the registry's own
    source = from_env(http, environ=env, cache=Cache(spool / "upstream-cache"))
    secrets = tuple(env[v] for v in _SECRET_VARS if env.get(v))
    return CachingProxy(source, spool / "fills", http=http, secrets=secrets)


def _sweep(spool: Path) -> None:
    """Remove the temporary caches of fills that a killed process left behind (older than
    :data:`FILL_STALE`, so a fill in progress in another process sharing the folder stays)."""
    cutoff = time.time() - FILL_STALE
    for d in spool.glob("fill-*") if spool.is_dir() else []:
        try:
            if d.stat().st_mtime < cutoff:
                shutil.rmtree(d)
        except OSError as exc:  # another process swept it first, or the disk says no
            log.warning("could not remove the stale fill %s: %s", d, exc)
