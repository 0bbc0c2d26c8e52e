"""What the hosted sources (GitHub, Hugging Face, the PAW hub) share.

A hosted source answers the proxy protocol from a host's own API. What is
the same for every host lives here, so that a new host costs one module and
one line of :mod:`wgtpm.sources.hosts`:

- **stores**: :class:`MetaCache`, the seam through which a source revalidates
  what it listed before (``ETag`` / ``If-None-Match``) instead of
  downloading it again; :class:`MemoryMetaCache` keeps entries for the life
  of the process, :class:`CacheMetaStore` in the module cache. Sources are
  handed their store; they never build the disk cache themselves.
- **environment**: :func:`env_url` and :func:`env_secret` read the host's
  ``*_API_URL`` / ``*_TOKEN`` variables unless the caller passed a value.
- **paths and tags**: :func:`repo_elems` splits ``HOST/OWNER/REPO[/DIR][/vN]``;
  :func:`tag_version` says which module version a tag names.
- **index synthesis**: :func:`synthesise_index` for a release wgtpm did not
  publish (``module PATH\\n`` as wgt.mod comes from :func:`wgtpm.index.synthetic_mod`).
- **byte hand-off**: :class:`BodyKeeper` holds the verified bytes a source
  downloaded while indexing, until :meth:`Source.file` hands them to the
  fetcher as :attr:`FileRequest.body` (within a budget in memory, then one on disk).
- **errors**: :func:`http_error` / :func:`translated` turn an HTTP failure
  into the module error the resolver expects: :class:`~wgtpm.NotFoundError`
  for 404 and 410 (a ``WGTPROXY`` list falls through on it),
  :class:`~wgtpm.FetchError` for everything else, both naming
  module@version and what to do next, the cause kept (``from exc``).
  :func:`get_json` reads an API document and refuses one that is too large,
  not UTF-8, not JSON or nested too deeply, with one clear error.
- **time**: :func:`rfc3339` and :func:`parse_time` for the ``Time`` of a
  :class:`~wgtpm.sources.RevInfo` (``2026-11-29T12:00:00Z``).
- :func:`verified_get`, which fetches a small file whose sha256 (or git blob
  id) the host's API already stated, and fetches it again when the bytes disagree.

Retries of failed requests are the HTTP client's (:mod:`wgtpm._retry`); the
only loops here are about bytes that arrived but were wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from .. import index as _index
from .. import module as _module
from .. import version as _version
from .._errors import FetchError, InvalidVersionError, ModuleError, NotFoundError

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = [
    "BodyKeeper",
    "CacheMetaStore",
    "MemoryMetaCache",
    "MetaCache",
    "env_secret",
    "env_url",
    "get_json",
    "git_blob_id",
    "http_error",
    "parse_json",
    "parse_time",
    "repo_elems",
    "rfc3339",
    "sha256_check",
    "synthesise_index",
    "tag_version",
    "translated",
    "verified_get",
]

#: How many times a small metadata file is downloaded again when its hash disagrees.
VERIFY_ATTEMPTS = 3


# ---- stores ---------------------------------------------------------------


class MetaCache(Protocol):
    """Revalidation state of listings: ``key`` -> (``etag``, ``body``).

    Keys are short strings chosen by the source (``github:<url>``); bodies
    are opaque bytes. Implementations must be safe to call from several
    threads; losing an entry is always allowed (it costs one full download).
    """

    def get(self, key: str) -> tuple[str, bytes] | None:
        """The (etag, body) stored under ``key``, or ``None``."""
        ...

    def put(self, key: str, etag: str, body: bytes) -> None:
        """Remember ``body`` and the ``etag`` it was served with."""
        ...


class MemoryMetaCache:
    """A :class:`MetaCache` in memory, for one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, tuple[str, bytes]] = {}

    def get(self, key: str) -> tuple[str, bytes] | None:
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, etag: str, body: bytes) -> None:
        with self._lock:
            self._data[key] = (etag, body)


class _EtagStore(Protocol):
    def get_etag(self, key: str) -> tuple[str, bytes] | None: ...
    def put_etag(self, key: str, etag: str, body: bytes) -> None: ...


class CacheMetaStore:
    """A :class:`MetaCache` kept in the module cache (:class:`wgtpm.cache.Cache`) across runs."""

    def __init__(self, cache: _EtagStore) -> None:
        self.cache = cache

    def get(self, key: str) -> tuple[str, bytes] | None:
        return self.cache.get_etag(key)

    def put(self, key: str, etag: str, body: bytes) -> None:
        self.cache.put_etag(key, etag, body)


