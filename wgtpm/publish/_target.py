"""Where a release goes: the :class:`PublishTarget` protocol every target implements.

``wgtpm publish`` assembles a :class:`Release` (every file on the local disk,
the index, the wgt.mod), runs the checks, then hands the release to one
target: a wgtpm registry (its publish API), a GitHub repository (a release
with assets), a Hugging Face repository (one commit and a tag), or a
directory (a ``file://`` proxy tree, ``--dry-run``/``-o``).

A target answers four questions and does one thing:

- ``ready()``: raise :class:`~wgtpm.UsageError` when nothing could be
  published there at all (no token: the message names the variable to set).
  Asked first, before anything is read, built or sent.
- ``published_versions(module)``: the versions already published there (for
  "newer than every published version" and the tag check); ``[]`` when none.
- ``check(release)``: raise :class:`~wgtpm.UsageError` (or a ``ModuleError``)
  when the release cannot go there: the tag or version exists already with
  other content, the module path does not agree with the target (a module
  ``github.com/acme/x`` published to a GitHub repo other than acme/x), a
  missing token. Nothing leaves the machine.
- ``publish(release, reporter)``: upload, all or nothing. On any failure the
  target is left with no visible version: at most a draft, an uncommitted
  upload or an untagged commit, which the next attempt reuses or removes.
  Publishing the same release again (the same h1) is a no-op success;
  another h1 for an existing version is an error naming both.
  Returns a :class:`Published` saying where consumers get it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .. import module as _module
from .. import version as _version
from .._errors import NotFoundError, UsageError
from .._report import Reporter

if TYPE_CHECKING:
    from ..sources._base import Source

__all__ = [
    "PublishTarget",
    "Published",
    "Release",
    "listed_versions",
    "tag_for",
    "token_needed",
]

#: Hosts whose module paths name the repository: ``HOST/OWNER/REPO[/DIR][/vN]``.
REPO_HOSTS = {"github": "github.com", "huggingface": "hf.co"}


def tag_for(module: str, version: str, subdir: str = "") -> str:
    """The git tag of ``module@version``, as Go names it: ``DIR/vX.Y.Z``, or ``vX.Y.Z`` at the root.

    DIR is the module's directory in its repository, without a final major
    version element (a module in ``sub/`` or ``sub/v2/`` is tagged
    ``sub/v2.0.0``). On a host whose paths name the repository, DIR is what
    follows ``OWNER/REPO`` in the module path (``github.com/acme/xor/sub/v2``
    -> ``sub/v2.0.0``, which is where :mod:`wgtpm.sources.github` looks);
    elsewhere it is ``subdir``, the package's directory in its git checkout.
    Every target, the local tag and the checks take the tag from here.
    """
    from ..sources._hosted import repo_elems

    path = _module.normalise(module)
    host = REPO_HOSTS.get(_module.source_kind(path))
    elems = repo_elems(path, host) if host else None
    if elems is not None:
        where = "/".join(elems[2:])
    else:
        _, major = _module.split_path_major(path)
        where = subdir.strip("/")
        if major and (where == major[1:] or where.endswith(major)):
            where = where[: -len(major) + 1].rstrip("/")
    return f"{where}/{version}" if where else version


@dataclass(frozen=True)
class Release:
    """A built, indexed module version, every byte on the local disk.

    ``files`` maps each logical path of the index (``wgt.mod`` and
    ``wgt.index.json``'s own ``files``) to the file holding its bytes;
    ``index`` is the exact ``wgt.index.json`` bytes; ``h1`` and ``mod_h1``
    are the two wgt.sum hashes consumers will record. ``attestation`` is the
    DSSE envelope of the build's SLSA provenance (:mod:`._slsa`), which every
    target serves beside the index and never lists in it (empty: none); a
    re-publish of the same h1 leaves the first publish's statement in place.
    ``signature`` is the release's model-signing bundle (:mod:`wgtpm.trust`) over
    the index's files, served beside the index like the statement (empty: unsigned).
    """

    module: str
    version: str
    commit: str | None
    files: dict[str, Path]
    index: bytes
    h1: str
    mod_h1: str
    private: bool = False
    notes: str = ""  # release notes (GitHub release body, Hugging Face commit message)
    extra: dict[str, str] = field(default_factory=dict)
    attestation: bytes = b""
    signature: bytes = b""

    @property
    def tag(self) -> str:
        """The git tag of this version (:func:`tag_for`; ``extra["tag"]`` when
        ``wgtpm publish`` computed it with the package's place in its checkout)."""
        return self.extra.get("tag") or tag_for(self.module, self.version)

    def sum_lines(self) -> list[str]:
        """The two wgt.sum lines a consumer's ``wgtpm get`` writes for this release."""
        return [
            f"{self.module} {self.version} {self.h1}",
            f"{self.module} {self.version}/wgt.mod {self.mod_h1}",
        ]


@dataclass(frozen=True)
class Published:
    """Where a release went: a URL a person can open, and how consumers get it."""

    url: str
    created: bool  # False when the same release was there already (a no-op)


class PublishTarget(Protocol):
    """See the module docstring."""

    @property
    def name(self) -> str:
        """How messages name this target (``registry https://reg.example``, ``github.com/acme/x``)."""
        ...

    def ready(self) -> None: ...

    def published_versions(self, module: str) -> list[str]: ...

    def check(self, release: Release) -> None: ...

    def publish(self, release: Release, reporter: Reporter) -> Published: ...


def listed_versions(source: Source, module: str) -> list[str]:
    """The versions ``source`` (a hosted target's read side) lists for ``module``, sorted;
    ``[]`` when it knows nothing of the module yet."""
    try:
        return _version.sort_versions(source.versions(module))
    except NotFoundError:
        return []


def token_needed(target: str, variable: str, which: str) -> UsageError:
    """The one line of a target's ``ready()`` without a token: ``set VARIABLE WHICH``."""
    return UsageError(
        f"publishing to {target} needs a token: set {variable} {which}; nothing was built or sent"
    )
