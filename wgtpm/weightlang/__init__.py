"""WeightLang: the model language of wgtpm, its compiler, trainer and artifacts.

Modules, from the bottom up (torch is imported only by the last five, and
importing this package imports none of them)::

    ops        the layer operations: parameters, width rules, tensor shapes
    syntax     lexer, parser and syntax tree of .wgt files (the grammar is there)
    check      the type check: names, shapes, losses, targets
    data       inline, CSV and JSONL data sets, hashed
    manifest   the artifact's manifest.json: the prototype's format, its bytes, validation
    report     text descriptions of programs and manifests for the commands
    source     ``wgtpm check`` of a file: torch only to verify what it imports
    model      torch: the module of a layer list, seeded initialisation
    train      torch: deterministic training, NaN checks, the training record
    artifact   byte-stable writing and pickle-free verified reading of artifacts
    imports    resolving ``import`` statements against paths and the build list
    build      the pipeline: source -> checked program -> trained artifact
    api        ``load``, ``load_layer``: verified artifacts for Python code

The WeightLang 0.1.0 prototype's Python names work here too:
``load_artifact(path, warn_untrained=True)``, ``Artifact`` (its ``manifest``
also reads like the prototype's dict: ``artifact.manifest["weights"]``),
``WgtError`` (the root error, :class:`wgtpm.WgtpmError`) and
``UntrainedWeightsWarning``.

>>> from wgtpm.weightlang import parse
>>> parse("wgt 0.1\\nmodel m\\ninput x: f32[2]\\noutput y: f32[2]\\nlayer a = relu\\n", "m.wgt").model
'm'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .check import check
from .errors import (
    ArtifactError,
    LayerImportError,
    TamperedArtifactError,
    UntrainedWeightsWarning,
    WgtError,
)
from .syntax import Program, parse, parse_file

if TYPE_CHECKING:
    import torch

    from ..deps import ModuleResolver
    from .api import Artifact

__all__ = [
    "Artifact",
    "ArtifactError",
    "LayerImportError",
    "Program",
    "TamperedArtifactError",
    "UntrainedWeightsWarning",
    "WgtError",
    "check",
    "load",
    "load_artifact",
    "load_layer",
    "parse",
    "parse_file",
]


def load(
    ref_or_path: str | Path,
    *,
    project_dir: Path | None = None,
    resolver: ModuleResolver | None = None,
) -> Artifact:
    """Load a verified artifact; see :func:`wgtpm.weightlang.api.load` (imports torch)."""
    from .api import load as _load

    return _load(ref_or_path, project_dir=project_dir, resolver=resolver)


def load_artifact(path: str | Path, *, warn_untrained: bool = True) -> Artifact:
    """Verify and load the artifact directory ``path``: the prototype's ``load_artifact``.

    Warns with :class:`UntrainedWeightsWarning` for untrained tensors unless
    ``warn_untrained`` is false; raises :class:`WgtError` (an
    :class:`ArtifactError`) for anything wrong. Imports torch.
    """
    from .api import open_artifact

    return open_artifact(Path(path), warn_untrained=warn_untrained)


def load_layer(
    ref: str, *, project_dir: Path | None = None, resolver: ModuleResolver | None = None
) -> dict[str, torch.Tensor]:
    """One layer's tensors; see :func:`wgtpm.weightlang.api.load_layer` (imports torch)."""
    from .api import load_layer as _load_layer

    return _load_layer(ref, project_dir=project_dir, resolver=resolver)


def __getattr__(name: str) -> Any:
    if name == "Artifact":
        from .api import Artifact

        return Artifact
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
