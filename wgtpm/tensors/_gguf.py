"""GGUF headers (versions 2 and 3), read without the gguf library.

A GGUF file is, little-endian throughout (ggml's docs/gguf.md)::

    u32  magic          "GGUF"
    u32  version        2 or 3 (1 used 32-bit counts and is refused; a big-endian file
                        reads as version 0x02000000 or 0x03000000 and is refused)
    u64  tensor_count
    u64  kv_count
    kv_count times:     string key, u32 value type, value
    tensor_count times: string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset
    padding             to a multiple of ``general.alignment`` (a u32 KV; default 32)
    data                each tensor at data start + offset (a multiple of the alignment)

    string = u64 length + that many bytes of UTF-8
    value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string,
                 9 array (u32 element type, u64 count, elements; arrays may nest),
                 10 u64, 11 i64, 12 f64

:func:`read_gguf` reads it as hostile input: every count and length is checked
against what is left of the file before anything is read or allocated, nesting
is bounded, types are known, and tensors are checked like any table
(:func:`._table.check_spans`). Shapes are as stored: ``ne[0]`` first.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field
from io import BufferedReader
from pathlib import Path

from ._dtypes import GGML_TYPES, GgmlType
from ._errors import TensorFormatError
from ._safetensors import cap
from ._table import MAX_NAME, TensorInfo, check_spans

__all__ = [
    "DEFAULT_ALIGNMENT",
    "MAX_ARRAY_DEPTH",
    "MAX_GGUF_DIMS",
    "MAX_GGUF_HEADER",
    "GgufArray",
    "GgufFile",
    "read_gguf",
    "read_gguf_file",
]

MAGIC = b"GGUF"
VERSIONS = (2, 3)
#: The data section's alignment when ``general.alignment`` does not say.
DEFAULT_ALIGNMENT = 32
#: GGML's ``GGML_MAX_DIMS``: llama.cpp refuses a tensor with more.
MAX_GGUF_DIMS = 4
#: Arrays of arrays nest at most this deep (real files nest none; gguf-py writes one level).
MAX_ARRAY_DEPTH = 8
#: The largest header (key-values and tensor infos) read: a 256k-token vocabulary with its
#: scores and merges is under 20 MiB; the header is read in pieces, never allocated at once.
MAX_GGUF_HEADER = 512 << 20
#: The value types: id -> (name, struct format or None for string/array).
VALUE_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("UINT8", "<B"),
    1: ("INT8", "<b"),
    2: ("UINT16", "<H"),
    3: ("INT16", "<h"),
    4: ("UINT32", "<I"),
    5: ("INT32", "<i"),
    6: ("FLOAT32", "<f"),
    7: ("BOOL", "<?"),
    8: ("STRING", None),
    9: ("ARRAY", None),
    10: ("UINT64", "<Q"),
    11: ("INT64", "<q"),
    12: ("FLOAT64", "<d"),
}
_STRING, _ARRAY = 8, 9
_READ = 1 << 20  # bytes read from the file at a time while parsing the header


@dataclass(frozen=True)
class GgufArray:
    """An array value, summarised: its element type's name and length (not its elements)."""

    type: str
    len: int


@dataclass
class GgufFile:
    """A GGUF file's header: version, key-values (arrays summarised), alignment, where the
    data section starts, and the tensors (absolute ranges; ``sha256`` left empty)."""

    version: int
    metadata: dict[str, object] = field(default_factory=dict)
    alignment: int = DEFAULT_ALIGNMENT
    data_start: int = 0
    tensors: list[TensorInfo] = field(default_factory=list)

    def metadata_summary(self) -> dict[str, object]:
        """The key-values as a table holds them: strings cut, arrays as ``{"array", "len"}``,
        a float that is not finite as its name (``"nan"``, ``"inf"``: JSON has no such number)."""
        out: dict[str, object] = {}
        for k, v in self.metadata.items():
            if isinstance(v, GgufArray):
                out[k] = {"array": v.type, "len": v.len}
            elif isinstance(v, str):
                out[k] = cap(v)
            elif isinstance(v, float) and not math.isfinite(v):
                out[k] = str(v)
            else:
                out[k] = v
        return out


class _Reader:
    """Reads the header in pieces, refusing any read past the file's end or the header cap."""

    def __init__(self, f: BufferedReader, size: int, where: str) -> None:
        self.f, self.size, self.where = f, size, where
        self.buf = b""
        self.at = 0  # offset in buf
        self.base = 0  # file offset of buf[0]

    @property
    def pos(self) -> int:
        return self.base + self.at

    def fail(self, msg: str) -> TensorFormatError:
        return TensorFormatError(self.where, f"GGUF header at byte {self.pos}: {msg}")

    def take(self, n: int, what: str) -> bytes:
        if n > self.size - self.pos:
            raise self.fail(f"{what} of {n} bytes runs past the end of the file ({self.size})")
        if self.pos + n > MAX_GGUF_HEADER:
            raise self.fail(f"the header is longer than {MAX_GGUF_HEADER} bytes")
        while len(self.buf) - self.at < n:
            more = self.f.read(max(_READ, n - (len(self.buf) - self.at)))
            if not more:
                raise self.fail("the file ended early")
            self.buf = self.buf[self.at :] + more
            self.base += self.at
            self.at = 0
        out = self.buf[self.at : self.at + n]
        self.at += n
        return out

    def skip(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise self.fail(f"{what} of {n} bytes runs past the end of the file ({self.size})")
        while n:  # in pieces: a skip never holds more than _READ bytes
            k = min(n, _READ)
            self.take(k, what)
            n -= k

    def unpack(self, fmt: str, what: str) -> int | float | bool:
        v: int | float | bool = struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]
        return v

    def u32(self, what: str) -> int:
        return int(self.unpack("<I", what))

    def u64(self, what: str) -> int:
        return int(self.unpack("<Q", what))

    def string(self, what: str) -> bytes:
        return self.take(self.u64(f"{what}'s length"), what)


