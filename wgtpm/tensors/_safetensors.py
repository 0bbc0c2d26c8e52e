"""The safetensors header, read without the safetensors library.

A safetensors file is::

    8 bytes     N, little-endian unsigned: the header's length
    N bytes     a JSON object (UTF-8, maybe padded with spaces):
                {"__metadata__": {"format": "pt"},
                 "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
    the rest    the tensors' bytes; data_offsets are relative to byte 8 + N

:func:`read_header` reads and checks it as hostile input: the length is at most
:data:`MAX_HEADER_SIZE` and inside the file, the JSON has no duplicate keys,
every dtype is known and every range holds exactly what its dtype and shape
take, inside the file, with no two overlapping.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

from .. import _json
from ._errors import TensorFormatError
from ._table import MAX_METADATA_STRING, TensorInfo, _no_duplicates, check_spans

__all__ = ["MAX_HEADER_SIZE", "cap", "read_header"]

#: The longest header read: the safetensors library's own limit (100,000,000 bytes), so
#: any file it loads is read here, and a length field of 2**64 - 1 allocates nothing.
MAX_HEADER_SIZE = 100_000_000

_ENTRY_KEYS = frozenset({"dtype", "shape", "data_offsets"})


def cap(s: str) -> str:
    """``s`` cut to :data:`MAX_METADATA_STRING` characters, saying how long it was."""
    if len(s) <= MAX_METADATA_STRING:
        return s
    return f"{s[:MAX_METADATA_STRING]}...({len(s)} chars)"


def read_header(f: BinaryIO, size: int, where: str) -> tuple[dict[str, str], list[TensorInfo]]:
    """The ``__metadata__`` and the tensors (absolute ranges; ``sha256`` left empty) of the
    safetensors file open as ``f`` (at offset 0), ``size`` bytes long."""
    head = f.read(8)
    if len(head) < 8:
        raise TensorFormatError(where, f"is {size} bytes: too short for a safetensors header")
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER_SIZE:
        raise TensorFormatError(
            where, f"safetensors header length {n} is more than {MAX_HEADER_SIZE} bytes"
        )
    if 8 + n > size:
        raise TensorFormatError(
            where, f"safetensors header length {n} runs past the end of the file ({size} bytes)"
        )
    raw = f.read(n)
    if len(raw) < n:
        raise TensorFormatError(where, "the file ended inside its safetensors header")
    try:
        doc = _json.loads(raw, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise TensorFormatError(where, f"safetensors header is not valid JSON: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise TensorFormatError(where, "safetensors header is not a JSON object")
    meta = _metadata(where, doc.pop("__metadata__", {}))
    base = 8 + n
    tensors = [_entry(where, name, e, base) for name, e in doc.items()]
    return meta, list(check_spans(where, "safetensors", tensors, size))


def _metadata(where: str, raw: object) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise TensorFormatError(where, "safetensors __metadata__ must map strings to strings")
    return {k: cap(v) for k, v in raw.items()}


def _entry(where: str, name: str, e: Any, base: int) -> TensorInfo:
    shown = repr(name[:200])
    if not isinstance(e, dict) or e.keys() != _ENTRY_KEYS:
        raise TensorFormatError(
            where, f"tensor {shown}: want exactly the keys {sorted(_ENTRY_KEYS)}"
        )
    dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
    if not isinstance(dtype, str) or not isinstance(shape, list):
        raise TensorFormatError(where, f"tensor {shown}: dtype must be a string, shape a list")
    if not all(type(d) is int and d >= 0 for d in shape):
        raise TensorFormatError(where, f"tensor {shown}: shape must be whole numbers")
    if (
        not isinstance(offs, list)
        or len(offs) != 2
        or not all(type(o) is int and o >= 0 for o in offs)
    ):
        raise TensorFormatError(where, f"tensor {shown}: data_offsets must be [BEGIN, END]")
    if offs[0] > offs[1]:
        raise TensorFormatError(where, f"tensor {shown}: data_offsets {offs} end before they begin")
    return TensorInfo(name, dtype, tuple(shape), base + offs[0], base + offs[1], "")
