"""Key positions in TOML text: a table of documents and the lines of their keys."""

from __future__ import annotations

import sys

import pytest

from wgtpm.paw.tomlkeys import key_lines

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CASES = [
    ("a = 1\nb = 2\n", {("a",): 1, ("b",): 2}),
    ("a.b.c = 1\n", {("a",): 1, ("a", "b"): 1, ("a", "b", "c"): 1}),
    ('a . "b.c" . d = 1\n', {("a",): 1, ("a", "b.c"): 1, ("a", "b.c", "d"): 1}),
    ("'x y' = 1\n\"é\\u00e9\" = 2\n", {("x y",): 1, ("éé",): 2}),
    ("[t]\n\n[t.u]\nk = 1\n", {("t",): 1, ("t", "u"): 3, ("t", "u", "k"): 4}),
    (
        "[[arr]]\nk = 1\n[[arr]]\nk = 2\nj = 3\n",
        {("arr",): 1, ("arr", "k"): 2, ("arr", "j"): 5},
    ),
    ('s = """\na = 1\n\\""" [t]\n"""\nb = 2\n', {("s",): 1, ("b",): 5}),
    ("s = '''\n[t]\n'''''\nb = 2\n", {("s",): 1, ("b",): 4}),
    ('s = "a = # [b]" # c = 1\nb = 2\n', {("s",): 1, ("b",): 2}),
    (
        'm = [\n  { n = "a", e = [1, 2] },  # ]\n  { n = "}" },\n]\nb = 2\n',
        {("m",): 1, ("b",): 5},
    ),
    ("d = 1979-05-27 07:32:00Z\nb = 2\n", {("d",): 1, ("b",): 2}),
    ("a = 1\r\n[t]\r\nb = 2\r\n", {("a",): 1, ("t",): 2, ("t", "b"): 3}),
    ("t = { x = 1, y.z = 2 }\nb = 2\n", {("t",): 1, ("b",): 2}),
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_key_lines(text: str, want: dict[tuple[str, ...], int]) -> None:
    tomllib.loads(text)  # every case is valid TOML
    assert key_lines(text) == want
