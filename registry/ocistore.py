"""A blob store in one repository of an OCI registry: ``--store oci://REGISTRY/REPOSITORY``.

A team that runs an OCI registry (Harbor, Artifactory, ECR, the CNCF
distribution registry) can keep the wgtpm registry's blobs there instead of
a folder or S3, under the registry's own quotas, replication and backups.

The blob with sha256 ``abcd...`` is the OCI blob ``sha256:abcd...`` of the
repository, and the tag ``blob-abcd...`` names a small manifest whose one
layer is that blob (``artifactType`` :data:`ARTIFACT_TYPE`, the empty config,
the write time in ``org.opencontainers.image.created``). The tag is what
makes a blob stored: an OCI registry's garbage collection removes every
blob no manifest references, so a blob without its tag is not trusted to
stay and counts as absent. :meth:`OciBlobStore.size`, ``stat`` and
``list_blobs`` read the tags and their manifests.

Writes go as for every store: spooled to a local file and hashed
(:class:`~registry.blobs.BlobWriter`); only bytes that match are pushed
(:class:`wgtpm.oci.push.Pusher`: skipped when the repository has them,
chunked when large), then the manifest, then the tag. Each ``put`` pushes a
new manifest with the time of writing, which is the blob's mtime for the
garbage collector's grace period. :meth:`OciBlobStore.delete` deletes the
manifest (by digest, as registries allow) and asks for the blob to be
deleted; the registry's own garbage collection frees the bytes.

Credentials are the OCI client's (Docker's ``config.json``, credential
helpers, ``~/.netrc``; :mod:`wgtpm.oci.auth`); plain HTTP only for a
loopback registry or one ``WGTOCI_INSECURE`` names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from wgtpm._errors import WgtpmError
from wgtpm._fs import is_hex64
from wgtpm._retry import Backoff
from wgtpm.httpclient import HttpClient

from ._errors import BadRequestError, BlobNotFoundError, StoreError
from .blobs import CHUNK, BlobInfo, BlobStore, BlobWriter, sweep_spool

if TYPE_CHECKING:
    from wgtpm.oci.push import Pusher

__all__ = ["ARTIFACT_TYPE", "OciBlobStore"]

#: The artifact type of the manifest that keeps one blob.
ARTIFACT_TYPE = "application/vnd.wgtpm.registry.blob.v1"
TAG_PREFIX = "blob-"
#: Tries of one blob's write (each after checking whether another writer stored it).
WRITE_RETRY = Backoff(attempts=3, base=0.2, cap=2.0)
_CREATED = "org.opencontainers.image.created"


class _OciWriter(BlobWriter):
    def __init__(self, store: OciBlobStore, sha256: str, max_size: int | None) -> None:
        super().__init__(sha256, max_size, store.spool)
        self._store = store

    def _publish(self, spooled: Path) -> None:
        self._store._push(self.sha256, spooled, self.size)


class OciBlobStore(BlobStore):
    """Blobs in the repository of ``oci://REGISTRY/REPOSITORY`` (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        spool: Path | None = None,
        sweep: bool = True,
        environ: Mapping[str, str] | None = None,
        http: HttpClient | None = None,
    ) -> None:
        from wgtpm.oci.auth import Keychain
        from wgtpm.oci.client import OciClient
        from wgtpm.sources.oci import parse_oci_url, plain_http_for

        env = os.environ if environ is None else environ
        try:
            registry, repository = parse_oci_url(url)
        except WgtpmError as exc:
            raise BadRequestError(str(exc)) from exc
        if not repository:
            raise BadRequestError(f"{url}: want oci://REGISTRY/REPOSITORY (a repository)")
        self.url = url
        self.repository = repository
        self.spool = spool
        if spool is not None:
            spool.mkdir(parents=True, exist_ok=True)
            if sweep:  # a replica starting: the spool files of its killed predecessors go
                sweep_spool(spool)
        self._own_http = http is None
        self.http = http if http is not None else HttpClient()
        plain = plain_http_for(env.get("WGTOCI_INSECURE", ""), registry)
        self.client = OciClient(self.http, registry, plain_http=plain, auth=Keychain(env))

    def _pusher(self) -> Pusher:
        from wgtpm.oci.push import Pusher

        return Pusher(self.client, self.repository)

    def _entry(self, sha256: str) -> BlobInfo | None:
        """The blob's size and write time from its tag's manifest; ``None`` without a tag."""
        from wgtpm.oci.push import PushError

        if not is_hex64(sha256):
            raise BadRequestError(f"not a sha256 (64 lower-case hex digits): {sha256[:80]!r}")
        try:
            got = self._pusher().get_manifest(TAG_PREFIX + sha256)
        except PushError as exc:
            raise StoreError(f"asking {self.url} for blob {sha256}: {exc}") from exc
        if got is None:
            return None
        try:
            doc = json.loads(got[0])
            (layer,) = doc["layers"]
            size = int(layer["size"])
            when = datetime.fromisoformat(doc["annotations"][_CREATED]).timestamp()
            if layer["digest"] != "sha256:" + sha256 or size < 0:
                raise ValueError(layer["digest"])
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"{self.url}: tag {TAG_PREFIX}{sha256} names a manifest that is not a "
                f"wgtpm blob's ({exc!r}); remove the tag or use another repository"
            ) from exc
        return BlobInfo(sha256, size, when)

    def size(self, sha256: str) -> int | None:
        info = self._entry(sha256)
        return None if info is None else info.size

    def stat(self, sha256: str) -> BlobInfo | None:
        return self._entry(sha256)

    def get(self, sha256: str, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        n = self.size(sha256)
        if n is None:
            raise BlobNotFoundError(sha256)
        end = n if length is None else min(n, offset + length)
        if offset >= end:
            return iter(())
        return self._stream(sha256, offset, end)

    def _stream(self, sha256: str, offset: int, end: int) -> Iterator[bytes]:
        path = f"blobs/sha256:{sha256}"
        left = end - offset
        try:
            headers = {"Range": f"bytes={offset}-"} if offset else {}
            with self.client.request(
                "GET", self.repository, path, headers=headers, stream=True
            ) as r:
                if offset and r.status_code != 206:
                    raise StoreError(f"{self.url}: the registry ignored a Range request")
                for chunk in r.iter_bytes(CHUNK):
                    piece = chunk[:left]
                    left -= len(piece)
                    if piece:
                        yield piece
                    if left <= 0:
                        return
        except WgtpmError as exc:
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"reading blob {sha256} from {self.url}: {exc}") from exc
        if left > 0:
            raise StoreError(f"{self.url}: blob {sha256} ended {left} bytes short")

    def writer(self, sha256: str, max_size: int | None = None) -> BlobWriter:
        return _OciWriter(self, sha256, max_size)

    def _push(self, sha256: str, spooled: Path, size: int) -> None:
        """Push the verified file ``spooled``, then its manifest and tag."""
        from wgtpm.oci.push import EMPTY, EMPTY_JSON, MANIFEST_TYPE, Blob, PushError

        digest = "sha256:" + sha256
        doc = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "artifactType": ARTIFACT_TYPE,
            "config": EMPTY,
            "layers": [{"mediaType": "application/octet-stream", "digest": digest, "size": size}],
            "annotations": {_CREATED: datetime.now(timezone.utc).isoformat()},
        }
        body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        pusher = self._pusher()
        for attempt in WRITE_RETRY.attempts_range():
            try:
                pusher.push_blob(Blob.of(EMPTY_JSON))
                pusher.push_blob(Blob(digest, size, path=spooled))
                pusher.put_manifest(TAG_PREFIX + sha256, body, MANIFEST_TYPE)
                return
            except PushError as exc:
                # Writers of the same blob race inside the registry (the distribution
                # registry answers one of them DIGEST_INVALID): the blob is stored if any won.
                if self._entry(sha256) is not None:
                    return
                if WRITE_RETRY.last(attempt):
                    raise StoreError(f"storing blob {sha256} in {self.url}: {exc}") from exc
            WRITE_RETRY.sleep(attempt)

    def list_blobs(self) -> Iterator[BlobInfo]:
        from wgtpm.oci.client import OciNotFoundError

        try:
            tags = self.client.tags(self.repository)
        except OciNotFoundError:
            return  # no repository yet: no blobs
        except WgtpmError as exc:
            raise StoreError(f"listing the blobs of {self.url}: {exc}") from exc
        for tag in tags:
            sha = tag[len(TAG_PREFIX) :]
            if tag.startswith(TAG_PREFIX) and is_hex64(sha):
                info = self._entry(sha)
                if info is not None:
                    yield info

    def delete(self, sha256: str) -> None:
        from wgtpm.oci.push import PushError, sha256_digest

        pusher = self._pusher()
        try:
            got = pusher.get_manifest(TAG_PREFIX + sha256)
            if got is None:
                return
            what = f"delete blob {sha256}"
            resp = pusher.send("DELETE", f"manifests/{sha256_digest(got[0])}", what)
            if resp.status_code == 405:
                raise PushError(
                    f"{what}: the registry does not allow deletes (the distribution "
                    "registry: storage.delete.enabled: true)"
                )
            if resp.status_code not in (200, 202, 404):
                raise pusher.refused(what, resp)
            # the bytes: the registry's own garbage collection frees them if this is refused
            pusher.send("DELETE", f"blobs/sha256:{sha256}", what)
        except PushError as exc:
            raise StoreError(f"deleting blob {sha256} from {self.url}: {exc}") from exc

    def spool_dir(self) -> Path | None:
        return self.spool

    def check(self) -> None:
        try:
            resp = self.client.request("GET", self.repository, "tags/list?n=1")
        except WgtpmError as exc:
            raise StoreError(f"OCI registry {self.url} is not reachable: {exc}") from exc
        if resp.status_code not in (200, 404):
            raise StoreError(f"OCI registry {self.url} answers HTTP {resp.status_code}")

    def close(self) -> None:
        if self._own_http:
            self.http.close()
