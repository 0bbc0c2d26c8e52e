"""The caching proxy: a registry in front of a loopback proxy tree and a loopback GitHub.

``wgtpm get`` through the registry gets modules it does not host, with the
upstream's hashes; the version lands in the checksum log; concurrent
requests fetch each file once; tampered bytes are refused and never kept;
the upstream's token never reaches a client.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from registry.metadata import open_metadata_store
from registry.proxy import open_proxy
from registry.service import Registry
from tests.servers import CdnServer, Fault, RequestLog
from tests.servers.github import GitHubServer
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.test_github import publish as gh_publish
from wgtpm import NotFoundError
from wgtpm.proxytree import ProxyTree
from wgtpm.sumdb import note
from wgtpm.sumdb.client import Client

from .conftest import _serve
from .helpers import h1, publish

UP = "example.org/acme/tiny"  # not under the live token's example.com: proxied


def tiny_files(tag: bytes) -> dict[str, bytes]:
    return {
        "wgt.mod": f"module {UP}\nwgt 0.1\n".encode(),
        "tiny/weights.bin": tag * 4000,
        "tiny/manifest.json": b'{"layers": 1}\n',
    }


@dataclass
class Proxied:
    url: str
    registry: Registry
    token: str
    vkey: str


def _proxied(tmp: Path, upstream: str, environ: Mapping[str, str] | None) -> Iterator[Proxied]:
    from registry.app import create_app
    from registry.stores import open_blob_store
    from registry.sumdb import SumDB

    tmp.mkdir(parents=True, exist_ok=True)
    meta = open_metadata_store(f"sqlite:///{tmp / 'r.db'}")
    skey, vkey = note.generate_key("sum.test")
    reg = Registry(
        meta,
        open_blob_store(str(tmp / "blobs"), spool=tmp / "spool"),
        sumdb=SumDB.open(meta.engine, skey, ttl=0),
        proxy=open_proxy(upstream, tmp / "proxy", environ),
    )
    text, _ = reg.create_token("example.com", "publish")
    try:
        for url in _serve(create_app(registry=reg)):
            yield Proxied(url, reg, text, vkey)
    finally:
        reg.close()


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[ProxyTree, ProxyTreeServer]]:
    tree = ProxyTree(tmp_path / "tree")
    tree.add(UP, "v0.1.0", tiny_files(b"\x01"), time="2026-11-01T00:00:00Z")
    tree.add(UP, "v0.2.0", tiny_files(b"\x02"), time="2026-11-02T00:00:00Z")
    with ProxyTreeServer(tree.root) as srv:
        yield tree, srv


@pytest.fixture
def reg(
    tmp_path: Path,
    upstream: tuple[ProxyTree, ProxyTreeServer],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Proxied]:
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    yield from _proxied(tmp_path / "reg", upstream[1].url, {"WGTPM_HTTP_RETRIES": "0"})


def lookup(p: Proxied, module: str, version: str) -> list[str]:
    http = httpx.Client(base_url=f"{p.url}/sumdb/sum.test", timeout=30)

    def remote(path: str) -> bytes:
        r = http.get(path)
        if r.status_code in (404, 410):
            raise NotFoundError(path, None, r.text)
        assert r.status_code == 200, r.text
        return r.content

    from tests.sumdb.server import MemoryOps

    try:
        client = Client(p.vkey, MemoryOps(remote))
        return client.lookup(module, version) + client.lookup(module, version + "/wgt.mod")
    finally:
        http.close()


def sum_lines(module: str, version: str, files: dict[str, bytes]) -> list[str]:
    return [
        f"{module} {version} {h1(files)}",
        f"{module} {version}/wgt.mod {h1({'wgt.mod': files['wgt.mod']})}",
    ]


def test_get_through_the_registry_and_the_log(
    wgtpm, reg: Proxied, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    with httpx.Client(base_url=reg.url) as http:
        assert http.get(f"/{UP}/@v/list").text == "v0.1.0\nv0.2.0\n"
        assert http.get(f"/{UP}/@latest").json()["Version"] == "v0.2.0"
        info = http.get(f"/{UP}/@v/v0.1.0.info")
        assert info.json() == {"Version": "v0.1.0", "Time": "2026-11-01T00:00:00Z"}
        assert reg.registry.meta.get_version(UP, "v0.1.0") is None  # .info fills nothing
    monkeypatch.setenv("WGTPROXY", reg.url)
    r = wgtpm("get", f"{UP}@latest", cwd=project)
    assert r.code == 0, r.err
    want = sum_lines(UP, "v0.2.0", tiny_files(b"\x02"))
    assert sorted((project / "wgt.sum").read_text().splitlines()) == sorted(want)
    assert lookup(reg, UP, "v0.2.0") == want
    rec = reg.registry.meta.get_module(UP)
    assert rec is not None and rec.proxied and not rec.private
    with httpx.Client(base_url=reg.url) as http:  # cached: served with immutable headers
        f = http.get(f"/{UP}/@v/v0.2.0/tiny/weights.bin")
        assert f.content == b"\x02" * 4000 and "immutable" in f.headers["cache-control"]
        assert http.get(f"/{UP}/@v/v0.2.0/nope.bin").status_code == 410
        home = http.get("/").text  # listed on the page as cached, with its latest version
        assert UP in home and "cached" in home and "v0.2.0" in home


def test_hosted_wins_and_misses_are_404(
    reg: Proxied, upstream: tuple[ProxyTree, ProxyTreeServer]
) -> None:
    tree, srv = upstream
    tree.add("example.com/acme/shadow", "v1.0.0", {"x": b"upstream"})
    srv.log.clear()
    with httpx.Client(base_url=reg.url) as http:
        # under the publish token's prefix: hosted namespace, never asked upstream
        assert http.get("/example.com/acme/shadow/@v/list").status_code == 404
        assert http.get("/example.com/acme/shadow/@v/v1.0.0.mod").status_code == 404
        assert not srv.log.where(path="/example.com/*")
        assert http.get(f"/{UP}/@v/v9.9.9.mod").status_code == 404
        assert http.get("/example.org/nobody/@v/list").status_code == 404
        assert reg.registry.meta.get_module("example.org/nobody") is None
        # a hosted module is served from here even when the upstream has the path
        r = publish(
            http,
            reg.token,
            "example.com/acme/own",
            "v1.0.0",
            {"wgt.mod": b"module example.com/acme/own\n"},
        )
        assert r.status_code == 201, r.text
        assert http.get("/example.com/acme/own/@v/list").text == "v1.0.0\n"


def test_concurrent_clients_fetch_each_file_once(
    reg: Proxied, upstream: tuple[ProxyTree, ProxyTreeServer]
) -> None:
    _, srv = upstream
    srv.log.clear()
    want = tiny_files(b"\x01")
    results: list[tuple[int, bytes]] = []
    lock = threading.Lock()
    start = threading.Barrier(10)

    def client(i: int) -> None:
        name = ["tiny/weights.bin", "tiny/manifest.json"][i % 2]
        with httpx.Client(base_url=reg.url, timeout=60) as http:
            start.wait()
            r = http.get(f"/{UP}/@v/v0.1.0/{name}")
        with lock:
            results.append((r.status_code, r.content if r.content == want[name] else b"BAD"))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [s for s, _ in results] == [200] * 10 and b"BAD" not in [b for _, b in results]
    for name in ("tiny/weights.bin", "tiny/manifest.json", "wgt.mod"):
        assert len(srv.log.where(method="GET", path=f"/{UP}/@v/v0.1.0/{name}")) == 1, name
    assert len(srv.log.where(method="GET", path=f"/{UP}/@v/v0.1.0.index.json")) == 1


def test_tampered_upstream_is_refused_and_nothing_kept(
    reg: Proxied, upstream: tuple[ProxyTree, ProxyTreeServer]
) -> None:
    _, srv = upstream
    srv.inject(Fault.flip(f"/{UP}/@v/v0.1.0/tiny/weights.bin", times=-1))
    bad = hashlib.sha256(tiny_files(b"\x01")["tiny/weights.bin"]).hexdigest()
    with httpx.Client(base_url=reg.url, timeout=30) as http:
        r = http.get(f"/{UP}/@v/v0.1.0/tiny/manifest.json")
        assert r.status_code == 502 and "tiny/weights.bin" in r.text, r.text
        assert http.get(f"/{UP}/@v/v0.1.0.mod").status_code == 502  # not cached: tried again
        assert reg.registry.meta.get_version(UP, "v0.1.0") is None
        assert reg.registry.blobs.size(bad) is None
        assert not list((reg.registry.proxy.spool).glob("fill-*"))  # type: ignore[union-attr]
        assert http.get("/sumdb/sum.test/lookup/example.org/acme/tiny@v0.1.0").status_code == 404
        srv.faults.clear()
        r = http.get(f"/{UP}/@v/v0.1.0/tiny/weights.bin")
        assert r.status_code == 200 and r.content == b"\x01" * 4000


def test_upstream_failure_is_502_and_not_cached(
    reg: Proxied, upstream: tuple[ProxyTree, ProxyTreeServer]
) -> None:
    _, srv = upstream
    srv.inject(Fault.error(f"/{UP}/@v/list", 500, times=-1))
    with httpx.Client(base_url=reg.url, timeout=30) as http:
        r = http.get(f"/{UP}/@v/list")
        assert r.status_code == 502 and len(r.text) < 800, r.text
        srv.faults.clear()
        assert http.get(f"/{UP}/@v/list").text == "v0.1.0\nv0.2.0\n"
        assert http.get(f"/{UP}/@v/v0.1.0.mod").status_code == 200  # now cached
    # the upstream down: the list and @latest fall back to what is cached
    reg.registry.proxy.ttl = 0  # type: ignore[union-attr]
    srv.inject(Fault.error(f"/{UP}/*", 500, times=-1))
    with httpx.Client(base_url=reg.url, timeout=30) as http:
        assert http.get(f"/{UP}/@v/list").text == "v0.1.0\n"
        assert http.get(f"/{UP}/@latest").json()["Version"] == "v0.1.0"
        assert http.get(f"/{UP}/@v/v0.1.0/tiny/weights.bin").status_code == 200
        assert http.get(f"/{UP}/@v/v0.2.0.mod").status_code == 502
    srv.faults.clear()  # the upstream lost the module: what is cached is still served
    srv.inject(Fault.error(f"/{UP}/*", 404, times=-1))
    with httpx.Client(base_url=reg.url, timeout=30) as http:
        assert http.get(f"/{UP}/@v/list").text == "v0.1.0\n"
        assert http.get(f"/{UP}/@latest").json()["Version"] == "v0.1.0"
        assert http.get(f"/{UP}/@v/v0.2.0.mod").status_code == 404


def test_github_direct_never_shows_its_token(
    wgtpm, tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    mod = "github.com/acme/xor"
    log = RequestLog()
    with CdnServer(log=log) as cdn, GitHubServer(cdn, token="ghp_secret", log=log) as gh:
        files = gh_publish(gh.repo("acme", "xor"), mod, "v0.1.0", {"xor/w.bin": b"w" * 3000})
        # the server's environment, as the direct sources read it
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        for p in _proxied(tmp_path / "reg", "direct", None):
            monkeypatch.setenv("WGTPROXY", p.url)
            r = wgtpm("get", f"{mod}@v0.1.0", cwd=project)
            assert r.code == 0, r.err
            files.pop("wgt.index.json")
            want = sum_lines(mod, "v0.1.0", files)
            assert sorted((project / "wgt.sum").read_text().splitlines()) == sorted(want)
            assert lookup(p, mod, "v0.1.0") == want
            gh.inject(Fault.error("/repos/acme/xor/releases*", 500, times=-1))
            seen = []
            with httpx.Client(base_url=p.url) as http:
                for path in (
                    f"/{mod}/@v/list",
                    f"/{mod}/@latest",
                    f"/{mod}/@v/v0.1.0.info",
                    f"/{mod}/@v/v0.1.0.mod",
                    f"/{mod}/@v/v0.1.0.index.json",
                    f"/{mod}/@v/v0.1.0/xor/w.bin",
                    f"/{mod}/@v/v0.9.0.mod",
                    "/github.com/acme/nope/@v/list",
                    "/",
                    f"/-/module/{mod}",
                ):
                    resp = http.get(path)
                    seen.append((path, resp.status_code))
                    assert "ghp_secret" not in resp.text and "ghp_secret" not in str(resp.headers)
            assert (f"/{mod}/@v/v0.1.0/xor/w.bin", 200) in seen, seen
            assert (f"/{mod}/@v/v0.9.0.mod", 502) in seen or (f"/{mod}/@v/v0.9.0.mod", 404) in seen
            assert log.where(server="github", header="authorization")  # it was used upstream
            assert not log.where(server="cdn", header="authorization")


def test_two_replicas_fetch_each_file_once(
    meta_url: str,
    blob_url: str,
    tmp_path: Path,
    upstream: tuple[ProxyTree, ProxyTreeServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two registries on one database and one blob store: the reservation row, not the
    in-process lock, keeps the second from fetching too; the log holds the version once."""
    from registry.app import create_app
    from registry.stores import open_blob_store
    from registry.sumdb import SumDB

    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    _, srv = upstream
    skey, _ = note.generate_key("sum.test")
    regs, urls, serving = [], [], []
    for i in range(2):
        meta = open_metadata_store(meta_url)
        reg = Registry(
            meta,
            open_blob_store(blob_url, spool=tmp_path / f"spool{i}"),
            sumdb=SumDB.open(meta.engine, skey, ttl=0),
            proxy=open_proxy(srv.url, tmp_path / f"proxy{i}", {}),
        )
        regs.append(reg)
        gen = _serve(create_app(registry=reg))
        urls.append(next(gen))
        serving.append(gen)
    try:
        srv.log.clear()
        codes: list[int] = []
        start = threading.Barrier(8)

        def client(i: int) -> None:
            with httpx.Client(base_url=urls[i % 2], timeout=60) as http:
                start.wait()
                r = http.get(f"/{UP}/@v/v0.2.0/tiny/weights.bin")
            codes.append(r.status_code if r.content == b"\x02" * 4000 else -1)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert codes == [200] * 8
        assert len(srv.log.where(method="GET", path=f"/{UP}/@v/v0.2.0/tiny/weights.bin")) == 1
        assert len(srv.log.where(method="GET", path=f"/{UP}/@v/v0.2.0.index.json")) == 1
        assert regs[0].sumdb is not None and regs[0].sumdb.log.tree().n == 1
    finally:
        for gen in serving:
            gen.close()
        for reg in regs:
            reg.close()
