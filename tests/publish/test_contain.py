"""A package builds and publishes only its own files: links out of it are refused.

Each case is a real git repository made here, built with ``wgtpm build`` and
published with ``wgtpm publish --dry-run``:

- an ``artifact`` file committed as a link to ``/proc/self/environ`` (the
  publisher's tokens) or to a file beside the repository: one line naming it,
  at build and at publish, and nothing of it in any output or ``dist/``;
- a WeightLang ``data x from "..."`` file linked out of the package: the
  ``.wgt``'s position and the data file;
- ``wgt.mod`` itself linked out of the package, and a ``.wgt`` importing an
  artifact directory from outside the package by path: refused at publish;
- a link that stays inside the package still builds and ships its bytes;
- ``verify --rebuild`` of a release whose commit holds such a link refuses it
  too (a release made by a wgtpm that did not check, as in test_repository.py);
- a dry run does not write its proxy tree through a committed ``dist`` link.

A committed ``build/`` link is refused by publish and rebuild in test_repository.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.publish.conftest import base_wgt, commit_all, git, make_package

pytestmark = pytest.mark.slow

ENVIRON = Path("/proc/self/environ")
#: Set in the environment of the tests below: it must never appear in any output.
CANARY = "wgtpm-canary-3f9a-never-published"

DATA_WGT = base_wgt().replace(
    "train data=xor", 'data more from "more.csv" targets=1\n\ntrain data=more'
)
ROWS = "a,b,y\n0,0,0\n0,1,1\n1,0,1\n1,1,0\n"


@pytest.fixture(autouse=True)
def _canary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WGTPM_TEST_SECRET", CANARY)
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)


def _linked(tmp_path: Path, files: dict[str, str], links: dict[str, Path | str]) -> Path:
    """A package at ``tmp_path/pkg`` with ``files`` and ``links`` (name -> target), committed."""
    pkg = make_package(tmp_path / "pkg", "example.com/acme/p", dict(files), commit=False)
    for name, target in links.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).symlink_to(target)
    commit_all(pkg, "links")
    return pkg


def _leaked(root: Path) -> list[Path]:
    """The files under ``root`` (links not followed) that hold the canary."""
    out = []
    for base, _, names in os.walk(root):
        for name in names:
            p = Path(base, name)
            if not p.is_symlink() and CANARY.encode() in p.read_bytes():
                out.append(p)
    return out


def _refused(wgtpm, pkg: Path, *args: str) -> str:  # type: ignore[no-untyped-def]
    """Run ``wgtpm ARGS`` in ``pkg``: it must fail with one line, and leak nothing."""
    r = wgtpm(*args, cwd=pkg)
    assert r.code == 1 and r.out == "", r.err
    assert CANARY not in r.err
    return str(r.err.strip().splitlines()[-1])


@pytest.mark.skipif(not ENVIRON.exists(), reason="needs Linux's /proc/self/environ")
def test_an_artifact_linked_to_the_environment_is_refused(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = _linked(tmp_path, {"@artifacts": "vocab data/vocab.json"}, {"data/vocab.json": ENVIRON})
    want = (
        "wgtpm: artifact vocab: data/vocab.json is a symlink to /proc/self/environ, outside "
        "the package: commit the file itself, not a link out of the package"
    )
    assert _refused(wgtpm, pkg, "build") == want
    assert _refused(wgtpm, pkg, "publish", "--version", "v0.1.0", "--dry-run") == want
    assert not (pkg / "dist").exists()
    assert not (pkg / "build/data/vocab.json").exists()
    assert _leaked(pkg) == []


def test_an_artifact_linked_out_of_the_repository_is_refused(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "outside.txt").write_text(f"private {CANARY}\n")
    pkg = _linked(
        tmp_path,
        {"@artifacts": "xor model.wgt;notes notes.txt", "model.wgt": base_wgt()},
        {"notes.txt": Path("../outside.txt")},
    )
    want = (
        "wgtpm: artifact notes: notes.txt is a symlink to ../outside.txt, outside the package: "
        "commit the file itself, not a link out of the package"
    )
    assert _refused(wgtpm, pkg, "build", "notes") == want
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 1 and r.err.strip().splitlines()[-1] == want
    assert "building artifact" not in r.err  # refused before anything was built
    assert not (pkg / "dist").exists()
    assert _leaked(pkg) == []


def test_a_weightlang_data_file_linked_out_is_refused(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "rows.csv").write_text(ROWS)
    pkg = _linked(
        tmp_path,
        {"@artifacts": "xor model.wgt", "model.wgt": DATA_WGT},
        {"more.csv": tmp_path / "rows.csv"},
    )
    line = DATA_WGT.splitlines().index('data more from "more.csv" targets=1') + 1
    want = (
        f'wgtpm: model.wgt:{line}:16: data more: "more.csv" is a symlink to '
        f"{tmp_path / 'rows.csv'}, outside the package: commit the file itself, "
        "not a link out of the package"
    )
    assert _refused(wgtpm, pkg, "build") == want
    assert not (pkg / "build/xor").exists()
    assert _refused(wgtpm, pkg, "publish", "--version", "v0.1.0", "--dry-run") == want
    assert not (pkg / "dist").exists()


@pytest.mark.skipif(not ENVIRON.exists(), reason="needs Linux's /proc/self/environ")
def test_a_weightlang_data_file_linked_to_the_environment_is_not_echoed(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """Before, the environment was read and parsed as rows of numbers."""
    pkg = _linked(
        tmp_path, {"@artifacts": "xor model.wgt", "model.wgt": DATA_WGT}, {"more.csv": ENVIRON}
    )
    last = _refused(wgtpm, pkg, "build")
    assert last.endswith(
        'data more: "more.csv" is a symlink to /proc/self/environ, outside '
        "the package: commit the file itself, not a link out of the package"
    )


def test_wgt_mod_linked_out_of_the_package_is_refused(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "elsewhere.mod").write_text("module example.com/acme/p\nwgt 0.1\n")
    pkg = make_package(tmp_path / "pkg", "example.com/acme/p", {"a.txt": "a\n"}, commit=False)
    (pkg / "wgt.mod").unlink()
    (pkg / "wgt.mod").symlink_to(tmp_path / "elsewhere.mod")
    commit_all(pkg, "a linked wgt.mod")
    assert _refused(wgtpm, pkg, "publish", "--version", "v0.1.0", "--dry-run") == (
        f"wgtpm: wgt.mod is a symlink to {tmp_path / 'elsewhere.mod'}, outside the package: "
        "commit the file itself, not a link out of the package"
    )
    assert not (pkg / "dist").exists()


def test_an_import_by_path_from_outside_the_package_is_refused_at_publish(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    enc = make_package(
        tmp_path / "enc",
        "example.com/acme/enc",
        {"@artifacts": "xor model.wgt", "model.wgt": base_wgt()},
    )
    assert wgtpm("build", cwd=enc).code == 0
    head = (
        base_wgt()
        .replace("model xor", "model head")
        .replace("layer p = sigmoid", 'layer p = sigmoid\n\nimport h1 from "../enc/build/xor".h1')
    )
    pkg = make_package(
        tmp_path / "pkg", "example.com/acme/p", {"@artifacts": "head head.wgt", "head.wgt": head}
    )
    assert wgtpm("build", cwd=pkg).code == 0  # a local build may read a sibling's build/
    assert _refused(wgtpm, pkg, "publish", "--version", "v0.1.0", "--dry-run") == (
        'wgtpm: artifact head: head.wgt imports from "../enc/build/xor", which lies outside the '
        "package: move it into the package, or import it from a module by its path: a release "
        "builds from the package alone"
    )


def test_a_link_inside_the_package_still_builds_and_ships_its_bytes(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pkg = _linked(
        tmp_path,
        {
            "@artifacts": "xor model.wgt;vocab data/vocab.json",
            "model.wgt": DATA_WGT,
            "shared/rows.csv": ROWS,
            "shared/vocab.json": '{"a": 1}\n',
        },
        {"more.csv": Path("shared/rows.csv"), "data/vocab.json": Path("../shared/vocab.json")},
    )
    r = wgtpm("build", cwd=pkg)
    assert r.code == 0, r.err
    assert (pkg / "build/data/vocab.json").read_text() == '{"a": 1}\n'
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    rel = pkg / "dist/example.com/acme/p/@v/v0.1.0"
    assert (rel / "data/vocab.json").read_text() == '{"a": 1}\n'
    assert not (rel / "data/vocab.json").is_symlink()
    manifest = json.loads((rel / "xor/manifest.json").read_text())
    assert manifest["data"]["more"]["rows"] == 4


def test_a_rebuild_refuses_a_commit_that_links_out(
    wgtpm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("hello world\n")
    pkg = _linked(
        tmp_path,
        {"@artifacts": "xor model.wgt;notes notes.txt", "model.wgt": base_wgt()},
        {"notes.txt": outside},
    )
    with monkeypatch.context() as m:
        # A release made by a wgtpm that did not check (or by another tool): only the
        # publish skips the check; the rebuild below runs the real one.
        m.setattr("wgtpm._contain.escape_problem", lambda root, path: None)
        r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", cwd=pkg)
    assert r.code == 0, r.err
    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", (pkg / "dist").as_uri())
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    assert wgtpm("get", "example.com/acme/p@v0.1.0", cwd=app).code == 0

    r = wgtpm("verify", "--rebuild", "example.com/acme/p@v0.1.0", "--repo", str(pkg), cwd=app)
    assert r.code == 1 and r.out == "", r.err
    commit = git(pkg, "rev-parse", "HEAD")
    assert r.err.strip().splitlines()[-1] == (
        f"wgtpm: example.com/acme/p@v0.1.0: commit {commit[:12]}: artifact notes: notes.txt "
        f"is a symlink to {outside}, outside the package: commit the file itself, not a link "
        "out of the package"
    )
    assert "building artifact" not in r.err


def test_a_dry_run_refuses_a_dist_linked_out_of_the_package(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pkg = _linked(
        tmp_path, {"@artifacts": "notes notes.txt", "notes.txt": "hi\n"}, {"dist": elsewhere}
    )
    assert _refused(wgtpm, pkg, "publish", "--version", "v0.1.0", "--dry-run") == (
        f"wgtpm: dist leads out of the package through a symlink (to {elsewhere}), so the "
        "release would be written there: remove the link (git rm --cached dist if it is "
        "committed), or pass -o DIR"
    )
    assert list(elsewhere.iterdir()) == []
