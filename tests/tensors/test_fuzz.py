"""Hostile bytes: a weights-file header or a wgt.tensors.json changed at random is read or
refused with a one-line TensorFormatError naming the file, never anything else."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wgtpm.tensors import (
    TensorFormatError,
    TensorTables,
    compute_table,
    dump_tables,
    parse_tables,
)

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _safetensors() -> bytes:
    header = json.dumps(
        {
            "__metadata__": {"format": "pt"},
            "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]},
        }
    ).encode()
    return struct.pack("<Q", len(header)) + header + bytes(range(22))


def _gguf() -> bytes:
    def s(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b

    kv = s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama")
    kv += s(b"a.list") + struct.pack("<IIQ", 9, 8, 2) + s(b"x") + s(b"yz")
    t = s(b"w") + struct.pack("<IQIQ", 1, 32, 2, 0)  # Q4_0, 32 elements: 18 bytes
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 2) + kv + t
    return head + b"\0" * (-len(head) % 32) + bytes(range(18))


SAFETENSORS, GGUF = _safetensors(), _gguf()


def _mutations(base: bytes, upto: int) -> st.SearchStrategy[bytes]:
    """``base`` with up to 4 bytes of its first ``upto`` changed, or cut short."""
    edit = st.tuples(st.integers(0, upto - 1), st.integers(0, 255))

    def apply(edits: list[tuple[int, int]], cut: int | None) -> bytes:
        b = bytearray(base)
        for i, v in edits:
            b[i] = v
        return bytes(b[:cut] if cut is not None else b)

    return st.builds(apply, st.lists(edit, max_size=4), st.none() | st.integers(0, len(base)))


def _read(data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        try:
            compute_table(p, name)
        except TensorFormatError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"{name}: ")


@FUZZ
@given(_mutations(SAFETENSORS, len(SAFETENSORS) - 22))
def test_changed_safetensors_headers(data: bytes) -> None:
    _read(data, "m.safetensors")


@FUZZ
@given(_mutations(GGUF, len(GGUF) - 18))
def test_changed_gguf_headers(data: bytes) -> None:
    _read(data, "m.gguf")


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    _read(data, "m.safetensors")
    _read(b"GGUF" + data, "m.gguf")


def _tables() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.safetensors"
        p.write_bytes(SAFETENSORS)
        return dump_tables(TensorTables({"m.safetensors": compute_table(p, "m.safetensors")}))


TABLES = _tables()


@FUZZ
@given(_mutations(TABLES, len(TABLES)))
def test_changed_tables(data: bytes) -> None:
    try:
        parse_tables(data, "wgt.tensors.json")
    except TensorFormatError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("wgt.tensors.json")
