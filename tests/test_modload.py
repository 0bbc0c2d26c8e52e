"""wgtpm/modload: the pieces of the main module, alone and through the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_get import h1, pub
from wgtpm import ChecksumMismatchError, ReadonlyError, UsageError, VerifyError, modfile, sumfile
from wgtpm.cache import Cache
from wgtpm.modload import stamp
from wgtpm.modload.buildlist import FromDirectory, FromModule, FromReplacement, origin_of
from wgtpm.modload.notices import warn_retracted
from wgtpm.modload.options import DEFAULT_JOBS, Options
from wgtpm.modload.project import Project
from wgtpm.modload.sums import SumLedger
from wgtpm.module import ModuleVersion as MV

BAD_H1 = "h1:" + "A" * 43 + "="


# ---- the no-op stamp ---------------------------------------------------------


@pytest.mark.parametrize(
    ("replace", "stamped"),
    [
        ("", True),
        ("replace github.com/acme/b => ./b\n", False),
        ('replace github.com/acme/b => "./b"\n', False),
        ('replace github.com/acme/b v0.1.0 => "../b"\n', False),
        ("replace github.com/acme/b => /abs/b\n", False),
        ("replace github.com/acme/b v0.1.0 => github.com/fork/b v0.1.1\n", True),
        ("// not a replacement: => ./b\n", True),
        ("replace github.com/acme/b =>\n", False),  # does not parse: the full run reports it
    ],
)
def test_stamp_key_decides_local_replacements_with_the_parser(
    tmp_path: Path, replace: str, stamped: bool
) -> None:
    (tmp_path / "wgt.mod").write_text(f"module example.com/app\n{replace}")
    assert (stamp.key(tmp_path) is not None) is stamped


def test_noop_get_sees_changes_in_a_quoted_directory_replacement(
    wgtpm, tree, project, monkeypatch
) -> None:
    """``replace M => "./b"`` (quoted) must not get a stamp: ./b's wgt.mod can change."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    c = pub(tree, "github.com/acme/c", "v0.1.0")
    local = project / "b"
    local.mkdir()
    (local / "wgt.mod").write_text("module github.com/acme/b\n")
    (project / "wgt.mod").write_text(
        "module example.com/app\n\nrequire github.com/acme/b v0.1.0\n"
        'replace github.com/acme/b => "./b"\n'
    )
    r = wgtpm("get", cwd=project)
    assert r.code == 0, r.err
    (local / "wgt.mod").write_text("module github.com/acme/b\nrequire github.com/acme/c v0.1.0\n")
    r = wgtpm("get", cwd=project)
    assert r.code == 0, r.err
    assert f"github.com/acme/c v0.1.0 {h1(c)}" in (project / "wgt.sum").read_text()


# ---- the sum ledger -------------------------------------------------------------


def test_sum_ledger_checks_records_refuses_and_prunes() -> None:
    sf = sumfile.SumFile()
    sf.add("example.com/a", "v1.0.0", BAD_H1)
    ledger = SumLedger(sf, readonly=False)
    ledger.check("example.com/a", "v1.0.0", BAD_H1)
    with pytest.raises(ChecksumMismatchError, match="SECURITY ERROR"):
        ledger.check("example.com/a", "v1.0.0", "h1:" + "B" * 43 + "=")
    good = "h1:" + "C" * 43 + "="
    ledger.check("example.com/b", "v1.0.0/wgt.mod", good, record=False)  # not recorded
    assert ledger.hashes("example.com/b", "v1.0.0/wgt.mod") == []
    ledger.check("example.com/b", "v1.0.0/wgt.mod", good)
    assert ledger.hashes("example.com/b", "v1.0.0/wgt.mod") == [good]
    ledger.forget_used()
    ledger.check("example.com/b", "v1.0.0/wgt.mod", good)
    ledger.prune()
    assert ledger.format() == f"example.com/b v1.0.0/wgt.mod {good}\n".encode()
    with pytest.raises(ReadonlyError, match=r"missing wgt\.sum entry"):
        SumLedger(sumfile.SumFile(), readonly=True).check("example.com/c", "v1.0.0", good)


# ---- origins ----------------------------------------------------------------------


