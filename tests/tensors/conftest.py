"""Fixtures: a tiny Qwen3 in Hugging Face format, and safetensors files written by the
safetensors library (tests may use it to write files; wgtpm.tensors never imports it)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_qwen3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from wgtpm.paw.tiny import make_tiny_qwen3

    return make_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))
