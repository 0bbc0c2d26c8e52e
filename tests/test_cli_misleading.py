"""Errors that used to mislead (issue 14), each with the message a user can act on."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.test_get import graph  # noqa: F401  (the fixture)

A = "github.com/acme/a"
B = "github.com/acme/b"


def test_newer_wgt_version_is_an_error(wgtpm, project: Path) -> None:  # type: ignore[no-untyped-def]
    (project / "wgt.mod").write_text("module example.com/app\nwgt 0.2\n")
    r = wgtpm("list", "-m", cwd=project)
    assert r.code == 1
    assert "wgt.mod:2:5: wgt 0.2 is newer than this wgtpm supports (wgt 0.1)" in r.err


def test_mod_edit_without_flags_says_so(wgtpm, project: Path) -> None:  # type: ignore[no-untyped-def]
    before = (project / "wgt.mod").read_bytes()
    r = wgtpm("mod", "edit", cwd=project)
    assert r.code == 1 and "no flags given" in r.err
    assert (project / "wgt.mod").read_bytes() == before
    assert wgtpm("mod", "edit", "-fmt", cwd=project).code == 0


@pytest.mark.usefixtures("graph")
def test_select_matching_nothing_warns(wgtpm, tree, project: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("mod", "edit", f"-select={B}=*.gguf", cwd=project)
    assert r.code == 0, r.err
    r = wgtpm("get", f"{B}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert (
        f"wgtpm: warning: select {B}=*.gguf matches no file of {B}@v0.1.0; its files: b/weights.bin"
        in r.err
    )
    r = wgtpm("mod", "edit", f"-select={B}=*.bin", cwd=project)
    r = wgtpm("get", cwd=project)
    assert r.code == 0 and "matches no file" not in r.err


def test_inspect_missing_build_path_is_not_doubled(wgtpm, project: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("inspect", "build/xor", cwd=project)
    assert r.code == 1
    assert "build/build" not in r.err and "not build/xor of the package" in r.err


@pytest.mark.usefixtures("graph")
def test_unwritable_project_names_wgt_sum_not_a_temp_file(  # type: ignore[no-untyped-def]
    wgtpm,
    tree,
    project: Path,
    monkeypatch,
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)

    def refuse(path: Path, data: bytes, mode: int | None = None) -> None:
        tmp = path.parent / f".{path.name}.x1y2z3.tmp"
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp))

    monkeypatch.setattr("wgtpm.modload.files.write_atomic", refuse)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 1
    assert r.err.strip().endswith("/wgt.mod: Permission denied") or r.err.strip().endswith(
        "/wgt.sum: Permission denied"
    ), r.err
    assert ".tmp" not in r.err


@pytest.mark.usefixtures("graph")
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WGTFLAGS": "-bogus"}, "WGTFLAGS"),
        ({"WGTPM_HTTP_RETRIES": "abc"}, "WGTPM_HTTP_RETRIES"),
    ],
)
def test_bad_settings_are_errors(env, message, wgtpm, project: Path, tree, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WGTPROXY", tree.url)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code != 0 and message in r.err and "internal error" not in r.err


def test_chdir_to_a_missing_directory(wgtpm) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("-C", "/nonexistent/dir", "list", "-m")
    assert r.code == 1 and "-C /nonexistent/dir:" in r.err


def test_registry_tokens_of_a_folder_with_no_registry(wgtpm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A --data with no registry in it (mistyped, or forgotten: the user data dir) is not
    quietly a new, empty registry: listing or revoking says so, and a token created there
    says it made the database that no server may be using yet."""
    pytest.importorskip("sqlalchemy")
    data = tmp_path / "reg"
    db = data / "registry.db"
    for args in (["list"], ["revoke", "0" * 16]):
        r = wgtpm("registry", "token", *args, "--data", str(data))
        assert (r.code, r.out) == (1, "")
        assert r.err == (
            f"wgtpm: no registry database at {db}: pass the --data (or --db) that "
            "'wgtpm registry serve' uses\n"
        )
        assert not data.exists()
    r = wgtpm("registry", "token", "create", "--prefix", "example.com", "--data", str(data))
    assert r.code == 0 and r.out.splitlines()[-1].startswith("wgt_")
    assert r.err == (
        f"wgtpm: there was no registry database at {db}: created it; "
        "'wgtpm registry serve' with the same --data (or --db) serves it\n"
    )
    r = wgtpm("registry", "token", "list", "--data", str(data))
    assert r.code == 0 and "example.com" in r.out and r.err == ""
