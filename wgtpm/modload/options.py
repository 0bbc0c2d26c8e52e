"""How a command treats the project files and the network: ``-mod`` and friends.

The ``-mod`` mode comes from the command's flag, else from ``WGTFLAGS``
(``WGTFLAGS=-mod=readonly``), else it is empty, which means ``mod``:

- ``mod``: update wgt.mod and wgt.sum as the command needs;
- ``readonly``: any needed change to wgt.mod or wgt.sum is an error;
- ``vendor``: use ``vendor/`` and nothing else (no network, no module cache).
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

__all__ = ["DEFAULT_JOBS", "MOD_MODES", "Options"]

DEFAULT_JOBS = 16
"""Files downloaded at once, and wgt.mod files fetched at once while MVS walks the graph."""

MOD_MODES = ("mod", "readonly", "vendor")


@dataclass
class Options:
    """How a command treats the project files and the network."""

    mod_mode: str = ""  # "" (= "mod"), "mod", "readonly" or "vendor"
    jobs: int = DEFAULT_JOBS
    reporter: Reporter = SILENT
    source: Source | None = None  # default: WGTPROXY from the environment
    cache: Cache | None = None  # default: WGTPM_CACHE

    @property
    def readonly(self) -> bool:
        """Whether wgt.mod and wgt.sum must stay as they are."""
        return self.mod_mode in ("readonly", "vendor")

    @property
    def vendor(self) -> bool:
        """Whether ``vendor/`` is the only place modules come from."""
        return self.mod_mode == "vendor"

    @classmethod
    def from_env(
        cls,
        mod_flag: str = "",
        *,
        jobs: int = DEFAULT_JOBS,
        reporter: Reporter = SILENT,
        source: Source | None = None,
        cache: Cache | None = None,
    ) -> Options:
        """``-mod`` from the flag, else from ``WGTFLAGS`` (e.g. ``WGTFLAGS=-mod=readonly``)."""
        mode = mod_flag
        if not mode:
            try:
                words = shlex.split(os.environ.get("WGTFLAGS", ""))
            except ValueError as exc:
                raise UsageError(f"WGTFLAGS: {exc}; quote it as a shell would") from exc
            for word in words:
                if word.startswith(("-mod=", "--mod=")):
                    mode = word.split("=", 1)[1]
        if mode not in ("", *MOD_MODES):
            raise UsageError(f"-mod={mode}: want mod, readonly or vendor")
        return cls(mode, jobs, reporter, source, cache)
