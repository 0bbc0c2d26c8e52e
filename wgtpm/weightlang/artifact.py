"""Reading, verifying and writing WeightLang artifact directories.

Writing is byte-stable: the safetensors header lists tensors in sorted order
with sorted keys and no whitespace (padded with spaces to 8 bytes, as the
format allows), tensor data follows in the same order, and the manifest is
canonical JSON (:func:`wgtpm.weightlang.manifest.canonical_json`). The three
files are written into a fresh hidden directory next to the destination and
renamed into place, so no partial artifact is ever visible under its name.

Reading never unpickles. :func:`read_artifact` checks, before any tensor is
used: the manifest's format and fields; the sha256 of ``source.wgt`` and
``weights.safetensors`` against the manifest; that the source still declares
the manifest's layers and interface; that the tensor table, the layer list and
the weights agree on every tensor's name, shape, dtype and sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors

from .._errors import ParseError
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


def safetensors_bytes(tensors: Mapping[str, torch.Tensor]) -> bytes:
    """A byte-stable safetensors file holding ``tensors`` as float32.

    Layout: 8-byte little-endian header length, the header JSON
    ``{"__metadata__":{"format":…},"h1.bias":{"data_offsets":[0,32],"dtype":"F32","shape":[8]},…}``
    padded with spaces to a multiple of 8, then the tensors' bytes in name order.
    """
    header: dict[str, object] = {"__metadata__": {"format": FORMAT}}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        data = tensor_bytes(tensors[name])
        shape = list(tensors[name].shape)
        header[name] = {
            "data_offsets": [offset, offset + len(data)],
            "dtype": "F32",
            "shape": shape,
        }
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(blobs)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class StoredArtifact:
    """A verified artifact directory: its manifest and its tensors by full name."""

    path: Path
    manifest: Manifest
    tensors: Mapping[str, torch.Tensor]


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
    manifest = Manifest.from_bytes(where, _read(path, MANIFEST_FILE))
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
    return StoredArtifact(path, manifest, tensors)


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
        if entry.dtype != "F32" or tensor.dtype != torch.float32:
            problem = f"dtype is {entry.dtype} / {tensor.dtype}, expected F32"
        elif entry.shape != shape or tuple(tensor.shape) != shape:
            problem = f"shape is {list(entry.shape)} in the manifest and {list(tensor.shape)} in the weights, the layer needs {list(shape)}"
        elif sha256_hex(tensor_bytes(tensor)) != entry.sha256:
            problem = "its bytes do not match the sha256 in the manifest's tensor table"
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
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        os.chmod(tmp, 0o755)
        for name, data in sorted(files.items()):
            with (tmp / name).open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        if verify is not None:
            verify(tmp)
        _swap_into_place(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_into_place(tmp: Path, dest: Path) -> None:
    if not dest.exists():
        os.rename(tmp, dest)
        return
    # A directory cannot be renamed over a non-empty one: move the old one aside first.
    old = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.old"
    os.rename(dest, old)
    try:
        os.rename(tmp, dest)
    except BaseException:
        os.rename(old, dest)
        raise
    shutil.rmtree(old, ignore_errors=True)
