"""A tiny Qwen3 on the loopback Hugging Face Hub, required by a new project through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TINY_QWEN3, TINY_QWEN3_VERSION, publish_tiny_qwen3
from tests.servers import CdnServer
from tests.servers.huggingface import HuggingFaceServer

ROOT = Path(__file__).resolve().parents[2]
MODULE = TINY_QWEN3
VERSION = TINY_QWEN3_VERSION


@pytest.fixture(scope="session")
def qwen_files(
    tiny_qwen3_files: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, bytes]:
    """The files of the tiny Qwen3 (config, tokenizer, model.safetensors; tests/conftest.py)
    and a GGUF file beside them (``gguf/extra.gguf``), made once."""
    extra = write_gguf(tmp_path_factory.mktemp("gguf") / "extra.gguf")
    return {**tiny_qwen3_files, "gguf/extra.gguf": extra.read_bytes()}


#: The GGUF file beside the tiny Qwen3: a 2-D F32 tensor (stored innermost dimension first),
#: an F16 one, and a Q8_0 one that has no torch dtype.
GGUF_MATRIX = [[float(3 * r + c) for c in range(32)] for r in range(2)]


def write_gguf(path: Path) -> Path:
    import gguf
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), arch="qwen3")
    matrix = np.array(GGUF_MATRIX, dtype=np.float32)
    writer.add_tensor("matrix", matrix)
    writer.add_tensor("half", matrix.astype(np.float16))
    q8 = gguf.quantize(matrix, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("q8", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def hub(cdn: CdnServer, qwen_files: dict[str, bytes]) -> Iterator[HuggingFaceServer]:
    """The loopback Hub with acme/tiny-qwen3 tagged v0.1.0."""
    with HuggingFaceServer(cdn) as server:
        publish_tiny_qwen3(server, qwen_files)
        yield server


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``wgtpm ARGS`` in a child process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "wgtpm", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def user_env(hub: HuggingFaceServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a user whose Hugging Face is the loopback Hub (also set in this process)."""
    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def consumer(tmp_path: Path, user_env: dict[str, str]) -> Path:
    """A new project (``wgtpm init``) that requires the tiny Qwen3 (``wgtpm get``)."""
    d = tmp_path / "encoder"
    d.mkdir()
    r = cli("init", "example.com/encoder", cwd=d, env=user_env)
    assert r.returncode == 0, r.stderr
    r = cli("get", f"{MODULE}@{VERSION}", cwd=d, env=user_env)
    assert r.returncode == 0, r.stderr
    assert f"{MODULE} {VERSION}" in (d / "wgt.mod").read_text()
    return d
