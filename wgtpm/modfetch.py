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
   sha256 match the index (after an fsync); then links it into the module
   tree. A file of :data:`RANGED_MIN` bytes or more comes as parallel ranges
   written in place, each range resumable on its own (:class:`_Ranges`), and
   is hashed in order as the ranges fill it.

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
import mmap
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar, Protocol
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
    from ._httptransport import BodyReader
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
RANGED_MIN = 32 << 20
#: The smallest range (ranges are whole MiB; ``FetchOptions.ranges`` at most per file).
RANGE_MIN = 8 << 20
#: Connections a ranged file starts with; the rest come once each is slower than
#: :data:`RANGE_SLOW` bytes a second over :data:`PACE_WINDOW` seconds (see ``_Pace``).
RANGES_FIRST = 1
ALL_RANGES = 1 << 30  # "as many as there are ranges left", to widen()
RANGE_SLOW = 128 << 20
PACE_WINDOW = 0.1
#: A window this many times :data:`PACE_WINDOW` long says this process stalled (the
#: hasher, which ticks the pace about every ``PACE_WINDOW`` while it waits, did not
#: run); one in which each connection still brought half of :data:`RANGE_SLOW` or
#: more says nothing of the line.
PACE_STALE = 2.5
#: Bytes read back from the page cache per hash update while ranges fill a file.
HASH_READ = 4 << 20
#: Bytes of a range go into memory (:mod:`wgtpm._direct`) only while the hash is at
#: most this far behind them; further ahead, they wait in the page cache.
LEAD = 32 << 20
MOD_SUFFIX = "/wgt.mod"


class SumChecker(Protocol):
    """What the fetcher asks about hashes (backed by wgt.sum and, for new lines, the checksum log)."""

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        """Accept ``h1`` for ``path version`` (``version`` may end in /wgt.mod) or raise.

        ``record=False`` checks against known lines without adding a new one
        (for wgt.mod files read only to learn about retractions).
        """
        ...


