"""A WeightLang model takes the tiny Qwen3's embedding and final norm through a real build list.

The tiny Qwen3 (wgtpm.paw.tiny) is served by the loopback Hugging Face Hub; a
new project requires it (``wgtpm init``, ``wgtpm get``), imports
``model.embed_tokens.weight`` into an embedding and ``model.norm.weight``
into an rmsnorm, both frozen, and builds twice to the same bytes. A wrong
shape is refused by ``wgtpm check`` at the import's position; a changed
tensor in the module cache is refused by ``wgtpm build``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TINY_QWEN3, TINY_QWEN3_VERSION
from tests.servers.huggingface import HuggingFaceServer

from .conftest import tree_hashes

torch = pytest.importorskip("torch")

MODULE = TINY_QWEN3
VERSION = TINY_QWEN3_VERSION
WEIGHTS = f"{MODULE}/model.safetensors"


def source(vocab: int, dim: int = 64) -> str:
    return f"""\
wgt 0.1
model enc
seed 1
input ids: i64[1]
output y: f32[2]
layer tok = embedding(vocab={vocab}, dim={dim})
layer norm = rmsnorm(n={dim})
layer head = linear(in={dim}, out=2)
import tok.weight from {WEIGHTS}#model.embed_tokens.weight freeze
import norm.weight from {WEIGHTS}#model.norm.weight freeze
data words {{
  [1] -> [0]
  [2] -> [1]
  [3] -> [0]
  [4] -> [1]
}}
train data=words loss=ce optimizer=adam lr=0.05 epochs=20
"""


@pytest.fixture
def project(tmp_path: Path, wgtpm: Any, tiny_qwen3_hub: HuggingFaceServer) -> Path:
    """A new package that requires the tiny Qwen3 and declares ``artifact enc model.wgt``."""
    d = tmp_path / "enc"
    d.mkdir()
    assert wgtpm("init", "example.com/enc", cwd=d).code == 0
    r = wgtpm("get", f"{MODULE}@{VERSION}", cwd=d)
    assert r.code == 0, r.err
    with (d / "wgt.mod").open("a") as fh:
        fh.write("\nartifact enc model.wgt\n")
    return d


def _vocab(tiny_qwen3_files: dict[str, bytes]) -> int:
    return int(json.loads(tiny_qwen3_files["config.json"])["vocab_size"])


def _cached_weights() -> Path:
    """The tiny Qwen3's model.safetensors in the module cache (the one file of that name)."""
    found = [
        p
        for p in Path(os.environ["WGTPM_CACHE"]).rglob("model.safetensors")
        if "tiny-qwen3" in str(p)
    ]
    assert len(found) == 1, found
    return found[0]


def test_embedding_and_norm_from_tiny_qwen3_build_byte_stably(
    project: Path, wgtpm: Any, tiny_qwen3_files: dict[str, bytes], tmp_path: Path
) -> None:
    from safetensors.torch import load, load_file

    (project / "model.wgt").write_text(source(_vocab(tiny_qwen3_files)))
    r = wgtpm("check", "model.wgt", cwd=project)
    assert r.code == 0, r.err
    assert "imports tok.weight, norm.weight" in r.out
    r = wgtpm("build", cwd=project)
    assert r.code == 0, r.err
    first = tmp_path / "first"
    shutil.copytree(project / "build/enc", first)
    r = wgtpm("build", cwd=project)
    assert r.code == 0, r.err
    assert tree_hashes(project / "build/enc") == tree_hashes(first)

    qwen = load(tiny_qwen3_files["model.safetensors"])
    built = load_file(str(first / "weights.safetensors"))
    assert torch.equal(built["tok.weight"], qwen["model.embed_tokens.weight"].float())
    assert torch.equal(built["norm.weight"], qwen["model.norm.weight"].float())
    tensors = json.loads((first / "manifest.json").read_text())["weights"]["tensors"]
    for name, tensor in (
        ("tok.weight", "model.embed_tokens.weight"),
        ("norm.weight", "model.norm.weight"),
    ):
        assert tensors[name]["origin"] == "imported"
        src = tensors[name]["source"]
        assert (src["module"], src["version"], src["file"], src["tensor"]) == (
            MODULE,
            VERSION,
            "model.safetensors",
            tensor,
        )
        assert len(src["sha256"]) == 64
    assert tensors["head.weight"]["origin"] == "trained"
    r = wgtpm("inspect", str(first))
    assert r.code == 0, r.err
    assert (
        f"imported <- {MODULE}@{VERSION} model.safetensors#model.embed_tokens.weight (F32, sha256 "
        f"{tensors['tok.weight']['source']['sha256']})"
    ) in r.out

    import wgtpm as api

    art = api.load(str(first))
    out = art.predict([[1], [2]])
    assert tuple(out.shape) == (2, 2)


