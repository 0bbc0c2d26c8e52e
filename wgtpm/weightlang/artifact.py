"""Reading, verifying and writing WeightLang artifact directories.

Writing is byte-stable and byte-compatible with the WeightLang 0.1.0
prototype: the same tensors give the same ``weights.safetensors`` bytes, and
so the same weights sha256 and ``sha256=`` pins, in both tools (see
:func:`safetensors_bytes`); the manifest is written by
:func:`wgtpm.weightlang.manifest.manifest_bytes`. The three files are written
into a fresh hidden directory next to the destination, verified, and renamed
into place (:func:`wgtpm._fs.replace_dir`), so no partial artifact is ever
visible under its name.

Reading never unpickles. :func:`read_artifact` makes every check the
prototype's loader made, and more, before any tensor is used: the manifest's
format, version and fields; the sha256 of ``source.wgt`` and
``weights.safetensors`` against the manifest; that the source still declares
the manifest's layers and interface; that the tensor table, the layer list
and the weights agree on every tensor's name, shape and dtype (float32), and
on its sha256 where the table records one; that every origin is known; and
that no tensor holds NaN or an infinity.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors

from .._errors import ParseError
from .._fs import replace_dir, temp_dir
from .check import layer_specs
from .errors import ArtifactError, TamperedArtifactError
from .manifest import FORMAT, MANIFEST_FILE, SOURCE_FILE, WEIGHTS_FILE, Manifest
from .syntax import parse

__all__ = [
    "StoredArtifact",
    "read_artifact",
    "safetensors_bytes",
    "tensor_bytes",
    "write_artifact",
]


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The little-endian float32 bytes of ``tensor``, as safetensors stores them."""
    array = tensor.detach().to(device="cpu", dtype=torch.float32).contiguous().numpy()
    return bytes(array.astype("<f4", copy=False).tobytes())


