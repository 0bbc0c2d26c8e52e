"""``load_saved``: a model saved by :func:`wgtpm.save`, read back verified, with its origins.

>>> from wgtpm.pinned import load_saved
>>> saved = load_saved("github.com/acme/word-kind/model")    # doctest: +SKIP
>>> saved.tensors["head.weight"]                             # every tensor checked first
>>> saved.origin("tok.weight")                               # Origin(module=..., sha256=...)
>>> saved.load_into(WordKind(320, 64))                       # the model's own class

``ref_or_path`` is found as ``wgtpm.load`` finds an artifact: a directory,
``NAME`` of the package's ``build/``, or ``MODULE/ARTIFACT`` of the build
list (downloaded and verified against wgt.sum). The weights file is read
once into memory and everything is checked on those bytes before torch
sees one: the file's sha256 against the manifest; then each tensor's
name, dtype, shape and sha256 against the manifest's table (no tensor
missing, none extra); and each ``imported`` tensor's bytes against the
sha256 its source recorded. Nothing is unpickled. Imported tensors carry
their :class:`~wgtpm.pinned.Origin` again, so a model built from them and
saved once more records the same origins.

Imports torch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ._convert import safetensors_dtype, tensor_sha256
from ._manifest import (
    IMPORTED,
    MANIFEST_FILE,
    TRAINED,
    WEIGHTS_FILE,
    SavedModelError,
    is_saved_model,
    read_saved_manifest,
)
from ._origin import Origin, forget, origin_of, record, tracked

__all__ = ["MAX_WEIGHTS", "SavedModel", "load_saved"]

#: load_saved reads the weights file into memory whole; a larger model belongs in a
#: module read tensor by tensor (wgtpm.open), not in one saved file.
MAX_WEIGHTS = 16 << 30


@dataclass(frozen=True)
class SavedModel:
    """A saved model read back: its directory, checked manifest and verified tensors."""

    path: Path
    manifest: Mapping[str, Any]
    tensors: Mapping[str, torch.Tensor]

    @property
    def modules(self) -> dict[str, str]:
        """Each module tensors were imported from, with its version (the manifest's ``modules``)."""
        return dict(self.manifest.get("modules", {}))

    def origin(self, name: str) -> Origin | None:
        """Where tensor ``name`` was imported from; ``None`` for a trained tensor."""
        if name not in self.tensors:
            raise KeyError(
                f"{self.path}: no tensor {name}; it has {', '.join(sorted(self.tensors))}"
            )
        return origin_of(self.tensors[name])

    def load_into(self, model: nn.Module) -> nn.Module:
        """``model`` (an instance of the saved model's class) with these tensors, in eval mode.

        Strict: a name missing or extra on either side is an error, naming it.
        Parameters saved frozen are frozen again, and imported ones keep their
        origin, so ``wgtpm.save`` of the model records what the saved one did.
        """
        got = set(model.state_dict())
        if got != set(self.tensors):
            missing = sorted(set(self.tensors) - got)
            extra = sorted(got - set(self.tensors))
            raise SavedModelError(
                str(self.path),
                f"does not fit {type(model).__name__}: tensors only in the saved model: "
                f"{', '.join(missing) or 'none'}; only in the model: {', '.join(extra) or 'none'}",
            )
        model.load_state_dict(dict(self.tensors), strict=True)
        for name, param in model.named_parameters(remove_duplicate=False):
            if self.manifest["weights"]["tensors"][name].get("frozen"):
                param.requires_grad_(False)
            found = tracked(self.tensors[name])
            if found is None:
                forget(param)
            else:  # as wgtpm.graft does: the origin moves to the parameter
                record(param, found.origin, found.held_sha256)
        return model.eval()


def load_saved(ref_or_path: str | Path, *, project_dir: str | Path | None = None) -> SavedModel:
    """The saved model ``ref_or_path`` names, verified (see the module docstring).

    Raises :class:`~wgtpm.pinned.SavedModelError` naming the directory and
    what disagrees; ``project_dir`` (default: the current directory) is the
    package whose ``build/`` and build list a reference is looked up in.
    """
    from ..weightlang.api import locate

    project = Path(project_dir) if project_dir is not None else Path.cwd()
    path = locate(ref_or_path, project_dir=project)
    if not is_saved_model(path):
        raise SavedModelError(
            str(path),
            f"is not a model saved by wgtpm.save (no {MANIFEST_FILE} of that format); "
            "a WeightLang artifact loads with wgtpm.load",
        )
    manifest = read_saved_manifest(path)
    data = _read_weights(path, manifest["weights"]["sha256"])
    return SavedModel(path, manifest, _tensors(str(path), data, manifest["weights"]["tensors"]))


def _read_weights(path: Path, sha256: str) -> bytes:
    """The weights file's bytes, checked again on what was read (it may change after the manifest check)."""
    where = str(path)
    weights = path / WEIGHTS_FILE
    try:
        size = weights.stat().st_size
        if size > MAX_WEIGHTS:
            raise SavedModelError(where, f"{WEIGHTS_FILE} is over {MAX_WEIGHTS >> 30} GiB")
        data = weights.read_bytes()
    except OSError as exc:
        raise SavedModelError(where, f"cannot read {WEIGHTS_FILE} ({exc.strerror})") from exc
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise SavedModelError(
            where, f"{WEIGHTS_FILE} has sha256 {got} but the manifest records {sha256}"
        )
    return data


def _tensors(where: str, data: bytes, table: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load as load_safetensors

    try:
        loaded = load_safetensors(data)
    except SafetensorError as exc:
        raise SavedModelError(where, f"{WEIGHTS_FILE} is not a safetensors file ({exc})") from exc
    if set(loaded) != set(table):
        missing = sorted(set(table) - set(loaded))
        extra = sorted(set(loaded) - set(table))
        raise SavedModelError(
            where,
            f"{WEIGHTS_FILE} does not hold the manifest's tensors: missing "
            f"{', '.join(missing) or 'none'}; not in the manifest {', '.join(extra) or 'none'}",
        )
    out: dict[str, torch.Tensor] = {}
    for name in sorted(table):
        out[name] = _checked(where, name, loaded[name], table[name])
    return out


def _checked(where: str, name: str, tensor: torch.Tensor, entry: Mapping[str, Any]) -> torch.Tensor:
    """``tensor`` when it matches its manifest ``entry``; an imported one gets its Origin back."""
    dtype = safetensors_dtype(tensor.dtype)
    if dtype != entry["dtype"] or list(tensor.shape) != entry["shape"]:
        raise SavedModelError(
            where,
            f"tensor {name} is {dtype} {list(tensor.shape)} in {WEIGHTS_FILE}, but the manifest "
            f"records {entry['dtype']} {entry['shape']}",
        )
    sha = tensor_sha256(tensor)
    if sha != entry.get("sha256"):
        raise SavedModelError(
            where, f"tensor {name} has sha256 {sha}, but the manifest records {entry.get('sha256')}"
        )
    if entry["origin"] == TRAINED:
        return tensor
    s = entry["source"]
    converted = s.get("converted_to")
    if entry["origin"] == IMPORTED and converted is None and sha != s["sha256"]:
        raise SavedModelError(
            where,
            f"tensor {name} is recorded as imported unchanged from {s['module']}@{s['version']} "
            f"{s['file']}#{s['tensor']} (sha256 {s['sha256']}), but its bytes have sha256 {sha}",
        )
    origin = Origin(
        s["module"],
        s["version"],
        s["file"],
        s["tensor"],
        s["sha256"],
        str(s.get("dtype", "")),
        converted if isinstance(converted, str) else None,
    )
    held = sha if entry["origin"] == IMPORTED else s["sha256"]
    record(tensor, origin, held)
    return tensor
