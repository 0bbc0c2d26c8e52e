"""The manifest of a WeightLang artifact: the format, its byte layout and validation.

An artifact is a directory of three files::

    manifest.json         this format (see below)
    weights.safetensors   every tensor, float32, header and data in name order (see artifact.py)
    source.wgt            the .wgt source, byte for byte

The format is the WeightLang 0.1.0 prototype's (``weightc``):
``"format": "weightlang.artifact"``, ``"format_version": 1``, its field names
and meanings, so that either tool reads what the other writes. wgtpm writes
a few more keys, which the prototype's reader ignores; here they are marked
``(+)``. A worked example (``…`` elides hashes; floats are Python's repr)::

    {
      "format": "weightlang.artifact",
      "format_version": 1,
      "language_version": "0.1",
      "model": "classifier",
      "compiler": {"name": "wgtpm", "version": "0.1.0"},
      "source": {"file": "source.wgt", "sha256": "…"},
      "interface": {"input": {"name": "x", "dtype": "f32", "shape": [2]},
                    "output": {"name": "y", "dtype": "f32", "shape": [1]},
                    "batch": "optional leading dimension: [features] or [N, features]"},
      "layers": [{"name": "h1", "op": "linear", "args": {"in": 2, "out": 8}}, …],
      "init": {"seed": 1, "method": "…"},
      "imports": [
        {"layer": "h1", "source": "github.com/acme/xor-base/xor", "source_model": "xor",
         "source_layer": "h1", "source_weights_sha256": "…", "source_manifest_sha256": "…",
         "package": {"module": "github.com/acme/xor-base", "version": "v0.1.0", "commit": "… or null"},
         "pinned": false, "frozen": true,
         "tensors": {"h1.weight": "…", "h1.bias": "…"}}                         (+)
      ],
      "training": {"data": "xor", "data_sha256": "…", "rows": 4, "loss": "bce",
                   "optimizer": "adam", "lr": 0.05, "epochs": 300, "batch": "full",
                   "initial_loss": 0.71, "final_loss": 0.01, "note": "…",
                   "train_accuracy": 1.0,
                   "steps": 300},                                                (+)
      "weights": {"file": "weights.safetensors", "sha256": "…",
                  "tensors": {"h1.weight": {"shape": [8, 2], "dtype": "f32", "origin": "imported",
                                            "upstream_origin": "trained",
                                            "sha256": "…"}, …}},                 (+ sha256)
      "data": {"xor": {"kind": "inline", "rows": 4, "sha256": "…"}}             (+)
    }

A tensor imported from a weights file of a module (``import tok.weight from
MODULE/FILE#TENSOR``) has origin ``imported`` (``imported+trained`` when it
was not frozen and training changed it) and a ``source`` (+), the same record
``wgtpm.save`` writes::

    "tok.weight": {"shape": [320, 64], "dtype": "f32", "origin": "imported", "sha256": "…",
                   "source": {"module": "hf.co/acme/tiny-qwen3", "version": "v0.1.0",
                              "file": "model.safetensors", "tensor": "model.embed_tokens.weight",
                              "sha256": "…", "dtype": "BF16", "converted_to": "f32"}}

``source.sha256`` is that of the tensor's stored bytes (the module's tensor
table locks it, and ``sha256=`` on the import pins it), ``source.dtype`` the
stored dtype and ``converted_to`` ``"f32"`` when it was converted (null when
it was already f32). The input of a model whose first layer is an embedding
is ``{"name": "ids", "dtype": "i64", "shape": [N]}``: N token ids.

``training`` is null for a model without a ``train`` statement; ``batch``
is ``"full"`` or the ``batch=N`` of the source. ``data_sha256`` is the
sha256 of the rows trained on, as the prototype hashed them: the compact
sorted-key JSON ``{"inputs":[[0.0,1.0],…],"targets":[[1.0],…]}``; ``data``
records every data set with the sha256 of its file (or of its inline rows).
A tensor's ``origin`` is one of :data:`ORIGINS`; an imported tensor also has
the ``upstream_origin`` it had where it came from (following imports back).
A tensor's ``sha256`` is that of its little-endian float32 bytes; an import
record's ``source`` is the module reference or the path as written in the
source, and ``package`` is null for a path import. Paths are never absolute,
so that two builds of the same source write the same bytes.

Reading follows the prototype where it was lenient and is strict where it
matters: the keys that wgtpm adds are optional (a prototype artifact has no
per-tensor hashes and no ``data``), but checked whenever they are present.
wgtpm's own earlier variant, ``"format": "wgtpm.weightlang.artifact"``
(:data:`LEGACY_FORMAT`: sorted keys, dtype ``"F32"``, ``builder`` instead of
``compiler``), is still read, so its weights and pins stay valid; it is never
written.

``built_with`` (the prototype's ``{"torch": ..., "python": ...}``, the
versions on the machine that built it) is no longer written: the manifest is
covered by h1, and nothing that depends on the building machine may be
(docs/design.md section 13); those versions are in the release's SLSA statement.
It is still read, and optional, as it always was: the prototype's reader
never looks at it, so a manifest without it reads in either tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._fs import is_hex64
from .errors import ArtifactError
from .ops import OPS, LayerSpec
from .syntax import IDENT

__all__ = [
    "BATCH_NOTE",
    "DTYPE",
    "FORMAT",
    "FORMAT_VERSION",
    "IDS_DTYPE",
    "LEGACY_FORMAT",
    "MANIFEST_FILE",
    "ORIGINS",
    "SOURCE_FILE",
    "SOURCE_KEYS",
    "WEIGHTS_FILE",
    "Manifest",
    "TensorEntry",
    "manifest_bytes",
]

FORMAT = "weightlang.artifact"
LEGACY_FORMAT = "wgtpm.weightlang.artifact"
FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"
WEIGHTS_FILE = "weights.safetensors"
SOURCE_FILE = "source.wgt"
#: The manifest's name for float32 (``"F32"`` in the legacy format and in safetensors headers).
DTYPE = "f32"
#: The input dtype of a model that reads token ids (its first layer is an embedding).
IDS_DTYPE = "i64"
#: The keys of a tensor's ``source`` record, each a string (``converted_to`` may be null).
SOURCE_KEYS = ("module", "version", "file", "tensor", "sha256", "dtype", "converted_to")
BATCH_NOTE = "optional leading dimension: [features] or [N, features]"

RANDOM, TRAINED, IMPORTED, IMPORTED_TRAINED = (
    "random-init",
    "trained",
    "imported",
    "imported+trained",
)
ORIGINS = (RANDOM, TRAINED, IMPORTED, IMPORTED_TRAINED)

# The prototype's top-level key order; wgtpm's extra keys follow, sorted.
_KEY_ORDER = (
    "format",
    "format_version",
    "language_version",
    "model",
    "compiler",
    "built_with",
    "source",
    "interface",
    "layers",
    "init",
    "imports",
    "training",
    "weights",
)


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The bytes of ``manifest.json``: the prototype's layout, not :func:`wgtpm._fs.canonical_json`.

    The prototype writes ``json.dumps(manifest, indent=2)`` plus a newline,
    with keys in the order it builds them (not sorted) and non-ASCII escaped.
    wgtpm writes the same layout so that its manifests read, diff and hash
    like the prototype's: top-level keys in the prototype's order
    (:data:`_KEY_ORDER`) then wgtpm's extra keys sorted; nested objects in the
    order given (the builder builds them in the prototype's order). NaN and
    infinities are refused.
    """
    top = {k: manifest[k] for k in _KEY_ORDER if k in manifest}
    top.update((k, manifest[k]) for k in sorted(manifest) if k not in top)
    return (json.dumps(top, indent=2, allow_nan=False) + "\n").encode("ascii")


