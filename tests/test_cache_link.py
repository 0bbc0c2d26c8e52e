"""Cache.link: a blob placed in a module tree, as a hard link, or as a copy where the
file system refuses one."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from wgtpm import cache as cache_mod
from wgtpm.cache import Cache


def test_a_blob_is_hard_linked_into_the_tree(tmp_path: Path) -> None:
    c = Cache(tmp_path / "c")
    digest = c.put_bytes(b"weights")
    dst = c.link("example.com/m", "v0.1.0", "w.bin", digest)
    assert dst.read_bytes() == b"weights"
    assert os.path.samefile(dst, c.blob_path(digest))
    assert c.link("example.com/m", "v0.1.0", "w.bin", digest) == dst  # there already: kept


def test_where_links_are_refused_the_blob_is_copied_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = Cache(tmp_path / "c")
    data = os.urandom((3 << 20) + 5)  # more than one chunk of the copy
    digest = c.put_bytes(data)

    def cross_device(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(cache_mod.os, "link", cross_device)
    dst = c.link("example.com/m", "v0.1.0", "w.bin", digest)
    assert dst.read_bytes() == data
    assert not os.path.samefile(dst, c.blob_path(digest))
    assert stat.S_IMODE(dst.stat().st_mode) == cache_mod.BLOB_MODE
    assert [p.name for p in dst.parent.iterdir()] == ["w.bin"]  # no temporary file left
    assert c.link("example.com/m", "v0.1.0", "w.bin", digest) == dst
