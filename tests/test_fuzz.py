"""Fuzzing the parsers that read untrusted bytes: nothing but wgtpm's own errors escapes.

Each property feeds a parser generated input, from random bytes to inputs
built from the format's own tokens (so the fuzzer gets past the first line),
and asserts that the parser either returns or raises a :class:`WgtpmError`.
A ``RecursionError``, ``UnicodeDecodeError``, ``KeyError``, ``TypeError`` ...
is a finding. The runs are derandomized so CI sees the same cases each time.
"""

from __future__ import annotations

import io
import json
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wgtpm import index, modfile, sumfile
from wgtpm._errors import WgtpmError

FUZZ = settings(
    max_examples=500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

_MOD_TOKENS = [
    "module", "wgt", "require", "exclude", "replace", "retract", "select", "artifact",
    "(", ")", "=>", "//", "[", "]", ",", '"', "`", "\\", "example.com/m", "github.com/a/b",
    "hf.co/o/r", "v1.2.3", "v0.0.0-20260101000000-abcdef123456", "v2", "./dir", "../x",
    "0.1", "x.wgt", "*.gguf", "\t", " ", "\n", "\r\n", "\x00", "é", "\u202e",
]  # fmt: skip


def _token_text(tokens: list[str]) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(tokens) | st.text(max_size=5), max_size=60).map(
        lambda parts: " ".join(parts).encode("utf-8", "surrogatepass")
    )


@st.composite
def _mutants(draw: st.DrawFn, seed: str, tokens: list[str]) -> bytes:
    """``seed`` (a valid file) with a few tokens replaced, inserted or deleted.

    Starting from a valid file gets the fuzzer past the first line: most of
    these inputs are wrong in one place only, which is where parsers break.
    """
    parts = re.split(r"(\s+)", seed)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(parts)))
        op = draw(st.sampled_from(["replace", "insert", "delete", "nest"]))
        tok = draw(st.sampled_from(tokens) | st.text(max_size=6))
        if op == "replace" and at < len(parts):
            parts[at] = tok
        elif op == "insert":
            parts.insert(at, tok)
        elif op == "delete" and at < len(parts):
            del parts[at]
        elif op == "nest":
            n = draw(st.integers(1, 3000))
            parts.insert(at, draw(st.sampled_from(["[", "(", "{"])) * n)
    return "".join(parts).encode("utf-8", "surrogatepass")


