"""Building a .wgt file into an artifact directory.

The steps, each of which reports every problem it finds before stopping:

1. parse and type-check the source (:mod:`~wgtpm.weightlang.syntax`,
   :mod:`~wgtpm.weightlang.check`) and read its data sets (:mod:`~wgtpm.weightlang.data`);
2. resolve and verify its imports, of layers and of tensors (:mod:`~wgtpm.weightlang.imports`);
3. build the module, initialise it from the seed, copy the imported tensors
   in (freezing those marked ``freeze``) and train (:mod:`~wgtpm.weightlang.train`),
   all on one CPU thread so that float sums happen in the same order on every machine;
4. write manifest, weights and source into a hidden directory, verify it as a
   loader would, and rename it into place (:mod:`~wgtpm.weightlang.artifact`).

Building the same source with the same data and imports gives the same
bytes on every machine whose torch computes the same floats: the manifest
records nothing of the machine (no ``built_with``, which the prototype wrote;
docs/design.md section 13: h1 covers it), so two builds that differ only in the
torch or Python version installed give one h1 when their weights agree. The
versions that built a release go into its SLSA statement instead
(:func:`wgtpm.publish._provenance.tool_versions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._errors import BuildError, ParseError, Position, PositionedError
from .._report import SILENT, Reporter
from .._torchthreads import one_cpu_thread
from ..deps import ModuleResolver
from .artifact import read_artifact, safetensors_bytes, sha256_hex, tensor_bytes, write_artifact
from .check import check, layer_specs
from .data import Dataset, load_data
from .imports import ImportedLayer, ImportedTensor, resolve_all
from .manifest import (
    BATCH_NOTE,
    DTYPE,
    FORMAT,
    FORMAT_VERSION,
    IMPORTED,
    IMPORTED_TRAINED,
    MANIFEST_FILE,
    RANDOM,
    SOURCE_FILE,
    TRAINED,
    WEIGHTS_FILE,
    Interface,
    TensorEntry,
    manifest_bytes,
)
from .model import build_module, init_method, init_parameters, set_generator
from .source import check_file
from .syntax import Program, parse_bytes
from .train import train

__all__ = ["BuildResult", "build_file", "build_wgt", "check_file", "load_program"]

#: The manifest's ``compiler.name`` (the prototype writes ``weightc``).
COMPILER = "wgtpm"


@dataclass(frozen=True)
class BuildResult:
    """Where the artifact was written and its manifest (as JSON)."""

    path: Path
    manifest: Mapping[str, Any]


def load_program(source: Path, *, name: str | None = None) -> tuple[Program, dict[str, Dataset]]:
    """Parse, check and read the data of ``source``: everything ``wgtpm check`` does.

    ``name`` names the file in messages (default: ``source`` as given).
    """
    program, _ = _read_program(source, name or str(source))
    return program, load_data(program, source.parent)


def _read_program(source: Path, name: str) -> tuple[Program, bytes]:
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ParseError(
            [PositionedError(Position(name, 1, 0), f"cannot read: {exc.strerror}")]
        ) from exc
    program = parse_bytes(data, name)
    check(program)
    return program, data


def build_wgt(
    source: Path,
    dest: Path,
    *,
    resolver: ModuleResolver | None = None,
    name: str | None = None,
    reporter: Reporter = SILENT,
    root: Path | None = None,
) -> BuildResult:
    """Build ``source`` into the artifact directory ``dest`` (replacing an older build).

    ``resolver`` answers module imports from the package's build list; it is
    needed only when the source has any. ``root`` is the package directory
    when the source is an artifact of one: its data files must then lie inside
    it (:func:`~wgtpm.weightlang.data.load_data`). Training reports one notice per
    epoch to ``reporter``, ``train MODEL: epoch E/N loss L`` (the CLI shows a
    bar, or a line every few seconds). Raises ParseError, LayerImportError or
    BuildError; on any error ``dest`` is left as it was.
    """
    program, source_bytes = _read_program(source, name or str(source))
    datasets = load_data(program, source.parent, root=root)
    imported, tensor_imports = resolve_all(program, source.parent, resolver)

    def on_epoch(epoch: int, epochs: int, loss: float) -> None:
        reporter.notice(f"train {program.model}: epoch {epoch}/{epochs} loss {loss:.4f}")

    with one_cpu_thread():
        module, training = _compile(program, datasets, imported, tensor_imports, on_epoch)
    tensors = {k: v.detach().clone() for k, v in module.state_dict().items()}
    weights = safetensors_bytes(tensors, program.model)
    manifest = _manifest(program, datasets, imported, training)
    manifest["source"] = {"file": SOURCE_FILE, "sha256": sha256_hex(source_bytes)}
    manifest["weights"] = {
        "file": WEIGHTS_FILE,
        "sha256": sha256_hex(weights),
        "tensors": _tensor_table(imported, tensor_imports, training is not None, tensors),
    }
    files = {
        MANIFEST_FILE: manifest_bytes(manifest),
        WEIGHTS_FILE: weights,
        SOURCE_FILE: source_bytes,
    }
    write_artifact(dest, files, verify=read_artifact)
    return BuildResult(dest, manifest)


def build_file(
    source: Path,
    out_dir: Path,
    *,
    resolver: ModuleResolver | None = None,
    name: str | None = None,
    reporter: Reporter = SILENT,
) -> BuildResult:
    """Build one .wgt file, in a package or not, into ``out_dir/MODEL`` (``MODEL`` from its
    ``model`` statement), as the prototype's ``weightc build SOURCE -o DIR`` did.

    Path imports need nothing more; module imports need ``resolver``.
    """
    program, _ = _read_program(source, name or str(source))
    return build_wgt(
        source, out_dir / program.model, resolver=resolver, name=name, reporter=reporter
    )


def _compile(
    program: Program,
    datasets: Mapping[str, Dataset],
    imported: Sequence[ImportedLayer],
    tensor_imports: Sequence[ImportedTensor] = (),
    on_epoch: Callable[[int, int, float], None] | None = None,
) -> tuple[nn.Sequential, dict[str, Any] | None]:
    generator = torch.Generator().manual_seed(program.seed)
    module = build_module(layer_specs(program))
    # Every layer draws its initial values, imported or not, so that adding an
    # import does not change the initial values of the other layers.
    init_parameters(module, generator)
    with torch.no_grad():
        for layer in imported:
            for name, value in layer.tensors.items():
                module.get_parameter(name).copy_(value)
            if layer.freeze:
                module.get_submodule(layer.layer).requires_grad_(False)
        for tensor in tensor_imports:
            assert tensor.value is not None, "build reads the bytes of every tensor import"
            param = module.get_parameter(tensor.target)
            param.copy_(tensor.value)
            if tensor.freeze:
                param.requires_grad_(False)
    training = None
    if program.train is not None:
        rows = datasets[program.train.data].rows
        set_generator(module, generator)
        try:
            training = train(module, program.train, rows, generator, on_epoch)
        finally:
            set_generator(module, None)
    module.eval()
    return module, training


def _manifest(
    program: Program,
    datasets: Mapping[str, Dataset],
    imported: Sequence[ImportedLayer],
    training: dict[str, Any] | None,
) -> dict[str, Any]:
    """The manifest but ``source`` and ``weights`` (the caller adds them).

    :func:`~wgtpm.weightlang.manifest.manifest_bytes` puts the top-level keys
    in the prototype's order; the nested ones are built in it here.
    """
    from .. import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "language_version": program.version,
        "model": program.model,
        "compiler": {"name": COMPILER, "version": __version__},
        "interface": {
            "input": Interface(
                program.input.name, program.input.width, program.input.dtype
            ).to_json(),
            "output": Interface(program.output.name, program.output.width).to_json(),
            "batch": BATCH_NOTE,
        },
        "layers": [spec.to_json() for spec in layer_specs(program)],
        "init": {"seed": program.seed, "method": init_method(layer_specs(program))},
        "imports": [layer.record for layer in imported],
        "training": training,
        "data": {name: ds.record for name, ds in sorted(datasets.items())},
    }


def _tensor_table(
    imported: Sequence[ImportedLayer],
    tensor_imports: Sequence[ImportedTensor],
    trained: bool,
    tensors: Mapping[str, torch.Tensor],
) -> dict[str, Any]:
    sources = {name: layer for layer in imported for name in layer.tensors}
    copied = {t.target: t for t in tensor_imports}
    table: dict[str, Any] = {}
    for name, value in sorted(tensors.items()):
        sha = sha256_hex(tensor_bytes(value))
        layer = sources.get(name)
        if name in copied:
            entry = _imported_tensor_entry(copied[name], trained, value, sha)
        elif layer is None:
            entry = TensorEntry(DTYPE, tuple(value.shape), TRAINED if trained else RANDOM, sha)
        else:
            changed = trained and not layer.freeze
            origin = IMPORTED_TRAINED if changed else IMPORTED
            if not changed and sha != layer.record["tensors"][name]:
                raise BuildError(f"internal error: the frozen imported tensor {name} changed")
            entry = TensorEntry(DTYPE, tuple(value.shape), origin, sha, layer.upstream[name])
        if not bool(torch.isfinite(value).all()):
            raise BuildError(f"tensor {name} holds NaN or infinite values; the build is not usable")
        table[name] = entry.to_json()
    return table


def _imported_tensor_entry(
    imported: ImportedTensor, trained: bool, value: torch.Tensor, sha: str
) -> TensorEntry:
    """The table row of a tensor copied from a weights file: ``imported`` with its ``source``."""
    assert imported.value is not None
    changed = trained and not imported.freeze
    if not changed and sha != sha256_hex(tensor_bytes(imported.value)):
        raise BuildError(f"internal error: the frozen imported tensor {imported.target} changed")
    origin = IMPORTED_TRAINED if changed else IMPORTED
    return TensorEntry(DTYPE, tuple(value.shape), origin, sha, source=imported.source)