def test_wrong_shape_is_refused_by_check_at_the_import(
    project: Path, wgtpm: Any, tiny_qwen3_files: dict[str, bytes]
) -> None:
    vocab = _vocab(tiny_qwen3_files)
    (project / "model.wgt").write_text(source(vocab + 1))
    r = wgtpm("check", "model.wgt", cwd=project)
    assert r.code == 1
    assert (
        f"model.wgt:9:24: import tok.weight: shape mismatch: {MODULE}@{VERSION} "
        f"model.safetensors#model.embed_tokens.weight is [{vocab}, 64] (F32) but tok.weight of "
        f"embedding(vocab={vocab + 1}, dim=64) is [{vocab + 1}, 64]; they must agree"
    ) in r.err
    assert "Traceback" not in r.err
    assert not (project / "build/enc").exists()


def test_changed_tensor_in_the_cache_is_refused(
    project: Path, wgtpm: Any, tiny_qwen3_files: dict[str, bytes]
) -> None:
    from wgtpm.tensors import compute_table

    (project / "model.wgt").write_text(source(_vocab(tiny_qwen3_files)))
    assert wgtpm("build", cwd=project).code == 0  # the table is computed and cached
    before = tree_hashes(project / "build/enc")
    path = _cached_weights()
    info = compute_table(path, "model.safetensors").get("model.embed_tokens.weight")
    path.chmod(path.stat().st_mode | stat.S_IWUSR)
    data = bytearray(path.read_bytes())
    data[info.start + 100] ^= 0x01
    path.write_bytes(bytes(data))

    r = wgtpm("build", "--force", cwd=project)
    assert r.code == 1
    assert r.err.startswith("wgtpm: model.wgt:9:24: import tok.weight: ")
    assert "checksum mismatch for tensor model.embed_tokens.weight" in r.err
    assert tree_hashes(project / "build/enc") == before

    # Without the cached table, the table is computed from the changed file: refused too.
    shutil.rmtree(Path(os.environ["WGTPM_CACHE"]) / "tensors")
    r = wgtpm("build", "--force", cwd=project)
    assert r.code == 1
    assert r.err.startswith("wgtpm: model.wgt:9:24: import tok.weight: ")
    assert "Traceback" not in r.err
    assert tree_hashes(project / "build/enc") == before


def test_a_sha256_pin_on_a_tensor_import(
    project: Path, wgtpm: Any, tiny_qwen3_files: dict[str, bytes]
) -> None:
    """``import ... FILE#TENSOR freeze sha256=...``: the tensor's sha256 in the tables must be
    the pin (the right pin builds; another is refused by check at the import)."""
    from tests.tensors.test_ranged import ranges

    data = tiny_qwen3_files["model.safetensors"]
    start, end = ranges(data)["model.embed_tokens.weight"]
    sha = hashlib.sha256(data[start:end]).hexdigest()
    text = source(_vocab(tiny_qwen3_files))
    line = "#model.embed_tokens.weight freeze"
    (project / "model.wgt").write_text(text.replace(line, f"{line} sha256={sha}"))
    r = wgtpm("build", cwd=project)
    assert r.code == 0, r.err
    (project / "model.wgt").write_text(text.replace(line, f"{line} sha256={'0' * 64}"))
    r = wgtpm("check", "model.wgt", cwd=project)
    assert r.code == 1
    assert "model.wgt:9:" in r.err and "sha256 pin mismatch" in r.err and sha in r.err, r.err
