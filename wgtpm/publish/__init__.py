"""Publishing: checks, a clean build, the release and its targets.

One concept per module, imports running downwards::

    _target       Release, Published, PublishTarget: the contract every target implements
    _git          Checkout (HEAD, its time, the package's place in the repo), tags, export_commit
    _checks       version, newer, tag, replacements, tidy and verified build list
    _build        artifact order, build_package (pinned env, untrained refused), compare_builds
    _provenance   wgt.provenance.json (inside the release, so h1 covers it), check_provenance
    _release      assemble: files + provenance -> index, h1, the wgt.mod h1
    _directory    DirectoryTarget: a file:// proxy tree (--dry-run, -o DIR)
    _http         JSON and file bodies over HttpClient.send, JSON answers (registry, GitHub)
    _registry     RegistryTarget: the registry's publish API (--to URL, WGTPM_TOKEN)
    targets       select_target; HOSTED, the lazy table of GitHub and Hugging Face targets
    _publish      publish_package: the steps in order; PublishOptions, Outcome
    _retract      retract: a retract line in wgt.mod

Nothing heavy is imported here: git, httpx and the builders load when used.
"""

from ._directory import DirectoryTarget
from ._provenance import PROVENANCE_FILE, check_provenance
from ._publish import Outcome, PublishOptions, publish_package
from ._registry import TOKEN_ENV, RegistryTarget
from ._retract import retract
from ._target import Published, PublishTarget, Release
from .targets import HOSTED, select_target

__all__ = [
    "HOSTED",
    "PROVENANCE_FILE",
    "TOKEN_ENV",
    "DirectoryTarget",
    "Outcome",
    "PublishOptions",
    "PublishTarget",
    "Published",
    "RegistryTarget",
    "Release",
    "check_provenance",
    "publish_package",
    "retract",
    "select_target",
]
