"""``wgtpm.save``: a torch model's tensors and where each came from, as a directory.

The format is :mod:`wgtpm.pinned._manifest`'s. Every tensor of the model's
``state_dict`` is saved in its own dtype; its origin comes from the
registry of :mod:`wgtpm.pinned._origin` (what :func:`wgtpm.graft` recorded),
and a grafted tensor whose bytes changed since is saved as
``imported+trained``. The directory is written next to its destination,
checked, and renamed into place, so no partial save is ever visible.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._errors import UsageError
from ._convert import safetensors_dtype, tensor_sha256
from ._manifest import (
    FORMAT,
    FORMAT_VERSION,
    IMPORTED,
    IMPORTED_TRAINED,
    MANIFEST_FILE,
    TRAINED,
    WEIGHTS_FILE,
    manifest_bytes,
    read_saved_manifest,
)
from ._origin import tracked

__all__ = ["save"]


def _entry(tensor: torch.Tensor, saved: torch.Tensor) -> dict[str, Any]:
    sha = tensor_sha256(saved)
    entry: dict[str, Any] = {
        "dtype": safetensors_dtype(saved.dtype),
        "shape": list(saved.shape),
        "sha256": sha,
        "frozen": not tensor.requires_grad,
        "origin": TRAINED,
    }
    found = tracked(tensor)
    if found is not None:
        entry["origin"] = IMPORTED if found.held_sha256 == sha else IMPORTED_TRAINED
        entry["source"] = found.origin.to_json()
    return entry


def _weights(state: Mapping[str, torch.Tensor]) -> tuple[bytes, dict[str, dict[str, Any]]]:
    from safetensors.torch import save as save_safetensors

    plain: dict[str, torch.Tensor] = {}
    table: dict[str, dict[str, Any]] = {}
    for name, tensor in sorted(state.items()):
        saved = tensor.detach().to("cpu").contiguous().clone()  # tied weights share memory
        plain[name] = saved
        table[name] = _entry(tensor, saved)
    return save_safetensors(plain, metadata={"format": FORMAT}), table


def save(model: nn.Module, dest: str | Path) -> Path:
    """Save ``model`` to the directory ``dest`` (see the module docstring); returns its path.

    An existing ``dest`` is replaced only if it is a saved model or a
    WeightLang artifact (it has a manifest.json) or empty.
    """
    import hashlib

    from ..weightlang.artifact import write_artifact

    if not isinstance(model, nn.Module):
        raise UsageError(f"wgtpm.save takes a torch.nn.Module, not a {type(model).__name__}")
    dest = Path(dest)
    state = model.state_dict(keep_vars=True)  # the Parameters themselves: their origins
    data, table = _weights(state)
    modules = {
        e["source"]["module"]: e["source"]["version"] for e in table.values() if "source" in e
    }
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": type(model).__name__,
        "modules": modules,
        "weights": {
            "file": WEIGHTS_FILE,
            "sha256": hashlib.sha256(data).hexdigest(),
            "tensors": table,
        },
    }
    files = {WEIGHTS_FILE: data, MANIFEST_FILE: manifest_bytes(manifest)}
    write_artifact(dest, files, verify=read_saved_manifest)
    return dest
