"""Element sizes: safetensors dtypes and GGML tensor types, and the bytes a shape takes.

A safetensors tensor of shape ``(d0, d1, ...)`` and dtype ``D`` takes
``d0 * d1 * ... * bits(D) / 8`` bytes (sub-byte dtypes such as ``F4`` must fill
whole bytes). A GGML tensor stores blocks: ``ne[0]`` (the first dimension as
GGUF stores it, the fastest-varying one) must be a multiple of the type's block
size, and the tensor takes ``n_elements / block_size * type_size`` bytes, as
``gguf.constants.GGML_QUANT_SIZES`` and ggml.c's ``ggml_row_size`` say.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = [
    "GGML_TYPES",
    "GGML_TYPES_BY_NAME",
    "MAX_DIMS",
    "SAFETENSORS_DTYPE_BITS",
    "GgmlType",
    "tensor_nbytes",
]

#: The most dimensions a tensor may have in a table: safetensors sets no limit and
#: GGML 4; a table that claims thousands is hostile (shape checks multiply them out).
MAX_DIMS = 64

#: Bits per element of each safetensors dtype (the safetensors format's ``Dtype`` enum).
SAFETENSORS_DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}


class GgmlType(NamedTuple):
    """One GGML tensor type: its id in a GGUF file, name, elements per block, bytes per block."""

    id: int
    name: str
    block: int
    size: int


#: The GGML types wgtpm knows, by id (ggml.h's ``enum ggml_type``; ids 4 and 5 were
#: Q4_2 and Q4_3, removed from ggml long ago, and are refused). Q8_1 is 36 bytes a block
#: as ggml lays it out (two halves and 32 bytes; gguf-py still says 40, from when the
#: halves were floats): ggml uses it only for intermediate dot products.
GGML_TYPES: dict[int, GgmlType] = {
    t.id: t
    for t in (
        GgmlType(0, "F32", 1, 4),
        GgmlType(1, "F16", 1, 2),
        GgmlType(2, "Q4_0", 32, 18),
        GgmlType(3, "Q4_1", 32, 20),
        GgmlType(6, "Q5_0", 32, 22),
        GgmlType(7, "Q5_1", 32, 24),
        GgmlType(8, "Q8_0", 32, 34),
        GgmlType(9, "Q8_1", 32, 36),
        GgmlType(10, "Q2_K", 256, 84),
        GgmlType(11, "Q3_K", 256, 110),
        GgmlType(12, "Q4_K", 256, 144),
        GgmlType(13, "Q5_K", 256, 176),
        GgmlType(14, "Q6_K", 256, 210),
        GgmlType(15, "Q8_K", 256, 292),
        GgmlType(16, "IQ2_XXS", 256, 66),
        GgmlType(17, "IQ2_XS", 256, 74),
        GgmlType(18, "IQ3_XXS", 256, 98),
        GgmlType(19, "IQ1_S", 256, 50),
        GgmlType(20, "IQ4_NL", 32, 18),
        GgmlType(21, "IQ3_S", 256, 110),
        GgmlType(22, "IQ2_S", 256, 82),
        GgmlType(23, "IQ4_XS", 256, 136),
        GgmlType(24, "I8", 1, 1),
        GgmlType(25, "I16", 1, 2),
        GgmlType(26, "I32", 1, 4),
        GgmlType(27, "I64", 1, 8),
        GgmlType(28, "F64", 1, 8),
        GgmlType(29, "IQ1_M", 256, 56),
        GgmlType(30, "BF16", 1, 2),
        GgmlType(34, "TQ1_0", 256, 54),
        GgmlType(35, "TQ2_0", 256, 66),
        GgmlType(39, "MXFP4", 32, 17),
        GgmlType(40, "NVFP4", 64, 36),
        GgmlType(41, "Q1_0", 128, 18),
    )
}
GGML_TYPES_BY_NAME: dict[str, GgmlType] = {t.name: t for t in GGML_TYPES.values()}


def tensor_nbytes(fmt: str, dtype: str, shape: tuple[int, ...]) -> int | str:
    """The bytes a tensor of ``dtype`` and ``shape`` takes in a file of format ``fmt``,
    or why it cannot be stored (an unknown dtype, a shape that does not fill whole bytes
    or blocks)."""
    if len(shape) > MAX_DIMS:
        return f"has {len(shape)} dimensions (at most {MAX_DIMS})"
    n = math.prod(shape)
    if fmt == "safetensors":
        bits = SAFETENSORS_DTYPE_BITS.get(dtype)
        if bits is None:
            return f"has the unknown safetensors dtype {dtype!r}"
        if n * bits % 8:
            return f"of dtype {dtype} and shape {list(shape)} does not fill whole bytes"
        return n * bits // 8
    t = GGML_TYPES_BY_NAME.get(dtype)
    if t is None:
        return f"has the unknown GGML type {dtype!r}"
    if shape and shape[0] % t.block:
        return f"of type {dtype} has ne[0] = {shape[0]}, not a multiple of its block size {t.block}"
    return n // t.block * t.size