@dataclass(frozen=True)
class TensorEntry:
    """One row of the manifest's tensor table; ``sha256`` is None in a prototype artifact."""

    dtype: str
    shape: tuple[int, ...]
    origin: str
    sha256: str | None = None
    upstream_origin: str | None = None
    source: Mapping[str, str | None] | None = None

    @property
    def untrained(self) -> bool:
        """Whether no training ever touched this tensor, here or where it was imported from."""
        return self.origin == RANDOM or (self.origin == IMPORTED and self.upstream_origin == RANDOM)

    def to_json(self) -> dict[str, Any]:
        """The entry as written, in the prototype's key order plus wgtpm's ``sha256``."""
        out: dict[str, Any] = {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "origin": self.origin,
        }
        if self.upstream_origin is not None:
            out["upstream_origin"] = self.upstream_origin
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.source is not None:
            out["source"] = {k: self.source.get(k) for k in SOURCE_KEYS}
        return out


@dataclass(frozen=True)
class Interface:
    """An input or output: ``{"name": "x", "dtype": "f32", "shape": [2]}`` (input: or ``i64``)."""

    name: str
    width: int
    dtype: str = DTYPE

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": [self.width]}


@dataclass(frozen=True)
class Manifest:
    """A validated manifest: the fields verification and loading rely on, plus the raw JSON.

    ``manifest["weights"]["sha256"]`` reads the raw JSON, as the prototype's
    ``Artifact.manifest`` dict did.
    """

    raw: Mapping[str, Any]
    model: str
    input: Interface
    output: Interface
    layers: tuple[LayerSpec, ...]
    source_sha256: str
    weights_sha256: str
    tensors: Mapping[str, TensorEntry]

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def legacy(self) -> bool:
        """Whether this is wgtpm's earlier variant (:data:`LEGACY_FORMAT`)."""
        return bool(self.raw["format"] == LEGACY_FORMAT)

    @property
    def dtype(self) -> str:
        """How this manifest names float32: ``f32``, or ``F32`` in the legacy format."""
        return "F32" if self.legacy else DTYPE

    @property
    def untrained_tensors(self) -> list[str]:
        return sorted(name for name, t in self.tensors.items() if t.untrained)

    @property
    def imports(self) -> list[Mapping[str, Any]]:
        return list(self.raw.get("imports") or [])

    @property
    def training(self) -> Mapping[str, Any] | None:
        training = self.raw.get("training")
        return training if isinstance(training, Mapping) else None

    @classmethod
    def from_bytes(cls, where: str, data: bytes) -> Manifest:
        """Parse and validate ``data``; ``where`` (the artifact path) names it in errors."""
        try:
            raw = _json.loads(data.decode("utf-8"))
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

    def optional(self, obj: dict[str, Any], key: str, kind: type, path: str = "") -> Any:
        """``obj[key]`` if present and not null (then it must be a ``kind``), else None."""
        return None if obj.get(key) is None else self.get(obj, key, kind, path)

    def manifest(self, raw: object) -> Manifest:
        fmt = self.get(raw, "format", str, "")
        if fmt not in (FORMAT, LEGACY_FORMAT):
            raise self.fail("format", repr(FORMAT))
        if self.get(raw, "format_version", int, "") != FORMAT_VERSION:
            raise ArtifactError(
                self.where,
                f"artifact format_version is not {FORMAT_VERSION}; upgrade wgtpm to read it",
            )
        assert isinstance(raw, dict)
        legacy = fmt == LEGACY_FORMAT
        # The provenance records: the prototype's, wgtpm's, and the legacy format's.
        for key in ("compiler", "built_with", "init", "data", "builder"):
            self.optional(raw, key, dict)
        imports = self.optional(raw, "imports", list) or []
        if not all(isinstance(r, dict) for r in imports):
            raise self.fail("imports", "a list of import records")
        training = self.optional(raw, "training", dict)
        if training is not None:
            self.training(training)
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
            tensors={
                name: self.tensor(entry, name, legacy) for name, entry in sorted(table.items())
            },
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
        if not is_hex64(value):
            raise self.fail(f"{path}sha256", "64 lower-case hex digits")
        return str(value)

    def interface(self, obj: object, key: str) -> Interface:
        spec = self.get(obj, key, dict, "interface.")
        shape = self.get(spec, "shape", list, f"interface.{key}.")
        if len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
            raise self.fail(f"interface.{key}.shape", "[N] with N >= 1")
        dtype = spec.get("dtype", DTYPE)
        allowed = (DTYPE, IDS_DTYPE) if key == "input" else (DTYPE,)
        if dtype not in allowed:
            raise self.fail(f"interface.{key}.dtype", " or ".join(map(repr, allowed)))
        return Interface(self.get(spec, "name", str, f"interface.{key}."), shape[0], dtype)

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

    def tensor(self, obj: object, name: str, legacy: bool) -> TensorEntry:
        path = f"weights.tensors.{name}."
        shape = self.get(obj, "shape", list, path)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise self.fail(f"{path}shape", "a list of sizes")
        origin = self.get(obj, "origin", str, path)
        upstream = obj.get("upstream_origin") if isinstance(obj, dict) else None
        if origin not in ORIGINS or (upstream is not None and upstream not in ORIGINS):
            raise self.fail(f"{path}origin", " or ".join(ORIGINS))
        # Per-tensor hashes are wgtpm's: optional in the prototype's format, always in the legacy one.
        has_hash = legacy or (isinstance(obj, dict) and "sha256" in obj)
        source = self.source(obj, path) if isinstance(obj, dict) and "source" in obj else None
        return TensorEntry(
            self.get(obj, "dtype", str, path),
            tuple(shape),
            origin,
            self.sha256(obj, path) if has_hash else None,
            upstream,
            source,
        )

    def source(self, obj: dict[str, Any], path: str) -> dict[str, str | None]:
        """A tensor's ``source`` record: every key of :data:`SOURCE_KEYS` a string."""
        record = self.get(obj, "source", dict, path)
        where = f"{path}source."
        out: dict[str, str | None] = {}
        for key in SOURCE_KEYS:
            if key == "converted_to":
                out[key] = self.optional(record, key, str, where)
            else:
                out[key] = self.get(record, key, str, where)
        self.sha256(record, where)
        return out


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
