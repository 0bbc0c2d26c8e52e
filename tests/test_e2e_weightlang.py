"""End to end: a package imports a frozen layer from another through a loopback proxy.

xor-base is built and published into a proxy tree served over HTTP; the
classifier package resolves it by MVS, downloads and verifies it, imports its
hidden layer (bit-identical, frozen) and trains its own head; a third
project loads the classifier with ``wgtpm.load`` through its own wgt.mod.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

pytestmark = pytest.mark.slow


def publish_base(wgtpm, tree, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """Build examples/xor-base in a copy and publish it as v0.1.0; returns the copy."""
    base = tmp_path / "xor-base"
    shutil.copytree(EXAMPLES / "xor-base", base)
    assert wgtpm("build", cwd=base).code == 0
    tree.add_package(base, "v0.1.0")
    return base


def test_import_layer_through_proxy(wgtpm, tree, http_tree, tmp_path, monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    import wgtpm as api

    monkeypatch.setenv("WGTPROXY", http_tree.url)
    base = publish_base(wgtpm, tree, tmp_path)

    cls = tmp_path / "xor-classifier"
    shutil.copytree(EXAMPLES / "xor-classifier", cls)
    assert wgtpm("get", cwd=cls).code == 0  # build only reads wgt.sum: lock first
    sums = (cls / "wgt.sum").read_text()
    assert "github.com/acme/xor-base v0.1.0 h1:" in sums
    r = wgtpm("build", cwd=cls)
    assert r.code == 0, r.err
    assert http_tree.log.where(path="/github.com/acme/xor-base/@v/v0.1.0/xor/weights.safetensors")
    assert (cls / "wgt.sum").read_text() == sums

    # examples/xor-base/model.wgt is the source of the prototype's golden xor: same bytes, same pin.
    golden = Path(__file__).parent / "testdata/weightlang/prototype/xor/weights.safetensors"
    assert (base / "build/xor/weights.safetensors").read_bytes() == golden.read_bytes()
    base_w = load_file(str(base / "build/xor/weights.safetensors"))
    cls_w = load_file(str(cls / "build/classifier/weights.safetensors"))
    assert torch.equal(base_w["h1.weight"], cls_w["h1.weight"])
    assert torch.equal(base_w["h1.bias"], cls_w["h1.bias"])
    manifest = json.loads((cls / "build/classifier/manifest.json").read_text())
    imports = json.dumps(manifest)
    assert "github.com/acme/xor-base" in imports and "v0.1.0" in imports
    tree.add_package(cls, "v0.1.0")

    app = tmp_path / "app"
    app.mkdir()
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    assert wgtpm("get", "github.com/acme/xor-classifier@v0.1.0", cwd=app).code == 0
    art = api.load("github.com/acme/xor-classifier/classifier", project_dir=app)
    preds = art.predict([[0, 0], [0, 1], [1, 0], [1, 1]]).argmax(dim=1).tolist()
    assert preds == [0, 1, 1, 0]
    layer = api.load_layer("github.com/acme/xor-base/xor.h1", project_dir=app)
    assert torch.equal(
        layer["weight"] if "weight" in layer else layer["h1.weight"], base_w["h1.weight"]
    )
    r = wgtpm("inspect", "github.com/acme/xor-classifier/classifier", cwd=app)
    assert "imported" in r.out and "github.com/acme/xor-base@v0.1.0" in r.out
    r = wgtpm("verify", "github.com/acme/xor-classifier/classifier", cwd=app)
    assert r.code == 0, r.err


def test_vendored_build_needs_no_network_and_no_cache(wgtpm, tree, tmp_path, monkeypatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("WGTPROXY", tree.url)
    publish_base(wgtpm, tree, tmp_path)
    cls = tmp_path / "xor-classifier"
    shutil.copytree(EXAMPLES / "xor-classifier", cls)
    assert wgtpm("get", cwd=cls).code == 0  # vendor only reads wgt.sum (as go mod vendor)
    assert wgtpm("vendor", cwd=cls).code == 0
    assert (cls / "vendor/github.com/acme/xor-base/xor/weights.safetensors").is_file()
    # An air-gapped machine: no proxy, an empty cache, only vendor/.
    monkeypatch.setenv("WGTPROXY", "off")
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("WGTFLAGS", "-mod=vendor")
    r = wgtpm("build", cwd=cls)
    assert r.code == 0, r.err
    manifest = json.loads((cls / "build/classifier/manifest.json").read_text())
    package = manifest["imports"][0]["package"]
    assert (package["module"], package["version"]) == ("github.com/acme/xor-base", "v0.1.0")
    assert not (tmp_path / "empty-cache" / "blobs").exists()
