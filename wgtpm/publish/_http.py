"""The publish targets' requests: JSON or file bodies over :meth:`HttpClient.send`, JSON answers.

:meth:`~wgtpm.httpclient.HttpClient.send` does the HTTP (credentials by
origin, no redirect followed, retries only when the caller says a request is
idempotent, secrets redacted from errors); this module gives the targets
what they share on top of it: a body from a JSON value or a file (streamed,
sent again from its start on a retry), and the answer as an :class:`Answer`
(status, headers, the JSON body). :func:`is_transient` says which failures
may succeed when sent again, for a target that retries a non-idempotent
write itself after checking what the failed try left.
"""

from __future__ import annotations

import json as _json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..httpclient import Body, Credential, HttpClient, HTTPStatusError, TransportError, redact

__all__ = ["Answer", "file_chunks", "is_transient", "send"]

#: Bytes read from a file per chunk while uploading it.
CHUNK = 1 << 20


@dataclass(frozen=True)
class Answer:
    """A response: its status, headers and JSON body (``None`` when the body is not JSON)."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)
    text: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def doc(self) -> dict[str, Any]:
        """The body when it is a JSON object, else ``{}``."""
        return self.body if isinstance(self.body, dict) else {}

    @property
    def error(self) -> str:
        """The server's message (``error``, or GitHub's ``message``), one line, secrets redacted."""
        said = self.doc.get("error") or self.doc.get("message") or self.text
        lines = str(said or "").strip().splitlines()
        return redact(lines[0][:300]) if lines else f"HTTP {self.status}"


def file_chunks(
    path: Path, each: Callable[[int], None] | None = None
) -> Callable[[], Iterator[bytes]]:
    """A body for :func:`send`: the bytes of ``path``, read anew for each try;
    ``each(n)`` is told of every chunk as it goes (progress)."""

    def chunks() -> Iterator[bytes]:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                yield chunk
                if each is not None:
                    each(len(chunk))

    return chunks


def send(
    client: HttpClient,
    method: str,
    url: str,
    *,
    credentials: Iterable[Credential] = (),
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    content: Body = None,
    retry: bool | None = None,
) -> Answer:
    """Send one request with a JSON body (``json``) or ``content``; any status is answered.

    Raises :class:`~wgtpm.httpclient.TransportError` when no answer came back
    (after the retries of an idempotent request: see ``retry`` of
    :meth:`~wgtpm.httpclient.HttpClient.send`).
    """
    hdrs = dict(headers or {})
    if json is not None:
        content = _json.dumps(json).encode()
        hdrs["Content-Type"] = "application/json"
    resp = client.send(
        method, url, content=content, headers=hdrs, credentials=credentials, retry=retry
    )
    text = resp.content.decode("utf-8", "replace")
    try:
        body = _json.loads(resp.content) if resp.content else None
    except ValueError:
        body = None
    return Answer(resp.status_code, body, dict(resp.headers), text if body is None else "")


def is_transient(exc: Exception | Answer) -> bool:
    """Whether a failed request may succeed when sent again (network, 5xx, 429)."""
    if isinstance(exc, Answer):
        return exc.status == 429 or exc.status >= 500
    if isinstance(exc, HTTPStatusError):
        return exc.status == 429 or exc.status >= 500
    return isinstance(exc, TransportError)
