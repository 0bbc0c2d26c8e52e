"""End to end, as the demo runs it: examples/word-kind trained, published, inspected and run.

The tiny Qwen3 is on the loopback Hub as ``hf.co/wgtpm-demo/tiny-qwen3``
v0.1.0 (the demo's name); a copy of ``examples/word-kind`` locks it
(``wgtpm tidy``), runs its ``train.py`` (the embedding grafted frozen, a
head trained, ``wgtpm.save`` into ``model/``), commits and publishes to a
wgtpm registry on loopback. A new project gets it, ``wgtpm inspect`` shows
each tensor's origin, and ``examples/consumer/word_kind.py`` runs it with
:func:`wgtpm.pinned.load_saved`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import publish_tiny_qwen3
from tests.pinned.conftest import ROOT, cli
from tests.pinned.test_publish import git, live  # noqa: F401  (the live fixture)
from tests.registry.conftest import Live
from tests.servers import CdnServer
from tests.servers.huggingface import HuggingFaceServer

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

QWEN = "hf.co/wgtpm-demo/tiny-qwen3"
PRODUCER = "github.com/acme/word-kind"


@pytest.fixture
def demo_hub(cdn: CdnServer, qwen_files: dict[str, bytes]) -> Iterator[HuggingFaceServer]:
    """The loopback Hub with wgtpm-demo/tiny-qwen3 tagged v0.1.0, as the demo names it."""
    with HuggingFaceServer(cdn) as server:
        publish_tiny_qwen3(server, qwen_files, owner="wgtpm-demo")
        yield server


@pytest.fixture
def env(demo_hub: HuggingFaceServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    import os

    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("HF_ENDPOINT", demo_hub.url)
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), out.get("PYTHONPATH", "")])
    return out


def python(script: Path, *args: str, cwd: Path, env: dict[str, str]) -> str:
    r = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_word_kind_is_trained_published_inspected_and_run(
    env: dict[str, str],
    tmp_path: Path,
    live: Live,  # noqa: F811
) -> None:
    pkg = tmp_path / "word-kind"
    shutil.copytree(ROOT / "examples" / "word-kind", pkg)
    r = cli("tidy", cwd=pkg, env=env)
    assert r.returncode == 0, r.stderr
    out = python(pkg / "train.py", cwd=pkg, env=env)
    assert "11/11 words right" in out, out
    first = (pkg / "model" / "weights.safetensors").read_bytes()
    python(pkg / "train.py", cwd=pkg, env=env)  # seeded: the same bytes again
    assert (pkg / "model" / "weights.safetensors").read_bytes() == first

    git(pkg, "init", "-q", "-b", "main")
    git(pkg, "add", "-A")
    git(pkg, "commit", "-q", "-m", "v0.1.0")
    token, _ = live.registry.create_token("github.com/acme", "publish")  # type: ignore[attr-defined]
    r = cli(
        "publish",
        "--version",
        "v0.1.0",
        "--to",
        live.url,
        cwd=pkg,
        env={**env, "WGTPM_TOKEN": token},
    )
    assert r.returncode == 0, r.stderr

    app = tmp_path / "app"
    app.mkdir()
    use = {**env, "WGTPROXY": f"{live.url},direct"}
    assert cli("init", "example.com/app", cwd=app, env=use).returncode == 0
    r = cli("get", f"{PRODUCER}@v0.1.0", cwd=app, env=use)
    assert r.returncode == 0, r.stderr
    r = cli("inspect", f"{PRODUCER}/model", cwd=app, env=use)
    assert r.returncode == 0, r.stderr
    assert f"imported from {QWEN}@v0.1.0, frozen" in r.stdout
    assert "model.safetensors#model.embed_tokens.weight" in r.stdout
    assert "head.weight" in r.stdout and "trained" in r.stdout

    shutil.copy(ROOT / "examples" / "consumer" / "word_kind.py", app)
    out = python(app / "word_kind.py", "purple", "cherry", cwd=app, env=use)
    assert "purple: colour" in out and "cherry: fruit" in out, out
    assert f"tok.weight: {QWEN}@v0.1.0/model.safetensors#model.embed_tokens.weight" in out
