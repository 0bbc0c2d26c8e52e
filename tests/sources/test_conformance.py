"""The conformance suite every source passes, as Go's ``sumdb/storage/test.go``.

Each entry of :data:`SOURCES` names a fixture that publishes the same small
module on one kind of source (the proxy protocol over http and over
``file://``, GitHub releases, a Hugging Face repository, the PAW hub, the
registry of ``registry/``) and
returns a :class:`Case`: how to make a fresh source, what it should answer,
and how to make its server fail. Every test below runs against every entry.
A new source (the registry) joins by adding one fixture and one name.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.servers import Fault, LoopbackServer, Request, Response
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from tests.servers.paw import PawServer
from tests.servers.proxytree import ProxyTreeServer
from tests.sources.test_github import publish
from wgtpm import dirhash
from wgtpm import index as _index
from wgtpm._errors import FetchError, NotFoundError, WgtpmError
from wgtpm.httpclient import HttpClient, HTTPStatusError
from wgtpm.proxytree import ProxyTree
from wgtpm.sources import Source
from wgtpm.sources.github import GitHubSource
from wgtpm.sources.huggingface import HuggingFaceSource
from wgtpm.sources.pawhub import PawHubSource
from wgtpm.sources.proxy import ProxySource

WEIGHTS = bytes(range(256)) * 16


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Case:
    """One source under test and what it must answer."""

    make: Callable[[], Source]
    path: str
    version: str  # a version with ``files``
    versions: list[str]  # what versions() lists
    latest: str
    mod: bytes
    files: dict[str, bytes]  # what the index of ``version`` lists, and the bytes
    file: str  # a file to download
    missing: str  # a module path this source does not have
    query: str | None = None  # a non-version query (branch, commit, program ID) ...
    query_version: str | None = None  # ... and the version it resolves to
    server: LoopbackServer | None = None  # None: no network (file://)
    api: str = "*"  # glob of the paths of metadata requests on ``server``
    ranges: bool = True  # the file URL honours Range
    known: frozenset[str] = frozenset()  # files known_files() tells before the index


# ---- one fixture per source -------------------------------------------------


def _tree(tmp_path: Path) -> tuple[ProxyTree, str, dict[str, bytes]]:
    tree = ProxyTree(tmp_path / "tree")
    path = "example.com/acme/conf"
    mod = b"module example.com/acme/conf\n"
    tree.add(path, "v0.1.0", {"wgt.mod": mod, "w/weights.bin": b"old"})
    files = {"wgt.mod": mod, "w/weights.bin": WEIGHTS}
    tree.add(path, "v0.2.0", files)
    return tree, path, files


@pytest.fixture
def proxy_http(tmp_path: Path, http: HttpClient) -> Iterator[Case]:
    tree, path, files = _tree(tmp_path)
    server = ProxyTreeServer(tree.root).start()
    case = Case(
        make=lambda: ProxySource(server.url, http),
        path=path,
        version="v0.2.0",
        versions=["v0.1.0", "v0.2.0"],
        latest="v0.2.0",
        mod=files["wgt.mod"],
        files=files,
        file="w/weights.bin",
        missing="example.com/acme/nothing",
        server=server,
    )
    yield case
    server.stop()


@pytest.fixture
def proxy_file(tmp_path: Path, http: HttpClient) -> Case:
    tree, path, files = _tree(tmp_path)
    return Case(
        make=lambda: ProxySource(tree.url, http),
        path=path,
        version="v0.2.0",
        versions=["v0.1.0", "v0.2.0"],
        latest="v0.2.0",
        mod=files["wgt.mod"],
        files=files,
        file="w/weights.bin",
        missing="example.com/acme/nothing",
    )


@pytest.fixture
def github_case(github: GitHubServer, http: HttpClient) -> Case:
    path = "github.com/acme/conf"
    repo = github.repo("acme", "conf")
    publish(repo, path, "v0.1.0", {"w/weights.bin": b"old"})
    files = publish(repo, path, "v0.2.0", {"w/weights.bin": WEIGHTS})
    del files["wgt.index.json"]
    return Case(
        make=lambda: GitHubSource(http, api_url=github.url, token="ghp_secret"),
        path=path,
        version="v0.2.0",
        versions=["v0.1.0", "v0.2.0"],
        latest="v0.2.0",
        mod=files["wgt.mod"],
        files=files,
        file="w/weights.bin",
        missing="github.com/acme/nothing",
        query=repo.tags["v0.2.0"][:12],
        query_version="v0.2.0",
        server=github,
        api="/repos/*",
    )


@pytest.fixture
def hf_case(hf: HuggingFaceServer, http: HttpClient) -> Case:
    repo = hf.repo("acme", "conf")
    repo.commit({"model.safetensors": b"old", "config.json": b"{}"})
    repo.tag("v0.1.0")
    files = {"model.safetensors": WEIGHTS, "config.json": b'{"hidden": 8}'}
    repo.commit(files)
    repo.tag("v0.2.0")
    return Case(
        make=lambda: HuggingFaceSource(http, endpoint=hf.url, token="hf_secret"),
        path="hf.co/acme/conf",
        version="v0.2.0",
        versions=["v0.1.0", "v0.2.0"],
        latest="v0.2.0",
        mod=b"module hf.co/acme/conf\n",
        files=files,
        file="model.safetensors",
        missing="hf.co/acme/nothing",
        query="main",
        query_version="v0.2.0",
        server=hf,
        api="/api/*",
        known=frozenset({"model.safetensors"}),  # in LFS: the API states its sha256
    )


@pytest.fixture
def paw_case(paw: PawServer, http: HttpClient) -> Case:
    path = "programasweights.com/acme/conf"
    pid = paw.publish("sort tickets", slug="acme/conf", pending=0)
    version = PawHubSource(http, api_url=paw.url, api_key="paw_secret").info(path, pid).version
    paw.log.clear()
    return Case(
        make=lambda: PawHubSource(http, api_url=paw.url, api_key="paw_secret", max_wait=1),
        path=path,
        version=version,
        versions=[],  # the hub has no releases
        latest=version,
        mod=f"module {path}\n".encode(),
        files={"program.paw": paw.programs[pid].bundle},
        file="program.paw",
        missing="programasweights.com/acme/nothing",
        query=pid,
        query_version=version,
        server=paw,
        api="/api/v1/programs/*",
    )


class RegistryFront(LoopbackServer):
    """Relays every request to a live registry, byte for byte, so that the suite's faults
    can be injected in front of it (the registry itself never fails on purpose)."""

    name = "registry"

    def __init__(self, upstream: str) -> None:
        import httpx

        super().__init__()
        self._client = httpx.Client(base_url=upstream, timeout=10)

    def handle(self, req: Request) -> Response:  # no lock: the registry serves in parallel
        hop = {"host", "connection", "content-length", "transfer-encoding", "accept-encoding"}
        r = self._client.request(
            req.method,
            req.raw_path,
            headers=[(k, v) for k, v in req.headers if k.lower() not in hop],
            content=req.body,
        )
        drop = hop | {"content-encoding", "date", "server"}
        return Response(
            r.status_code, {k: v for k, v in r.headers.items() if k.lower() not in drop}, r.content
        )

    def stop(self) -> None:
        super().stop()
        self._client.close()


@pytest.fixture
def registry_case(tmp_path: Path, http: HttpClient) -> Iterator[Case]:
    """The registry on SQLite and a folder, served by uvicorn on loopback; the modules come in
    through its publish API."""
    import httpx

    from tests.registry.conftest import _live
    from tests.registry.helpers import publish as publish_api

    path = "example.com/acme/conf"
    mod = b"module example.com/acme/conf\n"
    files = {"wgt.mod": mod, "w/weights.bin": WEIGHTS}
    for reg in _live(f"sqlite:///{tmp_path / 'r.db'}", str(tmp_path / "blobs"), tmp_path / "spool"):
        with httpx.Client(base_url=reg.url, timeout=10) as api:
            for version, fs in (
                ("v0.1.0", {"wgt.mod": mod, "w/weights.bin": b"old"}),
                ("v0.2.0", files),
            ):
                r = publish_api(api, reg.token, path, version, fs)
                assert r.status_code == 201, r.text
        front = RegistryFront(reg.url).start()
        try:
            yield Case(
                make=functools.partial(ProxySource, front.url, http),
                path=path,
                version="v0.2.0",
                versions=["v0.1.0", "v0.2.0"],
                latest="v0.2.0",
                mod=mod,
                files=files,
                file="w/weights.bin",
                missing="example.com/acme/nothing",
                server=front,
            )
        finally:
            front.stop()


#: Every source under test: the name of its fixture.
SOURCES = ["proxy_http", "proxy_file", "github_case", "hf_case", "paw_case", "registry_case"]


@pytest.fixture(params=SOURCES)
def case(request: pytest.FixtureRequest) -> Case:
    c: Case = request.getfixturevalue(request.param)
    return c


def _needs_server(case: Case) -> LoopbackServer:
    if case.server is None:
        pytest.skip("no network between this source and its files")
    return case.server


def _get(http: HttpClient, url: str, headers: dict[str, str]) -> bytes:
    if url.startswith("file:"):
        return Path(unquote(urlsplit(url).path)).read_bytes()
    return http.get_bytes(url, headers=headers, limit=1 << 30)


# ---- the suite ------------------------------------------------------------------


def test_versions(case: Case) -> None:
    assert sorted(case.make().versions(case.path)) == case.versions


def test_latest(case: Case) -> None:
    info = case.make().info(case.path, "latest")
    assert info.version == case.latest


def test_info_of_a_version(case: Case) -> None:
    info = case.make().info(case.path, case.version)
    assert info.version == case.version
    assert info.time is None or info.time.endswith("Z")
    assert info.to_json()["Version"] == case.version


def test_info_of_a_query(case: Case) -> None:
    if case.query is None:
        pytest.skip("this source resolves versions only")
    assert case.make().info(case.path, case.query).version == case.query_version


def test_mod(case: Case) -> None:
    assert case.make().mod(case.path, case.version) == case.mod


def test_index(case: Case) -> None:
    data = case.make().index(case.path, case.version)
    idx = _index.parse(data, case.path, case.version)
    assert {e.path: (e.size, e.sha256) for e in idx.files} == {
        n: (len(b), sha(b)) for n, b in case.files.items()
    }
    assert idx.h1() == dirhash.hash1_bytes(case.files)


def test_file_bytes(case: Case, http: HttpClient) -> None:
    src = case.make()
    src.index(case.path, case.version)  # as the fetcher does: the index first
    req = src.file(case.path, case.version, case.file)
    want = case.files[case.file]
    if req.body is not None:
        assert req.body == want
    assert _get(http, req.url, dict(req.headers)) == want


def test_mod_is_cheap_and_enough_for_file(case: Case, http: HttpClient) -> None:
    """What a chain does for a version whose index came from the cache: mod() says which
    source serves it, then file() (:meth:`wgtpm.sources.chain.ChainSource.file`). So mod()
    costs no more requests than index() (it never builds the index), and file() works
    after it alone."""

    def cost(call: Callable[[], object]) -> int:
        before = len(case.server.log) if case.server is not None else 0
        call()
        return len(case.server.log) - before if case.server is not None else 0

    src = case.make()
    assert cost(lambda: src.mod(case.path, case.version)) <= cost(
        lambda: case.make().index(case.path, case.version)
    )
    req = src.file(case.path, case.version, case.file)
    want = case.files[case.file]
    assert (req.body if req.body is not None else _get(http, req.url, dict(req.headers))) == want


def test_known_files_are_listed_by_the_index_and_cost_nothing_after_mod(case: Case) -> None:
    """What a source tells the fetcher before its index is made (the fetcher starts
    downloading those files): entries the index lists exactly, known at no cost beyond
    what mod() costs."""
    src = case.make()
    src.mod(case.path, case.version)
    before = len(case.server.log) if case.server is not None else 0
    known = src.known_files(case.path, case.version)
    assert (len(case.server.log) if case.server is not None else 0) == before
    assert {e.path for e in known} == case.known
    idx = _index.parse(src.index(case.path, case.version), case.path, case.version)
    listed = {e.path: e for e in idx.files}
    for e in known:
        assert (e.size, e.sha256) == (listed[e.path].size, listed[e.path].sha256)


def test_file_range(case: Case, http: HttpClient) -> None:
    if case.server is None or not case.ranges:
        pytest.skip("no Range requests here")
    src = case.make()
    src.index(case.path, case.version)
    req = src.file(case.path, case.version, case.file)
    with http.stream(req.url, headers=dict(req.headers), offset=100) as resp:
        assert resp.status_code == 206
        assert resp.read() == case.files[case.file][100:]


def test_a_missing_module_is_not_found(case: Case) -> None:
    with pytest.raises(NotFoundError):
        case.make().info(case.missing, "latest")


def test_a_missing_version_is_not_found(case: Case) -> None:
    with pytest.raises(NotFoundError):
        case.make().mod(case.path, "v9.9.9")


def test_a_missing_file_is_not_found(case: Case, http: HttpClient) -> None:
    src = case.make()
    src.index(case.path, case.version)
    try:
        req = src.file(case.path, case.version, "no/such.file")
    except NotFoundError:
        return
    # A static tree cannot know in advance: the download is then a 404 (or no such file); the
    # registry knows the release never lists it: 410, which the protocol reads as 404 too.
    try:
        _get(http, req.url, dict(req.headers))
    except FileNotFoundError:
        return
    except HTTPStatusError as exc:
        assert exc.status in (404, 410)
        return
    pytest.fail("a file the release does not hold was downloaded")


@pytest.mark.parametrize("kind", ["500", "reset"])
def test_a_failing_server_is_not_not_found(case: Case, kind: str) -> None:
    """A 500 or a reset must not look like a 404: ``,`` in WGTPROXY would fall through on it."""
    server = _needs_server(case)
    if kind == "500":
        server.inject(Fault.error(case.api, 500, times=-1))
    else:
        server.inject(Fault.reset(case.api, 0.0, times=-1))
    with pytest.raises(WgtpmError) as err:
        case.make().info(case.path, "latest")
    assert not isinstance(err.value, NotFoundError)
    assert isinstance(err.value, FetchError)
    assert err.value.__cause__ is not None  # the cause is kept


def test_a_transient_failure_is_retried(case: Case) -> None:
    server = _needs_server(case)
    server.inject(Fault.error(case.api, 503, times=1))
    assert case.make().info(case.path, case.version).version == case.version
