"""The saved-model manifest (``wgtpm.torch.artifact``): what is refused, and the inspect text."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest

from wgtpm.pinned._manifest import (
    SavedModelError,
    describe_saved,
    is_saved_model,
    manifest_bytes,
    read_saved_manifest,
)

WEIGHTS = b"not really safetensors, but hashed all the same"
SHA = "ab" * 32


def good() -> dict[str, Any]:
    return {
        "format": "wgtpm.torch.artifact",
        "format_version": 1,
        "model": "Encoder",
        "modules": {"hf.co/acme/tiny-qwen3": "v0.1.0"},
        "weights": {
            "file": "weights.safetensors",
            "sha256": hashlib.sha256(WEIGHTS).hexdigest(),
            "tensors": {
                "head.weight": {
                    "dtype": "F32",
                    "shape": [2, 64],
                    "sha256": SHA,
                    "origin": "trained",
                    "frozen": False,
                },
                "tok.weight": {
                    "dtype": "F32",
                    "shape": [320, 64],
                    "sha256": SHA,
                    "origin": "imported",
                    "frozen": True,
                    "source": {
                        "module": "hf.co/acme/tiny-qwen3",
                        "version": "v0.1.0",
                        "file": "model.safetensors",
                        "tensor": "model.embed_tokens.weight",
                        "sha256": SHA,
                        "dtype": "BF16",
                        "converted_to": "float32",
                    },
                },
            },
        },
    }


def write(d: Path, manifest: object, weights: bytes = WEIGHTS) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_bytes(manifest_bytes(manifest))  # type: ignore[arg-type]
    (d / "weights.safetensors").write_bytes(weights)
    return d


def test_inspect_text_names_each_origin(tmp_path: Path) -> None:
    d = write(tmp_path / "enc", good())
    assert is_saved_model(d)
    text = describe_saved("build/enc", read_saved_manifest(d))
    assert text.splitlines() == [
        "artifact   build/enc",
        "model      Encoder (wgtpm.torch.artifact)",
        f"weights    sha256 {hashlib.sha256(WEIGHTS).hexdigest()}, 2 tensors, 20,608 parameters",
        "modules    hf.co/acme/tiny-qwen3@v0.1.0",
        "tensors    head.weight  F32 [2, 64]    trained",
        "           tok.weight   F32 [320, 64]  imported from hf.co/acme/tiny-qwen3@v0.1.0, frozen",
        "             model.safetensors#model.embed_tokens.weight",
        f"             sha256 {SHA}, converted BF16 -> float32",
    ]


def _set(path: str, value: object) -> dict[str, Any]:
    m = good()
    *head, last = path.split("/")
    at: Any = m
    for key in head:
        at = at[key]
    if value is KeyError:
        del at[last]
    else:
        at[last] = value
    return m


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (_set("format_version", 2), "format_version 2 is not 1; upgrade wgtpm"),
        (_set("weights/file", "../x"), "weights must name weights.safetensors"),
        (_set("weights/sha256", "zz"), "weights must name weights.safetensors"),
        (_set("modules", ["x"]), "modules must map module paths to versions"),
        (_set("weights/tensors/head.weight/shape", [2, -1]), "tensor head.weight needs a dtype"),
        (_set("weights/tensors/head.weight/shape", "2x64"), "tensor head.weight needs a dtype"),
        (_set("weights/tensors/head.weight/origin", "magic"), "origin must be one of"),
        (_set("weights/tensors/tok.weight/source", KeyError), "names no module, file"),
        (_set("weights/tensors/tok.weight/source/sha256", "x"), "names no module, file"),
    ],
)
def test_a_broken_manifest_is_refused_in_one_line(
    tmp_path: Path, manifest: dict[str, Any], message: str
) -> None:
    d = write(tmp_path / "enc", manifest)
    with pytest.raises(SavedModelError) as exc:
        read_saved_manifest(d)
    assert message in str(exc.value) and str(d) in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1


def test_weights_changed_after_saving_are_refused(tmp_path: Path) -> None:
    d = write(tmp_path / "enc", good(), weights=WEIGHTS + b"!")
    with pytest.raises(SavedModelError, match="the weights were changed after saving"):
        read_saved_manifest(d)


def test_other_directories_are_not_saved_models(tmp_path: Path) -> None:
    other = copy.deepcopy(good())
    other["format"] = "weightlang.artifact"
    assert not is_saved_model(write(tmp_path / "wl", other))
    assert not is_saved_model(tmp_path / "missing")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_bytes(b"{not json")
    assert not is_saved_model(tmp_path / "junk")


def test_inspect_prints_a_saved_model_and_refuses_changed_weights(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    d = write(tmp_path / "enc", good())
    r = wgtpm("inspect", str(d))
    assert r.code == 0, r.err
    assert r.out == describe_saved(str(d), read_saved_manifest(d)) + "\n"
    r = wgtpm("inspect", "--json", str(d))
    assert r.code == 0 and r.out.encode() == manifest_bytes(good())
    (d / "weights.safetensors").write_bytes(b"changed")
    r = wgtpm("inspect", str(d))
    assert r.code == 1 and "the weights were changed after saving" in r.err
    assert len(r.err.strip().splitlines()) == 1