class BodyKeeper:
    """Verified bytes a source downloaded early, kept until taken once.

    Up to ``budget`` bytes are kept in memory, then up to ``spill`` bytes more in one
    unnamed temporary file (written as they come, read back by :meth:`take`), so that a
    repository of 100,000 small files neither holds them all in memory nor downloads
    them twice; beyond both, a body is not kept (the fetcher downloads it again). The
    fetcher verifies what it is handed against the index like any download, so a byte
    changed on disk is caught. A file that cannot be written (a full disk) keeps nothing.
    """

    def __init__(self, budget: int, spill: int = 0) -> None:
        self.budget = budget
        self.spill = spill
        self._lock = threading.Lock()
        self._bodies: dict[Hashable, bytes] = {}
        self._kept = 0
        self._spilled: dict[Hashable, tuple[int, int]] = {}  # key -> (offset, length)
        self._file: BinaryIO | None = None
        self._end = 0  # bytes written to the file

    def keep(self, key: Hashable, data: bytes) -> bool:
        """Keep ``data`` under ``key`` unless it is there already or the budgets are spent."""
        with self._lock:
            if key in self._bodies or key in self._spilled:
                return False
            if self._kept + len(data) <= self.budget:
                self._bodies[key] = data
                self._kept += len(data)
                return True
            if self._end + len(data) > self.spill:
                return False
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile(prefix="wgtpm-bodies.")
                self._file.seek(self._end)
                self._file.write(data)
            except OSError:
                return False
            self._spilled[key] = (self._end, len(data))
            self._end += len(data)
            return True

    def take(self, key: Hashable) -> bytes | None:
        """The bytes kept under ``key`` (forgotten from now on), or ``None``."""
        with self._lock:
            data = self._bodies.pop(key, None)
            if data is not None:
                self._kept -= len(data)
                return data
            where = self._spilled.pop(key, None)
            if where is None or self._file is None:
                return None
            try:
                self._file.seek(where[0])
                data = self._file.read(where[1])
            except OSError:
                data = None
            if not self._spilled:  # all taken: the file goes
                self._file.close()
                self._file, self._end = None, 0
            return data if data is not None and len(data) == where[1] else None


# ---- environment, paths, tags ---------------------------------------------


def env_url(given: str | None, var: str, default: str) -> str:
    """``given``, else ``$var``, else ``default``; without a trailing ``/``."""
    return (given or os.environ.get(var) or default).rstrip("/")


def env_secret(given: str | None, *names: str) -> str | None:
    """``given`` (even ``""``, which means none), else the first of ``names`` that is set."""
    if given is not None:
        return given or None
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def repo_elems(path: str, host: str) -> list[str] | None:
    """The elements of ``path`` after ``host``, a ``/vN`` major suffix left out.

    ``github.com/acme/xor/sub/v2`` -> ``["acme", "xor", "sub"]``;
    ``github.com/acme/v2`` -> ``["acme", "v2"]`` (a repository named v2, not a
    major suffix); ``None`` when the path is on another host.
    """
    p = _module.normalise(path)
    base, _major = _module.split_path_major(p)
    if base.count("/") < 2:
        base = p
    elems = base.split("/")
    return elems[1:] if elems[0] == host else None


def tag_version(path: str, tag: str, prefix: str = "") -> str | None:
    """The version of module ``path`` that git tag ``tag`` names, or ``None``.

    The tag must be ``prefix`` + a valid version that is not a
    pseudo-version, with the major agreeing with the path's ``/vN`` suffix.
    """
    if not tag.startswith(prefix):
        return None
    v = tag[len(prefix) :]
    if not _version.is_valid(v) or _version.is_pseudo(v):
        return None
    try:
        _module.check_path_major(_module.normalise(path), v)
    except InvalidVersionError:
        return None
    return v


def synthesise_index(
    path: str,
    version: str,
    entries: Sequence[_index.IndexEntry],
    *,
    time: str | None,
    build: Mapping[str, Any],
    commit: str | None = None,
) -> bytes:
    """The ``wgt.index.json`` of a release wgtpm did not publish (docs/design.md section 5)."""
    module = _module.normalise(path)
    # Checked as parse checks what it reads, but on the entries themselves: encoding and
    # parsing 100,000 files again to check them cost tens of MB at once.
    _index.check_files(module, version, entries)
    return _index.ReleaseIndex(
        module, version, list(entries), time=time, commit=commit, build=dict(build)
    ).to_json()


# ---- errors -----------------------------------------------------------------


