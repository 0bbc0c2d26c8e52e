"""The manifest of a model saved by :func:`wgtpm.save`: its format, reading and the inspect text.

A saved model is a directory of two files, in the WeightLang artifact's
spirit (:mod:`wgtpm.weightlang.manifest`) for a model written in torch
rather than in WeightLang::

    manifest.json         this format (canonical JSON: sorted keys, two-space indent)
    weights.safetensors   every parameter and buffer (state_dict names), in its own dtype

For example (``…`` elides hashes)::

    {
      "format": "wgtpm.torch.artifact",
      "format_version": 1,
      "model": "Encoder",
      "modules": {"hf.co/acme/tiny-qwen3": "v0.1.0"},
      "weights": {
        "file": "weights.safetensors",
        "sha256": "…",
        "tensors": {
          "head.weight": {"dtype": "F32", "shape": [2, 64], "sha256": "…",
                          "origin": "trained", "frozen": false},
          "tok.weight": {"dtype": "F32", "shape": [320, 64], "sha256": "…",
                         "origin": "imported", "frozen": true,
                         "source": {"module": "hf.co/acme/tiny-qwen3", "version": "v0.1.0",
                                    "file": "model.safetensors",
                                    "tensor": "model.embed_tokens.weight",
                                    "sha256": "…", "dtype": "F32", "converted_to": null}}
        }
      }
    }

``model`` is the model's class name. A tensor's ``origin`` is ``imported``
(its bytes are the pinned tensor's, as read: ``source`` says from where, and
``converted_to`` the dtype ``dtype=`` converted it to), ``imported+trained``
(grafted from ``source``, then changed, by training or otherwise) or
``trained`` (anything else: initialised and trained by the model's own
code). A tensor's ``sha256`` is that of its bytes in ``weights.safetensors``;
for an ``imported`` tensor read without conversion it equals the source's.
``modules`` lists each module@version tensors were imported from. Nothing
machine-dependent (tool versions, paths, times) is written, so saving the
same model twice gives the same bytes.

Torch-free: ``wgtpm inspect`` reads it without loading torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import _json
from .._errors import WgtpmError
from .._fs import canonical_json, is_hex64, sha256_file

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "IMPORTED",
    "IMPORTED_TRAINED",
    "MANIFEST_FILE",
    "TRAINED",
    "WEIGHTS_FILE",
    "SavedModelError",
    "describe_saved",
    "is_saved_model",
    "manifest_bytes",
    "read_saved_manifest",
]

FORMAT = "wgtpm.torch.artifact"
FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"
WEIGHTS_FILE = "weights.safetensors"
IMPORTED, IMPORTED_TRAINED, TRAINED = "imported", "imported+trained", "trained"
ORIGINS = (IMPORTED, IMPORTED_TRAINED, TRAINED)
#: A manifest larger than this is refused unread (a model of 100,000 tensors fits in a few MiB).
MAX_MANIFEST = 64 << 20


class SavedModelError(WgtpmError):
    """A saved model directory that is unreadable, malformed or does not match its manifest."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"{where}: {message}")


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The canonical bytes of ``manifest`` (sorted keys, two-space indent, final newline)."""
    return canonical_json(manifest, pretty=True)


def is_saved_model(path: Path) -> bool:
    """Whether ``path`` is a directory whose manifest says it is in this format."""
    try:
        with (path / MANIFEST_FILE).open("rb") as fh:
            raw = fh.read(MAX_MANIFEST + 1)
        manifest = _json.loads(raw)
    except (OSError, json.JSONDecodeError):
        return False  # not this format: the WeightLang reader says what is wrong
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def read_saved_manifest(path: Path) -> dict[str, Any]:
    """The checked manifest of the saved model at ``path``; the weights file's sha256 is checked too.

    Raises :class:`SavedModelError` naming the directory and what is wrong.
    """
    where = str(path)
    try:
        with (path / MANIFEST_FILE).open("rb") as fh:
            raw = fh.read(MAX_MANIFEST + 1)
    except OSError as exc:
        raise SavedModelError(where, f"cannot read {MANIFEST_FILE} ({exc.strerror})") from exc
    if len(raw) > MAX_MANIFEST:
        raise SavedModelError(where, f"{MANIFEST_FILE} is over {MAX_MANIFEST >> 20} MiB")
    try:
        manifest = _json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SavedModelError(where, f"{MANIFEST_FILE} is not JSON ({exc.msg})") from exc
    _check(where, manifest)
    weights = manifest["weights"]
    try:
        got = sha256_file(path / WEIGHTS_FILE)
    except OSError as exc:
        raise SavedModelError(where, f"cannot read {WEIGHTS_FILE} ({exc.strerror})") from exc
    if got != weights["sha256"]:
        raise SavedModelError(
            where,
            f"{WEIGHTS_FILE} has sha256 {got} but the manifest records {weights['sha256']}: "
            "the weights were changed after saving; save the model again",
        )
    return dict(manifest)


def _check(where: str, m: Any) -> None:
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise SavedModelError(where, f"{MANIFEST_FILE} is not a {FORMAT} manifest")
    if m.get("format_version") != FORMAT_VERSION:
        raise SavedModelError(
            where,
            f"format_version {m.get('format_version')!r} is not {FORMAT_VERSION}; upgrade wgtpm",
        )
    weights = m.get("weights")
    if (
        not isinstance(weights, dict)
        or weights.get("file") != WEIGHTS_FILE
        or not is_hex64(weights.get("sha256"))
        or not isinstance(weights.get("tensors"), dict)
    ):
        raise SavedModelError(
            where, f"{MANIFEST_FILE}: weights must name {WEIGHTS_FILE}, its sha256 and tensors"
        )
    modules = m.get("modules", {})
    if not isinstance(modules, dict) or not all(isinstance(v, str) for v in modules.values()):
        raise SavedModelError(where, f"{MANIFEST_FILE}: modules must map module paths to versions")
    for name, entry in weights["tensors"].items():
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if (
            not isinstance(shape, list)
            or not all(type(d) is int and d >= 0 for d in shape)
            or not isinstance(entry.get("dtype"), str)
        ):
            raise SavedModelError(
                where, f"{MANIFEST_FILE}: tensor {name} needs a dtype and a shape"
            )
        if entry.get("origin") not in ORIGINS:
            raise SavedModelError(
                where, f"{MANIFEST_FILE}: tensor {name}: origin must be one of {', '.join(ORIGINS)}"
            )
        source = entry.get("source")
        if entry["origin"] != TRAINED and not (
            isinstance(source, dict)
            and all(isinstance(source.get(k), str) for k in ("module", "version", "file", "tensor"))
            and is_hex64(source.get("sha256"))
        ):
            raise SavedModelError(
                where,
                f"{MANIFEST_FILE}: tensor {name} is {entry['origin']} but names no module, file, tensor and sha256",
            )


def _origin_text(entry: Mapping[str, Any]) -> list[str]:
    if entry["origin"] == TRAINED:
        return [TRAINED]
    s = entry["source"]
    at = f"@{s['version']}" if s["version"] else " (local directory)"
    converted = (
        f", converted {s.get('dtype')} -> {s['converted_to']}" if s.get("converted_to") else ""
    )
    return [
        f"{entry['origin']} from {s['module']}{at}",
        f"  {s['file']}#{s['tensor']}",
        f"  sha256 {s['sha256']}{converted}",
    ]


def describe_saved(label: str, manifest: Mapping[str, Any]) -> str:
    """The text of ``wgtpm inspect DIR`` for a saved model, for example::

    artifact   build/encoder
    model      Encoder (wgtpm.torch.artifact)
    weights    sha256 5be1…, 3 tensors, 20,610 parameters
    modules    hf.co/acme/tiny-qwen3@v0.1.0
    tensors    head.bias    F32 [2]        trained
               head.weight  F32 [2, 64]    trained
               tok.weight   F32 [320, 64]  imported from hf.co/acme/tiny-qwen3@v0.1.0, frozen
                 model.safetensors#model.embed_tokens.weight
                 sha256 3f9a…
    """
    weights = manifest["weights"]
    tensors: Mapping[str, Any] = weights["tensors"]
    params = 0
    for entry in tensors.values():
        n = 1
        for d in entry.get("shape", []):
            n *= int(d)
        params += n
    rows = [
        ("artifact", label),
        ("model", f"{manifest.get('model')} ({FORMAT})"),
        ("weights", f"sha256 {weights['sha256']}, {len(tensors)} tensors, {params:,} parameters"),
    ]
    for module, version in sorted(manifest.get("modules", {}).items()):
        rows.append(("modules", f"{module}@{version}" if version else module))
    width = max((len(n) for n in tensors), default=0)
    kinds = {n: f"{e.get('dtype')} {e.get('shape')}" for n, e in tensors.items()}
    kind_width = max((len(k) for k in kinds.values()), default=0)
    for i, (name, entry) in enumerate(sorted(tensors.items())):
        first, *more = _origin_text(entry)
        frozen = ", frozen" if entry.get("frozen") else ""
        row = f"{name:<{width}}  {kinds[name]:<{kind_width}}  {first}{frozen}"
        rows.append(("tensors" if i == 0 else "", row))
        rows += [("", line) for line in more]
    return "\n".join(f"{key:<10} {value}".rstrip() for key, value in rows)
