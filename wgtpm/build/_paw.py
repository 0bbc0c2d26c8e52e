"""The ``paw`` kind: a PAW program, compiled from a ``.pawspec`` or shipped prebuilt.

``artifact triage triage.pawspec`` compiles the spec by training
(:func:`wgtpm.paw.build.build_program`) into ``build/triage.paw``;
``artifact triage vendor/triage.paw`` names a program built elsewhere, which
is validated in full, as a consumer will (:func:`wgtpm.paw.validate.check_bundle`),
and copied to ``build/triage.paw``. Either way the release holds
``triage.paw``, of kind ``paw``, which ``wgtpm get --paw-install`` installs.
The spec, and every file it names, must lie inside the package
(:mod:`wgtpm._contain`), checked when the spec is read, before any training.
The paw extra (torch, transformers, peft, gguf) is imported only by
:meth:`PawBuilder.build`, once :func:`wgtpm._extras.require` has found it.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._errors import BuildError
from .._extras import CHECKS_BUNDLE, require
from .._fs import temp_dir
from .._report import Reporter
from ..artifacts import BUNDLE_SUFFIX, find_built
from ..deps import ModuleResolver
from ..kinds import PAW, kind_of_source
from ._builder import BuildResult, Target

__all__ = ["BUNDLE_SUFFIX", "SPEC_SUFFIX", "PawBuilder"]

SPEC_SUFFIX = ".pawspec"


class PawBuilder:
    """Compiles a ``.pawspec``, or checks a prebuilt ``.paw``, into ``NAME.paw``."""

    kind = PAW

    def claims(self, source: str) -> bool:
        return kind_of_source(source) == PAW

    def build(self, target: Target, resolver: ModuleResolver, reporter: Reporter) -> BuildResult:
        out = target.out_dir / f"{target.name}{BUNDLE_SUFFIX}"
        if target.source.endswith(SPEC_SUFFIX):
            _compile(target, out, resolver, reporter)
            summary = f"built {target.shown(out)} from {target.source}"
        else:
            program_id = _copy_checked(target, out)
            summary = (
                f"checked {target.source} (program {program_id}), copied to {target.shown(out)}"
            )
        return BuildResult(PAW, summary, self.outputs(target) or {})

    def outputs(self, target: Target) -> dict[str, Path] | None:
        name = f"{target.name}{BUNDLE_SUFFIX}"
        bundle = target.out_dir / name
        return {name: bundle} if bundle.is_file() else None

    def find(self, base: Path, name: str) -> Path | None:
        return find_built(PAW, base, name)


def _compile(target: Target, out: Path, resolver: ModuleResolver, reporter: Reporter) -> None:
    require("paw", purpose=f"building artifact {target.name} ({target.source})")
    from ..paw.build import build_program

    build_program(
        target.source_path(),
        out,
        resolver,
        name=target.name,
        reporter=reporter,
        root=target.project_dir,
    )


def _copy_checked(target: Target, out: Path) -> str:
    """Copy the prebuilt bundle to ``out`` once it validates; returns its program ID."""
    data = target.read_source()
    require("paw", *CHECKS_BUNDLE, purpose=f"checking artifact {target.name} ({target.source})")
    from ..paw.bundle import BundleError, read_bundle
    from ..paw.validate import check_bundle

    # The bytes checked are the bytes renamed into place: validated in a private copy.
    with temp_dir(out) as tmp:
        copy = tmp / out.name
        with copy.open("xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            program = check_bundle(read_bundle(copy), source=target.source)
        except BundleError as exc:
            named = BundleError(target.source, exc.problems)  # the source, not the private copy
            raise BuildError(f"artifact {target.name}: {named}") from exc
        os.replace(copy, out)
    return program.program_id
