"""Tables of safetensors files: computed without the safetensors library, checked against it."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from wgtpm import ChecksumMismatchError
from wgtpm.tensors import (
    TensorFormatError,
    TensorInfo,
    TensorNotFoundError,
    TensorTables,
    compute_table,
    dump_tables,
    parse_tables,
    read_tensor_bytes,
)
from wgtpm.tensors._safetensors import MAX_HEADER_SIZE


def _write(path: Path) -> dict[str, object]:
    import torch
    from safetensors.torch import save_file

    tensors = {
        "a.weight": torch.arange(12, dtype=torch.float32).reshape(3, 4),
        "b.bias": torch.ones(5, dtype=torch.bfloat16),
        "c.ids": torch.tensor([1, 2, 3], dtype=torch.int64),
        "d.half": torch.zeros(2, 2, dtype=torch.float16),
        "e.flag": torch.tensor([True, False]),
        "f.empty": torch.zeros(0, 3),
    }
    save_file(tensors, str(path), metadata={"format": "pt", "note": "x" * 2000})
    return tensors


def test_table_matches_the_library(tmp_path: Path) -> None:
    import torch
    from safetensors import safe_open

    p = tmp_path / "m.safetensors"
    tensors = _write(p)
    table = compute_table(p, "sub/m.safetensors")
    assert table.path == "sub/m.safetensors" and table.format == "safetensors"
    data = p.read_bytes()
    assert table.size == len(data)
    assert table.sha256 == hashlib.sha256(data).hexdigest()
    assert table.metadata["format"] == "pt"
    assert str(table.metadata["note"]).endswith("...(2000 chars)")
    assert [t.start for t in table.tensors] == sorted(t.start for t in table.tensors)
    with safe_open(str(p), "pt") as f:
        assert sorted(f.keys()) == sorted(t.name for t in table.tensors)
    dtypes = {"a.weight": "F32", "b.bias": "BF16", "c.ids": "I64", "d.half": "F16"}
    for name, want in tensors.items():
        assert isinstance(want, torch.Tensor)
        info = table.get(name)
        assert info.shape == tuple(want.shape)
        assert dtypes.get(name, info.dtype) == info.dtype
        raw = read_tensor_bytes(p, info)
        assert raw == data[info.start : info.end]
        assert info.sha256 == hashlib.sha256(raw).hexdigest()
        if want.numel():
            got = torch.frombuffer(bytearray(raw), dtype=want.dtype).reshape(want.shape)
            assert torch.equal(got, want)


def test_a_table_round_trips_byte_stably(tmp_path: Path) -> None:
    p = tmp_path / "m.safetensors"
    _write(p)
    tables = TensorTables({"m.safetensors": compute_table(p, "m.safetensors")})
    data = dump_tables(tables)
    assert data.endswith(b"\n") and b" " not in data.replace(b"x" * 10, b"")[:20]
    again = parse_tables(data, "wgt.tensors.json")
    assert again == tables
    assert dump_tables(again) == data
    # any whitespace reads the same; the canonical form is still the one written
    pretty = json.dumps(json.loads(data), indent=3).encode()
    assert dump_tables(parse_tables(pretty, "t")) == data


def test_get_names_the_file_and_hints(tmp_path: Path) -> None:
    p = tmp_path / "m.safetensors"
    _write(p)
    table = compute_table(p, "m.safetensors")
    with pytest.raises(TensorNotFoundError) as e:
        table.get("a.weigth")
    assert str(e.value) == "m.safetensors: no tensor named 'a.weigth'; did you mean 'a.weight'?"
    assert set(table.with_prefix("a.")) == {"weight"}


def test_a_flipped_byte_is_refused_on_read(tmp_path: Path) -> None:
    p = tmp_path / "m.safetensors"
    _write(p)
    info = compute_table(p, "m.safetensors").get("a.weight")
    data = bytearray(p.read_bytes())
    data[info.start + 5] ^= 1
    p.write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatchError) as e:
        read_tensor_bytes(p, info, module="hf.co/x/y", version="v1.0.0", file="m.safetensors")
    msg = str(e.value)
    assert msg.startswith("hf.co/x/y@v1.0.0: SECURITY ERROR")
    assert "tensor a.weight of m.safetensors" in msg


def _file(tmp_path: Path, header: bytes, data: bytes = b"", n: int | None = None) -> Path:
    p = tmp_path / "h.safetensors"
    p.write_bytes(struct.pack("<Q", len(header) if n is None else n) + header + data)
    return p


def _hdr(**tensors: object) -> bytes:
    return json.dumps(tensors).encode()


F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}

HOSTILE = [
    ("huge header length", b"{}", b"", 2**64 - 1, f"more than {MAX_HEADER_SIZE} bytes"),
    ("length past the end", b"{}", b"", 100, "runs past the end of the file"),
    ("not JSON", b"{nope", b"", None, "not valid JSON"),
    ("not an object", b"[1]", b"", None, "not a JSON object"),
    ("deep nesting", b"[" * 100000 + b"]" * 100000, b"", None, "nested too deeply"),
    (
        "duplicate name",
        b'{"w": %s, "w": %s}' % (json.dumps(F32x2).encode(), json.dumps(F32x2).encode()),
        b"\0" * 8,
        None,
        "duplicate key 'w'",
    ),
    (
        "unknown dtype",
        _hdr(w={"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}),
        b"\0" * 8,
        None,
        "unknown safetensors dtype 'F33'",
    ),
    (
        "size mismatch",
        _hdr(w={"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}),
        b"\0" * 12,
        None,
        "takes 12 bytes, but its range holds 8",
    ),
    (
        "outside the file",
        _hdr(w={"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}),
        b"\0" * 8,
        None,
        "not inside the file",
    ),
    (
        "overlap",
        _hdr(w=F32x2, v={"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}),
        b"\0" * 8,
        None,
        "overlap",
    ),
    (
        "negative offset",
        _hdr(w={"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}),
        b"\0" * 8,
        None,
        "data_offsets must be",
    ),
    (
        "reversed offsets",
        _hdr(w={"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}),
        b"\0" * 8,
        None,
        "end before they begin",
    ),
    (
        "bool shape",
        _hdr(w={"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}),
        b"\0" * 8,
        None,
        "shape must be whole numbers",
    ),
    ("extra key", _hdr(w={**F32x2, "x": 1}), b"\0" * 8, None, "want exactly the keys"),
    (
        "bad metadata",
        _hdr(__metadata__={"a": 1}),
        b"",
        None,
        "__metadata__ must map strings to strings",
    ),
    (
        "sub-byte",
        _hdr(w={"dtype": "F4", "shape": [3], "data_offsets": [0, 1]}),
        b"\0",
        None,
        "does not fill whole bytes",
    ),
]


@pytest.mark.parametrize(
    ("what", "header", "data", "n", "want"), HOSTILE, ids=[h[0] for h in HOSTILE]
)
def test_hostile_headers_are_refused_in_one_line(
    tmp_path: Path, what: str, header: bytes, data: bytes, n: int | None, want: str
) -> None:
    p = _file(tmp_path, header, data, n)
    with pytest.raises(TensorFormatError) as e:
        compute_table(p, "dir/h.safetensors")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("dir/h.safetensors: "), msg
    assert want in msg, msg


def test_a_short_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "s.safetensors"
    p.write_bytes(b"\x02\0\0")
    with pytest.raises(TensorFormatError, match="too short"):
        compute_table(p, "s.safetensors")


def test_the_tiny_qwen3_weights(tiny_qwen3: Path) -> None:
    from safetensors import safe_open

    p = tiny_qwen3 / "model.safetensors"
    table = compute_table(p, "model.safetensors")
    with safe_open(str(p), "pt") as f:
        for name in f.keys():  # noqa: SIM118
            t = f.get_tensor(name)
            info = table.get(name)
            assert info.shape == tuple(t.shape)
            assert (
                read_tensor_bytes(p, info)
                == t.contiguous().view(-1).view(__import__("torch").uint8).numpy().tobytes()
            )


def _table_json(**over: object) -> dict[str, object]:
    t = {"name": "w", "dtype": "F32", "shape": [2], "start": 8, "end": 16, "sha256": "0" * 64}
    f: dict[str, object] = {
        "format": "safetensors",
        "size": 16,
        "sha256": "1" * 64,
        "metadata": {},
        "tensors": [t],
    }
    for k, v in over.items():
        if k.startswith("t_"):
            t[k[2:]] = v
        else:
            f[k] = v
    return {"files": {"m.safetensors": f}}


BAD_TABLES = [
    ("not json", b"{", "not valid JSON"),
    ("no files", b"{}", "not a tensor table"),
    ("bad path", json.dumps({"files": {"../x": {}}}).encode(), "escapes the module"),
    ("format", json.dumps(_table_json(format="pickle")).encode(), "is not one of"),
    ("size", json.dumps(_table_json(size=-1)).encode(), "size must be a whole number"),
    ("sha", json.dumps(_table_json(sha256="A" * 64)).encode(), "sha256 64 lower-case hex"),
    ("metadata", json.dumps(_table_json(metadata={"a": [1]})).encode(), "metadata must map"),
    ("tensor keys", json.dumps(_table_json(t_extra=1)).encode(), "want exactly the keys"),
    ("range", json.dumps(_table_json(t_end=24)).encode(), "not inside the file"),
    ("dtype", json.dumps(_table_json(t_dtype="Q4_0")).encode(), "unknown safetensors dtype"),
    ("nbytes", json.dumps(_table_json(t_shape=[3])).encode(), "takes 12 bytes"),
    ("tensor sha", json.dumps(_table_json(t_sha256="x")).encode(), "64 lower-case hex"),
    ("dup key", b'{"files": {}, "files": {}}', "duplicate key 'files'"),
]


@pytest.mark.parametrize(("what", "data", "want"), BAD_TABLES, ids=[b[0] for b in BAD_TABLES])
def test_bad_tables_are_refused_in_one_line(what: str, data: bytes, want: str) -> None:
    with pytest.raises(TensorFormatError) as e:
        parse_tables(data, "hf.co/x/y@v1.0.0: wgt.tensors.json")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("hf.co/x/y@v1.0.0: wgt.tensors.json"), msg
    assert want in msg, msg


def test_a_table_with_two_tensors_overlapping_is_refused() -> None:
    doc = _table_json(size=32)
    tensors = doc["files"]["m.safetensors"]["tensors"]  # type: ignore[index]
    tensors.append({**tensors[0], "name": "v", "start": 12, "end": 20})
    with pytest.raises(TensorFormatError, match="overlap"):
        parse_tables(json.dumps(doc).encode(), "t")


def test_tensor_info_is_plain() -> None:
    t = TensorInfo("w", "F32", (2, 3), 8, 32, "0" * 64)
    assert t.nbytes == 24 and t.numel == 6
