"""The checksum database wired into ``wgtpm get``: WGTSUMDB, WGTNOSUMDB, WGTPRIVATE, the cache.

One loopback server plays a registry: it serves a proxy tree and, under
``/sumdb/sum.test/``, the in-memory log of :mod:`tests.sumdb.server`. The
log's records are computed from an honest tree; the proxy may serve another.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.servers import Request, Response
from tests.servers.proxytree import ProxyTreeServer
from tests.sumdb.server import TestServer
from wgtpm import NotFoundError, SumdbConflictError, SumdbVerifyError, UsageError
from wgtpm.cache import Cache
from wgtpm.dirhash import hash1_bytes
from wgtpm.modload.fetch import open_fetcher
from wgtpm.modload.options import Options
from wgtpm.modload.sums import SumLedger
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.chain import ChainSource, Entry
from wgtpm.sumdb import note
from wgtpm.sumdb.remote import RemoteOps, SumdbConfig, parse_config
from wgtpm.sumfile import SumFile

NAME = "sum.test"
SKEY, VKEY = note.generate_key(NAME)
A, B, D = "github.com/acme/a", "github.com/acme/b", "github.com/acme/d"


class Registry(ProxyTreeServer):
    """A proxy tree, and the checksum database ``db`` under ``/sumdb/NAME/``."""

    name = "registry"

    def __init__(self, root: Path, db: TestServer, **kw: object) -> None:
        super().__init__(root, **kw)
        self.db = db
        self.supported = True  # answer /sumdb/NAME/supported with 200

    def route(self, req: Request) -> Response:
        if not req.path.startswith("/sumdb/"):
            return super().route(req)
        prefix = f"/sumdb/{NAME}"
        rest = req.path[len(prefix) :] if req.path.startswith(prefix + "/") else ""
        if rest == "/supported":
            return Response.text("", 200 if self.supported else 404)
        try:
            return Response(
                200, {"Content-Type": "text/plain; charset=utf-8"}, self.db.handle(rest)
            )
        except NotFoundError:
            return Response.text("not found", 404)

    def sumdb_requests(self, pattern: str = "/sumdb/*") -> list[str]:
        return [s.path for s in self.log.where(path=pattern)]


def modtext(path: str, requires: Sequence[str] = (), extra: str = "") -> bytes:
    return (
        f"module {path}\nwgt 0.1\n" + "".join(f"require {r}\n" for r in requires) + extra
    ).encode()


def publish(
    tree: ProxyTree,
    db: TestServer | None,
    path: str,
    version: str = "v0.1.0",
    requires: Sequence[str] = (),
    *,
    weights: bytes | None = None,
    extra: str = "",
) -> tuple[str, str]:
    """Publish ``path@version`` in ``tree`` and log it in ``db``; returns (h1, wgt.mod h1)."""
    files = {
        "wgt.mod": modtext(path, requires, extra),
        "w/weights.bin": weights if weights is not None else f"{path}@{version}".encode() * 40,
    }
    idx = tree.add(path, version, files)
    h1, mod_h1 = idx.h1(), hash1_bytes({"wgt.mod": files["wgt.mod"]})
    if db is not None:
        db.add_module(path, version, h1, mod_h1)
    return h1, mod_h1


@pytest.fixture
def db() -> TestServer:
    return TestServer(SKEY)


@pytest.fixture
def registry(tree: ProxyTree, db: TestServer) -> Iterator[Registry]:
    tree.root.mkdir(parents=True, exist_ok=True)
    with Registry(tree.root, db) as srv:
        yield srv


@pytest.fixture
def honest(tree: ProxyTree, db: TestServer) -> dict[str, tuple[str, str]]:
    """a v0.1.0 -> b v0.1.0, published and logged."""
    return {
        B: publish(tree, db, B),
        A: publish(tree, db, A, requires=[f"{B} v0.1.0"]),
    }


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, registry: Registry) -> pytest.MonkeyPatch:
    """WGTPROXY and WGTSUMDB (with its URL) pointing at the registry; no retries."""
    monkeypatch.setenv("WGTPROXY", registry.url)
    monkeypatch.setenv("WGTSUMDB", f"{VKEY} {registry.url}")
    monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
    return monkeypatch


def cache_root() -> Path:
    return Path(os.environ["WGTPM_CACHE"])


def files_of(project: Path) -> tuple[bytes, bytes | None]:
    s = project / "wgt.sum"
    return (project / "wgt.mod").read_bytes(), s.read_bytes() if s.exists() else None


# ---- wgtpm get against a checksum database ------------------------------------------------


def test_get_checks_new_lines_and_caches_the_tree_head(
    wgtpm, project, registry, db, honest, env
) -> None:
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    sums = (project / "wgt.sum").read_text().splitlines()
    for path, (h1, mod_h1) in honest.items():
        assert f"{path} v0.1.0 {h1}" in sums
        assert f"{path} v0.1.0/wgt.mod {mod_h1}" in sums
    # each module version looked up once (its two lines share one record)
    lookups = registry.sumdb_requests("/sumdb/*/lookup/*")
    assert sorted(lookups) == [
        f"/sumdb/{NAME}/lookup/{A}@v0.1.0",
        f"/sumdb/{NAME}/lookup/{B}@v0.1.0",
    ]
    # the tree head seen is kept, and the verified answers are cached
    sdb = cache_root() / "sumdb" / NAME
    assert (sdb / "latest").read_bytes() == db.signed()
    assert (sdb / "lookup" / f"{B}@v0.1.0").is_file()
    assert list((sdb / "tile").rglob("*"))

    # Another project needs the same versions: the cached answers do, with no request.
    other = project.parent / "other"
    other.mkdir()
    (other / "wgt.mod").write_text("module example.com/other\nwgt 0.1\n")
    registry.log.clear()
    r = wgtpm("get", f"{A}@v0.1.0", cwd=other)
    assert r.code == 0, r.err
    assert registry.sumdb_requests() == []

    # Lines already in wgt.sum are not looked up again, even with the cache gone.
    registry.log.clear()
    for p in (sdb / "lookup").rglob("*"):
        if p.is_file():
            p.unlink()
    r = wgtpm("get", cwd=project)
    assert r.code == 0, r.err
    assert registry.sumdb_requests() == []


def test_without_a_database_first_use_is_trusted(wgtpm, project, registry, honest, env) -> None:
    """The contrast for the next test: with WGTSUMDB off, a tampering proxy goes unnoticed."""
    env.setenv("WGTSUMDB", "off")
    publish_tampered(Path(registry.root))
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert registry.sumdb_requests() == []


def publish_tampered(root: Path) -> tuple[str, str]:
    """Replace b v0.1.0 in the served tree by other bytes (weights and wgt.mod both changed)."""
    import shutil

    shutil.rmtree(root / B)
    return publish(ProxyTree(root), None, B, weights=b"evil" * 100, extra="// rebuilt\n")


def test_a_proxy_serving_other_bytes_than_the_log_is_a_security_error(
    wgtpm, project, registry, honest, env
) -> None:
    _, evil_mod_h1 = publish_tampered(Path(registry.root))
    before = files_of(project)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "SECURITY ERROR: checksum mismatch for wgt.mod" in r.err
    assert f"checksum database {NAME}:  {B} v0.1.0/wgt.mod {honest[B][1]}" in r.err
    assert "downloaded:" in r.err and f"{B} v0.1.0/wgt.mod {evil_mod_h1}" in r.err
    assert files_of(project) == before
    assert not (cache_root() / "download" / B / "@v" / "v0.1.0.mod").exists()


def test_a_tampered_index_alone_is_caught_too(wgtpm, project, registry, db, honest, env) -> None:
    """wgt.mod as logged, other weights: the release line is refused."""
    import shutil

    shutil.rmtree(Path(registry.root) / B)
    evil_h1, _ = publish(ProxyTree(registry.root), None, B, weights=b"evil" * 100)
    before = files_of(project)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "SECURITY ERROR: checksum mismatch for the release (its index)" in r.err
    assert f"{B} v0.1.0 {honest[B][0]}" in r.err and f"{B} v0.1.0 {evil_h1}" in r.err
    assert files_of(project) == before


def test_a_log_that_forks_between_two_gets_is_a_security_error_with_both_notes(
    wgtpm, project, registry, db, tree, honest, env
) -> None:
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    old_note = (cache_root() / "sumdb" / NAME / "latest").read_bytes()

    # The server now shows another history: one more record slipped in before the others.
    forked = TestServer(SKEY)
    forked.add_module(
        "github.com/acme/zzz", "v0.1.0", "h1:" + "Z" * 43 + "=", "h1:" + "Y" * 43 + "="
    )
    for path in (B, A):
        forked.add_module(path, "v0.1.0", *honest[path])
    publish(tree, forked, D)
    registry.db = forked
    before = files_of(project)

    r = wgtpm("get", f"{D}@v0.1.0", cwd=project)
    assert r.code == 1
    assert "SECURITY ERROR" in r.err and "misbehavior detected" in r.err
    new_note = forked.signed()
    for n in (old_note, new_note):  # both signed tree heads, signature lines included
        for line in n.decode().strip().splitlines():
            assert line.strip() in r.err
    assert files_of(project) == before
    # The remembered tree head is still the old one: the fork is caught again next time.
    assert (cache_root() / "sumdb" / NAME / "latest").read_bytes() == old_note


def test_readonly_looks_nothing_up(wgtpm, project, registry, honest, env) -> None:
    """Under -mod=readonly nothing new is recorded, so nothing is looked up."""
    (project / "wgt.mod").write_text(f"module example.com/app\nwgt 0.1\nrequire {A} v0.1.0\n")
    env.setenv("WGTFLAGS", "-mod=readonly")
    r = wgtpm("get", cwd=project)
    assert r.code == 1 and "missing wgt.sum entry for github.com/acme/a@v0.1.0" in r.err
    assert registry.sumdb_requests() == []
    assert not (project / "wgt.sum").exists()


def test_wgtnosumdb_skips_the_lookup(wgtpm, project, registry, tree, honest, env) -> None:
    publish(tree, None, D)  # not in the log: looking it up would fail
    env.setenv("WGTNOSUMDB", "example.org/x, github.com/acme/d")
    r = wgtpm("get", f"{D}@v0.1.0", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert not [p for p in registry.sumdb_requests() if "/acme/d@" in p]
    assert registry.sumdb_requests("/sumdb/*/lookup/*")  # the others were looked up


def test_a_version_the_log_does_not_know_is_refused(wgtpm, project, registry, tree, env) -> None:
    publish(tree, None, D)
    before = files_of(project)
    r = wgtpm("get", f"{D}@v0.1.0", cwd=project)
    assert r.code == 1
    assert f"{D}@v0.1.0: verifying against the checksum database {NAME}" in r.err
    assert "WGTPRIVATE or WGTNOSUMDB" in r.err
    assert files_of(project) == before


def test_a_file_tree_needs_wgtnosumdb_when_wgtsumdb_is_set(
    wgtpm, project, registry, tree, honest, env, tmp_path: Path
) -> None:
    """What docs/guides/publishing.md says of ``WGTPROXY=file://DIST`` (a ``--dry-run``
    tree) under the demo's ``WGTSUMDB``: the log has never seen the module, so the get is
    refused in one line naming WGTNOSUMDB, and ``WGTNOSUMDB=MODULE`` makes it work."""
    dist = ProxyTree(tmp_path / "dist")
    publish(dist, None, D)  # published to dist/ only: the log cannot know it
    env.setenv("WGTPROXY", f"file://{dist.root}")
    before = files_of(project)
    r = wgtpm("get", f"{D}@v0.1.0", cwd=project)
    assert r.code == 1
    lines = [ln for ln in r.err.splitlines() if ln.startswith("wgtpm:")]
    assert len(lines) == 1 and lines[0].startswith(f"wgtpm: {D}@v0.1.0: "), r.err
    assert "WGTNOSUMDB" in r.err and "Traceback" not in r.err
    assert files_of(project) == before
    asked = registry.sumdb_requests(f"/sumdb/*/lookup/{D}@*")
    assert asked  # the refusal came from the log, not from the tree
    env.setenv("WGTNOSUMDB", D)
    r = wgtpm("get", f"{D}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert f"{D} v0.1.0 h1:" in (project / "wgt.sum").read_text()
    assert registry.sumdb_requests(f"/sumdb/*/lookup/{D}@*") == asked  # not asked again


def test_wgtprivate_skips_the_lookup(
    registry, tree, honest, env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WGTPRIVATE sends a module direct, so this runs at the library level with a given source."""
    publish(tree, None, D)  # a private module: the log has never heard of it
    monkeypatch.setenv("WGTPRIVATE", "github.com/ACME/d")  # case-insensitive on GitHub
    ledger = SumLedger(SumFile(), readonly=False)
    src = ChainSource([Entry(registry.url)])
    with open_fetcher(Options(source=src), Cache(), ledger) as fetcher:
        fetcher.download(D, "v0.1.0")
        fetcher.download(B, "v0.1.0")
    assert ledger.hashes(D, "v0.1.0") and ledger.hashes(B, "v0.1.0/wgt.mod")
    assert registry.sumdb_requests("/sumdb/*/lookup/*") == [f"/sumdb/{NAME}/lookup/{B}@v0.1.0"]


