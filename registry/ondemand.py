"""Proxied versions fetched a file at a time: what the Hub API serves before a version is whole.

:meth:`registry.proxy.CachingProxy.fill` fetches every file of a version
before it answers, which a 20 GB model turns into minutes of silence (and
``huggingface_hub`` gives up after 10 s). For the Hub API
(:mod:`registry.hfmirror`) a version not stored yet is *pending* instead:

1. :meth:`OnDemand.open` indexes it once for all replicas: its index and
   wgt.mod are fetched from the upstream (into a temporary cache under the
   spool folder) and checked against the registry's limits; the files
   ``eager`` selects (for the Hub API the small ones, those that are not
   LFS: the Hub lists the sha256 of LFS files only, so wgtpm downloaded
   these to make the index) are fetched at once, checked against the index
   and stored; the index and wgt.mod are stored as blobs; and one database
   transaction records the pending version and appends its wgt.sum lines to
   the checksum log (:meth:`~registry.metadata.MetadataStore.add_pending`).
   Only then is the metadata answered, from the index: a client that checks
   the log (``WGTSUMDB``) can verify the first download of any file. A
   replica that finds the version pending in the database (another one
   indexed it) reads its index from the blob store and never asks the
   upstream for another, so every replica serves the one logged index.
2. :meth:`Pending.fetch` fetches one file on its first request, in a
   thread of its own; concurrent requests for it in one process join that
   fetch, and a file another replica stored already is not fetched again.
   The file is checked against the index's size and sha256 while it streams
   (:class:`wgtpm.modfetch.Fetcher`), renamed into the temporary cache only
   on a match, then copied into the blob store, which checks the sha256
   again. A failure keeps nothing and is reported to every waiting request;
   the next request tries again.
3. :meth:`Pending.stream` lets a client read a large file while it is being
   fetched, so that it sees bytes within seconds. The bytes come from the
   fetch's partial file, but never all of them: the last :data:`HOLD` bytes
   are sent only once the fetch is verified and the sha256 of exactly the
   bytes this response sent matches the index; otherwise the response is cut
   short, so the client never holds a complete body of unverified bytes (its
   ``Content-Length`` is not met, and ``huggingface_hub`` discards the
   incomplete file).
4. When every file of the index is in the blob store (whichever replica
   stored it), the version is committed as a fill would
   (:meth:`registry.proxy.CachingProxy.commit`; the commit finds its lines
   logged already and drops the pending row), and from then on served as any
   stored version.

:class:`Pending` objects live in this process's memory (at most
:data:`MAX_PENDING`; the least recently used one is dropped, its temporary
cache removed, and read again from the database when next asked for). Two
replicas asked for one file at the same moment may both fetch it; the blob
store keeps one copy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from wgtpm import dirhash
from wgtpm.index import IndexEntry

from ._errors import ConflictError, RegistryError, UpstreamError
from .metadata import FileRecord, PendingRecord, VersionRecord
from .proxy import FILL_STALE, CachingProxy, Fetched
from .service import Registry

__all__ = ["FAILED_TTL", "HOLD", "MAX_PENDING", "OnDemand", "Pending"]

log = logging.getLogger("registry.ondemand")

#: Bytes of a file being fetched that a streaming response holds back until it is verified.
HOLD = 64 << 10
#: Pending versions kept per process.
MAX_PENDING = 64
#: Seconds after a failed fetch of a file during which it is not streamed again: a client
#: that retries at once (huggingface_hub does) waits for the fetch and gets a 502 that
#: says why, rather than another body cut short.
FAILED_TTL = 60.0
_POLL = 0.02  # seconds between looks at a growing partial file
_CHUNK = 1 << 20


@dataclass
class _Fetch:
    """One file's fetch in progress: done is set when it is stored or failed."""

    entry: IndexEntry
    done: threading.Event = field(default_factory=threading.Event)
    error: RegistryError | None = None


