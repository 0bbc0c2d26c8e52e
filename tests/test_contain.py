""":mod:`wgtpm._contain`: which paths a package build may read, on a real directory tree.

The tree (``pkg`` is the package, ``out`` lies beside it)::

    pkg/sub/in.txt            a file
    pkg/ok -> sub/in.txt      a link inside: allowed
    pkg/sub/back -> ../sub    a link to a directory inside: allowed, and walked once
    pkg/env -> /proc/self/environ, pkg/up -> ../out/x, pkg/outdir -> ../out,
    pkg/null -> /dev/null, pkg/gone -> ../out/none, pkg/loop -> loop, pkg/fifo (a named pipe)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wgtpm._contain import dir_escape_problem, escape_problem, resolve_inside
from wgtpm._errors import BuildError

OUT = "outside the package: commit the file itself, not a link out of the package"


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    pkg, out = tmp_path / "pkg", tmp_path / "out"
    (pkg / "sub").mkdir(parents=True)
    out.mkdir()
    (out / "x").write_text("secret\n")
    (pkg / "sub/in.txt").write_text("in\n")
    links = {
        "ok": "sub/in.txt",
        "sub/back": "../sub",
        "env": "/proc/self/environ",
        "up": "../out/x",
        "outdir": "../out",
        "null": "/dev/null",
        "gone": "../out/none",
        "loop": "loop",
    }
    for name, target in links.items():
        (pkg / name).symlink_to(target)
    os.mkfifo(pkg / "fifo")
    return pkg


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("sub/in.txt", None),
        ("ok", None),
        ("sub/back/in.txt", None),
        ("sub/../ok", None),
        ("missing.txt", None),  # the caller's read reports it
        ("sub", None),  # a directory: the caller's read reports it
        ("env", f"is a symlink to /proc/self/environ, {OUT}"),
        ("up", f"is a symlink to ../out/x, {OUT}"),
        ("outdir/x", f"lies under the symlink outdir to ../out, {OUT}"),
        ("null", f"is a symlink to /dev/null, {OUT}"),
        ("gone", f"is a symlink to ../out/none, {OUT}"),
        ("loop", "is a symlink that loops; commit the file itself"),
        ("fifo", "is a named pipe, not a regular file: commit the file itself"),
        ("../out/x", "lies outside the package: move it into the package"),
        ("/etc/hostname", "lies outside the package: move it into the package"),
    ],
)
def test_escape_problem(pkg: Path, rel: str, why: str | None) -> None:
    assert escape_problem(pkg, pkg / rel) == why


def test_resolve_inside_names_the_file_as_written(pkg: Path) -> None:
    assert resolve_inside(pkg, pkg / "ok", "ok") == (pkg / "sub/in.txt").resolve()
    with pytest.raises(BuildError) as info:
        resolve_inside(pkg, pkg / "up", "data/up.csv")
    assert str(info.value) == f"data/up.csv is a symlink to ../out/x, {OUT}"


def test_dir_escape_problem_walks_through_links_once(pkg: Path) -> None:
    assert dir_escape_problem(pkg, pkg / "sub") is None  # sub/back -> ../sub ends
    assert dir_escape_problem(pkg, pkg / "missing") is None
    found = dir_escape_problem(pkg, pkg)
    assert found is not None and found[0].parent == pkg
    assert dir_escape_problem(pkg, pkg / "outdir") == (
        pkg / "outdir",
        f"is a symlink to ../out, {OUT}",
    )
