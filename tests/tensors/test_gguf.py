"""GGUF headers read by wgtpm.tensors, compared with gguf.GGUFReader's reading of files
written by gguf.GGUFWriter; hostile headers are refused in one line."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest

from wgtpm.tensors import (
    GgufArray,
    TensorFormatError,
    compute_table,
    read_gguf_file,
    read_tensor_bytes,
)
from wgtpm.tensors._dtypes import GGML_TYPES
from wgtpm.tensors._gguf import MAX_ARRAY_DEPTH

TYPES = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
         "Q4_K", "Q5_K", "Q6_K", "Q8_K", "I8", "I16", "I32", "I64", "F64")  # fmt: skip


def _write(path: Path, alignment: int | None = None) -> None:
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="test")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_array("test.nested", [[1, 2], [3, 4, 5]])
    w.add_array("test.strs", ["a", "bc", "é"])
    w.add_array("test.floats", [1.0, 2.5])
    w.add_float32("test.f32", 1.5)
    w.add_float64("test.f64", -0.25)
    w.add_bool("test.bool", True)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -3)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4_000_000_000)
    w.add_int32("test.i32", -2_000_000_000)
    w.add_uint64("test.u64", 2**63)
    w.add_int64("test.i64", -(2**62))
    w.add_string("test.long", "y" * 3000)
    rng = np.random.default_rng(0)
    for name in TYPES:
        t = gguf.GGMLQuantizationType[name]
        block, size = gguf.GGML_QUANT_SIZES[t]
        raw = rng.integers(0, 255, size=(3, 512 // block * size), dtype=np.uint8)
        w.add_tensor(f"t.{name}", raw, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("alignment", [None, 64])
def test_the_table_matches_gguf_reader(tmp_path: Path, alignment: int | None) -> None:
    import gguf

    p = tmp_path / "m.gguf"
    _write(p, alignment)
    table = compute_table(p, "m.gguf")
    reader = gguf.GGUFReader(str(p))
    assert table.format == "gguf"
    assert [t.name for t in table.tensors] == [t.name for t in reader.tensors]
    data = p.read_bytes()
    for info, t in zip(table.tensors, reader.tensors, strict=True):
        assert info.dtype == t.tensor_type.name
        assert list(info.shape) == [int(d) for d in t.shape]
        assert (info.start, info.end) == (t.data_offset, t.data_offset + t.n_bytes)
        assert info.sha256 == hashlib.sha256(data[info.start : info.end]).hexdigest()
        assert read_tensor_bytes(p, info) == bytes(t.data.tobytes())
    g = read_gguf_file(p)
    assert g.version == 3 and g.data_start == reader.data_offset
    assert g.alignment == (alignment or 32) == reader.alignment
    m = table.metadata
    assert m["general.architecture"] == "test"
    assert m["test.nested"] == {"array": "ARRAY", "len": 2}
    assert m["test.strs"] == {"array": "STRING", "len": 3}
    assert m["test.floats"] == {"array": "FLOAT32", "len": 2}
    assert g.metadata["test.strs"] == GgufArray("STRING", 3)
    assert (m["test.f32"], m["test.f64"], m["test.bool"]) == (1.5, -0.25, True)
    assert (m["test.u8"], m["test.i8"], m["test.u16"], m["test.i16"]) == (200, -3, 60000, -30000)
    assert (m["test.u32"], m["test.i32"]) == (4_000_000_000, -2_000_000_000)
    assert (m["test.u64"], m["test.i64"]) == (2**63, -(2**62))
    assert m["test.long"] == "y" * 1024 + "...(3000 chars)"
    for f in reader.fields.values():
        if not f.name.startswith("GGUF."):
            assert f.name in m


def test_version_2_reads_the_same(tmp_path: Path) -> None:
    p = tmp_path / "m.gguf"
    _write(p)
    data = bytearray(p.read_bytes())
    data[4:8] = struct.pack("<I", 2)
    v2 = tmp_path / "v2.gguf"
    v2.write_bytes(bytes(data))
    assert read_gguf_file(v2).version == 2
    assert compute_table(v2, "m.gguf").tensors == compute_table(p, "m.gguf").tensors


def test_the_tiny_qwen3_base_gguf(tmp_path: Path) -> None:
    import gguf

    from wgtpm.paw.tiny import write_base_gguf

    p = write_base_gguf(tmp_path / "base.gguf")
    table = compute_table(p, "base.gguf")
    assert table.metadata["general.architecture"] == "qwen3"
    assert table.metadata["qwen3.block_count"] == 2
    info = table.get("output_norm.weight")
    assert (info.dtype, info.shape) == ("F32", (64,))
    (t,) = gguf.GGUFReader(str(p)).tensors
    assert info.start == t.data_offset


def test_the_type_table_agrees_with_gguf() -> None:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    for t in GGMLQuantizationType:
        if t.name == "Q8_1":  # gguf-py says 40 bytes; ggml lays it out in 36 (see _dtypes)
            continue
        mine = GGML_TYPES[t.value]
        assert (mine.name, mine.block, mine.size) == (t.name, *GGML_QUANT_SIZES[t])


# --- hostile headers, written by hand -------------------------------------------------


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _gguf(kvs: bytes = b"", n_kv: int = 0, tensors: bytes = b"", n_t: int = 0,
          version: int = 3, tail: bytes = b"\0" * 64) -> bytes:  # fmt: skip
    return b"GGUF" + struct.pack("<IQQ", version, n_t, n_kv) + kvs + tensors + tail


def _tensor(name: bytes, dims: tuple[int, ...], ggml_type: int = 0, offset: int = 0) -> bytes:
    shape = b"".join(struct.pack("<Q", d) for d in dims)
    return _s(name) + struct.pack("<I", len(dims)) + shape + struct.pack("<IQ", ggml_type, offset)


def _nested(depth: int) -> bytes:
    v = struct.pack("<IQ", 4, 0)  # an empty u32 array
    for _ in range(depth):
        v = struct.pack("<IQ", 9, 1) + v
    return _s(b"k") + struct.pack("<I", 9) + v


BAD = [
    ("magic", b"GGUG" + b"\0" * 40, "no GGUF magic"),
    ("version 1", _gguf(version=1), "version 1 is not supported"),
    ("big-endian", _gguf(version=0x03000000), "big-endian GGUF is not supported"),
    ("huge counts", _gguf(n_kv=2**60), "cannot fit"),
    ("key past end", _gguf(struct.pack("<Q", 2**40), 1), "runs past the end"),
    ("value type", _gguf(_s(b"k") + struct.pack("<I", 13), 1), "unknown type 13"),
    ("array type", _gguf(_s(b"k") + struct.pack("<IIQ", 9, 77, 0), 1), "unknown element type"),
    ("array too long", _gguf(_s(b"k") + struct.pack("<IIQ", 9, 12, 2**50), 1), "runs past"),
    ("strings too many", _gguf(_s(b"k") + struct.pack("<IIQ", 9, 8, 2**50), 1), "runs past"),
    ("nesting", _gguf(_nested(MAX_ARRAY_DEPTH + 1), 1), f"nest more than {MAX_ARRAY_DEPTH}"),
    ("dup key", _gguf((_s(b"k") + struct.pack("<IB", 0, 1)) * 2, 2), "appears twice"),
    ("alignment", _gguf(_s(b"general.alignment") + struct.pack("<II", 4, 3), 1), "power of two"),
    ("ggml type", _gguf(tensors=_tensor(b"w", (4,), 4), n_t=1), "unknown GGML type id 4"),
    ("dims", _gguf(tensors=_tensor(b"w", (1,) * 5), n_t=1), "5 dimensions"),
    ("empty name", _gguf(tensors=_tensor(b"", (4,)), n_t=1), "tensor name of 0 bytes"),
    ("offset", _gguf(tensors=_tensor(b"w", (4,), 0, 8), n_t=1), "not a multiple of 32"),
    ("outside", _gguf(tensors=_tensor(b"w", (2**20,)), n_t=1), "not inside the file"),
    ("block", _gguf(tensors=_tensor(b"w", (31,), 2), n_t=1), "not a multiple of its block"),
    ("overlap", _gguf(tensors=_tensor(b"w", (1,)) + _tensor(b"v", (1,)), n_t=2), "overlap"),
    (
        "same name",
        _gguf(tensors=_tensor(b"w", (1,)) + _tensor(b"w", (1,), 0, 32), n_t=2),
        "appears twice",
    ),
]


@pytest.mark.parametrize(("what", "data", "want"), BAD, ids=[b[0] for b in BAD])
def test_hostile_gguf_headers_are_refused_in_one_line(
    tmp_path: Path, what: str, data: bytes, want: str
) -> None:
    p = tmp_path / "h.gguf"
    p.write_bytes(data)
    with pytest.raises(TensorFormatError) as e:
        compute_table(p, "dir/h.gguf")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("dir/h.gguf: "), msg
    assert want in msg, msg


def test_a_well_formed_hand_written_gguf(tmp_path: Path) -> None:
    kv = _s(b"general.alignment") + struct.pack("<II", 4, 64)
    kv += _s(b"x") + struct.pack("<I", 6) + struct.pack("<f", float("nan"))
    header = _gguf(kv, 2, _tensor(b"w", (4,), 0, 0) + _tensor(b"v", (32,), 8, 64), 2, tail=b"")
    start = -(-len(header) // 64) * 64
    p = tmp_path / "ok.gguf"
    p.write_bytes(header + b"\0" * (start - len(header)) + b"\1" * 128)
    table = compute_table(p, "ok.gguf")
    assert [(t.name, t.start, t.end) for t in table.tensors] == [
        ("w", start, start + 16),
        ("v", start + 64, start + 64 + 34),
    ]
    assert table.metadata["x"] == "nan"
