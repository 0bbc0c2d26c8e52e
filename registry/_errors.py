"""The exceptions the registry raises; each maps to one HTTP status.

::

    RegistryError                 500 unless a subclass says otherwise
    ├── BadRequestError           400  a malformed request, index or upload
    │   └── HashMismatchError     400  uploaded bytes whose sha256 is not the one promised
    ├── UnauthorizedError         401  no usable token (missing, unknown, revoked)
    ├── ForbiddenError            403  a token whose scope or prefix does not cover the module
    ├── NotFoundError             404  nothing here (yet): unknown module, version or upload
    ├── GoneError                 410  can never be served: malformed path or version
    ├── ConflictError             409  a committed version with other bytes; names both h1s
    ├── TooLargeError             413  over a limit of :mod:`registry.limits`
    ├── StoreError                500  the blob store or database failed (the cause is chained)
    └── UpstreamError             502  the caching proxy's upstream failed or served bad bytes

The HTTP layer turns them into ``{"error": message}`` bodies; the message
says what to do next.
"""

from __future__ import annotations

__all__ = [
    "BadRequestError",
    "BlobNotFoundError",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "HashMismatchError",
    "NotFoundError",
    "RegistryError",
    "StoreError",
    "TooLargeError",
    "UnauthorizedError",
    "UpstreamError",
]


class RegistryError(Exception):
    """The base of every error the registry raises on purpose."""

    status = 500


class BadRequestError(RegistryError):
    """A request that cannot be served as sent."""

    status = 400


class HashMismatchError(BadRequestError):
    """Bytes whose sha256 (or size) is not the one they were stored under."""

    def __init__(self, want: str, got: str) -> None:
        self.want, self.got = want, got
        super().__init__(f"sha256 mismatch: expected {want}, received bytes hash to {got}")


class UnauthorizedError(RegistryError):
    """No usable credentials: send ``Authorization: Bearer TOKEN``."""

    status = 401


class ForbiddenError(RegistryError):
    """A valid token that does not cover this module or operation."""

    status = 403


class NotFoundError(RegistryError):
    """Nothing here under that name (it may be published later)."""

    status = 404


class BlobNotFoundError(NotFoundError):
    """A blob store has no blob with this sha256."""

    def __init__(self, sha256: str) -> None:
        self.sha256 = sha256
        super().__init__(f"no blob {sha256}")


class GoneError(RegistryError):
    """A request that can never succeed here (a malformed path or version)."""

    status = 410


class ConflictError(RegistryError):
    """``module@version`` is committed with other content; versions never change."""

    status = 409

    def __init__(self, module: str, version: str, committed_h1: str, new_h1: str) -> None:
        self.module, self.version = module, version
        self.committed_h1, self.new_h1 = committed_h1, new_h1
        super().__init__(
            f"{module}@{version} is already published with {committed_h1}; this upload is "
            f"{new_h1}. Published versions never change: publish a new version instead"
        )


class TooLargeError(RegistryError):
    """Over one of the limits in :mod:`registry.limits`."""

    status = 413


class StoreError(RegistryError):
    """The blob store or the database failed; the cause is chained."""


class UpstreamError(RegistryError):
    """The caching proxy's upstream failed, or served bytes that do not match its index;
    nothing of that version was kept (:mod:`registry.proxy`)."""

    status = 502