class TrustHook(Protocol):
    """The main module's trust lines (:mod:`wgtpm.trust`), asked before a version's index
    is accepted."""

    def covers(self, path: str) -> bool:
        """Whether some trust line names ``path`` (only then is a signature looked up)."""
        ...

    def check(
        self, path: str, version: str, files: Mapping[str, str], bundle: bytes | None
    ) -> None:
        """Raise unless ``bundle`` is a trusted signature over exactly ``files``."""
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
        trust: TrustHook | None = None,
    ) -> None:
        self.cache = cache
        self.source = source
        self.sums = sums
        self.trust = trust
        self.opts = opts or FetchOptions()
        self.progress: Reporter = progress or SILENT
        self._http_factory = http
        self._http: HttpClient | None = None
        self._http_lock = threading.Lock()
        self._done: dict[str, int] = {}  # label -> bytes reported, for "N of M kept"
        self._ranges: dict[str, int] = {}  # label -> ranges per large file
        self._started: set[str] = set()  # labels whose progress has started
        self._stopping: set[str] = set()  # labels whose early downloads are to stop
        self._indexes: dict[tuple[str, str], _index.ReleaseIndex] = {}  # verified ones
        self._done_lock = threading.Lock()

    def _advance(self, label: str, n: int) -> None:
        """Count ``n`` more bytes of unit ``label``; bytes that came before the unit's
        progress started (early downloads) are reported when it starts."""
        with self._done_lock:
            if label in self._stopping:
                raise _Stopped()
            if not n:
                return
            self._done[label] = self._done.get(label, 0) + n
            started = label in self._started
        if started:
            self.progress.advance(label, n)

    def _start_unit(self, label: str, total: int) -> None:
        with self._done_lock:
            self._started.add(label)
            self.progress.start(label, total)
            if self._done.get(label):
                self.progress.advance(label, self._done[label])

    def _set_ranges(self, label: str, entries: Iterable[_index.IndexEntry]) -> None:
        """How many ranges each large file of ``entries`` (one unit's) comes in: large
        files as many as the jobs keep them busy and need no splitting (each connection
        costs CPU); fewer share about twice the jobs' connections in ranges."""
        large = sum(1 for e in entries if e.size >= RANGED_MIN)
        jobs = self.opts.jobs
        with self._done_lock:
            self._ranges[label] = (
                1 if large >= jobs else min(self.opts.ranges, 2 * jobs // max(1, large))
            )

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
        """The verified index of ``path@version`` (kept once verified: a command asks for
        it again, and a large one costs much to parse)."""
        with self._done_lock:
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
        with self._done_lock:
            self._indexes[(path, version)] = idx
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

    # ---- files ------------------------------------------------------------

    def missing(self, path: str, version: str, patterns: list[str] | None = None) -> bool:
        """Whether ``download`` has anything to do.

        Cheap for a cached version: the cached index is checked against wgt.sum
        (a changed or missing wgt.sum line is caught here too) and the tree is stat'ed.
        """
        with self._done_lock:
            idx = self._indexes.get((path, version))
        if idx is None:
            raw = self.cache.read_meta(path, version, "index.json")
            if raw is None:
                return True
            idx = _index.parse(raw, path, version)
            self._check(path, version, idx.h1(), cached=True)
        tree = self.cache.mod_dir(path, version)
        return any(not _placed(tree, e) for e in idx.files if matches(patterns, e.path))

    def download(self, path: str, version: str, patterns: list[str] | None = None) -> Path:
        """Make the module tree of ``path@version`` hold every selected file; returns its dir.

        Holds the cache lock shared meanwhile, so ``cache clean``/``gc`` wait.
        """
        with self.cache.using():
            return self._download(path, version, patterns)

    def _download(self, path: str, version: str, patterns: list[str] | None) -> Path:
        label = f"{path}@{version}"
        tree = self.cache.mod_dir(path, version)
        early = self._early(path, version, patterns, tree, label)
        total, ok = 0, False
        try:
            idx = self.index(path, version)
            self._check_provenance(path, version, idx, tree)
            missing = [e for e in idx.files if matches(patterns, e.path) and not _placed(tree, e)]
            if not missing:
                ok = True
                tree.mkdir(parents=True, exist_ok=True)
                return tree
            total = sum(e.size for e in missing)
            self._set_ranges(label, missing)
            self._start_unit(label, total)
            _run_all(
                (
                    functools.partial(self._fetch_file, path, version, e, label)
                    for e in missing
                    if e not in early
                ),
                max(1, min(self.opts.jobs, len(missing))),
            )
            early.wait()
            for e in missing:
                if e in early:
                    early.raise_for(e)
                    self._fetch_file(path, version, e, label, counted=True)
            ok = True
        except KeyboardInterrupt:
            if total:
                with self._done_lock:
                    done = min(total, self._done.get(label, 0))
                self.progress.notice(
                    f"interrupted: {label}: {human_size(done)} of {human_size(total)} kept for resuming"
                )
            raise
        finally:
            if not ok:
                early.stop()
            with self._done_lock:
                self._done.pop(label, None)
                self._ranges.pop(label, None)
                self._stopping.discard(label)
                started = label in self._started
                self._started.discard(label)
            if started:
                end(self.progress, label, ok)
        tree.mkdir(parents=True, exist_ok=True)
        return tree

    def _early(
        self, path: str, version: str, patterns: list[str] | None, tree: Path, label: str
    ) -> _Early:
        """Start downloading the files the source knows of before the index is made
        (:meth:`Source.known_files`), when the index is still to be made.

        Each is stored as a blob only once its bytes match the size and sha256 given,
        so nothing unverified is kept; it enters the module tree only once the index,
        checked against wgt.sum, lists it exactly so.
        """
        if self.cache.read_meta(path, version, "index.json") is not None:
            return _Early.NONE
        todo = [
            e
            for e in self.source.known_files(path, version)
            if matches(patterns, e.path)
            and not self.cache.has_blob(e.sha256)
            and not _placed(tree, e)
        ]
        if not todo:
            return _Early.NONE
        self._set_ranges(label, todo)
        return _Early(self, path, version, todo, label)

    def _check_provenance(
        self, path: str, version: str, idx: _index.ReleaseIndex, tree: Path
    ) -> None:
        """Refuse a release whose provenance file (covered by h1) contradicts its index.

        It is fetched before any other file, whatever ``select`` says, and checked on
        every download, so a refused version never becomes a complete module tree.
        """
        e = idx.entry(_index.PROVENANCE_FILE)
        if e is not None:
            from .publish._provenance import check_provenance

            if not (tree / e.path).is_file():
                self._fetch_file(path, version, e, _index.PROVENANCE_FILE)
            check_provenance(idx, (tree / e.path).read_bytes())

    def _fetch_file(
        self, path: str, version: str, e: _index.IndexEntry, label: str, counted: bool = False
    ) -> None:
        self._fetch_blob(path, version, e, label, counted)
        self.cache.link(path, version, e.path, e.sha256)

    def _fetch_blob(
        self, path: str, version: str, e: _index.IndexEntry, label: str, counted: bool = False
    ) -> None:
        """Make sure the blob of ``e`` is in the cache, downloading it if not; ``counted``:
        its bytes were reported already (by an early download)."""
        _interrupt.check()
        if not self.cache.has_blob(e.sha256):
            req = self.source.file(path, version, e.path)
            if req.body is not None and _is(req.body, e):
                # bytes in hand and right: stored under a name of their own, no lock (a
                # process storing the same bytes at once renames the same file into place)
                try:
                    self.cache.put_bytes(req.body, e.sha256)
                except OSError as exc:
                    from .cache import _disk_error

                    raise _disk_error(exc, self.cache.blob_path(e.sha256)) from exc
                self._advance(label, e.size)
                return
            with self.cache.file_lock(e.sha256):
                if not self.cache.has_blob(e.sha256):
                    self._download_blob(path, version, e, label, req)
                    return
        if not counted:
            self._advance(label, e.size)

    def _download_blob(
        self, path: str, version: str, e: _index.IndexEntry, label: str, req: FileRequest
    ) -> None:
        part = _Partial(self.cache.partial_path(e.sha256), e.size)
        with self._done_lock:
            ranges = self._ranges.get(label, 1)
        resumed = self._transfer_file(req, part, path, version, e, label, ranges)
        if resumed and not part.matches(e):
            # The bytes kept from before (a partial file left by another run, or the
            # part before a cut) may be the junk, not the source: once more from byte 0.
            part.discard()
            _Ranges.drop_journals(part.path)
            part = _Partial(self.cache.partial_path(e.sha256), e.size)
            self._transfer(req, part, path, version, e, label)
        if not part.matches(e):
            have, got = part.have, part.h.hexdigest()
            part.discard()
            _Ranges.drop_journals(part.path)
            raise VerifyError(
                path,
                version,
                f"{e.path}: the source served {have} bytes with sha256 {got} ({_where(req)}), "
                f"but the index lists {e.size} bytes with sha256 {e.sha256}; it is serving "
                "corrupt or tampered bytes (nothing was kept)",
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
    ) -> bool:
        """Fill ``part`` from ``req``, resuming after cuts; whether any bytes were resumed."""
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
                        self._stream_http(req.url, dict(req.headers), part, path, version, e, label)
                finally:
                    part.close()
                return resumed
            except _Final:
                raise
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
    ) -> None:
        from .httpclient import HTTPStatusError, network_errors

        end = e.size
        if part.have >= end:
            return
        try:
            # identity encoding: Range offsets and the sha256 are about the stored bytes
            hdrs = {"Accept-Encoding": "identity", **headers}
            with self.http().stream(url, headers=hdrs, offset=part.have) as resp:
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
        except network_errors() as exc:
            if getattr(exc, "final", False):
                raise _Final(path, version, f"{e.path}: {exc}") from exc
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
        journals = _Ranges.present(part.path)
        if not http or ((ranges < 2 or e.size < RANGED_MIN) and not journals):
            _Ranges.settle(part.path)
            return self._transfer(req, part, path, version, e, label)
        try:
            return self._transfer_ranged(req, part, path, version, e, label, max(2, ranges))
        except _NoRanges:
            _Ranges.settle(part.path)  # one stream from what the file holds in order
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
        """Fetch ``e`` as parallel ranges written in place into ``part``'s file.

        Each range's thread writes its bytes at their offsets and then records how
        many it has in the range's journal (``<sha256>.partial.<start>``, 20 digits),
        so a killed download resumes every range where it stopped. This thread hashes
        the file in order as the ranges fill it, while the download goes on, so the
        hash is done soon after the last byte arrives: the bytes next in line from
        memory as they come (written past the page cache, :mod:`wgtpm._direct`), those
        that came ahead of their turn from a map of the page cache.
        A server that answers a range with anything but that range raises
        :class:`_NoRanges` (the caller goes on with one stream).
        """
        state = _Ranges.open(part.path, e.size, _range_size(e.size, ranges))
        resumed = state.resumed
        stop = threading.Event()
        pending = [i for i in range(len(state.segs)) if state.done[i] < state.length(i)]
        todo, take = iter(pending), threading.Lock()  # the next range a connection fills
        where = _Location(req)

        def work() -> None:
            try:
                while not stop.is_set():
                    with take:
                        i = next(todo, None)
                    if i is None:
                        return
                    self._fetch_range(where, state, i, stop, path, version, e, label)
            except BaseException as exc:  # handed to the thread that hashes
                state.errors.append(exc)
                stop.set()
            finally:
                state.wake()

        threads: list[threading.Thread] = []

        def widen(n: int) -> None:
            if threads:
                state.line_bound()
            for _ in range(min(n, len(pending) - len(threads))):
                th = threading.Thread(target=work, daemon=True)
                threads.append(th)
                th.start()

        try:
            self._advance(label, sum(state.done))
            widen(RANGES_FIRST)
            pace = _Pace(state, lambda: len(threads), widen)
            h = hashlib.sha256()
            state.hash_in_order(h, pace.tick)
            state.finish()
        finally:
            stop.set()
            state.wake()
            if not _interrupt.CANCEL.is_set():
                for th in threads:  # nothing may write the file once we go on
                    th.join()
            state.close()
        part.adopt(h, e.size)
        _Ranges.drop_journals(part.path)
        return resumed

    def _fetch_range(
        self,
        where: _Location,
        state: _Ranges,
        i: int,
        stop: threading.Event,
        path: str,
        version: str,
        e: _index.IndexEntry,
        label: str,
    ) -> None:
        """Fill range ``i`` of ``state`` in place, resuming after cuts."""
        from ._httptransport import BodyReader, TooLong
        from .httpclient import HTTPStatusError, network_errors

        start, end = state.segs[i]
        policy = self.opts.resume_policy
        for attempt in policy.attempts_range():
            try:
                state.drain(i)  # resumed from what was written, not what was in flight
                have = state.done[i]
                if have == end - start:
                    return
                url, headers = where.get()
                hdrs = {"Accept-Encoding": "identity", **headers}
                hdrs["Range"] = f"bytes={start + have}-{end - 1}"
                with self.http().stream(url, headers=hdrs) as resp:
                    where.learn(str(resp.request.url))
                    want = f"bytes {start + have}-{end - 1}/{e.size}"
                    if resp.status_code != 206 or resp.headers.get("content-range") != want:
                        raise _NoRanges("the server answered a range with something else")
                    since, got = time.monotonic(), 0

                    def tick(n: int) -> None:
                        nonlocal since, got
                        got += n
                        self._advance(label, n)
                        _interrupt.check()
                        elapsed = time.monotonic() - since
                        if elapsed >= self.opts.rate_window:
                            if got < self.opts.min_rate * elapsed:
                                raise _Cut(
                                    f"slower than {self.opts.min_rate} bytes/s; reconnecting"
                                )
                            since, got = time.monotonic(), 0

                    at = start + have
                    with BodyReader(resp, end - at) as body:
                        while at < end and not stop.is_set():
                            n = state.fill(i, body, at, stop, tick)
                            if not n:
                                break
                            at += n
                if stop.is_set():
                    return
                state.drain(i)
                if state.done[i] < end - start:
                    raise _Cut(
                        f"connection closed after {state.done[i]} of {end - start} bytes of a range"
                    )
                return
            except TooLong as exc:
                raise _NoRanges(f"the server sent more than the range asked for ({exc})") from exc
            except HTTPStatusError as exc:
                if where.forget(url):  # a learned URL that expired: ask the file's own again
                    continue
                if exc.status in (404, 410):
                    raise NotFoundError(path, version, f"{e.path}: {exc}") from exc
                if exc.status == 416:
                    raise _NoRanges(str(exc)) from exc
                err: WgtpmError = FetchError(path, version, f"{e.path}: {exc}")
            except network_errors() as exc:
                if getattr(exc, "final", False):
                    raise _Final(path, version, f"{e.path}: {exc}") from exc
                err = _Cut(f"{type(exc).__name__}: {exc}")
            except _Cut as exc:
                err = exc
            except OSError as exc:
                from .cache import _disk_error

                raise _disk_error(exc, state.path) from exc
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


