"""The torch module of a declarative layer list, and its seeded initialisation.

The same code builds the module for training (from the program) and for
loading (from the manifest), so an artifact is rebuilt from data, never from
pickled code. Every random draw comes from a private ``torch.Generator``
seeded from the program's ``seed``: building never reads or disturbs torch's
global random state, and the same seed gives the same bits.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import nn

from .ops import RMSNORM_EPS, LayerSpec

__all__ = [
    "INIT_METHOD",
    "IdEmbedding",
    "RMSNorm",
    "SeededDropout",
    "build_module",
    "init_method",
    "init_parameters",
    "set_generator",
]

INIT_METHOD = (
    "torch.Generator().manual_seed(seed), drawn in layer order: linear weight then bias "
    "uniform(-1/sqrt(in), 1/sqrt(in)); layernorm weight 1, bias 0"
)


#: What :data:`INIT_METHOD` adds for a model with an embedding or rmsnorm layer (a model
#: without them records :data:`INIT_METHOD` alone, so its manifest bytes stay as they were).
_INIT_NEW_OPS = "; embedding weight normal(0, 1); rmsnorm weight 1"


def init_method(layers: Sequence[LayerSpec]) -> str:
    """The ``init.method`` a manifest records for ``layers``."""
    if any(spec.op in ("embedding", "rmsnorm") for spec in layers):
        return INIT_METHOD + _INIT_NEW_OPS
    return INIT_METHOD


class IdEmbedding(nn.Module):
    """``embedding(vocab, dim)``: ``[..., N]`` token ids -> ``[..., N * dim]``, rows concatenated.

    The ids may come as floats (training rows and ``predict`` inputs are
    f32): each must be a whole number in ``0 <= id < vocab``, else a
    ValueError names the first bad one (torch's own error would be an index error deep inside).
    """

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = x.long()
        vocab = self.weight.shape[0]
        bad = (ids != x) | (ids < 0) | (ids >= vocab)
        if bool(bad.any()):
            value = x[bad].flatten()[0].item()
            raise ValueError(f"token id {value} is not a whole number 0 <= id < {vocab}")
        return nn.functional.embedding(ids, self.weight).flatten(-2)

    def extra_repr(self) -> str:
        return f"vocab={self.weight.shape[0]}, dim={self.weight.shape[1]}"


class RMSNorm(nn.Module):
    """``rmsnorm(n)``: ``x * rsqrt(mean(x^2) + eps) * weight`` over the last dimension, as Qwen3."""

    def __init__(self, n: int, eps: float = RMSNORM_EPS) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * scale * self.weight

    def extra_repr(self) -> str:
        return f"n={self.weight.shape[0]}, eps={self.eps}"


class SeededDropout(nn.Module):
    """Dropout whose masks come from a private generator (``nn.Dropout`` uses the global one).

    In eval mode (inference, loading) it is the identity.
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p
        self.generator: torch.Generator | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = torch.rand(x.shape, generator=self.generator) >= self.p
        return x * keep / (1.0 - self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def _make(spec: LayerSpec) -> nn.Module:
    args = spec.args
    if spec.op == "linear":
        # Made on the meta device: nn.Linear would otherwise draw from torch's global generator.
        linear = nn.Linear(int(args["in"]), int(args["out"]), device="meta")
        return linear.to_empty(device="cpu")
    if spec.op == "layernorm":
        return nn.LayerNorm(int(args["n"]))
    if spec.op == "embedding":
        return IdEmbedding(int(args["vocab"]), int(args["dim"]))
    if spec.op == "rmsnorm":
        return RMSNorm(int(args["n"]))
    if spec.op == "dropout":
        return SeededDropout(float(args["p"]))
    if spec.op == "softmax":
        return nn.Softmax(dim=-1)
    simple: dict[str, type[nn.Module]] = {
        "relu": nn.ReLU,
        "tanh": nn.Tanh,
        "sigmoid": nn.Sigmoid,
        "gelu": nn.GELU,
    }
    return simple[spec.op]()


def build_module(layers: Sequence[LayerSpec]) -> nn.Sequential:
    """An ``nn.Sequential`` with one child per layer, named as the layer (tensor ``h1.weight``).

    Linear tensors are left uninitialised: call :func:`init_parameters` or load a state dict.
    """
    return nn.Sequential(OrderedDict((spec.name, _make(spec)) for spec in layers))


@torch.no_grad()
def init_parameters(module: nn.Sequential, generator: torch.Generator) -> None:
    """Initialise every tensor as :data:`INIT_METHOD` says, drawing from ``generator``."""
    for child in module:
        if isinstance(child, nn.Linear):
            bound = 1.0 / math.sqrt(child.in_features)
            child.weight.uniform_(-bound, bound, generator=generator)
            if child.bias is not None:
                child.bias.uniform_(-bound, bound, generator=generator)
        elif isinstance(child, nn.LayerNorm):
            nn.init.ones_(child.weight)
            nn.init.zeros_(child.bias)
        elif isinstance(child, IdEmbedding):
            child.weight.normal_(0.0, 1.0, generator=generator)
        elif isinstance(child, RMSNorm):
            nn.init.ones_(child.weight)


def set_generator(module: nn.Module, generator: torch.Generator | None) -> None:
    """Give every dropout layer of ``module`` its mask generator (None to detach it)."""
    for child in module.modules():
        if isinstance(child, SeededDropout):
            child.generator = generator
