"""Reading a blob from a registry: its stated size, and its bytes checked against its size
and digest as they come (resumed with ``Range`` after a cut)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .._errors import UsageError
from ..httpclient import HTTPStatusError, network_errors, redact
from ._errors import OciError, OciNotFoundError

if TYPE_CHECKING:
    from .client import OciClient

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")


def check_digest(digest: str) -> None:
    """Raise :class:`UsageError` unless ``digest`` is ``sha256:`` and 64 hex digits."""
    if not _DIGEST.match(digest):
        raise UsageError(f"{digest[:80]!r} is not a sha256 digest (sha256:<64 hex>)")


def blob_size(client: OciClient, repository: str, digest: str) -> int:
    """The size the registry states for a blob; :class:`OciNotFoundError` if absent.

    Asked as ``GET`` of the first byte (``Range: bytes=0-0``), whose ``Content-Range``
    states the whole size: :class:`HttpClient` hands back a read answer (``HEAD``'s too)
    without its ``Content-Length``, and a streamed one with its headers as they came.
    """
    check_digest(digest)
    try:
        with client.request(
            "GET", repository, f"blobs/{digest}", headers={"Range": "bytes=0-0"}, stream=True
        ) as resp:
            total = resp.headers.get("content-range", "").rpartition("/")[2]
            if resp.status_code == 200:
                total = resp.headers.get("content-length", "")
    except HTTPStatusError as exc:
        if exc.status == 404:
            raise OciNotFoundError(
                f"{client.registry}/{repository}: blob {digest}: not found (HTTP 404)"
            ) from None
        raise OciError(f"{client.registry}/{repository}: blob {digest}: {exc}") from None
    if not total.isdigit():
        raise OciError(f"{client.registry}/{repository}: blob {digest}: no size stated")
    return int(total)


def blob_chunks(
    client: OciClient, repository: str, digest: str, size: int, *, offset: int = 0, tries: int = 5
) -> Iterator[bytes]:
    """The bytes of a blob from ``offset``, as they come, resumed with ``Range`` after a
    cut (at most ``tries`` times); checked against ``size`` and, when read from 0,
    against ``digest`` at the end. Raises :class:`OciError` on a mismatch."""
    url = client.blob_url(repository, digest)
    h = hashlib.sha256() if offset == 0 else None
    have = offset
    for attempt in range(tries):
        try:
            rng = {"Range": f"bytes={have}-"} if have else {}
            with client.request("GET", repository, url, headers=rng, stream=True) as resp:
                # a 200 to a Range request: the whole blob again, whose first bytes the
                # caller has had already (and the hash has seen)
                skip = have if have and resp.status_code != 206 else 0
                if skip and h is None:
                    raise OciError(f"{redact(url)}: the registry ignored Range; cannot resume")
                for chunk in resp.iter_bytes():
                    if skip:
                        n = min(skip, len(chunk))
                        chunk, skip = chunk[n:], skip - n
                        if not chunk:
                            continue
                    if have + len(chunk) > size:
                        raise OciError(
                            f"{client.registry}/{repository}: blob {digest} is longer than the "
                            f"{size} bytes stated for it; refusing it"
                        )
                    if h is not None:
                        h.update(chunk)
                    have += len(chunk)
                    yield chunk
            break
        except network_errors():
            if attempt == tries - 1 or have >= size:
                raise
    if have != size:
        raise OciError(
            f"{client.registry}/{repository}: blob {digest} ended at {have} of {size} bytes"
        )
    if h is not None and "sha256:" + h.hexdigest() != digest:
        raise OciError(
            f"{client.registry}/{repository}: blob {digest} has other bytes (sha256 "
            f"{h.hexdigest()}); refusing it"
        )
