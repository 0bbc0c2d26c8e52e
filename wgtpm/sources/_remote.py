"""What the direct sources (GitHub, Hugging Face, the PAW hub) share.

- :class:`MetaCache`, the seam through which a source revalidates what it
  listed before (``ETag`` / ``If-None-Match``) instead of downloading it
  again. It stores opaque bytes under a key; the source decides what they
  mean. :class:`MemoryMetaCache` keeps them for the life of the process; the
  module cache can back the same protocol on disk.
- :func:`http_error`, which turns an HTTP failure into the module error the
  resolver expects: :class:`~wgtpm.NotFoundError` for 404 and 410 (a
  ``WGTPROXY`` list falls through on it), :class:`~wgtpm.FetchError` for
  everything else, both naming module@version and what to do next.
- :func:`rfc3339` and :func:`parse_time` for the ``Time`` of a
  :class:`~wgtpm.sources.RevInfo` (``2026-11-29T12:00:00Z``).
- :func:`verified_get`, which fetches a small file whose sha256 (or git blob
  id) the host's API already stated, and retries when the bytes disagree.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Protocol

from .._errors import FetchError, ModuleError, NotFoundError

if TYPE_CHECKING:
    from ..httpclient import HttpClient

__all__ = [
    "MemoryMetaCache",
    "MetaCache",
    "git_blob_id",
    "http_error",
    "parse_time",
    "rfc3339",
    "sha256_check",
    "verified_get",
]

#: How many times a small metadata file is downloaded again when its hash disagrees.
VERIFY_ATTEMPTS = 3


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


def http_error(
    exc: Exception, path: str, version: str | None, what: str, hint: str = ""
) -> ModuleError:
    """The module error for a failed request about ``path@version``.

    ``what`` says what was being fetched (``"release v0.1.0"``); ``hint`` is
    added to errors that are not a plain 404 (``"set GITHUB_TOKEN ..."``).
    """
    from ..httpclient import HTTPStatusError

    if isinstance(exc, HTTPStatusError) and exc.status in (404, 410):
        return NotFoundError(path, version, f"{what}: not found (HTTP {exc.status})")
    tail = f"; {hint}" if hint else ""
    return FetchError(path, version, f"{what}: {exc}{tail}")


def rfc3339(t: datetime) -> str:
    """``2026-11-29T12:00:00Z``: UTC, whole seconds."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> datetime:
    """Parse ``2026-11-29T12:00:00Z``, ``...12:00:00.123Z`` or ``...+00:00`` into aware UTC."""
    s = s.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    t = datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc)


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
) -> bytes:
    """GET ``url`` and return the body once ``check(body)`` finds nothing wrong.

    ``check`` returns ``None`` for good bytes or a reason. Bad bytes are
    fetched again (:data:`VERIFY_ATTEMPTS` in all), then reported as a
    :class:`~wgtpm.FetchError` that names ``what`` and the reason.
    """
    from ..httpclient import HTTPStatusError, TransportError

    why = ""
    for _ in range(VERIFY_ATTEMPTS):
        try:
            body = http.get(url, headers=headers).content
        except (HTTPStatusError, TransportError) as exc:
            raise http_error(exc, path, version, what, hint) from None
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
