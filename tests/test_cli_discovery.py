"""Finding modules: versions of any module, and "did you mean" for what people type."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_get import graph, pub  # noqa: F401  (the fixture)
from wgtpm.modget import path_hint

A = "github.com/acme/a"
B = "github.com/acme/b"


@pytest.mark.parametrize(
    ("arg", "fix"),
    [
        ("acme/repo", "hf.co/acme/repo"),
        ("acme/repo@v0.1.0", "hf.co/acme/repo@v0.1.0"),
        ("https://huggingface.co/acme/repo", "hf.co/acme/repo"),
        ("https://huggingface.co/acme/repo/tree/main", "hf.co/acme/repo@main"),
        ("https://hf.co/acme/repo", "hf.co/acme/repo"),
        ("https://github.com/o/r", "github.com/o/r"),
        ("https://github.com/o/r.git", "github.com/o/r"),
        ("https://github.com/o/r/releases/tag/v0.1.0", "github.com/o/r@v0.1.0"),
        ("github.com/o/r", None),
        ("github.com/o/r/sub", None),
        ("hf.co/acme/repo", None),
        ("example.com/x", None),
    ],
)
def test_path_hint(arg: str, fix: str | None) -> None:
    assert path_hint(arg) == fix


@pytest.mark.parametrize(
    ("arg", "fix"),
    [
        ("acme/repo", "hf.co/acme/repo"),
        ("https://huggingface.co/acme/repo", "hf.co/acme/repo"),
        ("https://github.com/o/r", "github.com/o/r"),
    ],
)
@pytest.mark.parametrize(
    "cmd", [["get"], ["list", "-m"], ["why"], ["list", "-m", "-versions"], ["path"]]
)
def test_did_you_mean_module_path(cmd, arg, fix, wgtpm, project: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm(*cmd, arg, cwd=project)
    assert r.code == 1
    assert f"did you mean {fix}?" in r.err


@pytest.fixture
def got(wgtpm, tree, project: Path, graph, monkeypatch) -> Path:  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    return project


def test_list_versions_of_a_module_outside_the_build_list(wgtpm, got: Path, tree) -> None:  # type: ignore[no-untyped-def]
    pub(tree, "github.com/acme/other", "v0.1.0")
    pub(tree, "github.com/acme/other", "v0.2.0")
    before = (got / "wgt.mod").read_bytes(), (got / "wgt.sum").read_bytes()
    r = wgtpm("list", "-m", "-versions", "github.com/acme/other", B, cwd=got)
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        f"{B} v0.1.0 v0.2.0 v0.3.0",
        "github.com/acme/other v0.1.0 v0.2.0",
    ]
    assert before == ((got / "wgt.mod").read_bytes(), (got / "wgt.sum").read_bytes())
    r = wgtpm("list", "-m", "github.com/acme/other", cwd=got)
    assert r.code == 1 and "wgtpm list -m -versions github.com/acme/other" in r.err
    r = wgtpm("list", "-m", "-versions", "github.com/acme/nothere", cwd=got)
    assert r.code == 1
    assert r.err == f"wgtpm: github.com/acme/nothere: not found in {tree.url}\n"  # as get says


def test_module_slash_artifact_where_a_module_was_expected(wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("list", "-m", f"{B}/b", cwd=got)
    assert r.code == 1 and f"did you mean {B}?" in r.err
    r = wgtpm("why", f"{B}/weights.bin", cwd=got)
    assert r.code == 0 and f"did you mean {B}?" in r.out
    r = wgtpm("get", f"{A}/a@v0.1.0", cwd=got)
    assert r.code == 1 and f"did you mean {A}?" in r.err, r.err
    # asked for on the command line: not shown as required by the main module
    r = wgtpm("get", "github.com/acme/zzz@v0.1.0", cwd=got)
    assert (
        r.code == 1 and "requires" not in r.err and "github.com/acme/zzz@v0.1.0: not found" in r.err
    )
