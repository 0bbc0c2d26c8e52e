"""Fixtures for adapter tests: the tiny Qwen3 at two revisions, a peft LoRA and the fruit program.

The interpreter, its base GGUF and the fruit program are the PAW tests' own
session fixtures (imported, so a run of both directories trains the program
once per directory); what is added here is a second revision of the tiny
Qwen3 (other weights, same shapes) and a peft LoRA trained on nothing but
seeded noise, so that its effect on the logits is large and known.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from tests.paw.conftest import INTERPRETER_MODULE, base_dir, fruit, resolver, tiny_dir

__all__ = ["base_dir", "fruit", "resolver", "tiny_dir"]

#: The version the fruit program records for its interpreter (tests/paw/conftest.py's resolver).
V1 = "v0.0.0-20260301000000-000000000000"
#: A later revision of the same module: other weights.
V2 = "v0.0.0-20260302000000-000000000000"
#: What the peft adapter's config names as its base (``hf.co/`` + it is the module).
HF_NAME = INTERPRETER_MODULE.removeprefix("hf.co/")


@pytest.fixture(scope="session")
def tiny_v2(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen3 with every weight moved by seeded noise: another revision of it."""
    import torch
    from safetensors.torch import load_file, save_file

    out = tmp_path_factory.mktemp("tiny-qwen3-v2")
    for item in tiny_dir.iterdir():
        shutil.copy(item, out / item.name)
    weights = load_file(str(tiny_dir / "model.safetensors"))
    gen = torch.Generator().manual_seed(1)
    moved = {k: v + 0.05 * torch.randn(v.shape, generator=gen) for k, v in weights.items()}
    save_file(moved, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


@pytest.fixture(scope="session")
def peft_dir(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rank-4 peft LoRA on q_proj and v_proj of the tiny Qwen3, saved as safetensors."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_dir), use_safetensors=True)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    with warnings.catch_warnings():  # peft asks transformers 5 for a renamed property
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing`", FutureWarning)
        wrapped = get_peft_model(model, config)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, param in wrapped.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen))
    out = tmp_path_factory.mktemp("tone")
    wrapped.save_pretrained(str(out), safe_serialization=True)
    config_path = out / "adapter_config.json"
    doc = json.loads(config_path.read_text())
    doc["base_model_name_or_path"] = HF_NAME  # as a Hub-trained adapter names its base
    config_path.write_text(json.dumps(doc, indent=2))
    return out
