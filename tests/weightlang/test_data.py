"""Data sets: inline rows, CSV and JSONL files, their hashes and their errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from wgtpm._errors import ParseError
from wgtpm.weightlang.build import load_program

from .conftest import write

HEAD = """\
wgt 0.1
model m
input x: f32[2]
output y: f32[1]
layer h = linear(2, 1)
layer p = sigmoid
"""
TRAIN = "train data=d loss=bce optimizer=adam lr=0.1 epochs=5\n"


def _program(tmp_path: Path, decl: str, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return write(tmp_path, "m.wgt", HEAD + decl + "\n" + TRAIN)


def test_csv_with_header_and_targets(tmp_path: Path) -> None:
    content = "a, b, y\n0,0,0\n0, 1,1\n\n1,0,1\r\n1,1,0\n"
    src = _program(tmp_path, 'data d from "data/xor.csv" targets=1', {"data/xor.csv": content})
    _, sets = load_program(src)
    rows = sets["d"].rows
    assert [(r.inputs, r.targets) for r in rows] == [
        ((0.0, 0.0), (0.0,)),
        ((0.0, 1.0), (1.0,)),
        ((1.0, 0.0), (1.0,)),
        ((1.0, 1.0), (0.0,)),
    ]
    assert rows[2].pos.line == 5 and rows[2].pos.file.endswith("data/xor.csv")
    assert sets["d"].record == {
        "kind": "csv",
        "file": "data/xor.csv",
        "rows": 4,
        "sha256": hashlib.sha256(content.encode()).hexdigest(),
        "targets": 1,
    }


def test_jsonl_rows(tmp_path: Path) -> None:
    content = (
        '{"input": [0, 1], "target": [1]}\n\n{"input": [1.5e0, 1], "target": 0, "note": "x"}\n'
    )
    src = _program(tmp_path, 'data d from "rows.jsonl"', {"rows.jsonl": content})
    _, sets = load_program(src)
    assert [(r.inputs, r.targets) for r in sets["d"].rows] == [
        ((0.0, 1.0), (1.0,)),
        ((1.5, 1.0), (0.0,)),
    ]
    assert sets["d"].record["sha256"] == hashlib.sha256(content.encode()).hexdigest()


def test_inline_hash_depends_on_the_rows(tmp_path: Path) -> None:
    a = _program(tmp_path / "a", "data d {\n  [0, 1] -> [1]\n}", {})
    b = _program(tmp_path / "b", "data d {\n  [0, 1] -> [0]\n}", {})
    c = _program(tmp_path / "c", "data d {\n [0,1]->[1]   // same rows, other spelling\n}", {})
    ha, hb, hc = (load_program(p)[1]["d"].record["sha256"] for p in (a, b, c))
    assert ha != hb
    assert ha == hc


@pytest.mark.parametrize(
    ("decl", "files", "errors"),
    [
        (
            'data d from "missing.csv" targets=1',
            {},
            ['m.wgt:7:13: data d: cannot read "missing.csv" (No such file or directory)'],
        ),
        (
            'data d from "d.csv" targets=1',
            {"d.csv": "0,1,1\n0,x,1\n1,1\n1,1,2\n"},
            [
                "d.csv:2:3: 'x' is not a number, expected a number",
                "d.csv:3:1: row has 2 columns, expected 3",
                "d.csv:4:1: target [2] does not fit loss=bce, expected 0 or 1",
            ],
        ),
        (
            'data d from "d.csv" targets=3',
            {"d.csv": "0,1,1\n"},
            ["d.csv:1:1: row has 3 columns, expected more than targets=3"],
        ),
        (
            'data d from "d.csv"',
            {"d.csv": "0,1,1\n"},
            ['m.wgt:7:13: data d from "d.csv": expected targets=N'],
        ),
        (
            'data d from "d.jsonl" targets=1',
            {"d.jsonl": ""},
            ['m.wgt:7:13: data d from "d.jsonl": expected no targets='],
        ),
        ('data d from "d.txt"', {"d.txt": ""}, ['m.wgt:7:13: "d.txt" is not a data file']),
        (
            'data d from "d.csv" targets=1',
            {"d.csv": "a,b,c\n\n"},
            ["d.csv:1: no rows, expected at least one"],
        ),
        (
            'data d from "d.jsonl"',
            {"d.jsonl": '{"input": [0, 1], "target": [1]}\n{"input": [0, 1], "target": [1]\n'},
            [
                "d.jsonl:2:32: not valid JSON (Expecting ',' delimiter), expected one object per line"
            ],
        ),
        (
            'data d from "d.jsonl"',
            {
                "d.jsonl": '{"input": [0, true], "target": [1]}\n[1]\n{"input": [0, 1, 2], "target": [NaN]}\n'
            },
            [
                "d.jsonl:1:1: malformed row",
                "d.jsonl:2:1: malformed row",
                "d.jsonl:3:1: not valid JSON",
            ],
        ),
        (
            'data d from "d.jsonl"',
            {"d.jsonl": '{"input": [0, 1, 2], "target": [1]}\n'},
            ["d.jsonl:1:1: row has 3 inputs, expected 2"],
        ),
        ('data d from "d.csv" targets=1', {"d.csv": b"0,1,\xff\n"}, ["d.csv:1: not valid UTF-8"]),
    ],
)
def test_bad_data_files(
    tmp_path: Path, decl: str, files: dict[str, str | bytes], errors: list[str]
) -> None:
    src = _program(tmp_path, decl, files)
    with pytest.raises(ParseError) as info:
        load_program(src, name="m.wgt")
    got = [str(e).replace(str(tmp_path) + "/", "") for e in info.value.errors]
    assert len(got) == len(errors), got
    for line, want in zip(got, errors, strict=True):
        assert line.startswith(want), (line, want)