def read_gguf(f: BufferedReader, size: int, where: str) -> GgufFile:
    """The header of the GGUF file open as ``f`` (at offset 0), ``size`` bytes long."""
    r = _Reader(f, size, where)
    if size < 24 or r.take(4, "magic") != MAGIC:
        raise TensorFormatError(where, "not a GGUF file (no GGUF magic)")
    version = r.u32("version")
    if version not in VERSIONS:
        why = "big-endian GGUF" if version in (0x02000000, 0x03000000) else f"version {version}"
        raise TensorFormatError(where, f"{why} is not supported (GGUF versions 2 and 3 are)")
    n_tensors, n_kv = r.u64("tensor count"), r.u64("key-value count")
    # the smallest key-value is 8 + 4 + 1 bytes, the smallest tensor info 8 + 4 + 4 + 8
    if n_kv * 13 > size - r.pos or n_tensors * 24 > size - r.pos:
        raise r.fail(f"{n_tensors} tensors and {n_kv} key-values cannot fit in {size} bytes")
    g = GgufFile(version)
    for _ in range(n_kv):
        key = _text(r, r.string("key"), "key")
        if key in g.metadata:
            raise r.fail(f"the key {key[:200]!r} appears twice")
        g.metadata[key] = _value(r, r.u32(f"type of {key[:200]!r}"), key, 0)
    g.alignment = _alignment(r, g.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
    infos = [_tensor_info(r) for _ in range(n_tensors)]
    g.data_start = -(-r.pos // g.alignment) * g.alignment
    for name, shape, t, off in infos:
        if off % g.alignment:
            raise TensorFormatError(
                where, f"tensor {name[:200]!r}: offset {off} is not a multiple of {g.alignment}"
            )
        start = g.data_start + off
        n = 1
        for d in shape:
            n *= d
        nbytes = n // t.block * t.size if not shape or shape[0] % t.block == 0 else -1
        end = start + nbytes if nbytes >= 0 else start  # check_spans says why it is wrong
        g.tensors.append(TensorInfo(name, t.name, shape, start, end, ""))
    g.tensors = list(check_spans(where, "gguf", g.tensors, size))
    return g


def read_gguf_file(path: Path, where: str | None = None) -> GgufFile:
    """:func:`read_gguf` of the file at ``path``."""
    with open(path, "rb") as f:
        return read_gguf(f, os.fstat(f.fileno()).st_size, where or path.name)


def _text(r: _Reader, raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise r.fail(f"a {what} is not UTF-8") from None


def _value(r: _Reader, vtype: int, key: str, depth: int) -> object:
    shown = repr(key[:200])
    if vtype not in VALUE_TYPES:
        raise r.fail(f"value of {shown} has the unknown type {vtype}")
    _, fmt = VALUE_TYPES[vtype]
    if fmt is not None:
        return r.unpack(fmt, f"value of {shown}")
    if vtype == _STRING:
        return r.string(f"value of {shown}").decode("utf-8", "replace")
    if depth >= MAX_ARRAY_DEPTH:
        raise r.fail(f"arrays in {shown} nest more than {MAX_ARRAY_DEPTH} deep")
    etype, n = r.u32(f"array type of {shown}"), r.u64(f"array length of {shown}")
    if etype not in VALUE_TYPES:
        raise r.fail(f"array {shown} has the unknown element type {etype}")
    ename, efmt = VALUE_TYPES[etype]
    if efmt is not None:
        r.skip(n * struct.calcsize(efmt), f"array {shown}")
    else:
        if n * (12 if etype == _ARRAY else 8) > r.size - r.pos:  # each element's header
            raise r.fail(f"array {shown} of {n} elements runs past the end of the file")
        for _ in range(n):
            if etype == _STRING:
                r.skip(r.u64(f"string length in {shown}"), f"string in {shown}")
            else:
                _value(r, _ARRAY, key, depth + 1)
    return GgufArray(ename, n)


def _alignment(r: _Reader, v: object) -> int:
    if type(v) is not int or v <= 0 or v & (v - 1) or v > 1 << 30:
        raise r.fail(f"general.alignment {v!r} is not a power of two (at most 2**30)")
    return v


def _tensor_info(r: _Reader) -> tuple[str, tuple[int, ...], GgmlType, int]:
    raw = r.string("tensor name")
    if not raw or len(raw) > MAX_NAME:
        raise r.fail(f"a tensor name of {len(raw)} bytes (want 1 to {MAX_NAME})")
    name = _text(r, raw, "tensor name")
    shown = repr(name[:200])
    n_dims = r.u32(f"dimensions of {shown}")
    if n_dims > MAX_GGUF_DIMS:
        raise r.fail(f"tensor {shown} has {n_dims} dimensions (GGML allows {MAX_GGUF_DIMS})")
    shape = tuple(r.u64(f"shape of {shown}") for _ in range(n_dims))
    tid = r.u32(f"type of {shown}")
    t = GGML_TYPES.get(tid)
    if t is None:
        raise r.fail(f"tensor {shown} has the unknown GGML type id {tid}")
    return name, shape, t, r.u64(f"offset of {shown}")
