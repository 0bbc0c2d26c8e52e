"""Table tests for the pure formats: versions, paths, queries, h1, wgt.sum, the index."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import datetime, timezone

import pytest

from wgtpm import dirhash, index, module, query, sumfile
from wgtpm import version as v
from wgtpm._errors import InvalidPathError, InvalidVersionError, ParseError, VerifyError


@pytest.mark.parametrize(
    "s,ok",
    [
        ("v0.1.0", True),
        ("v1.2.3-rc.1", True),
        ("v1.2.3-0.20261101120000-3f9a2b7c1d0e", True),
        ("1.2.3", False),
        ("v1.2", False),
        ("v01.2.3", False),
        ("v1.2.3+meta", False),
        ("v1.2.3-", False),
        ("", False),
    ],
)
def test_version_valid(s: str, ok: bool) -> None:
    assert v.is_valid(s) is ok


def test_version_order() -> None:
    ordered = [
        "v0.0.0-20260101000000-aaaaaaaaaaaa",
        "v0.1.0-rc.1",
        "v0.1.0",
        "v0.1.1-0.20261101120000-3f9a2b7c1d0e",
        "v0.1.1",
        "v0.2.0",
        "v0.10.0",
        "v1.0.0-alpha",
        "v1.0.0-alpha.1",
        "v1.0.0-beta",
        "v1.0.0",
    ]
    assert v.sort_versions(list(reversed(ordered))) == ordered
    assert v.compare("", "v9.9.9") == 1 and v.compare("none", "v0.0.0") == -1


def test_pseudo_versions() -> None:
    t = datetime(2026, 11, 1, 12, 0, 0, tzinfo=timezone.utc)
    rev = "3f9a2b7c1d0e99887766"
    cases = [
        (None, "v0.0.0-20261101120000-3f9a2b7c1d0e"),
        ("v0.1.0", "v0.1.1-0.20261101120000-3f9a2b7c1d0e"),
        ("v1.2.0-rc.1", "v1.2.0-rc.1.0.20261101120000-3f9a2b7c1d0e"),
    ]
    for base, want in cases:
        got = v.pseudo_version(base, t, rev)
        assert got == want
        assert v.is_pseudo(got) and v.pseudo_rev(got) == "3f9a2b7c1d0e" and v.pseudo_time(got) == t
        assert v.pseudo_base(got) == base
        if base:
            assert v.compare(base, got) < 0  # a snapshot after the release it builds on
    assert not v.is_pseudo("v1.0.0")
    with pytest.raises(ValueError):
        v.pseudo_version(None, t, "xyz")


@pytest.mark.parametrize(
    "path,err",
    [
        ("github.com/acme/xor", None),
        ("hf.co/Qwen/Qwen3-0.6B", None),
        ("example.com/m/v2", None),
        ("acme/xor", "host name with a dot"),
        ("GitHub.com/a/b", "lower-case"),
        ("github.com//b", "empty path element"),
        ("github.com/a/.b", "start or end with a dot"),
        ("github.com/a/b c", "only letters"),
        ("example.com/m/v1", "v2 and up"),
        ("github.com/a/b/", "empty path element"),
    ],
)
def test_check_path(path: str, err: str | None) -> None:
    if err is None:
        module.check_path(path)
    else:
        with pytest.raises(InvalidPathError, match=err):
            module.check_path(path)


def test_major_suffix() -> None:
    module.check_path_major("example.com/m", "v1.9.0")
    module.check_path_major("example.com/m/v2", "v2.0.0")
    with pytest.raises(InvalidVersionError, match="/v2"):
        module.check_path_major("example.com/m", "v2.0.0")
    with pytest.raises(InvalidVersionError, match=r"v3\.x\.y"):
        module.check_path_major("example.com/m/v3", "v2.0.0")


def test_escape_roundtrip() -> None:
    for p, want in [
        ("hf.co/Qwen/Qwen3-0.6B", "hf.co/!qwen/!qwen3-0.6!b"),
        ("github.com/acme/x", "github.com/acme/x"),
    ]:
        assert module.escape_path(p) == want
        assert module.unescape_path(want) == p
    with pytest.raises(InvalidPathError):
        module.unescape_path("hf.co/Qwen")
    assert module.normalise("huggingface.co/a/b") == "hf.co/a/b"
    assert module.source_kind("programasweights.com/abc") == "paw"


def test_match_patterns() -> None:
    assert module.match_patterns("github.com/acme", "github.com/acme/xor")
    assert module.match_patterns("x.org, *.corp.example", "models.corp.example/team/m")
    assert not module.match_patterns("github.com/acme", "github.com/acmeco/x")


VS = [
    "v0.1.0",
    "v0.1.1",
    "v0.2.0",
    "v0.2.1",
    "v1.0.0",
    "v1.1.0-rc.1",
    "v1.0.1-0.20260101000000-aaaaaaaaaaaa",
]


@pytest.mark.parametrize(
    "q,cur,want",
    [
        ("latest", None, "v1.0.0"),
        ("upgrade", "v1.1.0-rc.1", "v1.1.0-rc.1"),
        ("upgrade", "v0.1.0", "v1.0.0"),
        ("patch", "v0.1.0", "v0.1.1"),
        ("v0", None, "v0.2.1"),
        ("v0.1", None, "v0.1.1"),
        ("<v0.2.0", None, "v0.1.1"),
        ("<=v0.2.0", None, "v0.2.0"),
        (">v0.1.0", None, "v0.1.1"),
        (">=v1", None, "v1.0.0"),
        ("v3.0.0", None, "v3.0.0"),
        ("v2", None, None),
    ],
)
def test_query_pick(q: str, cur: str | None, want: str | None) -> None:
    assert query.pick(q, cur, VS, lambda x: True) == want


def test_query_skips_disallowed_and_revisions() -> None:
    assert query.pick("latest", None, VS, lambda x: x != "v1.0.0") == "v0.2.1"
    assert query.pick("latest", None, ["v2.0.0-rc.1"], lambda x: True) == "v2.0.0-rc.1"
    assert query.pick("latest", None, [], lambda x: True) is None
    assert (
        query.is_revision("main") and query.is_revision("3f9a2b7c") and not query.is_revision("v1")
    )


def test_hash1_matches_sha256sum(tmp_path) -> None:
    files = {"a.txt": b"hello\n", "dir/b.bin": bytes(range(256)), "wgt.mod": b"module x\n"}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    # The documented definition: sha256sum $(find . -type f | sort) | sha256sum, base64.
    out = subprocess.run(
        "find . -type f | sed 's|^./||' | LC_ALL=C sort | xargs sha256sum",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        check=True,
    ).stdout
    import base64

    want = "h1:" + base64.b64encode(hashlib.sha256(out).digest()).decode()
    assert dirhash.hash1_bytes(files) == want


def test_sumfile_parse_format_keep() -> None:
    text = (
        b"github.com/b/x v0.10.0 h1:" + b"A" * 43 + b"=\n"
        b"github.com/b/x v0.2.0/wgt.mod h1:" + b"B" * 43 + b"=\n"
        b"github.com/b/x v0.2.0 h1:" + b"C" * 43 + b"=\n"
        b"github.com/a/y v1.0.0 h1:" + b"D" * 43 + b"=\n"
    )
    sf = sumfile.parse(text)
    lines = sf.format().decode().splitlines()
    assert [ln.split()[:2] for ln in lines] == [
        ["github.com/a/y", "v1.0.0"],
        ["github.com/b/x", "v0.2.0"],
        ["github.com/b/x", "v0.2.0/wgt.mod"],
        ["github.com/b/x", "v0.10.0"],
    ]
    kept = sf.keep({("github.com/a/y", "v1.0.0")})
    assert len(kept.lines) == 1
    with pytest.raises(ParseError) as ei:
        sumfile.parse(b"ok v1 h1:x\n\ngithub.com/a v1.0.0 md5:abc\njunk\n", "wgt.sum")
    assert [str(e.pos) for e in ei.value.errors] == ["wgt.sum:1", "wgt.sum:3", "wgt.sum:4"]


def _idx(files: list[dict[str, object]]) -> bytes:
    return json.dumps(
        {"schema": 1, "module": "example.com/m", "version": "v0.1.0", "files": files}
    ).encode()


def test_index_parse_and_h1() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    idx = index.parse(
        _idx([{"path": "a/b.bin", "size": 1, "sha256": sha, "artifact": "a", "kind": "wgt"}]),
        "example.com/m",
        "v0.1.0",
    )
    assert idx.h1() == dirhash.hash1_bytes({"a/b.bin": b"x"})
    assert index.parse(idx.to_json(), "example.com/m", "v0.1.0").files == idx.files


@pytest.mark.parametrize(
    "files,msg",
    [
        ([{"path": "a", "size": 1, "sha256": "ab"}], "64 lower-case hex"),
        ([{"path": "a", "size": -1, "sha256": "0" * 64}], "non-negative"),
        (
            [
                {"path": "a", "size": 1, "sha256": "0" * 64},
                {"path": "a/b", "size": 1, "sha256": "0" * 64},
            ],
            "which is a file",
        ),
        (
            [
                {"path": "a", "size": 1, "sha256": "0" * 64},
                {"path": "a", "size": 1, "sha256": "0" * 64},
            ],
            "listed twice",
        ),
    ],
)
def test_index_rejects(files: list[dict[str, object]], msg: str) -> None:
    with pytest.raises(VerifyError, match=msg):
        index.parse(_idx(files), "example.com/m", "v0.1.0")
    with pytest.raises(VerifyError, match="not this version"):
        index.parse(_idx([]), "example.com/m", "v0.2.0")


def _f(path: str) -> dict[str, object]:
    return {"path": path, "size": 1, "sha256": "0" * 64}


@pytest.mark.parametrize(
    "paths,msg",
    [
        (["caf\u00e9.txt", "cafe\u0301.txt"], "Unicode normalization"),
        (["Model.bin", "model.BIN"], "only in case"),
        (["STRASSE", "stra\u00dfe"], "Unicode normalization"),
        (["\u00c9/x", "e\u0301/x/y"], "which is a file"),
        (["CON"], "Windows device name"),
        (["data/aux.txt"], "Windows device name"),
        (["lpt1 .bin"], "Windows device name"),
        (["com\u00b9"], "Windows device name"),
        (["data/w:stream"], "Windows does not allow"),
        (["a?b"], "Windows does not allow"),
        (["weights./x"], "ending in a dot or a space"),
        (["weights "], "ending in a dot or a space"),
        (["a\tb"], "control character U\\+0009"),
        (["a\x7fb"], "control character U\\+007F"),
        (["evil\u202etxt.exe"], "bidirectional formatting character U\\+202E"),
        (["x\u2066y"], "bidirectional"),
    ],
)
def test_index_refuses_colliding_and_unportable_paths(paths: list[str], msg: str) -> None:
    with pytest.raises(VerifyError, match=msg):
        index.parse(_idx([_f(p) for p in paths]), "example.com/m", "v0.1.0")


@pytest.mark.parametrize(
    "path", ["console.txt", "auxiliary/a", "com10", "a.b.c", "caf\u00e9", "x y"]
)
def test_index_accepts_near_misses(path: str) -> None:
    assert index.check_file_path(path) is None


@pytest.mark.parametrize("n", [3, index.STREAM_FILES + 2])
def test_index_encoding_is_canonical_json_and_reads_back(n: int) -> None:
    """Large indexes are encoded file by file and read without a dict per file: the bytes
    are canonical JSON all the same, and what is read is what was written (an object that
    merely looks like a file's, outside ``files``, comes back as the dict it was)."""
    from wgtpm._fs import canonical_json

    files = [
        index.IndexEntry(f"d{i % 3}/f{i:05d}.bin", i, f"{i:064x}", "art" if i % 2 else None)
        for i in range(n)
    ]
    build = {"data": [{"path": "x", "size": 1, "sha256": "ab" * 32}], "seed": 7}
    idx = index.ReleaseIndex("example.com/m", "v1.0.0", files, build=build, extra={"x": {}})
    data = idx.to_json()
    doc = {
        "schema": 1,
        "module": "example.com/m",
        "version": "v1.0.0",
        "files": [e.to_json() for e in sorted(files, key=lambda e: e.path)],
        "build": build,
        "x": {},
    }
    assert data == canonical_json(doc, pretty=True)
    back = index.parse(data, "example.com/m", "v1.0.0")
    assert sorted(back.files, key=lambda e: e.path) == sorted(files, key=lambda e: e.path)
    assert back.build == build and back.extra == {"x": {}}
    assert back.to_json() == data


def test_index_reads_a_file_with_null_and_unknown_keys() -> None:
    raw = {
        "schema": 1,
        "module": "example.com/m",
        "version": "v1.0.0",
        "files": [
            {"path": "a", "size": 1, "sha256": "ab" * 32, "artifact": None},
            {"path": "b", "size": 2, "sha256": "cd" * 32, "future": True},
        ],
    }
    idx = index.parse(json.dumps(raw).encode(), "example.com/m", "v1.0.0")
    assert [(e.path, e.size, e.artifact) for e in idx.files] == [("a", 1, None), ("b", 2, None)]


def test_index_refuses_deep_nesting() -> None:
    deep = b'{"schema": 1, "build": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(VerifyError, match="nested too deeply"):
        index.parse(deep, "example.com/m", "v0.1.0")


def test_index_reads_what_nests_as_deep_as_the_parser_allows() -> None:
    head = b'{"schema": 1, "module": "example.com/m", "version": "v0.1.0", "files": [], '
    for depth in (400, 900, 2000):
        deep = head + b'"build": {"a": ' + b"[" * depth + b"]" * depth + b"}}"
        try:
            idx = index.parse(deep, "example.com/m", "v0.1.0")
        except VerifyError as exc:  # past what the JSON parser itself takes
            assert "nested too deeply" in str(exc)
        else:
            assert isinstance(idx.build["a"], list)


@pytest.mark.parametrize(
    "q,ok",
    [
        ("latest", True), ("v1.2.3", True), ("<=v1.2", True), ("main", True),
        ("feature/x-1", True), ("0123abcd", True), ("v1.2.3-rc.1+meta", True),
        ("foo!bar", False), ("../../etc", False), ("a/../b", False), ("/abs", False),
        ("-rf", False), (".hidden", False), ("a//b", False), ("x" * 300, False), ("", False),
        ("a b", False), ("a%2e%2e", False), ("main.lock", False), ("a\\b", False),
    ],
)  # fmt: skip
def test_check_query(q: str, ok: bool) -> None:
    assert (query.check_query(q) is None) == ok
