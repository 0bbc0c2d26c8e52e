"""A loaded artifact keeps its imported layers frozen as its build had them (issue 31)."""

from __future__ import annotations

from pathlib import Path

from wgtpm.weightlang.api import open_artifact
from wgtpm.weightlang.build import build_wgt

from .conftest import classifier, write
from .test_imports import BASE, _resolver


def test_a_frozen_imported_layer_loads_without_requires_grad(
    tmp_path: Path, xor_artifact: Path
) -> None:
    frozen = write(tmp_path, "f.wgt", classifier(f"import h1 from {BASE}/xor.h1 freeze"))
    build_wgt(frozen, tmp_path / "f", resolver=_resolver(xor_artifact))
    grads = {n: p.requires_grad for n, p in open_artifact(tmp_path / "f").module.named_parameters()}
    assert grads == {"h1.weight": False, "h1.bias": False, "out.weight": True, "out.bias": True}
    thawed = write(tmp_path, "t.wgt", classifier(f"import h1 from {BASE}/xor.h1"))
    build_wgt(thawed, tmp_path / "t", resolver=_resolver(xor_artifact))
    module = open_artifact(tmp_path / "t").module
    assert all(p.requires_grad for p in module.parameters())
