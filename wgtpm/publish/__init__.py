"""Publishing: checks, a clean build, the release and its targets.

One concept per module, imports running downwards::

    _target       Release, Published, PublishTarget: the contract every target implements
    _git          Checkout (HEAD, its time, the package's place in the repo), tags, export_commit
    _checks       version, newer, tag, replacements, tidy and verified build list
    _build        artifact order, build_package (pinned env; build/ links, untrained refused),
                  compare_builds
    _provenance   wgt.provenance.json (inside the release, so h1 covers it), check_provenance
    _release      assemble: files + provenance -> index, h1, the wgt.mod h1
    _directory    DirectoryTarget: a file:// proxy tree (--dry-run, -o DIR)
    _http         JSON and file bodies over HttpClient.send, JSON answers (registry, GitHub)
    _registry     RegistryTarget: the registry's publish API (--to URL, WGTPM_TOKEN)
    targets       select_target; HOSTED, the lazy table of GitHub and Hugging Face targets
    _publish      publish_package: the steps in order; PublishOptions, Outcome
    _rebuild      rebuild_module: a dependency's commit built again, compared byte for byte
    _retract      retract: a retract line in wgt.mod

Nothing is imported here until a name is used (:pep:`562`): ``wgtpm get``
imports :mod:`._provenance` alone to check a release it fetches, without
git, httpx, the builders or the rest of this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._directory import DirectoryTarget
    from ._provenance import PROVENANCE_FILE, check_provenance
    from ._publish import Outcome, PublishOptions, publish_package
    from ._rebuild import RebuildReport, rebuild_module
    from ._registry import TOKEN_ENV, RegistryTarget
    from ._retract import retract
    from ._target import Published, PublishTarget, Release
    from .targets import HOSTED, select_target

#: Each public name -> the module that defines it.
_HOME = {
    "HOSTED": "targets",
    "PROVENANCE_FILE": "_provenance",
    "TOKEN_ENV": "_registry",
    "DirectoryTarget": "_directory",
    "Outcome": "_publish",
    "PublishOptions": "_publish",
    "PublishTarget": "_target",
    "Published": "_target",
    "RebuildReport": "_rebuild",
    "RegistryTarget": "_registry",
    "Release": "_target",
    "check_provenance": "_provenance",
    "publish_package": "_publish",
    "rebuild_module": "_rebuild",
    "retract": "_retract",
    "select_target": "targets",
}

__all__ = [
    "HOSTED",
    "PROVENANCE_FILE",
    "TOKEN_ENV",
    "DirectoryTarget",
    "Outcome",
    "PublishOptions",
    "PublishTarget",
    "Published",
    "RebuildReport",
    "RegistryTarget",
    "Release",
    "check_provenance",
    "publish_package",
    "rebuild_module",
    "retract",
    "select_target",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