def safetensors_bytes(tensors: Mapping[str, torch.Tensor], model: str) -> bytes:
    """The safetensors file of ``tensors`` (as float32) for model ``model``, byte for byte
    as the WeightLang prototype writes it.

    Layout: the 8-byte little-endian length of the header; the header, compact
    JSON (ASCII, no spaces) padded with spaces to a multiple of 8 bytes:
    ``__metadata__`` first, holding ``format`` and ``model``, then one entry
    per tensor in name order, each with its keys in the order ``dtype``,
    ``shape``, ``data_offsets``; then the tensors' bytes in the same order.
    For example (one line in the file)::

        {"__metadata__":{"format":"weightlang.artifact","model":"xor"},
         "h1.bias":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},
         "h1.weight":{"dtype":"F32","shape":[8,2],"data_offsets":[32,96]},…}
    """
    header: dict[str, object] = {"__metadata__": {"format": FORMAT, "model": model}}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        data = tensor_bytes(tensors[name])
        header[name] = {
            "dtype": "F32",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("ascii")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(blobs)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class StoredArtifact:
    """A verified artifact directory: its manifest, the manifest file's sha256, its tensors."""

    path: Path
    manifest: Manifest
    tensors: Mapping[str, torch.Tensor]
    manifest_sha256: str


def read_artifact(path: Path) -> StoredArtifact:
    """Read and verify the artifact at ``path`` (see the module docstring).

    Raises :class:`TamperedArtifactError` for a file whose hash differs from
    the manifest and :class:`ArtifactError` for anything else wrong.
    """
    where = str(path)
    if not (path / MANIFEST_FILE).is_file():
        raise ArtifactError(
            where, f"no {MANIFEST_FILE} here; expected a WeightLang artifact directory"
        )
    manifest_data = _read(path, MANIFEST_FILE)
    manifest = Manifest.from_bytes(where, manifest_data)
    source = _read(path, SOURCE_FILE)
    if sha256_hex(source) != manifest.source_sha256:
        raise TamperedArtifactError(where, SOURCE_FILE, manifest.source_sha256, sha256_hex(source))
    weights = _read(path, WEIGHTS_FILE)
    if sha256_hex(weights) != manifest.weights_sha256:
        raise TamperedArtifactError(
            where, WEIGHTS_FILE, manifest.weights_sha256, sha256_hex(weights)
        )
    _check_source(where, manifest, source)
    try:
        tensors = load_safetensors(weights)
    except SafetensorError as exc:
        raise ArtifactError(
            where, f"{WEIGHTS_FILE} is not a valid safetensors file ({exc})"
        ) from exc
    _check_tensors(where, manifest, tensors)
    return StoredArtifact(path, manifest, tensors, sha256_hex(manifest_data))


def _read(path: Path, name: str) -> bytes:
    try:
        return (path / name).read_bytes()
    except OSError as exc:
        raise ArtifactError(
            str(path), f"cannot read {name} ({exc.strerror}); rebuild it or fetch it again"
        ) from exc


def _check_source(where: str, manifest: Manifest, source: bytes) -> None:
    """The source must declare exactly the manifest's layers and interface."""
    try:
        program = parse(source.decode("utf-8"), SOURCE_FILE)
    except (UnicodeDecodeError, ParseError) as exc:
        raise ArtifactError(where, f"{SOURCE_FILE} does not parse:\n{exc}") from exc
    declared = [spec.to_json() for spec in layer_specs(program)]
    interface = (program.input.name, program.input.width, program.output.name, program.output.width)
    recorded = (
        manifest.input.name,
        manifest.input.width,
        manifest.output.name,
        manifest.output.width,
    )
    if declared != [spec.to_json() for spec in manifest.layers] or interface != recorded:
        raise ArtifactError(
            where,
            f"{MANIFEST_FILE} and {SOURCE_FILE} disagree on the layers or the interface; "
            "the manifest was edited: rebuild the artifact",
        )


def _check_tensors(where: str, manifest: Manifest, tensors: Mapping[str, torch.Tensor]) -> None:
    expected: dict[str, tuple[int, ...]] = {}
    for spec in manifest.layers:
        expected.update(spec.tensor_shapes())
    for what, names in (
        ("manifest tensor table", set(manifest.tensors)),
        (WEIGHTS_FILE, set(tensors)),
    ):
        if names != set(expected):
            raise ArtifactError(
                where,
                f"the {what} has tensors {sorted(names)} but the layers need {sorted(expected)}; "
                "the artifact is inconsistent: rebuild it",
            )
    for name, shape in sorted(expected.items()):
        entry, tensor = manifest.tensors[name], tensors[name]
        problem = None
        if entry.dtype != manifest.dtype or tensor.dtype != torch.float32:
            problem = f"dtype is {entry.dtype} / {tensor.dtype}, expected {manifest.dtype}"
        elif entry.shape != shape or tuple(tensor.shape) != shape:
            problem = f"shape is {list(entry.shape)} in the manifest and {list(tensor.shape)} in the weights, the layer needs {list(shape)}"
        elif entry.sha256 is not None and sha256_hex(tensor_bytes(tensor)) != entry.sha256:
            problem = "its bytes do not match the sha256 in the manifest's tensor table"
        elif not bool(torch.isfinite(tensor).all()):
            problem = "it holds NaN or infinite values, so the model's outputs would be too"
        if problem:
            raise ArtifactError(where, f"tensor {name}: {problem}; rebuild the artifact")


def write_artifact(
    dest: Path, files: Mapping[str, bytes], *, verify: Callable[[Path], object] | None = None
) -> None:
    """Write ``files`` (name -> bytes) as the directory ``dest``, atomically replacing it.

    ``verify`` is called on the finished temporary directory before it is
    renamed into place; if it raises, nothing changes. An existing ``dest`` is
    replaced only if it is an artifact directory (it has a manifest.json) or
    empty, so a typo cannot delete unrelated files.
    """
    if dest.exists() and not (dest / MANIFEST_FILE).is_file() and any(dest.iterdir()):
        raise ArtifactError(
            str(dest), "exists and is not an artifact directory; move it away or pick another name"
        )
    with temp_dir(dest) as tmp:
        os.chmod(tmp, 0o755)
        for name, data in sorted(files.items()):
            with (tmp / name).open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        if verify is not None:
            verify(tmp)
        replace_dir(tmp, dest)
