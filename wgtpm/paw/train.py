"""LoRA finetuning of a Qwen3 interpreter on input/output examples (transformers + peft).

Each example becomes ``prompt tokens + output tokens + EOS``, where the
prompt is the program's template filled with the input; the loss is the
cross entropy of the output tokens only. The vocabulary projection of those
positions is computed ``loss_chunk_size`` tokens at a time, each chunk's
gradient flowing back before the next is built, so a 150k-token vocabulary
never needs a (tokens x vocabulary) logits tensor in memory at once.

A step takes ``batch_size`` examples (in ``batch_size / micro_batch_size``
micro-batches whose gradients add up) from a seeded schedule: every epoch is
a shuffle of all examples by ``Random(seed + epoch)``. The learning rate
rises linearly over the warmup fraction, then follows a cosine from
``learning_rate`` down to ``min_learning_rate`` at the last step. Torch and
the LoRA initialisation are seeded, so a rebuild on the same machine and
library versions gives the same tensors.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .._errors import BuildError
from .examples import Example
from .gguf_adapter import FloatArray, peft_state_to_pairs
from .prompt import fill
from .spec import Recipe

__all__ = ["StepReport", "TrainResult", "choose_device", "cosine_lr", "train_lora"]

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
    """``auto`` picks CUDA, then MPS, then the CPU; an explicit device must be usable."""
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise BuildError(
            'recipe.device = "cuda" but PyTorch sees no usable CUDA device; use "auto" or "cpu"'
        )
    if requested == "mps" and not torch.backends.mps.is_available():
        raise BuildError('recipe.device = "mps" but MPS is not available; use "auto" or "cpu"')
    return torch.device(requested)


def cosine_lr(step: int, total: int, high: float, low: float, warmup: float) -> float:
    """The learning rate of 0-based ``step`` of ``total``."""
    warmup_steps = int(total * warmup)
    if step < warmup_steps:
        return high * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total - warmup_steps - 1)
    return low + 0.5 * (high - low) * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def train_lora(
    model_dir: Path,
    examples: Sequence[Example],
    prompt_template: str,
    recipe: Recipe,
    *,
    on_step: Callable[[StepReport], None] | None = None,
) -> TrainResult:
    """Train a LoRA of ``recipe`` on the interpreter in ``model_dir`` (Hugging Face format)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    device = choose_device(recipe.device)
    random.seed(recipe.seed)
    torch.manual_seed(recipe.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    encoded = [
        _encode(tokenizer, prompt_template, e, eos, recipe.max_length, i)
        for i, e in enumerate(examples)
    ]

    # safetensors only: weights are never unpickled (DESIGN.md section 9).
    model: Any = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=_dtype(device), use_safetensors=True
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
    config = LoraConfig(**lora)
    with warnings.catch_warnings():
        # peft asks transformers 5 for a renamed property; not ours to fix.
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        peft_model = get_peft_model(
            model, config
        )  # LoRA weights stay float32 (autocast_adapter_dtype)
    if recipe.gradient_checkpointing:
        peft_model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
        peft_model.enable_input_require_grads()
    peft_model.train()
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=recipe.learning_rate, weight_decay=0.0)
    base = peft_model.get_base_model()

    order = _schedule(len(encoded), recipe)
    losses: list[float] = []
    for step in range(recipe.steps):
        items = [
            encoded[i] for i in order[step * recipe.batch_size : (step + 1) * recipe.batch_size]
        ]
        total_tokens = sum(sum(label != IGNORE for label in item.labels) for item in items)
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
        loss = loss_sum / total_tokens
        if not math.isfinite(loss):
            raise BuildError(
                f"training diverged at step {step + 1} (loss {loss}); lower recipe.learning_rate"
            )
        losses.append(loss)
        if on_step is not None:
            on_step(StepReport(step + 1, recipe.steps, loss, lr))

    state = {name: p.detach() for name, p in peft_model.named_parameters() if "lora_" in name}
    return TrainResult(pairs=peft_state_to_pairs(state), losses=losses, device=str(device))


def _dtype(device: torch.device) -> torch.dtype:
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


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


def _schedule(count: int, recipe: Recipe) -> list[int]:
    needed = recipe.steps * recipe.batch_size
    order: list[int] = []
    epoch = 0
    while len(order) < needed:
        indices = list(range(count))
        random.Random(recipe.seed + epoch).shuffle(indices)
        order += indices
        epoch += 1
    return order[:needed]


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
    """Backpropagate the summed output-token cross entropy / ``total_tokens``; return the sum."""
    hidden = base.model(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
    ).last_hidden_state
    targets = batch["labels"][:, 1:]
    selected = targets != IGNORE
    states = hidden[:, :-1][selected]
    wanted = targets[selected]
    leaf = states.detach().requires_grad_(True)
    head = base.get_output_embeddings()
    loss_sum = 0.0
    for start in range(0, leaf.shape[0], chunk):
        logits = head(leaf[start : start + chunk]).float()
        loss = torch.nn.functional.cross_entropy(
            logits, wanted[start : start + chunk], reduction="sum"
        )
        torch.autograd.backward(loss / total_tokens)
        loss_sum += float(loss.detach())
    torch.autograd.backward(states, leaf.grad)
    return loss_sum