def test_off_makes_no_request(wgtpm, project, registry, honest, env) -> None:
    for value in ("off", "", " off "):
        env.setenv("WGTSUMDB", value)
        p = project.parent / f"p{len(value)}"
        p.mkdir()
        (p / "wgt.mod").write_text("module example.com/p\nwgt 0.1\n")
        r = wgtpm("get", f"{A}@v0.1.0", cwd=p)
        assert r.code == 0, r.err
    env.delenv("WGTSUMDB")
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    assert registry.sumdb_requests() == []


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("sum.test", "not a verifier key"),
        (VKEY[:-4] + "AAAA", "not a verifier key"),
        (f"{VKEY} https://a.example https://b.example", "too many fields"),
        (f"{VKEY} ftp://a.example", "is not an http://, https:// or file:// URL"),
        (f"{VKEY} https://", "is not an http://, https:// or file:// URL"),
        (f"{VKEY} http://a.example:99999", "bad URL"),
    ],
)
def test_a_malformed_wgtsumdb_is_one_clear_line(
    wgtpm, project, registry, honest, env, value: str, why: str
) -> None:
    env.setenv("WGTSUMDB", value)
    before = files_of(project)
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("wgtpm: WGTSUMDB=") and why in lines[0]
    assert files_of(project) == before
    assert registry.sumdb_requests() == []


