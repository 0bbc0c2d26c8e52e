"""End to end: a torch model grafting a pinned embedding and block is published and inspected.

The producer (``consumer`` in conftest.py: a project requiring the tiny
Qwen3 from the loopback Hub) grafts the embedding and one decoder block into
a model of its own, trains its head, saves it with ``wgtpm.save`` into
``encoder/`` and ships the two files as artifacts with ``wgtpm publish --to``
a wgtpm registry (``live``: the registry of tests/registry on loopback). A new
project, whose WGTPROXY is that registry and then the Hub, requires the
published module and runs
``wgtpm inspect MODULE/encoder``: each tensor's origin, down to
module@version and sha256, as the producer recorded it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pinned.conftest import MODULE, VERSION, cli
from tests.pinned.test_pinned import BLOCK, EMBED, grafted_encoder, tensor_sha, train
from tests.registry.conftest import Live, _live

torch = pytest.importorskip("torch")

PRODUCER = "example.com/encoder"
ARTIFACTS = "artifact encoder-manifest encoder/manifest.json\nartifact encoder-weights encoder/weights.safetensors\n"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """A wgtpm registry on SQLite and a folder, on loopback; its token publishes example.com/..."""
    yield from _live(f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool")


def git(cwd: Path, *args: str) -> None:
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null")
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "Test", "test@example.com"
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_a_published_model_shows_its_origins_to_a_consumer(
    consumer: Path, user_env: dict[str, str], tmp_path: Path, live: Live
) -> None:
    import wgtpm

    qwen = wgtpm.open(MODULE, project_dir=consumer)
    model = grafted_encoder(qwen)
    train(model, steps=5)
    wgtpm.save(model, consumer / "encoder")
    with (consumer / "wgt.mod").open("a") as fh:
        fh.write("\n" + ARTIFACTS)
    git(consumer, "init", "-q", "-b", "main")
    git(consumer, "add", "-A")
    git(consumer, "commit", "-q", "-m", "encoder")
    publisher = dict(user_env, WGTPM_TOKEN=live.token)
    r = cli("publish", "--version", "v0.1.0", "--to", live.url, cwd=consumer, env=publisher)
    assert r.returncode == 0, r.stderr

    app = tmp_path / "app"
    app.mkdir()
    env = dict(user_env, WGTPROXY=f"{live.url},direct")
    assert cli("init", "example.com/app", cwd=app, env=env).returncode == 0
    r = cli("get", f"{PRODUCER}@v0.1.0", cwd=app, env=env)
    assert r.returncode == 0, r.stderr
    r = cli("inspect", f"{PRODUCER}/encoder", cwd=app, env=env)
    assert r.returncode == 0, r.stderr
    weights = qwen.path / "model.safetensors"
    assert f"imported from {MODULE}@{VERSION}, frozen" in r.stdout
    assert f"model.safetensors#{EMBED}" in r.stdout
    assert f"sha256 {tensor_sha(weights, EMBED)}" in r.stdout
    assert f"sha256 {tensor_sha(weights, BLOCK + 'mlp.down_proj.weight')}" in r.stdout
    r = cli("inspect", "--json", f"{PRODUCER}/encoder", cwd=app, env=env)
    tok = json.loads(r.stdout)["weights"]["tensors"]["tok.weight"]
    assert tok["source"] == {
        "module": MODULE,
        "version": VERSION,
        "file": "model.safetensors",
        "tensor": EMBED,
        "sha256": tensor_sha(weights, EMBED),
        "dtype": "F32",
        "converted_to": None,
    }
    # the release's provenance (h1 locks it) records the imports too
    tree = next(Path(os.environ["WGTPM_CACHE"]).glob(f"mod/{PRODUCER}@v0.1.0"))
    prov = json.loads((tree / "wgt.provenance.json").read_bytes())
    imports = prov["artifacts"]["encoder-manifest"]["imports"]
    assert {
        "tensor": "tok.weight",
        "origin": "imported",
        "module": MODULE,
        "version": VERSION,
        "file": "model.safetensors",
        "source_tensor": EMBED,
        "sha256": tensor_sha(weights, EMBED),
    } in imports
    assert "head.weight" not in {i["tensor"] for i in imports}  # trained here
