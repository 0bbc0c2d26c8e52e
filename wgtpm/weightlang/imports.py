"""Resolving ``import`` statements: finding, verifying and matching imported layers.

``import h1 from github.com/acme/xor-base/xor.h1`` names an artifact of a
module in the build list: the module comes from the :class:`ModuleResolver`
(already verified against wgt.sum) and the artifact is the directory
``<module dir>/xor``; for a module replaced by a local package directory
the built ``<dir>/build/xor`` is used when ``<dir>/xor`` is absent.
``import h2 from "../enc/build/enc".h2`` names an artifact directory relative
to the .wgt file. Either way the artifact is fully verified
(:func:`wgtpm.weightlang.artifact.read_artifact`), its weights' sha256 must
equal the ``sha256=`` pin if there is one, and the source layer must have the
target layer's operation and arguments. The source may be a prototype
artifact, a wgtpm one, or one in wgtpm's legacy format.

Every import is resolved; all problems are raised together as one
:class:`LayerImportError`. Each resolved import yields the manifest's import
record (see :mod:`wgtpm.weightlang.manifest`).

``import tok.weight from MODULE/FILE#TENSOR`` (:func:`resolve_tensor_imports`)
names one tensor of a ``.safetensors`` or ``.gguf`` file of a build-list
module: the module's tensor table (:func:`wgtpm.tensors.tables_for`, from the
files wgt.sum verified) gives its dtype, shape and sha256; the shape must be
the layer tensor's (a GGUF shape is stored innermost first and compared
reversed), the sha256 the ``sha256=`` pin's; the bytes are read and checked
against the table's sha256 (:func:`wgtpm.tensors.read_tensor_bytes`) and
converted from F32, F16 or BF16 to float32. Nothing is unpickled.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .._errors import PositionedError, WgtpmError
from ..artifacts import module_artifact
from ..deps import ModuleResolver, ResolvedModule, split_ref
from .artifact import read_artifact, sha256_hex, tensor_bytes
from .errors import LayerImportError
from .manifest import IMPORTED, MANIFEST_FILE, TensorEntry
from .ops import LayerSpec, tensor_shapes
from .syntax import Import, ModuleSource, Program, TensorImport

__all__ = [
    "CONVERTIBLE_DTYPES",
    "ImportedLayer",
    "ImportedTensor",
    "artifact_in_module",
    "module_label",
    "resolve_all",
    "resolve_imports",
    "resolve_tensor_imports",
]

#: The stored dtypes a tensor import converts to float32 (quantized GGUF types are refused).
CONVERTIBLE_DTYPES: Mapping[str, torch.dtype] = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
}


@dataclass(frozen=True)
class ImportedLayer:
    """The tensors one import copies, by full target name (``h1.weight``), and its record.

    ``upstream`` gives each tensor's origin where it came from, following
    imports back (``trained``, ``random-init`` or ``imported+trained``).
    """

    layer: str
    freeze: bool
    tensors: Mapping[str, torch.Tensor]
    upstream: Mapping[str, str]
    record: dict[str, Any]


class _Fail(Exception):
    pass


def resolve_imports(
    program: Program, base_dir: Path, resolver: ModuleResolver | None
) -> list[ImportedLayer]:
    """Resolve every import of ``program``; raises LayerImportError listing all failures."""
    done: list[ImportedLayer] = []
    errors: list[PositionedError] = []
    for imp in program.imports:
        try:
            done.append(_resolve(program, imp, base_dir, resolver))
        except _Fail as fail:
            errors.append(PositionedError(imp.source_pos, f"import {imp.layer}: {fail}"))
    if errors:
        raise LayerImportError(errors)
    return done


def _resolve(
    program: Program, imp: Import, base_dir: Path, resolver: ModuleResolver | None
) -> ImportedLayer:
    directory, source_text, package = _locate(imp, base_dir, resolver)
    try:
        stored = read_artifact(directory)
    except WgtpmError as exc:
        raise _Fail(f"cannot use {imp.source}: {exc}") from exc
    manifest = stored.manifest
    if imp.sha256 is not None and imp.sha256 != manifest.weights_sha256:
        raise _Fail(
            f"sha256 pin mismatch: the import pins sha256={imp.sha256} but {imp.source}"
            f"{_at(package)} has weights sha256={manifest.weights_sha256}; "
            "if the new weights are intended, update the pin"
        )
    source = next((s for s in manifest.layers if s.name == imp.source_layer), None)
    target = program.layer(imp.layer)
    assert target is not None, "check() makes sure the target layer exists"
    wanted = LayerSpec(imp.layer, target.op, dict(target.args))
    if source is None:
        known = ", ".join(s.name for s in manifest.layers if s.tensor_shapes()) or "none"
        raise _Fail(
            f"{imp.source} has no layer {imp.source_layer}, expected one of its layers with "
            f"weights: {known}"
        )
    if (source.op, dict(source.args)) != (wanted.op, dict(wanted.args)):
        raise _Fail(
            f"shape mismatch: {imp.source}.{imp.source_layer} is {_show(source)} but layer "
            f"{imp.layer} here is {_show(wanted)}; they must agree"
        )
    tensors, upstream, hashes = {}, {}, {}
    for name in wanted.tensor_shapes():
        from_name = f"{imp.source_layer}{name[len(imp.layer) :]}"
        tensors[name] = stored.tensors[from_name]
        upstream[name] = _upstream(manifest.tensors[from_name])
        # Hashed here: a prototype artifact's tensor table has no per-tensor hashes.
        hashes[name] = sha256_hex(tensor_bytes(stored.tensors[from_name]))
    record = {
        "layer": imp.layer,
        "source": source_text,
        "source_model": manifest.model,
        "source_layer": imp.source_layer,
        "source_weights_sha256": manifest.weights_sha256,
        "source_manifest_sha256": stored.manifest_sha256,
        "package": package,
        "pinned": imp.sha256 is not None,
        "frozen": imp.freeze,
        "tensors": hashes,
    }
    return ImportedLayer(imp.layer, imp.freeze, tensors, upstream, record)


def _locate(
    imp: Import, base_dir: Path, resolver: ModuleResolver | None
) -> tuple[Path, str, dict[str, Any] | None]:
    """The artifact directory of ``imp``, its record's ``source`` and ``package``."""
    if not isinstance(imp.source, ModuleSource):
        directory = base_dir / imp.source.path
        if not (directory / MANIFEST_FILE).is_file():
            raise _Fail(
                f'no artifact at "{imp.source.path}" (no {MANIFEST_FILE} there), expected a built artifact directory'
            )
        return directory, imp.source.path, None
    if resolver is None:
        raise _Fail(
            f"{imp.source} is a module import, but there is no build list here; "
            "build from a package directory with a wgt.mod that requires the module"
        )
    try:
        module, artifact = split_ref(imp.source.ref, resolver)
    except WgtpmError as exc:
        raise _Fail(str(exc)) from exc
    package = {"module": module.path, "version": module.version, "commit": module.commit}
    found = artifact_in_module(module, artifact)
    if found is None or not (found / MANIFEST_FILE).is_file():
        raise _Fail(
            f"module {module_label(module)} has no artifact {artifact}, expected one of: "
            f"{', '.join(_artifacts(module.dir)) or 'none'}"
        )
    return found, imp.source.ref, package


