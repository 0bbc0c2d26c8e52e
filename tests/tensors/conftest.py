"""Fixtures: the loopback Hub, and the tiny Qwen3's files (``tiny_qwen3``, shared in
tests/conftest.py) with its base-model GGUF."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import CdnServer
from tests.servers.huggingface import HuggingFaceServer


@pytest.fixture
def hf(cdn: CdnServer) -> Iterator[HuggingFaceServer]:
    with HuggingFaceServer(cdn, token="hf_secret") as server:
        yield server


@pytest.fixture
def direct_hf(monkeypatch: pytest.MonkeyPatch, hf: HuggingFaceServer) -> HuggingFaceServer:
    """``wgtpm get hf.co/...`` goes straight to the loopback Hub."""
    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "1")
    return hf


@pytest.fixture(scope="session")
def tiny_files(tiny_qwen3: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The tiny Qwen3's Hugging Face files, plus its base-model GGUF as ``base.gguf``."""
    from wgtpm.paw.tiny import write_base_gguf

    files = {p.name: p.read_bytes() for p in sorted(tiny_qwen3.iterdir()) if p.is_file()}
    files["base.gguf"] = write_base_gguf(tmp_path_factory.mktemp("gguf") / "b.gguf").read_bytes()
    return files
