"""A blob store on S3 or any S3-compatible service (MinIO, Ceph, moto), through boto3.

``s3://bucket/prefix`` keeps the blob with sha256 ``abcd...`` at the key
``prefix/sha256/ab/abcd...``. The endpoint comes from ``endpoint=`` (the
``--s3-endpoint`` flag) or ``AWS_ENDPOINT_URL``; credentials and region from
boto3's usual chain (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, profiles, instance roles).

An upload is spooled to a local temporary file and hashed while it streams;
only a matching file is sent, with one ``PutObject`` (or a multipart upload,
which S3 also makes visible atomically on completion), so an object under a
final key is always complete and correct. Blobs are immutable, so two
replicas writing the same key write the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from wgtpm._fs import is_hex64

from ._errors import BadRequestError, BlobNotFoundError, StoreError
from .blobs import CHUNK, BlobInfo, BlobStore, BlobWriter, sweep_spool

__all__ = ["S3BlobStore"]


def _missing(exc: Exception) -> bool:
    resp = getattr(exc, "response", None) or {}
    code = str(resp.get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound")


class _S3Writer(BlobWriter):
    def __init__(self, store: S3BlobStore, sha256: str, max_size: int | None) -> None:
        super().__init__(sha256, max_size, store.spool)
        self._store = store

    def _publish(self, spooled: Path) -> None:
        try:
            self._store.client.upload_file(
                str(spooled), self._store.bucket, self._store.key(self.sha256)
            )
        except Exception as exc:
            raise StoreError(f"storing blob {self.sha256} in {self._store.url}: {exc}") from exc


class S3BlobStore(BlobStore):
    """Blobs under ``s3://bucket/prefix``."""

    def __init__(
        self,
        url: str,
        *,
        endpoint: str | None = None,
        spool: Path | None = None,
        client: Any = None,
        sweep: bool = True,
    ) -> None:
        u = urlsplit(url)
        if u.scheme != "s3" or not u.netloc:
            raise BadRequestError(f"not an S3 URL (want s3://bucket/prefix): {url}")
        self.url = url
        self.bucket = u.netloc
        self.prefix = u.path.strip("/")
        self.spool = spool
        if spool is not None:
            spool.mkdir(parents=True, exist_ok=True)
            if sweep:  # a replica starting: the spool files of its killed predecessors go
                sweep_spool(spool)
        if client is None:
            import boto3  # type: ignore[import-untyped]
            from botocore.config import Config  # type: ignore[import-untyped]

            client = boto3.client(
                "s3",
                endpoint_url=endpoint or os.environ.get("AWS_ENDPOINT_URL") or None,
                config=Config(retries={"max_attempts": 5, "mode": "standard"}),
            )
        self.client = client

    def key(self, sha256: str) -> str:
        """The object key of a blob."""
        name = f"sha256/{sha256[:2]}/{sha256}"
        return f"{self.prefix}/{name}" if self.prefix else name

    def size(self, sha256: str) -> int | None:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except Exception as exc:
            if _missing(exc):
                return None
            raise StoreError(f"asking {self.url} for blob {sha256}: {exc}") from exc
        return int(head["ContentLength"])

    def get(self, sha256: str, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        kw: dict[str, Any] = {"Bucket": self.bucket, "Key": self.key(sha256)}
        if length == 0:
            if not self.has(sha256):
                raise BlobNotFoundError(sha256)
            return iter(())
        if offset or length is not None:
            end = "" if length is None else str(offset + length - 1)
            kw["Range"] = f"bytes={offset}-{end}"
        try:
            obj = self.client.get_object(**kw)
        except Exception as exc:
            if _missing(exc):
                raise BlobNotFoundError(sha256) from None
            code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
            if code == "InvalidRange":  # offset at the very end of the blob: nothing to send
                return iter(())
            raise StoreError(f"reading blob {sha256} from {self.url}: {exc}") from exc
        return _stream(obj["Body"])

    def writer(self, sha256: str, max_size: int | None = None) -> BlobWriter:
        return _S3Writer(self, sha256, max_size)

    def list_blobs(self) -> Iterator[BlobInfo]:
        top = f"{self.prefix}/sha256/" if self.prefix else "sha256/"
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=top
            )
            for page in pages:
                for obj in page.get("Contents", ()):
                    sha = str(obj["Key"]).rsplit("/", 1)[-1]
                    if is_hex64(sha) and obj["Key"] == self.key(sha):
                        yield BlobInfo(sha, int(obj["Size"]), obj["LastModified"].timestamp())
        except Exception as exc:
            raise StoreError(f"listing the blobs of {self.url}: {exc}") from exc

    def stat(self, sha256: str) -> BlobInfo | None:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except Exception as exc:
            if _missing(exc):
                return None
            raise StoreError(f"asking {self.url} for blob {sha256}: {exc}") from exc
        return BlobInfo(sha256, int(head["ContentLength"]), head["LastModified"].timestamp())

    def delete(self, sha256: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key(sha256))
        except Exception as exc:
            if not _missing(exc):
                raise StoreError(f"deleting blob {sha256} from {self.url}: {exc}") from exc

    def spool_dir(self) -> Path | None:
        return self.spool

    def check(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise StoreError(f"S3 bucket {self.bucket} is not reachable: {exc}") from exc

    def close(self) -> None:
        self.client.close()


def _stream(body: Any) -> Iterator[bytes]:
    try:
        yield from body.iter_chunks(CHUNK)
    finally:
        body.close()
