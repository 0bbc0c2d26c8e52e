"""The WGTPROXY chain: which entry serves a module, and what it is handed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import LoopbackServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.conftest import RecordingSums
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient
from wgtpm.index import IndexEntry
from wgtpm.modfetch import Fetcher, FetchOptions
from wgtpm.proxytree import ProxyTree
from wgtpm.sources import FileRequest, RevInfo
from wgtpm.sources._hosted import CacheMetaStore
from wgtpm.sources.chain import ChainSource, Entry, from_env
from wgtpm.sources.direct import DirectSource


class Direct:
    """Stands in for ``direct``: answers every module with one version."""

    name = "direct"

    def versions(self, path: str) -> list[str]:
        return ["v1.0.0"]

    def info(self, path: str, query: str) -> RevInfo:
        return RevInfo("v1.0.0")

    def mod(self, path: str, version: str) -> bytes:
        return b""

    def index(self, path: str, version: str) -> bytes:
        return b""

    def file(self, path: str, version: str, name: str) -> FileRequest:
        return FileRequest("file:///dev/null")

    def known_files(self, path: str, version: str) -> list[IndexEntry]:
        return [IndexEntry("w.bin", 3, "ab" * 32)]


@pytest.mark.parametrize(
    ("private", "path"),
    [
        ("github.com/Acme", "github.com/acme/xor"),
        ("github.com/acme", "github.com/ACME/xor"),
        ("HF.CO/acme", "hf.co/acme/tiny"),
        ("huggingface.co/Acme", "hf.co/acme/tiny"),
    ],
)
def test_private_patterns_ignore_case_where_the_host_does(
    private: str, path: str, http: HttpClient
) -> None:
    chain = ChainSource(
        [Entry("http://127.0.0.1:9/unreachable")], private, http, make_direct=Direct
    )
    assert chain.versions(path) == ["v1.0.0"]  # direct, not the (unreachable) proxy


def test_other_hosts_match_case_sensitively(http: HttpClient) -> None:
    chain = ChainSource([Entry("off")], "models.example/Acme", http, make_direct=Direct)
    with pytest.raises(Exception, match="WGTPROXY=off"):
        chain.versions("models.example/acme/m")


def test_the_chain_is_handed_its_store(tmp_path: Path, http: HttpClient) -> None:
    cache = Cache(tmp_path / "cache")
    chain = from_env(http, {"WGTPROXY": "direct"}, cache)
    assert isinstance(chain.meta_cache, CacheMetaStore) and chain.meta_cache.cache is cache
    direct = chain.source("direct")
    assert isinstance(direct, DirectSource)
    assert direct.http is http and direct.meta_cache is chain.meta_cache
    chain.meta_cache.put("k", "etag", b"body")
    assert cache.get_etag("k") == ("etag", b"body")


def test_proxy_credentials_are_never_shown(http: HttpClient) -> None:
    from tests.servers import Fault
    from tests.servers.proxytree import ProxyTreeServer
    from wgtpm._errors import FetchError

    with ProxyTreeServer(Path("/nonexistent")) as srv:
        srv.inject(Fault.error("*", 500, times=-1))
        for userinfo in ("user:s3cret-pass@", "tok_s3cret@"):
            url = srv.url.replace("http://", f"http://{userinfo}")
            chain = from_env(http, {"WGTPROXY": url}, Cache(Path("/nonexistent")))
            assert "s3cret" not in chain.name
            with pytest.raises(FetchError) as err:
                chain.versions("example.com/m")
            assert "s3cret" not in str(err.value) and "***@127.0.0.1" in str(err.value)


# ---- a version whose index came from the cache ---------------------------------------

WEIGHTS = bytes(range(256)) * 64
SMALL = {"config.json": b'{"hidden": 8}', "tokenizer/vocab.txt": b"a\nb\n"}


@dataclass
class Upstream:
    """One WGTPROXY upstream holding ``path@v0.1.0`` (``files``), and the requests on its
    server that indexing the version costs and nothing else needs (``indexing``)."""

    wgtproxy: str
    path: str
    files: dict[str, bytes]
    server: LoopbackServer
    indexing: str  # the glob of a request path that only indexing makes
    probe: str  # the glob of the one request that says who serves the version


@pytest.fixture
def hf_upstream(hf: HuggingFaceServer, monkeypatch: pytest.MonkeyPatch) -> Upstream:
    """A Hugging Face repository without wgt.index.json: its index is made by downloading
    its small files."""
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    files = {**SMALL, "model.safetensors": WEIGHTS}
    hf.repo("acme", "tiny").commit(files)
    hf.repo("acme", "tiny").tag("v0.1.0")
    return Upstream(
        "direct",
        "hf.co/acme/tiny",
        files,
        hf,
        "/acme/tiny/resolve/*/config.json",  # downloaded to hash it, then not wanted
        "/api/models/acme/tiny/revision/*",
    )


@pytest.fixture
def proxy_upstream(tmp_path: Path) -> Iterator[Upstream]:
    tree = ProxyTree(tmp_path / "tree")
    path = "example.com/acme/tiny"
    files = {"wgt.mod": f"module {path}\n".encode(), **SMALL, "model.safetensors": WEIGHTS}
    tree.add(path, "v0.1.0", files)
    with ProxyTreeServer(tree.root) as srv:
        yield Upstream(
            srv.url,
            path,
            files,
            srv,
            "/example.com/acme/tiny/@v/v0.1.0.index.json",
            "/example.com/acme/tiny/@v/v0.1.0.mod",
        )


@pytest.mark.parametrize("kind", ["hf_upstream", "proxy_upstream"])
def test_a_version_indexed_by_another_process_is_not_indexed_again(
    kind: str, request: pytest.FixtureRequest, http: HttpClient, tmp_path: Path
) -> None:
    """The index may come from the cache: another process (a registry replica) indexed the
    version. The chain asks for its wgt.mod to learn who serves its files, once per version
    however many download threads ask; it never asks for the index again, which for a
    Hugging Face repository means downloading its small files again."""
    up: Upstream = request.getfixturevalue(kind)
    cache = Cache(tmp_path / "cache")

    def fetcher() -> Fetcher:  # one per process: a fresh chain over the one cache
        chain = from_env(http, {"WGTPROXY": up.wgtproxy}, cache)
        return Fetcher(cache, chain, RecordingSums(), http=lambda: http, opts=FetchOptions(jobs=4))

    fetcher().index(up.path, "v0.1.0")
    assert len(up.server.log.where(method="GET", path=up.indexing)) == 1
    up.server.log.clear()

    tree = fetcher().download(up.path, "v0.1.0", ["model.safetensors", "tokenizer/*"])
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS
    assert (tree / "tokenizer/vocab.txt").read_bytes() == SMALL["tokenizer/vocab.txt"]
    got = [s.path for s in up.server.log]
    assert not up.server.log.where(path=up.indexing), got
    assert len(up.server.log.where(method="GET", path=up.probe)) == 1, got


def test_known_files_come_from_the_entry_that_served_the_version(tmp_path: Path) -> None:
    """The chain asks only the entry that answered the version's wgt.mod (a proxy that has
    no such module fell through): before any has, it knows nothing and asks nobody."""
    with ProxyTreeServer(tmp_path / "empty") as proxy, HttpClient() as http:
        chain = ChainSource([Entry(proxy.url), Entry("direct")], "", http, make_direct=Direct)
        assert chain.known_files("example.com/m", "v1.0.0") == ()
        assert len(proxy.log) == 0
        chain.mod("example.com/m", "v1.0.0")
        asked = len(proxy.log)
        assert [e.path for e in chain.known_files("example.com/m", "v1.0.0")] == ["w.bin"]
        assert len(proxy.log) == asked
