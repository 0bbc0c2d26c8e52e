"""Fixtures for the conformance tests of the loopback servers."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _hf_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real huggingface_hub client reads no token or cache of the machine running the tests."""
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "PAW_API_KEY", "PAW_API_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
