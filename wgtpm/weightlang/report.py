"""Plain-text descriptions of programs and artifacts, as the commands print them.

``wgtpm inspect`` prints, for example::

    artifact   build/classifier
    model      classifier (wgt 0.1; wgtpm 0.1.0, torch 2.13.0+cpu, python 3.12.3)
    input      x: f32[2]
    output     y: f32[1]
    layers     h1 = linear(in=2, out=8) -> a1 = tanh -> out = linear(in=8, out=1) -> p = sigmoid
    seed       0
    weights    sha256 5be1…, 4 tensors, 33 parameters
    training   data=xor loss=bce optimizer=adam lr=0.05 epochs=300 batch=full
               loss 0.6931 -> 0.0004, train accuracy 1.00 on 4 rows
    data       xor: inline, 4 rows, sha256 4aa52b27bda1
    tensors    h1.bias      [8]     imported (upstream: trained)
               ...
    imports    h1 <- github.com/acme/xor-base/xor.h1 (github.com/acme/xor-base@v0.1.0, commit 3f9a2b7c1d0e)
                  weights sha256 ac1c…, frozen, not pinned
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .check import layer_specs
from .data import Dataset
from .manifest import FORMAT, LEGACY_FORMAT, Manifest
from .ops import LayerSpec
from .syntax import Program

__all__ = [
    "build_line",
    "describe_manifest",
    "describe_program",
    "parameter_count",
    "training_line",
]


def parameter_count(layers: Iterable[LayerSpec]) -> int:
    return sum(math.prod(s) for spec in layers for s in spec.tensor_shapes().values())


def _layers(layers: Iterable[LayerSpec]) -> str:
    parts = []
    for spec in layers:
        args = ", ".join(f"{k}={v}" for k, v in spec.args.items())
        parts.append(f"{spec.name} = {spec.op}({args})" if args else f"{spec.name} = {spec.op}")
    return " -> ".join(parts)


def describe_program(program: Program, datasets: Mapping[str, Dataset]) -> str:
    """One line for ``wgtpm check``: what the program declares and will do."""
    layers = layer_specs(program)
    text = (
        f"model {program.model}: {len(layers)} layers, {parameter_count(layers)} parameters, "
        f"f32[{program.input.width}] -> f32[{program.output.width}]"
    )
    if program.train is not None:
        rows = len(datasets[program.train.data].rows)
        text += f"; trains on {program.train.data} ({rows} rows) with loss={program.train.loss}"
    else:
        text += "; no train statement (weights stay random)"
    imported = [i.layer for i in program.imports] + [t.target for t in program.tensor_imports]
    if imported:
        text += f"; imports {', '.join(imported)}"
    return text


def training_line(training: Mapping[str, Any] | None) -> str:
    """``loss 0.6931 -> 0.0004, train accuracy 1.00 on 4 rows`` (or a warning)."""
    if training is None:
        return "none: the weights are random and the outputs are not meaningful"
    text = f"loss {training['initial_loss']:.4g} -> {training['final_loss']:.4g}"
    if "train_accuracy" in training:
        text += f", train accuracy {training['train_accuracy']:.2f}"
    return text + f" on {training['rows']} rows"


def build_line(manifest: Mapping[str, Any]) -> str:
    """``weights sha256 5be1… (4 trained); training: loss 0.69 -> 0.0004, …`` after a build."""
    weights = manifest["weights"]
    origins: dict[str, int] = {}
    for entry in weights["tensors"].values():
        origins[entry["origin"]] = origins.get(entry["origin"], 0) + 1
    counts = ", ".join(f"{n} {o}" for o, n in sorted(origins.items())) or "no tensors"
    return (
        f"weights sha256 {weights['sha256']} ({counts}); "
        f"training: {training_line(manifest['training'])}"
    )


def describe_manifest(label: str, manifest: Manifest) -> str:
    """The text of ``wgtpm inspect`` (see the module docstring)."""
    raw = manifest.raw
    lines = [
        ("artifact", label),
        ("model", f"{manifest.model} (wgt {raw.get('language_version')}; {_built_by(raw)})"),
        ("input", f"{manifest.input.name}: f32[{manifest.input.width}]"),
        ("output", f"{manifest.output.name}: f32[{manifest.output.width}]"),
        ("layers", _layers(manifest.layers)),
        ("seed", str(raw.get("init", {}).get("seed"))),
        (
            "weights",
            f"sha256 {manifest.weights_sha256}, {len(manifest.tensors)} tensors, "
            f"{parameter_count(manifest.layers)} parameters",
        ),
    ]
    training = manifest.training
    if training is not None:
        settings = " ".join(
            f"{k}={training.get(k)}" for k in ("data", "loss", "optimizer", "lr", "epochs")
        )
        lines.append(("training", f"{settings} batch={training.get('batch') or 'full'}"))
    lines.append(("training" if training is None else "", training_line(training)))
    for name, record in sorted(raw.get("data", {}).items()):
        where = f" {record.get('file')}," if record.get("file") else ""
        lines.append(
            (
                "data",
                f"{name}: {record.get('kind')},{where} {record.get('rows')} rows, sha256 {record.get('sha256')}",
            )
        )
    for name, entry in manifest.tensors.items():
        upstream = f" (upstream: {entry.upstream_origin})" if entry.upstream_origin else ""
        if entry.source is not None:
            src = entry.source
            upstream += (
                f" <- {src.get('module')}@{src.get('version')} {src.get('file')}#{src.get('tensor')} "
                f"({src.get('dtype')}, sha256 {src.get('sha256')})"
            )
        lines.append(("tensors", f"{name:<14} {list(entry.shape)!s:<9} {entry.origin}{upstream}"))
    for record in manifest.imports:
        lines += [("imports", line) for line in _import_lines(record)]
    if manifest.untrained_tensors:
        lines.append(("WARNING", "untrained tensors: " + ", ".join(manifest.untrained_tensors)))
    return _columns(lines)


def _built_by(raw: Mapping[str, Any]) -> str:
    """``wgtpm 0.1.0`` (``weightc 0.1.0, torch 2.13.0, python 3.12.3`` for the prototype's)."""
    if raw.get("format") == LEGACY_FORMAT:
        builder = raw.get("builder") or {}
        return (
            f"{builder.get('name')}, torch {builder.get('torch')}; "
            f"wgtpm's legacy format {LEGACY_FORMAT}; rebuild to write {FORMAT}"
        )
    compiler, built = raw.get("compiler") or {}, raw.get("built_with") or {}
    # built_with: only in the prototype's (and older wgtpm's) manifests
    env = "".join(f", {k} {built[k]}" for k in ("torch", "python") if built.get(k))
    return f"{compiler.get('name')} {compiler.get('version')}{env}"


def _import_lines(record: Mapping[str, Any]) -> list[str]:
    # The prototype's record has source and package; the legacy one had from, module, version, commit.
    package = record.get("package") or (record if record.get("module") else None)
    source = record.get("source") or record.get("from")
    if package is None and not str(source).startswith('"'):
        source = f'"{source}"'  # a path import, shown as it is written in .wgt
    origin = f"{source}.{record.get('source_layer')}"
    if package:
        commit = f", commit {package['commit']}" if package.get("commit") else ""
        origin += f" ({package.get('module')}@{package.get('version')}{commit})"
    flags = ", ".join(
        [
            "frozen" if record.get("frozen") else "trained further",
            "pinned" if record.get("pinned") else "not pinned",
        ]
    )
    return [
        f"{record.get('layer')} <- {origin}",
        f"   model {record.get('source_model')}, weights sha256 {record.get('source_weights_sha256')}, {flags}",
    ]


def _columns(lines: list[tuple[str, str]]) -> str:
    out, last = [], None
    for key, value in lines:
        shown = key if key != last else ""
        out.append(f"{shown:<10} {value}".rstrip())
        last = key or last
    return "\n".join(out)