def test_origin_of_each_kind(tmp_path: Path) -> None:
    mf = modfile.parse(
        b"module example.com/app\n"
        b"replace example.com/r v1.0.0 => example.com/fork v1.0.1\n"
        b"replace example.com/d => ../d\n"
    )
    assert origin_of(mf, tmp_path, MV("example.com/m", "v1.0.0")) == FromModule(
        "example.com/m", "v1.0.0"
    )
    assert origin_of(mf, tmp_path, MV("example.com/r", "v1.0.0")) == FromReplacement(
        "example.com/fork", "v1.0.1"
    )
    assert origin_of(mf, tmp_path, MV("example.com/r", "v1.0.1")) == FromModule(
        "example.com/r", "v1.0.1"
    )
    assert origin_of(mf, tmp_path, MV("example.com/d", "v0.1.0")) == FromDirectory(
        (tmp_path / "../d").resolve(), "../d"
    )


# ---- options ------------------------------------------------------------------------


def test_options_from_env(monkeypatch) -> None:
    assert Options.from_env().jobs == DEFAULT_JOBS
    from wgtpm.cli import build_parser

    sub = build_parser("get")._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert f"(default {DEFAULT_JOBS})" in sub.choices["get"].format_help()
    assert Options.from_env().mod_mode == "mod" and Options.from_env().mod_set_by == ""
    assert Options.from_env(default="readonly").readonly
    monkeypatch.setenv("WGTFLAGS", " -mod=readonly ")
    assert Options.from_env().readonly and not Options.from_env().vendor
    assert Options.from_env().mod_set_by == "WGTFLAGS"
    assert Options.from_env("vendor").vendor and Options.from_env("vendor").mod_set_by == "-mod"
    with pytest.raises(UsageError, match="want mod, readonly or vendor"):
        Options.from_env("sometimes")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("-mod='readonly", "WGTFLAGS: No closing quotation; quote it as a shell would"),
        ("-mod=x", "WGTFLAGS: '-mod=x': want mod, readonly or vendor"),
        ("-mod", "WGTFLAGS: '-mod': want mod, readonly or vendor"),
        ("-mod=readonly -foo", "WGTFLAGS: unknown flag '-foo'; it may hold only -mod=MODE"),
        ("-x", "WGTFLAGS: unknown flag '-x'"),
    ],
)
def test_bad_wgtflags_is_one_line_for_every_command(
    wgtpm, project, monkeypatch, flags: str, message: str
) -> None:
    """A bad WGTFLAGS is a usage error, also where the flag is given or a stamp would answer."""
    monkeypatch.setenv("WGTFLAGS", flags)
    for args in (["get"], ["list", "-m", "all"], ["tidy", "-mod=mod"], ["graph"], ["verify"]):
        r = wgtpm(*args, cwd=project)
        assert r.code == 1, (args, r.err)
        assert r.err.startswith("wgtpm: " + message), (args, r.err)
        assert len(r.err.splitlines()) == 1, (args, r.err)


# ---- retractions ----------------------------------------------------------------------


def _retracting_tree(tree) -> None:  # type: ignore[no-untyped-def]
    pub(tree, "github.com/acme/b", "v0.1.0")
    pub(tree, "github.com/acme/b", "v0.2.0")
    pub(tree, "github.com/acme/b", "v0.3.0", extra="retract v0.2.0 // trained on the wrong split\n")