def artifact_in_module(module: ResolvedModule, name: str) -> Path | None:
    """Where artifact ``name`` (a directory, or a file like ``triage.paw``) of ``module`` is.

    A release holds ``NAME/`` at its top; a module replaced by a local package
    directory holds what ``wgtpm build`` wrote, ``build/NAME``
    (:func:`wgtpm.artifacts.module_artifact` decides).
    """
    found = module_artifact(module, name)
    return found.path if found is not None else None


def _artifacts(directory: Path) -> list[str]:
    found = [*directory.glob(f"*/{MANIFEST_FILE}"), *directory.glob(f"build/*/{MANIFEST_FILE}")]
    return sorted({p.parent.name for p in found})


def _at(package: Mapping[str, Any] | None) -> str:
    """`` (MODULE@VERSION)`` for a module import, else nothing."""
    return f" ({package['module']}@{package['version']})" if package else ""


def _show(spec: LayerSpec) -> str:
    return f"{spec.op}({', '.join(f'{k}={v}' for k, v in spec.args.items())})"


def _upstream(entry: TensorEntry) -> str:
    if entry.origin == IMPORTED and entry.upstream_origin is not None:
        return entry.upstream_origin
    return entry.origin


def module_label(module: ResolvedModule) -> str:
    """``PATH@VERSION``, or ``PATH (DIR)`` for a module replaced by a local directory."""
    return f"{module.path}@{module.version}" if module.version else f"{module.path} ({module.dir})"


@dataclass(frozen=True)
class ImportedTensor:
    """One tensor import: the target tensor (``tok.weight``), its float32 value and its source.

    ``value`` is None when only the table was read (``wgtpm check``).
    ``source`` is the manifest's ``source`` record (:data:`~wgtpm.weightlang.manifest.SOURCE_KEYS`).
    """

    target: str
    freeze: bool
    value: torch.Tensor | None
    source: Mapping[str, str | None]


