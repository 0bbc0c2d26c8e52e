"""What a :class:`~wgtpm.modfetch.Fetcher` is told: its options, the checks it asks of
wgt.sum and of the trust lines, and which files a ``select`` picks."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from .._retry import Backoff

__all__ = ["FetchOptions", "SumChecker", "TrustHook", "matches"]


class SumChecker(Protocol):
    """What the fetcher asks about hashes (backed by wgt.sum and, for new lines, the checksum log)."""

    def check(self, path: str, version: str, h1: str, record: bool = True) -> None:
        """Accept ``h1`` for ``path version`` (``version`` may end in /wgt.mod) or raise.

        ``record=False`` checks against known lines without adding a new one
        (for wgt.mod files read only to learn about retractions).
        """
        ...


class TrustHook(Protocol):
    """The main module's trust lines (:mod:`wgtpm.trust`), asked before a version's index
    is accepted."""

    def covers(self, path: str) -> bool:
        """Whether some trust line names ``path`` (only then is a signature looked up)."""
        ...

    def check(
        self, path: str, version: str, files: Mapping[str, str], bundle: bytes | None
    ) -> None:
        """Raise unless ``bundle`` is a trusted signature over exactly ``files``."""
        ...


@dataclass(frozen=True)
class FetchOptions:
    #: Files of RANGED_MIN bytes and up fetched at once, and SMALL_JOBS times as many
    #: smaller ones; the same as modload.DEFAULT_JOBS (a test checks).
    jobs: int = 16
    resume_attempts: int = 5  # reconnects after a cut before giving up
    resume_backoff: float = 0.2  # seconds, doubled per reconnect (jittered, at most 2 s)
    #: A download slower than ``min_rate`` bytes a second over ``rate_window`` seconds is
    #: cut and resumed (a new connection, maybe another route), as a dropped one is.
    min_rate: int = 1024
    rate_window: float = 30.0
    #: Ranges a large file is fetched in at once (1: one request per file).
    ranges: int = 8

    @property
    def resume_policy(self) -> Backoff:
        """The retry policy of a cut download: ``resume_attempts`` reconnects."""
        return Backoff(attempts=self.resume_attempts + 1, base=self.resume_backoff, cap=2.0)

    list_ttl: float = 60.0  # seconds a version list is trusted


def matches(patterns: Iterable[str] | None, name: str) -> bool:
    """Whether ``name`` is selected: no patterns select everything; a glob may match the
    whole path or its base name; ``wgt.mod`` is always selected."""
    if patterns is None or name == "wgt.mod":
        return True
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(base, p) for p in patterns)