def test_retraction_warning_is_reported_not_printed(tree, project, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _retracting_tree(tree)

    class Recorder:
        def __init__(self) -> None:
            self.lines: list[str] = []

        def notice(self, message: str) -> None:
            self.lines.append(f"notice {message}")

        def warning(self, message: str) -> None:
            self.lines.append(f"warning {message}")

        def start(self, label: str, total: int) -> None:
            pass

        def advance(self, label: str, n: int) -> None:
            pass

        def finish(self, label: str) -> None:
            pass

    rec = Recorder()
    with Project.load(project, Options(reporter=rec)) as p:
        warn_retracted(
            p, [p.main, MV("github.com/acme/b", "v0.2.0"), MV("github.com/acme/b", "v0.1.0")]
        )
    assert rec.lines == [
        "warning github.com/acme/b@v0.2.0: retracted by module author: trained on the wrong split",
        "notice to switch to the latest unretracted version, run:\n\twgtpm get github.com/acme/b@latest",
    ]


def test_retraction_warning_text_on_the_cli(wgtpm, tree, project, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _retracting_tree(tree)
    r = wgtpm("get", "-q", "github.com/acme/b@v0.2.0", cwd=project)
    assert r.code == 0, r.err
    assert r.err == (
        "wgtpm: warning: github.com/acme/b@v0.2.0: retracted by module author: "
        "trained on the wrong split\n"
        "wgtpm: to switch to the latest unretracted version, run:\n"
        "\twgtpm get github.com/acme/b@latest\n"
        "wgtpm: added github.com/acme/b v0.2.0\n"
    )


def test_checksum_error_loading_retractions_is_not_swallowed(
    wgtpm, tree, project, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    _retracting_tree(tree)
    assert wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project).code == 0
    with open(project / "wgt.sum", "a") as f:  # the latest wgt.mod no longer matches wgt.sum
        f.write(f"github.com/acme/b v0.3.0/wgt.mod {BAD_H1}\n")
    r = wgtpm("list", "-m", "-u", "all", cwd=project)
    assert r.code == 1
    assert "github.com/acme/b@v0.3.0: SECURITY ERROR: checksum mismatch for wgt.mod" in r.err


# ---- vendor ---------------------------------------------------------------------------


def test_vendor_uses_unique_temporary_names(wgtpm, tree, project, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.1.0")
    assert wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project).code == 0
    mine = project / ".vendor.tmp" / "keep.txt"  # a user's own directory of that name
    mine.parent.mkdir()
    mine.write_text("mine")
    for _ in range(2):  # the second run replaces vendor/
        r = wgtpm("vendor", cwd=project)
        assert r.code == 0, r.err
    assert mine.read_text() == "mine"
    assert sorted(p.name for p in project.iterdir()) == [
        ".vendor.tmp",
        "vendor",
        "wgt.mod",
        "wgt.sum",
    ]
    assert (project / "vendor" / "github.com/acme/b" / "b" / "weights.bin").is_file()


# ---- wgt.sum integrity (issue 9) ------------------------------------------------------


def test_two_h1_lines_for_one_version_are_a_security_error(
    wgtpm, tree, project, monkeypatch
) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    b = pub(tree, "github.com/acme/b", "v0.1.0")
    assert wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project).code == 0
    honest = f"github.com/acme/b v0.1.0 {h1(b)}"
    forged = f"github.com/acme/b v0.1.0 {BAD_H1}"
    with open(project / "wgt.sum", "a") as f:
        f.write(forged + "\n")
    before = (project / "wgt.mod").read_bytes(), (project / "wgt.sum").read_bytes()
    for cmd in (["get"], ["verify"], ["tidy"]):
        r = wgtpm(*cmd, cwd=project)
        assert r.code == 1, cmd
        assert "SECURITY ERROR" in r.err, cmd
        assert forged in r.err and honest in r.err, cmd
    assert ((project / "wgt.mod").read_bytes(), (project / "wgt.sum").read_bytes()) == before


def test_verify_fails_when_a_cached_file_is_missing(wgtpm, tree, project, monkeypatch) -> None:
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/b", "v0.1.0")
    assert wgtpm("get", "github.com/acme/b@v0.1.0", cwd=project).code == 0
    assert wgtpm("verify", cwd=project).code == 0
    f = Cache().mod_dir("github.com/acme/b", "v0.1.0") / "b" / "weights.bin"
    os.chmod(f.parent, 0o755)
    f.unlink()
    r = wgtpm("verify", cwd=project)
    assert r.code == 1
    assert "github.com/acme/b@v0.1.0: b/weights.bin is missing from the cache" in r.err


# ---- vendor/ integrity (issue 9) ------------------------------------------------------


def _vendored(wgtpm, tree, project, monkeypatch, extra_mod: str = "") -> Path:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WGTPROXY", tree.url)
    pub(tree, "github.com/acme/base", "v0.1.0", files={"x/w.bin": b"W" * 100, "x/big.gguf": b"G"})
    pub(tree, "github.com/acme/base/sub", "v0.1.0", files={"s.bin": b"S"})
    (project / "wgt.mod").write_text(f"module example.com/app\n{extra_mod}")
    for arg in ("github.com/acme/base@v0.1.0", "github.com/acme/base/sub@v0.1.0"):
        assert wgtpm("get", arg, cwd=project).code == 0
    r = wgtpm("vendor", cwd=project)
    assert r.code == 0, r.err
    monkeypatch.setenv("WGTPROXY", "off")
    monkeypatch.setenv("WGTFLAGS", "-mod=vendor")
    r = wgtpm("verify", cwd=project)
    assert r.code == 0, r.err
    return project / "vendor"


def _edit_manifest(vendor: Path, path: str, edit) -> None:  # type: ignore[no-untyped-def]
    p = vendor / "wgt.vendor.json"
    doc = json.loads(p.read_text())
    for m in doc["modules"]:
        if m["path"] == path:
            edit(m)
    p.write_text(json.dumps(doc))


def test_swapped_vendored_file_with_a_matching_manifest_is_refused(
    wgtpm, tree, project, monkeypatch
) -> None:
    vendor = _vendored(wgtpm, tree, project, monkeypatch)
    (vendor / "github.com/acme/base/x/w.bin").write_bytes(b"evil")

    def swap(m: dict) -> None:  # type: ignore[type-arg]
        for f in m["files"]:
            if f["path"] == "x/w.bin":
                f["sha256"], f["size"] = hashlib.sha256(b"evil").hexdigest(), 4
        del m["h1"]  # the field is not what is checked
        m["replace"] = "../elsewhere"  # nor is the manifest's word that it is a directory

    _edit_manifest(vendor, "github.com/acme/base", swap)
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and "github.com/acme/base@v0.1.0: vendor/ does not match wgt.sum" in r.err
    from wgtpm.modload import open_resolver

    with pytest.raises(VerifyError, match=r"does not match wgt\.sum"):
        open_resolver(project)


def test_unlisted_vendored_file_is_refused(wgtpm, tree, project, monkeypatch) -> None:
    vendor = _vendored(wgtpm, tree, project, monkeypatch)
    (vendor / "github.com/acme/base/x/extra.bin").write_bytes(b"who put me here")
    r = wgtpm("verify", cwd=project)
    assert r.code == 1
    assert (
        "vendor/github.com/acme/base/x/extra.bin is not listed in vendor/wgt.vendor.json" in r.err
    )


def test_omitted_files_are_hashed_but_not_vendored(wgtpm, tree, project, monkeypatch) -> None:
    vendor = _vendored(
        wgtpm, tree, project, monkeypatch, extra_mod="select github.com/acme/base *.bin\n"
    )
    assert not (vendor / "github.com/acme/base/x/big.gguf").exists()
    (vendor / "github.com/acme/base/x/big.gguf").write_bytes(b"G")  # omitted: may not appear
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and "x/big.gguf is not listed" in r.err


# ---- the project lock (issue 9) ---------------------------------------------------------


def test_two_gets_in_one_project_do_not_lose_an_update(tree, project, http_tree) -> None:
    from tests.servers import Fault

    pub(tree, "github.com/acme/slow", "v0.1.0", files={"w.bin": b"S" * 8192})
    pub(tree, "github.com/acme/fast", "v0.1.0")
    http_tree.inject(Fault.drip("/github.com/acme/slow/@v/v0.1.0/w.bin", delay=0.1, chunk=256))
    env = {**os.environ, "WGTPROXY": http_tree.url, "PYTHONPATH": str(Path(__file__).parents[1])}
    get = [sys.executable, "-m", "wgtpm", "get", "-q"]
    slow = subprocess.Popen(
        [*get, "github.com/acme/slow@v0.1.0"], cwd=project, env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not http_tree.log.where(path="*/w.bin"):  # it has loaded wgt.mod and resolved
            assert slow.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        fast = subprocess.run(
            [*get, "github.com/acme/fast@v0.1.0"], cwd=project, env=env, capture_output=True
        )
        assert fast.returncode == 0, fast.stderr
    finally:
        _, err = slow.communicate(timeout=120)
    assert slow.returncode == 0, err
    mod = (project / "wgt.mod").read_text()
    assert "github.com/acme/slow v0.1.0" in mod and "github.com/acme/fast v0.1.0" in mod


def test_noop_get_path_stays_light() -> None:
    """The stamp check runs on every no-op get: no parser, no fetcher, no HTTP."""
    code = (
        "import sys, wgtpm.cli, wgtpm.cli._modcmds, wgtpm.cache, wgtpm.modload.stamp\n"
        "import wgtpm.modload.options\n"
        "wgtpm.cli.build_parser('get')\n"
        "heavy = ['wgtpm.modfile', 'wgtpm.modfetch', 'wgtpm.modload.project', 'httpx', 'rich']\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == ""


@pytest.mark.parametrize(
    "manifest",
    [
        b'{"modules": "all of them"}',
        b'{"modules": [{"path": 1, "version": "v0.1.0"}]}',
        b'{"modules": [{"path": "a.b/c", "version": "v0.1.0", "files": [7]}]}',
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff not json",
    ],
)
def test_malformed_vendor_manifest_is_one_clear_line(wgtpm, project, monkeypatch, manifest) -> None:
    (project / "vendor").mkdir()
    (project / "vendor" / "wgt.vendor.json").write_bytes(manifest)
    monkeypatch.setenv("WGTFLAGS", "-mod=vendor")
    r = wgtpm("verify", cwd=project)
    assert r.code == 1 and "Traceback" not in r.err
    assert r.err.startswith("wgtpm: ") and "run 'wgtpm vendor' again" in r.err
