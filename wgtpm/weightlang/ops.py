"""The layer operations of WeightLang and what each one needs and produces.

This table is the single description of an operation: the parser reads the
parameter names (and their order, for positional arguments), the checker the
width rules, the artifact verifier the tensor shapes, and the torch builder
(:mod:`wgtpm.weightlang.model`) the op name. Nothing here imports torch.

=========  ==============  ======================  ============================
op         parameters      width in -> out         tensors
=========  ==============  ======================  ============================
linear     in, out (int)   in -> out               weight [out, in], bias [out]
layernorm  n (int)         n -> n                  weight [n], bias [n]
rmsnorm    n (int)         n -> n                  weight [n]
embedding  vocab, dim      N ids -> N * dim        weight [vocab, dim]
dropout    p (float)       w -> w (0 <= p < 1)     none
relu, tanh, sigmoid, gelu, softmax                 w -> w, no tensors
=========  ==============  ======================  ============================

``embedding`` is the one op that takes token ids (:attr:`Op.takes_ids`): it
must be the first layer, and the model's input is then ``i64[N]``; each of
the N ids becomes its row of ``weight``, and the N rows are concatenated
(``N * dim`` values: ``dim`` for one id). ``rmsnorm`` is Qwen3's RMS norm,
``x * rsqrt(mean(x^2) + eps) * weight`` with ``eps`` = :data:`RMSNORM_EPS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OPS",
    "RMSNORM_EPS",
    "LayerSpec",
    "Op",
    "Param",
    "tensor_shapes",
]

Number = int | float

#: The epsilon of ``rmsnorm``, Qwen3's ``rms_norm_eps``: a Qwen3 norm weight imported into an
#: rmsnorm computes what it computed there.
RMSNORM_EPS = 1e-6


@dataclass(frozen=True)
class Param:
    """One parameter of an operation: ``linear(in=2, out=8)`` has ``in`` and ``out``.

    ``integer`` parameters take whole numbers >= ``minimum``; float parameters
    take ``minimum <= value < below`` (``below`` is None for no upper bound).
    """

    name: str
    integer: bool
    minimum: float
    below: float | None = None

    def describe(self) -> str:
        """The accepted values in words, for error messages."""
        if self.integer:
            return f"an integer >= {int(self.minimum)}"
        upper = f" and < {self.below:g}" if self.below is not None else ""
        return f"a number >= {self.minimum:g}{upper}"

    def accepts(self, value: Number) -> bool:
        if self.integer and not isinstance(value, int):
            return False
        if value < self.minimum:
            return False
        return self.below is None or value < self.below


Shapes = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class Op:
    """An operation: its parameters, its width rule and its tensors.

    ``width_in`` names the parameter that must equal the incoming width
    (None: any width); ``width_out`` the parameter that gives the outgoing
    width (None: unchanged). ``tensors`` maps arguments to the trainable
    tensors' shapes, by tensor name (``weight``, ``bias``). An op that
    ``takes_ids`` reads token ids, not values: N ids in give ``N *
    args[width_out]`` values out.
    """

    name: str
    params: tuple[Param, ...] = ()
    width_in: str | None = None
    width_out: str | None = None
    tensors: Callable[[Mapping[str, Number]], Shapes] = lambda args: {}
    takes_ids: bool = False


def _linear_tensors(args: Mapping[str, Number]) -> Shapes:
    return {"weight": (int(args["out"]), int(args["in"])), "bias": (int(args["out"]),)}


def _norm_tensors(args: Mapping[str, Number]) -> Shapes:
    return {"weight": (int(args["n"]),), "bias": (int(args["n"]),)}


def _rmsnorm_tensors(args: Mapping[str, Number]) -> Shapes:
    return {"weight": (int(args["n"]),)}


def _embedding_tensors(args: Mapping[str, Number]) -> Shapes:
    return {"weight": (int(args["vocab"]), int(args["dim"]))}


OPS: Mapping[str, Op] = {
    op.name: op
    for op in (
        Op(
            "linear",
            (Param("in", True, 1), Param("out", True, 1)),
            width_in="in",
            width_out="out",
            tensors=_linear_tensors,
        ),
        Op("layernorm", (Param("n", True, 1),), width_in="n", tensors=_norm_tensors),
        Op("rmsnorm", (Param("n", True, 1),), width_in="n", tensors=_rmsnorm_tensors),
        Op(
            "embedding",
            (Param("vocab", True, 1), Param("dim", True, 1)),
            width_out="dim",
            tensors=_embedding_tensors,
            takes_ids=True,
        ),
        Op("dropout", (Param("p", False, 0.0, 1.0),)),
        Op("relu"),
        Op("tanh"),
        Op("sigmoid"),
        Op("gelu"),
        Op("softmax"),
    )
}


@dataclass(frozen=True)
class LayerSpec:
    """One layer as the manifest lists it: ``{"name": "h1", "op": "linear", "args": {...}}``."""

    name: str
    op: str
    args: Mapping[str, Number]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "args": dict(sorted(self.args.items()))}

    def tensor_shapes(self) -> Shapes:
        """The layer's tensors by full name (``h1.weight``), e.g. ``{"h1.weight": (8, 2)}``."""
        return {f"{self.name}.{t}": s for t, s in tensor_shapes(self.op, self.args).items()}


def tensor_shapes(op: str, args: Mapping[str, Number]) -> Shapes:
    """The trainable tensors of ``op`` with ``args``: ``linear(2, 8)`` -> weight [8, 2], bias [8]."""
    return OPS[op].tensors(args)
