"""Tensor tables: each tensor of a ``.safetensors`` or ``.gguf`` file, by name, with its
dtype, shape, byte range and sha256 (``wgt.tensors.json``; docs/design.md section 13).

Pure: no numpy, torch, safetensors nor gguf; headers are read here, from bytes.

- :func:`parse_tables` / :func:`dump_tables`: the ``wgt.tensors.json`` format (:mod:`._table`).
- :func:`compute_table`: the table of one file, read once (:mod:`._compute`).
- :func:`read_tensor_bytes`: one tensor's bytes, checked against its table.
- :func:`tables_for`: a module's tables, the release's or computed and cached (:mod:`._module`).
- :func:`logged_tables`: tables a registry computed and logged for a release that locks
  none, proven against its checksum database (:mod:`._logged`).
- :func:`read_gguf_file`: a GGUF file's header (key-values, tensors) (:mod:`._gguf`).
"""

from __future__ import annotations

from ._compute import check_tensor_bytes, compute_table, format_of, read_tensor_bytes
from ._errors import TensorError, TensorFormatError, TensorNotFoundError
from ._gguf import GgufArray, GgufFile, read_gguf_file
from ._logged import logged_tables
from ._module import release_index, tables_for
from ._table import (
    TABLES_FILE,
    FileTable,
    TensorInfo,
    TensorTables,
    dump_tables,
    parse_tables,
)

__all__ = [
    "TABLES_FILE",
    "FileTable",
    "GgufArray",
    "GgufFile",
    "TensorError",
    "TensorFormatError",
    "TensorInfo",
    "TensorNotFoundError",
    "TensorTables",
    "check_tensor_bytes",
    "compute_table",
    "dump_tables",
    "format_of",
    "logged_tables",
    "parse_tables",
    "read_gguf_file",
    "read_tensor_bytes",
    "release_index",
    "tables_for",
]
