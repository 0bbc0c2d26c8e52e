"""When the client tries a request again, and how long it waits first."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

from .. import _interrupt
from .._report import network
from .._retry import refused_for_good
from ._credentials import redact, shown_url
from ._errors import TransportError
from ._settings import HttpOptions

__all__ = ["IDEMPOTENT", "Retries", "retry_after"]

#: Methods that :meth:`HttpClient.send` retries unless told otherwise (RFC 9110, 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date), if present."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Retries:
    """The retry rule of one client (``HttpOptions.retries``, its backoff and
    ``max_retry_after``): which answers and network errors are tried again, and the
    announced wait before."""

    def __init__(self, opts: HttpOptions) -> None:
        self.opts = opts
        self._policy = opts.policy

    def sleep(
        self,
        attempt: int,
        headers: Mapping[str, str] | None,
        url: str,
        why: str = "",
        method: str = "GET",
    ) -> None:
        """Wait before the try after try ``attempt`` (from 0) of ``url``, saying so and
        ``why``; the server's ``Retry-After`` (in ``headers``) is honoured up to
        ``max_retry_after``, and a longer one is a :class:`TransportError`."""
        wait = self._policy.wait_for(attempt, retry_after(headers) if headers is not None else None)
        if wait is None:
            raise TransportError(
                url,
                f"server asks to retry after {retry_after(headers or {}) or 0:.0f}s, longer than "
                f"the {self.opts.max_retry_after:.0f}s wgtpm waits; try again later",
            )
        network().notice(
            redact(
                f"{method} {shown_url(url)}: {why or 'failed'}; retrying in {wait:.1f}s "
                f"(try {attempt + 2} of {self.opts.retries + 1})"
            )
        )
        _interrupt.sleep(wait)

    def again(self, err: TransportError, url: str, attempt: int, cause: BaseException) -> bool:
        """Whether a read of ``url`` whose try ``attempt`` (from 0) failed with ``err``
        (raised as ``cause``) is tried again: not when ``err`` is final, the tries are
        spent, or nothing listens nearby (:func:`wgtpm._retry.refused_for_good`). Writes
        keep trying through a refusal (a publish outlasts an outage): not asked here."""
        return not (err.final or attempt >= self.opts.retries or refused_for_good(url, cause))

    def gave_up(self, exc: TransportError, url: str, tries: int) -> TransportError:
        """``exc`` saying how many tries were made and which setting allows more."""
        if tries <= 1 or exc.final:
            return exc
        return TransportError(
            url, f"{exc.reason} (gave up after {tries} tries; WGTPM_HTTP_RETRIES sets how many)"
        )

    @staticmethod
    def retryable(status: int) -> bool:
        """Whether an answer of ``status`` is tried again (429 and 5xx)."""
        return status == 429 or 500 <= status < 600
