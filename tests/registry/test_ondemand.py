"""Proxied versions fetched a file at a time (``registry/ondemand.py``), against a loopback
proxy tree whose file server drips or corrupts bytes.

The Hub API's tests (``test_hf_mirror.py``) drive the same code through the
real ``huggingface_hub``; these look at what a response cannot show: when
bytes arrive, how many upstream requests there are, what is stored, and when
the version enters the checksum log.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry._errors import UpstreamError
from registry.metadata import open_metadata_store
from registry.ondemand import HOLD, OnDemand, Pending
from registry.proxy import open_proxy
from registry.service import Registry
from registry.sumdb import SumDB
from registry.sumlog import SqlSumLog
from tests.servers import Fault, RequestLog
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.proxytree import ProxyTree
from wgtpm.sumdb import note

from .helpers import h1

UP = "example.org/acme/big"
BIG = "big/weights.bin"
SIZE = 2 << 20


def files(tag: bytes) -> dict[str, bytes]:
    seed = hashlib.sha256(tag).digest()
    weights = b"".join(
        hashlib.sha256(seed + i.to_bytes(4, "big")).digest() for i in range(SIZE // 32)
    )
    return {"wgt.mod": f"module {UP}\nwgt 0.1\n".encode(), BIG: weights, "big/config.json": b"{}"}


@pytest.fixture
def upstream(tmp_path: Path, log: RequestLog) -> Iterator[ProxyTreeServer]:
    tree = ProxyTree(tmp_path / "tree")
    tree.add(UP, "v0.1.0", files(b"1"), time="2026-11-01T00:00:00Z")
    tree.add(UP, "v0.2.0", files(b"2"), time="2026-11-02T00:00:00Z")
    with ProxyTreeServer(tree.root, log=log) as srv:
        yield srv


@pytest.fixture
def reg(
    tmp_path: Path, upstream: ProxyTreeServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Registry]:
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    meta = open_metadata_store(f"sqlite:///{tmp_path / 'r.db'}")
    skey, _ = note.generate_key("sum.test")
    r = Registry(
        meta,
        open_blob_store(tmp_path),
        sumdb=SumDB.open(meta.engine, skey, ttl=0),
        proxy=open_proxy(upstream.url, tmp_path / "proxy", {"WGTPM_HTTP_RETRIES": "0"}),
    )
    try:
        yield r
    finally:
        r.close()


def open_blob_store(tmp: Path):  # type: ignore[no-untyped-def]
    from registry.stores import open_blob_store as open_store

    return open_store(str(tmp / "blobs"), spool=tmp / "spool")


def on_demand(reg: Registry) -> OnDemand:
    """The Hub API's on-demand versions: files that are not LFS are fetched when indexed."""
    from registry.hfmirror import is_lfs

    return OnDemand(reg, lambda path, size: not is_lfs(path, size))


def logged(reg: Registry, version: str) -> bytes | None:
    """The record of ``UP@version`` in the checksum log, ``None`` when it is not there."""
    log = SqlSumLog(reg.meta.engine)  # type: ignore[attr-defined]
    rid = log.lookup(UP, version)
    return None if rid is None else log.records(rid, 1)[0]


def pending(od: OnDemand, version: str) -> Pending:
    p = od.open(UP, version)
    assert isinstance(p, Pending)
    return p


