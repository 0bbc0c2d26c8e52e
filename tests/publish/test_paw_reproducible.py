"""Publishing a PAW package: compile-by-training twice gives the same bytes, or is refused.

The package compiles ``fruit.pawspec`` on the tiny Qwen3 of tests/paw (a
few hundred kilobytes, built once per session) with a ten-step recipe, its
interpreter and base GGUF required through wgt.mod and wgt.sum from a proxy
tree, as a real package's are. Then:

- ``--verify-reproducible`` passes: the two exports of the commit build the
  same ``fruit.paw``, byte for byte; a consumer gets the release and
  ``verify --rebuild`` reproduces it from the repository;
- with the training made nondeterministic on purpose (every call of
  ``torch.manual_seed`` seeds a different generator state, as a builder
  that seeded from the clock would), it is refused, naming ``fruit.paw`` and
  its first differing byte, and nothing is written.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.paw.conftest import (  # session fixtures: the tiny interpreter and its GGUF
    BASE_FILE,
    BASE_MODULE,
    INTERPRETER_MODULE,
    base_dir,  # noqa: F401
    tiny_dir,  # noqa: F401
    write_package,
)
from tests.publish.conftest import commit_all, git
from wgtpm.proxytree import ProxyTree

pytestmark = pytest.mark.slow

MODULE = "example.com/acme/fruit"
#: Enough training to exercise every step of compile-by-training, in a second or two.
TEN_STEPS = """
[recipe]
steps = 10
batch_size = 2
micro_batch_size = 2
learning_rate = 1e-2
lora_rank = 32
max_length = 128
device = "cpu"
lora_init = "random"
"""


def _files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def fruit_pkg(
    wgtpm,  # type: ignore[no-untyped-def]
    tiny_dir: Path,  # noqa: F811
    base_dir: Path,  # noqa: F811
    tree: ProxyTree,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A committed PAW package whose interpreter and base GGUF are locked in wgt.sum."""
    tree.add(INTERPRETER_MODULE, "v1.0.0", _files(tiny_dir))
    tree.add(BASE_MODULE, "v1.0.0", {BASE_FILE: (base_dir / BASE_FILE).read_bytes()})
    monkeypatch.setenv("WGTPROXY", tree.url)
    pkg = tmp_path / "fruit"
    write_package(pkg, recipe=TEN_STEPS)
    (pkg / "wgt.mod").write_text(f"module {MODULE}\nwgt 0.1\n\nartifact fruit fruit.pawspec\n")
    r = wgtpm("get", f"{INTERPRETER_MODULE}@v1.0.0", f"{BASE_MODULE}@v1.0.0", cwd=pkg)
    assert r.code == 0, r.err
    git(pkg, "init", "-q", "-b", "main")
    commit_all(pkg, "fruit")
    return pkg


def test_a_paw_package_builds_reproducibly_and_rebuilds(
    wgtpm,  # type: ignore[no-untyped-def]
    fruit_pkg: Path,
    tree: ProxyTree,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", "--verify-reproducible", cwd=fruit_pkg)
    assert r.code == 0, r.err
    assert "reproducible: both builds wrote the same bytes" in r.err
    assert r.err.count("paw fruit: step 10/10") == 2
    assert (fruit_pkg / "dist" / MODULE / "@v/v0.1.0/fruit.paw").is_file()

    app = tmp_path / "app"
    app.mkdir()
    monkeypatch.setenv("WGTPROXY", f"{(fruit_pkg / 'dist').as_uri()},{tree.url}")
    assert wgtpm("init", "example.com/app", cwd=app).code == 0
    r = wgtpm("get", f"{MODULE}@v0.1.0", cwd=app)
    assert r.code == 0, r.err
    r = wgtpm("verify", "--rebuild", f"{MODULE}@v0.1.0", "--repo", str(fruit_pkg), cwd=app)
    assert (r.code, r.out) == (0, "fruit: reproduced\n"), r.err


def test_nondeterministic_training_is_refused(
    wgtpm,  # type: ignore[no-untyped-def]
    fruit_pkg: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    calls = itertools.count()
    seed = torch.manual_seed
    monkeypatch.setattr(torch, "manual_seed", lambda s: seed(s + next(calls)))
    r = wgtpm("publish", "--version", "v0.1.0", "--dry-run", "--verify-reproducible", cwd=fruit_pkg)
    assert r.code == 1
    last = r.err.strip().splitlines()[-1]
    assert "not reproducible: fruit.paw differs between two builds" in last, r.err
    assert "first at byte offset" in last
    assert not (fruit_pkg / "dist").exists()
