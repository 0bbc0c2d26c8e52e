"""Building a package's artifacts for a release: in dependency order, pinned, checked.

Every ``artifact`` line of wgt.mod runs its kind's builder
(:func:`wgtpm.build.build_artifact`) with the export's ``build/`` as output
directory, so that a ``.wgt`` that imports another artifact of the same
package by path (``import h1 from "build/enc".h1``) finds it there: such an
artifact builds after the one it imports (otherwise wgt.mod's order holds).
The environment is pinned while builders run: ``SOURCE_DATE_EPOCH`` is the
commit's time, so that a time stamped into an output is the commit's.

A package whose ``build/`` (or anything in it) is a symlink is refused before
anything builds (:func:`check_build_dir`): builders would write through it, out
of the export, into whatever it points at. So is a package whose artifact
sources, or the artifact directories its ``.wgt`` files import by path, are
not inside the export's package directory, links followed (:func:`check_inputs`,
with :mod:`wgtpm._contain`): a committed ``data/vocab.json -> /proc/self/environ``
would otherwise ship the publisher's environment, and an import from outside
cannot be built again from the commit. The builders refuse the files they read
themselves (data files, a spec's examples) the same way.

A WeightLang artifact with untrained (randomly initialised) tensors is
refused unless the caller allows it. :func:`compare_builds` checks two builds
of one commit byte for byte (``--verify-reproducible``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .._contain import dir_escape_problem, resolve_inside
from .._errors import BuildError, WgtpmError
from .._report import Reporter
from ..deps import ModuleResolver
from ..kinds import WGT
from ._provenance import ArtifactProvenance

if TYPE_CHECKING:
    from ..modfile import Artifact

__all__ = [
    "artifact_order",
    "build_package",
    "check_build_dir",
    "check_inputs",
    "compare_builds",
    "first_difference",
]

BLOCK = 1 << 20


def artifact_order(pkg: Path, artifacts: Sequence[Artifact], out_dir: Path) -> list[Artifact]:
    """``artifacts`` so that each comes after the artifacts of the package it imports by path."""
    by_dir = {(out_dir / a.name).resolve(): a.name for a in artifacts}
    needs = {a.name: _path_imports(pkg, a, by_dir) for a in artifacts}
    done: list[Artifact] = []
    placed: set[str] = set()
    visiting: list[str] = []
    by_name = {a.name: a for a in artifacts}

    def place(name: str) -> None:
        if name in placed:
            return
        if name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(name) :], name])
            raise BuildError(f"artifacts import each other in a cycle: {cycle}; break the cycle")
        visiting.append(name)
        for dep in needs[name]:
            place(dep)
        visiting.pop()
        placed.add(name)
        done.append(by_name[name])

    for a in artifacts:
        place(a.name)
    return done


def _path_imports(pkg: Path, artifact: Artifact, by_dir: dict[Path, str]) -> list[str]:
    """The artifacts of the package that ``artifact`` (a ``.wgt``) imports by path."""
    source = pkg / artifact.source
    out = []
    for ref in _path_import_refs(source, artifact):
        name = by_dir.get((source.parent / ref).resolve())
        if name is not None and name != artifact.name:
            out.append(name)
    return out


@contextmanager
def pinned_env(epoch: int) -> Iterator[None]:
    """``SOURCE_DATE_EPOCH`` set to ``epoch`` while the block runs."""
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


def build_package(
    pkg: Path,
    artifacts: Sequence[Artifact],
    resolver: ModuleResolver,
    reporter: Reporter,
    *,
    epoch: int,
    allow_untrained: bool,
) -> list[ArtifactProvenance]:
    """Build every artifact of the package exported in ``pkg`` (see the module docstring)."""
    from ..build import BUILD_DIR, Target, build_artifact

    out_dir = pkg / BUILD_DIR
    check_build_dir(pkg)
    check_inputs(pkg, artifacts)
    built = []
    with pinned_env(epoch):
        for i, a in enumerate(artifact_order(pkg, artifacts, out_dir), 1):
            reporter.notice(f"building artifact {a.name} ({i}/{len(artifacts)}) from {a.source}")
            result = build_artifact(Target(pkg, a.name, a.source, out_dir), resolver, reporter)
            reporter.notice(result.summary)
            if not result.outputs:
                raise BuildError(f"artifact {a.name}: its builder wrote no outputs")
            if result.kind == WGT and not allow_untrained:
                _refuse_untrained(a.name, result.outputs)
            built.append(ArtifactProvenance(a.name, result.kind, a.source, dict(result.outputs)))
    return built


def check_build_dir(pkg: Path) -> None:
    """Refuse a package (an export of a commit) whose ``build/`` holds a symlink, or is one.

    Builders write their outputs under ``build/``; through a committed link they
    would write out of the export, into whatever the link points at.
    """
    from ..build import BUILD_DIR

    out = pkg / BUILD_DIR
    links = [out] if out.is_symlink() else sorted(p for p in out.rglob("*") if p.is_symlink())
    if links:
        shown = links[0].relative_to(pkg).as_posix()
        raise BuildError(
            f"{shown} is committed as a symlink, which builders would write through; "
            f"untrack it (git rm --cached {shown}), ignore {BUILD_DIR}/ in .gitignore, and commit"
        )


def check_inputs(pkg: Path, artifacts: Sequence[Artifact]) -> None:
    """Refuse an artifact whose source, or an artifact directory its ``.wgt`` imports by
    path, is not inside ``pkg`` (links followed; see the module docstring)."""
    for a in artifacts:
        source = pkg / a.source
        resolve_inside(pkg, source, f"artifact {a.name}: {a.source}")
        for ref in _path_import_refs(source, a):
            found = dir_escape_problem(pkg, source.parent / ref)
            if found is not None:
                raise BuildError(
                    f'artifact {a.name}: {a.source} imports from "{ref}", which {found[1]}, '
                    "or import it from a module by its path: a release builds from the package "
                    "alone"
                )


def _path_import_refs(source: Path, artifact: Artifact) -> list[str]:
    """The paths a ``.wgt`` artifact imports from (``import h from "build/enc".h``)."""
    if artifact.kind != WGT:
        return []
    from ..weightlang.syntax import PathSource, parse_bytes

    try:
        program = parse_bytes(source.read_bytes(), artifact.source)
    except (OSError, WgtpmError):
        return []  # the build reports it, with its position
    return [i.source.path for i in program.imports if isinstance(i.source, PathSource)]


def _refuse_untrained(name: str, outputs: dict[str, Path]) -> None:
    from ..weightlang.manifest import MANIFEST_FILE, Manifest

    for logical, path in outputs.items():
        if logical.endswith("/" + MANIFEST_FILE):
            manifest = Manifest.from_bytes(logical, path.read_bytes())
            if manifest.untrained_tensors:
                raise BuildError(
                    f"artifact {name} holds untrained, randomly initialised tensors "
                    f"({', '.join(manifest.untrained_tensors)}); add a train statement, "
                    "or publish with --allow-untrained if that is intended"
                )


def compare_builds(first: list[ArtifactProvenance], second: list[ArtifactProvenance]) -> None:
    """Raise :class:`BuildError` naming the first file, and its first offset, that differs."""
    a = {p: f for art in first for p, f in art.outputs.items()}
    b = {p: f for art in second for p, f in art.outputs.items()}
    for path in sorted(set(a) ^ set(b)):
        raise BuildError(
            f"not reproducible: {path} is written by only one of two builds of the same commit"
        )
    for path in sorted(a):
        offset = first_difference(a[path], b[path])
        if offset is not None:
            raise BuildError(
                f"not reproducible: {path} differs between two builds of the same commit, "
                f"first at byte offset {offset}; make its build step deterministic"
            )


def first_difference(x: Path, y: Path) -> int | None:
    """The offset of the first byte where the files differ (the shorter one's end), or None."""
    offset = 0
    with open(x, "rb") as fx, open(y, "rb") as fy:
        while True:
            bx, by = fx.read(BLOCK), fy.read(BLOCK)
            if bx != by:
                n = min(len(bx), len(by))
                return offset + next((i for i in range(n) if bx[i] != by[i]), n)
            if not bx:
                return None
            offset += len(bx)