class Pending:
    """A proxied version whose index is checked and whose files are fetched on demand."""

    def __init__(
        self,
        reg: Registry,
        proxy: CachingProxy,
        got: Fetched,
        rec: PendingRecord,
        tmp: Path,
        on_complete: Callable[[Pending], object] = lambda p: None,
    ) -> None:
        from wgtpm.cache import Cache
        from wgtpm.modfetch import FetchOptions

        self.reg, self.proxy = reg, proxy
        self.module, self.version = rec.module, rec.version
        self.tmp = tmp
        # one stream per file, so that its partial file fills in order (see stream())
        self.fetcher = proxy.fetcher(Cache(tmp), FetchOptions(ranges=1))
        self.got = dataclasses.replace(got, time=rec.time, commit=rec.commit)
        proxy.seed(self.fetcher, self.module, self.version, self.got)  # no index from upstream
        idx = got.index
        self.files = {e.path: FileRecord(e.path, e.size, e.sha256) for e in idx.files}
        self.record = VersionRecord(  # what the Hub API shows until it is committed
            module=rec.module,
            version=rec.version,
            h1=rec.h1,
            mod_h1=rec.mod_h1,
            index_sha256=rec.index_sha256,
            time=rec.time,
            commit=rec.commit,
            private=False,
            created=rec.created,
        )
        self.on_complete = on_complete
        self._lock = threading.Lock()
        self._fetches: dict[str, _Fetch] = {}  # sha256 -> the fetch in progress
        self._failed: dict[str, float] = {}  # sha256 -> when its last fetch failed
        # Fetches queue for at most as many workers as `wgtpm get` runs; they are daemon
        # threads, so that a server stopping does not wait for a 20 GB fetch to end.
        self._queue: queue.SimpleQueue[_Fetch] = queue.SimpleQueue()
        self._jobs = FetchOptions().jobs
        self._workers = 0
        self._active = 0  # fetches using tmp
        self.closed = False
        self._sizes = {e.sha256: e.size for e in idx.files}
        # sha256 of the files not in the blob store yet (as far as this process knows)
        self._missing = {e.sha256 for e in proxy.missing(reg, idx)}

    @property
    def what(self) -> str:
        return f"{self.module}@{self.version}"

    def stored(self, sha256: str, size: int) -> bool:
        return self.reg.blobs.size(sha256) == size

    # -- fetching

    def fetch(self, path: str) -> _Fetch:
        """The fetch of ``path`` (started now unless one is running, or done if stored)."""
        e = self.got.index.entry(path)
        assert e is not None, f"{path} is not a file of {self.what}"
        with self._lock:
            f = self._fetches.get(e.sha256)
            if f is not None:
                return f
            f = _Fetch(e)
            if e.sha256 not in self._missing:
                f.done.set()
                return f
            if self.closed:  # dropped (MAX_PENDING) while a request still held it
                f.error = UpstreamError(f"{self.what}: {path} was not fetched; ask again")
                f.done.set()
                return f
            self._fetches[e.sha256] = f
            self._active += 1
            with contextlib.suppress(OSError):  # in use: not for the spool's sweep of stale fills
                os.utime(self.tmp)
            self._queue.put(f)
            if self._workers < self._jobs:
                self._workers += 1
                threading.Thread(target=self._work, daemon=True, name="ondemand").start()
        return f

    def _work(self) -> None:
        while True:
            try:
                f = self._queue.get(timeout=1.0)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():  # fetch() puts under the lock: none is lost
                        self._workers -= 1
                        return
                continue
            self._run(f)

    def wait(self, path: str) -> None:
        """Return once ``path`` is in the blob store; raise the fetch's error."""
        f = self.fetch(path)
        f.done.wait()
        if f.error is not None:
            raise f.error

    def _run(self, f: _Fetch) -> None:
        e = f.entry
        try:
            if not self.stored(e.sha256, e.size):  # not stored by another replica meanwhile
                self.proxy.download(self.fetcher, self.module, self.version, [e])
                self.proxy.store(self.reg, self.fetcher, self.got.index)
            with self._lock:
                todo = set(self._missing)
            # this fetch's file, and any another replica stored: the last one stored commits
            stored = {s for s in todo if self.stored(s, self._sizes[s])}
            with self._lock:
                self._missing -= stored
                missing = e.sha256 in self._missing
                complete = not self._missing
            if missing:
                raise UpstreamError(f"{self.what}: {e.path} was fetched but is not stored")
            if complete:
                self.on_complete(self)
        except RegistryError as exc:
            f.error = exc
            log.warning("%s", exc)
        except Exception as exc:  # a bug or the disk: reported, never a half-stored file
            log.exception("fetching %s of %s", e.path, self.what)
            f.error = UpstreamError(f"{self.what}: fetching {e.path} failed: {exc}")
        finally:
            with self._lock:
                self._fetches.pop(e.sha256, None)
                self._active -= 1
                if f.error is not None:
                    self._failed[e.sha256] = time.monotonic()
                last = self._active == 0 and self.closed
            if last:
                shutil.rmtree(self.tmp, ignore_errors=True)
            f.done.set()

    def complete(self) -> bool:
        """Whether every file of the index is in the blob store."""
        with self._lock:
            return not self._missing

    def streamable(self, path: str) -> bool:
        """Whether ``path`` may be streamed while fetched (its last fetch did not just fail)."""
        with self._lock:
            when = self._failed.get(self.files[path].sha256)
        return when is None or time.monotonic() - when > FAILED_TTL

    def has(self, path: str) -> bool:
        """Whether ``path`` is in the blob store."""
        with self._lock:
            return self.files[path].sha256 not in self._missing

    def close(self) -> None:
        """Remove the temporary cache (once the fetches still running are done)."""
        with self._lock:
            self.closed = True
            idle = self._active == 0
        if idle:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- streaming

    def stream(self, path: str) -> Iterator[bytes]:
        """The bytes of ``path`` as they arrive from the upstream, holding back the last
        :data:`HOLD` until they are verified; raises (cutting the response) otherwise."""
        f = self.fetch(path)
        e = f.entry
        h, sent = hashlib.sha256(), 0
        part = self.fetcher.cache.partial_path(e.sha256)
        limit = max(0, e.size - HOLD)
        fd: int | None = None
        try:
            while not f.done.is_set() and sent < limit:
                if fd is None:
                    try:
                        fd = os.open(part, os.O_RDONLY)
                    except FileNotFoundError:
                        f.done.wait(_POLL)
                        continue
                chunk = os.pread(fd, min(_CHUNK, limit - sent), sent)
                if not chunk:
                    f.done.wait(_POLL)
                    continue
                h.update(chunk)
                sent += len(chunk)
                yield chunk
        finally:
            if fd is not None:
                os.close(fd)
        f.done.wait()
        if f.error is not None:
            raise f.error
        for chunk in self.reg.blobs.get(e.sha256, sent, e.size - sent):
            h.update(chunk)
            sent += len(chunk)
            if sent < e.size:
                yield chunk
            elif h.hexdigest() == e.sha256 and sent == e.size:
                yield chunk  # the last bytes: only now is the whole body verified
            else:
                raise UpstreamError(
                    f"{self.what}: {e.path}: the bytes streamed while it was fetched are not "
                    "the ones verified (the upstream restarted it); the response is cut short"
                )


