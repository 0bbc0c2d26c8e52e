"""Importing layers from other artifacts: provenance, freezing, pins and every way it fails."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.weightlang import LayerImportError
from wgtpm.weightlang.api import open_artifact
from wgtpm.weightlang.build import build_wgt

from .conftest import XOR_ROWS, assert_no_artifact, classifier, write

BASE = "github.com/acme/xor-base"
COMMIT = "3f9a2b7c1d0e" + "0" * 28


def _resolver(xor_artifact: Path) -> MapResolver:
    module = ResolvedModule(BASE, "v0.1.0", xor_artifact.parent, COMMIT)
    return MapResolver({BASE: module})


def _manifest(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "manifest.json").read_text())
    return data


def test_frozen_module_import_keeps_the_weights_bit_identical(
    tmp_path: Path, xor_artifact: Path
) -> None:
    src = write(tmp_path, "clf.wgt", classifier(f"import h1 from {BASE}/xor.h1 freeze"))
    build_wgt(src, tmp_path / "clf", resolver=_resolver(xor_artifact))
    base, clf = open_artifact(xor_artifact), open_artifact(tmp_path / "clf")
    for name in ("weight", "bias"):
        assert torch.equal(clf.layer("h1")[name], base.layer("h1")[name])
    # its own layer was trained (not left at its initial values) and the model works
    assert not torch.equal(clf.layer("out")["weight"], base.layer("out")["weight"])
    out = clf.predict([x for x, _ in XOR_ROWS])
    assert [round(float(v)) for v in out[:, 0]] == [y for _, y in XOR_ROWS]

    manifest = _manifest(tmp_path / "clf")
    tensors = manifest["weights"]["tensors"]
    assert {k: (v["origin"], v.get("upstream_origin")) for k, v in tensors.items()} == {
        "h1.bias": ("imported", "trained"),
        "h1.weight": ("imported", "trained"),
        "out.bias": ("trained", None),
        "out.weight": ("trained", None),
    }
    base_manifest = _manifest(xor_artifact)
    base_tensors = base_manifest["weights"]["tensors"]
    assert manifest["imports"] == [
        {
            "layer": "h1",
            "source": f"{BASE}/xor",
            "source_model": "xor",
            "source_layer": "h1",
            "source_weights_sha256": base_manifest["weights"]["sha256"],
            "source_manifest_sha256": hashlib.sha256(
                (xor_artifact / "manifest.json").read_bytes()
            ).hexdigest(),
            "package": {"module": BASE, "version": "v0.1.0", "commit": COMMIT},
            "pinned": False,
            "frozen": True,
            "tensors": {
                "h1.weight": base_tensors["h1.weight"]["sha256"],
                "h1.bias": base_tensors["h1.bias"]["sha256"],
            },
        }
    ]
    assert tensors["h1.weight"]["sha256"] == base_tensors["h1.weight"]["sha256"]


def test_unfrozen_import_is_trained_further(tmp_path: Path, xor_artifact: Path) -> None:
    src = write(tmp_path, "clf.wgt", classifier(f"import h1 from {BASE}/xor.h1"))
    build_wgt(src, tmp_path / "clf", resolver=_resolver(xor_artifact))
    clf, base = open_artifact(tmp_path / "clf"), open_artifact(xor_artifact)
    assert not torch.equal(clf.layer("h1")["weight"], base.layer("h1")["weight"])
    tensors = _manifest(tmp_path / "clf")["weights"]["tensors"]
    assert tensors["h1.weight"]["origin"] == "imported+trained"


def test_pinned_path_import_and_chained_provenance(tmp_path: Path, xor_artifact: Path) -> None:
    sha = _manifest(xor_artifact)["weights"]["sha256"]
    shutil.copytree(xor_artifact, tmp_path / "vendored" / "xor")
    line = f'import h1 from "../vendored/xor".h1 sha256={sha}'
    src = write(tmp_path / "clf", "clf.wgt", classifier(line, train=False))
    build_wgt(src, tmp_path / "build" / "clf")
    manifest = _manifest(tmp_path / "build" / "clf")
    record = manifest["imports"][0]
    assert (record["source"], record["package"], record["pinned"]) == (
        "../vendored/xor",
        None,
        True,
    )
    tensors = manifest["weights"]["tensors"]
    assert tensors["h1.weight"]["origin"] == "imported"  # no train statement: not trained here
    assert tensors["out.weight"]["origin"] == "random-init"

    # A model importing the imported layer again still knows it was trained upstream.
    line = 'import h1 from "../build/clf".h1 freeze'
    src = write(tmp_path / "third", "third.wgt", classifier(line, train=False))
    build_wgt(src, tmp_path / "build" / "third")
    third = open_artifact(tmp_path / "build" / "third", warn_untrained=False)
    assert third.manifest.tensors["h1.weight"].upstream_origin == "trained"
    assert third.untrained_tensors == ["out.bias", "out.weight"]


def _tampered(tmp_path: Path, xor_artifact: Path) -> Path:
    copy = tmp_path / "tampered" / "xor"
    shutil.copytree(xor_artifact, copy)
    data = bytearray((copy / "weights.safetensors").read_bytes())
    data[-1] ^= 0x01
    (copy / "weights.safetensors").write_bytes(bytes(data))
    return copy


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "import h1 from github.com/acme/other/xor.h1",
            "import h1: github.com/acme/other/xor: no module of the build list is a prefix",
        ),
        (
            f"import h1 from {BASE}/nope.h1",
            f"import h1: module {BASE}@v0.1.0 has no artifact nope, expected one of: xor",
        ),
        (
            f"import h1 from {BASE}/xor.h9",
            f"import h1: {BASE}/xor has no layer h9, expected one of its layers with weights: h1, out",
        ),
        (
            f"import h1 from {BASE}/xor.out",
            f"import h1: shape mismatch: {BASE}/xor.out is linear(in=8, out=1) but layer h1 here is "
            "linear(in=2, out=8); they must agree",
        ),
        (
            f"import h1 from {BASE}/xor.h1 sha256={'0' * 64}",
            f"import h1: sha256 pin mismatch: the import pins sha256={'0' * 64} but {BASE}/xor "
            f"({BASE}@v0.1.0) has weights sha256=",
        ),
        (
            'import h1 from "../tampered/xor".h1',
            'import h1: cannot use "../tampered/xor": artifact ',
        ),
        ('import h1 from "../missing".h1', 'import h1: no artifact at "../missing"'),
    ],
)
def test_bad_imports(tmp_path: Path, xor_artifact: Path, line: str, message: str) -> None:
    _tampered(tmp_path, xor_artifact)
    src = write(tmp_path / "clf", "clf.wgt", classifier(line))
    dest = tmp_path / "build" / "clf"
    with pytest.raises(LayerImportError) as info:
        build_wgt(src, dest, resolver=_resolver(xor_artifact), name="clf.wgt")
    assert str(info.value).startswith("clf.wgt:22:16: " + message), str(info.value)
    assert_no_artifact(dest)


def test_tampered_import_says_so(tmp_path: Path, xor_artifact: Path) -> None:
    _tampered(tmp_path, xor_artifact)
    src = write(tmp_path / "clf", "clf.wgt", classifier('import h1 from "../tampered/xor".h1'))
    with pytest.raises(LayerImportError, match=r"weights\.safetensors does not match its manifest"):
        build_wgt(src, tmp_path / "build" / "clf")


def test_module_import_needs_a_build_list(tmp_path: Path) -> None:
    src = write(tmp_path, "clf.wgt", classifier(f"import h1 from {BASE}/xor.h1"))
    with pytest.raises(LayerImportError, match="there is no build list here"):
        build_wgt(src, tmp_path / "clf")
    assert_no_artifact(tmp_path / "clf")


def test_all_import_errors_are_reported_together(tmp_path: Path, xor_artifact: Path) -> None:
    text = classifier(f"import h1 from {BASE}/xor.h9").replace(
        "layer p = sigmoid", 'layer p = sigmoid\nimport out from "../missing".out'
    )
    src = write(tmp_path / "clf", "clf.wgt", text)
    with pytest.raises(LayerImportError) as info:
        build_wgt(src, tmp_path / "clf" / "out", resolver=_resolver(xor_artifact), name="clf.wgt")
    assert [e.pos.line for e in info.value.errors] == [13, 23]
