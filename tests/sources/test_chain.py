"""The WGTPROXY chain: which entry serves a module, and what it is handed."""

from __future__ import annotations

from pathlib import Path

import pytest

from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient
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
    direct = chain._source("direct")
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
