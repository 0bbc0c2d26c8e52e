"""Every command a script calls takes ``--json``: its stdout parses, keys are lower case,
and an error is one ``{"error": {"message", "kind"}}`` object on stdout."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.test_get import graph  # noqa: F401  (the fixture)

A = "github.com/acme/a"
B = "github.com/acme/b"


@pytest.fixture
def got(wgtpm, tree, project: Path, graph, monkeypatch) -> Path:  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    return project


def _keys(doc: Any) -> set[str]:
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _keys(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _keys(v)}
    return set()


COMMANDS = [
    ["get", "--json"],
    ["get", "--json", f"{B}@v0.3.0"],
    ["list", "-m", "--json", "all"],
    ["list", "-m", "-versions", "--json", B],
    ["graph", "--json"],
    ["why", "--json", B],
    ["tidy", "--json"],
    ["verify", "--json"],
    ["vendor", "--json"],
    ["mod", "edit", "-json"],
    ["path", "--json", B],
    ["cache", "dir", "--json"],
    ["cache", "verify", "--json"],
    ["cache", "gc", "--json"],
    ["cache", "clean", "--json"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_json_parses_with_lower_case_keys(argv: list[str], wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm(*argv, cwd=got)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert all(k == k.lower() for k in _keys(doc)), _keys(doc)


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["get", "--json", "github.com/acme/zzz@v0.1.0"], "not_found"),
        (["get", "--json", "acme/repo"], "usage"),
        (["list", "-m", "--json", "github.com/acme/zzz"], "usage"),
        (["why", "--json", "https://github.com/o/r"], "usage"),
        (["graph", "--json"], "readonly"),
    ],
)
def test_json_errors(argv: list[str], kind: str, wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    if kind == "readonly":
        (got / "wgt.sum").unlink()
    r = wgtpm(*argv, cwd=got)
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["error"]["kind"] == kind
    assert doc["error"]["message"] and doc["error"]["message"] in r.err


def test_cache_verify_fix_repairs_one_entry(wgtpm, got: Path) -> None:  # type: ignore[no-untyped-def]
    r = wgtpm("path", f"{B}/b/weights.bin", cwd=got)
    bad = Path(r.out.strip())
    good = Path(wgtpm("path", f"{A}/a/weights.bin", cwd=got).out.strip())
    os.chmod(bad, stat.S_IWUSR | stat.S_IRUSR)
    bad.write_bytes(b"rotten")  # the blob and its tree link share the inode
    r = wgtpm("cache", "verify", cwd=got)
    assert r.code == 1 and "does not match" in r.err
    r = wgtpm("cache", "verify", "--fix", "--json", cwd=got)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["fixed"] and not doc["ok"] and len(doc["removed"]) == 2
    assert "wgtpm get" in r.err
    assert not bad.exists() and good.is_file()  # the rest of the cache stays
    r = wgtpm("cache", "verify", cwd=got)
    assert r.code == 0 and "cache verified" in r.out
    r = wgtpm("get", cwd=got)  # the stamp sees the missing file; the full run fetches it
    assert r.code == 0, r.err
    assert bad.read_bytes() == f"{B}@v0.2.0".encode() * 50
    assert wgtpm("verify", cwd=got).code == 0


def _json_commands() -> set[str]:
    import argparse

    from wgtpm.cli import build_parser

    found: set[str] = set()

    def walk(p: argparse.ArgumentParser, words: str) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, child in a.choices.items():
                    walk(child, f"{words} {name}".strip())
            elif "--json" in a.option_strings:
                found.add(words)

    walk(build_parser(), "")
    return found


#: Where each command's --json output is parsed, for those tested outside this file.
ELSEWHERE = {
    "build": "tests/weightlang/test_cli_build.py",
    "check": "tests/weightlang/test_cli_build.py",
    "inspect": "tests/weightlang/test_cli.py",
    "paw validate": "tests/paw/test_cli_module_refs.py",
    "paw install": "tests/paw/test_cli_module_refs.py",
    "paw inspect": "tests/paw/test_cli.py",
    "paw compile": "tests/paw/test_mapper.py",
}


def test_every_json_flag_is_tested() -> None:
    here = {
        " ".join(w for w in argv if not w.startswith("-")).split(" github")[0] for argv in COMMANDS
    }
    here = {h.strip() for h in here}
    root = Path(__file__).parent.parent
    for cmd, where in ELSEWHERE.items():
        assert "--json" in (root / where).read_text(), (cmd, where)
    assert _json_commands() <= here | set(ELSEWHERE), _json_commands() - here - set(ELSEWHERE)


@pytest.mark.parametrize(
    "argv",
    [
        ["get", "--json", "--bogus"],
        ["list", "-m", "--json", "-versions=3"],
        ["cache", "gc", "-json", "x"],
    ],
)
def test_usage_errors_under_json_are_json_too(argv: list[str], wgtpm, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:
        wgtpm(*argv)
    assert exit_.value.code == 2
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["error"]["kind"] == "usage" and "usage: wgtpm " in cap.err
