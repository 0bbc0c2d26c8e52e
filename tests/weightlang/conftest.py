"""Shared sources and helpers for the WeightLang tests: tiny models built in the test."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

XOR = """\
// the XOR base model
wgt 0.1
model xor
seed 0

input x: f32[2]
output y: f32[1]

layer h1 = linear(in=2, out=8)
layer a1 = tanh
layer out = linear(in=8, out=1)
layer p = sigmoid

data xor {
  [0, 0] -> [0]
  [0, 1] -> [1]
  [1, 0] -> [1]
  [1, 1] -> [0]
}

train data=xor loss=bce optimizer=adam lr=0.05 epochs=300
"""

XOR_ROWS = [([0.0, 0.0], 0.0), ([0.0, 1.0], 1.0), ([1.0, 0.0], 1.0), ([1.0, 1.0], 0.0)]


def classifier(import_line: str, *, train: bool = True, hidden: int = 8) -> str:
    """A model on the XOR data whose hidden layer h1 comes from ``import_line``."""
    text = XOR.replace("model xor", "model classifier").replace("out=8", f"out={hidden}")
    text = text.replace("in=8", f"in={hidden}")
    text = text.replace("seed 0", "seed 7")
    if not train:
        text = text.replace("train data=xor loss=bce optimizer=adam lr=0.05 epochs=300\n", "")
    return text + import_line + "\n"


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def tree_hashes(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory``, by relative path."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def assert_no_artifact(dest: Path) -> None:
    """Nothing under ``dest``'s name, and no temporary directory left next to it."""
    assert not dest.exists()
    if dest.parent.exists():
        leftovers = [p.name for p in dest.parent.iterdir() if p.name.startswith(f".{dest.name}.")]
        assert leftovers == []


@pytest.fixture(scope="session")
def xor_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The XOR base model, built once: ``<module dir>/xor`` as a release would hold it."""
    from wgtpm.weightlang.build import build_wgt

    src = write(tmp_path_factory.mktemp("xor-src"), "xor.wgt", XOR)
    module_dir = tmp_path_factory.mktemp("xor-base-module")
    build_wgt(src, module_dir / "xor")
    return module_dir / "xor"
