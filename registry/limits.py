"""Hard limits of the registry, as named constants (like Go's ``MaxZipFile``).

A request over a limit is refused with 413 before any byte is stored under a
final name. Raise them here, in one place, if a deployment needs more.

Request bodies are read within a cap (:mod:`registry.body`): a declared
``Content-Length`` over it is refused before a byte of the body is read, and
a body without one (chunked) is counted as it comes and refused once past it.

Connections are cut when the client stalls (:class:`Timeouts`, enforced by
:mod:`registry._http`): an idle keep-alive connection, a request head that
takes too long, a body that stops coming. ``wgtpm registry serve`` reads them
from the environment (:meth:`Timeouts.from_env`)::

    WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT=10   # seconds
    WGTPM_REGISTRY_HEADER_TIMEOUT=15
    WGTPM_REGISTRY_BODY_TIMEOUT=30
    WGTPM_REGISTRY_DRAIN_TIMEOUT=30
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "BODY_IDLE_TIMEOUT",
    "DRAIN_TIMEOUT",
    "HEADER_TIMEOUT",
    "KEEP_ALIVE_TIMEOUT",
    "MAX_FILES_PER_VERSION",
    "MAX_FILE_SIZE",
    "MAX_INDEX_SIZE",
    "MAX_JSON_DEPTH",
    "MAX_MOD_SIZE",
    "MAX_PATHS_INFO_BODY",
    "MAX_REQUEST_HEAD",
    "MAX_REQUEST_JSON",
    "MAX_VERSION_SIZE",
    "UPLOAD_TTL_SECONDS",
    "Limits",
    "Timeouts",
]

MAX_FILE_SIZE = 50 << 30  # one file of a release (50 GiB: a large safetensors shard)
MAX_VERSION_SIZE = 500 << 30  # all files of one release together
MAX_FILES_PER_VERSION = 10_000  # entries in one wgt.index.json
MAX_INDEX_SIZE = 16 << 20  # the wgt.index.json bytes
MAX_MOD_SIZE = 1 << 20  # the wgt.mod bytes (Go: MaxGoMod = 16 MiB; ours are much smaller)
MAX_REQUEST_JSON = MAX_INDEX_SIZE + (64 << 10)  # a JSON request body (it carries the index)
# the Hub API's paths-info form or JSON: a list of paths in one repository (2,000 paths of
# 100 bytes, URL-escaped, fit; huggingface_hub asks for a few at a time)
MAX_PATHS_INFO_BODY = 256 << 10
# nesting of a JSON request body (a wgt.index.json is 3 deep); deeper is refused before
# anything recurses into it
MAX_JSON_DEPTH = 64
# a request's line and headers (uvicorn's h11 allows 16 KiB; httptools has no limit of its own)
MAX_REQUEST_HEAD = 64 << 10
UPLOAD_TTL_SECONDS = 7 * 24 * 3600  # an upload session not committed by then is forgotten

KEEP_ALIVE_TIMEOUT = 10.0  # seconds a connection may sit with no request (before its first too)
HEADER_TIMEOUT = 15.0  # seconds from a request's first byte to the end of its headers
BODY_IDLE_TIMEOUT = 30.0  # seconds a request body may send nothing while it is read
# seconds the rest of a body is read and dropped after its request was answered early (a
# 401 or 413 before the body), so that the client, which reads the answer once it has sent
# its body, gets it; then the connection is cut (nginx's lingering_time is 30 s too)
DRAIN_TIMEOUT = 30.0


@dataclass(frozen=True)
class Limits:
    """The limits one registry enforces (tests and small deployments lower them)."""

    max_file_size: int = MAX_FILE_SIZE
    max_version_size: int = MAX_VERSION_SIZE
    max_files_per_version: int = MAX_FILES_PER_VERSION
    max_index_size: int = MAX_INDEX_SIZE
    max_mod_size: int = MAX_MOD_SIZE


_TIMEOUT_ENV = {
    "keep_alive": "WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT",
    "header": "WGTPM_REGISTRY_HEADER_TIMEOUT",
    "body": "WGTPM_REGISTRY_BODY_TIMEOUT",
    "drain": "WGTPM_REGISTRY_DRAIN_TIMEOUT",
}


@dataclass(frozen=True)
class Timeouts:
    """When a connection whose client stalls is cut, in seconds (:mod:`registry._http`).

    ``keep_alive``: no request on it (before the first one too); ``header``: a
    request's line and headers, from their first byte (a header line every few
    seconds does not hold it open); ``body``: no byte of a body being read;
    ``drain``: what is left of a body after its request was answered.
    """

    keep_alive: float = KEEP_ALIVE_TIMEOUT
    header: float = HEADER_TIMEOUT
    body: float = BODY_IDLE_TIMEOUT
    drain: float = DRAIN_TIMEOUT

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Timeouts:
        """The defaults, with any of ``WGTPM_REGISTRY_{KEEP_ALIVE,HEADER,BODY,DRAIN}_TIMEOUT``
        set in ``environ`` (``os.environ``); :class:`ValueError` names a malformed one."""
        env = os.environ if environ is None else environ
        got: dict[str, float] = {}
        for field, name in _TIMEOUT_ENV.items():
            text = env.get(name, "").strip()
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name}={text!r} is not a number of seconds above 0")
            got[field] = value
        return cls(**got)
