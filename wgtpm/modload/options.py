"""How a command treats the project files and the network: ``-mod`` and friends.

The ``-mod`` mode comes from the command's flag, else from ``WGTFLAGS``
(``WGTFLAGS=-mod=readonly``), else from the command, as in Go since 1.16:
``get`` and ``tidy`` default to ``mod``; every other command (``list``,
``graph``, ``why``, ``verify``, ``vendor`` and the builders' resolver) to
``readonly``, so that only the commands meant to change wgt.mod and wgt.sum
ever do.

- ``mod``: update wgt.mod and wgt.sum as the command needs;
- ``readonly``: any needed change to wgt.mod or wgt.sum is an error, which
  names the command that makes it (a missing wgt.sum line:
  ``missing wgt.sum entry for M@V; run 'wgtpm get' to add it``);
- ``vendor``: use ``vendor/`` and nothing else (no network, no module cache).

``WGTFLAGS`` holds ``-mod=MODE`` and nothing else; any other word in it, or a
quote left open, is a usage error (as Go refuses an unknown flag in GOFLAGS).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import UsageError
from .._report import SILENT, Reporter

if TYPE_CHECKING:
    from ..cache import Cache
    from ..sources import Source

__all__ = ["DEFAULT_JOBS", "MOD_MODES", "Options", "flags_mode"]

DEFAULT_JOBS = 16
"""Files downloaded at once, and wgt.mod files fetched at once while MVS walks the graph."""

MOD_MODES = ("mod", "readonly", "vendor")
_WANT = "want mod, readonly or vendor"
_SHOWN = 60  # characters of a bad WGTFLAGS word shown in an error


def flags_mode() -> str:
    """The ``-mod`` mode that ``WGTFLAGS`` sets, or ``""``; anything else in it is an error.

    Cheap and import-light: the no-op ``get`` calls it before trusting a stamp.
    """
    text = os.environ.get("WGTFLAGS", "")
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"WGTFLAGS: {exc}; quote it as a shell would") from exc
    mode = ""
    for word in words:
        name, eq, value = word.partition("=")
        if name not in ("-mod", "--mod"):
            raise UsageError(
                f"WGTFLAGS: unknown flag {word[:_SHOWN]!r}; it may hold only -mod=MODE "
                "(mod, readonly or vendor)"
            )
        if not eq or value not in MOD_MODES:
            raise UsageError(f"WGTFLAGS: {word[:_SHOWN]!r}: {_WANT}")
        mode = value
    return mode


@dataclass
class Options:
    """How a command treats the project files and the network."""

    mod_mode: str = ""  # "" (= "mod"), "mod", "readonly" or "vendor"
    jobs: int = DEFAULT_JOBS
    reporter: Reporter = SILENT
    source: Source | None = None  # default: WGTPROXY from the environment
    cache: Cache | None = None  # default: WGTPM_CACHE
    mod_set_by: str = ""  # "-mod" or "WGTFLAGS" when asked for; "" when it is the command's default

    @property
    def readonly(self) -> bool:
        """Whether wgt.mod and wgt.sum must stay as they are."""
        return self.mod_mode in ("readonly", "vendor")

    @property
    def vendor(self) -> bool:
        """Whether ``vendor/`` is the only place modules come from."""
        return self.mod_mode == "vendor"

    @property
    def missing_sum_fix(self) -> str:
        """What a read-only command's error about a missing wgt.sum line tells the user to run."""
        if self.mod_set_by:  # 'wgtpm get' alone would be refused too: the flag wins over WGTFLAGS
            where = " (from WGTFLAGS)" if self.mod_set_by == "WGTFLAGS" else ""
            return (
                f"-mod={self.mod_mode}{where} forbids adding it; run 'wgtpm get -mod=mod' to add it"
            )
        return "run 'wgtpm get' to add it"

    @classmethod
    def from_env(
        cls,
        mod_flag: str = "",
        *,
        default: str = "mod",
        jobs: int = DEFAULT_JOBS,
        reporter: Reporter = SILENT,
        source: Source | None = None,
        cache: Cache | None = None,
    ) -> Options:
        """``-mod`` from the flag, else ``WGTFLAGS`` (e.g. ``WGTFLAGS=-mod=readonly``), else ``default``.

        ``WGTFLAGS`` is checked even when the flag is given, so that a bad
        setting is reported by every command, not only by those without it.
        """
        from_flags = flags_mode()
        if mod_flag and mod_flag not in MOD_MODES:
            raise UsageError(f"-mod={mod_flag}: {_WANT}")
        mode = mod_flag or from_flags or default
        by = "-mod" if mod_flag else "WGTFLAGS" if from_flags else ""
        return cls(mode, jobs, reporter, source, cache, by)
