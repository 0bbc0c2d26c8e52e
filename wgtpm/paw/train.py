"""LoRA finetuning of a Qwen3 interpreter on input/output examples (transformers + peft).

Each example becomes ``prompt tokens + output tokens + EOS``, where the
prompt is the program's template filled with the input; the loss is the
cross entropy of the output tokens only. The vocabulary projection of those
positions is computed ``loss_chunk_size`` tokens at a time, each chunk's
gradient flowing back before the next is built, so a 150k-token vocabulary
never needs a (tokens x vocabulary) logits tensor in memory at once.

The arithmetic is compile-by-training's (and cross-checked against its
functions in tests/paw/test_compilepy.py):

- examples come in pools (the JSONL file, then one per teacher model); an
  epoch holds ``target_examples`` slots shared among the pools in proportion
  to their sizes (largest remainders, :func:`allocate_quotas`), pool ``i``'s
  slots cycling through its examples; each epoch is shuffled by
  ``Random(seed + epoch)`` and a pool's slots are relabelled in order of
  first appearance (:func:`schedule`);
- a step takes ``batch_size`` of those (in ``batch_size / micro_batch_size``
  micro-batches whose gradients add up);
- the learning rate (:func:`cosine_lr`) rises over ``max(1, steps * warmup)``
  steps, then follows a cosine from ``learning_rate`` towards
  ``min_learning_rate``;
- the model runs in bfloat16 on CUDA with bf16, float16 on other CUDA and on
  MPS, float32 on the CPU (the LoRA weights stay float32);
- the LoRA starts random (seeded) or from the mapper's adapter
  (``lora_init = "mapper"``).

Torch and the LoRA initialisation are seeded, and on the CPU torch runs on
one thread, so a rebuild with the same library versions gives the same
tensors whatever the machine's core count.
"""

from __future__ import annotations

import math
import os
import random
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .._errors import BuildError
from .._torchthreads import one_cpu_thread
from .examples import Example
from .gguf_adapter import FloatArray, peft_state_to_pairs
from .prompt import fill
from .spec import Recipe

__all__ = [
    "StepReport",
    "TrainResult",
    "allocate_quotas",
    "choose_device",
    "cosine_lr",
    "schedule",
    "torch_dtype",
    "train_lora",
]

IGNORE = -100


@dataclass(frozen=True)
class StepReport:
    """Progress after one optimiser step (1-based ``step``)."""

    step: int
    steps: int
    loss: float
    learning_rate: float


@dataclass(frozen=True)
class TrainResult:
    """The trained LoRA matrices (see :data:`wgtpm.paw.gguf_adapter.LoraPairs`) and the loss per step."""

    pairs: dict[tuple[int, str], tuple[FloatArray, FloatArray]]
    losses: list[float]
    device: str


@dataclass(frozen=True)
class _Encoded:
    input_ids: list[int]
    labels: list[int]


def choose_device(requested: str) -> torch.device:
    """The device to train on, checked before any work starts (compile-by-training's preflight).

    ``auto`` picks CUDA, then MPS, then the CPU, but refuses to fall back to
    the CPU when a GPU is advertised (``CUDA_VISIBLE_DEVICES`` and the like)
    that PyTorch cannot initialise. An explicit device must be usable; a
    one-element allocation on it must succeed.
    """
    if requested == "auto":
        if torch.cuda.is_available():
            device = torch.device("cuda")
        elif _cuda_advertised():
            raise BuildError(
                "a CUDA GPU is visible but PyTorch cannot initialise CUDA; check the driver and "
                'runtime, or set recipe.device = "cpu" (--device cpu) to train on the CPU'
            )
        elif torch.backends.mps.is_available():
            device = torch.device("mps")
        else:
            device = torch.device("cpu")
    elif requested == "cuda" and not torch.cuda.is_available():
        raise BuildError(
            'recipe.device = "cuda" but PyTorch sees no usable CUDA device; use "auto" or "cpu"'
        )
    elif requested == "mps" and not torch.backends.mps.is_available():
        raise BuildError('recipe.device = "mps" but MPS is not available; use "auto" or "cpu"')
    else:
        device = torch.device(requested)
    try:
        probe = torch.empty(1, device=device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        del probe
    except Exception as exc:
        raise BuildError(f"{device}: the preflight allocation failed: {exc}") from exc
    return device


def _cuda_advertised() -> bool:
    try:
        if torch.cuda.device_count() > 0:
            return True
    except Exception:
        pass
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"):
        value = os.environ.get(name)
        if value is not None and value.strip().lower() not in ("", "-1", "none", "void"):
            return True
    return False


def cosine_lr(step: int, total: int, high: float, low: float, warmup: float) -> float:
    """The learning rate of 0-based ``step`` of ``total`` (compile-by-training's formula).

    At least one warmup step; the cosine then runs over the remaining
    ``total - warmup_steps`` steps, so the last step stays above ``low``.
    """
    warmup_steps = max(1, int(total * warmup))
    if step < warmup_steps:
        return high * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total - warmup_steps)
    return low + 0.5 * (high - low) * (1.0 + math.cos(math.pi * progress))


