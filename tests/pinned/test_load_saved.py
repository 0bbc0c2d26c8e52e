"""``wgtpm.pinned.load_saved``: a saved model read back, every tensor checked, origins kept."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import wgtpm  # noqa: E402
from wgtpm.pinned import Origin, SavedModelError, load_saved, origin_of  # noqa: E402
from wgtpm.pinned._convert import tensor_sha256  # noqa: E402
from wgtpm.pinned._origin import record  # noqa: E402


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(5, 3)
        self.head = nn.Linear(3, 2)


def imported(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` as Pinned.tensor returns one: its origin recorded (module, file, sha256)."""
    sha = tensor_sha256(tensor)
    origin = Origin("hf.co/acme/base", "v1.0.0", "model.safetensors", "emb", sha, "F32")
    record(tensor, origin, sha)
    return tensor


def saved(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    model = Tiny()
    wgtpm.graft(model, {"tok.weight": imported(torch.randn(5, 3))}, freeze=True)
    return wgtpm.save(model, tmp_path / "m")


def rewrite(path: Path, change: object) -> None:
    """Apply ``change`` to the manifest's dict and write it back, the weights sha256 kept true."""
    m = json.loads((path / "manifest.json").read_text())
    change(m)  # type: ignore[operator]
    m["weights"]["sha256"] = hashlib.sha256((path / "weights.safetensors").read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(m))


def test_tensors_and_origins_come_back_and_a_resave_is_byte_identical(tmp_path: Path) -> None:
    path = saved(tmp_path)
    s = load_saved(path)
    assert sorted(s.tensors) == ["head.bias", "head.weight", "tok.weight"]
    assert s.modules == {"hf.co/acme/base": "v1.0.0"}
    origin = s.origin("tok.weight")
    assert origin is not None and origin.label == "hf.co/acme/base@v1.0.0/model.safetensors#emb"
    assert s.origin("head.weight") is None
    model = s.load_into(Tiny())
    assert not model.tok.weight.requires_grad and model.head.weight.requires_grad
    assert origin_of(model.tok.weight) == origin
    assert torch.equal(model.head.weight, s.tensors["head.weight"])
    again = wgtpm.save(model, tmp_path / "again")
    for f in ("manifest.json", "weights.safetensors"):
        assert (again / f).read_bytes() == (path / f).read_bytes()


def test_a_tensor_changed_with_its_file_hash_is_refused_naming_it(tmp_path: Path) -> None:
    path = saved(tmp_path)
    weights = path / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # the last tensor's bytes (tok.weight: tensors are stored by name)
    weights.write_bytes(bytes(data))
    rewrite(path, lambda m: None)  # someone fixed the file's sha256 up, not the tensor's
    with pytest.raises(SavedModelError, match=r"tensor tok\.weight has sha256 [0-9a-f]{64}, but"):
        load_saved(path)


def test_changed_weights_are_refused_by_the_file_hash(tmp_path: Path) -> None:
    path = saved(tmp_path)
    weights = path / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(SavedModelError, match=r"weights\.safetensors has sha256"):
        load_saved(path)


def test_an_imported_tensor_whose_bytes_are_not_its_sources_is_refused(tmp_path: Path) -> None:
    path = saved(tmp_path)

    def other_source(m: dict) -> None:  # type: ignore[type-arg]
        m["weights"]["tensors"]["tok.weight"]["source"]["sha256"] = "0" * 64

    rewrite(path, other_source)
    with pytest.raises(
        SavedModelError, match=r"recorded as imported unchanged from hf\.co/acme/base"
    ):
        load_saved(path)


def test_a_model_of_another_shape_and_a_non_saved_directory_are_refused(tmp_path: Path) -> None:
    s = load_saved(saved(tmp_path))
    with pytest.raises(SavedModelError, match=r"only in the model: extra\.weight"):
        model = Tiny()
        model.extra = nn.Linear(1, 1, bias=False)
        s.load_into(model)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "manifest.json").write_text("{}")
    with pytest.raises(SavedModelError, match=r"not a model saved by wgtpm\.save"):
        load_saved(tmp_path / "plain")