def _raises_only_wgtpm_errors(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except WgtpmError:
        pass


_MOD_SEED = """module github.com/acme/app // the app
wgt 0.1

require github.com/acme/xor-base v0.1.0
require (
	hf.co/acme/qwen3-tiny v0.0.0-20261101120000-3f9a2b7c1d0e // indirect
)
exclude github.com/acme/xor-base v0.1.1
replace github.com/acme/xor-base v0.1.0 => ../xor-base
replace hf.co/a/b => hf.co/c/d v1.0.0
retract [v0.1.3, v0.1.5] // wrong split
select hf.co/Qwen/Qwen3-0.6B-GGUF qwen3-0.6b-q6_k.gguf "*.json"
artifact classifier model.wgt
artifact vocab data/vocab.json
"""


@FUZZ
@given(st.binary(max_size=400) | _token_text(_MOD_TOKENS) | _mutants(_MOD_SEED, _MOD_TOKENS))
def test_modfile_parse(data: bytes) -> None:
    try:
        mf = modfile.parse(data, "fuzz/wgt.mod")
    except WgtpmError:
        return
    again = modfile.parse(mf.format(), "fuzz/wgt.mod")  # what parses formats and re-parses
    assert again.format() == mf.format()


_SUM_TOKENS = [
    "example.com/m", "v1.0.0", "v1.0.0/wgt.mod", "h1:", "h1:" + "A" * 43 + "=", "h2:x", "\n", " ",
    "\t", "=", "/", "\x00",
]  # fmt: skip


_SUM_SEED = (
    "example.com/m v1.0.0 h1:"
    + "A" * 43
    + "=\n"
    + "example.com/m v1.0.0/wgt.mod h1:"
    + "B" * 43
    + "=\n"
)


@FUZZ
@given(st.binary(max_size=300) | _token_text(_SUM_TOKENS) | _mutants(_SUM_SEED, _SUM_TOKENS))
def test_sumfile_parse(data: bytes) -> None:
    _raises_only_wgtpm_errors(sumfile.parse, data, "fuzz/wgt.sum")


_json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_entry = st.fixed_dictionaries(
    {},
    optional={
        "path": st.text(max_size=12) | _json,
        "size": st.integers(-2, 10**12) | _json,
        "sha256": st.sampled_from(["0" * 64, "A" * 64, "0" * 63]) | _json,
        "artifact": _json,
        "kind": _json,
    },
)
_index_doc = st.fixed_dictionaries(
    {"schema": st.sampled_from([1, 1, 2, "1"]), "module": st.just("example.com/m")},
    optional={
        "version": st.sampled_from(["v1.0.0", "v2.0.0"]),
        "files": st.lists(_entry, max_size=5) | _json,
        "time": _json,
        "commit": _json,
        "build": _json,
    },
)


@FUZZ
@given(
    st.binary(max_size=300)
    | _index_doc.map(lambda d: json.dumps(d).encode())
    | st.integers(1, 5000).map(lambda n: b'{"schema":1,"files":' + b"[" * n + b"]" * n + b"}")
)
def test_index_parse(data: bytes) -> None:
    _raises_only_wgtpm_errors(index.parse, data, "example.com/m", "v1.0.0")


_WGT_TOKENS = [
    "wgt 0.1", "model", "seed", "input", "output", "layer", "data", "train", "import", "from",
    "freeze", "sha256=", "x", "y", "h1", ":", "f32", "[2]", "[1]", "=", "linear(in=2, out=8)",
    "linear(", "in=", "out=", ")", "tanh", "relu", "sigmoid", "softmax", "layernorm(n=4)",
    "dropout(p=0.5)", "{", "}", "->", "[0, 1]", "[", "]", ",", "loss=bce", "optimizer=adam",
    "lr=0.05", "epochs=5", "batch=2", '"data/x.csv"', "targets=1", "\n", "//", "1e999", "-1",
    "9" * 5000, "github.com/a/b/xor.h1", '"../x".h1', "\t", "é",
]  # fmt: skip


_WGT_SEED = """// xor
wgt 0.1
model xor
seed 0

input x: f32[2]
output y: f32[1]

layer h1 = linear(in=2, out=8)
layer a1 = tanh
layer out = linear(in=8, out=1)
layer p = sigmoid
import h1 from github.com/acme/xor-base/xor.h1 freeze
import out from "../enc/build/enc".out sha256=3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a3f9a

data xor {
  [0, 0] -> [0]
  [0, 1] -> [1]
  [1, 0] -> [1]
  [1, 1] -> [0]
}
data more from "data/more.csv" targets=1

train data=xor loss=bce optimizer=adam lr=0.05 epochs=500 batch=2
"""


@FUZZ
@given(st.binary(max_size=300) | _token_text(_WGT_TOKENS) | _mutants(_WGT_SEED, _WGT_TOKENS))
def test_weightlang_parse(data: bytes) -> None:
    from wgtpm.weightlang import syntax

    _raises_only_wgtpm_errors(syntax.parse_bytes, data, "fuzz.wgt")


_TOML_TOKENS = [
    "spec", "=", '"classify"', "'''", '"""', "interpreter", '"./tiny"', '"hf.co/Qwen/Qwen3-0.6B"',
    "examples", '"ex.jsonl"', "[teacher]", "[recipe]", "[runtime]", "[[runtime]]", "steps", "10",
    "-1", "1e400", "inf", "nan", "lora_rank", "target_modules", '["q_proj"]', "models",
    "[{ name = \"m\", examples = 2 }]", "seed", "9" * 5000, "recipe.steps", "a.b.c", '"quoted.key"', "quantization",
    '"Q4_0"', "true", "{", "}", "[", "]", ",", "\n", "#", "\x00", "é",
]  # fmt: skip


_TOML_SEED = """spec = \"\"\"
Classify a message as "immediate" or "wait".
\"\"\"
interpreter = "./tiny"
examples = "triage.jsonl"

[teacher]
url = "http://127.0.0.1:9/v1"
models = [{ name = "m", examples = 24 }]
examples_per_call = 8

[recipe]
steps = 10
batch_size = 4
micro_batch_size = 2
learning_rate = 2e-4
lora_rank = 8
target_modules = ["q_proj", "v_proj"]
seed = 0
quantization = "F32"

[runtime]
id = "tiny-qwen3-f32"
base_model = "./tiny.gguf"
n_ctx = 2048
"""


@FUZZ
@given(
    st.text(max_size=300)
    | _token_text(_TOML_TOKENS).map(lambda b: b.decode("utf-8", "replace"))
    | _mutants(_TOML_SEED, _TOML_TOKENS).map(lambda b: b.decode("utf-8", "replace"))
)
def test_pawspec_parse(text: str) -> None:
    from wgtpm.paw.spec import parse_spec

    _raises_only_wgtpm_errors(parse_spec, text, Path("/fuzz/program.pawspec"))


_MEMBERS = [
    "meta.json",
    "pseudo_program.txt",
    "adapter.gguf",
    "prompt_template.txt",
    "extra",
    "../x",
]


@st.composite
def _bundles(draw: st.DrawFn) -> bytes:
    """A ZIP with some of a bundle's members (meta.json with fuzzed fields), maybe damaged."""
    buf = io.BytesIO()
    method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    with zipfile.ZipFile(buf, "w", method) as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicate member name is a hostile input too
        for name in draw(st.lists(st.sampled_from(_MEMBERS), max_size=6)):
            if name == "meta.json":
                meta = draw(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "program_id": _json,
                            "runtime": _json,
                            "runtime_id": _json,
                            "interpreter": _json,
                            "format_version": _json,
                            "spec": _json,
                        },
                    )
                )
                body = json.dumps(meta).encode()
            else:
                body = draw(st.binary(max_size=64))
            z.writestr(name, body)
    data = buf.getvalue()
    if data and draw(st.booleans()):
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    return data