def allocate_quotas(counts: Sequence[int], target: int) -> list[int]:
    """``target`` slots shared in proportion to ``counts``; leftovers go to the largest remainders."""
    total = sum(counts)
    exact = [target * count / total for count in counts]
    quotas = [math.floor(value) for value in exact]
    by_remainder = sorted(range(len(counts)), key=lambda i: exact[i] - quotas[i], reverse=True)
    for index in by_remainder[: target - sum(quotas)]:
        quotas[index] += 1
    return quotas


def schedule(pool_sizes: Sequence[int], recipe: Recipe) -> list[tuple[int, int]]:
    """The (pool, example index) of every example the training run takes, in order."""
    quotas = allocate_quotas(pool_sizes, recipe.target_examples)
    needed = recipe.steps * recipe.batch_size
    slots: list[tuple[int, int]] = []
    for epoch in range(math.ceil(needed / recipe.target_examples)):
        one = [
            (pool, index % size)
            for pool, (size, quota) in enumerate(zip(pool_sizes, quotas, strict=True))
            for index in range(quota)
        ]
        random.Random(recipe.seed + epoch).shuffle(one)
        slots += one
    relabel: list[dict[int, int]] = [{} for _ in pool_sizes]
    out: list[tuple[int, int]] = []
    for pool, slot in slots[:needed]:
        out.append((pool, relabel[pool].setdefault(slot, len(relabel[pool]))))
    return out


