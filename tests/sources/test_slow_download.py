"""A download that trickles is cut and resumed, as a dropped one is (issue 9)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.servers import Fault
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.conftest import RecordingSums
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient
from wgtpm.modfetch import Fetcher, FetchOptions
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.proxy import ProxySource

MOD = "example.com/acme/slow"
DATA = bytes(range(256)) * 256  # 64 KiB: 50 s at the trickle's 1.3 KB/s


def test_a_trickle_is_cut_and_resumed(tmp_path: Path, http: HttpClient) -> None:
    tree = ProxyTree(tmp_path / "tree")
    tree.add(MOD, "v0.1.0", {"w.bin": DATA})
    with ProxyTreeServer(tree.root) as srv:
        srv.inject(Fault.drip("*/w.bin", delay=0.05, chunk=64, times=1))
        fetcher = Fetcher(
            Cache(tmp_path / "cache"),
            ProxySource(srv.url, http),
            RecordingSums(),
            http=lambda: http,
            opts=FetchOptions(min_rate=100_000, rate_window=0.3, resume_backoff=0.01),
        )
        t = time.monotonic()
        tree_dir = fetcher.download(MOD, "v0.1.0")
        assert time.monotonic() - t < 10
        gets = srv.log.where(path="*/w.bin")
    assert (tree_dir / "w.bin").read_bytes() == DATA
    assert len(gets) == 2 and gets[1].header("range") not in (None, "bytes=0-")