@FUZZ
@given(_bundles() | st.binary(max_size=200))
def test_paw_bundle_read_and_check(tmp_path_factory: Any, data: bytes) -> None:
    from wgtpm.paw.validate import validate_file

    p = tmp_path_factory.mktemp("paw") / "p.paw"
    p.write_bytes(data)
    _raises_only_wgtpm_errors(validate_file, p)


_DEEP = 30_000


def _wgt(line: str) -> bytes:
    return _WGT_SEED.replace("seed 0", line).encode()


def _spec(extra: str) -> str:
    return _TOML_SEED + extra


@pytest.mark.parametrize(
    "parser,data",
    [
        ("weightlang", _wgt("seed " + "9" * 5000)),
        ("weightlang", _WGT_SEED.replace("f32[2]", "f32[" + "9" * 5000 + "]").encode()),
        ("weightlang", _WGT_SEED.replace("lr=0.05", "lr=1e999").encode()),
        ("weightlang", _WGT_SEED.replace("[0, 0] -> [0]", "[" * _DEEP + "]" * _DEEP).encode()),
        ("weightlang", b"\xff\xfe" + _WGT_SEED.encode()),
        ("pawspec", _spec("\n[extra]\nseed = " + "9" * 5000 + "\n")),
        ("pawspec", _TOML_SEED.replace("seed = 0", "seed = " + "9" * 5000)),
        ("pawspec", "a = " + "[" * _DEEP + "]" * _DEEP + "\n"),
        ("pawspec", _TOML_SEED.replace("steps = 10", "steps = 1e400")),
        ("pawspec", _TOML_SEED.replace("steps = 10", "steps = nan")),
        ("modfile", b"module " + b"(" * _DEEP + b"\n"),
        ("modfile", b"require example.com/m v" + b"9" * 5000 + b".0.0\n"),
        ("index", b'{"schema":1,"module":"example.com/m","version":"v1.0.0","files":[{"path":"a","size":' + b"9" * 5000 + b',"sha256":"' + b"0" * 64 + b'"}]}'),
    ],
)  # fmt: skip
def test_hostile_inputs(parser: str, data: bytes | str) -> None:
    if parser == "weightlang":
        from wgtpm.weightlang import syntax

        assert isinstance(data, bytes)
        _raises_only_wgtpm_errors(syntax.parse_bytes, data, "hostile.wgt")
    elif parser == "pawspec":
        from wgtpm.paw.spec import parse_spec

        _raises_only_wgtpm_errors(parse_spec, data, Path("/hostile/p.pawspec"))
    elif parser == "modfile":
        _raises_only_wgtpm_errors(modfile.parse, data, "hostile/wgt.mod")
    else:
        _raises_only_wgtpm_errors(index.parse, data, "example.com/m", "v1.0.0")


