"""What builders see of a project's build list: :class:`ProjectResolver` and :class:`VendorResolver`.

Builders (WeightLang imports, a PAW program's interpreter) are handed a
:class:`~wgtpm.deps.ModuleResolver`; :func:`open_resolver` picks the one
that fits the project in a directory:

- :class:`ProjectResolver` (the default): the build list by MVS, each module
  downloaded and verified on first use. Builders only read wgt.mod and
  wgt.sum (``-mod=readonly`` unless ``WGTFLAGS`` says otherwise, as ``go
  build`` since Go 1.16): a missing wgt.sum line is an error naming the
  command that adds it; only ``WGTFLAGS=-mod=mod`` lets them save new lines;
- :class:`VendorResolver` (``-mod=vendor``, from ``WGTFLAGS``): the modules
  of ``vendor/`` only; each fetched module's file list must hash to its h1
  in wgt.sum, and its files are re-hashed (and unlisted ones refused) before
  first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import ResolveError
from ..deps import ResolvedModule
from ..module import ModuleVersion
from .buildlist import Fetched, FromDirectory
from .options import Options
from .project import Project
from .vendor import VENDOR, check_locked, read_manifest, verify_module

__all__ = ["ProjectResolver", "VendorResolver", "open_resolver"]


def open_resolver(project_dir: Path) -> ProjectResolver | VendorResolver:
    """The resolver for the package in ``project_dir`` (``WGTFLAGS``, ``-mod=vendor`` honoured);
    :meth:`~ProjectResolver.close` it (or use it as a ``with`` block) when done.

    Read-only unless ``WGTFLAGS=-mod=mod``: see the module docstring.
    """
    project = Project.load(project_dir, Options.from_env(default="readonly"))
    if project.opts.vendor:
        return VendorResolver(project)
    return ProjectResolver(project)


class ProjectResolver:
    """A :class:`~wgtpm.deps.ModuleResolver` over a project's build list."""

    def __init__(self, project: Project, save: bool = True) -> None:
        self._project = project
        self._save = save  # False: the caller saves (or not) when its own work is done
        self._build: dict[str, ModuleVersion] | None = None

    def close(self) -> None:
        """Close the project's HTTP client (see :meth:`Project.close`)."""
        self._project.close()

    def __enter__(self) -> ProjectResolver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _list(self) -> dict[str, ModuleVersion]:
        if self._build is None:
            self._build = {m.path: m for m in self._project.build_list()[1:]}
        return self._build

    def modules(self) -> list[str]:
        return sorted(self._list())

    def module(self, path: str) -> ResolvedModule:
        m = self._list().get(path)
        if m is None:
            raise ResolveError(
                f"module {path} is not in the build list of {self._project.path}; "
                f"add it with 'wgtpm get {path}'"
            )
        d = self._project.module_dir(m)
        origin = self._project.origin(m)
        if isinstance(origin, FromDirectory):  # no version, no commit
            return ResolvedModule(m.path, "", d, None)
        commit = self._project.index(origin).commit
        if self._save:
            self._project.save()  # a no-op unless WGTFLAGS=-mod=mod
        return ResolvedModule(m.path, m.version, d, commit)


class VendorResolver:
    """A resolver over ``vendor/`` that checks each module's files before handing them out."""

    def __init__(self, project: Project) -> None:
        self._dir = project.root / VENDOR
        self._mods = read_manifest(self._dir, project.requirements())
        trust = project.trust_policy()
        for m in self._mods.values():
            # Whether a module is a directory is wgt.mod's to say, not the manifest's.
            origin = project.origin(ModuleVersion(m["path"], m["version"]))
            if isinstance(origin, Fetched):
                check_locked(m, project.sums.hashes(origin.path, origin.version))
                if trust is not None and trust.covers(origin.path):
                    sig = m.get("signature")  # the bundle wgtpm vendor copied (wgtpm.trust)
                    listed = {f["path"]: f["sha256"] for f in m["files"]}
                    trust.check(
                        origin.path,
                        origin.version,
                        listed,
                        sig.encode() if isinstance(sig, str) else None,
                    )
        self._checked: set[str] = set()

    def modules(self) -> list[str]:
        return sorted(self._mods)

    def close(self) -> None:
        """Nothing to close: ``vendor/`` needs no network."""

    def __enter__(self) -> VendorResolver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def entry(self, path: str) -> dict[str, Any]:
        """The manifest entry of a vendored module (see :mod:`wgtpm.modload.vendor`)."""
        m: dict[str, Any] = self._mods[path]
        return m

    def versions(self) -> dict[str, str]:
        """The vendored version of each module path."""
        return {p: m["version"] for p, m in sorted(self._mods.items())}

    def module(self, path: str) -> ResolvedModule:
        m: dict[str, Any] | None = self._mods.get(path)
        if m is None:
            raise ResolveError(
                f"module {path} is not vendored; add it with 'wgtpm get {path}' and 'wgtpm vendor'"
            )
        if path not in self._checked:
            verify_module(self._dir, m, self._mods)
            self._checked.add(path)
        return ResolvedModule(path, m["version"], self._dir / path, None)
