"""Where is my file: ``list -m --json`` dirs, ``wgtpm path``, ``get --print-paths``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_get import graph, pub  # noqa: F401  (the fixture)

A = "github.com/acme/a"
B = "github.com/acme/b"


@pytest.fixture
def got(wgtpm, tree, project: Path, graph, monkeypatch) -> Path:  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    return project


def test_list_json_gives_each_modules_directory(wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("list", "-m", "--json", "all", cwd=got)
    assert r.code == 0, r.err
    rows = {row["path"]: row for row in json.loads(r.out)}
    assert rows["example.com/app"]["dir"] == str(got)
    b = Path(rows[B]["dir"])
    assert (b / "b" / "weights.bin").read_bytes() == f"{B}@v0.2.0".encode() * 50


def test_path_of_module_file_and_main(wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("path", B, cwd=got)
    assert r.code == 0, r.err
    d = Path(r.out.strip())
    assert d.is_dir() and d.is_absolute()
    r = wgtpm("path", f"{B}/b/weights.bin", cwd=got)
    assert r.code == 0 and Path(r.out.strip()) == d / "b" / "weights.bin"
    r = wgtpm("path", "example.com/app/wgt.mod", cwd=got)
    assert r.code == 0 and Path(r.out.strip()) == got / "wgt.mod"
    r = wgtpm("path", f"{B}/nothere", cwd=got)
    assert r.code == 1 and "has no file or artifact 'nothere'" in r.err
    r = wgtpm("path", "github.com/acme/zzz", cwd=got)
    assert r.code == 1 and "not in the build list" in r.err
    r = wgtpm("path", "--json", B, cwd=got)
    assert json.loads(r.out)["path"] == str(d)
    r = wgtpm("path", "--json", "github.com/acme/zzz", cwd=got)
    assert r.code == 1 and json.loads(r.out)["error"]["kind"] == "usage"


def test_path_downloads_a_module_not_yet_cached(wgtpm, got: Path, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WGTPM_CACHE", str(tmp_path / "fresh"))
    r = wgtpm("path", f"{B}/b/weights.bin", cwd=got)
    assert r.code == 0, r.err
    assert Path(r.out.strip()).is_file()


def test_get_print_paths(wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("get", "--print-paths", f"{B}@v0.3.0", cwd=got)
    assert r.code == 0, r.err
    (line,) = r.out.splitlines()
    assert (Path(line) / "b" / "weights.bin").read_bytes() == f"{B}@v0.3.0".encode() * 50
    r = wgtpm("get", "--print-paths", cwd=got)
    assert len(r.out.splitlines()) == 3
