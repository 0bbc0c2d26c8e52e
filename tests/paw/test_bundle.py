"""The archive rules of the reader and the byte-stability of the writer."""

from __future__ import annotations

import re
import stat
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paw.synth import members
from wgtpm._errors import WgtpmError
from wgtpm.paw.bundle import (
    MAX_ARCHIVE_BYTES,
    BundleError,
    bundle_bytes,
    read_bundle,
    source_date_epoch,
    write_bundle,
)

GOOD = {
    "meta.json": b'{"program_id": "0123456789abcdef"}',
    "adapter.gguf": b"GGUF" + b"\0" * 2000,
    "prompt_template.txt": b"{INPUT_PLACEHOLDER}",
}


def _zip(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return path


def _entries(**extra: bytes) -> list[tuple[zipfile.ZipInfo | str, bytes]]:
    return [*GOOD.items(), *extra.items()]


def test_writer_is_byte_stable_and_ordered() -> None:
    m = members()
    shuffled = dict(reversed(list({**m, "pseudo_program.txt": b"p"}.items())))
    a = bundle_bytes({**m, "pseudo_program.txt": b"p"})
    assert a == bundle_bytes(shuffled)
    with zipfile.ZipFile(__import__("io").BytesIO(a)) as archive:
        infos = archive.infolist()
    assert [i.filename for i in infos] == [
        "meta.json",
        "pseudo_program.txt",
        "adapter.gguf",
        "prompt_template.txt",
    ]
    assert all(i.create_system == 3 and stat.S_IMODE(i.external_attr >> 16) == 0o644 for i in infos)
    assert bundle_bytes(m, epoch=1764417600) != bundle_bytes(m)


def test_writer_refuses_unknown_members() -> None:
    with pytest.raises(ValueError, match=re.escape("unknown bundle members")):
        bundle_bytes({**GOOD, "notes.txt": b""})


def test_write_then_read(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.paw"
    write_bundle(path, GOOD)
    bundle = read_bundle(path)
    assert dict(bundle.members) == GOOD and bundle.program_id == "0123456789abcdef"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["x.paw"]


@pytest.mark.parametrize(
    ("value", "want"),
    [(None, 315532800), ("", 315532800), ("1764417600", 1764417600), ("12", 315532800)],
)
def test_source_date_epoch(monkeypatch: pytest.MonkeyPatch, value: str | None, want: int) -> None:
    if value is None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    assert source_date_epoch() == want


def test_source_date_epoch_must_be_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(
        WgtpmError, match=re.escape("SOURCE_DATE_EPOCH='yesterday' is not a whole number")
    ):
        source_date_epoch()


def _symlink() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("prompt_template.txt")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _patch_declared_size(path: Path, size: int) -> Path:
    """Make the central directory claim ``size`` uncompressed bytes for the first member."""
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    data[at + 24 : at + 28] = struct.pack("<I", size)
    path.write_bytes(bytes(data))
    return path


RULES: list[tuple[str, Callable[[Path], Path], str]] = [
    (
        "legacy",
        lambda p: (p.write_bytes(b"PAW\x02" + b"\0" * 64), p)[1],
        "legacy binary PAW format",
    ),
    ("not zip", lambda p: (p.write_bytes(b"hello"), p)[1], "archive: not a readable ZIP file"),
    (
        "too big",
        lambda p: (p.write_bytes(b""), __import__("os").truncate(p, MAX_ARCHIVE_BYTES + 1), p)[2],
        "over the SDK's limit of 268435456",
    ),
    (
        "members",
        lambda p: _zip(p, _entries() + [(f"m{i}", b"") for i in range(254)]),
        "257 members, over the SDK's limit of 256",
    ),
    ("expanded", lambda p: _patch_declared_size(_zip(p, _entries()), 0xFFFFFFFF), "expands to"),
    (
        "parent",
        lambda p: _zip(p, _entries(**{"../meta.json": b"{}"})),
        "'../meta.json': unsafe member name",
    ),
    (
        "absolute",
        lambda p: _zip(p, [*_entries(), (zipfile.ZipInfo("/etc/x"), b"")]),
        "'/etc/x': unsafe member name",
    ),
    ("backslash", lambda p: _zip(p, _entries(**{"a\\b": b""})), "unsafe member name"),
    ("drive", lambda p: _zip(p, _entries(**{"C:x": b""})), "'C:x': unsafe member name"),
    ("folder", lambda p: _zip(p, _entries(**{"extra/": b""})), "extra/: folders are not allowed"),
    (
        "nested",
        lambda p: _zip(p, _entries(**{"extra/meta.json": b""})),
        "extra/meta.json: folders are not allowed",
    ),
    ("unknown", lambda p: _zip(p, _entries(**{"notes.txt": b""})), "notes.txt: unknown member"),
    (
        "symlink",
        lambda p: _zip(
            p,
            [(k, v) for k, v in GOOD.items() if k != "prompt_template.txt"]
            + [(_symlink(), b"/etc/passwd")],
        ),
        "prompt_template.txt: not a regular file",
    ),
    (
        "missing",
        lambda p: _zip(p, [(k, v) for k, v in GOOD.items() if k != "adapter.gguf"]),
        "adapter.gguf: required member is missing",
    ),
]


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize(("name", "make", "message"), RULES, ids=[r[0] for r in RULES])
def test_archive_rules(
    tmp_path: Path, name: str, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path / "bad.paw")
    with pytest.raises(BundleError) as info:
        read_bundle(path)
    assert any(message in p for p in info.value.problems), info.value.problems


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_duplicate_member(tmp_path: Path) -> None:
    path = _zip(tmp_path / "dup.paw", [*_entries(), ("meta.json", b"{}")])
    with pytest.raises(BundleError, match=re.escape("meta.json: duplicate member")):
        read_bundle(path)
