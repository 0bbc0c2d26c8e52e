"""Writing to an OCI registry: blobs, manifests, tags and referrers (OCI distribution spec 1.1).

:class:`Pusher` works in one repository through ocisrc's
:class:`~wgtpm.oci.client.OciClient` (whose :meth:`request` answers the
registry's 401 challenges and keeps credentials to the registry's origin):

- **blobs** (:meth:`Pusher.push_blob`): nothing is sent for a blob the
  repository has (``HEAD /v2/<name>/blobs/<digest>``); one that another
  repository of the registry has is mounted from it
  (``POST .../blobs/uploads/?mount=<digest>&from=<repo>``: no bytes move; a
  registry that cannot mount answers with an upload session, which is then
  used); otherwise the bytes go up in one ``PUT`` (a blob under
  :data:`CHUNKED_FROM`) or in ``PATCH`` chunks of :data:`CHUNK_SIZE` (at least
  the ``OCI-Chunk-Min-Length`` the registry asks for), each to the
  ``Location`` the previous answer named, closed by a ``PUT ?digest=``; a
  chunk that fails on the way resumes where the registry says the upload
  stands (``GET`` of the session). The
  registry checks the digest; an upload that fails is cancelled
  (``DELETE``), and a transient failure (network, 5xx, 429) is tried again
  from a new session after checking the blob did not arrive after all.
- **manifests and tags** (:meth:`Pusher.put_manifest`,
  :meth:`Pusher.manifest_digest`): by digest or by tag; the registry's
  ``Docker-Content-Digest`` must be the digest of the bytes sent.
- **referrers** (:meth:`Pusher.attach`, :func:`referrers`,
  :func:`read_attachment`): an attachment (a signature, an attestation) is a
  manifest of its own with ``artifactType`` and a ``subject`` naming the
  manifest it is about. A registry with the OCI 1.1 referrers API says so
  with ``OCI-Subject`` on the push's answer and lists it at
  ``GET /v2/<name>/referrers/<digest>``; for every other registry the client
  keeps the list itself, as the spec's fallback has it: an image index
  tagged ``sha256-<hex of the subject>``, read, appended to and pushed again.
  A subject keeps the first attachment of each type (a second of the same
  type is not added; :func:`read_attachment` takes the first listed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from .._retry import Backoff
from ..httpclient import HTTPStatusError, TransportError
from ._upload import (
    Blob,
    BlobUpload,
    PushError,
    check_digest,
    refusal,
    sha256_digest,
    transient,
)
from .client import OciError
from .manifest import MANIFEST_TYPE

if TYPE_CHECKING:
    import httpx

    from .client import OciClient

__all__ = [
    "CHUNKED_FROM",
    "CHUNK_SIZE",
    "EMPTY",
    "EMPTY_JSON",
    "IMAGE_INDEX_TYPE",
    "MANIFEST_TYPE",
    "SIGNATURE_TYPE",
    "STATEMENT_TYPE",
    "Blob",
    "PushError",
    "Pusher",
    "read_attachment",
    "referrers",
    "referrers_tag",
    "sha256_digest",
]

IMAGE_INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
#: The artifact type of a release's signature: a Sigstore bundle in OpenSSF
#: model-signing's format (``wgtpm.trust``; what cosign attaches bundles as).
SIGNATURE_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
#: The artifact type of a build's SLSA provenance statement: an in-toto statement in a
#: DSSE envelope (``wgtpm.publish._slsa``).
STATEMENT_TYPE = "application/vnd.dsse.envelope.v1+json"
#: The empty JSON blob ``{}`` and its descriptor: the config of an artifact that has none.
EMPTY_JSON = b"{}"
EMPTY: dict[str, Any] = {
    "mediaType": "application/vnd.oci.empty.v1+json",
    "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    "size": 2,
}
#: Blobs of this size and more go up in PATCH chunks; smaller ones in one PUT.
CHUNKED_FROM = 64 << 20
#: Bytes a PATCH carries (the registry's ``OCI-Chunk-Min-Length``, when larger, wins).
CHUNK_SIZE = 32 << 20
#: The most an attachment (a signature, a statement) or a referrers list may be.
MAX_ATTACHMENT = 16 << 20
#: Writes of a referrers list (tag schema) before giving up on others overwriting it.
APPEND_TRIES = 5
#: Tries of one blob's upload when it fails on the way (network, 5xx, 429).
BLOB_RETRY = Backoff(attempts=3, base=0.5, cap=5.0)

_PUSH = ("pull", "push")
_ACCEPT = {"Accept": f"{MANIFEST_TYPE}, {IMAGE_INDEX_TYPE}"}


def referrers_tag(digest: str) -> str:
    """The tag of the referrers list of ``digest`` when the registry has no referrers API
    (the spec's tag schema: ``<alg>-<ref>``, the reference cut to 64 characters)."""
    alg, _, ref = digest.partition(":")
    return f"{alg}-{ref[:64]}"


class Pusher:
    """Pushes into the repository ``repository`` of ``client``'s registry."""

    def __init__(
        self,
        client: OciClient,
        repository: str,
        *,
        chunked_from: int = CHUNKED_FROM,
        chunk_size: int = CHUNK_SIZE,
        retry: Backoff = BLOB_RETRY,
    ) -> None:
        self.client = client
        self.repository = repository
        self.chunked_from = chunked_from
        self.chunk_size = chunk_size
        self.retry = retry

    # ---- the wire ---------------------------------------------------------------

    def send(
        self,
        method: str,
        path: str,
        what: str,
        *,
        repository: str | None = None,
        actions: tuple[str, ...] = _PUSH,
        headers: Mapping[str, str] | None = None,
        content: bytes | Callable[[], Iterator[bytes]] | None = None,
    ) -> httpx.Response:
        try:
            return self.client.request(
                method,
                repository or self.repository,
                path,
                actions=actions,
                headers=dict(headers or {}),
                # a file's chunks, read anew for each try (HttpClient.send takes either)
                content=cast("bytes | None", content),
            )
        except OciError as exc:  # credentials refused or missing: said by the client
            raise PushError(f"{what}: {exc}") from exc
        except HTTPStatusError as exc:  # a client that raises on a status: said like one
            raise PushError(f"{what}: HTTP {exc.status}", transient=transient(exc.status)) from exc
        except TransportError as exc:
            raise PushError(f"{what}: {exc}", transient=True) from exc

    def refused(self, what: str, resp: httpx.Response) -> PushError:
        """The registry's refusal of ``what``; for 401 and 403, whose credentials it refused
        and how to give it others."""
        hint = ""
        if resp.status_code in (401, 403):
            creds = self.client.auth.credentials()
            who = f"the credentials from {creds.source}" if creds else "no credentials"
            hint = (
                f"; refused with {who}: log in as a user who may push to {self.repository} "
                f"(docker login {self.client.registry}, or ~/.netrc)"
            )
        return PushError(f"{what}: {refusal(resp)}{hint}", transient=transient(resp.status_code))

    # ---- blobs ------------------------------------------------------------------

    def has_blob(self, digest: str, repository: str | None = None) -> bool:
        """Whether ``repository`` (this one by default) has the blob ``digest``."""
        repo = repository or self.repository
        resp = self.send(
            "HEAD",
            f"blobs/{digest}",
            f"HEAD blob {digest[:19]} in {repo}",
            repository=repo,
            actions=("pull",) if repository else _PUSH,
        )
        if resp.status_code == 200:
            return True
        if resp.status_code in (404, 401, 403) and repository:
            return False  # another repository we may not read is one we cannot mount from
        if resp.status_code == 404:
            return False
        raise self.refused(f"HEAD blob {digest[:19]} in {repo}", resp)

    def push_blob(self, blob: Blob, mount_from: Sequence[str] = ()) -> str:
        """Put ``blob`` in the repository: ``"present"`` (it was there), ``"mounted"`` (from
        one of ``mount_from``, the first that has it) or ``"uploaded"``."""
        for attempt in self.retry.attempts_range():
            try:
                if self.has_blob(blob.digest):
                    return "present"
                return BlobUpload(self, blob).push(mount_from)
            except PushError as exc:
                if not exc.transient or self.retry.last(attempt):
                    raise
            self.retry.sleep(attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def get_blob(self, digest: str, size: int, limit: int = MAX_ATTACHMENT) -> bytes:
        """The bytes of the small blob ``digest`` (``size`` bytes, at most ``limit``),
        checked against its digest."""
        what = f"GET blob {digest[:19]} of {self.repository}"
        if size > limit:
            raise PushError(f"{what}: {size} bytes, more than {limit}")
        resp = self.send("GET", f"blobs/{digest}", what, actions=("pull",))
        if resp.status_code != 200:
            raise self.refused(what, resp)
        if len(resp.content) != size or sha256_digest(resp.content) != digest:
            raise PushError(f"{what}: the registry answered other bytes than {digest}")
        return resp.content

    # ---- manifests and tags -----------------------------------------------------

    def manifest_digest(self, reference: str) -> str | None:
        """The digest of the manifest ``reference`` (a tag) names; ``None`` when none."""
        got = self.get_manifest(reference)
        return None if got is None else sha256_digest(got[0])

    def get_manifest(self, reference: str, limit: int = MAX_ATTACHMENT) -> tuple[bytes, str] | None:
        """The bytes and media type of the manifest ``reference`` names; ``None`` on 404."""
        what = f"GET manifest {reference} of {self.repository}"
        resp = self.send("GET", f"manifests/{reference}", what, actions=("pull",), headers=_ACCEPT)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise self.refused(what, resp)
        if len(resp.content) > limit:
            raise PushError(f"{what}: {len(resp.content)} bytes, more than {limit}")
        if reference.startswith("sha256:") and sha256_digest(resp.content) != reference:
            raise PushError(f"{what}: the registry answered other bytes than {reference}")
        return resp.content, resp.headers.get("Content-Type", "").split(";")[0].strip()

    def put_manifest(self, reference: str, body: bytes, media_type: str) -> httpx.Response:
        """Push the manifest ``body`` under ``reference`` (its digest, or a tag)."""
        what = f"push of manifest {reference} to {self.repository}"
        resp = self.send(
            "PUT",
            f"manifests/{reference}",
            what,
            headers={"Content-Type": media_type, "Content-Length": str(len(body))},
            content=body,
        )
        if resp.status_code not in (200, 201):
            raise self.refused(what, resp)
        check_digest(resp, sha256_digest(body), what)
        return resp

    # ---- referrers --------------------------------------------------------------

    def attach(
        self,
        subject: Mapping[str, Any],
        artifact_type: str,
        data: bytes,
        title: str,
        annotations: Mapping[str, str] | None = None,
    ) -> tuple[str, bool]:
        """Attach ``data`` to the manifest ``subject`` (its descriptor) as a referrer of
        ``artifact_type``, a single layer titled ``title``. Returns the attachment
        manifest's digest, and ``False`` when the subject had one of that type already
        (which stays: the first attachment of a type is the one kept)."""
        have = referrers(self.client, self.repository, str(subject["digest"]), artifact_type)
        if have:
            return str(have[0]["digest"]), False
        layer = Blob.of(data)
        self.push_blob(Blob.of(EMPTY_JSON))
        self.push_blob(layer)
        doc: dict[str, Any] = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "artifactType": artifact_type,
            "config": EMPTY,
            "layers": [
                {
                    "mediaType": artifact_type,
                    "digest": layer.digest,
                    "size": layer.size,
                    "annotations": {"org.opencontainers.image.title": title},
                }
            ],
            "subject": {k: subject[k] for k in ("mediaType", "digest", "size")},
        }
        if annotations:
            doc["annotations"] = dict(annotations)
        body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        digest = sha256_digest(body)
        resp = self.put_manifest(digest, body, MANIFEST_TYPE)
        if not resp.headers.get("OCI-Subject"):  # no referrers API: keep the list ourselves
            desc: dict[str, Any] = {
                "mediaType": MANIFEST_TYPE,
                "digest": digest,
                "size": len(body),
                "artifactType": artifact_type,
            }
            if annotations:
                desc["annotations"] = dict(annotations)
            self._append_referrer(str(subject["digest"]), desc)
        return digest, True

    def _append_referrer(self, subject: str, desc: dict[str, Any]) -> None:
        """Add ``desc`` to the tag schema's list of ``subject``. A tag is last-writer-wins,
        so another client appending at the same time could drop ours: the list is read
        back, and written again (merged) until it holds ``desc``."""
        tag = referrers_tag(subject)
        for tries in range(APPEND_TRIES + 1):
            listed = _fallback_list(self, subject)
            if any(m.get("digest") == desc["digest"] for m in listed):
                return
            if tries == APPEND_TRIES:
                break
            manifests = [*listed, desc]
            index = {"schemaVersion": 2, "mediaType": IMAGE_INDEX_TYPE, "manifests": manifests}
            body = json.dumps(index, sort_keys=True, separators=(",", ":")).encode()
            self.put_manifest(tag, body, IMAGE_INDEX_TYPE)
        raise PushError(
            f"the referrers list {tag} of {self.repository} kept losing {desc['digest']} to "
            "other writers"
        )


def _fallback_list(pusher: Pusher, subject: str) -> list[dict[str, Any]]:
    """The referrers of ``subject`` kept under the tag schema; ``[]`` when none."""
    tag = referrers_tag(subject)
    got = pusher.get_manifest(tag)
    if got is None:
        return []
    return _index_manifests(got[0], f"the referrers list {tag} of {pusher.repository}")


def _index_manifests(body: bytes, what: str) -> list[dict[str, Any]]:
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise PushError(f"{what} is not JSON") from exc
    if not isinstance(doc, dict) or doc.get("mediaType", IMAGE_INDEX_TYPE) != IMAGE_INDEX_TYPE:
        raise PushError(f"{what} is not an OCI image index")
    found = doc.get("manifests")
    if not isinstance(found, list):
        raise PushError(f"{what} has no manifests list")
    return [m for m in found if isinstance(m, dict) and isinstance(m.get("digest"), str)]


def referrers(
    client: OciClient, repository: str, subject: str, artifact_type: str | None = None
) -> list[dict[str, Any]]:
    """The descriptors of the manifests in ``repository`` whose subject is the manifest
    ``subject`` (a digest), of ``artifact_type`` when given, in the registry's order:
    from the referrers API when the registry has one, else (and when it lists none)
    from the tag schema's index."""
    pusher = Pusher(client, repository)
    path = f"referrers/{subject}"
    if artifact_type:
        path += f"?artifactType={quote(artifact_type, safe='')}"
    what = f"GET referrers of {subject[:19]} in {repository}"
    resp = pusher.send("GET", path, what, actions=("pull",))
    found: list[dict[str, Any]] = []
    if resp.status_code == 200 and "json" in resp.headers.get("Content-Type", ""):
        found = _index_manifests(resp.content, f"the referrers of {subject} in {repository}")
    elif resp.status_code not in (404, 400, 405):
        raise pusher.refused(what, resp)
    if not found:
        found = _fallback_list(pusher, subject)
    if artifact_type:
        found = [m for m in found if m.get("artifactType") == artifact_type]
    return found


def read_attachment(
    client: OciClient, repository: str, subject: str, artifact_type: str
) -> bytes | None:
    """The bytes of the first attachment of ``artifact_type`` to the manifest ``subject``
    (a digest) in ``repository``; ``None`` when it has none. Every byte is checked against
    the digests that lead to it (the manifest's, then its layer's). This is how a source
    serves ``@v/$version.sig`` (:data:`SIGNATURE_TYPE`) and ``@v/$version.slsa.json``
    (:data:`STATEMENT_TYPE`) of the version whose manifest is ``subject``."""
    found = referrers(client, repository, subject, artifact_type)
    if not found:
        return None
    pusher = Pusher(client, repository)
    digest = str(found[0]["digest"])
    got = pusher.get_manifest(digest)
    if got is None:
        raise PushError(f"{repository}: the referrer {digest} of {subject} is listed but missing")
    try:
        doc = json.loads(got[0])
        layer = doc["layers"][0]
        ldigest, size = str(layer["digest"]), int(layer["size"])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise PushError(f"{repository}: the referrer {digest} has no layer") from exc
    return pusher.get_blob(ldigest, size)
