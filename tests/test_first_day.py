"""What a new user types on the first day and expects to work (issue 31, "Commands a new
user expected to work"): Go's and ``hf download``'s habits, typos answered with a hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_get import graph  # noqa: F401  (a fixture)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory with no wgt.mod at or above it."""
    d = tmp_path / "anywhere"
    d.mkdir()
    return d


def test_get_print_paths_outside_a_project(wgtpm, tree, graph, outside, monkeypatch) -> None:  # noqa: F811
    """As ``hf download`` and ``go install M@V``: a temporary main module, nothing written here."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", "--print-paths", "github.com/acme/a@v0.1.0", cwd=outside)
    assert r.code == 0, r.err
    (line,) = r.out.splitlines()
    assert (Path(line) / "wgt.mod").read_bytes() == graph["a1"]["wgt.mod"]
    assert "added" not in r.err  # no wgt.mod of the user's was changed
    assert list(outside.iterdir()) == []
    r = wgtpm("get", cwd=outside)  # without a module named, there is nothing to do outside
    assert r.code == 1 and "no wgt.mod" in r.err


def test_list_versions_outside_a_project(wgtpm, tree, graph, outside, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("list", "-m", "-versions", "github.com/acme/b", cwd=outside)
    assert r.code == 0, r.err
    assert r.out == "github.com/acme/b v0.1.0 v0.2.0 v0.3.0\n"
    r = wgtpm("list", "-m", "-versions", "--json", "github.com/acme/b", cwd=outside)
    assert json.loads(r.out) == [
        {"path": "github.com/acme/b", "versions": ["v0.1.0", "v0.2.0", "v0.3.0"]}
    ]
    assert list(outside.iterdir()) == []
    r = wgtpm("list", "-m", "all", cwd=outside)  # a build list needs a project
    assert r.code == 1 and "no wgt.mod" in r.err


def test_init_accepts_a_name_without_a_dot(wgtpm, tree, graph, outside, monkeypatch) -> None:  # noqa: F811
    """As ``go mod init example``: a main module nobody fetches needs no host name."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("init", "example", cwd=outside)
    assert r.code == 0, r.err
    assert (outside / "wgt.mod").read_text() == "module example\nwgt 0.1\n"
    assert wgtpm("get", "github.com/acme/c@v0.1.0", cwd=outside).code == 0
    assert "require github.com/acme/c v0.1.0" in (outside / "wgt.mod").read_text()
    # a dependency still needs a host name
    (outside / "wgt.mod").write_text("module example\nwgt 0.1\nrequire acme/xor v0.1.0\n")
    r = wgtpm("list", "-m", cwd=outside)
    assert r.code == 1 and "host name with a dot" in r.err


def test_init_writes_a_gitignore_for_build_outputs(wgtpm, outside) -> None:
    r = wgtpm("init", "example.com/app", cwd=outside)
    assert r.code == 0, r.err
    assert (outside / ".gitignore").read_text() == "build/\ndist/\n"
    other = outside / "other"
    other.mkdir()
    (other / ".gitignore").write_text("*.pyc\n/build")  # the user's own lines stay
    assert wgtpm("init", "example.com/other", cwd=other).code == 0
    assert (other / ".gitignore").read_text() == "*.pyc\n/build\ndist/\n"