def test_the_version_is_logged_when_indexed_and_its_large_files_come_on_demand(
    reg: Registry, upstream: ProxyTreeServer, log: RequestLog
) -> None:
    fs = files(b"1")
    upstream.inject(Fault.drip(f"*/@v/v0.1.0/{BIG}", delay=0.05, chunk=64 << 10))
    od = on_demand(reg)
    p = pending(od, "v0.1.0")
    assert od.open(UP, "v0.1.0") is p  # one index fetch per version
    assert p.files[BIG].sha256 == hashlib.sha256(fs[BIG]).hexdigest()
    assert not log.where(path=f"*/{BIG}")  # the index, wgt.mod and the small files so far
    assert len(log.where(path="*/big/config.json")) == 1
    assert reg.blobs.size(hashlib.sha256(b"{}").hexdigest()) == 2  # stored when indexed
    # logged before any large file is fetched, with the h1 of every file
    mod_h1 = h1({"wgt.mod": fs["wgt.mod"]})
    assert logged(reg, "v0.1.0") == (
        f"{UP} v0.1.0 {h1(fs)}\n{UP} v0.1.0/wgt.mod {mod_h1}\n".encode()
    )
    assert reg.meta.get_version(UP, "v0.1.0") is None  # not committed: files missing

    # two readers at once: one upstream GET; bytes flow before the file is verified
    got: dict[int, bytes] = {}
    early: list[bool] = []

    def read(i: int) -> None:
        out = []
        for chunk in p.stream(BIG):
            if not out:
                early.append(not p.has(BIG))
            out.append(chunk)
        got[i] = b"".join(out)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {0: fs[BIG], 1: fs[BIG]}
    assert early == [True, True]
    assert len(log.where(path=f"*/{BIG}")) == 1
    assert reg.blobs.size(p.files[BIG].sha256) == SIZE
    # the last file stored: committed, with the logged h1 (logged once)
    v = reg.meta.get_version(UP, "v0.1.0")
    assert v is not None and v.h1 == h1(fs)
    assert logged(reg, "v0.1.0") is not None and reg.meta.get_pending(UP, "v0.1.0") is None
    p.wait("big/config.json")
    assert isinstance(od.open(UP, "v0.1.0"), type(v))  # committed: no longer pending
    assert not list((p.tmp.parent).glob("fill-*"))  # the temporary cache is gone


def test_a_wrong_file_is_cut_short_and_then_refused(
    reg: Registry, upstream: ProxyTreeServer
) -> None:
    upstream.inject(Fault.flip(f"*/@v/v0.2.0/{BIG}", times=2))
    p = pending(on_demand(reg), "v0.2.0")
    received = 0
    with pytest.raises(UpstreamError, match="served bad bytes"):
        for chunk in p.stream(BIG):
            received += len(chunk)
    assert received < SIZE and received <= SIZE - HOLD  # never the whole body
    assert not p.streamable(BIG)  # the next request waits, and is told why
    with pytest.raises(UpstreamError, match="nothing was kept"):
        p.wait(BIG)
    sha = p.files[BIG].sha256
    assert reg.blobs.size(sha) is None
    kept = [f for f in p.tmp.rglob(f"*{sha}*") if f.is_file() and f.suffix != ".lock"]
    assert not kept  # no partial file, no blob: only the file lock stays
    p.wait(BIG)  # the upstream is fixed: fetched, verified, stored
    assert reg.blobs.size(sha) == SIZE


def test_a_proxy_protocol_fill_reuses_the_files_fetched_on_demand(
    tmp_path: Path, reg: Registry, upstream: ProxyTreeServer, log: RequestLog
) -> None:
    tree = ProxyTree(upstream.root)
    fs = {**files(b"3"), "big/other.bin": files(b"4")[BIG]}
    tree.add(UP, "v0.3.0", fs, time="2026-11-03T00:00:00Z")
    tree.add(UP, "v0.4.0", {**files(b"3"), "big/config.json": b"[]"}, time="2026-11-04T00:00:00Z")
    p = pending(on_demand(reg), "v0.3.0")
    p.wait(BIG)  # one large file on demand; the other is not asked for
    assert reg.meta.get_version(UP, "v0.3.0") is None
    indexes = len(log.where(path="*/@v/v0.3.0.index.json"))

    # a client of the proxy protocol: the version is filled from its logged index, and only
    # the file the blob store lacks crosses from the upstream
    v = reg.version(UP, "v0.3.0")
    assert v.h1 == h1(fs) == p.record.h1
    assert len(log.where(path=f"*/@v/v0.3.0/{BIG}")) == 1
    assert len(log.where(path="*/@v/v0.3.0/big/other.bin")) == 1
    assert len(log.where(path="*/@v/v0.3.0.index.json")) == indexes
    assert b"".join(reg.blobs.get(p.files["big/other.bin"].sha256)) == fs["big/other.bin"]

    # another version holding the same bytes: they are stored already, by their sha256
    assert reg.version(UP, "v0.4.0").h1 == h1({**files(b"3"), "big/config.json": b"[]"})
    assert not log.where(path=f"*/@v/v0.4.0/{BIG}")
