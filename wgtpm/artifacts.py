"""The artifact locator: given a module's files and an artifact name, its kind and files.

The locator sits below the builders (:mod:`wgtpm.build`) and imports none of
them: a kind's builder may ask where an imported artifact lies (a WeightLang
import, a PAW interpreter), and the package that imports every builder must
not be what it asks. What each kind looks like on disk is the table
:data:`_FINDERS` here, which the builders' ``find`` answer from.

Where an artifact lies, in order:

1. the release index, when there is one: the entries whose ``artifact`` is
   the name give its kind and logical paths (``xor/manifest.json``,
   ``xor/weights.safetensors`` -> kind ``wgt`` at ``xor/``; ``triage.paw``
   -> kind ``paw`` at ``triage.paw``);
2. otherwise what the builders wrote or a release holds at its top, looked
   for in the module's directory and then in its ``build/`` (a module
   replaced by a package directory holds what ``wgtpm build`` wrote): each
   kind's layout in the order of :data:`wgtpm.kinds.KINDS`, so
   ``NAME/`` is a ``wgt`` artifact and ``NAME.paw`` a ``paw`` one.

A module directory from the cache holds no index (it is kept beside it), so
callers that have the fetched :class:`~wgtpm.index.ReleaseIndex` pass it;
:func:`module_index` reads a ``wgt.index.json`` that a module directory does
hold, always through :func:`wgtpm.index.parse`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .deps import ResolvedModule
from .index import ReleaseIndex
from .index import parse as parse_index
from .kinds import FILE, KINDS, PAW, WGT, check_kind, kind_of_source

__all__ = [
    "BUILD_DIR",
    "BUNDLE_SUFFIX",
    "INDEX_FILE",
    "LocatedArtifact",
    "find_built",
    "locate_artifact",
    "locate_built",
    "module_artifact",
    "module_index",
    "release_artifacts",
]

INDEX_FILE = "wgt.index.json"

#: Where ``wgtpm build`` writes, inside the package directory.
BUILD_DIR = "build"

#: A PAW program on disk and in a release: ``NAME.paw``.
BUNDLE_SUFFIX = ".paw"


def _find_wgt(base: Path, name: str) -> Path | None:
    """A ``wgt`` artifact is the directory ``NAME/`` (manifest, weights, source)."""
    candidate = base / name
    return candidate if candidate.is_dir() else None


def _find_paw(base: Path, name: str) -> Path | None:
    """A ``paw`` artifact is the file ``NAME.paw`` (``name`` may carry the suffix already)."""
    candidate = base / (name if name.endswith(BUNDLE_SUFFIX) else name + BUNDLE_SUFFIX)
    return candidate if candidate.is_file() else None


def _find_file(base: Path, name: str) -> Path | None:
    """A ``file`` artifact is the file of that name, if no other kind claims the name."""
    candidate = base / name
    return candidate if candidate.is_file() and kind_of_source(name) == FILE else None


_FINDERS: dict[str, Callable[[Path, str], Path | None]] = {
    WGT: _find_wgt,
    PAW: _find_paw,
    FILE: _find_file,
}
assert tuple(_FINDERS) == KINDS, "one layout per kind of wgtpm.kinds, in its order"


def find_built(kind: str, base: Path, name: str) -> Path | None:
    """Where artifact ``name`` of ``kind`` lies directly in ``base``, or ``None``."""
    return _FINDERS[check_kind(kind)](base, name)


@dataclass(frozen=True)
class LocatedArtifact:
    """An artifact found: its kind, its path (a directory or a file), and its files.

    ``files`` are the logical paths of the release index (empty when it was
    found on disk without one).
    """

    name: str
    kind: str
    path: Path
    files: tuple[str, ...] = ()


def release_artifacts(index: ReleaseIndex) -> dict[str, str]:
    """Every artifact of a release: name -> kind (entries without an artifact left out)."""
    return {e.artifact: e.kind or "" for e in index.files if e.artifact}


def locate_built(base: Path, name: str) -> LocatedArtifact | None:
    """Artifact ``name`` directly in ``base`` (no index): the first kind whose layout is there."""
    for kind, find in _FINDERS.items():
        path = find(base, name)
        if path is not None:
            return LocatedArtifact(name, kind, path)
    return None


def locate_artifact(
    root: Path, name: str, *, index: ReleaseIndex | None = None
) -> LocatedArtifact | None:
    """Artifact ``name`` among the module files in ``root`` (see the module docstring)."""
    if index is not None:
        entries = [e for e in index.files if e.artifact == name]
        kind = entries[0].kind if entries else None
        if kind:  # entries without a kind say nothing: the files on disk decide
            check_kind(kind)  # an unknown kind is an error, not a plain file
            paths = tuple(e.path for e in entries)
            return LocatedArtifact(name, kind, root / _artifact_path(name, paths), paths)
    for base in (root, root / BUILD_DIR):
        found = locate_built(base, name)
        if found is not None:
            return found
    return None


def module_index(module: ResolvedModule) -> ReleaseIndex | None:
    """The ``wgt.index.json`` in a module's directory, parsed and checked, or ``None``.

    A local directory replacement (``version`` empty) has no release, so no index.
    """
    path = module.dir / INDEX_FILE
    if not module.version or not path.is_file():
        return None
    return parse_index(path.read_bytes(), module.path, module.version)


def module_artifact(module: ResolvedModule, name: str) -> LocatedArtifact | None:
    """Artifact ``name`` of a module of the build list."""
    return locate_artifact(module.dir, name, index=module_index(module))


def _artifact_path(name: str, paths: tuple[str, ...]) -> str:
    """One file is the artifact; several are the directory they share (``NAME/`` for ``wgt``)."""
    if len(paths) == 1:
        return paths[0]
    prefix = f"{name}/"
    if all(p.startswith(prefix) for p in paths):
        return name
    parts = [p.split("/")[:-1] for p in paths]
    common: list[str] = []
    for group in zip(*parts):
        if len(set(group)) != 1:
            break
        common.append(group[0])
    return "/".join(common) or "."
