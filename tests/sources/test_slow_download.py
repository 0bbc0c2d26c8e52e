"""A download that trickles is cut and resumed, as a dropped one is (issue 9); a file read
whole by a source keeps that minimum rate rather than the metadata deadline (issue 26)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from tests.servers import CdnServer, Fault
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.conftest import RecordingSums
from wgtpm import index as _index
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient, HttpOptions
from wgtpm.modfetch import Fetcher, FetchOptions
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.github import GitHubSource
from wgtpm.sources.huggingface import HuggingFaceSource
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


# ---- files read whole are held to a download's minimum rate, not the metadata deadline (issue 26)

SLOW_METADATA = HttpOptions(timeout=5, retries=0, deadline=0.3)


def test_a_small_hub_file_hashed_for_an_index_is_not_held_to_the_deadline(
    hf: HuggingFaceServer,
) -> None:
    repo = hf.repo("acme", "slow")
    repo.commit({"config.json": b'{"hidden": 8, "layers": 2}'})  # small: the source hashes it
    repo.tag("v0.1.0")
    hf.inject(Fault.drip("*/resolve/*/config.json", delay=0.05, chunk=2, times=-1))  # 0.65 s
    with HttpClient(SLOW_METADATA) as http:
        src = HuggingFaceSource(http, endpoint=hf.url)
        idx = _index.parse(src.index("hf.co/acme/slow", "v0.1.0"), "hf.co/acme/slow", "v0.1.0")
    assert idx.entry("config.json") is not None


def test_a_github_asset_hashed_for_an_index_is_not_held_to_the_deadline(
    github: GitHubServer, cdn: CdnServer
) -> None:
    data = b"G" * 3000
    github.repo("acme", "plain").release("v1.0.0", {"model.gguf": data}, digests=False)
    cdn.inject(Fault.drip("/blobs/*", delay=0.05, chunk=256, times=-1))  # 0.6 s
    with HttpClient(SLOW_METADATA) as http:
        src = GitHubSource(http, api_url=github.url)
        raw = src.index("github.com/acme/plain", "v1.0.0")
    idx = _index.parse(raw, "github.com/acme/plain", "v1.0.0")
    assert idx.entry("model.gguf") == _index.IndexEntry(
        "model.gguf", 3000, hashlib.sha256(data).hexdigest()
    )