def test_the_database_through_the_proxy_that_supports_it(
    wgtpm, project, registry, db, honest, env, tmp_path: Path
) -> None:
    """No URL in WGTSUMDB: the first WGTPROXY entry serving /sumdb/NAME/supported is used.

    The first proxy answers 404 (it does not proxy the database), so the search goes on to
    the second; ``https://sum.test`` (the default) is never tried.
    """
    empty = tmp_path / "empty"
    empty.mkdir()
    with Registry(empty, TestServer(SKEY), log=registry.log) as first:
        first.name = "first"
        first.supported = False
        env.setenv("WGTPROXY", f"{first.url},{registry.url}")
        env.setenv("WGTSUMDB", VKEY)
        r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
        assert r.code == 0, r.err
    seen = [(s.server, s.path, s.status) for s in registry.log.where(path="/sumdb/*")]
    assert seen[:2] == [
        ("first", f"/sumdb/{NAME}/supported", 404),
        ("registry", f"/sumdb/{NAME}/supported", 200),
    ]
    assert {server for server, _, _ in seen[2:]} == {"registry"}
    assert f"/sumdb/{NAME}/lookup/{A}@v0.1.0" in registry.sumdb_requests()
    assert (cache_root() / "sumdb" / NAME / "latest").read_bytes() == db.signed()


