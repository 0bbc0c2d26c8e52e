"""Tensor tables: each tensor of a weights file, its byte range and sha256 (``wgt.tensors.json``).

A release may list ``wgt.tensors.json`` in its index, so h1 locks it; for one
without, the tables are computed from the verified files (:mod:`._compute`).
The format, one object per weights file of the release::

    {"files": {"model.safetensors": {
        "format": "safetensors",
        "size": 1234, "sha256": "<hex sha256 of the whole file>",
        "metadata": {"format": "pt"},
        "tensors": [{"name": "model.embed_tokens.weight", "dtype": "BF16",
                     "shape": [320, 64], "start": 96, "end": 41056,
                     "sha256": "<hex sha256 of bytes [start, end) of the file>"}]}}}

- ``start`` and ``end`` are absolute byte offsets in the file, ``[start, end)``:
  a reader seeks to ``start`` with no knowledge of the format.
- ``dtype`` is a safetensors dtype (``F32``, ``BF16``, ``I64``, ...) for a
  ``safetensors`` file and a GGML type name (``F32``, ``Q4_0``, ``Q6_K``, ...)
  for a ``gguf`` file; ``end - start`` is what the dtype and shape take
  (:func:`._dtypes.tensor_nbytes`).
- ``shape`` is as the file stores it: for safetensors, row-major (the shape torch
  gives); for GGUF, ``ne[0]`` first (the fastest-varying dimension first, so a
  torch ``[vocab, dim]`` embedding reads ``[dim, vocab]``).
- ``metadata`` is the safetensors ``__metadata__`` (string to string), or a GGUF
  file's key-values: numbers, booleans and strings as they are, an array as
  ``{"array": "ELEMTYPE", "len": N}``. A string longer than
  :data:`MAX_METADATA_STRING` characters is cut there and ends in ``...(N chars)``.
- Names are unique within a file and ranges never overlap.

:func:`dump_tables` writes the one canonical byte form (sorted keys, no
whitespace, tensors by ``start``, one final newline), so two publishers of the
same files write the same bytes; :func:`parse_tables` reads any whitespace but
refuses anything else that is not exactly this.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .. import _json
from .._fs import canonical_json, is_hex64
from ..index import check_file_path
from ._dtypes import tensor_nbytes
from ._errors import TensorFormatError, TensorNotFoundError

__all__ = [
    "FORMATS",
    "MAX_METADATA_STRING",
    "MAX_NAME",
    "MAX_TABLES_SIZE",
    "TABLES_FILE",
    "FileTable",
    "TensorInfo",
    "TensorTables",
    "check_spans",
    "dump_tables",
    "parse_tables",
]

#: The release file that holds the tables (listed in the index, so h1 covers it).
TABLES_FILE = "wgt.tensors.json"
#: The weights-file formats a table describes.
FORMATS = ("safetensors", "gguf")
#: The largest wgt.tensors.json read: about 200 bytes a tensor, so room for a million
#: tensors; a bigger one is hostile and is refused before it is parsed.
MAX_TABLES_SIZE = 256 << 20
#: The longest tensor name (bytes of UTF-8): GGUF caps names at 64; safetensors has no
#: cap, and real names stay under 200.
MAX_NAME = 4096
#: Metadata strings longer than this (characters) are cut in a table: a GGUF chat
#: template or token list is for the model, not for a reader of the table.
MAX_METADATA_STRING = 1024


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a weights file: ``[start, end)`` are absolute offsets in the file,
    ``sha256`` the hex sha256 of those bytes; ``shape`` as the file stores it (GGUF:
    ``ne[0]`` first)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int
    sha256: str

    @property
    def nbytes(self) -> int:
        return self.end - self.start

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "start": self.start,
            "end": self.end,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class FileTable:
    """The table of one weights file: its logical ``path`` in the module, ``format``
    (``"safetensors"`` or ``"gguf"``), size and sha256, metadata, and tensors by start."""

    path: str
    format: str
    size: int
    sha256: str
    metadata: Mapping[str, object]
    tensors: tuple[TensorInfo, ...]

    @cached_property
    def _by_name(self) -> dict[str, TensorInfo]:
        return {t.name: t for t in self.tensors}

    def get(self, name: str) -> TensorInfo:
        """The tensor called ``name``; :class:`TensorNotFoundError` (with close names) if none."""
        t = self._by_name.get(name)
        if t is None:
            hint = difflib.get_close_matches(name, list(self._by_name), n=3)
            raise TensorNotFoundError(self.path, name, hint)
        return t

    def with_prefix(self, prefix: str) -> dict[str, TensorInfo]:
        """The tensors whose names start with ``prefix``, keyed by the rest of the name."""
        return {t.name[len(prefix) :]: t for t in self.tensors if t.name.startswith(prefix)}

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "size": self.size,
            "sha256": self.sha256,
            "metadata": dict(self.metadata),
            "tensors": [t.to_json() for t in self.tensors],
        }


@dataclass(frozen=True)
class TensorTables:
    """The tables of a module's weights files, by logical path."""

    files: Mapping[str, FileTable] = field(default_factory=dict)


def dump_tables(t: TensorTables) -> bytes:
    """The canonical bytes of ``t`` (sorted keys, no whitespace, final newline)."""
    doc = {"files": {p: t.files[p].to_json() for p in sorted(t.files)}}
    return canonical_json(doc) + b"\n"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise json.JSONDecodeError(f"duplicate key {dup[:200]!r}", "", 0)
    return d


