"""Adapters pinned to their base, and PAW programs from Python.

::

    adapter = wgtpm.adapter("github.com/acme/triage/triage")  # a peft LoRA dir or a .paw program
    adapter.base                      # BaseIdentity(module, version, weights_sha256)
    lm = adapter.apply(model)         # refused unless model._wgtpm_base == adapter.base
    prog = wgtpm.load("github.com/acme/fruit/fruit"); prog("yellow")   # as `wgtpm run` runs it

- :mod:`~wgtpm.adapters._base`: :class:`BaseIdentity`, the weights sha256 of
  a module, the ``_wgtpm_base`` of a model, :class:`BaseMismatchError`;
- :mod:`~wgtpm.adapters._adapter`: finding an adapter and its pinned base;
- :mod:`~wgtpm.adapters._lora`: putting it on a model with peft (torch, peft);
- :mod:`~wgtpm.adapters._program`: ``wgtpm.load`` of WeightLang artifacts and PAW programs.

Importing this package loads neither torch nor peft nor transformers.
"""

from ._adapter import Adapter, open_adapter
from ._base import BaseIdentity, BaseMismatchError, base_identity, base_of, mark_base
from ._program import Program, load, load_paw

__all__ = [
    "Adapter",
    "BaseIdentity",
    "BaseMismatchError",
    "Program",
    "adapter",
    "base_identity",
    "base_of",
    "load",
    "load_paw",
    "mark_base",
    "open_adapter",
]

#: ``wgtpm.adapter(REF)``: the name the issue gives :func:`open_adapter`.
adapter = open_adapter
