"""Deterministic training of a WeightLang model.

Full-batch gradient descent by default; with ``batch=N`` every epoch visits
the rows in a fresh order drawn from the build's private generator, in
chunks of N (the last may be smaller). Frozen tensors are kept out of the
optimiser and are bit-identical afterwards. The loss is checked after every
step: a NaN or infinity stops the build with a :class:`BuildError` instead of
writing garbage weights.

The training record (manifest ``training``, in the prototype's key order)
holds the settings, the data's sha256, and the loss on the whole training
set before and after training, measured in eval mode (no dropout), and
``train_accuracy`` where it applies: ``bce`` counts each output thresholded
at 0.5, ``ce`` each row's arg-max class. Both are measured on the training
data and say nothing about generalisation (the record's ``note`` says so).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from .._errors import BuildError
from .syntax import Row, Train

__all__ = ["NOTE", "rows_sha256", "train", "training_tensors"]

NOTE = "metrics are measured on the training data only; they say nothing about generalisation"


def rows_sha256(rows: Sequence[Row]) -> str:
    """The prototype's ``data_sha256``: sha256 of ``{"inputs":[[...]],"targets":[[...]]}``.

    Compact JSON with sorted keys, every value a float:
    ``{"inputs":[[0.0,1.0]],"targets":[[1.0]]}`` for the one row ``[0, 1] -> [1]``.
    """
    doc = {
        "inputs": [[float(v) for v in r.inputs] for r in rows],
        "targets": [[float(v) for v in r.targets] for r in rows],
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def training_tensors(rows: Sequence[Row], loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``[N, in]`` and targets: ``[N, out]`` float, or ``[N]`` class indices for ``ce``."""
    x = torch.tensor([list(r.inputs) for r in rows], dtype=torch.float32)
    if loss == "ce":
        return x, torch.tensor([int(r.targets[0]) for r in rows], dtype=torch.long)
    return x, torch.tensor([list(r.targets) for r in rows], dtype=torch.float32)


def _loss_fn(loss: str) -> nn.Module:
    losses: dict[str, type[nn.Module]] = {
        "mse": nn.MSELoss,
        "bce": nn.BCELoss,
        "ce": nn.CrossEntropyLoss,
    }
    return losses[loss]()


def _optimizer(spec: Train, params: list[nn.Parameter]) -> torch.optim.Optimizer:
    if spec.optimizer == "sgd":
        return torch.optim.SGD(params, lr=spec.lr)
    return torch.optim.Adam(params, lr=spec.lr)


def _batches(n: int, batch: int | None, generator: torch.Generator) -> Iterator[torch.Tensor]:
    if batch is None or batch >= n:
        yield torch.arange(n)
        return
    order = torch.randperm(n, generator=generator)
    for start in range(0, n, batch):
        yield order[start : start + batch]


def train(
    module: nn.Module,
    spec: Train,
    rows: Sequence[Row],
    generator: torch.Generator,
    on_epoch: Callable[[int, int, float], None] | None = None,
) -> dict[str, Any]:
    """Train ``module`` in place on ``rows`` as ``spec`` says; returns the training record.

    ``on_epoch(epoch, epochs, loss)`` is called after each epoch with the mean
    loss of its steps (for progress; it does not change the training).
    """
    x, y = training_tensors(rows, spec.loss)
    loss_fn = _loss_fn(spec.loss)
    params = [p for p in module.parameters() if p.requires_grad]
    initial = _evaluate(module, loss_fn, x, y)
    _check_finite(spec, initial, "before training (the model's outputs are not finite)")
    steps = 0
    if params:
        opt = _optimizer(spec, params)
        module.train()
        for epoch in range(1, spec.epochs + 1):
            total, count = 0.0, 0
            for index in _batches(len(x), spec.batch, generator):
                opt.zero_grad()
                steps += 1
                out = module(x[index])
                # BCELoss refuses NaN inputs with its own error: check the outputs first.
                if not bool(torch.isfinite(out.detach()).all()):
                    _check_finite(spec, math.nan, f"at epoch {epoch} (step {steps})")
                loss = loss_fn(out, y[index])
                value = float(loss.detach())
                _check_finite(spec, value, f"at epoch {epoch} (step {steps})")
                total, count = total + value, count + 1
                loss.backward()
                opt.step()
            if on_epoch is not None:
                on_epoch(epoch, spec.epochs, total / max(count, 1))
    module.eval()
    final = _evaluate(module, loss_fn, x, y)
    _check_finite(spec, final, "after the last step")
    record: dict[str, Any] = {
        "data": spec.data,
        "data_sha256": rows_sha256(rows),
        "rows": len(x),
        "loss": spec.loss,
        "optimizer": spec.optimizer,
        "lr": spec.lr,
        "epochs": spec.epochs,
        "batch": "full" if spec.batch is None else spec.batch,
        "initial_loss": initial,
        "final_loss": final,
        "note": NOTE,
    }
    accuracy = _accuracy(module, spec.loss, x, y)
    if accuracy is not None:
        record["train_accuracy"] = accuracy
    record["steps"] = steps
    return record


def _check_finite(spec: Train, value: float, when: str) -> None:
    if not math.isfinite(value):
        raise BuildError(
            f"{spec.pos}: training diverged: the loss became {value} {when}; "
            f"lower lr={spec.lr:g}, or look for extreme values in data {spec.data}"
        )


@torch.no_grad()
def _evaluate(module: nn.Module, loss_fn: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    module.eval()
    out = module(x)
    if not bool(torch.isfinite(out).all()):
        return math.nan
    return float(loss_fn(out, y))


@torch.no_grad()
def _accuracy(module: nn.Module, loss: str, x: torch.Tensor, y: torch.Tensor) -> float | None:
    module.eval()
    out = module(x)
    if loss == "bce":
        return float(((out >= 0.5).float() == y).float().mean())
    if loss == "ce":
        return float((out.argmax(dim=-1) == y).float().mean())
    return None
