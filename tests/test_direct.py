"""The bytes next in line for a ranged download's hash: hashed from memory, written past the
page cache (wgtpm._direct), and the page cache for all else."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import threading
from pathlib import Path

import pytest

from tests.servers import Fault
from tests.servers.proxytree import ProxyTreeServer
from wgtpm import _direct, modfetch
from wgtpm.cache import Cache
from wgtpm.proxytree import ProxyTree

MOD = "github.com/acme/big"
BIG = os.urandom((16 << 20) + 12345)  # the last range ends off the page grid
SHA = hashlib.sha256(BIG).hexdigest()
FILE_PATH = f"/{MOD}/@v/v0.1.0/weights.bin"


@pytest.fixture(autouse=True)
def _small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modfetch, "RANGED_MIN", 16 << 20)
    monkeypatch.setattr(modfetch, "RANGE_MIN", 4 << 20)
    # these tests follow one connection's bytes: a busy machine's loopback must not look
    # like a far server (modfetch.FAR_ANSWER), whose ranges all start at once
    monkeypatch.setattr(modfetch, "FAR_ANSWER", 60.0)


@pytest.fixture
def big(tree: ProxyTree) -> ProxyTree:
    tree.add(MOD, "v0.1.0", {"wgt.mod": f"module {MOD}\n".encode(), "weights.bin": BIG})
    return tree


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Bytes hashed from memory, hashed from the file, and written directly, counted."""
    counts = {"memory": 0, "file": 0, "direct": 0}
    hashed, span, pwrite = _direct.Direct.hashed, modfetch._Ranges._hash_span, os.pwrite
    lock = threading.Lock()

    def count(key: str, n: int) -> None:
        with lock:
            counts[key] += n

    def counting_hashed(self, p):  # type: ignore[no-untyped-def]
        count("memory", p.n)
        return hashed(self, p)

    def counting_span(self, h, pos, n):  # type: ignore[no-untyped-def]
        count("file", n)
        return span(self, h, pos, n)

    def counting_pwrite(fd, data, at):  # type: ignore[no-untyped-def]
        n = pwrite(fd, data, at)
        if fcntl_flags(fd) & os.O_DIRECT:
            count("direct", n)
        return n

    monkeypatch.setattr(_direct.Direct, "hashed", counting_hashed)
    monkeypatch.setattr(modfetch._Ranges, "_hash_span", counting_span)
    monkeypatch.setattr(_direct.os, "pwrite", counting_pwrite)
    return counts


def fcntl_flags(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_GETFL)


def fail_direct_writes(monkeypatch: pytest.MonkeyPatch, err: int, since: int = 0) -> list[int]:
    """Direct writes at offset ``since`` and past fail with ``err``; the offsets tried."""
    pwrite = os.pwrite
    tried: list[int] = []

    def failing(fd, data, at):  # type: ignore[no-untyped-def]
        if fcntl_flags(fd) & os.O_DIRECT and at >= since:
            tried.append(at)
            raise OSError(err, os.strerror(err))
        return pwrite(fd, data, at)

    monkeypatch.setattr(_direct.os, "pwrite", failing)
    return tried


def got_it() -> None:
    assert (Cache().mod_dir(MOD, "v0.1.0") / "weights.bin").read_bytes() == BIG
    tmp = Cache().root / "tmp"
    assert not list(tmp.glob(f"{SHA}.partial*"))


def test_one_fast_connection_hashes_every_byte_from_memory(
    wgtpm, big, project, monkeypatch, paths
) -> None:
    monkeypatch.setattr(modfetch, "RANGE_SLOW", 0)  # one connection, however the machine is
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    assert paths["memory"] == len(BIG)
    assert paths["file"] == 0
    # all but the last range's unaligned tail went past the page cache
    assert len(BIG) - 4096 < paths["direct"] <= len(BIG)
    got_it()


def test_once_more_connections_come_the_bytes_go_through_the_page_cache(
    wgtpm, big, project, monkeypatch, paths
) -> None:
    """A line capped per connection gets more connections, and then the disk's writes are
    left to the page cache: at most the buffer being filled then is hashed from memory,
    and nothing is written directly."""
    with ProxyTreeServer(big.root) as srv:
        srv.inject(Fault.drip(FILE_PATH, delay=0.02, chunk=64 << 10, times=-1))
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
        ranges = [s for s in srv.log.where(path=FILE_PATH) if s.header("range")]
    assert len(ranges) == 5  # 4 MiB each, and the 12,345 bytes past them
    assert paths["memory"] <= _direct.BUF
    assert paths["memory"] + paths["file"] == len(BIG)
    assert paths["direct"] == 0
    got_it()


def test_without_direct_writes_every_byte_goes_through_the_page_cache(
    wgtpm, big, project, monkeypatch, paths
) -> None:
    monkeypatch.setattr(_direct, "open_direct", lambda path: None)
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    assert paths["memory"] == 0
    assert paths["file"] == len(BIG)
    got_it()


