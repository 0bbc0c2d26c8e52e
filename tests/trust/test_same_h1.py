"""A WeightLang build records nothing of the machine that built it (docs/design.md section 13).

Its manifest is covered by h1; the torch and Python versions that built it go into the
SLSA statement instead. Two builds that differ only in those versions give the same bytes,
hence the same h1; the statement records each build's own versions.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest
import torch

from tests.weightlang.conftest import XOR, tree_hashes, write
from wgtpm import dirhash
from wgtpm.publish._provenance import tool_versions
from wgtpm.weightlang.build import build_wgt


def _h1(d: Path) -> str:
    return dirhash.hash1_bytes({p.name: p.read_bytes() for p in sorted(d.iterdir())})


def test_two_builds_differing_only_in_torch_and_python_give_one_h1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = write(tmp_path, "xor.wgt", XOR)
    build_wgt(src, tmp_path / "a" / "xor")
    monkeypatch.setattr(torch, "__version__", "9.9.9+elsewhere")
    monkeypatch.setattr(platform, "python_version", lambda: "3.99.0")
    build_wgt(src, tmp_path / "b" / "xor")
    assert tree_hashes(tmp_path / "b" / "xor") == tree_hashes(tmp_path / "a" / "xor")
    assert _h1(tmp_path / "b" / "xor") == _h1(tmp_path / "a" / "xor")
    manifest = json.loads((tmp_path / "b" / "xor" / "manifest.json").read_text())
    assert "built_with" not in manifest
    assert "9.9.9" not in json.dumps(manifest) and "3.99.0" not in json.dumps(manifest)
    # the versions are the SLSA statement's business (tool_versions feeds it)
    assert tool_versions()["python"] == "3.99.0"
