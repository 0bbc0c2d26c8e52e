"""The Python API: load, load_layer, predict, and how references are found."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import wgtpm.weightlang as wl
from wgtpm._errors import ResolveError, UsageError
from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.weightlang import ArtifactError

from .conftest import XOR_ROWS

BASE = "github.com/acme/xor-base"


def _resolver(xor_artifact: Path) -> MapResolver:
    return MapResolver({BASE: ResolvedModule(BASE, "v0.1.0", xor_artifact.parent)})


def test_load_by_path_name_and_module(tmp_path: Path, xor_artifact: Path) -> None:
    shutil.copytree(xor_artifact, tmp_path / "build" / "xor")
    by_path = wl.load(xor_artifact)
    by_name = wl.load("xor", project_dir=tmp_path)
    by_module = wl.load(f"{BASE}/xor", resolver=_resolver(xor_artifact))
    assert by_name.path == tmp_path / "build" / "xor"
    assert by_module.path == xor_artifact
    assert by_path.weights_sha256 == by_name.weights_sha256 == by_module.weights_sha256
    assert isinstance(by_path.module, torch.nn.Module)
    assert not by_path.module.training
    assert by_path.name == "xor" and by_path.untrained_tensors == []


def test_predict_one_row_or_a_batch(xor_artifact: Path) -> None:
    xor = wl.load(xor_artifact)
    batch = xor.predict(torch.tensor([x for x, _ in XOR_ROWS]))
    assert batch.shape == (4, 1)
    one = xor.predict([0, 1])
    assert one.shape == (1,)
    assert torch.equal(one, batch[1])
    with pytest.raises(
        UsageError, match=r"input x takes \[2\] or \[N, 2\] values, got shape \[3\]"
    ):
        xor.predict([0, 1, 1])
    with pytest.raises(UsageError, match="not a vector of numbers"):
        xor.predict([[0, 1], [1]])


def test_load_layer(xor_artifact: Path) -> None:
    layer = wl.load_layer(f"{BASE}/xor.h1", resolver=_resolver(xor_artifact))
    state = wl.load(xor_artifact).module.state_dict()
    assert sorted(layer) == ["bias", "weight"]
    assert torch.equal(layer["weight"], state["h1.weight"])
    assert wl.load_layer(f"{xor_artifact}.out")["weight"].shape == (1, 8)
    assert wl.load_layer(f"{xor_artifact}.a1") == {}  # an activation has no tensors
    with pytest.raises(
        UsageError, match="model xor has no layer 'h9'; its layers are h1, a1, out, p"
    ):
        wl.load_layer(f"{xor_artifact}.h9")
    with pytest.raises(UsageError, match=r"expected ARTIFACT\.LAYER"):
        wl.load_layer(f"{BASE}/xor", resolver=_resolver(xor_artifact))


def test_references_that_name_nothing(tmp_path: Path, xor_artifact: Path) -> None:
    with pytest.raises(ArtifactError, match="not found: not a path, not build/nope"):
        wl.load("nope", project_dir=tmp_path)
    with pytest.raises(ArtifactError, match="not found"):
        wl.load(tmp_path / "missing")
    with pytest.raises(ResolveError, match="no module of the build list is a prefix"):
        wl.load("github.com/acme/other/xor", resolver=_resolver(xor_artifact))
    with pytest.raises(ArtifactError, match=f"module {BASE}@v0.1.0 has no artifact 'nope'"):
        wl.load(f"{BASE}/nope", resolver=_resolver(xor_artifact))


def test_importing_the_package_and_commands_stays_light() -> None:
    code = (
        "import sys, wgtpm.weightlang, wgtpm.cli._weightlang, wgtpm.weightlang.report;"
        "wgtpm.weightlang.parse('wgt 0.1\\nmodel m\\ninput x: f32[1]\\noutput y: f32[1]\\n"
        "layer a = relu\\n', 'm.wgt');"
        "heavy = [m for m in ('torch', 'safetensors', 'numpy') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    root = Path(__file__).parent.parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
