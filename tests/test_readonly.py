"""Only ``get``, ``tidy`` and ``mod edit`` change wgt.mod and wgt.sum (Go since 1.16).

Every other command (``list -m all``, ``graph``, ``why``, ``verify``,
``vendor``, and the builders through :func:`wgtpm.modload.open_resolver`)
reads them: a wgt.sum line it needs and does not find is one line of error
naming the command that adds it, and both files stay byte for byte as they
were (a missing wgt.sum stays missing).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_get import h1, pub
from wgtpm import ReadonlyError
from wgtpm.modload import open_resolver

A = "github.com/acme/a"
B = "github.com/acme/b"
C = "github.com/acme/c"
FIX = "run 'wgtpm get' to add it"


@pytest.fixture
def graph(tree) -> dict[str, dict[str, bytes]]:  # type: ignore[no-untyped-def]
    """tests/test_get.py's graph: a v0.1.0 -> b v0.1.0, c v0.1.0; c v0.1.0 -> b v0.2.0."""
    out = {f"b{i}": pub(tree, B, f"v0.{i}.0") for i in (1, 2, 3)}
    out["c1"] = pub(tree, C, "v0.1.0", [f"{B} v0.2.0"])
    out["a1"] = pub(tree, A, "v0.1.0", [f"{B} v0.1.0", f"{C} v0.1.0"])
    return out


READ_ONLY = [
    ["list", "-m", "all"],
    ["graph"],
    ["why", B],
    ["verify"],
    ["vendor"],
]


