"""The :class:`Builder` protocol: what every artifact kind answers.

A package's wgt.mod declares ``artifact NAME SOURCE`` lines; each becomes a
:class:`Target` (the package directory, the name, the source as written, and
the output directory, ``build/`` of the package). The builder of the
source's kind (:mod:`wgtpm.kinds`) then answers four questions:

- ``claims(source)``: is this source of my kind?
- ``build(target, resolver, reporter)``: write the outputs under
  ``target.out_dir``, resolving imports (a WeightLang module import, a PAW
  interpreter) through ``resolver`` and telling the user what happens through
  ``reporter``; returns a :class:`BuildResult`. Raises a
  :class:`~wgtpm.WgtpmError` (``ParseError``, ``BuildError``, ...) on failure.
- ``outputs(target)``: the files a release of this artifact holds, logical
  path -> file on disk, after a build; ``None`` when they are not there.
- ``find(base, name)``: where an artifact ``name`` of this kind lies in a
  directory of module files that has no index saying so (a release's top
  level, or ``build/`` of a package replaced by a local directory); the
  layouts are in :mod:`wgtpm.artifacts`, which the locator reads without the builders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .._contain import resolve_inside
from .._errors import BuildError
from .._report import Reporter
from ..artifacts import BUILD_DIR
from ..deps import ModuleResolver

__all__ = ["BUILD_DIR", "BuildResult", "Builder", "Target"]


@dataclass(frozen=True)
class Target:
    """One ``artifact NAME SOURCE`` line of the package in ``project_dir``.

    ``source`` is relative to ``project_dir`` as written in wgt.mod;
    ``out_dir`` is where outputs go (``project_dir / "build"`` for ``wgtpm build``).
    Every file the build reads must lie inside ``project_dir`` (:mod:`wgtpm._contain`).
    """

    project_dir: Path
    name: str
    source: str
    out_dir: Path

    def source_path(self) -> Path:
        """The source file, once it is known to be a regular file inside the package
        (:func:`wgtpm._contain.resolve_inside`); a :class:`BuildError` naming it otherwise."""
        path = self.project_dir / self.source
        resolve_inside(self.project_dir, path, f"artifact {self.name}: {self.source}")
        return path  # as written: a .wgt's data files are relative to it, not to its target

    def read_source(self) -> bytes:
        """The bytes of the source file; a :class:`BuildError` naming it when unreadable."""
        try:
            return self.source_path().read_bytes()
        except OSError as exc:
            raise BuildError(
                f"artifact {self.name}: cannot read {self.source} ({exc.strerror})"
            ) from exc

    def shown(self, path: Path) -> str:
        """``path`` as messages show it: relative to the package when inside it."""
        try:
            return path.relative_to(self.project_dir).as_posix()
        except ValueError:
            return str(path)


@dataclass(frozen=True)
class BuildResult:
    """What one build wrote: its kind, one line for the user, and its outputs (see ``outputs``)."""

    kind: str
    summary: str
    outputs: dict[str, Path] = field(default_factory=dict)


class Builder(Protocol):
    """One artifact kind; see the module docstring for the contract of each method."""

    @property
    def kind(self) -> str:
        """The kind's name (:data:`wgtpm.kinds.KINDS`), also the ``kind`` of its index entries."""
        ...

    def claims(self, source: str) -> bool: ...

    def build(
        self, target: Target, resolver: ModuleResolver, reporter: Reporter
    ) -> BuildResult: ...

    def outputs(self, target: Target) -> dict[str, Path] | None: ...

    def find(self, base: Path, name: str) -> Path | None: ...