def test_wgtproxy_off_asks_no_database(wgtpm, project, registry, honest, env) -> None:
    r = wgtpm("get", f"{A}@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    # A second project under WGTPROXY=off: files and lookups come from the cache.
    other = project.parent / "other"
    other.mkdir()
    (other / "wgt.mod").write_text("module example.com/other\nwgt 0.1\n")
    env.setenv("WGTPROXY", "off")
    env.setenv("WGTSUMDB", VKEY)  # no URL: the proxy list decides, and off forbids the network
    registry.log.clear()
    r = wgtpm("get", f"{A}@v0.1.0", cwd=other)
    assert r.code == 0, r.err
    assert registry.sumdb_requests() == []
    # Without the cached answers, the database is not asked either, URL or not: an error.
    for p in (cache_root() / "sumdb" / NAME / "lookup").rglob("*"):
        if p.is_file():
            p.unlink()
    third = project.parent / "third"
    third.mkdir()
    (third / "wgt.mod").write_text("module example.com/third\nwgt 0.1\n")
    for value in (VKEY, f"{VKEY} {registry.url}"):
        env.setenv("WGTSUMDB", value)
        r = wgtpm("get", f"{A}@v0.1.0", cwd=third)
        assert r.code == 1 and "WGTPROXY=off forbids the network" in r.err
        assert not (third / "wgt.sum").exists()
    assert registry.sumdb_requests() == []


# ---- the pieces ---------------------------------------------------------------------------


def test_parse_config() -> None:
    assert parse_config("") is None and parse_config("off") is None and parse_config(" ") is None
    c = parse_config(VKEY, "a.example/x", "github.com/acme")
    assert c is not None and c.name == NAME and c.url is None
    assert c.direct == f"https://{NAME}/sumdb/{NAME}"
    assert c.skips("a.example/x/y") and c.skips("github.com/Acme/m") and not c.skips("b.example/m")
    c = parse_config(f"  {VKEY}   http://127.0.0.1:8080/reg/  ")
    assert c is not None and c.url == "http://127.0.0.1:8080/reg"
    assert c.direct == f"http://127.0.0.1:8080/reg/sumdb/{NAME}"
    _, odd = note.generate_key("../evil")
    with pytest.raises(UsageError, match="is not HOST"):
        parse_config(odd)


def test_write_config_is_a_compare_and_swap(tmp_path: Path) -> None:
    ops = RemoteOps(SumdbConfig(VKEY, NAME), tmp_path, lambda: pytest.fail("no HTTP"))
    assert ops.read_config(f"{NAME}/latest") == b""
    ops.write_config(f"{NAME}/latest", b"", b"one")
    assert ops.read_config(f"{NAME}/latest") == b"one"
    with pytest.raises(SumdbConflictError):
        ops.write_config(f"{NAME}/latest", b"", b"two")
    ops.write_config(f"{NAME}/latest", b"one", b"two")
    assert (tmp_path / NAME / "latest").read_bytes() == b"two"
    assert ops.read_cache(f"{NAME}/tile/8/0/000") is None
    ops.write_cache(f"{NAME}/tile/8/0/000", b"x" * 32)
    assert ops.read_cache(f"{NAME}/tile/8/0/000") == b"x" * 32
    assert ops.read_cache("../outside") is None


def test_an_unreachable_database_is_a_verify_error(tmp_path: Path) -> None:
    from wgtpm.httpclient import HttpClient, HttpOptions
    from wgtpm.sumdb.remote import SumdbCheck

    http = HttpClient(HttpOptions(retries=0, timeout=2))
    config = SumdbConfig(VKEY, NAME, "http://127.0.0.1:9")  # nothing listens on port 9
    check = SumdbCheck(config, RemoteOps(config, tmp_path, lambda: http))
    with pytest.raises(SumdbVerifyError, match="could not be asked"):
        check(A, "v0.1.0", "h1:x")


def test_the_ledger_asks_its_verifier_about_new_lines_only() -> None:
    asked: list[tuple[str, str, str]] = []

    def verify(path: str, version: str, h1: str) -> None:
        asked.append((path, version, h1))
        if h1 == "h1:bad":
            raise SumdbVerifyError(path, version, "refused")

    ledger = SumLedger(SumFile(), readonly=False)
    ledger.verify_new_lines(verify)
    ledger.check(A, "v0.1.0", "h1:good")
    ledger.check(A, "v0.1.0", "h1:good")  # known now: not asked again
    ledger.check(A, "v0.2.0/wgt.mod", "h1:x", record=False)  # a retraction read: not recorded
    with pytest.raises(SumdbVerifyError):
        ledger.check(B, "v0.1.0", "h1:bad")
    assert asked == [(A, "v0.1.0", "h1:good"), (B, "v0.1.0", "h1:bad")]
    assert ledger.hashes(A, "v0.1.0") == ["h1:good"] and ledger.hashes(B, "v0.1.0") == []


def test_a_file_proxy_that_mirrors_the_database(tmp_path: Path, db: TestServer) -> None:
    """A ``file://`` WGTPROXY entry is searched like an HTTP one; the first without one is passed."""
    publish(ProxyTree(tmp_path / "t"), db, B)
    mirror = tmp_path / "mirror" / "sumdb" / NAME
    (mirror / "lookup" / "github.com" / "acme").mkdir(parents=True)
    (mirror / "supported").write_bytes(b"")
    (mirror / "latest").write_bytes(db.signed())
    lookup = f"/lookup/{B}@v0.1.0"
    (mirror / lookup[1:]).write_bytes(db.handle(lookup))
    (mirror / "tile" / "8" / "0" / "000.p").mkdir(parents=True)
    (mirror / "tile" / "8" / "0" / "000.p" / "1").write_bytes(db.handle("/tile/8/0/000.p/1"))
    (tmp_path / "bare").mkdir()
    proxies = f"{(tmp_path / 'bare').as_uri()},{(tmp_path / 'mirror').as_uri()},direct"
    ops = RemoteOps(
        SumdbConfig(VKEY, NAME), tmp_path / "sumdb", lambda: pytest.fail("no HTTP"), proxies
    )
    assert ops.base == (tmp_path / "mirror").as_uri() + f"/sumdb/{NAME}"
    assert ops.read_remote("/latest") == db.signed()
    with pytest.raises(NotFoundError):
        ops.read_remote("/lookup/github.com/acme/zzz@v0.1.0")
    from wgtpm.sumdb.remote import SumdbCheck

    SumdbCheck(ops.config, ops)(B, "v0.1.0/wgt.mod", publish(ProxyTree(tmp_path / "u"), None, B)[1])
    assert (tmp_path / "sumdb" / NAME / "latest").read_bytes() == db.signed()


def test_the_fetchers_name_of_the_setting_is_the_databases() -> None:
    """modload.fetch reads WGTSUMDB itself, to leave the database's client unloaded when off."""
    from wgtpm.modload import fetch
    from wgtpm.sumdb import remote

    assert fetch.SUMDB_ENV == remote.ENV
