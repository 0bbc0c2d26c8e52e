"""Reading a response's body whole, counted while it streams."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _interrupt
from ._errors import ResponseTooLargeError

if TYPE_CHECKING:
    import httpx

    from ._pace import Pace

__all__ = ["buffered", "read_capped"]


def buffered(resp: httpx.Response, body: bytes) -> httpx.Response:
    """``resp`` with ``body``, its (decoded) bytes, read: what :meth:`HttpClient.get` and
    :meth:`HttpClient.send` return. The encoding and length headers of the wire are dropped,
    since ``body`` is already decoded."""
    import httpx

    return httpx.Response(
        resp.status_code,
        headers=[
            (k, v)
            for k, v in resp.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ],
        content=body,
        request=resp.request,
    )


def read_capped(resp: httpx.Response, limit: int, pace: Pace | None, *, cut: bool = False) -> bytes:
    """The decoded body of ``resp``, counted while it streams.

    Over ``limit`` bytes: the first ``limit`` when ``cut``, else
    :class:`ResponseTooLargeError`, raised before the rest is received (also
    at once when ``Content-Length`` already says so). ``pace`` is told of
    every chunk, and raises when the body comes too slowly.
    """
    url = str(resp.url)
    declared = resp.headers.get("content-length", "")
    if not cut and declared.isdigit() and int(declared) > limit:
        raise ResponseTooLargeError(url, limit)
    chunks: list[bytes] = []
    have = 0
    for chunk in resp.iter_bytes():
        _interrupt.check()
        if pace is not None:
            pace.chunk(len(chunk))
        have += len(chunk)
        if have > limit:
            if not cut:
                raise ResponseTooLargeError(url, limit)
            chunks.append(chunk[: len(chunk) - (have - limit)])
            break
        chunks.append(chunk)
    return b"".join(chunks)