def http_error(
    exc: Exception, path: str, version: str | None, what: str, hint: str = ""
) -> ModuleError:
    """The module error for a failed request about ``path@version``.

    ``what`` says what was being fetched (``"release v0.1.0"``); ``hint`` is
    added to errors that are not a plain 404 (``"set GITHUB_TOKEN ..."``).
    The caller raises it ``from exc``.
    """
    from ..httpclient import HTTPStatusError

    if isinstance(exc, HTTPStatusError) and exc.status in (404, 410):
        return NotFoundError(path, version, f"{what}: not found (HTTP {exc.status})")
    tail = f"; {hint}" if hint else ""
    return FetchError(path, version, f"{what}: {exc}{tail}")


@contextlib.contextmanager
def translated(path: str, version: str | None, what: str, hint: str = "") -> Iterator[None]:
    """Run a request, raising an HTTP client error as :func:`http_error` (``from`` it)."""
    from ..httpclient import HTTPStatusError, ResponseTooLargeError, TransportError

    try:
        yield
    except (HTTPStatusError, TransportError, ResponseTooLargeError) as exc:
        raise http_error(exc, path, version, what, hint) from exc


def parse_json(data: bytes, path: str, version: str | None, what: str) -> Any:
    """``data`` parsed as JSON, or a :class:`FetchError` saying why it is not.

    Refused: bytes that are not UTF-8, text that is not JSON, and documents
    nested so deeply that the parser runs out of stack (``RecursionError``).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FetchError(path, version, f"{what}: the answer is not UTF-8 text") from exc
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise FetchError(path, version, f"{what}: the answer is not JSON ({why})") from exc


def get_json(
    http: HttpClient,
    url: str,
    headers: Mapping[str, str],
    *,
    path: str,
    version: str | None,
    what: str,
    hint: str = "",
) -> Any:
    """GET an API document (at most :data:`~wgtpm.httpclient.MAX_METADATA` bytes) and parse it."""
    with translated(path, version, what, hint):
        data = http.get_bytes(url, headers=headers)
    return parse_json(data, path, version, what)


# ---- time ----------------------------------------------------------------


def rfc3339(t: datetime) -> str:
    """``2026-11-29T12:00:00Z``: UTC, whole seconds."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> datetime:
    """Parse ``2026-11-29T12:00:00Z``, ``...12:00:00.123Z`` or ``...+00:00`` into aware UTC.

    Raises ``ValueError`` for anything else (also a year out of range).
    """
    s = s.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(s)
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        return t.astimezone(timezone.utc)
    except OverflowError as exc:
        raise ValueError(f"time {s!r} is out of range") from exc


# ---- verified small downloads ----------------------------------------------


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob: ``sha1("blob <len>\\0" + data)`` in hex."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def verified_get(
    http: HttpClient,
    url: str,
    headers: Mapping[str, str],
    check: Callable[[bytes], str | None],
    *,
    path: str,
    version: str | None,
    what: str,
    hint: str = "",
    limit: int | None = None,
    file: bool = False,
) -> bytes:
    """GET ``url`` and return the body once ``check(body)`` finds nothing wrong.

    ``check`` returns ``None`` for good bytes or a reason. Bad bytes are
    fetched again (:data:`VERIFY_ATTEMPTS` in all), then reported as a
    :class:`~wgtpm.FetchError` that names ``what`` and the reason. The body
    may hold ``limit`` bytes (the size the API states), else
    :data:`~wgtpm.httpclient.MAX_METADATA`. ``file``: the body is a file of the
    module (not its wgt.mod or index), read at a download's minimum rate rather
    than within the metadata deadline (:meth:`~wgtpm.httpclient.HttpClient.get`).
    """
    from ..httpclient import MAX_METADATA

    why = ""
    for _ in range(VERIFY_ATTEMPTS):
        with translated(path, version, what, hint):
            body = http.get_bytes(
                url, headers=headers, limit=MAX_METADATA if limit is None else limit, file=file
            )
        problem = check(body)
        if problem is None:
            return body
        why = problem
    raise FetchError(
        path,
        version,
        f"{what}: the bytes served do not match what the API lists ({why}) after "
        f"{VERIFY_ATTEMPTS} tries; the host or a proxy on the way is corrupting them",
    )


def sha256_check(size: int | None, sha256: str | None) -> Callable[[bytes], str | None]:
    """A ``check`` for :func:`verified_get` against a size and sha256 (either may be unknown)."""

    def check(body: bytes) -> str | None:
        if size is not None and len(body) != size:
            return f"{len(body)} bytes, want {size}"
        if sha256 is not None:
            got = hashlib.sha256(body).hexdigest()
            if got != sha256:
                return f"sha256 {got}, want {sha256}"
        return None

    return check