def torch_dtype(device: torch.device) -> torch.dtype:
    """The model's dtype on ``device``: bf16 on CUDA with bf16, else fp16 on CUDA and MPS, fp32 on CPU."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def train_lora(
    model_dir: Path,
    pools: Sequence[Sequence[Example]],
    prompt_template: str,
    recipe: Recipe,
    *,
    mapper_dir: Path | None = None,
    on_step: Callable[[StepReport], None] | None = None,
    save_adapter: Path | None = None,
) -> TrainResult:
    """Train a LoRA of ``recipe`` on the interpreter in ``model_dir`` (Hugging Face format).

    ``pools`` are the example pools (see the module docstring); ``mapper_dir``
    holds the mapper's peft adapter when ``recipe.lora_init == "mapper"``;
    ``save_adapter`` receives the trained peft adapter (``save_pretrained``).
    On the CPU, torch runs on one thread meanwhile (:func:`wgtpm._torchthreads.one_cpu_thread`).
    """
    device = choose_device(recipe.device)
    with one_cpu_thread(device.type):
        return _train(
            device,
            model_dir,
            pools,
            prompt_template,
            recipe,
            mapper_dir=mapper_dir,
            on_step=on_step,
            save_adapter=save_adapter,
        )


def _train(
    device: torch.device,
    model_dir: Path,
    pools: Sequence[Sequence[Example]],
    prompt_template: str,
    recipe: Recipe,
    *,
    mapper_dir: Path | None,
    on_step: Callable[[StepReport], None] | None,
    save_adapter: Path | None,
) -> TrainResult:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    random.seed(recipe.seed)
    torch.manual_seed(recipe.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    numbered = [list(enumerate(pool)) for pool in pools]
    offsets = [sum(len(p) for p in pools[:i]) for i in range(len(pools))]
    encoded = [
        [
            _encode(tokenizer, prompt_template, e, eos, recipe.max_length, offsets[k] + i)
            for i, e in pool
        ]
        for k, pool in enumerate(numbered)
    ]

    # safetensors only: weights are never unpickled (docs/design.md section 9).
    model: Any = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch_dtype(device), use_safetensors=True
    )
    model.to(device)
    model.config.use_cache = False
    lora: dict[str, Any] = {
        "r": recipe.lora_rank,
        "lora_alpha": recipe.lora_alpha,
        "target_modules": list(recipe.target_modules),
        "lora_dropout": 0.0,
        "bias": "none",
        "task_type": "CAUSAL_LM",
    }
    mapper_state = None
    if recipe.lora_init == "mapper":
        if mapper_dir is None:
            raise BuildError('lora_init = "mapper" needs the mapper adapter (a wgtpm bug)')
        from .mapper import load_mapper_adapter

        lora["lora_dropout"], mapper_state = load_mapper_adapter(mapper_dir, recipe)
    config = LoraConfig(**lora)
    with warnings.catch_warnings():
        # peft asks transformers 5 for a renamed property; not ours to fix.
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        peft_model = get_peft_model(
            model, config
        )  # LoRA weights stay float32 (autocast_adapter_dtype)
    if mapper_state is not None:
        from peft import set_peft_model_state_dict

        result: Any = set_peft_model_state_dict(peft_model, mapper_state)
        missing = [k for k in result.missing_keys if "lora_" in k]
        if missing or result.unexpected_keys:
            raise BuildError(
                f"the mapper adapter in {mapper_dir} does not fit the interpreter: "
                f"{len(missing)} LoRA tensors missing, {len(result.unexpected_keys)} unexpected"
            )
    if recipe.gradient_checkpointing:
        peft_model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
        peft_model.enable_input_require_grads()
    peft_model.train()
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=recipe.learning_rate, weight_decay=0.0)
    base = peft_model.get_base_model()

    order = schedule([len(pool) for pool in encoded], recipe)
    losses: list[float] = []
    for step in range(recipe.steps):
        items = [
            encoded[pool][i]
            for pool, i in order[step * recipe.batch_size : (step + 1) * recipe.batch_size]
        ]
        total_tokens = sum(sum(label != IGNORE for label in item.labels) for item in items)
        if total_tokens == 0:
            raise BuildError(f"training step {step + 1}: the batch holds no output tokens")
        lr = cosine_lr(
            step, recipe.steps, recipe.learning_rate, recipe.min_learning_rate, recipe.warmup
        )
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for start in range(0, len(items), recipe.micro_batch_size):
            batch = _collate(items[start : start + recipe.micro_batch_size], pad, device)
            loss_sum += _chunked_loss_backward(base, batch, recipe.loss_chunk_size, total_tokens)
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        loss = loss_sum / total_tokens
        if not math.isfinite(loss):
            raise BuildError(
                f"training diverged at step {step + 1} (loss {loss}); lower recipe.learning_rate"
            )
        losses.append(loss)
        if on_step is not None:
            on_step(StepReport(step + 1, recipe.steps, loss, lr))

    if save_adapter is not None:
        peft_model.save_pretrained(str(save_adapter))
    state = {name: p.detach() for name, p in peft_model.named_parameters() if "lora_" in name}
    return TrainResult(pairs=peft_state_to_pairs(state), losses=losses, device=str(device))


def _encode(
    tokenizer: Any, template: str, example: Example, eos: int | None, max_length: int, index: int
) -> _Encoded:
    prompt = tokenizer.encode(fill(template, example.input), add_special_tokens=False)
    output = tokenizer.encode(example.output, add_special_tokens=False)
    if eos is not None:
        output.append(eos)
    if len(prompt) >= max_length:
        raise BuildError(
            f"example {index + 1}: the prompt is {len(prompt)} tokens, leaving no room for the output "
            f"within recipe.max_length = {max_length}; raise max_length or shorten the input"
        )
    input_ids = (prompt + output)[:max_length]
    labels = ([IGNORE] * len(prompt) + output)[:max_length]
    return _Encoded(input_ids, labels)


def _collate(items: Sequence[_Encoded], pad: int, device: torch.device) -> dict[str, torch.Tensor]:
    width = max(len(item.input_ids) for item in items)
    ids = [item.input_ids + [pad] * (width - len(item.input_ids)) for item in items]
    labels = [item.labels + [IGNORE] * (width - len(item.labels)) for item in items]
    mask = [[1] * len(item.input_ids) + [0] * (width - len(item.input_ids)) for item in items]
    return {
        "input_ids": torch.tensor(ids, dtype=torch.long, device=device),
        "labels": torch.tensor(labels, dtype=torch.long, device=device),
        "attention_mask": torch.tensor(mask, dtype=torch.long, device=device),
    }


def _chunked_loss_backward(
    base: Any, batch: dict[str, torch.Tensor], chunk: int, total_tokens: int
) -> float:
    """Backpropagate the summed output-token cross entropy / ``total_tokens``; return the sum.

    The vocabulary projection runs over ``chunk`` sequence positions at a
    time (chunks without output tokens skipped), each chunk's gradient
    flowing back into the detached hidden states before the next is built;
    the hidden states' gradient then flows through the model once.
    """
    labels = batch["labels"]
    targets = torch.full_like(labels, IGNORE)
    targets[:, :-1] = labels[:, 1:]
    hidden = base.model(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False
    ).last_hidden_state
    leaf = hidden.detach().requires_grad_(True)
    head = base.get_output_embeddings()
    loss_sum = 0.0
    for start in range(0, leaf.shape[1], chunk):
        wanted = targets[:, start : start + chunk]
        if not bool((wanted != IGNORE).any()):
            continue
        logits = head(leaf[:, start : start + chunk, :]).float()
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            wanted.reshape(-1),
            ignore_index=IGNORE,
            reduction="sum",
        )
        torch.autograd.backward(loss / total_tokens)
        loss_sum += float(loss.detach())
    torch.autograd.backward(hidden, leaf.grad)
    return loss_sum
