"""Fetch module versions into the cache, verifying every byte on the way.

:class:`Fetcher` sits between the sources (which say where things are) and
the cache (which stores them). For each module version it

1. gets the wgt.mod and checks it against the ``/wgt.mod`` line of wgt.sum;
2. gets the index, parses it (safe paths, no case collisions), checks its h1
   against the module line of wgt.sum and that its ``wgt.mod`` entry hashes
   to the wgt.mod from step 1;
3. downloads each file (all of them, or those matching ``select`` globs) to
   ``tmp/<sha256>.partial``, hashing while it streams, resuming with HTTP
   Range after a cut, and renames it into ``blobs/`` only when size and
   sha256 match the index; then links it into the module tree.

Hashes that wgt.sum does not have yet are handed to a :class:`SumChecker`,
which records them (``wgtpm get``) or refuses (``-mod=readonly``). Checking
new hashes against the checksum database (``WGTSUMDB``) is the checker's
business too: the project's ledger is handed a verifier for that
(:mod:`wgtpm.modload.fetch`), so this module never talks to the database.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol
from urllib.parse import unquote, urlsplit

from . import _interrupt, dirhash
from . import index as _index
from ._errors import (
    CacheError,
    ChecksumMismatchError,
    FetchError,
    NotFoundError,
    VerifyError,
    WgtpmError,
)
from ._report import SILENT, Reporter, end, human_size
from ._retry import Backoff
from .cache import Cache
from .sources import FileRequest, RevInfo, Source

if TYPE_CHECKING:
    from .httpclient import HttpClient

__all__ = ["FetchOptions", "Fetcher", "SumChecker", "matches"]

CHUNK = 1 << 20
#: Bytes written between background fsyncs of a large download, so that the fsync
#: before the rename (on the critical path) has at most this much left to flush.
SYNC_EVERY = 8 << 20
#: Files up to this size are written and hashed by the receiving thread itself: a
#: writer thread (overlapping hashing with receiving) pays off only for large files.
INLINE_MAX = 4 << 20
#: Received bytes that may wait for the writer thread of one file (or range): the bound
#: on its memory whatever the file's size and however the source reads (64 KiB from
#: HTTP, 1 MiB from ``file://`` and from range files being merged).
QUEUE_BYTES = 32 << 20
#: Files at least this large come as parallel ranges from a server that honours Range
#: (one connection is often capped well below the line's speed).
RANGED_MIN = 64 << 20
#: The smallest range (ranges are whole MiB; ``FetchOptions.ranges`` at most per file).
RANGE_MIN = 16 << 20
MOD_SUFFIX = "/wgt.mod"


class SumChecker(Protocol):
    """What the fetcher asks about hashes (backed by wgt.sum and, for new lines, the checksum log)."""

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        """Accept ``h1`` for ``path version`` (``version`` may end in /wgt.mod) or raise.

        ``record=False`` checks against known lines without adding a new one
        (for wgt.mod files read only to learn about retractions).
        """
        ...


@dataclass(frozen=True)
class FetchOptions:
    jobs: int = 16  # files downloaded at once; the same as modload.DEFAULT_JOBS (a test checks)
    resume_attempts: int = 5  # reconnects after a cut before giving up
    resume_backoff: float = 0.2  # seconds, doubled per reconnect (jittered, at most 2 s)
    #: A download slower than ``min_rate`` bytes a second over ``rate_window`` seconds is
    #: cut and resumed (a new connection, maybe another route), as a dropped one is.
    min_rate: int = 1024
    rate_window: float = 30.0
    #: Ranges a large file is fetched in at once (1: one request per file).
    ranges: int = 8

    @property
    def resume_policy(self) -> Backoff:
        """The retry policy of a cut download: ``resume_attempts`` reconnects."""
        return Backoff(attempts=self.resume_attempts + 1, base=self.resume_backoff, cap=2.0)

    list_ttl: float = 60.0  # seconds a version list is trusted


def matches(patterns: Iterable[str] | None, name: str) -> bool:
    """Whether ``name`` is selected: no patterns select everything; a glob may match the
    whole path or its base name; ``wgt.mod`` is always selected."""
    if patterns is None or name == "wgt.mod":
        return True
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(base, p) for p in patterns)


class Fetcher:
    """Verified access to module versions from one source (usually a chain of them)."""

    def __init__(
        self,
        cache: Cache,
        source: Source,
        sums: SumChecker,
        *,
        http: Callable[[], HttpClient] | None = None,
        opts: FetchOptions | None = None,
        progress: Reporter | None = None,
    ) -> None:
        self.cache = cache
        self.source = source
        self.sums = sums
        self.opts = opts or FetchOptions()
        self.progress: Reporter = progress or SILENT
        self._http_factory = http
        self._http: HttpClient | None = None
        self._http_lock = threading.Lock()
        self._done: dict[str, int] = {}  # label -> bytes reported, for "N of M kept"
        self._ranges: dict[str, int] = {}  # label -> ranges per large file
        self._done_lock = threading.Lock()

    def _advance(self, label: str, n: int) -> None:
        if n:
            with self._done_lock:
                self._done[label] = self._done.get(label, 0) + n
            self.progress.advance(label, n)

    def http(self) -> HttpClient:
        """The one HTTP client of this fetcher, made on first use by whichever download
        thread comes first (the others wait for it rather than each making their own)."""
        with self._http_lock:
            if self._http is None:
                if self._http_factory is not None:
                    self._http = self._http_factory()
                else:
                    from .httpclient import HttpClient

                    self._http = HttpClient()
            return self._http

    # ---- metadata ---------------------------------------------------------

    def versions(self, path: str) -> list[str]:
        key = "list/" + hashlib.sha256(path.encode()).hexdigest()
        cached = self.cache.read_ttl(key, self.opts.list_ttl)
        if isinstance(cached, list):
            return [str(v) for v in cached]
        vs = self.source.versions(path)
        with contextlib.suppress(CacheError):
            self.cache.write_ttl(key, vs)
        return vs

    def info(self, path: str, query: str) -> RevInfo:
        return self.source.info(path, query)

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
        """The verified index of ``path@version``."""
        data = self.cache.read_meta(path, version, "index.json")
        fresh = data is None
        if data is None:
            data = self.source.index(path, version)
        idx = _index.parse(data, path, version)
        self._check(path, version, idx.h1(), cached=not fresh)
        mod_entry = idx.entry("wgt.mod")
        mod = self.mod(path, version)
        if mod_entry is not None and hashlib.sha256(mod).hexdigest() != mod_entry.sha256:
            raise VerifyError(
                path,
                version,
                "the wgt.mod served for this version is not the one its index lists; the source is inconsistent",
            )
        if fresh:
            with self.cache.using():
                self.cache.write_meta(path, version, "index.json", data)
        return idx

    # ---- files ------------------------------------------------------------

    def missing(self, path: str, version: str, patterns: list[str] | None = None) -> bool:
        """Whether ``download`` has anything to do.

        Cheap for a cached version: the cached index is checked against wgt.sum
        (a changed or missing wgt.sum line is caught here too) and the tree is stat'ed.
        """
        raw = self.cache.read_meta(path, version, "index.json")
        if raw is None:
            return True
        idx = _index.parse(raw, path, version)
        self._check(path, version, idx.h1(), cached=True)
        tree = self.cache.mod_dir(path, version)
        return any(not (tree / e.path).is_file() for e in idx.files if matches(patterns, e.path))

    def download(self, path: str, version: str, patterns: list[str] | None = None) -> Path:
        """Make the module tree of ``path@version`` hold every selected file; returns its dir.

        Holds the cache lock shared meanwhile, so ``cache clean``/``gc`` wait.
        """
        with self.cache.using():
            return self._download(path, version, patterns)

    def _download(self, path: str, version: str, patterns: list[str] | None) -> Path:
        idx = self.index(path, version)
        tree = self.cache.mod_dir(path, version)
        want = [e for e in idx.files if matches(patterns, e.path)]
        missing = [e for e in want if not (tree / e.path).is_file()]
        if not missing:
            tree.mkdir(parents=True, exist_ok=True)
            return tree
        label = f"{path}@{version}"
        total = sum(e.size for e in missing)
        # Ranges share the jobs: files enough to keep them busy need no splitting (each
        # connection costs CPU, and a range file is copied once more before the rename).
        large = sum(1 for e in missing if e.size >= RANGED_MIN)
        with self._done_lock:
            self._ranges[label] = min(self.opts.ranges, self.opts.jobs // max(1, large))
        self.progress.start(label, total)
        ok = False
        try:
            _run_all(
                [functools.partial(self._fetch_file, path, version, e, label) for e in missing],
                max(1, min(self.opts.jobs, len(missing))),
            )
            ok = True
        except KeyboardInterrupt:
            with self._done_lock:
                done = min(total, self._done.get(label, 0))
            self.progress.notice(
                f"interrupted: {label}: {human_size(done)} of {human_size(total)} kept for resuming"
            )
            raise
        finally:
            with self._done_lock:
                self._done.pop(label, None)
                self._ranges.pop(label, None)
            end(self.progress, label, ok)
        tree.mkdir(parents=True, exist_ok=True)
        return tree

    def _fetch_file(self, path: str, version: str, e: _index.IndexEntry, label: str) -> None:
        _interrupt.check()
        if not self.cache.has_blob(e.sha256):
            with self.cache.file_lock(e.sha256):
                if not self.cache.has_blob(e.sha256):
                    self._download_blob(path, version, e, label)
                else:
                    self._advance(label, e.size)
        else:
            self._advance(label, e.size)
        self.cache.link(path, version, e.path, e.sha256)

    def _download_blob(self, path: str, version: str, e: _index.IndexEntry, label: str) -> None:
        req = self.source.file(path, version, e.path)
        part = _Partial(self.cache.partial_path(e.sha256), e.size)
        with self._done_lock:
            ranges = self._ranges.get(label, 1)
        resumed = self._transfer_file(req, part, path, version, e, label, ranges)
        if resumed and not part.matches(e):
            # The bytes kept from before (a partial file left by another run, or the
            # part before a cut) may be the junk, not the source: once more from byte 0.
            part.discard()
            self._drop_segments(e.sha256)
            part = _Partial(self.cache.partial_path(e.sha256), e.size)
            self._transfer(req, part, path, version, e, label)
        if not part.matches(e):
            have, got = part.have, part.h.hexdigest()
            part.discard()
            self._drop_segments(e.sha256)
            raise VerifyError(
                path,
                version,
                f"{e.path}: the source served {have} bytes with sha256 {got}, but the index "
                f"lists {e.size} bytes with sha256 {e.sha256}; it is serving corrupt or "
                "tampered bytes (nothing was kept)",
            )
        self.cache.commit_blob(part.path, e.sha256)

    def _transfer(
        self,
        req: FileRequest,
        part: _Partial,
        path: str,
        version: str,
        e: _index.IndexEntry,
        label: str,
        limit: int | None = None,
    ) -> bool:
        """Fill ``part`` from ``req`` (up to byte ``limit``, when given, with a ranged
        request), resuming after cuts; whether any bytes were resumed."""
        policy = self.opts.resume_policy
        attempt = 0
        resumed = False
        while True:
            try:
                part.open()
                resumed = resumed or part.have > 0
                try:
                    if req.body is not None:
                        self._copy_body(req.body, part, path, version, e, label)
                    elif req.url.startswith("file:"):
                        self._copy_local(req.url, part, path, version, e, label)
                    else:
                        self._stream_http(
                            req.url, dict(req.headers), part, path, version, e, label, limit
                        )
                finally:
                    part.close()
                return resumed
            except (FetchError, _Cut) as exc:
                _interrupt.check()  # a connection cut by Ctrl-C is not worth a retry
                if policy.last(attempt):
                    raise FetchError(
                        path,
                        version,
                        f"downloading {e.path}: {exc} (gave up after {attempt + 1} tries; "
                        "run the command again to resume)",
                    ) from exc
                self.progress.notice(
                    f"{path}@{version}: {e.path}: {exc}; resuming "
                    f"(try {attempt + 2} of {policy.attempts})"
                )
                _interrupt.sleep(policy.wait_for(attempt) or 0.0)
                attempt += 1
            except OSError as exc:
                from .cache import _disk_error

                raise _disk_error(exc, part.path) from exc

    def _copy_body(
        self, body: bytes, part: _Partial, path: str, version: str, e: _index.IndexEntry, label: str
    ) -> None:
        # bytes the source already holds; like a resumed download, they are hashed from the start
        rest = body[part.have :]
        self._advance(label, part.have)
        part.write(rest, path, version, e)
        self._advance(label, len(rest))

    def _copy_local(
        self, url: str, part: _Partial, path: str, version: str, e: _index.IndexEntry, label: str
    ) -> None:
        src = Path(unquote(urlsplit(url).path))
        try:
            fin = open(src, "rb")
        except FileNotFoundError as exc:
            raise NotFoundError(path, version, f"{e.path}: not in the file tree ({src})") from exc
        with fin:
            fin.seek(part.have)
            self._advance(label, part.have)
            while chunk := fin.read(CHUNK):
                _interrupt.check()
                part.write(chunk, path, version, e)
                self._advance(label, len(chunk))

    def _stream_http(
        self,
        url: str,
        headers: dict[str, str],
        part: _Partial,
        path: str,
        version: str,
        e: _index.IndexEntry,
        label: str,
        limit: int | None = None,
    ) -> None:
        import httpx

        from .httpclient import HTTPStatusError, TransportError

        end = e.size if limit is None else limit
        if part.have >= end:
            return
        try:
            # identity encoding: Range offsets and the sha256 are about the stored bytes
            hdrs = {"Accept-Encoding": "identity", **headers}
            offset = part.have
            if end < e.size:
                hdrs["Range"], offset = f"bytes={part.have}-{end - 1}", 0
            with self.http().stream(url, headers=hdrs, offset=offset) as resp:
                if end < e.size and resp.status_code != 206:
                    raise _NoRanges("the server does not honour Range")
                if part.have and resp.status_code == 200:  # the server ignored Range: start over
                    part.restart()
                elif resp.status_code == 206 and not _range_starts_at(
                    resp.headers.get("content-range", ""), part.have
                ):
                    part.restart()
                    raise _Cut("the server answered a different range; restarting")
                self._advance(label, part.have)
                since, got = time.monotonic(), 0
                for chunk in resp.iter_bytes():
                    _interrupt.check()
                    if end < e.size and part.have + len(chunk) > end:
                        raise _NoRanges("the server sent more than the range asked for")
                    part.write(chunk, path, version, e)
                    self._advance(label, len(chunk))
                    got += len(chunk)
                    elapsed = time.monotonic() - since
                    if elapsed >= self.opts.rate_window:
                        if got < self.opts.min_rate * elapsed:
                            raise _Cut(
                                f"slower than {self.opts.min_rate} bytes/s for "
                                f"{self.opts.rate_window:g}s; reconnecting"
                            )
                        since, got = time.monotonic(), 0
        except HTTPStatusError as exc:
            if exc.status in (404, 410):
                raise NotFoundError(path, version, f"{e.path}: {exc}") from exc
            raise FetchError(path, version, f"{e.path}: {exc}") from exc
        except (TransportError, httpx.HTTPError) as exc:
            raise _Cut(f"{type(exc).__name__}: {exc}") from exc
        if part.have < end:
            raise _Cut(f"connection closed after {part.have} of {end} bytes")

    # ---- parallel ranges ---------------------------------------------------------

    def _transfer_file(
        self,
        req: FileRequest,
        part: _Partial,
        path: str,
        version: str,
        e: _index.IndexEntry,
        label: str,
        ranges: int,
    ) -> bool:
        """Fill ``part``: as up to ``ranges`` parallel ranges where that pays and the server
        allows it, else as one stream; whether any bytes were resumed."""
        http = req.body is None and req.url.startswith(("http:", "https:"))
        if not http or ranges < 2 or e.size < RANGED_MIN:
            return self._transfer(req, part, path, version, e, label)
        try:
            return self._transfer_ranged(req, part, path, version, e, label, ranges)
        except _NoRanges:
            self._drop_segments(e.sha256)  # one stream from what the file holds in order
            return self._transfer(req, part, path, version, e, label) or part.have > 0

    def _transfer_ranged(
        self,
        req: FileRequest,
        part: _Partial,
        path: str,
        version: str,
        e: _index.IndexEntry,
        label: str,
        ranges: int,
    ) -> bool:
        """Fetch ``e`` as ranges of a fixed grid: the range holding ``part.have`` streams
        into ``part`` itself; each later range into its own file beside it
        (``<sha256>.partial.<start>``, resumable on its own), appended to ``part`` (and
        so hashed) in order as the ranges before it are done.

        A server that answers a range with anything but that range raises
        :class:`_NoRanges` (the caller goes on with one stream).
        """
        part.load()
        cell = _range_size(e.size, ranges)
        first_end = min(e.size, (part.have // cell + 1) * cell)
        segs = [(s, min(s + cell, e.size)) for s in range(first_end, e.size, cell)]
        if not segs:
            return self._transfer(req, part, path, version, e, label)
        self._drop_segments(e.sha256, keep={s for s, _ in segs})  # merged before a crash
        resumed = part.have > 0 or any(self._segment(e.sha256, s).exists() for s, _ in segs)
        stop = threading.Event()
        done = [threading.Event() for _ in segs]
        errors: list[BaseException | None] = [None] * len(segs)

        def fetch(i: int) -> None:
            try:
                self._fetch_segment(req, segs[i], stop, path, version, e, label)
            except BaseException as exc:  # handed to the thread that merges
                errors[i] = exc
                stop.set()
            finally:
                done[i].set()

        threads = [threading.Thread(target=fetch, args=(i,), daemon=True) for i in range(len(segs))]
        for th in threads:
            th.start()
        try:
            resumed = self._transfer(req, part, path, version, e, label, first_end) or resumed
            for i, (start, end) in enumerate(segs):
                while not done[i].wait(0.1):
                    _interrupt.check()
                err = next((x for x in errors if x is not None), None)
                if err is not None:
                    raise err
                self._merge(part, start, end, path, version, e)
        finally:
            stop.set()
            if not _interrupt.CANCEL.is_set():
                for th in threads:  # nothing may write a range file once we go on
                    th.join()
        return resumed

    def _segment(self, sha256: str, start: int) -> Path:
        p = self.cache.partial_path(sha256)
        return p.with_name(f"{p.name}.{start}")

    def _drop_segments(self, sha256: str, keep: set[int] | None = None) -> None:
        """Remove the range files of ``sha256`` (but those starting at ``keep``)."""
        p = self.cache.partial_path(sha256)
        for q in p.parent.glob(f"{p.name}.*"):
            start = q.name[len(p.name) + 1 :]
            if start.isdigit() and int(start) not in (keep or set()):
                with contextlib.suppress(FileNotFoundError):
                    q.unlink()

    def _fetch_segment(
        self,
        req: FileRequest,
        seg: tuple[int, int],
        stop: threading.Event,
        path: str,
        version: str,
        e: _index.IndexEntry,
        label: str,
    ) -> None:
        """Fill the range file of ``seg`` (``[start, end)``), resuming after cuts."""
        import httpx

        from .httpclient import HTTPStatusError, TransportError

        start, end = seg
        where = self._segment(e.sha256, start)
        policy = self.opts.resume_policy
        first = True
        for attempt in policy.attempts_range():
            try:
                have = where.stat().st_size if where.exists() else 0
                if have > end - start:
                    where.unlink()
                    have = 0
                if first:
                    self._advance(label, have)
                    first = False
                if have == end - start:
                    return
                hdrs = {"Accept-Encoding": "identity", **req.headers}
                hdrs["Range"] = f"bytes={start + have}-{end - 1}"
                with self.http().stream(req.url, headers=hdrs) as resp, open(where, "ab") as f:
                    want = f"bytes {start + have}-{end - 1}/{e.size}"
                    if resp.status_code != 206 or resp.headers.get("content-range") != want:
                        raise _NoRanges("the server answered a range with something else")
                    since, got = time.monotonic(), 0
                    for chunk in resp.iter_bytes():
                        _interrupt.check()
                        if stop.is_set():
                            return
                        if have + len(chunk) > end - start:
                            raise _NoRanges("the server sent more than the range asked for")
                        f.write(chunk)
                        have += len(chunk)
                        got += len(chunk)
                        self._advance(label, len(chunk))
                        elapsed = time.monotonic() - since
                        if elapsed >= self.opts.rate_window:
                            if got < self.opts.min_rate * elapsed:
                                raise _Cut(
                                    f"slower than {self.opts.min_rate} bytes/s; reconnecting"
                                )
                            since, got = time.monotonic(), 0
                if have < end - start:
                    raise _Cut(f"connection closed after {have} of {end - start} bytes of a range")
                return
            except HTTPStatusError as exc:
                if exc.status in (404, 410):
                    raise NotFoundError(path, version, f"{e.path}: {exc}") from exc
                if exc.status == 416:
                    raise _NoRanges(str(exc)) from exc
                err: WgtpmError = FetchError(path, version, f"{e.path}: {exc}")
            except (TransportError, httpx.HTTPError) as exc:
                err = _Cut(f"{type(exc).__name__}: {exc}")
            except _Cut as exc:
                err = exc
            except OSError as exc:
                from .cache import _disk_error

                raise _disk_error(exc, where) from exc
            _interrupt.check()
            if stop.is_set():
                return
            if policy.last(attempt):
                raise FetchError(
                    path,
                    version,
                    f"downloading {e.path} (bytes {start}-{end - 1}): {err} (gave up after "
                    f"{attempt + 1} tries; run the command again to resume)",
                ) from err
            _interrupt.sleep(policy.wait_for(attempt) or 0.0)

    def _merge(
        self, part: _Partial, start: int, end: int, path: str, version: str, e: _index.IndexEntry
    ) -> None:
        """Append range ``[start, end)`` from its file to ``part`` (hashing it), then drop
        the file. After a crash in the middle, ``part`` may already hold some of it."""
        where = self._segment(e.sha256, start)
        if part.have < end:
            part.open()
            try:
                with open(where, "rb") as f:
                    f.seek(part.have - start)
                    while chunk := f.read(CHUNK):
                        _interrupt.check()
                        part.write(chunk, path, version, e)
            except FileNotFoundError as exc:
                raise _NoRanges(f"the file of range {start}-{end - 1} is gone") from exc
            except OSError as exc:
                from .cache import _disk_error

                raise _disk_error(exc, where) from exc
            finally:
                part.close()
            if part.have != end:  # cannot happen with a complete range file
                raise _NoRanges(f"a range file holds {part.have - start} of {end - start} bytes")
        with contextlib.suppress(FileNotFoundError):
            where.unlink()


class _ByteQueue(queue.Queue[bytes | None]):
    """A queue of chunks bounded by the bytes it holds (``maxsize`` is in bytes), not by
    their number: a source read 1 MiB at a time must not pile up hundreds of MiB behind
    a slower disk. A put waits while ``maxsize`` bytes or more are held, so at most
    ``maxsize`` plus one chunk are. ``None`` (the end) counts as one byte."""

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.held = 0

    def _qsize(self) -> int:
        return self.held

    def _put(self, item: bytes | None) -> None:
        super()._put(item)
        self.held += len(item) if item else 1

    def _get(self) -> bytes | None:
        item = super()._get()
        self.held -= len(item) if item else 1
        return item


class _Partial:
    """A partial download: the file, how much of it there is, and the hash of that much.

    A previous attempt's bytes (from this process or a killed one) are kept
    and hashed once, so the download resumes where it stopped. For a file over
    :data:`INLINE_MAX`, writing and hashing run on a second thread (hashlib and
    file writes release the GIL), so receiving the next bytes overlaps with
    hashing the last ones, and over :data:`SYNC_EVERY` a third one pushes the
    written bytes to disk as they come, so that the fsync in :meth:`close`
    (before the file may be renamed into place) has little left to wait for.
    Smaller files are written and hashed inline: no threads to start.
    """

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size
        self.h = hashlib.sha256()
        self.have = 0  # bytes accepted (written or queued)
        self._f: BinaryIO | None = None
        self._hashed = False
        self._q: _ByteQueue | None = None
        self._worker: threading.Thread | None = None
        self._sync_q: queue.Queue[int | None] | None = None
        self._syncer: threading.Thread | None = None
        self._error: BaseException | None = None

    def load(self) -> None:
        """Hash what a previous attempt left (once), so that ``have`` is known."""
        if not self._hashed:
            self._hashed = True
            try:
                if self.path.stat().st_size > self.size:
                    self.path.unlink()
            except FileNotFoundError:
                pass
            if self.path.exists():
                with open(self.path, "rb") as f:
                    while chunk := f.read(CHUNK):
                        _interrupt.check()
                        self.h.update(chunk)
                        self.have += len(chunk)

    def open(self) -> None:
        self.load()
        self._f = open(self.path, "ab")
        self._start()

    def _drain(self) -> None:
        assert self._q is not None and self._f is not None
        unsynced = 0
        while (chunk := self._q.get()) is not None:
            if self._error is None:
                try:
                    self._f.write(chunk)
                    self.h.update(chunk)
                    unsynced += len(chunk)
                    if unsynced >= SYNC_EVERY and self._sync_q is not None:
                        # Let the syncer push these bytes to disk while we go on, so the
                        # final fsync (before the rename) has little left to wait for.
                        self._f.flush()
                        with contextlib.suppress(queue.Full):
                            self._sync_q.put_nowait(self._f.fileno())
                        unsynced = 0
                except BaseException as exc:  # reported by write() or close()
                    self._error = exc

    def _sync(self) -> None:
        assert self._sync_q is not None
        while (fd := self._sync_q.get()) is not None:
            with contextlib.suppress(OSError):  # the final fsync in close() reports errors
                os.fdatasync(fd)

    def _start(self) -> None:
        if self.size - self.have <= INLINE_MAX:
            return  # write() writes and hashes itself
        self._q = _ByteQueue(QUEUE_BYTES)
        self._worker = threading.Thread(target=self._drain, daemon=True)
        self._worker.start()
        if self.size - self.have > SYNC_EVERY and hasattr(os, "fdatasync"):
            self._sync_q = queue.Queue(maxsize=1)
            self._syncer = threading.Thread(target=self._sync, daemon=True)
            self._syncer.start()

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def write(self, chunk: bytes, path: str, version: str, e: _index.IndexEntry) -> None:
        self._raise()
        if self.have + len(chunk) > self.size:
            self.discard()
            raise VerifyError(
                path,
                version,
                f"{e.path}: the source sends more than the {e.size} bytes the index lists",
            )
        if self._q is None:
            assert self._f is not None
            self._f.write(chunk)
            self.h.update(chunk)
        else:
            self._q.put(chunk)
        self.have += len(chunk)

    def restart(self) -> None:
        self._stop()
        assert self._f is not None
        self._f.seek(0)
        self._f.truncate()
        self.h = hashlib.sha256()
        self.have = 0
        self._start()

    def _stop(self) -> None:
        if self._worker is not None and self._q is not None:
            self._q.put(None)
            self._worker.join()
            self._worker = None
        self._q = None
        if self._syncer is not None and self._sync_q is not None:
            self._sync_q.put(None)
            self._syncer.join()
            self._syncer = None
        self._sync_q = None

    def close(self) -> None:
        self._stop()
        if self._f is not None:
            try:
                self._f.flush()
                os.fsync(self._f.fileno())
            finally:
                self._f.close()
                self._f = None
        if self._error is not None:
            # what was queued but not written must not count as downloaded
            self.have = self.path.stat().st_size if self.path.exists() else 0
        self._raise()

    def matches(self, e: _index.IndexEntry) -> bool:
        """Whether what was written is exactly the file the index lists."""
        return self.have == e.size and self.h.hexdigest() == e.sha256

    def discard(self) -> None:
        try:
            self.close()
        except OSError:
            pass
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.h = hashlib.sha256()
        self.have = 0


def _run_all(tasks: list[Callable[[], None]], jobs: int) -> None:
    """Run ``tasks`` on ``jobs`` daemon threads; return when all are done, raise the first error.

    Daemon threads, and a wait that wakes for Ctrl-C: an interrupted command
    returns (and exits) at once, even while a thread is still blocked on a
    server that sends nothing; the threads stop at their next chunk (partial
    files on disk are only ever appended to, so wherever a thread stops, what
    is there resumes). After the first error no new task starts.
    """
    if not tasks:
        return
    todo: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
    for t in tasks:
        todo.put(t)
    errors: list[BaseException] = []
    left = [len(tasks)]
    done = threading.Event()
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                task = todo.get_nowait()
            except queue.Empty:
                return
            try:
                if not errors:
                    task()
            except BaseException as exc:  # handed to the waiting thread
                with lock:
                    errors.append(exc)
            finally:
                with lock:
                    left[0] -= 1
                    if left[0] == 0 or errors:
                        done.set()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(jobs)]
    for th in threads:
        th.start()
    while not done.wait(0.1):
        if _interrupt.CANCEL.is_set():
            # give the threads a moment to stop at their next chunk and close their files
            done.wait(0.5)
            raise _interrupt.Interrupted()
    if errors:
        if not _interrupt.CANCEL.is_set():
            for th in threads:  # nothing may still write once the caller goes on
                th.join()
        raise errors[0]


def _range_size(size: int, ranges: int) -> int:
    """The length of each range of a file of ``size`` bytes (whole MiB; the last is shorter)."""
    cell = max(RANGE_MIN, -(-size // max(1, ranges)))
    return -(-cell // (1 << 20)) << 20


class _NoRanges(WgtpmError):
    """The server does not serve the ranges asked for (ignores Range, other lengths)."""


class _Cut(WgtpmError):
    """A download stopped early; it resumes from what was written."""


def _range_starts_at(content_range: str, offset: int) -> bool:
    # "bytes 100-199/200"
    try:
        return int(content_range.split()[1].split("-")[0]) == offset
    except (IndexError, ValueError):
        return False
