"""Every module path and version the validators accept survives every format it is written in.

A path or version is written into URLs (escaped), into the checksum log's
records (two wgt.sum lines), into ``@v/list`` (one version a line) and into
wgt.sum files. A validator that accepts a string those formats cannot carry
(``v1.0.0\\n``: ``$`` in a regex also matches before a final newline) lets it
be published and logged for good. The properties below generate candidates
from valid parts plus the characters that break line formats, keep those the
validators accept, and check each round trip; the explicit tables pin the
strings the old validators let through.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from registry.protocol import parse_request_path
from wgtpm import sumfile
from wgtpm import version as _v
from wgtpm._errors import WgtpmError
from wgtpm.module import (
    check_path,
    check_path_major,
    escape_path,
    escape_version,
    unescape_path,
)
from wgtpm.sources.proxy import ProxySource
from wgtpm.sumdb import record

PROPS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

H1 = "h1:" + "A" * 43 + "="
MOD_H1 = "h1:" + "B" * 43 + "="
_T = datetime(2026, 11, 1, 12, 0, 0, tzinfo=timezone.utc)
# What breaks line formats and URLs, appended to or put inside otherwise valid parts.
JUNK = ["", "", "", "\n", "\r", "\r\n", " ", "\t", "\x0b", "\x0c", "\x85", "\u2028", "é", "/"]

_ident = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1)


@st.composite
def versions(draw: st.DrawFn) -> str:
    nums = [str(draw(st.integers(0, 30))) for _ in range(3)]
    v = "v" + ".".join(nums)
    if draw(st.booleans()):
        v += "-" + ".".join(draw(st.lists(_ident, min_size=1, max_size=3)))
    if draw(st.booleans()):
        v = _v.pseudo_version(None, _T, draw(st.text("0123456789abcdef", min_size=12)))
    return v + draw(st.sampled_from(JUNK))


@st.composite
def paths(draw: st.DrawFn) -> str:
    host = draw(st.sampled_from(["example.com", "hf.co", "github.com", "models.acme.test"]))
    elem = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_~.", min_size=1)
    elems = [e + draw(st.sampled_from(JUNK)) for e in draw(st.lists(elem, min_size=1, max_size=3))]
    return "/".join([host, *elems])


def _accepted_path(p: str) -> bool:
    try:
        check_path(p)
    except WgtpmError:
        return False
    return True


def _list_via_proxy_tree(p: str, vs: list[str]) -> list[str]:
    """``vs`` written as ``@v/list`` (as the registry and ``proxytree`` write it) and read
    back by the client's proxy source from a ``file://`` tree."""
    with tempfile.TemporaryDirectory() as tmp:
        vdir = Path(tmp) / escape_path(p) / "@v"
        vdir.mkdir(parents=True)
        (vdir / "list").write_bytes("".join(v + "\n" for v in vs).encode())
        return ProxySource(Path(tmp).as_uri(), None).versions(p)


def _record_lines(p: str, v: str) -> set[tuple[str, str, str]]:
    """The checksum log's record of ``p@v`` read back as wgt.sum lines."""
    return sumfile.parse(record.record_text(p, v, H1, MOD_H1), "record").lines


@PROPS
@given(versions())
@example("v1.0.0\n")
@example("v1.0.0-rc.1\n")
@example("v0.0.0-20261101120000-3f9a2b7c1d0e\n")
def test_every_accepted_version_round_trips(v: str) -> None:
    if not _v.is_valid(v):
        return
    p = "example.com/Acme/m"
    req = parse_request_path(f"/{escape_path(p)}/@v/{escape_version(v)}.info")
    assert req is not None and (req.module, req.kind, req.version) == (p, "info", v)
    assert record.parse_lookup_path(record.lookup_path(p, v)) == (p, v)
    assert _record_lines(p, v) == {(p, v, H1), (p, v + "/wgt.mod", MOD_H1)}
    if not _v.is_pseudo(v):
        assert _list_via_proxy_tree(p, [v]) == [v]


@PROPS
@given(paths())
@example("example.com/a\n/b")
@example("example.com/team/a\n/m")
@example("github.com/acme/enc\n/v2")
def test_every_accepted_path_round_trips(p: str) -> None:
    if not _accepted_path(p):
        return
    v = "v2.0.0" if p.endswith("/v2") else "v1.0.0"
    check_path_major(p, v)
    assert unescape_path(escape_path(p)) == p
    req = parse_request_path(f"/{escape_path(p)}/@v/list")
    assert req is not None and (req.module, req.kind) == (p, "list")
    assert record.parse_lookup_path(record.lookup_path(p, v)) == (p, v)
    assert _record_lines(p, v) == {(p, v, H1), (p, v + "/wgt.mod", MOD_H1)}
    assert _list_via_proxy_tree(p, [v]) == [v]


@pytest.mark.parametrize(
    "v",
    ["v1.0.0\n", "v1.2.3-rc.1\n", "v0.0.0-20261101120000-3f9a2b7c1d0e\n", "\nv1.0.0", "v1.0.0\r"],
)
def test_versions_with_a_line_break_are_refused(v: str) -> None:
    assert not _v.is_valid(v)
    with pytest.raises(WgtpmError):
        check_path_major("example.com/m", v)
    with pytest.raises(WgtpmError):
        record.record_text("example.com/m", v, H1, MOD_H1)
    with pytest.raises(ValueError):
        _v.pseudo_rev(v)


@pytest.mark.parametrize(
    "p", ["example.com/a\n/b", "example.com/a\n", "example.com/team\n/m/v2", "example.com/a\r/b"]
)
def test_paths_with_a_line_break_in_an_element_are_refused(p: str) -> None:
    with pytest.raises(WgtpmError):
        check_path(p)
    with pytest.raises(WgtpmError):
        record.record_text(p, "v1.0.0", H1, MOD_H1)
