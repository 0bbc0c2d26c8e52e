"""Opening the blob store a URL names: a folder, S3 or an OCI registry.

The stores themselves live in :mod:`registry.blobs` (the protocol and the folder),
:mod:`registry.s3` and :mod:`registry.ocistore`; this module sits above all three, so
none of them imports another's sibling.
"""

from __future__ import annotations

from pathlib import Path

from .blobs import BlobStore, FolderBlobStore

__all__ = ["open_blob_store"]


def open_blob_store(
    url: str, *, endpoint: str | None = None, spool: Path | None = None, sweep: bool = True
) -> BlobStore:
    """The store named by ``url``: a folder path (or ``file://``), ``s3://bucket/prefix``, or
    ``oci://REGISTRY/REPOSITORY`` (:mod:`registry.ocistore`).

    ``endpoint`` is the S3 endpoint URL (default: ``AWS_ENDPOINT_URL``, else
    AWS); ``spool`` is where S3 uploads are spooled and checked first. Unless
    ``sweep`` is off, the stale spool files of killed processes are removed
    (:func:`sweep_spool`).
    """
    if url.startswith("s3://"):
        from .s3 import S3BlobStore

        return S3BlobStore(url, endpoint=endpoint, spool=spool, sweep=sweep)
    if url.startswith("oci://"):
        from .ocistore import OciBlobStore

        return OciBlobStore(url, spool=spool, sweep=sweep)
    if url.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        url = unquote(urlsplit(url).path)
    return FolderBlobStore(Path(url), sweep=sweep)
