"""The main module: loading it, its requirement graph, its build list (Go's ``modload``).

The map, one concept per module, imports running downwards::

    options    Options (-mod, jobs, reporter, source, cache), DEFAULT_JOBS
    root       find_root: the nearest directory with a wgt.mod (imports only the stdlib)
    files      ProjectFiles: load wgt.mod + wgt.sum, save atomically (sum first)
    sums       SumLedger: check, record or refuse (readonly), track used lines, prune
    buildlist  Origin: FromModule | FromReplacement | FromDirectory, origin_of()
    fetch      open_fetcher(): the Fetcher over the WGTPROXY chain for a block, built on
               first use; its HTTP client is closed when the block ends
    reqs       Reqs: mvs.Reqs with excludes, retractions and query resolution
    licenses   ModuleLicense, license_of(), check_denied(): wgt.mod or card license, deny-license
    project    Project: the pieces above for one command (build list, downloads, save)
    notices    warn_retracted(), warn_deprecated(), warn_empty_selects(): what a build list
               tells the user
    vendor     vendor/ and its manifest: write, read, re-hash
    resolver   ProjectResolver, VendorResolver, open_resolver() for builders
    stamp      the no-op ``get`` stamp (imports nothing heavy)

Names are re-exported here lazily, so that importing :mod:`wgtpm.modload.stamp`
on a no-op ``wgtpm get`` does not load the wgt.mod parser or the fetcher (nor
``typing``: the no-op path loads no more than it needs).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see above)
if TYPE_CHECKING:
    from .buildlist import Fetched, FromDirectory, FromModule, FromReplacement, Origin
    from .files import ProjectFiles
    from .options import DEFAULT_JOBS, Options
    from .project import Project
    from .reqs import Reqs
    from .resolver import ProjectResolver, VendorResolver, open_resolver
    from .root import find_root
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
    "find_root": "root",
    "Project": "project",
    "Reqs": "reqs",
    "ProjectResolver": "resolver",
    "VendorResolver": "resolver",
    "open_resolver": "resolver",
    "SumLedger": "sums",
}


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
