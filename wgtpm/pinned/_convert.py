"""Verified bytes to torch tensors and back: dtype names, shapes, and the sha256 of a tensor.

Safetensors stores tensors little-endian, in C order, with the shape as
torch gives it; GGUF stores the shape innermost first (``ne[0]`` first, the
tensor table keeps it so), so a GGUF tensor of table shape ``[64, 320]`` is
a torch tensor of shape ``[320, 64]``. Quantized GGUF types (``Q4_0`` and
the like) have no torch dtype and are refused, naming the tensor.

Imports torch: loaded only when a tensor is read, grafted or saved.
"""

from __future__ import annotations

import sys

import torch

from .._errors import UsageError

__all__ = ["SAFETENSORS_DTYPES", "from_bytes", "safetensors_dtype", "tensor_sha256", "torch_dtype"]

#: The safetensors dtype names torch can hold (GGUF's unquantized types use the same names).
SAFETENSORS_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
}


def torch_dtype(stored: str, where: str) -> torch.dtype:
    """The torch dtype of the table dtype ``stored``; ``where`` names the tensor in the error."""
    found = SAFETENSORS_DTYPES.get(stored)
    if found is None:
        raise UsageError(
            f"{where}: dtype {stored} has no torch dtype (a quantized GGUF type?); "
            "dequantize it with the gguf package, or pick an unquantized file"
        )
    return found


def safetensors_dtype(dtype: torch.dtype) -> str:
    """The safetensors name of a torch dtype (``torch.float32`` -> ``"F32"``)."""
    for name, known in SAFETENSORS_DTYPES.items():
        if known == dtype:
            return name
    raise UsageError(f"dtype {dtype} cannot be stored in safetensors; convert the tensor first")


def from_bytes(
    data: bytes, stored: str, shape: tuple[int, ...], fmt: str, where: str
) -> torch.Tensor:
    """A fresh, writable tensor of ``data`` (verified bytes of one tensor, little-endian)."""
    dtype = torch_dtype(stored, where)
    dims = tuple(reversed(shape)) if fmt == "gguf" else shape
    if not data:
        return torch.empty(dims, dtype=dtype)
    flat = torch.frombuffer(bytearray(data), dtype=dtype)
    if sys.byteorder == "big" and flat.element_size() > 1:  # stored little-endian
        flat = torch.frombuffer(bytearray(flat.numpy().byteswap().tobytes()), dtype=dtype)
    count = 1
    for d in dims:
        count *= d
    if flat.numel() != count:
        raise UsageError(
            f"{where}: {len(data)} bytes do not hold a {stored} tensor of shape {list(shape)}"
        )
    return flat.reshape(dims)


def tensor_sha256(tensor: torch.Tensor) -> str:
    """The sha256 of ``tensor``'s bytes in its own dtype, C order, little-endian (as saved)."""
    import hashlib

    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    return hashlib.sha256(raw).hexdigest()
