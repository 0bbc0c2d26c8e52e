"""The package surface: public names, light imports, the learning-rate schedule, devices."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import wgtpm.paw
from wgtpm._errors import BuildError


def test_public_names_are_exported() -> None:
    assert sorted(wgtpm.paw.__all__) == sorted(set(wgtpm.paw.__all__))
    for name in wgtpm.paw.__all__:
        assert getattr(wgtpm.paw, name) is not None


def test_importing_the_package_and_the_cli_stays_light() -> None:
    code = (
        "import sys, wgtpm.paw, wgtpm.cli;"
        "print(sorted(m for m in ('torch', 'transformers', 'peft', 'gguf', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_unavailable_device_is_an_error() -> None:
    import torch

    from wgtpm.paw.train import choose_device

    assert choose_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(BuildError, match=re.escape('"cuda" but PyTorch sees no usable CUDA')):
            choose_device("cuda")