@pytest.fixture
def got(wgtpm, tree, project: Path, graph, monkeypatch) -> Path:
    """A project that requires a v0.1.0 (-> b, c), after a successful ``wgtpm get``."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    return project


def _files(project: Path) -> tuple[bytes | None, ...]:
    return tuple(
        (project / n).read_bytes() if (project / n).exists() else None
        for n in ("wgt.mod", "wgt.sum")
    )


def _drop(project: Path, key: str) -> None:
    """Remove the wgt.sum line(s) of ``key`` ("module version[/wgt.mod]")."""
    p = project / "wgt.sum"
    lines = p.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not ln.startswith(key + " ")]
    assert len(kept) == len(lines) - 1
    p.write_text("".join(kept))


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_read_only_commands_refuse_a_missing_wgt_sum(wgtpm, got: Path, args: list[str]) -> None:
    (got / "wgt.sum").unlink()
    before = _files(got)
    r = wgtpm(*args, cwd=got)
    assert r.code == 1, r.err
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("wgtpm: missing wgt.sum entry for github.com/acme/"), r.err
    assert lines[0].endswith(f"; {FIX}"), r.err
    assert _files(got) == before  # not recreated, not even partly
    assert not (got / "vendor").exists()


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_read_only_commands_refuse_a_missing_wgt_mod_line(
    wgtpm, got: Path, args: list[str]
) -> None:
    _drop(got, f"{C} v0.1.0/wgt.mod")
    before = _files(got)
    r = wgtpm(*args, cwd=got)
    assert r.code == 1, r.err
    assert r.err == f"wgtpm: missing wgt.sum entry for {C}@v0.1.0/wgt.mod; {FIX}\n"
    assert _files(got) == before
    assert not (got / "vendor").exists()
    # The command it names adds exactly that line back, and the command then works.
    assert wgtpm("get", cwd=got).code == 0
    assert f"{C} v0.1.0/wgt.mod " in (got / "wgt.sum").read_text()
    assert wgtpm(*args, cwd=got).code == 0


def test_a_missing_module_line_fails_only_the_commands_that_need_the_files(
    wgtpm, got: Path, graph
) -> None:
    _drop(got, f"{B} v0.2.0")
    before = _files(got)
    for args in (["list", "-m", "all"], ["graph"], ["why", B]):  # the wgt.mod files suffice
        r = wgtpm(*args, cwd=got)
        assert r.code == 0, (args, r.err)
    for args in (["verify"], ["vendor"]):
        r = wgtpm(*args, cwd=got)
        assert r.code == 1, (args, r.err)
        want = f"missing wgt.sum entry for {B}@v0.2.0; {FIX}\n"  # verify: a problem line
        assert r.err.removeprefix("wgtpm: ") == want, args
    assert _files(got) == before
    assert wgtpm("get", cwd=got).code == 0
    assert f"{B} v0.2.0 {h1(graph['b2'])}" in (got / "wgt.sum").read_text()


def test_explicit_readonly_names_the_command_that_overrides_it(wgtpm, got: Path, monkeypatch):  # type: ignore[no-untyped-def]
    _drop(got, f"{C} v0.1.0/wgt.mod")
    before = _files(got)
    monkeypatch.setenv("WGTFLAGS", "-mod=readonly")
    r = wgtpm("get", cwd=got)
    assert r.code == 1
    assert r.err == (
        f"wgtpm: missing wgt.sum entry for {C}@v0.1.0/wgt.mod; -mod=readonly (from WGTFLAGS) "
        "forbids adding it; run 'wgtpm get -mod=mod' to add it\n"
    )
    monkeypatch.delenv("WGTFLAGS")
    r = wgtpm("list", "-m", "all", "-mod=readonly", cwd=got)
    assert r.err.endswith("; -mod=readonly forbids adding it; run 'wgtpm get -mod=mod' to add it\n")
    assert _files(got) == before
    assert wgtpm("get", "-mod=mod", cwd=got).code == 0
    assert _files(got) != before


@pytest.mark.parametrize("drop", [None, f"{C} v0.1.0 ", f"{B} v0.1.0/wgt.mod"])
def test_builders_resolver_is_read_only(got: Path, drop: str | None) -> None:
    """``build``, ``run``, ``inspect``, ``check`` and ``paw`` resolve modules through open_resolver."""
    if drop is None:
        (got / "wgt.sum").unlink()
    else:
        _drop(got, drop.rstrip())
    before = _files(got)
    with pytest.raises(
        ReadonlyError, match=r"^missing wgt\.sum entry for github\.com/acme/"
    ) as exc:
        r = open_resolver(got)
        for path in r.modules():
            r.module(path)
    assert str(exc.value).endswith(f"; {FIX}")
    assert _files(got) == before


def test_builders_resolver_saves_under_explicit_mod_mode(got: Path, monkeypatch) -> None:
    _drop(got, f"{C} v0.1.0")
    monkeypatch.setenv("WGTFLAGS", "-mod=mod")
    r = open_resolver(got)
    assert r.module(C).version == "v0.1.0"
    assert f"{C} v0.1.0 h1:" in (got / "wgt.sum").read_text()


def test_get_none_adds_no_line_for_a_version_it_tried(
    wgtpm, tree, project: Path, graph, monkeypatch
) -> None:
    """Removing b tries a v0.0.1 and c v0.0.1 (reading their wgt.mod), which need b too."""
    pub(tree, C, "v0.0.1", [f"{B} v0.1.0"])
    pub(tree, A, "v0.0.1", [f"{C} v0.0.1"])
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", f"{A}@v0.1.0", cwd=project).code == 0
    before = set((project / "wgt.sum").read_text().splitlines())
    r = wgtpm("get", f"{B}@none", cwd=project)
    assert r.code == 0, r.err
    assert "removed github.com/acme/a v0.1.0" in r.err
    after = set((project / "wgt.sum").read_text().splitlines())
    assert after == before, after - before


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", f"{B}/b"],
        ["run", f"{B}/b", "--input", "[1]"],
        ["verify", f"{B}/b"],
        ["paw", "install", f"{B}/b"],
    ],
    ids=" ".join,
)
def test_builder_commands_refuse_a_missing_wgt_sum(wgtpm, got: Path, args: list[str]) -> None:
    """Each resolves MODULE/ARTIFACT through open_resolver before it reads the artifact."""
    (got / "wgt.sum").unlink()
    before = _files(got)
    r = wgtpm(*args, cwd=got)
    assert r.code == 1, r.err
    assert r.err.startswith("wgtpm: missing wgt.sum entry for github.com/acme/"), r.err
    assert r.err.endswith(f"; {FIX}\n") and len(r.err.splitlines()) == 1, r.err
    assert _files(got) == before


def test_help_says_which_commands_default_to_readonly() -> None:
    from wgtpm.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    for name in ("get", "tidy"):
        assert "else mod)" in " ".join(sub.choices[name].format_help().split()), name
    for name in ("list", "graph", "why", "verify"):
        assert "else readonly)" in " ".join(sub.choices[name].format_help().split()), name
    paw = " ".join(sub.choices["get"].format_help().split())
    assert "if an install fails, they stay as they were" in paw
