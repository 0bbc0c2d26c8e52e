"""wgtpm's registry server: hosts modules and speaks the proxy protocol (docs/design.md section 11).

The layers, bottom up (imports run one way)::

    limits, _errors, tokens        constants, the error tree, token format and coverage (pure)
    blobs, s3                      content-addressed blob stores (folder, S3)
    metadata, migrations           SQL metadata through SQLAlchemy; Alembic migrations
    sumlog, sumkey                 the checksum log's tables and append; its signing key
    service                        Registry: reading hosted modules, publishing (no HTTP)
    proxy, ondemand                the caching proxy: upstream metadata, verified fills (whole
                                   versions; file by file for the Hub API)
    tensortables                   tensor tables computed from stored files, logged
    accesslog, fastpath            JSON access logs; the protocol's answers again without Starlette
    protocol, api, sumdb, web      HTTP: the proxy protocol, the publish API, the checksum
                                   database (Go's sumdb paths), the web page
    app, config, server, _http     the ASGI app, settings, uvicorn (one write per response head+body)

Start it with ``wgtpm registry serve``; the publish API and the checksum
database are specified in ``registry/api.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import (
    BadRequestError,
    BlobNotFoundError,
    ConflictError,
    ForbiddenError,
    GoneError,
    HashMismatchError,
    NotFoundError,
    RegistryError,
    StoreError,
    TooLargeError,
    UnauthorizedError,
    UpstreamError,
)
from .limits import Limits

if TYPE_CHECKING:
    from .blobs import BlobStore, BlobWriter, FolderBlobStore
    from .config import Config
    from .metadata import MetadataStore, SqlMetadataStore, open_metadata_store
    from .service import Registry
    from .stores import open_blob_store

# Loaded on first use, so that the pure parts (errors, limits, tokens) import
# without SQLAlchemy or boto3.
_LAZY = {
    "BlobStore": "blobs",
    "BlobWriter": "blobs",
    "FolderBlobStore": "blobs",
    "open_blob_store": "stores",
    "Config": "config",
    "MetadataStore": "metadata",
    "SqlMetadataStore": "metadata",
    "open_metadata_store": "metadata",
    "Registry": "service",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'registry' has no attribute {name!r}")


__all__ = [
    "BadRequestError",
    "BlobNotFoundError",
    "BlobStore",
    "BlobWriter",
    "Config",
    "ConflictError",
    "FolderBlobStore",
    "ForbiddenError",
    "GoneError",
    "HashMismatchError",
    "Limits",
    "MetadataStore",
    "NotFoundError",
    "Registry",
    "RegistryError",
    "SqlMetadataStore",
    "StoreError",
    "TooLargeError",
    "UnauthorizedError",
    "UpstreamError",
    "open_blob_store",
    "open_metadata_store",
]
