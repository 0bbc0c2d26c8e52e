"""Bundles put together in the test, without training: for the validator's rule-by-rule tests."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from wgtpm.paw.gguf_adapter import adapter_bytes
from wgtpm.paw.identity import ID_SCHEME, program_id
from wgtpm.paw.runtime import BaseModelFile, custom_runtime
from wgtpm.paw.shape import TARGET_MODULES, InterpreterShape

TINY = InterpreterShape(layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, head_dim=16)
TEMPLATE = (
    "<|im_start|>user\n[INPUT]\n{INPUT_PLACEHOLDER}\n[END_INPUT]<|im_end|>\n<|im_start|>assistant\n"
)


def lora_pairs(
    shape: InterpreterShape, rank: int = 32, layers: int | None = None
) -> dict[tuple[int, str], tuple[Any, Any]]:
    rng = np.random.default_rng(0)
    pairs = {}
    for layer in range(shape.layers if layers is None else layers):
        for module in TARGET_MODULES:
            n_in, n_out = shape.module_dims(module)
            pairs[(layer, module)] = (
                rng.standard_normal((rank, n_in)).astype(np.float32),
                rng.standard_normal((n_out, rank)).astype(np.float32),
            )
    return pairs


def gguf_bytes(arch: str, kv: Mapping[str, Any], tensors: Mapping[str, Any]) -> bytes:
    """A GGUF file with the given architecture, string/float keys and F32 tensors."""
    import gguf

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.gguf"
        writer = gguf.GGUFWriter(str(path), arch=arch)
        for key, value in kv.items():
            if isinstance(value, str):
                writer.add_string(key, value)
            else:
                writer.add_float32(key, float(value))
        for name, array in tensors.items():
            writer.add_tensor(name, np.asarray(array, dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return path.read_bytes()


def tiny_runtime() -> dict[str, Any]:
    base = BaseModelFile(
        "tiny.gguf", 4096, "ab" * 32, provider="huggingface", repo="wgtpm-tests/tiny"
    )
    return custom_runtime(
        "tiny-test", interpreter="wgtpm-tests/tiny", base_model=base, base_template=TEMPLATE
    )


def members(
    *,
    adapter: bytes | None = None,
    runtime: dict[str, Any] | None = None,
    shape: InterpreterShape | None = TINY,
    spec: str = "Map a colour to a fruit.",
) -> dict[str, bytes]:
    """A valid wgtpm-style bundle's members (ID recomputable), F32 rank-32 adapter over TINY."""
    adapter = (
        adapter
        if adapter is not None
        else adapter_bytes(lora_pairs(TINY), alpha=16.0, quantization="F32")
    )
    runtime = runtime if runtime is not None else tiny_runtime()
    recipe = {"steps": 1, "lora_rank": 32}
    meta: dict[str, Any] = {
        "program_id": "",
        "spec": spec,
        "interpreter": runtime["interpreter"],
        "runtime_id": runtime["runtime_id"],
        "runtime_manifest_version": 1,
        "runtime": runtime,
        "compile_by_training": {"program_id_scheme": ID_SCHEME, "recipe": recipe},
    }
    if shape is not None:
        meta["compile_by_training"]["interpreter_shape"] = shape.to_json()
    meta["program_id"] = program_id(
        spec=spec,
        pseudo_program="",
        recipe=recipe,
        interpreter=meta["interpreter"],
        runtime=runtime,
        adapter_sha256=hashlib.sha256(adapter).hexdigest(),
    )
    return {
        "meta.json": json.dumps(meta).encode(),
        "adapter.gguf": adapter,
        "prompt_template.txt": TEMPLATE.encode(),
    }


def edit_meta(m: dict[str, bytes], **changes: Any) -> dict[str, bytes]:
    meta = json.loads(m["meta.json"])
    for key, value in changes.items():
        target = meta
        *path, last = key.split("__")
        for part in path:
            target = target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value
    return {**m, "meta.json": json.dumps(meta).encode()}


class _Delete:
    pass


_DELETE: Any = _Delete()
DELETE = _DELETE


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
