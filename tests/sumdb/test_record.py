"""A record's text and the lookup path that finds it."""

from __future__ import annotations

import pytest

from wgtpm import InvalidPathError, InvalidVersionError
from wgtpm.sumdb import record


def test_record_text_is_the_two_wgt_sum_lines() -> None:
    assert record.record_text("github.com/acme/enc", "v1.2.0", "h1:AAA=", "h1:BBB=") == (
        b"github.com/acme/enc v1.2.0 h1:AAA=\ngithub.com/acme/enc v1.2.0/wgt.mod h1:BBB=\n"
    )


def test_tables_record_text_is_one_line() -> None:
    assert record.tables_record_text("hf.co/acme/q", "v0.1.0", "h1:CCC=") == (
        b"hf.co/acme/q v0.1.0/wgt.tensors.json h1:CCC=\n"
    )


@pytest.mark.parametrize(
    ("path", "version", "lookup"),
    [
        ("github.com/acme/enc", "v1.2.0", "/lookup/github.com/acme/enc@v1.2.0"),
        ("github.com/acme/enc", "v1.2.0/wgt.mod", "/lookup/github.com/acme/enc@v1.2.0"),
        ("hf.co/Qwen/Qwen3", "v1.0.0-RC1", "/lookup/hf.co/!qwen/!qwen3@v1.0.0-!r!c1"),
        (
            "hf.co/Qwen/Qwen3",
            "v1.0.0-RC1/wgt.tensors.json",
            "/lookup/hf.co/!qwen/!qwen3@v1.0.0-!r!c1/wgt.tensors.json",
        ),
    ],
)
def test_lookup_path_round_trip(path: str, version: str, lookup: str) -> None:
    assert record.lookup_path(path, version) == lookup
    assert record.parse_lookup_path(lookup) == (path, version.removesuffix("/wgt.mod"))


@pytest.mark.parametrize(
    ("lookup", "error"),
    [
        ("/latest", InvalidPathError),
        ("/lookup/github.com/acme/enc", InvalidPathError),
        ("/lookup/github.com/acme/enc@1.0", InvalidVersionError),
        ("/lookup/github.com/acme/enc@v1.0.0-!", InvalidVersionError),
        ("/lookup/github.com/acme/enc@v1.0.0-A", InvalidVersionError),
        ("/lookup/github.com/Acme/enc@v1.0.0", InvalidPathError),
        ("/lookup/github.com/acme/enc@v1.0.0/wgt.other", InvalidVersionError),
        ("/lookup/github.com/acme/enc@/wgt.tensors.json", InvalidVersionError),
    ],
)
def test_parse_lookup_path_refuses(lookup: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        record.parse_lookup_path(lookup)
