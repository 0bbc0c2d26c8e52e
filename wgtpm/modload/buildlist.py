"""Where the files of each module of the build list come from: a small typed origin.

The main module's wgt.mod may replace a module version (``replace``), and a
replacement is either another module version or a directory on this machine::

    replace github.com/acme/base v0.1.0 => github.com/fork/base v0.1.1   # FromReplacement
    replace github.com/acme/base => ../base                             # FromDirectory

Every module of the build list therefore has exactly one :data:`Origin`:

- :class:`FromModule`: fetched as itself, ``path@version`` through the proxy protocol;
- :class:`FromReplacement`: fetched as the replacement module version;
- :class:`FromDirectory`: read from a directory, with no version, no index and
  no wgt.sum line (``wgtpm vendor`` copies every file it holds but ``.git``).

Both fetched kinds derive from :class:`Fetched`, which carries the module
version to ask the fetcher and the cache for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..module import ModuleVersion

if TYPE_CHECKING:
    from ..modfile import ModFile

__all__ = [
    "Fetched",
    "FromDirectory",
    "FromModule",
    "FromReplacement",
    "Origin",
    "origin_of",
    "replacement_text",
]


@dataclass(frozen=True)
class Fetched:
    """Files fetched from the module version ``path@version`` (verified against wgt.sum)."""

    path: str
    version: str

    def __str__(self) -> str:
        return f"{self.path}@{self.version}"


@dataclass(frozen=True)
class FromModule(Fetched):
    """The module version itself."""


@dataclass(frozen=True)
class FromReplacement(Fetched):
    """Another module version, named by a ``replace OLD [V] => NEW V`` line of the main module."""


@dataclass(frozen=True)
class FromDirectory:
    """A directory on this machine, named by a ``replace OLD [V] => DIR`` line.

    ``dir`` is absolute (resolved against the project root); ``written`` is
    the directory as wgt.mod spells it.
    """

    dir: Path
    written: str


Origin = FromModule | FromReplacement | FromDirectory


def origin_of(mf: ModFile, root: Path, m: ModuleVersion) -> Origin:
    """Where the files of ``m`` come from, by the replacements of the main module ``mf`` in ``root``."""
    repl = mf.replacement(m.path, m.version)
    if repl is None:
        return FromModule(m.path, m.version)
    if repl.is_local:
        return FromDirectory((root / repl.new_path).resolve(), repl.new_path)
    return FromReplacement(repl.new_path, repl.new_version or "")


def replacement_text(origin: Origin) -> str | None:
    """How ``wgtpm list`` shows a replacement: ``NEW V`` or ``DIR``; ``None`` when not replaced."""
    if isinstance(origin, FromReplacement):
        return f"{origin.path} {origin.version}"
    if isinstance(origin, FromDirectory):
        return origin.written
    return None
