"""The manifest of a WeightLang artifact: its format, canonical bytes and validation.

An artifact is a directory of three files::

    manifest.json         this format, canonical JSON (sorted keys, 2-space indent, "\\n" at the end)
    weights.safetensors   every tensor, float32, names and header sorted (see artifact.py)
    source.wgt            the .wgt source, byte for byte

A worked example (``…`` elides hashes; floats are Python's shortest repr)::

    {
      "builder": {"name": "wgtpm-weightlang", "torch": "2.13.0+cpu"},
      "data": {"xor": {"kind": "inline", "rows": 4, "sha256": "…"}},
      "format": "wgtpm.weightlang.artifact",
      "format_version": 1,
      "imports": [
        {"artifact": "xor", "commit": "40 hex or null", "frozen": true, "from": "github.com/acme/xor-base/xor",
         "layer": "h1", "module": "github.com/acme/xor-base", "path": null, "pinned": false,
         "source_layer": "h1", "source_model": "xor", "source_weights_sha256": "…",
         "tensors": {"h1.bias": "…", "h1.weight": "…"}, "version": "v0.1.0"}
      ],
      "init": {"method": "…", "seed": 0},
      "interface": {"input": {"dtype": "f32", "name": "x", "shape": [2]},
                    "output": {"dtype": "f32", "name": "y", "shape": [1]}},
      "language_version": "0.1",
      "layers": [{"args": {"in": 2, "out": 8}, "name": "h1", "op": "linear"}, …],
      "model": "xor",
      "source": {"file": "source.wgt", "sha256": "…"},
      "training": {"batch": null, "data": "xor", "epochs": 500, "final_loss": 0.01, "initial_loss": 0.71,
                   "loss": "bce", "lr": 0.05, "optimizer": "adam", "rows": 4, "steps": 500,
                   "train_accuracy": 1.0},
      "weights": {"file": "weights.safetensors", "sha256": "…",
                  "tensors": {"h1.bias": {"dtype": "F32", "origin": "imported", "sha256": "…",
                                          "shape": [8], "upstream_origin": "trained"}, …}}
    }

``training`` is null for a model without a ``train`` statement. A tensor's
``origin`` is one of :data:`ORIGINS`; an imported tensor also records the
``upstream_origin`` it had where it came from (following imports back), and
each import record lists the sha256 of every tensor it copied. A tensor's
``sha256`` is that of its bytes in weights.safetensors. Paths in the
manifest are as written in the source, never absolute, so that two builds of
the same source write the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ArtifactError
from .ops import OPS, LayerSpec
from .syntax import IDENT

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "ORIGINS",
    "SOURCE_FILE",
    "WEIGHTS_FILE",
    "Manifest",
    "TensorEntry",
    "canonical_json",
]

FORMAT = "wgtpm.weightlang.artifact"
FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"
WEIGHTS_FILE = "weights.safetensors"
SOURCE_FILE = "source.wgt"

RANDOM, TRAINED, IMPORTED, IMPORTED_TRAINED = (
    "random-init",
    "trained",
    "imported",
    "imported+trained",
)
ORIGINS = (RANDOM, TRAINED, IMPORTED, IMPORTED_TRAINED)

_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def canonical_json(obj: object) -> bytes:
    """The one byte form of a manifest: sorted keys, 2-space indent, UTF-8, final newline."""
    text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


@dataclass(frozen=True)
class TensorEntry:
    """One row of the manifest's tensor table."""

    dtype: str
    shape: tuple[int, ...]
    origin: str
    sha256: str
    upstream_origin: str | None = None

    @property
    def untrained(self) -> bool:
        """Whether no training ever touched this tensor, here or where it was imported from."""
        return self.origin == RANDOM or (self.origin == IMPORTED and self.upstream_origin == RANDOM)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dtype": self.dtype,
            "shape": list(self.shape),
            "origin": self.origin,
            "sha256": self.sha256,
        }
        if self.upstream_origin is not None:
            out["upstream_origin"] = self.upstream_origin
        return out


@dataclass(frozen=True)
class Interface:
    """An input or output: ``{"dtype": "f32", "name": "x", "shape": [2]}``."""

    name: str
    width: int

    def to_json(self) -> dict[str, Any]:
        return {"dtype": "f32", "name": self.name, "shape": [self.width]}


@dataclass(frozen=True)
class Manifest:
    """A validated manifest: the fields verification and loading rely on, plus the raw JSON."""

    raw: Mapping[str, Any]
    model: str
    input: Interface
    output: Interface
    layers: tuple[LayerSpec, ...]
    source_sha256: str
    weights_sha256: str
    tensors: Mapping[str, TensorEntry]

    @property
    def untrained_tensors(self) -> list[str]:
        return sorted(name for name, t in self.tensors.items() if t.untrained)

    @property
    def imports(self) -> list[Mapping[str, Any]]:
        return list(self.raw["imports"])

    @property
    def training(self) -> Mapping[str, Any] | None:
        training = self.raw["training"]
        return training if isinstance(training, Mapping) else None

    @classmethod
    def from_bytes(cls, where: str, data: bytes) -> Manifest:
        """Parse and validate ``data``; ``where`` (the artifact path) names it in errors."""
        try:
            raw = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ArtifactError(
                where, f"{MANIFEST_FILE} is not valid JSON ({exc}); rebuild it"
            ) from exc
        return _Reader(where).manifest(raw)


