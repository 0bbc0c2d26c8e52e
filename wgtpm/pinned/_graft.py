"""``wgtpm.graft``: copy pinned tensors into a torch model's parameters, checked and recorded.

>>> wgtpm.graft(model, {"tok.weight": qwen.tensor("model.embed_tokens.weight")})  # doctest: +SKIP

Every pair is checked before any parameter changes: the parameter exists,
and its shape and dtype equal the tensor's (a dtype is never converted
silently: read the tensor with ``dtype=``, which its origin records). Then
each tensor is copied into its parameter, ``requires_grad`` is turned off
(``freeze=True``) and the tensor's :class:`~wgtpm.pinned.Origin` moves to
the parameter, where :func:`wgtpm.save` finds it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

import torch
from torch import nn

from .._errors import UsageError
from ._origin import forget, record, tracked

__all__ = ["GraftError", "graft"]


class GraftError(UsageError):
    """A tensor that does not fit the parameter it was to be grafted into.

    ``parameter`` names the parameter; ``expected`` and ``given`` are the
    parameter's and the tensor's shape or dtype, as text.
    """

    def __init__(self, parameter: str, what: str, expected: str, given: str, source: str) -> None:
        self.parameter = parameter
        self.expected = expected
        self.given = given
        super().__init__(
            f"graft: parameter {parameter} has {what} {expected} but the tensor given "
            f"({source}) has {what} {given}"
            + (
                "; read it with dtype= to convert it (the conversion is recorded)"
                if what == "dtype"
                else ""
            )
        )


def _source(tensor: torch.Tensor) -> str:
    found = tracked(tensor)
    return found.origin.label if found is not None else "an untracked tensor"


def _check(params: Mapping[str, nn.Parameter], name: str, tensor: object) -> None:
    if name not in params:
        close = difflib.get_close_matches(name, list(params), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(f"graft: the model has no parameter {name}{hint}")
    if not isinstance(tensor, torch.Tensor):
        raise UsageError(f"graft: the value for {name} is a {type(tensor).__name__}, not a tensor")
    param = params[name]
    if tuple(param.shape) != tuple(tensor.shape):
        raise GraftError(
            name, "shape", str(list(param.shape)), str(list(tensor.shape)), _source(tensor)
        )
    if param.dtype != tensor.dtype:
        raise GraftError(name, "dtype", str(param.dtype), str(tensor.dtype), _source(tensor))


def graft(model: nn.Module, tensors: Mapping[str, torch.Tensor], *, freeze: bool = True) -> None:
    """Copy ``tensors`` (parameter name -> tensor) into ``model`` (see the module docstring).

    Raises :class:`GraftError` (or :class:`~wgtpm.UsageError` for an unknown
    name) before changing anything.
    """
    params = dict(model.named_parameters(remove_duplicate=False))
    for name, tensor in tensors.items():
        _check(params, name, tensor)
    with torch.no_grad():
        for name, tensor in tensors.items():
            param = params[name]
            param.copy_(tensor)
            param.requires_grad_(not freeze)
            found = tracked(tensor)
            if found is None:
                forget(param)
            else:  # the bytes as read: a tensor changed since then is not "imported" as is
                record(param, found.origin, found.held_sha256)
