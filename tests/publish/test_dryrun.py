"""``wgtpm publish --dry-run`` writes dist/, a proxy tree that ``wgtpm get`` reads back."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.publish.conftest import git
from wgtpm.index import parse as parse_index
from wgtpm.publish import PROVENANCE_FILE, check_provenance
from wgtpm.tensors import TABLES_FILE, compute_table, parse_tables

pytestmark = pytest.mark.slow


def test_dry_run_then_get(wgtpm, base_pkg: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=base_pkg)
    assert r.code == 0, r.err
    dist = base_pkg / "dist"
    vdir = dist / "example.com/acme/xor/@v"
    assert (vdir / "list").read_text() == "v0.1.0\n"
    index = parse_index((vdir / "v0.1.0.index.json").read_bytes(), "example.com/acme/xor", "v0.1.0")
    head = git(base_pkg, "rev-parse", "HEAD")
    assert index.commit == head
    epoch = int(git(base_pkg, "log", "-1", "--format=%ct"))
    assert index.time == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    paths = {e.path: e for e in index.files}
    assert set(paths) == {
        "wgt.mod",
        PROVENANCE_FILE,
        "xor/manifest.json",
        "xor/weights.safetensors",
        "xor/source.wgt",
        TABLES_FILE,
    }
    # the tensor tables are in the release, h1-locked, and describe its weights file
    published = vdir / "v0.1.0"
    tables = parse_tables((published / TABLES_FILE).read_bytes(), TABLES_FILE)
    weights = published / "xor/weights.safetensors"
    assert tables.files == {
        "xor/weights.safetensors": compute_table(weights, "xor/weights.safetensors")
    }
    assert tables.files["xor/weights.safetensors"].sha256 == paths["xor/weights.safetensors"].sha256
    assert paths["xor/weights.safetensors"].kind == "wgt"
    assert paths["xor/weights.safetensors"].artifact == "xor"
    prov = (vdir / "v0.1.0" / PROVENANCE_FILE).read_bytes()
    check_provenance(index, prov)
    doc = json.loads(prov)
    assert doc["artifacts"]["xor"]["seed"] == 0
    assert doc["tools"]["torch"] and doc["tools"]["wgtpm"]
    assert doc["files"]["xor/weights.safetensors"] == {"artifact": "xor", "kind": "wgt"}
    # the h1 and both wgt.sum lines are printed
    assert index.h1() in r.out
    assert f"example.com/acme/xor v0.1.0 {index.h1()}" in r.out
    assert "example.com/acme/xor v0.1.0/wgt.mod h1:" in r.out
    # the working directory was not built in, and no tag was made for a dry run
    assert not (base_pkg / "build").exists()
    assert git(base_pkg, "tag") == ""

    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", dist.absolute().as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    r = wgtpm("get", "example.com/acme/xor@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    sums = (app / "wgt.sum").read_text()
    assert f"example.com/acme/xor v0.1.0 {index.h1()}\n" in sums
    r = wgtpm("run", "example.com/acme/xor/xor", "--input", "[0, 1]", cwd=app)
    assert r.code == 0, r.err
    r = wgtpm("inspect", "example.com/acme/xor/xor/weights.safetensors", "--json", cwd=app)
    assert r.code == 0, r.err
    assert (
        json.loads(r.out)["tensors"] == tables.files["xor/weights.safetensors"].to_json()["tensors"]
    )


def test_same_bytes_again_is_a_noop_other_bytes_are_refused(wgtpm, base_pkg: Path) -> None:  # type: ignore[no-untyped-def]
    first = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=base_pkg)
    assert first.code == 0, first.err
    again = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=base_pkg)
    assert again.code == 0, again.err
    assert "already published" in again.out
    old_h1 = next(w for w in first.out.split() if w.startswith("h1:"))

    (base_pkg / "model.wgt").write_text(
        (base_pkg / "model.wgt").read_text().replace("seed 0", "seed 7")
    )
    git(base_pkg, "commit", "-qam", "other seed")
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=base_pkg)
    assert r.code == 1
    last = r.err.strip().splitlines()[-1]
    assert old_h1 in last and last.count("h1:") == 2, r.err  # both h1s named
    assert "immutable" in last


def test_a_package_in_a_subdirectory_gets_a_dir_tag(tmp_path: Path) -> None:
    from tests.publish.conftest import base_wgt, make_package
    from wgtpm._report import SILENT
    from wgtpm.publish import DirectoryTarget, PublishOptions, publish_package

    repo = make_package(tmp_path / "repo", "example.com/acme/repo", {"README.txt": "hi\n"})
    sub = repo / "models/xor"
    sub.mkdir(parents=True)
    (sub / "wgt.mod").write_text(
        "module example.com/acme/repo/models/xor\nwgt 0.1\n\nartifact xor model.wgt\n"
    )
    (sub / "model.wgt").write_text(base_wgt())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a model in a subdirectory")
    out = tmp_path / "out"
    done = publish_package(sub, PublishOptions("v0.1.0"), DirectoryTarget(out), SILENT)
    assert done.published.created and done.release.tag == "models/xor/v0.1.0"
    assert git(repo, "tag") == "models/xor/v0.1.0"
    assert (out / "example.com/acme/repo/models/xor/@v/v0.1.0/xor/weights.safetensors").is_file()
