"""The GGUF adapter's names and tensor types, importable without numpy or gguf.

:mod:`wgtpm.paw.gguf_adapter` reads and writes adapters (and needs numpy);
the spec parser and the validator only need to know which quantisations
exist, their block sizes and how adapter tensors are named, so those live
here::

    blk.{L}.{attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down}.weight.lora_{a|b}
"""

from __future__ import annotations

import re

from .shape import GGUF_MODULE_NAMES

__all__ = ["QUANTIZATIONS", "TENSOR_NAME_RE", "quantization_block"]

#: Tensor types an adapter may be written in; Q4_0 is what the SDK's programs use.
QUANTIZATIONS: tuple[str, ...] = ("Q4_0", "Q8_0", "F16", "BF16", "F32")

#: An adapter tensor's name: group 1 the layer, 2 the GGUF module name, 3 ``a`` or ``b``.
TENSOR_NAME_RE = re.compile(
    r"^blk\.(\d+)\.(" + "|".join(GGUF_MODULE_NAMES.values()) + r")\.weight\.lora_(a|b)\Z"
)


def quantization_block(quantization: str) -> int:
    """How many values a row length must be a multiple of for ``quantization``."""
    return 32 if quantization in ("Q4_0", "Q8_0") else 1
