"""Computing a weights file's table, and reading one tensor's verified bytes.

:func:`compute_table` reads the file once: the header (safetensors or GGUF) gives
each tensor's range, then one pass hashes the whole file and, from the same
buffers, each tensor's range. The whole-file hash runs on a second thread
(hashlib lets go of the GIL), so the table costs about one ``sha256sum`` of the
file on two cores, not two.

:func:`read_tensor_bytes` reads one tensor and hands its bytes back only after
:func:`check_tensor_bytes` found them to match the table: a ranged HTTP reader
calls the same check on the bytes it fetched.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from io import BufferedReader
from pathlib import Path

from .._errors import ChecksumMismatchError
from ._errors import TensorFormatError
from ._table import FileTable, TensorInfo

__all__ = ["CHUNK", "check_tensor_bytes", "compute_table", "format_of", "read_tensor_bytes"]

#: Bytes read and hashed at a time: big enough that handing each block to the
#: hashing thread costs nothing next to hashing it (8 MiB take ~15 ms).
CHUNK = 8 << 20


def format_of(relpath: str) -> str | None:
    """``"safetensors"`` or ``"gguf"`` by the file's name, or ``None`` for other files."""
    if relpath.endswith(".safetensors"):
        return "safetensors"
    if relpath.endswith(".gguf"):
        return "gguf"
    return None


def compute_table(path: Path, relpath: str, *, where: str | None = None) -> FileTable:
    """The table of the weights file at ``path`` (logical path ``relpath`` in its module).

    Errors are one-line :class:`TensorFormatError` naming ``where`` (default ``relpath``).
    """
    where = where or relpath
    fmt = format_of(relpath)
    if fmt is None:
        raise TensorFormatError(where, "is neither a .safetensors nor a .gguf file")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        meta: dict[str, object]
        if fmt == "safetensors":
            from ._safetensors import read_header

            meta_s, spans = read_header(f, size, where)
            meta = dict(meta_s)
        else:
            from ._gguf import read_gguf

            g = read_gguf(f, size, where)
            meta, spans = g.metadata_summary(), g.tensors
        f.seek(0)
        sha, sums = _hash_ranges(f, size, spans, where)
    tensors = tuple(replace(t, sha256=s) for t, s in zip(spans, sums, strict=True))
    return FileTable(relpath, fmt, size, sha, meta, tensors)


def _hash_ranges(
    f: BufferedReader, size: int, spans: Sequence[TensorInfo], where: str
) -> tuple[str, list[str]]:
    """The sha256 of the file's first ``size`` bytes and of each span (sorted, disjoint)."""
    whole = hashlib.sha256()
    hs = [hashlib.sha256() for _ in spans]
    bufs = (bytearray(CHUNK), bytearray(CHUNK))  # one being hashed whole, one being read
    pos, i, k = 0, 0, 0
    pending: Future[None] | None = None
    with ThreadPoolExecutor(1) as pool:
        while pos < size:
            view = memoryview(bufs[k])[: min(CHUNK, size - pos)]
            k ^= 1
            n = f.readinto(view)
            if not n:
                raise TensorFormatError(where, f"the file ended at byte {pos}, before {size}")
            view = view[:n]
            if pending is not None:
                pending.result()
            pending = pool.submit(whole.update, view)
            end = pos + n
            while i < len(spans) and spans[i].start < end:
                s = spans[i]
                a, b = max(s.start, pos) - pos, min(s.end, end) - pos
                if b > a:
                    hs[i].update(view[a:b])
                if s.end > end:
                    break
                i += 1
            pos = end
        if pending is not None:
            pending.result()
    return whole.hexdigest(), [h.hexdigest() for h in hs]


def check_tensor_bytes(
    data: bytes, info: TensorInfo, file: str, *, module: str = "", version: str = ""
) -> bytes:
    """``data`` if it is exactly the bytes ``info`` describes, else
    :class:`ChecksumMismatchError` naming the file and tensor (and module@version)."""
    got = hashlib.sha256(data).hexdigest()
    if len(data) != info.nbytes or got != info.sha256:
        raise ChecksumMismatchError(
            module or file,
            version,
            f"tensor {info.name} of {file} (bytes {info.start}..{info.end})",
            info.sha256,
            got,
            got_from="read",
        )
    return data


def read_tensor_bytes(
    path: Path, info: TensorInfo, *, module: str = "", version: str = "", file: str = ""
) -> bytes:
    """The bytes ``[info.start, info.end)`` of ``path``, checked against ``info.sha256``.

    ``file`` (default: the file's name), ``module`` and ``version`` name it in errors.
    """
    file = file or path.name
    with open(path, "rb") as f:
        f.seek(info.start)
        data = f.read(info.nbytes)
    if len(data) != info.nbytes:
        raise TensorFormatError(
            f"{module}@{version}: {file}" if module else file,
            f"the file ends before tensor {info.name!r}'s bytes {info.start}..{info.end}",
        )
    return check_tensor_bytes(data, info, file, module=module, version=version)