def _int(v: object) -> bool:
    return type(v) is int and v >= 0


def parse_tables(data: bytes, where: str) -> TensorTables:
    """Parse and check a ``wgt.tensors.json``; any problem is a one-line
    :class:`TensorFormatError` naming ``where`` (and the file and tensor)."""
    if len(data) > MAX_TABLES_SIZE:
        raise TensorFormatError(where, f"is {len(data)} bytes, more than {MAX_TABLES_SIZE}")
    try:
        doc = _json.loads(data, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise TensorFormatError(where, f"not valid JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise TensorFormatError(where, 'not a tensor table: want {"files": {PATH: TABLE}}')
    files = {p: _file(where, p, raw) for p, raw in doc["files"].items()}
    return TensorTables(files)


_FILE_KEYS = frozenset({"format", "size", "sha256", "metadata", "tensors"})
_TENSOR_KEYS = frozenset({"name", "dtype", "shape", "start", "end", "sha256"})


def _file(where: str, path: str, raw: object) -> FileTable:
    why = check_file_path(path)
    if why:
        raise TensorFormatError(where, f"file path {path[:200]!r} {why}")
    at = f"{where}: {path}"
    if not isinstance(raw, dict) or raw.keys() != _FILE_KEYS:
        raise TensorFormatError(at, f"want exactly the keys {sorted(_FILE_KEYS)}")
    if raw["format"] not in FORMATS:
        raise TensorFormatError(at, f"format {str(raw['format'])[:40]!r} is not one of {FORMATS}")
    if not _int(raw["size"]) or not is_hex64(raw["sha256"]):
        raise TensorFormatError(at, "size must be a whole number and sha256 64 lower-case hex")
    meta = raw["metadata"]
    if not isinstance(meta, dict) or not all(_meta_value(v) for v in meta.values()):
        raise TensorFormatError(
            at, 'metadata must map names to strings, numbers, booleans or {"array", "len"}'
        )
    if not isinstance(raw["tensors"], list):
        raise TensorFormatError(at, "tensors must be a list")
    tensors = [_tensor(at, raw["format"], i, t) for i, t in enumerate(raw["tensors"])]
    return FileTable(
        path,
        raw["format"],
        raw["size"],
        raw["sha256"],
        meta,
        check_spans(at, raw["format"], tensors, raw["size"]),
    )


def _meta_value(v: object) -> bool:
    if isinstance(v, str):
        return len(v) <= MAX_METADATA_STRING + 40
    if isinstance(v, bool | int | float):
        return True
    return (
        isinstance(v, dict)
        and v.keys() == {"array", "len"}
        and isinstance(v["array"], str)
        and _int(v["len"])
    )


def _tensor(at: str, fmt: str, i: int, raw: object) -> TensorInfo:
    if not isinstance(raw, dict) or raw.keys() != _TENSOR_KEYS:
        raise TensorFormatError(at, f"tensor {i}: want exactly the keys {sorted(_TENSOR_KEYS)}")
    name, dtype, shape = raw["name"], raw["dtype"], raw["shape"]
    if not isinstance(name, str) or not name or len(name.encode("utf-8", "replace")) > MAX_NAME:
        raise TensorFormatError(at, f"tensor {i}: name must be a string of 1 to {MAX_NAME} bytes")
    if not isinstance(dtype, str) or not isinstance(shape, list) or not all(map(_int, shape)):
        raise TensorFormatError(
            at, f"tensor {name[:200]!r}: dtype must be a string, shape a list of whole numbers"
        )
    start, end, sha = raw["start"], raw["end"], raw["sha256"]
    if not _int(start) or not _int(end) or not is_hex64(sha):
        raise TensorFormatError(
            at, f"tensor {name[:200]!r}: start, end must be whole numbers, sha256 64 lower-case hex"
        )
    return TensorInfo(name, dtype, tuple(shape), start, end, sha)


def check_spans(at: str, fmt: str, tensors: list[TensorInfo], size: int) -> tuple[TensorInfo, ...]:
    """``tensors`` sorted by start, checked: unique names, ``start <= end <= size``, no two
    ranges overlapping, and each range exactly what its dtype and shape take in ``fmt``."""
    names: set[str] = set()
    for t in tensors:
        shown = repr(t.name[:200])
        if t.name in names:
            raise TensorFormatError(at, f"tensor {shown} appears twice")
        names.add(t.name)
        if not t.start <= t.end <= size:
            raise TensorFormatError(
                at, f"tensor {shown}: bytes [{t.start}, {t.end}) are not inside the file's {size}"
            )
        want = tensor_nbytes(fmt, t.dtype, t.shape)
        if isinstance(want, str):
            raise TensorFormatError(at, f"tensor {shown} {want}")
        if want != t.end - t.start:
            raise TensorFormatError(
                at,
                f"tensor {shown} of dtype {t.dtype} and shape {list(t.shape)} takes {want} "
                f"bytes, but its range holds {t.end - t.start}",
            )
    ordered = sorted(tensors, key=lambda t: (t.start, t.end, t.name))
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end:
            raise TensorFormatError(
                at, f"tensors {a.name[:200]!r} and {b.name[:200]!r} overlap; refusing the file"
            )
    return tuple(ordered)
