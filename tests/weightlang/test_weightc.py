"""The prototype's command line: ``weightc`` as a front on wgtpm, single-file builds, --version."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from wgtpm import __version__
from wgtpm.cli._weightc import main as weightc_main
from wgtpm.cli._weightc import translate

from ..conftest import Result
from .conftest import write
from .prototype import GOLDEN, XOR_WGT


@pytest.fixture
def weightc(capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``weightc ARGS`` in-process in a directory; returns exit code and output."""

    def run(*args: str, cwd: Path | None = None) -> Result:
        capsys.readouterr()
        old = Path.cwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = weightc_main(list(args))
        finally:
            os.chdir(old)
        cap = capsys.readouterr()
        return Result(code, cap.out, cap.err)

    return run


@pytest.mark.parametrize(
    ("argv", "wgtpm"),
    [
        (["check", "m.wgt"], ["check", "m.wgt"]),
        (["build", "m.wgt"], ["build", "m.wgt", "-o", "build"]),
        (["build", "m.wgt", "-o", "out"], ["build", "m.wgt", "-o", "out"]),
        (["run", "build/xor", "--input", "[0, 1]"], ["run", "build/xor", "--input", "[0, 1]"]),
        (["inspect", "a", "--json"], ["inspect", "a", "--json"]),
        (["inspect", "a"], ["inspect", "a"]),
        (["verify", "a"], ["verify", "a"]),
        (["get"], ["-C", ".", "get"]),
        (["get", "pkg"], ["-C", "pkg", "get"]),
        (
            ["publish", "pkg", "--version", "v0.1.0", "-o", "out", "--allow-untrained"],
            ["-C", "pkg", "publish", "--version", "v0.1.0", "-o", "{cwd}/out", "--allow-untrained"],
        ),
        (
            ["publish", "pkg", "--version", "v0.1.0"],
            ["-C", "pkg", "publish", "--version", "v0.1.0", "-o", "{cwd}/dist"],
        ),
    ],
)
def test_translate(argv: list[str], wgtpm: list[str]) -> None:
    assert translate(argv) == [w.replace("{cwd}", os.getcwd()) for w in wgtpm]


def test_version_text(capsys: pytest.CaptureFixture[str]) -> None:
    from wgtpm.cli import main

    with pytest.raises(SystemExit):  # argparse's version action, as the prototype's
        weightc_main(["--version"])
    assert capsys.readouterr().out.strip() == f"weightc 0.1.0 (wgtpm {__version__})"
    assert main(["--version"]) == 0  # answered before argparse: a plain return
    assert capsys.readouterr().out.strip() == f"wgtpm {__version__}"


def test_weightc_build_run_inspect_verify(weightc: Any, tmp_path: Path) -> None:
    """The prototype's workflow on its own source gives the prototype's bytes."""
    src = write(tmp_path, "xor.wgt", XOR_WGT)
    assert weightc("check", "xor.wgt", cwd=tmp_path).code == 0
    r = weightc("build", "xor.wgt", cwd=tmp_path)
    assert r.code == 0, r.err
    built = tmp_path / "build" / "xor"
    assert (built / "weights.safetensors").read_bytes() == (
        GOLDEN / "xor" / "weights.safetensors"
    ).read_bytes()
    assert f"built {built.relative_to(tmp_path)} from xor.wgt: weights sha256" in r.out
    r = weightc("build", str(src), "-o", str(tmp_path / "elsewhere"))
    assert r.code == 0 and (tmp_path / "elsewhere" / "xor" / "manifest.json").is_file()
    r = weightc("run", "build/xor", "--input", "[[0, 1], [1, 1]]", cwd=tmp_path)
    assert r.code == 0, r.err
    assert [round(v[0]) for v in json.loads(r.out)["y"]] == [1, 0]
    r = weightc("inspect", "build/xor", "--json", cwd=tmp_path)
    assert json.loads(r.out)["format"] == "weightlang.artifact"
    assert weightc("verify", str(GOLDEN / "classifier")).code == 0


def test_weightc_errors_exit_1(weightc: Any, tmp_path: Path) -> None:
    r = weightc("verify", str(tmp_path))
    assert r.code == 1 and "no manifest.json" in r.err


def test_weightc_publish_writes_the_release_to_dist(
    weightc: Any, wgtpm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the prototype's ``publish -o dist``: the release lands in dist/, which wgtpm reads."""
    import subprocess

    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    pkg = tmp_path / "xor"
    pkg.mkdir()
    (pkg / "wgt.mod").write_text("module example.com/acme/xor\nwgt 0.1\n\nartifact xor xor.wgt\n")
    (pkg / "xor.wgt").write_text((GOLDEN / "xor" / "source.wgt").read_text())
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *cmd], cwd=pkg, check=True)
    r = weightc("publish", "xor", "--version", "v0.1.0", cwd=tmp_path)
    assert r.code == 0, r.err
    assert (tmp_path / "dist" / "example.com" / "acme" / "xor" / "@v" / "list").read_text() == (
        "v0.1.0\n"
    )
    app = tmp_path / "app"
    app.mkdir()
    (app / "wgt.mod").write_text("module example.com/app\nwgt 0.1\n")
    monkeypatch.setenv("WGTPROXY", (tmp_path / "dist").as_uri())
    r = wgtpm("get", "example.com/acme/xor@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    r = wgtpm("run", "example.com/acme/xor/xor", "--input", "[1, 0]", cwd=app)
    assert r.code == 0, r.err


def test_wgtpm_builds_a_single_file_outside_a_package(wgtpm: Any, tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "xor", tmp_path / "xor")
    src = write(tmp_path / "src", "clf.wgt", (GOLDEN / "classifier" / "source.wgt").read_text())
    r = wgtpm("build", "clf.wgt", "-o", "../out", cwd=tmp_path / "src")
    assert r.code == 0, r.err
    assert (tmp_path / "out" / "classifier" / "weights.safetensors").read_bytes() == (
        GOLDEN / "classifier" / "weights.safetensors"
    ).read_bytes()
    r = wgtpm("build", str(src), cwd=tmp_path)  # the default is build/MODEL
    assert r.code == 0 and (tmp_path / "build" / "classifier").is_dir()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-o", "out"), "-o DIR needs the .wgt files to build"),
        (("a.wgt", "labels"), "labels: not .wgt files"),
    ],
)
def test_single_file_build_usage(
    wgtpm: Any, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    r = wgtpm("build", *args, cwd=tmp_path)
    assert r.code == 1 and message in r.err


def test_console_scripts_point_at_main() -> None:
    import importlib

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    for name in ("wgtpm", "weightc"):
        module, _, func = scripts[name].partition(":")
        assert callable(getattr(importlib.import_module(module), func))