def test_a_device_that_refuses_direct_writes_gets_them_through_the_page_cache(
    wgtpm, big, project, monkeypatch, paths
) -> None:
    monkeypatch.setattr(modfetch, "RANGE_SLOW", 0)  # one connection, however the machine is
    refused = fail_direct_writes(monkeypatch, errno.EINVAL)
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    assert refused  # tried, refused, and the rest went through the page cache
    assert paths["direct"] == 0
    got_it()


def test_a_disk_error_while_writing_directly_is_one_clear_line(
    wgtpm, big, project, monkeypatch
) -> None:
    monkeypatch.setattr(modfetch, "RANGE_SLOW", 0)
    fail_direct_writes(monkeypatch, errno.ENOSPC, since=8 << 20)
    with ProxyTreeServer(big.root) as srv:
        monkeypatch.setenv("WGTPROXY", srv.url)
        r = wgtpm("get", f"{MOD}@v0.1.0", cwd=project)
    assert r.code != 0
    assert "disk full while writing" in r.err and f"{SHA}.partial" in r.err, r.err
    assert "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    blobs = Cache().root / "blobs"
    assert SHA not in [p.name for p in blobs.rglob("*")] if blobs.exists() else True


def _direct_for(path: Path) -> tuple[_direct.Direct, int, list[tuple[int, int, int]]]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    landed: list[tuple[int, int, int]] = []
    dfd = _direct.open_direct(path)
    assert dfd is not None, "this file system takes direct writes"
    d = _direct.Direct(dfd, fd, lambda *a: landed.append(a), print, lambda: None)
    return d, fd, landed


@pytest.mark.parametrize("on", [True, False], ids=["direct", "page cache"])
def test_pieces_off_the_page_grid_land_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on: bool
) -> None:
    """A piece's head and tail off the 4 KiB grid go through the page cache, its middle
    directly; every byte lands where it belongs, and each landing is reported once."""
    # a buffer comes free once its write is done, however slow the disk under load
    monkeypatch.setattr(_direct, "TAKE_WAIT", 30.0)
    data = os.urandom(3 * _direct.BUF)
    d, fd, landed = _direct_for(tmp_path / "f")
    if not on:
        d.turn_off()
    stop = threading.Event()
    cuts = [
        0,
        1000,
        5000,
        4096 * 3,
        _direct.BUF + 7,
        2 * _direct.BUF,  # a buffer's room, but the 7 bytes before it on the page grid
        2 * _direct.BUF + 4096,
        len(data) - 5,
        len(data),
    ]
    try:
        for a, b in itertools.pairwise(cuts):
            p = d.take(0, a, stop)
            assert p is not None
            with p.space(b) as room:
                room[: b - a] = data[a:b]
            p.n = b - a
            d.submit(p)
            piece = d.take_ready(a)  # as the hasher does, before or after the write
            assert piece is not None
            d.hashed(piece)
        d.drain(0)
    finally:
        d.close()
    with open(fd, "rb", closefd=True) as f:
        assert f.read() == data
    assert sorted(landed) == [(0, a, b - a) for a, b in itertools.pairwise(cuts)]


def test_buffers_are_bounded_and_come_back(tmp_path: Path) -> None:
    """A range thread waits a little for a buffer while all of its file's are in use, and
    gets one back once a buffer is both written and hashed; one that has stopped gets
    none."""
    d, fd, _ = _direct_for(tmp_path / "f")
    stop = threading.Event()
    try:
        held = [d.take(0, k * _direct.BUF, stop) for k in range(_direct.BUFFERS)]
        for p in held:
            assert p is not None
            p.n = _direct.BUF
            d.submit(p)
        d.drain(0)  # written, not hashed: still in use
        assert d.take(0, 0, stop) is None  # after TAKE_WAIT
        assert d.waited >= _direct.TAKE_WAIT
        stop.set()
        assert d.take(0, 0, stop) is None
        stop.clear()
        first = d.take_ready(0)
        assert first is not None
        d.hashed(first)
        again = d.take(0, 0, stop)
        assert again is not None and again.buf is first.buf  # the same memory, again
        d.submit(again)  # empty: freed at once
    finally:
        d.close()
        os.close(fd)


def test_the_process_holds_at_most_pool_buffers(tmp_path: Path) -> None:
    """However many files are fetched at once, their buffers are at most POOL; a file
    that finds none free is told so at once (its bytes go through the page cache)."""
    files = [_direct_for(tmp_path / f"f{k}") for k in range(3)]
    stop = threading.Event()
    taken: list[list[_direct.Piece]] = [[], [], []]
    try:
        for k, (d, _, _) in enumerate(files):
            while len(taken[k]) < _direct.BUFFERS and (p := d.take(0, 0, stop)) is not None:
                taken[k].append(p)
        assert sum(map(len, taken)) == _direct.POOL
        assert len(taken[0]) == _direct.BUFFERS  # the first file came first
        d = files[2][0]
        assert d.take(0, 0, stop) is None and d.waited == 0  # none free: no wait
        for k, (d, _, _) in enumerate(files):
            for p in taken[k]:
                d.submit(p)  # empty: freed
        p = d.take(0, 0, stop)
        assert p is not None
        d.submit(p)
    finally:
        for d, fd, _ in files:
            d.close()
            os.close(fd)
