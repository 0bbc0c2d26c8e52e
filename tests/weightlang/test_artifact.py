"""Artifact verification: every way an artifact can disagree with itself is refused."""

from __future__ import annotations

import hashlib
import itertools
import json
import pickle
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from wgtpm.weightlang import ArtifactError, TamperedArtifactError
from wgtpm.weightlang.api import open_artifact
from wgtpm.weightlang.artifact import read_artifact, safetensors_bytes
from wgtpm.weightlang.manifest import manifest_bytes


def _copy(xor_artifact: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "xor"
    shutil.copytree(xor_artifact, copy)
    return copy


def _edit_manifest(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    edit(manifest)
    (path / "manifest.json").write_bytes(manifest_bytes(manifest))


def _replace_weights(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """A consistent forgery: new weights with the manifest's file hash updated to match."""
    data = safetensors_bytes(tensors, "xor")
    (path / "weights.safetensors").write_bytes(data)
    _edit_manifest(path, lambda m: m["weights"].update(sha256=hashlib.sha256(data).hexdigest()))


def _flip_last_byte(file: Path) -> None:
    data = bytearray(file.read_bytes())
    data[-1] ^= 0x01
    file.write_bytes(bytes(data))


def test_a_built_artifact_verifies(xor_artifact: Path) -> None:
    stored = read_artifact(xor_artifact)
    assert sorted(stored.tensors) == ["h1.bias", "h1.weight", "out.bias", "out.weight"]
    assert stored.manifest.model == "xor"


def test_weights_file_is_plain_sorted_safetensors(xor_artifact: Path) -> None:
    raw = (xor_artifact / "weights.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    assert size % 8 == 0
    header = json.loads(raw[8 : 8 + size])
    names = [k for k in header if k != "__metadata__"]
    assert names == sorted(names)
    offsets = [header[n]["data_offsets"] for n in names]
    assert offsets[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(offsets))
    assert offsets[-1][1] == len(raw) - 8 - size
    official = load_file(str(xor_artifact / "weights.safetensors"))
    assert {k: v.shape for k, v in official.items()} == {
        "h1.bias": (8,),
        "h1.weight": (8, 2),
        "out.bias": (1,),
        "out.weight": (1, 8),
    }


def test_loading_never_unpickles(xor_artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle used")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    assert open_artifact(xor_artifact).predict([0.0, 1.0]).shape == (1,)


def _drop_tensor(m: dict[str, Any]) -> None:
    del m["weights"]["tensors"]["h1.bias"]


def _rename_tensor(m: dict[str, Any]) -> None:
    m["weights"]["tensors"]["h1.b"] = m["weights"]["tensors"].pop("h1.bias")


def _reshape(m: dict[str, Any]) -> None:
    m["weights"]["tensors"]["h1.weight"]["shape"] = [2, 8]


def _rehash(m: dict[str, Any]) -> None:
    m["weights"]["tensors"]["out.bias"]["sha256"] = "0" * 64


def _float16(m: dict[str, Any]) -> None:
    m["weights"]["tensors"]["out.bias"]["dtype"] = "F16"


def _origin(m: dict[str, Any]) -> None:
    m["weights"]["tensors"]["out.bias"]["origin"] = "downloaded"


def _layers(m: dict[str, Any]) -> None:
    m["layers"][0]["args"]["out"] = 9


def _interface(m: dict[str, Any]) -> None:
    m["interface"]["input"]["name"] = "z"


def _version(m: dict[str, Any]) -> None:
    m["format_version"] = 2


def _missing(m: dict[str, Any]) -> None:
    del m["weights"]["sha256"]


def _compiler(m: dict[str, Any]) -> None:
    m["compiler"] = "weightc"


def _imports(m: dict[str, Any]) -> None:
    m["imports"] = ["h1"]


def _training(m: dict[str, Any]) -> None:
    m["training"]["final_loss"] = "low"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _drop_tensor,
            "the manifest tensor table has tensors ['h1.weight', 'out.bias', 'out.weight']",
        ),
        (_rename_tensor, "the manifest tensor table has tensors ['h1.b', "),
        (_reshape, "tensor h1.weight: shape is [2, 8] in the manifest and [8, 2] in the weights"),
        (
            _rehash,
            "tensor out.bias: its bytes do not match the sha256 in the manifest's tensor table",
        ),
        (_float16, "tensor out.bias: dtype is F16 / torch.float32, expected f32"),
        (_origin, "weights.tensors.out.bias.origin is missing or malformed"),
        (_layers, "manifest.json and source.wgt disagree on the layers or the interface"),
        (_interface, "manifest.json and source.wgt disagree on the layers or the interface"),
        (_version, "artifact format_version is not 1; upgrade wgtpm to read it"),
        (_missing, "weights.sha256 is missing or malformed"),
        (_compiler, "compiler is missing or malformed"),
        (_imports, "imports is missing or malformed, expected a list of import records"),
        (_training, "training.final_loss is missing or malformed"),
    ],
)
def test_inconsistent_manifest_is_refused(
    tmp_path: Path, xor_artifact: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    copy = _copy(xor_artifact, tmp_path)
    _edit_manifest(copy, edit)
    with pytest.raises(ArtifactError) as info:
        read_artifact(copy)
    assert not isinstance(info.value, TamperedArtifactError)
    assert message in str(info.value)
    assert str(info.value).startswith(f"artifact {copy}: ")


@pytest.mark.parametrize("file", ["weights.safetensors", "source.wgt"])
def test_tampered_file_is_refused(tmp_path: Path, xor_artifact: Path, file: str) -> None:
    copy = _copy(xor_artifact, tmp_path)
    _flip_last_byte(copy / file)
    with pytest.raises(TamperedArtifactError) as info:
        open_artifact(copy)
    assert info.value.file == file
    assert info.value.got == hashlib.sha256((copy / file).read_bytes()).hexdigest()
    assert "Do not use it" in str(info.value)


def test_weights_that_disagree_with_the_layers(tmp_path: Path, xor_artifact: Path) -> None:
    copy = _copy(xor_artifact, tmp_path)
    tensors = dict(read_artifact(copy).tensors)
    tensors["extra.weight"] = torch.zeros(2)
    _replace_weights(copy, tensors)
    with pytest.raises(
        ArtifactError, match=r"the weights.safetensors has tensors .*'extra.weight'"
    ):
        read_artifact(copy)

    tensors = dict(read_artifact(xor_artifact).tensors)
    tensors["out.bias"] = torch.ones(1)
    _replace_weights(copy, tensors)
    with pytest.raises(ArtifactError, match=r"tensor out\.bias: its bytes do not match"):
        read_artifact(copy)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: (p / "manifest.json").write_text("{"), "manifest.json is not valid JSON"),
        (lambda p: (p / "manifest.json").unlink(), "no manifest.json here"),
        (lambda p: (p / "weights.safetensors").unlink(), "cannot read weights.safetensors"),
    ],
)
def test_damaged_artifact_is_refused(
    tmp_path: Path, xor_artifact: Path, damage: Callable[[Path], object], message: str
) -> None:
    copy = _copy(xor_artifact, tmp_path)
    damage(copy)
    with pytest.raises(ArtifactError, match=message):
        read_artifact(copy)


