"""Fixtures for publishing: tiny WeightLang packages in git repositories, and a live registry.

Packages are made in the test: a git repository in ``tmp_path`` with a
wgt.mod and a ``.wgt`` trained for a few epochs (a few hundred milliseconds).
``live`` is the registry of ``tests/registry`` served by uvicorn on loopback.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.conftest import Live, _live

BASE_WGT = """wgt 0.1
model xor
seed {seed}

input x: f32[2]
output y: f32[1]

layer h1 = linear(in=2, out=4)
layer a1 = tanh
layer out = linear(in=4, out=1)
layer p = sigmoid

data xor {{
  [0, 0] -> [0]
  [0, 1] -> [1]
  [1, 0] -> [1]
  [1, 1] -> [0]
}}
{train}
"""
TRAIN = "train data=xor loss=bce optimizer=adam lr=0.05 epochs=5"

CLASSIFIER_WGT = """wgt 0.1
model classifier
seed 1

input x: f32[2]
output y: f32[2]

layer h1 = linear(in=2, out=4)
layer a1 = tanh
layer out = linear(in=4, out=2)

import h1 from {base}/xor.h1 freeze

data xor {{
  [0, 0] -> [0]
  [0, 1] -> [1]
  [1, 0] -> [1]
  [1, 1] -> [0]
}}

train data=xor loss=ce optimizer=adam lr=0.05 epochs=5
"""


def base_wgt(seed: int = 0, train: bool = True) -> str:
    return BASE_WGT.format(seed=seed, train=TRAIN if train else "")


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.delenv("WGTPM_TOKEN", raising=False)


def git(pkg: Path, *args: str) -> str:
    import git as gitpython

    return str(gitpython.Git(pkg).execute(["git", *args]))


def make_package(root: Path, module: str, files: dict[str, str], *, commit: bool = True) -> Path:
    """A git repository at ``root`` holding wgt.mod (for ``module``) and ``files``, committed."""
    root.mkdir(parents=True, exist_ok=True)
    arts = "".join(f"artifact {a}\n" for a in files.pop("@artifacts", "").split(";") if a)
    (root / "wgt.mod").write_text(f"module {module}\nwgt 0.1\n\n{arts}")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q", "-b", "main")
    if commit:
        commit_all(root, "first")
    return root


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@contextlib.contextmanager
def dumb_http(root: Path) -> Iterator[str]:
    """``root`` over plain HTTP on loopback: git's dumb protocol, exact paths only."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def base_pkg(tmp_path: Path) -> Path:
    """``example.com/acme/xor``: one WeightLang artifact ``xor``, trained for 5 epochs."""
    return make_package(
        tmp_path / "xor",
        "example.com/acme/xor",
        {"@artifacts": "xor model.wgt", "model.wgt": base_wgt()},
    )


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """The registry on SQLite and a folder, served by uvicorn on loopback (see tests/registry)."""
    yield from _live(f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool")
