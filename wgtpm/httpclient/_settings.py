"""How patient the HTTP client is: its limits (named, as Go's ``MaxGoMod``) and
:class:`HttpOptions`, read from the environment (``WGTPM_HTTP_TIMEOUT``,
``WGTPM_HTTP_RETRIES``, ``WGTPM_HTTP_DEADLINE``; a bad value is a :class:`UsageError`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from .._errors import UsageError
from .._retry import Backoff

__all__ = [
    "DOWNLOAD_READ",
    "FILE_MIN_RATE",
    "FILE_RATE_WINDOW",
    "MAX_ERROR_BODY",
    "MAX_METADATA",
    "METADATA_DEADLINE",
    "HttpOptions",
]

#: The most decoded bytes of a body read whole (metadata, API JSON), as Go's ``MaxGoMod``.
MAX_METADATA = 16 << 20
#: Seconds a metadata request (a list, ``.info``, ``.mod``, an index, API JSON) may take, its
#: retries included and the waits between them not (``WGTPM_HTTP_DEADLINE`` overrides it).
#: Such a body is kilobytes: 30 s carries a 1 MiB index at 35 KB/s, while a server that
#: trickles a byte a second is given up on in half a minute (it was 300 s, issue 26).
METADATA_DEADLINE = 30.0
#: Bytes a second a file read whole (``get(..., file=True)``) must keep over each
#: :data:`FILE_RATE_WINDOW` seconds, as a download does (``modfetch.FetchOptions.min_rate``):
#: a file may take long when it is large, never because its server trickles.
FILE_MIN_RATE = 1024
FILE_RATE_WINDOW = 30.0
#: The most bytes read of an error response's body (the message shows less).
MAX_ERROR_BODY = 64 << 10

#: Bytes asked of the socket per read while a download's body streams (:meth:`HttpClient.stream`).
#: httpcore asks 64 KiB, which costs a pass through h11 and httpx per 64 KiB; a download
#: of an identity-encoded body reads up to this much at once instead. Bodies read whole
#: (:meth:`HttpClient.get`) keep 64 KiB reads, so one gzip read inflates at most that much
#: before ``limit`` is checked.
DOWNLOAD_READ = 1 << 20


def _env_number(name: str, default: float, low: float, high: float) -> float:
    """``$name`` as a number in [low, high], ``default`` when unset; a bad value is an error."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:  # also NaN and infinities
        raise UsageError(f"{name}={raw[:40]!r}: want a number from {low:g} to {high:g}")
    return value


def _env_float(name: str, default: float) -> float:
    return _env_number(name, default, 0.001, 86_400.0)


def _env_retries() -> int:
    value = _env_number("WGTPM_HTTP_RETRIES", 4, 0, 100)
    if value != int(value):
        raise UsageError(f"WGTPM_HTTP_RETRIES={value:g}: want a whole number from 0 to 100")
    return int(value)


@dataclass(frozen=True)
class HttpOptions:
    """How patient the client is (``WGTPM_HTTP_RETRIES``, ``WGTPM_HTTP_TIMEOUT`` and
    ``WGTPM_HTTP_DEADLINE`` override)."""

    timeout: float = field(default_factory=lambda: _env_float("WGTPM_HTTP_TIMEOUT", 30.0))
    retries: int = field(default_factory=_env_retries)
    backoff: float = 0.5
    max_retry_after: float = 60.0
    #: Seconds a metadata request may take, retries included (:data:`METADATA_DEADLINE`,
    #: ``WGTPM_HTTP_DEADLINE``).
    deadline: float = field(
        default_factory=lambda: _env_float("WGTPM_HTTP_DEADLINE", METADATA_DEADLINE)
    )
    #: A file read whole keeps ``min_rate`` bytes a second over each ``rate_window`` seconds.
    min_rate: int = FILE_MIN_RATE
    rate_window: float = FILE_RATE_WINDOW
    max_redirects: int = 10
    user_agent: str = "wgtpm/0.1"

    @property
    def slow_after(self) -> float:
        """Seconds without an answer or a byte before the user is told which URL is slow."""
        return min(5.0, self.timeout / 2)

    @property
    def policy(self) -> Backoff:
        """The retry policy these options describe."""
        return Backoff(
            attempts=self.retries + 1, base=self.backoff, max_retry_after=self.max_retry_after
        )
