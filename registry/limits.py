"""Hard limits of the registry, as named constants (like Go's ``MaxZipFile``).

A request over a limit is refused with 413 before any byte is stored under a
final name. Raise them here, in one place, if a deployment needs more.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MAX_FILES_PER_VERSION",
    "MAX_FILE_SIZE",
    "MAX_INDEX_SIZE",
    "MAX_MOD_SIZE",
    "MAX_REQUEST_JSON",
    "MAX_VERSION_SIZE",
    "UPLOAD_TTL_SECONDS",
    "Limits",
]

MAX_FILE_SIZE = 50 << 30  # one file of a release (50 GiB: a large safetensors shard)
MAX_VERSION_SIZE = 500 << 30  # all files of one release together
MAX_FILES_PER_VERSION = 10_000  # entries in one wgt.index.json
MAX_INDEX_SIZE = 16 << 20  # the wgt.index.json bytes
MAX_MOD_SIZE = 1 << 20  # the wgt.mod bytes (Go: MaxGoMod = 16 MiB; ours are much smaller)
MAX_REQUEST_JSON = MAX_INDEX_SIZE + (64 << 10)  # a JSON request body (it carries the index)
UPLOAD_TTL_SECONDS = 7 * 24 * 3600  # an upload session not committed by then is forgotten


@dataclass(frozen=True)
class Limits:
    """The limits one registry enforces (tests and small deployments lower them)."""

    max_file_size: int = MAX_FILE_SIZE
    max_version_size: int = MAX_VERSION_SIZE
    max_files_per_version: int = MAX_FILES_PER_VERSION
    max_index_size: int = MAX_INDEX_SIZE
    max_mod_size: int = MAX_MOD_SIZE
