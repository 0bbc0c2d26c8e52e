"""The license a package's wgt.mod declares goes into its release's provenance (under h1)
and its Hugging Face model card (issue 28)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.publish.conftest import commit_all, make_package
from wgtpm.publish import PROVENANCE_FILE
from wgtpm.publish._target import Release
from wgtpm.publish.huggingface import model_card


def test_the_provenance_carries_the_license(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "p", "example.com/acme/p", {"@artifacts": "notes notes.txt", "notes.txt": "hi\n"}
    )
    with open(pkg / "wgt.mod", "a") as f:
        f.write('license "MIT OR Apache-2.0"\n')
    commit_all(pkg, "license")
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    (prov,) = (pkg / "dist").rglob(PROVENANCE_FILE)
    assert json.loads(prov.read_text())["license"] == "MIT OR Apache-2.0"


def test_a_package_without_license_has_none_in_its_provenance(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "p", "example.com/acme/p", {"@artifacts": "notes notes.txt", "notes.txt": "hi\n"}
    )
    assert wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg).code == 0
    (prov,) = (pkg / "dist").rglob(PROVENANCE_FILE)
    assert "license" not in json.loads(prov.read_text())


def _release(tmp_path: Path, mod: str) -> Release:
    (tmp_path / "wgt.mod").write_text(mod)
    return Release(
        module="hf.co/acme/tiny",
        version="v0.1.0",
        commit=None,
        files={"wgt.mod": tmp_path / "wgt.mod"},
        index=b"{}",
        h1="h1:x",
        mod_h1="h1:y",
    )


def test_the_model_card_states_the_license(tmp_path: Path) -> None:
    card = model_card(_release(tmp_path, "module hf.co/acme/tiny\nlicense Apache-2.0\n"), [])
    assert b'\nlicense: "apache-2.0"\n' in card.split(b"\n---\n")[0] + b"\n"
    card = model_card(_release(tmp_path, 'module hf.co/acme/tiny\nlicense "MIT OR X"\n'), [])
    assert b'\nlicense: other\nlicense_name: "MIT OR X"\n' in card
    card = model_card(_release(tmp_path, "module hf.co/acme/tiny\n"), [])
    assert b"license" not in card
