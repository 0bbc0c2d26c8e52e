"""The ``wgt`` kind: a WeightLang model, compiled and trained into an artifact directory.

``artifact xor model.wgt`` builds ``build/xor/`` (``manifest.json``,
``weights.safetensors``, ``source.wgt``; :mod:`wgtpm.weightlang.build`) and
publishes every file of it as ``xor/<file>``. The source and its data files
must lie inside the package (:mod:`wgtpm._contain`). torch is imported only by
:meth:`WgtBuilder.build`, once :func:`wgtpm._extras.require` has found it.
"""

from __future__ import annotations

from pathlib import Path

from .._extras import require
from .._report import Reporter
from ..artifacts import find_built
from ..deps import ModuleResolver
from ..kinds import WGT, kind_of_source
from ._builder import BuildResult, Target

__all__ = ["WgtBuilder"]


class WgtBuilder:
    """Compiles and trains a ``.wgt`` model."""

    kind = WGT

    def claims(self, source: str) -> bool:
        return kind_of_source(source) == WGT

    def build(self, target: Target, resolver: ModuleResolver, reporter: Reporter) -> BuildResult:
        require("weightlang", purpose=f"building artifact {target.name} ({target.source})")
        from ..weightlang.build import build_wgt
        from ..weightlang.report import training_line

        dest = target.out_dir / target.name
        result = build_wgt(
            target.source_path(),
            dest,
            resolver=resolver,
            name=target.source,
            reporter=reporter,
            root=target.project_dir,
        )
        weights = result.manifest["weights"]
        origins: dict[str, int] = {}
        for entry in weights["tensors"].values():
            origins[entry["origin"]] = origins.get(entry["origin"], 0) + 1
        counts = ", ".join(f"{n} {o}" for o, n in sorted(origins.items())) or "no tensors"
        summary = (
            f"built {target.shown(dest)} from {target.source}: weights sha256 "
            f"{weights['sha256']} ({counts}); training: {training_line(result.manifest['training'])}"
        )
        return BuildResult(WGT, summary, self.outputs(target) or {})

    def outputs(self, target: Target) -> dict[str, Path] | None:
        directory = target.out_dir / target.name
        if not directory.is_dir():
            return None
        return {f"{target.name}/{f.name}": f for f in sorted(directory.iterdir())}

    def find(self, base: Path, name: str) -> Path | None:
        return find_built(WGT, base, name)
