"""Proxied versions fetched a file at a time: what the Hub API serves before a version is whole.

:meth:`registry.proxy.CachingProxy.fill` fetches every file of a version
before it answers, which a 20 GB model turns into minutes of silence (and
``huggingface_hub`` gives up after 10 s). For the Hub API
(:mod:`registry.hfmirror`) a version not stored yet is *pending* instead:

1. :meth:`OnDemand.open` fetches its index and wgt.mod from the upstream
   (once per process and version; into a temporary cache under the spool
   folder), checks them against the registry's limits, and answers: the
   metadata is served from the index right away.
2. :meth:`Pending.fetch` fetches one file on its first request, in a
   thread of its own; concurrent requests for it join that fetch (and the
   temporary cache's file lock keeps two processes sharing the spool from
   fetching it twice). The file is checked against the index's size and
   sha256 while it streams (:class:`wgtpm.modfetch.Fetcher`), renamed into
   the temporary cache only on a match, then copied into the blob store,
   which checks the sha256 again. A failure keeps nothing and is reported to
   every waiting request; the next request tries again.
3. :meth:`Pending.stream` lets a client read a large file while it is being
   fetched, so that it sees bytes within seconds. The bytes come from the
   fetch's partial file, but never all of them: the last :data:`HOLD` bytes
   are sent only once the fetch is verified and the sha256 of exactly the
   bytes this response sent matches the index; otherwise the response is cut
   short, so the client never holds a complete body of unverified bytes (its
   ``Content-Length`` is not met, and ``huggingface_hub`` discards the
   incomplete file).
4. When every file of the index is in the blob store, the version is
   committed and logged in the checksum log as a fill would
   (:meth:`registry.proxy.CachingProxy.commit`), and from then on served as
   any stored version. Until then it is not in the log: what a client gets
   is checked against the upstream's index, whose h1 is logged once the
   version is whole.

Pending versions live in this process's memory (at most :data:`MAX_PENDING`;
the least recently used one is dropped, its temporary cache removed); each
replica keeps its own. Files in the blob store are shared, so a file
fetched by one replica is not fetched by another.
"""

from __future__ import annotations

import contextlib
import glob
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
from .metadata import FileRecord, VersionRecord, now
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
        module: str,
        version: str,
        tmp: Path,
        on_complete: Callable[[Pending], object] = lambda p: None,
    ) -> None:
        from wgtpm.cache import Cache
        from wgtpm.modfetch import FetchOptions

        self.reg, self.proxy = reg, proxy
        self.module, self.version = module, version
        self.tmp = tmp
        # one stream per file, so that its partial file fills in order (see stream())
        self.fetcher = proxy.fetcher(Cache(tmp), FetchOptions(ranges=1))
        self.got: Fetched = proxy.fetch_index(reg, self.fetcher, module, version)
        idx = self.got.index
        self.files = {e.path: FileRecord(e.path, e.size, e.sha256) for e in idx.files}
        info = None if idx.commit and idx.time else proxy.info(module, version)
        self.record = VersionRecord(  # what the Hub API shows until it is committed
            module=module,
            version=version,
            h1=idx.h1(),
            mod_h1=dirhash.hash1_bytes({"wgt.mod": self.got.mod}),
            index_sha256=hashlib.sha256(self.got.raw).hexdigest(),
            time=idx.time or (info.time if info else None),
            commit=idx.commit or (info.commit if info else None),
            private=False,
            created=now(),
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
        self._missing = {  # sha256 of the files not in the blob store yet
            e.sha256 for e in idx.files if not self.stored(e.sha256, e.size)
        }

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
            pattern = glob.escape(e.path)  # this path (and any other file of the same name)
            self.proxy.ask(
                f"{self.what} {e.path}",
                lambda: self.fetcher.download(self.module, self.version, [pattern]),
            )
            self.proxy.store(self.reg, self.fetcher, self.got.index)
            with self._lock:
                todo = set(self._missing)
            stored = {s for s in todo if self.fetcher.cache.has_blob(s)}
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
    """The pending versions of one registry (see the module's docstring)."""

    def __init__(self, reg: Registry) -> None:
        assert reg.proxy is not None, "only proxied versions are fetched on demand"
        self.reg, self.proxy = reg, reg.proxy
        self._lock = threading.Lock()
        self._pending: OrderedDict[tuple[str, str], Pending] = OrderedDict()
        self._opening: dict[tuple[str, str], threading.Lock] = {}

    def open(self, module: str, version: str) -> VersionRecord | Pending:
        """The committed version, else the pending one (its index fetched on first use)."""
        key = (module, version)
        with self._lock:
            p = self._pending.get(key)
            if p is not None:
                self._pending.move_to_end(key)
                return p
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:  # one index fetch per version, however many ask at once
            with self._lock:
                p = self._pending.get(key)
            if p is not None:
                return p
            have = self.reg.meta.get_version(module, version)
            if have is not None:
                with self._lock:
                    self._opening.pop(key, None)
                return have
            self.proxy.spool.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="fill-", dir=self.proxy.spool))
            try:
                p = Pending(self.reg, self.proxy, module, version, tmp, self.finish)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                with self._lock:
                    self._opening.pop(key, None)
                raise
            with self._lock:
                self._pending[key] = p
                self._opening.pop(key, None)
                while len(self._pending) > MAX_PENDING:
                    _, old = self._pending.popitem(last=False)
                    old.close()
            return p

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
