"""The main module: loading it, its requirement graph, its build list (Go's ``modload``).

The map, one concept per module, imports running downwards::

    options    Options (-mod, jobs, reporter, source, cache), DEFAULT_JOBS
    files      find_root; ProjectFiles: load wgt.mod + wgt.sum, save atomically (sum first)
    sums       SumLedger: check, record or refuse (readonly), track used lines, prune
    buildlist  Origin: FromModule | FromReplacement | FromDirectory, origin_of()
    fetch      open_fetcher(): the Fetcher over the WGTPROXY chain, built on first use
    reqs       Reqs: mvs.Reqs with excludes, retractions and query resolution
    project    Project: the pieces above for one command (build list, downloads, save)
    vendor     vendor/ and its manifest: write, read, re-hash
    resolver   ProjectResolver, VendorResolver, open_resolver() for builders
    stamp      the no-op ``get`` stamp (imports nothing heavy)

Names are re-exported here lazily, so that importing :mod:`wgtpm.modload.stamp`
on a no-op ``wgtpm get`` does not load the wgt.mod parser or the fetcher.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .buildlist import Fetched, FromDirectory, FromModule, FromReplacement, Origin
    from .files import ProjectFiles, find_root
    from .options import DEFAULT_JOBS, Options
    from .project import Project
    from .reqs import Reqs
    from .resolver import ProjectResolver, VendorResolver, open_resolver
    from .sums import SumLedger

__all__ = [
    "DEFAULT_JOBS",
    "Fetched",
    "FromDirectory",
    "FromModule",
    "FromReplacement",
    "Options",
    "Origin",
    "Project",
    "ProjectFiles",
    "ProjectResolver",
    "Reqs",
    "SumLedger",
    "VendorResolver",
    "find_root",
    "open_resolver",
]

_HOME = {
    "DEFAULT_JOBS": "options",
    "Options": "options",
    "Fetched": "buildlist",
    "FromDirectory": "buildlist",
    "FromModule": "buildlist",
    "FromReplacement": "buildlist",
    "Origin": "buildlist",
    "ProjectFiles": "files",
    "find_root": "files",
    "Project": "project",
    "Reqs": "reqs",
    "ProjectResolver": "resolver",
    "VendorResolver": "resolver",
    "open_resolver": "resolver",
    "SumLedger": "sums",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