class OnDemand:
    """The pending versions of one registry (see the module's docstring). ``eager`` says
    which files of a version are fetched when it is indexed: ``eager(path, size)``."""

    def __init__(self, reg: Registry, eager: Callable[[str, int], bool]) -> None:
        assert reg.proxy is not None, "only proxied versions are fetched on demand"
        self.reg, self.proxy = reg, reg.proxy
        self.eager = eager
        self._lock = threading.Lock()
        self._pending: OrderedDict[tuple[str, str], Pending] = OrderedDict()
        self._opening: dict[tuple[str, str], threading.Lock] = {}

    def open(self, module: str, version: str) -> VersionRecord | Pending:
        """The committed version, else the pending one (indexed and logged on first use)."""
        key = (module, version)
        with self._lock:
            p = self._pending.get(key)
            if p is not None:
                self._pending.move_to_end(key)
                return p
            opening = self._opening.setdefault(key, threading.Lock())
        try:
            with opening:  # one index fetch per version, however many ask at once
                with self._lock:
                    p = self._pending.get(key)
                return p if p is not None else self._open(module, version)
        finally:
            with self._lock:
                self._opening.pop(key, None)

    def _open(self, module: str, version: str) -> VersionRecord | Pending:
        have = self.reg.meta.get_version(module, version)
        if have is not None:
            return have
        self.proxy.admit(self.reg, module)  # never indexed (and logged) if hosted here
        self.proxy.spool.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="fill-", dir=self.proxy.spool))
        try:
            rec = self.reg.meta.get_pending(module, version)
            if rec is not None:  # indexed and logged already, maybe by another replica
                got = self.proxy.pending_index(self.reg, rec)
            else:
                indexed = self._index(module, version, tmp)
                if indexed is None:  # committed meanwhile
                    shutil.rmtree(tmp, ignore_errors=True)
                    have = self.reg.meta.get_version(module, version)
                    assert have is not None, "add_pending said it is committed"
                    return have
                got, rec = indexed
            p = Pending(self.reg, self.proxy, got, rec, tmp, self.finish)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        with self._lock:
            self._pending[(module, version)] = p
            while len(self._pending) > MAX_PENDING:
                _, old = self._pending.popitem(last=False)
                old.close()
        if p.complete():  # nothing left to fetch (only small files, or another replica's)
            v = self.finish(p)
            if v is not None:
                return v
        return p

    def _index(self, module: str, version: str, tmp: Path) -> tuple[Fetched, PendingRecord] | None:
        """Index ``module@version`` from the upstream: its eager files fetched and stored, its
        index and wgt.mod stored, the version recorded as pending and logged. The record
        another replica made first wins; ``None`` when the version is committed already."""
        from wgtpm.cache import Cache
        from wgtpm.modfetch import FetchOptions

        reg, proxy = self.reg, self.proxy
        fetcher = proxy.fetcher(Cache(tmp), FetchOptions(ranges=1))
        got = proxy.fetch_index(reg, fetcher, module, version)
        idx = got.index
        eager = [e for e in proxy.missing(reg, idx) if self.eager(e.path, e.size)]
        proxy.download(fetcher, module, version, eager)
        proxy.store(reg, fetcher, idx)
        shas = []
        for data in (got.raw, got.mod):
            sha = hashlib.sha256(data).hexdigest()
            # written even when stored: a fresh write keeps an old unreferenced copy from
            # being collected before the pending row names it (registry.gc's grace period)
            reg.blobs.put(sha, [data], max_size=len(data))
            shas.append(sha)
        info = None if idx.commit and idx.time else proxy.info(module, version)
        rec = PendingRecord(
            module=module,
            version=version,
            h1=idx.h1(),
            mod_h1=dirhash.hash1_bytes({"wgt.mod": got.mod}),
            index_sha256=shas[0],
            mod_sha256=shas[1],
            time=idx.time or (info.time if info else None),
            commit=idx.commit or (info.commit if info else None),
        )
        saved = reg.meta.add_pending(rec)
        if saved is None:
            return None
        if saved is not rec:  # another replica indexed it first: serve what it logged
            return proxy.pending_index(reg, saved), saved
        log.info("indexed %s@%s from %s: logged, files on demand", module, version, proxy.name)
        return got, saved

    def finish(self, p: Pending) -> VersionRecord | None:
        """Commit ``p`` when all its files are stored (and drop it); ``None`` until then."""
        if not p.complete():
            return None
        stale = datetime.now(timezone.utc) - timedelta(seconds=FILL_STALE)
        state = self.reg.meta.reserve_version(
            p.module, p.version, stale.strftime("%Y-%m-%dT%H:%M:%SZ")
        )
        if state == "busy":  # a fill elsewhere commits it
            return None
        try:
            v = (
                self.reg.meta.get_version(p.module, p.version)
                if state == "committed"
                else self.proxy.commit(self.reg, p.module, p.version, p.got)
            )
        except ConflictError as exc:  # the upstream's index changed meanwhile
            log.error("%s: %s; the pending version is dropped", p.what, exc)
            v = None
        finally:
            self.reg.meta.release_version(p.module, p.version)  # a no-op once committed
        with self._lock:
            if self._pending.get((p.module, p.version)) is p:
                del self._pending[(p.module, p.version)]
        p.close()
        if v is not None:
            log.info("cached %s from %s file by file", p.what, self.proxy.name)
        return v

    def close(self) -> None:
        with self._lock:
            pending, self._pending = list(self._pending.values()), OrderedDict()
        for p in pending:
            p.close()