class _Early:
    """Downloads of the files a source knew of before its index was made
    (:meth:`Fetcher._early`), run on their own threads while the index is made.

    Each file's blob is downloaded and verified as any other (:meth:`Fetcher._fetch_blob`)
    but not linked: the unit links it once the index lists it. Its error is kept and
    raised by :meth:`raise_for` when the index lists the file, since the unit's download
    of that file is the one that failed.
    """

    NONE: ClassVar[_Early]

    def __init__(
        self,
        fetcher: Fetcher | None,
        path: str,
        version: str,
        entries: list[_index.IndexEntry],
        label: str,
    ) -> None:
        self._keys = {_Early._key(e) for e in entries}
        self._errors: dict[tuple[str, int, str], BaseException] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._fetcher, self._label = fetcher, label
        if fetcher is None or not entries:
            return

        def one(e: _index.IndexEntry) -> None:
            try:
                fetcher._fetch_blob(path, version, e, label)
            except BaseException as exc:  # raised by raise_for(), if the index lists it
                with self._lock:
                    self._errors[_Early._key(e)] = exc

        def run() -> None:
            with contextlib.suppress(BaseException):  # Ctrl-C: the unit's thread reports it
                _run_all((functools.partial(one, e) for e in entries), jobs)

        jobs = max(1, min(fetcher.opts.jobs, len(entries)))
        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    @staticmethod
    def _key(e: _index.IndexEntry) -> tuple[str, int, str]:
        return (e.path, e.size, e.sha256)

    def __contains__(self, e: _index.IndexEntry) -> bool:
        return _Early._key(e) in self._keys

    def wait(self) -> None:
        """Return once every early download has ended (at once on Ctrl-C)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.1)
            _interrupt.check()

    def raise_for(self, e: _index.IndexEntry) -> None:
        """Raise the error the early download of ``e`` ended with, if it failed."""
        with self._lock:
            err = self._errors.get(_Early._key(e))
        if err is not None:
            raise err

    def stop(self) -> None:
        """Stop the early downloads at their next chunk (the unit failed) and wait for them;
        what they wrote stays for resuming."""
        if self._thread is None or self._fetcher is None:
            return
        with self._fetcher._done_lock:
            self._fetcher._stopping.add(self._label)
        if not _interrupt.CANCEL.is_set():
            self._thread.join()


_Early.NONE = _Early(None, "", "", [], "")


class _Location:
    """Where the ranges of one file are asked for: the file's URL until a range has been
    answered, then the URL its redirects led to (a CDN's signed URL), so that each
    further range skips the redirect (a round trip to the API per range). The headers
    follow the redirect rule (:func:`~wgtpm.httpclient.forwarded`): every one to the
    file's own origin, the safe ones only to another. A learned URL that fails (it
    expired) is forgotten, and the next try asks the file's URL again."""

    def __init__(self, req: FileRequest) -> None:
        self._req = req
        self._learned: str | None = None

    def get(self) -> tuple[str, dict[str, str]]:
        from .httpclient import forwarded

        url = self._learned
        if url is None:
            return self._req.url, dict(self._req.headers)
        return url, forwarded(self._req.headers, self._req.url, url)

    def learn(self, url: str) -> None:
        if url != self._req.url:
            self._learned = url

    def forget(self, url: str) -> bool:
        """Forget ``url`` if it is the learned one; whether it was."""
        if url != self._learned:
            return False
        self._learned = None
        return True


