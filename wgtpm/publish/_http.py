"""Requests with bodies (POST, PUT) for publishing, over :class:`wgtpm.httpclient.HttpClient`.

:class:`~wgtpm.httpclient.HttpClient` speaks GET (with retries, safe
redirects, capped bodies); publishing also sends JSON and file bodies. A
write is sent once, follows no redirect (a token must not travel to another
origin, and a redirected PUT would lose its body), and its answer's body is
read up to :data:`~wgtpm.httpclient.MAX_METADATA`. The caller decides what
to retry: :func:`is_transient` says which failures may succeed on a retry.

This reaches into the client's httpx client; it belongs in HttpClient
itself (a ``send`` method), where the GitHub and Hugging Face targets can use
it too.
"""

from __future__ import annotations

import json as _json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..httpclient import MAX_METADATA, HttpClient, HTTPStatusError, TransportError, redact

__all__ = ["Answer", "is_transient", "send"]

CHUNK = 1 << 20


@dataclass(frozen=True)
class Answer:
    """A response: its status and its JSON body (``{}`` when the body is not JSON)."""

    status: int
    doc: dict[str, Any]

    @property
    def error(self) -> str:
        """The server's ``error`` message, one line, secrets redacted."""
        text = str(self.doc.get("error", "")).strip().splitlines()
        return redact(text[0][:300]) if text else f"HTTP {self.status}"


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


def send(
    client: HttpClient,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    json: Any = None,
    file: Path | None = None,
) -> Answer:
    """Send one request with a JSON body or a file's bytes (streamed); any status is answered.

    Raises :class:`~wgtpm.httpclient.TransportError` when no answer came back.
    """
    import httpx

    hdrs = dict(headers)
    content: Any = None
    if json is not None:
        content = _json.dumps(json).encode()
        hdrs["Content-Type"] = "application/json"
    elif file is not None:
        content = _chunks(file)
        hdrs["Content-Length"] = str(file.stat().st_size)
        hdrs["Content-Type"] = "application/octet-stream"
    inner = client._client  # see the module docstring
    try:
        with inner.stream(method, url, content=content, headers=hdrs) as resp:
            status, body = resp.status_code, _read_capped(resp)
    except httpx.HTTPError as exc:
        raise TransportError(url, f"{method}: {type(exc).__name__}: {exc}") from exc
    try:
        doc = _json.loads(body) if body else {}
    except ValueError:
        doc = {"error": body.decode("utf-8", "replace")}
    return Answer(status, doc if isinstance(doc, dict) else {})


def _read_capped(resp: Any) -> bytes:
    """At most :data:`MAX_METADATA` bytes of the body (an answer is a small JSON document)."""
    chunks, have = [], 0
    for chunk in resp.iter_bytes():
        chunks.append(chunk)
        have += len(chunk)
        if have >= MAX_METADATA:
            break
    return b"".join(chunks)[:MAX_METADATA]


def is_transient(exc: Exception | Answer) -> bool:
    """Whether a failed request may succeed when sent again (network, 5xx, 429)."""
    if isinstance(exc, Answer):
        return exc.status == 429 or exc.status >= 500
    if isinstance(exc, HTTPStatusError):
        return exc.status == 429 or exc.status >= 500
    return isinstance(exc, TransportError)