class _Reader:
    """Validates raw manifest JSON, naming the first key that is wrong."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, key: str, expected: str) -> ArtifactError:
        return ArtifactError(
            self.where,
            f"{MANIFEST_FILE}: {key} is missing or malformed, expected {expected}; "
            "the artifact is damaged or from another tool: rebuild it or fetch it again",
        )

    def get(self, obj: object, key: str, kind: type | tuple[type, ...], path: str) -> Any:
        value = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.fail(f"{path}{key}", getattr(kind, "__name__", "a value"))
        return value

    def manifest(self, raw: object) -> Manifest:
        if self.get(raw, "format", str, "") != FORMAT:
            raise self.fail("format", repr(FORMAT))
        if self.get(raw, "format_version", int, "") != FORMAT_VERSION:
            raise ArtifactError(
                self.where,
                f"artifact format_version is not {FORMAT_VERSION}; upgrade wgtpm to read it",
            )
        assert isinstance(raw, dict)
        for key in ("builder", "data", "init"):
            self.get(raw, key, dict, "")
        if not all(isinstance(r, dict) for r in self.get(raw, "imports", list, "")):
            raise self.fail("imports", "a list of import records")
        if raw.get("training") is not None:
            self.training(self.get(raw, "training", dict, ""))
        interface = self.get(raw, "interface", dict, "")
        layers = tuple(
            self.layer(obj, i) for i, obj in enumerate(self.get(raw, "layers", list, ""))
        )
        weights = self.get(raw, "weights", dict, "")
        table = self.get(weights, "tensors", dict, "weights.")
        return Manifest(
            raw=raw,
            model=self.get(raw, "model", str, ""),
            input=self.interface(interface, "input"),
            output=self.interface(interface, "output"),
            layers=layers,
            source_sha256=self.file_hash(raw, "source", SOURCE_FILE),
            weights_sha256=self.file_hash(raw, "weights", WEIGHTS_FILE),
            tensors={name: self.tensor(entry, name) for name, entry in sorted(table.items())},
        )

    def training(self, record: dict[str, Any]) -> None:
        for key in ("initial_loss", "final_loss"):
            self.get(record, key, (int, float), "training.")
        self.get(record, "rows", int, "training.")

    def file_hash(self, raw: dict[str, Any], key: str, file: str) -> str:
        section = self.get(raw, key, dict, "")
        if section.get("file") != file:
            raise self.fail(f"{key}.file", repr(file))
        return self.sha256(section, f"{key}.")

    def sha256(self, obj: object, path: str) -> str:
        value = self.get(obj, "sha256", str, path)
        if not _HEX64.match(value):
            raise self.fail(f"{path}sha256", "64 lower-case hex digits")
        return str(value)

    def interface(self, obj: object, key: str) -> Interface:
        spec = self.get(obj, key, dict, "interface.")
        shape = self.get(spec, "shape", list, f"interface.{key}.")
        if len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
            raise self.fail(f"interface.{key}.shape", "[N] with N >= 1")
        return Interface(self.get(spec, "name", str, f"interface.{key}."), shape[0])

    def layer(self, obj: object, index: int) -> LayerSpec:
        path = f"layers[{index}]."
        name = self.get(obj, "name", str, path)
        op = self.get(obj, "op", str, path)
        args = self.get(obj, "args", dict, path)
        if not IDENT.match(name) or op not in OPS:
            raise self.fail(f"{path}op", f"one of {', '.join(OPS)} and an identifier name")
        params = {p.name: p for p in OPS[op].params}
        if set(args) != set(params) or not all(
            _is_number(args[k]) and p.accepts(args[k]) for k, p in params.items()
        ):
            raise self.fail(f"{path}args", f"the arguments of {op}: {', '.join(params) or 'none'}")
        return LayerSpec(name, op, args)

    def tensor(self, obj: object, name: str) -> TensorEntry:
        path = f"weights.tensors.{name}."
        shape = self.get(obj, "shape", list, path)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise self.fail(f"{path}shape", "a list of sizes")
        origin = self.get(obj, "origin", str, path)
        upstream = obj.get("upstream_origin") if isinstance(obj, dict) else None
        if origin not in ORIGINS or (upstream is not None and upstream not in ORIGINS):
            raise self.fail(f"{path}origin", " or ".join(ORIGINS))
        return TensorEntry(
            self.get(obj, "dtype", str, path),
            tuple(shape),
            origin,
            self.sha256(obj, path),
            upstream,
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