def test_corrupt_safetensors_with_matching_hash(tmp_path: Path, xor_artifact: Path) -> None:
    copy = _copy(xor_artifact, tmp_path)
    data = b"\xff" * 16
    (copy / "weights.safetensors").write_bytes(data)
    _edit_manifest(copy, lambda m: m["weights"].update(sha256=hashlib.sha256(data).hexdigest()))
    with pytest.raises(ArtifactError, match="not a valid safetensors file"):
        read_artifact(copy)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_tensors_are_refused(
    tmp_path: Path, xor_artifact: Path, wgtpm: Any, value: float
) -> None:
    """A consistent forgery with NaN (or inf) weights must not run (issue 9: it printed NaN)."""
    copy = _copy(xor_artifact, tmp_path)
    tensors = dict(read_artifact(copy).tensors)
    tensors["out.bias"] = torch.tensor([value])
    _replace_weights(copy, tensors)
    _edit_manifest(copy, lambda m: m["weights"]["tensors"]["out.bias"].pop("sha256"))
    with pytest.raises(ArtifactError, match=r"tensor out\.bias: it holds NaN or infinite values"):
        read_artifact(copy)
    for args in (("run", str(copy), "--input", "[0, 1]"), ("verify", str(copy))):
        r = wgtpm(*args)
        assert r.code == 1 and r.out == ""
        assert "holds NaN or infinite values" in r.err
