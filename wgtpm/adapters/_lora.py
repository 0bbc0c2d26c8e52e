"""Putting a LoRA onto a loaded model with peft: a peft directory, or a ``.paw``'s GGUF LoRA.

A ``.paw`` adapter's GGUF holds, per adapted module of layer ``L``,
``blk.L.<gguf name>.weight.lora_a`` (peft's ``lora_A``, shape ``(r, in)``) and
``...lora_b`` (``lora_B``, ``(out, r)``), and ``adapter.lora.alpha``
(:mod:`wgtpm.paw.gguf_adapter`). In peft form that is a ``LoraConfig`` with
``r``, ``lora_alpha`` and the adapted modules by full name
(``model.layers.L.self_attn.q_proj``), and the state dict
``base_model.model.model.layers.L.self_attn.q_proj.lora_A.weight`` -> tensor:
the same ``alpha / r * B @ A`` llama.cpp adds, built in memory, never unpickled.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import BuildError, UsageError

__all__ = ["apply_paw", "apply_peft", "paw_lora_state"]


@contextmanager
def _quiet_peft() -> Iterator[None]:
    """peft asks transformers 5 for a renamed property (a FutureWarning); not ours to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        yield


def _refuse_wrapped(model: Any, where: str) -> None:
    from peft import PeftModel

    if isinstance(model, PeftModel):
        raise UsageError(
            f"adapter {where}: the model already carries an adapter; apply adapters to the base model"
        )


def apply_peft(model: Any, directory: Path, *, where: str) -> Any:
    """``PeftModel.from_pretrained`` over ``directory``, which holds adapter_model.safetensors."""
    from peft import PeftModel

    _refuse_wrapped(model, where)
    try:
        # The directory has adapter_model.safetensors (checked when the adapter was
        # opened): peft reads that file and never falls back to a pickle or the Hub.
        with _quiet_peft():
            return PeftModel.from_pretrained(model, str(directory), is_trainable=False)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise BuildError(f"adapter {where}: peft cannot apply it to the model: {first}") from exc


def paw_lora_state(adapter_gguf: bytes) -> tuple[dict[str, Any], list[str], int, float]:
    """The GGUF LoRA in peft form: (state dict, target module names, rank, alpha)."""
    import torch

    from ..paw.gguf_adapter import load_lora_pairs, read_adapter_info
    from ..paw.shape import HF_MODULE_PATHS

    alpha = read_adapter_info(adapter_gguf).fields.get("adapter.lora.alpha")
    pairs = load_lora_pairs(adapter_gguf)
    state: dict[str, Any] = {}
    targets: list[str] = []
    rank = 0
    for (layer, module), (a, b) in sorted(pairs.items()):
        name = f"model.layers.{layer}.{HF_MODULE_PATHS[module]}"
        targets.append(name)
        state[f"base_model.model.{name}.lora_A.weight"] = torch.from_numpy(a.copy())
        state[f"base_model.model.{name}.lora_B.weight"] = torch.from_numpy(b.copy())
        rank = int(a.shape[0])
    return state, targets, rank, float(alpha) if isinstance(alpha, (int, float)) else float(rank)


def apply_paw(model: Any, bundle: Any, *, where: str) -> Any:
    """A ``PeftModel`` of ``model`` with the ``.paw`` bundle's GGUF LoRA, converted in memory."""
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

    _refuse_wrapped(model, where)
    state, targets, rank, alpha = paw_lora_state(bundle.adapter)
    # lora_alpha is a float in GGUF (and works as one in peft, whose annotation says int).
    settings: dict[str, Any] = {"r": rank, "lora_alpha": alpha, "target_modules": targets}
    config = LoraConfig(**settings, lora_dropout=0.0, bias="none")
    try:
        with _quiet_peft():
            wrapped = get_peft_model(model, config)
        result: Any = set_peft_model_state_dict(wrapped, state)
    except (ValueError, KeyError, RuntimeError) as exc:
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise BuildError(f"adapter {where}: cannot apply its LoRA to the model: {first}") from exc
    if result.unexpected_keys:
        raise BuildError(
            f"adapter {where}: the model has no module for {result.unexpected_keys[0]} "
            f"(and {len(result.unexpected_keys) - 1} more)"
        )
    wrapped.eval()
    return wrapped