def _zip_with(method: int, flag: int) -> bytes:
    """A bundle whose members claim compression ``method`` and general-purpose ``flag``."""
    import struct

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in ("meta.json", "pseudo_program.txt", "adapter.gguf", "prompt_template.txt"):
            z.writestr(name, b"{}" if name == "meta.json" else b"x")
    data = bytearray(buf.getvalue())
    for sig, at in ((b"PK\x01\x02", 8), (b"PK\x03\x04", 6)):
        i = data.find(sig)
        while i >= 0:
            struct.pack_into("<HH", data, i + at, flag, method)
            i = data.find(sig, i + 4)
    return bytes(data)


@pytest.mark.parametrize(
    "method,flag,want",
    [
        (zipfile.ZIP_STORED, 1, "encrypted"),
        (99, 0, "compression method 99"),
        (zipfile.ZIP_LZMA, 0, "compression method 14"),
        (zipfile.ZIP_BZIP2, 0, "compression method 12"),
    ],
)
def test_bundle_members_encrypted_or_oddly_compressed(
    tmp_path: Path, method: int, flag: int, want: str
) -> None:
    from wgtpm.paw.bundle import BundleError
    from wgtpm.paw.validate import validate_file

    p = tmp_path / "p.paw"
    p.write_bytes(_zip_with(method, flag))
    with pytest.raises(BundleError, match=want):
        validate_file(p)


@pytest.mark.parametrize(
    "body",
    [
        b'{"format": "weightlang.artifact", "x": ' + b"[" * _DEEP + b"]" * _DEEP + b"}",
        b'{"format": "weightlang.artifact", "n": ' + b"9" * 5000 + b"}",
        b'{"format": "weightlang.artifact", "\xff": 1}',
    ],
)
def test_hostile_artifact_manifest_is_one_line(tmp_path: Path, wgtpm: Any, body: bytes) -> None:  # type: ignore[no-untyped-def]
    art = tmp_path / "art"
    art.mkdir()
    (art / "manifest.json").write_bytes(body)
    (art / "weights.safetensors").write_bytes(b"")
    (art / "source.wgt").write_text("")
    for cmd in ("inspect", "verify"):
        r = wgtpm(cmd, str(art))
        assert r.code == 1, r.err
        assert "manifest.json is not valid JSON" in r.err and "Traceback" not in r.err
        assert len(r.err.splitlines()) == 1, r.err
