"""The build of a release: from HEAD only, in dependency order, reproducible or refused.

- an artifact importing another artifact of the package by path builds after
  it, whatever wgt.mod's order;
- the build reads the commit, never the working directory (an ignored,
  uncommitted file is not seen);
- ``--verify-reproducible`` passes for a WeightLang model, and fails for a
  build step that reads differently the second time (a verbatim artifact
  changed in the second export), naming the file and the first differing
  offset;
- a verbatim artifact ships the copy its build made, not the source read again.

A source committed as a link out of the package (to the kernel's random UUID,
say) is refused before it is built: test_contain.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, make_package

pytestmark = pytest.mark.slow

USES_XOR = (
    base_wgt()
    .replace("model xor", "model head")
    .replace("layer p = sigmoid", 'layer p = sigmoid\n\nimport h1 from "build/xor".h1 freeze')
)


def test_an_artifact_builds_after_the_one_it_imports(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "two",
        "example.com/acme/two",
        {
            "@artifacts": "head head.wgt;xor model.wgt",  # head first in wgt.mod
            "head.wgt": USES_XOR,
            "model.wgt": base_wgt(),
            ".gitignore": "secret.txt\n",
        },
    )
    (pkg / "secret.txt").write_text("not committed\n")
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    assert r.err.index("building artifact xor") < r.err.index("building artifact head")
    rel = pkg / "dist/example.com/acme/two/@v/v0.1.0"
    head = json.loads((rel / "head/manifest.json").read_text())
    xor = json.loads((rel / "xor/manifest.json").read_text())
    assert head["imports"][0]["source_weights_sha256"] == xor["weights"]["sha256"]
    assert not (rel / "secret.txt").exists()


def test_verify_reproducible_passes(wgtpm, base_pkg: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", "--verify-reproducible", cwd=base_pkg)
    assert r.code == 0, r.err
    assert "reproducible: both builds wrote the same bytes" in r.err
    # training progress as 'wgtpm build' shows it: the first and last epoch of each build
    epochs = [line for line in r.err.splitlines() if ": epoch " in line]
    assert [e.split(" loss ")[0] for e in epochs] == 2 * [
        "wgtpm: train xor: epoch 1/5",
        "wgtpm: train xor: epoch 5/5",
    ]


def test_verify_reproducible_names_the_file_that_differs(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build step that reads differently the second time. A source outside the commit
    (a link to /proc/sys/kernel/random/uuid) is refused now (test_contain.py), so the
    second export's stamp.txt is changed after ``git archive`` wrote it."""
    from wgtpm.publish import _publish

    export = _publish.export_commit

    def unstable_export(checkout, dest: Path) -> Path:  # type: ignore[no-untyped-def]
        src = export(checkout, dest)
        if dest.name == "b":  # the second export, of --verify-reproducible
            (src / "stamp.txt").write_text("stamp 2\n")
        return src

    monkeypatch.setattr(_publish, "export_commit", unstable_export)
    pkg = make_package(
        tmp_path / "nd",
        "example.com/acme/nd",
        {
            "@artifacts": "xor model.wgt;stamp stamp.txt",
            "model.wgt": base_wgt(),
            "stamp.txt": "stamp 1\n",
        },
    )
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", "--verify-reproducible", cwd=pkg)
    assert r.code == 1
    assert r.err.strip().splitlines()[-1] == (
        "wgtpm: not reproducible: stamp.txt differs between two builds of the same commit, "
        "first at byte offset 6; make its build step deterministic"
    )
    assert not (pkg / "dist").exists()  # nothing was written


def test_a_verbatim_artifact_ships_the_bytes_its_build_read(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The source is read once, by the build: what is hashed and shipped is that copy, even
    when the source changes after the build (before, the release read it again). Here it
    is changed in the export once everything is built."""
    from wgtpm.index import parse as parse_index
    from wgtpm.publish import _publish

    build = _publish.build_package

    def build_then_change(pkg: Path, *args, **kwargs):  # type: ignore[no-untyped-def]
        built = build(pkg, *args, **kwargs)
        (pkg / "stamp.txt").write_text("changed after the build\n")
        return built

    monkeypatch.setattr(_publish, "build_package", build_then_change)
    pkg = make_package(
        tmp_path / "nd",
        "example.com/acme/nd",
        {"@artifacts": "stamp stamp.txt", "stamp.txt": "as built\n"},
    )
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    vdir = pkg / "dist/example.com/acme/nd/@v"
    index = parse_index((vdir / "v0.1.0.index.json").read_bytes(), "example.com/acme/nd", "v0.1.0")
    shipped = (vdir / "v0.1.0/stamp.txt").read_bytes()
    entry = index.entry("stamp.txt")
    assert shipped == b"as built\n"
    assert entry is not None and hashlib.sha256(shipped).hexdigest() == entry.sha256
