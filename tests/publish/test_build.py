"""The build of a release: from HEAD only, in dependency order, reproducible or refused.

- an artifact importing another artifact of the package by path builds after
  it, whatever wgt.mod's order;
- the build reads the commit, never the working directory (an ignored,
  uncommitted file is not seen);
- ``--verify-reproducible`` passes for a WeightLang model, and fails for a
  real nondeterminism: a verbatim artifact committed as a symlink to the
  kernel's random UUID, which reads differently every time, naming the file
  and the first differing offset.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, make_package

pytestmark = pytest.mark.slow

UUID = Path("/proc/sys/kernel/random/uuid")

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


@pytest.mark.skipif(not UUID.exists(), reason="needs Linux's /proc/sys/kernel/random/uuid")
def test_verify_reproducible_names_the_file_that_differs(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = make_package(
        tmp_path / "nd",
        "example.com/acme/nd",
        {"@artifacts": "xor model.wgt;stamp stamp.txt", "model.wgt": base_wgt()},
        commit=False,
    )
    (pkg / "stamp.txt").symlink_to(UUID)  # committed as a symlink: its bytes change per read
    from tests.publish.conftest import commit_all

    commit_all(pkg, "a stamp")
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", "--verify-reproducible", cwd=pkg)
    assert r.code == 1
    last = r.err.strip().splitlines()[-1]
    assert "not reproducible: stamp.txt differs" in last and "byte offset" in last
    assert not (pkg / "dist").exists()  # nothing was written


@pytest.mark.skipif(not UUID.exists(), reason="needs Linux's /proc/sys/kernel/random/uuid")
def test_a_verbatim_artifact_ships_the_bytes_its_build_read(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The source is read once, by the build: what is hashed and shipped is that copy, even
    of a source that reads differently every time (before, the release read it again)."""
    from tests.publish.conftest import commit_all
    from wgtpm.index import parse as parse_index

    pkg = make_package(
        tmp_path / "nd", "example.com/acme/nd", {"@artifacts": "stamp stamp.txt"}, commit=False
    )
    (pkg / "stamp.txt").symlink_to(UUID)
    commit_all(pkg, "a stamp")
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    vdir = pkg / "dist/example.com/acme/nd/@v"
    index = parse_index((vdir / "v0.1.0.index.json").read_bytes(), "example.com/acme/nd", "v0.1.0")
    shipped = (vdir / "v0.1.0/stamp.txt").read_bytes()
    entry = index.entry("stamp.txt")
    assert entry is not None and hashlib.sha256(shipped).hexdigest() == entry.sha256
