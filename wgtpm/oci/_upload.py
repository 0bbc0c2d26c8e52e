"""Blob uploads into an OCI registry: one ``PUT``, ``PATCH`` chunks, or a mount (the
blob half of :mod:`wgtpm.oci.push`, whose docstring tells the protocol).

:class:`BlobUpload` sends one blob the repository does not have, through its
:class:`~wgtpm.oci.push.Pusher`'s requests; :class:`Blob` and :class:`PushError` are
what the pusher's callers see (re-exported by :mod:`wgtpm.oci.push`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from .._errors import WgtpmError
from ..httpclient import redact

if TYPE_CHECKING:
    import httpx

    from .push import Pusher

#: Times a chunked upload resumes after a chunk failed on the way.
PATCH_RESUMES = 3
_OCTETS = "application/octet-stream"
_READ = 1 << 20


class PushError(WgtpmError):
    """A push the registry refused or that did not get an answer: what was being done, and
    why (the registry's own words, secrets redacted). ``transient``: trying again may help."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(redact(message))
        self.transient = transient


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Blob:
    """Bytes to push: ``data``, or the file ``path``; ``digest`` is ``sha256:HEX`` of them."""

    digest: str
    size: int
    path: Path | None = None
    data: bytes | None = None

    @classmethod
    def of(cls, data: bytes) -> Blob:
        return cls(sha256_digest(data), len(data), data=data)

    def body(self, start: int = 0, end: int | None = None) -> bytes | Callable[[], Iterator[bytes]]:
        """Bytes ``[start, end)`` as a body: bytes, or a function reading the file anew for
        each try (so a retried request sends them again from the start)."""
        end = self.size if end is None else end
        if self.data is not None:
            return self.data[start:end]
        path = self.path
        assert path is not None

        def chunks() -> Iterator[bytes]:
            with open(path, "rb") as f:
                f.seek(start)
                left = end - start
                while left > 0:
                    chunk = f.read(min(_READ, left))
                    if not chunk:
                        raise PushError(f"{path} became shorter while it was being uploaded")
                    left -= len(chunk)
                    yield chunk

        return chunks


def refusal(resp: httpx.Response) -> str:
    """The registry's reason in one line: its first error's code and message, or the status."""
    try:
        doc = json.loads(resp.content) if resp.content else None
    except ValueError:
        doc = None
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        said = " ".join(str(first.get(k) or "") for k in ("code", "message")).strip()
        detail = first.get("detail")
        if isinstance(detail, str) and detail:
            said += f" ({detail})"
        return redact(f"HTTP {resp.status_code}: {said}"[:300])
    text = resp.content.decode("utf-8", "replace").strip().splitlines()
    return redact(f"HTTP {resp.status_code}" + (f": {text[0][:200]}" if text else ""))


def transient(status: int) -> bool:
    return status == 429 or status >= 500


def check_digest(resp: httpx.Response, digest: str, what: str) -> None:
    """Raise when the registry's ``Docker-Content-Digest`` says it stored other bytes."""
    said = resp.headers.get("Docker-Content-Digest")
    if said and said != digest:
        raise PushError(f"{what}: the registry stored {said}, not {digest}")


def _session(location: str | None, what: str) -> str:
    """An upload session's ``Location`` (an absolute URL or path, which
    :meth:`OciClient.request` joins to the registry: credentials go to its origin only)."""
    if not location:
        raise PushError(f"{what}: the registry named no upload location")
    return location


class BlobUpload:
    """The upload of ``blob`` through ``pusher`` (mount, one ``PUT``, or ``PATCH`` chunks)."""

    def __init__(self, pusher: Pusher, blob: Blob) -> None:
        self.pusher = pusher
        self.blob = blob

    def push(self, mount_from: Sequence[str]) -> str:
        """Put the blob (not in the repository): ``"mounted"`` or ``"uploaded"``."""
        blob = self.blob
        what = f"upload of blob {blob.digest[:19]} ({blob.size} bytes)"
        source = next((r for r in mount_from if self.pusher.has_blob(blob.digest, r)), None)
        path = "blobs/uploads/"
        if source is not None:
            path += f"?mount={quote(blob.digest)}&from={quote(source, safe='/')}"
        resp = self.pusher.send("POST", path, what, headers={"Content-Length": "0"}, content=b"")
        if resp.status_code == 201 and source is not None:
            check_digest(resp, blob.digest, what)
            return "mounted"
        if resp.status_code != 202:
            raise self.pusher.refused(what, resp)
        session = _session(resp.headers.get("Location"), what)
        try:
            chunk = max(self.pusher.chunk_size, _int(resp.headers.get("OCI-Chunk-Min-Length")))
            if blob.size >= self.pusher.chunked_from:
                session = self._patch_all(session, chunk, what)
                body: bytes | Callable[[], Iterator[bytes]] = b""
                size = 0
            else:
                body, size = blob.body(), blob.size
            done = self.pusher.send(
                "PUT",
                _with_query(session, f"digest={quote(blob.digest)}"),
                what,
                headers={"Content-Type": _OCTETS, "Content-Length": str(size)},
                content=body,
            )
            if done.status_code != 201:
                raise self.pusher.refused(what, done)
            check_digest(done, blob.digest, what)
        except BaseException:
            self._cancel(session)
            raise
        return "uploaded"

    def _patch_all(self, session: str, chunk: int, what: str) -> str:
        """Send ``blob`` in PATCH chunks to ``session``; the session to close it at. A chunk
        that fails on the way (network, 5xx, 429) is resumed from where the registry says
        the upload stands (``GET`` of the session), at most :data:`PATCH_RESUMES` times."""
        blob, offset, resumes = self.blob, 0, 0
        while offset < blob.size:
            end = min(blob.size, offset + chunk)
            try:
                resp = self.pusher.send(
                    "PATCH",
                    session,
                    what,
                    headers={
                        "Content-Type": _OCTETS,
                        "Content-Range": f"{offset}-{end - 1}",
                        "Content-Length": str(end - offset),
                    },
                    content=blob.body(offset, end),
                )
                if transient(resp.status_code):
                    raise self.pusher.refused(what, resp)
            except PushError as exc:
                if not exc.transient or resumes >= PATCH_RESUMES:
                    raise
                self.pusher.retry.sleep(resumes)
                resumes += 1
                offset, session = self._upload_status(session, what)
                continue
            if resp.status_code == 416:  # not where the registry is: resume where it says
                offset = _range_end(resp.headers.get("Range"), what)
            elif resp.status_code == 202:
                got = _range_end(resp.headers.get("Range"), what)
                if got != end:
                    raise PushError(f"{what}: the registry holds {got} bytes after {end} were sent")
                offset = end
            else:
                raise self.pusher.refused(what, resp)
            session = _session(resp.headers.get("Location") or None, what)
        return session

    def _upload_status(self, session: str, what: str) -> tuple[int, str]:
        """Where the upload ``session`` stands: the bytes the registry holds, and the
        session's URL now. A transient failure when the registry cannot say (its ``0-0``
        means none or one byte) starts the blob again."""
        resp = self.pusher.send("GET", session, what)
        if resp.status_code not in (200, 204):
            raise self.pusher.refused(f"{what} (its status)", resp)
        rng = (resp.headers.get("Range") or "").removeprefix("bytes=").strip()
        if rng in ("", "0-0"):
            raise PushError(f"{what}: the registry cannot say how much it holds", transient=True)
        return _range_end(rng, what), _session(resp.headers.get("Location"), what)

    def _cancel(self, session: str) -> None:
        """Cancel an upload that failed (the spec's SHOULD); the registry expires it anyway."""
        try:
            self.pusher.send("DELETE", session, "cancel upload")
        except PushError:
            pass


def _with_query(path: str, param: str) -> str:
    return f"{path}&{param}" if "?" in path else f"{path}?{param}"


def _int(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def _range_end(value: str | None, what: str) -> int:
    """The offset after the last byte the registry holds, from its ``Range: [bytes=]0-N``."""
    if not value:
        raise PushError(f"{what}: the registry did not say how much it holds (no Range)")
    first, _, last = value.removeprefix("bytes=").partition("-")
    try:
        return int(last) + 1 if first.strip() == "0" else 0
    except ValueError as exc:
        raise PushError(f"{what}: an upload Range the registry sent is not one: {value}") from exc