class _Ranges:
    """A file being filled as parallel ranges, in place: the file and each range's journal.

    On disk: ``<sha256>.partial`` holds every byte at its offset (holes where
    nothing has come yet) and ``<sha256>.partial.<start>`` holds, as 20 digits,
    how many bytes of the range starting at ``start`` are in the file. A
    journal is written after the bytes it counts, so after a crash it may count
    too few (those bytes come again), never too many. The grid of a download
    that resumes is the one its journals name, whatever the grid would be now.
    """

    JOURNAL_WIDTH = 20

    def __init__(self, path: Path, size: int, segs: list[tuple[int, int]], done: list[int]) -> None:
        from ._direct import Direct, open_direct

        self.path = path
        self.size = size
        self.segs = segs
        self.done = done  # bytes of each range written, from its start
        self.resumed = any(done)
        self.errors: list[BaseException] = []  # of the ranges' threads and the writers
        self._reach = list(done)  # bytes of each range come (written, or being written)
        self._early: list[dict[int, int]] = [{} for _ in segs]  # written past a gap: at -> n
        self._pos = 0  # bytes hashed
        self._cond = threading.Condition()
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._jfd = [os.open(self._journal(s), os.O_RDWR | os.O_CREAT, 0o644) for s, _ in segs]
        if os.fstat(self._fd).st_size > size:
            os.ftruncate(self._fd, size)
        dfd = open_direct(path)
        self.direct = (
            None
            if dfd is None
            else Direct(dfd, self._fd, self._cond, self._landed_at, self._failed)
        )

    # ---- the state on disk ---------------------------------------------

    @staticmethod
    def present(part: Path) -> bool:
        """Whether ``part`` is a ranged partial file (its first range's journal exists;
        a look at one name, not a listing of the folder, as it is asked for every file)."""
        return part.with_name(f"{part.name}.0").exists()

    @staticmethod
    def journals(part: Path) -> dict[int, int]:
        """``{start: bytes}`` of the journals beside ``part`` (a malformed one counts 0)."""
        out: dict[int, int] = {}
        for q in part.parent.glob(f"{part.name}.*"):
            start = q.name[len(part.name) + 1 :]
            if not start.isdigit():
                continue
            try:
                raw = q.read_bytes()
            except FileNotFoundError:
                continue
            n = raw.decode("ascii", "replace")
            ok = len(raw) == _Ranges.JOURNAL_WIDTH and n.isdigit()
            out[int(start)] = int(n) if ok else 0
        return out

    @classmethod
    def drop_journals(cls, part: Path) -> None:
        for start in cls.journals(part):
            with contextlib.suppress(FileNotFoundError):
                part.with_name(f"{part.name}.{start}").unlink()

    @classmethod
    def settle(cls, part: Path) -> None:
        """Turn a ranged partial file back into a plain one: keep only the bytes
        contiguous from the start (the ranges' journals say which), drop the journals."""
        journals = cls.journals(part) if cls.present(part) else {}
        if not journals:
            return
        prefix = 0
        for start in sorted(journals):
            if start != prefix:
                break
            prefix += journals[start]
            nxt = min((s for s in journals if s > start), default=None)
            if nxt is None or prefix != nxt:
                break
        with contextlib.suppress(FileNotFoundError):
            if part.stat().st_size > prefix:
                os.truncate(part, prefix)
        cls.drop_journals(part)

    @classmethod
    def open(cls, part: Path, size: int, cell: int) -> _Ranges:
        """The ranges of a download of ``size`` bytes into ``part``: those of its journals
        when it resumes, else a grid of ``cell`` bytes (a plain partial file's bytes kept)."""
        journals = {s: n for s, n in cls.journals(part).items() if s < size}
        if journals and 0 in journals:
            starts = sorted(journals)
            segs = [(s, nxt) for s, nxt in zip(starts, [*starts[1:], size], strict=True)]
            done = [min(journals[s], b - s) for s, b in segs]
        else:
            if journals:  # no journal for byte 0: what the file holds cannot be placed
                cls.drop_journals(part)
                with contextlib.suppress(FileNotFoundError):
                    os.truncate(part, 0)
            try:
                have = min(part.stat().st_size, size)  # a plain partial file: its prefix
            except FileNotFoundError:
                have = 0
            segs = [(s, min(s + cell, size)) for s in range(0, size, cell)]
            done = [max(0, min(have - s, b - s)) for s, b in segs]
        state = cls(part, size, segs, done)
        for i in range(len(segs)):
            state._record(i)
        return state

    def _journal(self, start: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{start}")

    def _record(self, i: int) -> None:
        os.pwrite(self._jfd[i], b"%020d" % self.done[i], 0)

    def length(self, i: int) -> int:
        s, b = self.segs[i]
        return b - s

    # ---- filling and hashing --------------------------------------------

    def fill(
        self,
        i: int,
        body: BodyReader,
        at: int,
        stop: threading.Event,
        tick: Callable[[int], None],
    ) -> int:
        """Put the next bytes of range ``i``'s ``body`` at ``at`` in the file; how many (0:
        the body ended, or ``stop``). Bytes next in line for the hash go into a buffer
        of :attr:`direct`, the hash is taken from there as they are written; any other
        is written into the file (the page cache), a pipe's worth at a time, and
        hashed from it later (as are bytes next in line when no buffer comes free soon:
        a reader that waits loses what a capped line could bring). ``tick(n)`` is called
        as each ``n`` come, and may raise (what came until then is kept)."""
        end = self.segs[i][1]
        direct = self.direct
        piece = None
        if direct is not None and self._next_in_line(i, at):
            piece = direct.take(i, at, stop)  # None: no buffer came free soon (or stop)
        if piece is None:
            if stop.is_set():
                return 0
            n = body.into_file(self._fd, at, end - at)
            if n:
                self._landed_at(i, at, n)
                tick(n)
            return n
        assert direct is not None
        try:
            while not piece.full(end):
                with piece.space(end) as room:
                    n = body.into(room)
                if not n:
                    break
                piece.n += n
                with self._cond:
                    self._reach[i] = max(self._reach[i], at + piece.n - self.segs[i][0])
                tick(n)
        finally:
            direct.submit(piece)
        return piece.n

    def _next_in_line(self, i: int, at: int) -> bool:
        """Whether bytes of range ``i`` at ``at`` are next in line for the hash: every byte
        before the range has come, and the hash is at most :data:`LEAD` bytes behind."""
        assert self.direct is not None
        with self._cond:
            if not self.direct.on or at - self._pos > LEAD:
                return False
            return all(self._reach[k] >= self.length(k) for k in range(i))

    def _landed_at(self, i: int, at: int, n: int) -> None:
        """Count the ``n`` bytes of range ``i`` at ``at`` as written in the file (they may
        land before bytes in front of them, two writers being at work), in the journal
        too."""
        with self._cond:
            start = self.segs[i][0]
            early = self._early[i]
            early[at] = n
            while (k := start + self.done[i]) in early:
                self.done[i] += early.pop(k)
            self._reach[i] = max(self._reach[i], self.done[i])
            self._cond.notify_all()
            self._record(i)

    def _failed(self, exc: BaseException) -> None:
        """A writer's error, for the hasher to raise."""
        from .cache import _disk_error

        self.errors.append(_disk_error(exc, self.path) if isinstance(exc, OSError) else exc)

    def drain(self, i: int) -> None:
        """Wait until every byte of range ``i`` that came is written (or has failed); then
        what it has is :attr:`done`."""
        if self.direct is not None:
            self.direct.drain(i)
        with self._cond:
            self._early[i].clear()  # none are left but after a writer's failure
            self._reach[i] = self.done[i]

    def line_bound(self) -> None:
        """More connections come: the line, not the hash, sets the pace. From now on every
        byte goes through the page cache, which keeps the disk's writes off the way
        (on a capped line the buffers' direct writes cost more than they spare: a 311 MB
        get of 40 MiB files at 50 MB/s a connection took 0.45-0.50x snapshot_download's
        time with them, 0.41-0.45x without)."""
        if self.direct is not None:
            with self._cond:
                self.direct.on = False

    def come(self) -> int:
        """Bytes of the file that have come (written, or in a buffer being written)."""
        with self._cond:
            return sum(self._reach)

    def waited(self) -> float:
        """Seconds the bytes next in line have waited for a free buffer, all told."""
        return self.direct.waited if self.direct is not None else 0.0

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def hash_in_order(self, h: hashlib._Hash, tick: Callable[[], None]) -> None:
        """Hash the file into ``h`` from byte 0 as the ranges fill it, then wait until all
        of it is written; raises the first error of a range's thread or a writer; calls
        ``tick`` while it waits for bytes. Bytes in a buffer of :attr:`direct` are
        hashed from there (before they are written, even), the rest from the file;
        every ``SYNC_EVERY`` bytes of those, they are pushed to disk in the background
        so the final fsync has little left to do."""
        pos = i = 0
        unsynced = 0
        syncer = _Syncer(self._fd)
        direct = self.direct
        errors = self.errors
        try:
            while pos < self.size:
                if pos >= self.segs[i][1]:
                    i += 1
                    continue
                with self._cond:
                    while True:
                        if errors:
                            raise errors[0]
                        piece = direct.ready.pop(pos, None) if direct is not None else None
                        avail = self.segs[i][0] + self.done[i]
                        if piece is not None or avail > pos:
                            break
                        self._cond.wait(0.1)
                        _interrupt.check()
                        tick()
                    if piece is None and direct is not None and direct.ready:
                        avail = min(avail, min((k for k in direct.ready if k > pos), default=avail))
                if piece is not None:
                    assert direct is not None
                    with piece.data() as v:
                        h.update(v)
                    pos += piece.n
                    direct.hashed(piece)
                else:
                    while pos < avail:
                        n = min(HASH_READ, avail - pos)
                        self._hash_span(h, pos, n)
                        pos += n
                        unsynced += n
                        if unsynced >= SYNC_EVERY:
                            syncer.kick()
                            unsynced = 0
                with self._cond:
                    self._pos = pos
            with self._cond:
                while sum(self.done) < self.size:  # hashed from buffers still being written
                    if errors:
                        raise errors[0]
                    self._cond.wait(0.1)
                    _interrupt.check()
        finally:
            syncer.stop()

    def _hash_span(self, h: hashlib._Hash, pos: int, n: int) -> None:
        """Hash ``n`` bytes of the file at ``pos``, straight from the page cache: a map of
        the span, not a read into a buffer (one copy of every byte less)."""
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        if os.fstat(self._fd).st_size < pos + n:  # a map past the end would fault
            raise _NoRanges("the partial file is shorter than its journals say")
        span = mmap.mmap(self._fd, pos + n - base, access=mmap.ACCESS_READ, offset=base)
        with span, memoryview(span) as v:
            h.update(v[pos - base :])

    def finish(self) -> None:
        """Push the whole file to disk (before it may be renamed into place)."""
        os.fsync(self._fd)

    def close(self) -> None:
        if self.direct is not None:
            self.direct.close()
        os.close(self._fd)
        for fd in self._jfd:
            os.close(fd)


class _Pace:
    """How many connections fill a ranged file: :data:`RANGES_FIRST` at first, and one
    per range once a :data:`PACE_WINDOW` shows each connection bringing less than
    :data:`RANGE_SLOW` bytes a second (the line caps each connection, so more
    connections bring more: all of them at once, as each step up costs a round trip
    or two before its bytes come). On a fast line one connection is all it takes,
    and each more one costs CPU the hashing needs, and sends bytes ahead of their
    turn through the page cache (a 1 GiB file on loopback: 8 connections 1.8 s, 2
    connections 1.5 s, before bytes next in line skipped the page cache; then 1
    connection 1.3-1.6 s). A window in which the bytes next in line waited for
    their buffers half the time or more (:meth:`_Ranges.waited`: the hash, not the
    line, set the pace) widens nothing, nor does one that lasted :data:`PACE_STALE`
    windows or more and still brought half of :data:`RANGE_SLOW` a connection: the
    machine stopped this process for a while (a 1 GiB get on loopback once saw 29 MB
    in a 0.3 s window, widened, and sent the rest of the file through the page cache,
    as a capped line's are). A capped line's windows last 0.1-0.2 s on a busy machine,
    and one of 50 MB/s a connection is slow whatever its window's length."""

    def __init__(
        self, state: _Ranges, running: Callable[[], int], widen: Callable[[int], None]
    ) -> None:
        self._state = state
        self._running = running
        self._widen = widen
        self._since = 0.0
        self._had = state.come()
        self._waited = state.waited()

    def tick(self) -> None:
        now = time.monotonic()
        have = self._state.come()
        if not self._since:  # the window starts with the first bytes, not the connects
            if have > self._had:
                self._since, self._had = now, have
                self._waited = self._state.waited()
            return
        span = now - self._since
        if span < PACE_WINDOW:
            return
        waited = self._state.waited()
        rate = (have - self._had) / span / max(1, self._running())  # a second a connection
        stalled = span >= PACE_STALE * PACE_WINDOW and rate >= RANGE_SLOW / 2
        if rate < RANGE_SLOW and not stalled and waited - self._waited < span / 2:
            self._widen(ALL_RANGES)
        self._since, self._had, self._waited = now, have, waited


class _Syncer:
    """Pushes a file's written bytes to disk on a background thread when kicked."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._q: queue.Queue[int | None] = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None

    def kick(self) -> None:
        if not hasattr(os, "fdatasync"):
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        with contextlib.suppress(queue.Full):
            self._q.put_nowait(self._fd)

    def _run(self) -> None:
        while (fd := self._q.get()) is not None:
            with contextlib.suppress(OSError):  # the final fsync reports errors
                os.fdatasync(fd)

    def stop(self) -> None:
        if self._thread is not None:
            self._q.put(None)
            self._thread.join()
            self._thread = None


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

    def adopt(self, h: hashlib._Hash, have: int) -> None:
        """Take the hash of the file's first ``have`` bytes, computed elsewhere (ranges)."""
        self.h, self.have, self._hashed = h, have, True

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


def _run_all(tasks: Iterable[Callable[[], None]], jobs: int) -> None:
    """Run ``tasks`` on ``jobs`` daemon threads; return when all are done, raise the first error.

    The threads take the tasks from the iterable one at a time, so a generator costs
    memory for the tasks running, not for all of them (a release may list 100,000 files).
    Daemon threads, and a wait that wakes for Ctrl-C: an interrupted command
    returns (and exits) at once, even while a thread is still blocked on a
    server that sends nothing; the threads stop at their next chunk (partial
    files on disk are only ever appended to, so wherever a thread stops, what
    is there resumes). After the first error no new task starts.
    """
    todo = iter(tasks)
    errors: list[BaseException] = []
    running = [jobs]
    done = threading.Event()
    lock = threading.Lock()

    def worker() -> None:
        try:
            while True:
                try:
                    with lock:  # a generator is not safe for threads
                        task = None if errors else next(todo, None)
                    if task is None:
                        return
                    task()
                except BaseException as exc:  # handed to the waiting thread
                    with lock:
                        errors.append(exc)
                    done.set()
                    return
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
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


def _placed(tree: Path, e: _index.IndexEntry) -> bool:
    """Whether the file of ``e`` is in module tree ``tree`` (a string, not a Path, is made
    for each: a release may list 100,000 files)."""
    return os.path.isfile(f"{tree}/{e.path}")


def _is(data: bytes, e: _index.IndexEntry) -> bool:
    """Whether ``data`` is the file ``e`` lists (its size and sha256)."""
    return len(data) == e.size and hashlib.sha256(data).hexdigest() == e.sha256


def _where(req: FileRequest) -> str:
    """Where a file's bytes came from, as an error may show it (no query, no user)."""
    from .httpclient import shown_url

    return f"from {shown_url(req.url)}"


def _range_size(size: int, ranges: int) -> int:
    """The length of each range of a file of ``size`` bytes (whole MiB; the last is shorter)."""
    cell = max(RANGE_MIN, -(-size // max(1, ranges)))
    return -(-cell // (1 << 20)) << 20


class _Stopped(Exception):
    """An early download stops: its unit failed (:meth:`_Early.stop`)."""


class _NoRanges(WgtpmError):
    """The server does not serve the ranges asked for (ignores Range, other lengths)."""


class _Cut(WgtpmError):
    """A download stopped early; it resumes from what was written."""


class _Final(FetchError):
    """A download failed in a way that trying again cannot help (a redirect loop, a
    redirect to ``file://``, an unknown host: a ``final`` transport error); not resumed."""


def _range_starts_at(content_range: str, offset: int) -> bool:
    # "bytes 100-199/200"
    try:
        return int(content_range.split()[1].split("-")[0]) == offset
    except (IndexError, ValueError):
        return False
