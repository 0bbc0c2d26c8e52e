"""Cross-checks against compile-by-training's own functions (loaded from ../shared/prototypes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.paw.compilepy import load
from wgtpm.paw.shape import QWEN3_0_6B, TARGET_MODULES


def write_peft_adapter(
    directory: Path, *, layers: int, rank: int, alpha: float, dims: Any = None, seed: int = 0
) -> Path:
    """A peft LoRA adapter directory (adapter_config.json + adapter_model.safetensors)."""
    import torch
    from safetensors.torch import save_file

    rng = np.random.default_rng(seed)
    state = {}
    for layer in range(layers):
        for module in TARGET_MODULES:
            n_in, n_out = dims(module) if dims else (32, 32)
            group = "self_attn" if module in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
            name = f"base_model.model.model.layers.{layer}.{group}.{module}"
            state[f"{name}.lora_A.weight"] = torch.from_numpy(
                rng.standard_normal((rank, n_in)).astype(np.float32)
            )
            state[f"{name}.lora_B.weight"] = torch.from_numpy(
                rng.standard_normal((n_out, rank)).astype(np.float32) * 0.01
            )
    directory.mkdir(parents=True, exist_ok=True)
    save_file(state, str(directory / "adapter_model.safetensors"))
    config = {
        "r": rank,
        "lora_alpha": alpha,
        "target_modules": sorted(TARGET_MODULES),
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "bias": "none",
        "lora_dropout": 0.0,
    }
    (directory / "adapter_config.json").write_text(json.dumps(config))
    return directory


def test_gguf_is_byte_identical_to_compile_py(tmp_path: Path) -> None:
    from wgtpm.paw.gguf_adapter import convert_peft_adapter

    cbt = load()
    adapter = write_peft_adapter(tmp_path / "adapter", layers=12, rank=32, alpha=16.0)
    theirs = cbt.convert_to_gguf(adapter, tmp_path / "theirs.gguf", 16.0).read_bytes()
    assert convert_peft_adapter(adapter) == theirs


@pytest.fixture
def compile_py_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundle written by compile.py's package_program (one Qwen3-0.6B layer, rank 64)."""
    cbt = load()
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "their-cache"))
    adapter = write_peft_adapter(
        tmp_path / "adapter", layers=1, rank=64, alpha=16.0, dims=QWEN3_0_6B.module_dims
    )
    mapper = {
        "program_id": "ab" * 10,
        "compiler_snapshot": "paw-4b-qwen3-0.6b-20260501",
        "pseudo_program": "Map a colour to a fruit.",
        "pseudo_program_strategy": "vllm_generate",
    }
    template = (
        "<|im_start|>user\nMap a colour to a fruit.\n\n[INPUT]\n{INPUT_PLACEHOLDER}\n"
        "[END_INPUT]<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    _, out = cbt.package_program(
        "Map a colour to a fruit.",
        cbt.Recipe(),
        mapper,
        adapter,
        template,
        [2.5, 0.25],
        tmp_path / "theirs.paw",
        False,
    )
    return Path(out)


def test_compile_py_bundles_validate_install_and_inspect(
    compile_py_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wgtpm: Any
) -> None:
    from programasweights import cache as paw_cache

    from wgtpm.paw.sdk import install_program
    from wgtpm.paw.validate import validate_file

    program = validate_file(compile_py_bundle)
    assert program.runtime_source == "embedded" and program.adapter.rank == 64
    monkeypatch.setenv("PAW_CACHE_DIR", str(tmp_path / "our-cache"))
    monkeypatch.setenv("PAW_OFFLINE", "1")
    installed = install_program(compile_py_bundle)
    assert paw_cache.has_valid_program_assets(installed.program_id)
    text = wgtpm("paw", "inspect", str(compile_py_bundle)).out
    assert "None" not in text, text
    assert (
        "built by     compile-by-training-local, teachers gpt-5.4-mini=2400, gpt-5.5=1200" in text
    )
    assert f"mapper {'ab' * 10}, final loss 0.25" in text