def resolve_tensor_imports(
    program: Program, resolver: ModuleResolver | None, *, read: bool = True
) -> list[ImportedTensor]:
    """Resolve every tensor import of ``program`` into a tensor of its layers (one into none
    is skipped: :func:`~wgtpm.weightlang.check.check` reports it); ``read=False``
    checks the tables, shapes and pins but reads no tensor bytes. Raises
    LayerImportError listing every failure at its import's source position."""
    done: list[ImportedTensor] = []
    errors: list[PositionedError] = []
    for imp in program.tensor_imports:
        layer = program.layer(imp.layer)
        if layer is None or imp.tensor not in tensor_shapes(layer.op, layer.args):
            continue  # check() reports it, at the import
        try:
            done.append(_resolve_tensor(program, imp, resolver, read))
        except _Fail as fail:
            errors.append(PositionedError(imp.source_pos, f"import {imp.target}: {fail}"))
    if errors:
        raise LayerImportError(errors)
    return done


def _resolve_tensor(
    program: Program, imp: TensorImport, resolver: ModuleResolver | None, read: bool
) -> ImportedTensor:
    from ..tensors import read_tensor_bytes, tables_for

    if resolver is None:
        raise _Fail(
            f"{imp.ref} is a module import, but there is no build list here; "
            "build from a package directory with a wgt.mod that requires the module"
        )
    try:
        module, file = split_ref(imp.ref, resolver)
        tables = tables_for(module)
    except WgtpmError as exc:
        raise _Fail(str(exc)) from exc
    label = module_label(module)
    table = tables.files.get(file)
    if table is None:
        known = ", ".join(sorted(tables.files)) or "none"
        raise _Fail(f"module {label} has no weights file {file}, expected one of: {known}")
    try:
        info = table.get(imp.source_tensor)
    except WgtpmError as exc:
        raise _Fail(f"{label}: {exc}") from exc
    where = f"{label} {file}#{imp.source_tensor}"
    # GGUF stores the innermost dimension first; torch's (and the layer's) shape is reversed.
    shape = tuple(reversed(info.shape)) if table.format == "gguf" else tuple(info.shape)
    layer = program.layer(imp.layer)
    assert layer is not None, "resolve_tensor_imports skips an import of no layer"
    wanted = tensor_shapes(layer.op, layer.args)[imp.tensor]
    if shape != wanted:
        raise _Fail(
            f"shape mismatch: {where} is {list(shape)} ({info.dtype}) but {imp.target} of "
            f"{layer.op}({', '.join(f'{k}={v}' for k, v in layer.args.items())}) is "
            f"{list(wanted)}; they must agree"
        )
    if info.dtype not in CONVERTIBLE_DTYPES:
        raise _Fail(
            f"{where} is {info.dtype}, expected one of {', '.join(CONVERTIBLE_DTYPES)} "
            "(a quantized tensor cannot be imported; pick an unquantized file)"
        )
    if imp.sha256 is not None and imp.sha256 != info.sha256:
        raise _Fail(
            f"sha256 pin mismatch: the import pins sha256={imp.sha256} but {where} has "
            f"sha256={info.sha256}; if the new tensor is intended, update the pin"
        )
    value = None
    if read:
        try:
            data = read_tensor_bytes(
                module.dir / file, info, module=module.path, version=module.version, file=file
            )
        except WgtpmError as exc:
            raise _Fail(str(exc)) from exc
        except OSError as exc:
            raise _Fail(f"{where}: cannot read ({exc.strerror})") from exc
        value = _to_float32(data, info.dtype, shape)
    source: dict[str, str | None] = {
        "module": module.path,
        "version": module.version,
        "file": file,
        "tensor": imp.source_tensor,
        "sha256": info.sha256,
        "dtype": info.dtype,
        "converted_to": None if info.dtype == "F32" else "f32",
    }
    return ImportedTensor(imp.target, imp.freeze, value, source)


def _to_float32(data: bytes, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    """A float32 tensor of ``shape`` from ``data``: verified little-endian ``dtype`` values."""
    stored = CONVERTIBLE_DTYPES[dtype]
    if not data:
        return torch.zeros(shape, dtype=torch.float32)
    flat = torch.frombuffer(bytearray(data), dtype=stored)
    if sys.byteorder == "big":  # safetensors and GGUF store little-endian
        flat = flat.view(torch.uint8).view(-1, flat.element_size()).flip(1).flatten().view(stored)
    return flat.to(torch.float32).reshape(shape).clone()


def resolve_all(
    program: Program, base_dir: Path, resolver: ModuleResolver | None, *, read: bool = True
) -> tuple[list[ImportedLayer], list[ImportedTensor]]:
    """Every import of layers and of tensors, their errors raised together."""
    errors: list[PositionedError] = []
    layers: list[ImportedLayer] = []
    tensors: list[ImportedTensor] = []
    try:
        layers = resolve_imports(program, base_dir, resolver)
    except LayerImportError as exc:
        errors += exc.errors
    try:
        tensors = resolve_tensor_imports(program, resolver, read=read)
    except LayerImportError as exc:
        errors += exc.errors
    if errors:
        raise LayerImportError(sorted(errors, key=lambda e: (e.pos.line, e.pos.col)))
    return layers, tensors
