"""Garbage collection against the caching proxy: a fill never records a version whose blob
gc took meanwhile.

A stored blob that no row references (left by a fill that failed, an upload that expired)
may be removed by ``wgtpm registry gc`` at any moment; a fill that needs the same bytes
fetches and writes them again instead of relying on the old copy, and checks right before
it records the version that every file is still stored.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import httpx
import pytest

from registry.gc import GcOptions, collect
from registry.proxy import CachingProxy

from .test_proxy import UP, Proxied, reg, tiny_files, upstream  # noqa: F401 - fixtures

WEEK = 7 * 24 * 3600


def _orphan(p: Proxied, data: bytes) -> str:
    """``data`` stored as a blob nothing references, written a week ago."""
    sha = hashlib.sha256(data).hexdigest()
    blobs = p.registry.blobs
    blobs.put(sha, [data])
    old = time.time() - WEEK
    os.utime(Path(blobs.url) / "sha256" / sha[:2] / sha, (old, old))
    return sha


def test_a_fill_does_not_rely_on_an_orphan_that_gc_removes(
    reg: Proxied,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tiny_files(b"\x01")["tiny/weights.bin"]
    sha = _orphan(reg, data)
    swept: list[str] = []
    download = CachingProxy.download

    def gc_then_download(self, fetcher, module, version, entries):  # type: ignore[no-untyped-def]
        # gc runs while the fill fetches: the orphan is old and nothing references it yet
        swept.extend(
            collect(reg.registry.meta, reg.registry.blobs, GcOptions(grace=3600)).blobs.names
        )
        download(self, fetcher, module, version, entries)

    monkeypatch.setattr(CachingProxy, "download", gc_then_download)
    r = httpx.get(f"{reg.url}/{UP}/@v/v0.1.0/tiny/weights.bin", timeout=30)
    assert swept == [sha]  # gc did take the old copy
    assert r.status_code == 200 and r.content == data  # written again by the fill
    assert reg.registry.blobs.size(sha) == len(data)
    monkeypatch.setattr(CachingProxy, "download", download)
    later = GcOptions(grace=0, now=time.time() + WEEK)
    assert sha not in collect(reg.registry.meta, reg.registry.blobs, later).blobs.names


def test_a_blob_gone_before_the_commit_records_nothing(
    reg: Proxied,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tiny_files(b"\x01")["tiny/weights.bin"]
    sha = hashlib.sha256(data).hexdigest()
    store = CachingProxy.store

    def store_then_lose(self, reg_, fetcher, idx, again=()):  # type: ignore[no-untyped-def]
        store(self, reg_, fetcher, idx, again)
        reg_.blobs.delete(sha)  # gc's delete, between the fill's write and its commit

    monkeypatch.setattr(CachingProxy, "store", store_then_lose)
    url = f"{reg.url}/{UP}/@v/v0.1.0/tiny/weights.bin"
    r = httpx.get(url, timeout=30)
    assert r.status_code == 502 and "left the blob store" in r.text
    assert reg.registry.meta.get_version(UP, "v0.1.0") is None  # nothing recorded
    monkeypatch.setattr(CachingProxy, "store", store)
    r = httpx.get(url, timeout=30)  # the next request fills it whole
    assert r.status_code == 200 and r.content == data
