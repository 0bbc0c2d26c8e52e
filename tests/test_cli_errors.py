"""The CLI's last line of defence: one clear line, never a traceback unless asked for."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest


def test_chdir_to_a_missing_directory(tmp_path: Path, wgtpm) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("-C", str(tmp_path / "nope"), "list", "-m")
    assert r.code == 1
    assert r.err == f"wgtpm: -C {tmp_path / 'nope'}: No such file or directory\n"


def _boom(*args: object, **kw: object) -> None:
    raise RuntimeError("the parser fell over\nsecond line")


def test_internal_error_is_one_line_without_traceback(
    project: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("wgtpm.modfile.parse", _boom)
    r = wgtpm("list", "-m", cwd=project)
    assert r.code == 70
    assert "Traceback" not in r.err
    assert r.err.splitlines()[0] == "wgtpm: internal error: RuntimeError: the parser fell over"
    assert "WGTPM_DEBUG=1" in r.err


def test_internal_error_traceback_under_debug(
    project: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("wgtpm.modfile.parse", _boom)
    monkeypatch.setenv("WGTPM_DEBUG", "1")
    r = wgtpm("list", "-m", cwd=project)
    assert r.code == 70
    assert "Traceback" in r.err and "_boom" in r.err


def _full_disk(*args: object, **kw: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_os_error_without_a_file_name(
    project: Path, wgtpm, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("wgtpm.modfile.parse", _full_disk)
    r = wgtpm("list", "-m", cwd=project)
    assert r.code == 1
    assert r.err == "wgtpm: No space left on device\n"


@pytest.mark.parametrize("args", [["help"], ["list", "-m", "all"]])
def test_a_reader_of_stdout_that_left_gets_silence(project: Path, args: list[str]) -> None:
    """``wgtpm list -m all | head -1``: once the reader has gone, wgtpm stops without a
    word (no 'Broken pipe' line, no 'Exception ignored' from the exit flush), 141."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)  # the reader left before the first byte
    try:
        done = subprocess.run(
            [sys.executable, "-m", "wgtpm", *args],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            cwd=project,
            timeout=120,
        )
    finally:
        os.close(w)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (
            ["build", "-mod=vendor"],
            "wgtpm build reads -mod from WGTFLAGS: WGTFLAGS=-mod=vendor wgtpm build",
        ),
        (["run", "x", "--input", "1", "--mod=readonly"], "WGTFLAGS=-mod=readonly wgtpm run"),
        (["build", "-mod", "vendor"], "WGTFLAGS=-mod=MODE wgtpm build"),
    ],
)
def test_a_mod_flag_where_the_command_has_none_names_wgtflags(
    wgtpm, project: Path, capsys, args: list[str], hint: str
) -> None:  # type: ignore[no-untyped-def]
    """The module commands take -mod; the builders read it from WGTFLAGS (README: -mod=vendor
    builds from vendor/), and their usage error says so."""
    with pytest.raises(SystemExit) as exc:
        wgtpm(*args, cwd=project)
    assert exc.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"wgtpm {args[0]}: error: unrecognized arguments: ")
    assert last.endswith(hint)


def test_other_unknown_flags_get_no_wgtflags_hint(wgtpm, project: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        wgtpm("build", "--nope", cwd=project)
    assert capsys.readouterr().err.splitlines()[-1] == (
        "wgtpm build: error: unrecognized arguments: --nope"
    )


def test_build_of_a_package_without_artifacts_says_so_as_wgtpm(wgtpm, project: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("build", cwd=project)
    assert (r.code, r.out) == (0, "")
    assert r.err == "wgtpm: wgt.mod declares no artifacts; nothing to build\n"
