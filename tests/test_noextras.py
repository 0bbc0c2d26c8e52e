"""Without the optional extras, a command that needs one says which in one line; the rest work.

Every command is in one of two tables: :data:`NEEDS` (it needs an extra of
pyproject.toml, and without it prints one ``wgtpm: ... pip install
'wgtpm[EXTRA]'`` line and exits 1, never the internal error's 70 nor a
traceback) or :data:`WORKS` (resolving, downloading and verifying need
none). A command that is in neither fails :func:`test_every_command_is_in_a_table`.

``scripts/test-noextras.sh`` runs this file in a virtualenv that holds wgtpm
and pytest only: there the extras are truly absent. In the full environment
each command runs in a child interpreter whose import system refuses every
module of an extra (:data:`PRELUDE`), so the main suite keeps the promise
too; :func:`test_the_extras_are_really_absent` runs only in the bare one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wgtpm._extras import EXTRAS, MissingExtraError, missing, missing_extra_error, require
from wgtpm.cli._parser import COMMAND_MODULES
from wgtpm.proxytree import ProxyTree

ROOT = Path(__file__).resolve().parent.parent
#: Every module an extra brings (top-level import names).
EXTRA_MODULES = sorted({m for brings in EXTRAS.values() for m in brings})
#: Whether this interpreter has none of them (the virtualenv of scripts/test-noextras.sh).
BARE = not [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is not None]

#: Runs ``wgtpm ARGS`` (argv[2:]) with the modules named in argv[1] refused, as if not installed.
PRELUDE = """
import sys
refused = set(filter(None, sys.argv[1].split(",")))
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in refused:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
from wgtpm.cli import main
sys.exit(main(sys.argv[2:]))
"""

MODEL = """wgt 0.1
model xor
seed 0
input x: f32[2]
output y: f32[1]
layer h1 = linear(in=2, out=8)
layer a1 = tanh
layer out = linear(in=8, out=1)
data xor {
  [0, 0] -> [0]
  [1, 1] -> [0]
}
train data=xor loss=mse optimizer=adam lr=0.05 epochs=2
"""
IMPORTING = MODEL.replace(
    "layer out =", 'import h1 from "art/xor".h1\nlayer out ='
)  # a path import: checking it verifies the imported weights

#: (command line, the extra it needs, the directory it runs in under the test's tmp_path).
NEEDS: list[tuple[tuple[str, ...], str, str]] = [
    (("check", "imp.wgt"), "weightlang", "pkg"),
    (("build",), "weightlang", "pkg"),
    (("build", "--json"), "weightlang", "pkg"),
    (("build", "model.wgt"), "weightlang", "pkg"),
    (("run", "art/xor", "--input", "[0, 1]"), "weightlang", "pkg"),
    (("inspect", "art/xor"), "weightlang", "pkg"),
    (("verify", "art/xor"), "weightlang", "pkg"),
    (("run", "x.paw", "--input", "hi"), "paw", "pkg"),
    (("build",), "paw", "pawpkg"),
    (("build",), "paw", "prebuilt"),
    (("paw", "compile", "t.pawspec"), "paw", "pawpkg"),
    (("paw", "validate", "../pkg/x.paw"), "paw", "pawpkg"),
    (("paw", "inspect", "../pkg/x.paw"), "paw", "pawpkg"),
    (("paw", "install", "../pkg/x.paw"), "paw", "pawpkg"),
    (("get", "--paw-install"), "paw", "pkg"),
    (("registry", "serve", "--data", "../reg", "--port", "1"), "registry", "pkg"),
    (("registry", "token", "list", "--data", "../reg"), "registry", "pkg"),
    (("publish", "--version", "v0.1.0", "--dry-run"), "publish", "pkg"),
    (("verify", "--rebuild", "example.com/acme/w@v0.1.0"), "publish", "pkg"),
    (("sbom",), "sbom", "pkg"),
]

#: Commands that need no extra, run in order in one project ("app") that a file:// proxy
#: tree serves: (command line, a text stdout or stderr holds).
WORKS: list[tuple[tuple[str, ...], str]] = [
    (("--version",), "wgtpm "),
    (("help",), "Topics"),
    (("init", "example.com/app"), "created"),
    (("check", "model.wgt"), "model.wgt: ok"),
    (("get", "example.com/acme/w@v0.1.0"), "example.com/acme/w"),
    (("list", "-m", "all"), "example.com/acme/w v0.1.0"),
    (("graph",), "example.com/acme/w@v0.1.0"),
    (("why", "example.com/acme/w"), "example.com/acme/w"),
    (("verify",), "all modules verified"),
    (("path", "example.com/acme/w"), "example.com"),
    (("mod", "edit", "-require", "example.com/acme/w@v0.1.0"), ""),
    (("cache", "dir"), "cache"),
    (("cache", "verify"), ""),
    (("registry", "key", "--data", "../reg"), "WGTSUMDB"),
    (("key", "generate", "--out", "signer"), "signer.pub"),
    (("retract", "v0.0.1", "-m", "broken"), "retracts v0.0.1"),
    (("vendor",), ""),
    (("tidy",), ""),
]


def _wgtpm(
    args: tuple[str, ...], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    refused = "" if BARE else ",".join(EXTRA_MODULES)
    return subprocess.run(
        [sys.executable, "-c", PRELUDE, refused, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "WGTPROXY": (tmp_path / "tree").as_uri(),
        "WGTPM_CACHE": str(tmp_path / "cache"),
        "WGTPM_REGISTRY_SUMDB_NAME": "test.example",
    }
    env.pop("WGTPM_DEBUG", None)
    return env


def _layout(tmp_path: Path) -> None:
    """A package with a model (and one that imports a built artifact), a PAW package, a
    package with a prebuilt program, and a proxy tree with one module."""
    pkg = tmp_path / "pkg"
    (pkg / "art" / "xor").mkdir(parents=True)
    (pkg / "art" / "xor" / "manifest.json").write_text("{}")
    (pkg / "wgt.mod").write_text("module example.com/pkg\nwgt 0.1\nartifact xor model.wgt\n")
    (pkg / "model.wgt").write_text(MODEL)
    (pkg / "imp.wgt").write_text(IMPORTING)
    (pkg / "x.paw").write_bytes(b"PK not really a program")
    paw = tmp_path / "pawpkg"
    paw.mkdir()
    (paw / "wgt.mod").write_text("module example.com/pawpkg\nwgt 0.1\nartifact t t.pawspec\n")
    (paw / "t.pawspec").write_text("")
    pre = tmp_path / "prebuilt"
    pre.mkdir()
    (pre / "wgt.mod").write_text("module example.com/pre\nwgt 0.1\nartifact t t.paw\n")
    (pre / "t.paw").write_bytes(b"PK not really a program")
    mod = "example.com/acme/w"
    tree = ProxyTree(tmp_path / "tree")
    tree.add(mod, "v0.1.0", {"wgt.mod": f"module {mod}\n".encode(), "w.bin": b"weights"})
    (tmp_path / "app").mkdir()


@pytest.mark.parametrize(
    ("args", "extra", "where"), NEEDS, ids=[f"{w}:{' '.join(a)}" for a, _, w in NEEDS]
)
def test_a_command_that_needs_an_extra_says_which(
    tmp_path: Path, args: tuple[str, ...], extra: str, where: str
) -> None:
    _layout(tmp_path)
    r = _wgtpm(args, tmp_path / where, _env(tmp_path))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1, f"exit {r.returncode}: {r.stderr}"
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("wgtpm: ") and "not installed" in lines[0], r.stderr
    assert lines[0].endswith(f"pip install 'wgtpm[{extra}]'"), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    if "--json" in args:
        assert json.loads(r.stdout)["error"]["kind"] == "missing_extra"
    else:
        assert r.stdout == ""


def test_the_commands_without_extras_work(tmp_path: Path) -> None:
    _layout(tmp_path)
    app = tmp_path / "app"
    (app / "model.wgt").write_text(MODEL)
    env = _env(tmp_path)
    for args, shown in WORKS:
        r = _wgtpm(args, app, env)
        assert r.returncode == 0, f"wgtpm {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
        assert shown in r.stdout + r.stderr, f"wgtpm {' '.join(args)}:\n{r.stdout}{r.stderr}"
        assert "Traceback" not in r.stderr


def test_every_command_is_in_a_table() -> None:
    """A new command is classified here: it needs an extra, or it works without."""
    tested = {a[0] for a, _, _ in NEEDS} | {a[0] for a, _ in WORKS}
    assert set(COMMAND_MODULES) - tested == set()


@pytest.mark.skipif(not BARE, reason="the extras are installed here (scripts/test-noextras.sh)")
def test_the_extras_are_really_absent() -> None:
    """The bare virtualenv is what it should be, and the CLI's last net names the extra."""
    assert missing(*EXTRA_MODULES) == EXTRA_MODULES
    err = missing_extra_error(ModuleNotFoundError("No module named 'git'", name="git"), "x")
    assert isinstance(err, MissingExtraError) and err.extra == "publish"
    with pytest.raises(MissingExtraError, match=r"^y needs torch"):
        require("weightlang", "torch", purpose="y")


def test_a_module_of_no_extra_is_a_bug() -> None:
    bug = ModuleNotFoundError("No module named 'wgtpm.nope'", name="wgtpm.nope")
    assert missing_extra_error(bug, "x") is None
    assert missing_extra_error(ImportError("cannot import name 'x'", name="json"), "x") is None


def test_the_extras_table_is_pyproject_s() -> None:
    """EXTRAS names every extra of pyproject.toml but the aggregates, and only their packages."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {k: v for k, v in meta["optional-dependencies"].items() if k not in ("all", "dev")}
    assert set(EXTRAS) == set(declared)
    dist_of = {
        "git": "gitpython",
        "cyclonedx": "cyclonedx-python-lib",
        "model_signing": "model-signing",
        "OpenSSL": "pyopenssl",
    }  # import name -> distribution, where they differ
    for extra, brings in EXTRAS.items():
        dists = {
            d.split(";")[0].split("[")[0].split(">")[0].split("=")[0].strip().lower()
            for d in declared[extra]
        }
        for module in brings:
            assert dist_of.get(module, module) in dists, f"{module} is not in [{extra}]"
