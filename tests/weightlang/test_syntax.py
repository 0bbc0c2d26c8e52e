"""The parser: golden error files and a table of forms that must parse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wgtpm._errors import ParseError, Position
from wgtpm.weightlang import check, parse
from wgtpm.weightlang.syntax import FileData, InlineData, ModuleSource, PathSource

from .conftest import XOR

TESTDATA = Path(__file__).parent.parent / "testdata" / "weightlang"
CASES = sorted(p.stem for p in TESTDATA.glob("*.wgt"))


@pytest.mark.parametrize("name", CASES)
def test_golden_errors(name: str) -> None:
    """Each testdata file fails to parse or check with exactly its .golden text.

    Set WGTPM_UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate change.
    """
    text = (TESTDATA / f"{name}.wgt").read_text()
    with pytest.raises(ParseError) as info:
        check(parse(text, f"{name}.wgt"))
    got = str(info.value) + "\n"
    golden = TESTDATA / f"{name}.golden"
    if os.environ.get("WGTPM_UPDATE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text()
    assert all(e.pos.file == f"{name}.wgt" for e in info.value.errors)


def test_every_case_has_a_golden_file() -> None:
    assert CASES
    assert sorted(p.stem for p in TESTDATA.glob("*.golden")) == CASES


def test_xor_example_parses() -> None:
    program = parse(XOR, "xor.wgt")
    assert (program.version, program.model, program.seed) == ("0.1", "xor", 0)
    assert (program.input.name, program.input.width) == ("x", 2)
    assert [(la.name, la.op, dict(la.args)) for la in program.layers] == [
        ("h1", "linear", {"in": 2, "out": 8}),
        ("a1", "tanh", {}),
        ("out", "linear", {"in": 8, "out": 1}),
        ("p", "sigmoid", {}),
    ]
    data = program.data[0]
    assert isinstance(data, InlineData)
    assert [(r.inputs, r.targets) for r in data.rows][1] == ((0.0, 1.0), (1.0,))
    assert data.rows[1].pos == Position("xor.wgt", 16, 3)
    assert program.train is not None
    assert (program.train.loss, program.train.lr, program.train.epochs) == ("bce", 0.05, 300)
    assert program.train.batch is None


HEAD = "wgt 0.1\nmodel m\ninput x: f32[2]\noutput y: f32[2]\nlayer h = linear(2, 2)\n"


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (
            "import h from github.com/acme/xor-base/xor.h1 freeze",
            ("h", ModuleSource("github.com/acme/xor-base/xor"), "h1", True, None),
        ),
        (
            'import h from "../encoder/build/encoder".h2 sha256=' + "AB" * 32,
            ("h", PathSource("../encoder/build/encoder"), "h2", False, "ab" * 32),
        ),
        (
            "import h from hf.co/a/b/v2/my-model.dense_1 sha256=" + "0" * 64 + " freeze",
            ("h", ModuleSource("hf.co/a/b/v2/my-model"), "dense_1", True, "0" * 64),
        ),
    ],
)
def test_import_forms(line: str, want: tuple[object, ...]) -> None:
    imp = parse(HEAD + line + "\n", "m.wgt").imports[0]
    assert (imp.layer, imp.source, imp.source_layer, imp.freeze, imp.sha256) == want


@pytest.mark.parametrize(
    ("decl", "args"),
    [
        ("linear(in=2, out=2)", {"in": 2, "out": 2}),
        ("linear(2, out=2)", {"in": 2, "out": 2}),
        ("linear(out=2, in=2)", {"in": 2, "out": 2}),
        ("dropout(0.25)", {"p": 0.25}),
        ("dropout(p=0)", {"p": 0}),
        ("layernorm(n=2)", {"n": 2}),
        ("gelu()", {}),
        ("softmax", {}),
    ],
)
def test_layer_arguments(decl: str, args: dict[str, float]) -> None:
    text = "wgt 0.1\nmodel m\ninput x: f32[2]\noutput y: f32[2]\nlayer a = " + decl + "\n"
    assert dict(parse(text, "m.wgt").layers[0].args) == args


def test_file_data_and_train_options() -> None:
    text = (
        HEAD
        + 'data more from "data/more.csv" targets=2  // comment\n'
        + 'data rows from "rows \\"q\\".jsonl"\n'
        + "train data=more loss=mse optimizer=sgd lr=1e-3 epochs=5 batch=16\n"
    )
    program = parse(text, "m.wgt")
    assert program.data == (
        FileData("more", "data/more.csv", 2, Position("m.wgt", 6, 1), Position("m.wgt", 6, 16)),
        FileData("rows", 'rows "q".jsonl', None, Position("m.wgt", 7, 1), Position("m.wgt", 7, 16)),
    )
    assert program.train is not None
    assert (program.train.optimizer, program.train.lr, program.train.batch) == ("sgd", 0.001, 16)


def test_crlf_and_compact_rows() -> None:
    text = HEAD.replace("\n", "\r\n") + "data d {\r\n[0,1]->[1, 0]\r\n[1,1]->[0,1] }\r\n"
    data = parse(text, "m.wgt").data[0]
    assert isinstance(data, InlineData)
    assert [r.targets for r in data.rows] == [(1.0, 0.0), (0.0, 1.0)]
