"""Go's own checksum database client (golang.org/x/mod/sumdb) against the registry's log.

The Go program in ``gosumdb/`` implements ``sumdb.ClientOps`` over HTTP and
runs ``Client.Lookup``; it is built offline in GOPATH mode against Debian's
``golang-golang-x-mod-dev`` sources (``/usr/share/gocode``), once per test
session. Without ``go`` or those sources the tests skip, unless
``WGTPM_REQUIRE_GO=1`` (as in ``.ci/run``): then they fail.

What Go checks: the signed tree head (note format, Ed25519, the key name),
the record's inclusion in the tree (tiles, RFC 6962 hashing), and that every
tree it is shown is consistent with the last one it saw. ``Lookup(M, V)``
returns the ``M V h1:`` line only: Go knows ``V/go.mod``, not ``V/wgt.mod``,
so the ``/wgt.mod`` line is verified as part of the record but never
returned by ``Lookup`` (the program reads it back from the verified cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from registry.service import Registry

from .conftest import _serve
from .helpers import h1, modtext, publish
from .test_sumlog import new_version

HERE = Path(__file__).resolve().parent
GOPATH_SHARED = Path("/usr/share/gocode")
XMOD = GOPATH_SHARED / "src/golang.org/x/mod/sumdb"
NAME = "sum.test"


def _unavailable(why: str) -> None:
    if os.environ.get("WGTPM_REQUIRE_GO") == "1":
        pytest.fail(f"WGTPM_REQUIRE_GO=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def gosumdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go program, built once per session with nothing fetched from the network."""
    go = shutil.which("go")
    if go is None:
        _unavailable("Go is not installed (apt-get install golang-go)")
    if not (XMOD / "client.go").is_file():
        _unavailable(f"golang.org/x/mod is not in {XMOD} (apt-get install golang-golang-x-mod-dev)")
    assert go is not None
    tmp = tmp_path_factory.mktemp("gosumdb")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "GO111MODULE": "off",  # GOPATH mode: imports come from the Debian sources
        "GOPATH": f"{tmp / 'gopath'}{os.pathsep}{GOPATH_SHARED}",
        "GOCACHE": str(tmp / "cache"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }
    exe = tmp / "gosumdb"
    r = subprocess.run(
        [go, "build", "-o", str(exe), "."],
        cwd=HERE / "gosumdb",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"go build failed:\n{r.stderr}"
    return exe


@dataclass
class GoLookup:
    code: int
    lines: list[str]  # what Client.Lookup returned
    record: list[str]  # the verified record, every line
    err: str


def go_lookup(exe: Path, url: str, vkey: str, config: Path, cache: Path, mv: str) -> GoLookup:
    module, version = mv.split("@")
    flags = ["-url", f"{url}/sumdb/{NAME}", "-key", vkey, "-config", str(config)]
    r = subprocess.run(
        [str(exe), *flags, "-cache", str(cache), module, version],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = r.stdout.splitlines()
    return GoLookup(
        r.returncode,
        [line.removeprefix("line ") for line in out if line.startswith("line ")],
        [line.removeprefix("record ") for line in out if line.startswith("record ")],
        r.stderr,
    )


@contextmanager
def registry(tmp: Path, skey: str) -> Iterator[tuple[str, str, Registry]]:
    """A registry on SQLite and a folder in ``tmp`` whose log is signed by ``skey``;
    yields its URL, a publish token for ``example.com`` and the registry."""
    from registry.app import create_app
    from registry.metadata import open_metadata_store
    from registry.stores import open_blob_store
    from registry.sumdb import SumDB

    tmp.mkdir(parents=True, exist_ok=True)
    meta = open_metadata_store(f"sqlite:///{tmp / 'r.db'}")
    reg = Registry(
        meta,
        open_blob_store(str(tmp / "blobs"), spool=tmp / "spool"),
        sumdb=SumDB.open(meta.engine, skey, ttl=0),
    )
    token, _ = reg.create_token("example.com", "publish")
    try:
        for url in _serve(create_app(registry=reg)):
            yield url, token, reg
    finally:
        reg.close()


def _publish(url: str, token: str, module: str, version: str, files: dict[str, bytes]) -> None:
    with httpx.Client(base_url=url) as http:
        r = publish(http, token, module, version, files)
        assert r.status_code == 201, r.text


@pytest.fixture
def key(wgtpm, tmp_path: Path) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The signer key of a registry data folder and the verifier key ``wgtpm registry
    key`` prints for it."""
    from registry.sumkey import signer_key

    data = tmp_path / "data"
    r = wgtpm("registry", "key", "--data", str(data), "--sumdb-name", NAME)
    assert r.code == 0, r.err
    return signer_key(data, NAME), r.out.strip().splitlines()[-1]


M = "example.com/acme/Model"  # a capital: Go escapes it as !model in the lookup URL
OTHER = "example.com/acme/other"
FILES = {"wgt.mod": modtext(M), "weights.bin": b"\x00\x01" * 100, "data/vocab.json": b"{}"}


def test_go_verifies_a_published_version(gosumdb: Path, key: tuple[str, str], tmp_path: Path):
    skey, vkey = key
    with registry(tmp_path / "a", skey) as (url, token, _):
        _publish(url, token, OTHER, "v1.0.0", {"wgt.mod": modtext(OTHER)})
        _publish(url, token, M, "v0.1.0", FILES)
        got = go_lookup(gosumdb, url, vkey, tmp_path / "cfg", tmp_path / "cache", f"{M}@v0.1.0")
        assert got.code == 0, got.err
        assert got.lines == [f"{M} v0.1.0 {h1(FILES)}"]  # the h1 line of wgt.sum, exactly
        mod_line = f"{M} v0.1.0/wgt.mod {h1({'wgt.mod': FILES['wgt.mod']})}"
        assert got.record == [f"{M} v0.1.0 {h1(FILES)}", mod_line]
        # Go's Lookup knows V/go.mod only: for /wgt.mod it has no syntax ...
        wm = go_lookup(gosumdb, url, vkey, tmp_path / "cfg", tmp_path / "c2", f"{M}@v0.1.0/wgt.mod")
        assert wm.code == 1 and "disallowed version string" in wm.err, wm.err
        # ... and V/go.mod finds the record (verified) but no go.mod line in it.
        gm = go_lookup(gosumdb, url, vkey, tmp_path / "cfg", tmp_path / "c3", f"{M}@v0.1.0/go.mod")
        assert gm.code == 0 and gm.lines == [] and gm.record[1] == mod_line, gm.err
        # A version that is not logged is the server's 404, passed on.
        none = go_lookup(gosumdb, url, vkey, tmp_path / "cfg", tmp_path / "c4", f"{M}@v9.9.9")
        assert none.code == 1 and "404" in none.err and "not in this checksum database" in none.err


def test_go_refuses_a_forked_log(gosumdb: Path, key: tuple[str, str], tmp_path: Path) -> None:
    skey, vkey = key
    # What cmd/go keeps between runs: the latest tree seen, and verified records and tiles.
    cfg, cache = tmp_path / "cfg", tmp_path / "cache"
    with registry(tmp_path / "a", skey) as (url, token, _):
        _publish(url, token, M, "v0.1.0", FILES)
        first = go_lookup(gosumdb, url, vkey, cfg, cache, f"{M}@v0.1.0")
        assert first.code == 0 and first.lines == [f"{M} v0.1.0 {h1(FILES)}"], first.err
    # The same key signs another history: other bytes for the same version, then more.
    forged = {**FILES, "weights.bin": b"\xff" * 200}
    with registry(tmp_path / "b", skey) as (url, token, _):
        _publish(url, token, M, "v0.1.0", forged)
        _publish(url, token, OTHER, "v1.0.0", {"wgt.mod": modtext(OTHER)})
        # A client that never saw the first log takes this one: trust on first use.
        fresh = go_lookup(gosumdb, url, vkey, tmp_path / "cfg2", tmp_path / "c2", f"{M}@v0.1.0")
        assert fresh.code == 0 and fresh.lines == [f"{M} v0.1.0 {h1(forged)}"], fresh.err
        # One that saw it reports the fork when the new tree is shown to contain another
        # tree of the old size: Go's SECURITY ERROR, with both signed heads as proof.
        got = go_lookup(gosumdb, url, vkey, cfg, cache, f"{OTHER}@v1.0.0")
        assert got.code == 1 and got.lines == [], got.err
        assert "SECURITY ERROR\ngo.sum database server misbehavior detected!" in got.err
        assert "old database:" in got.err and "new database:" in got.err
        assert "security error: misbehaving server" in got.err
        # Without its cached tiles, it cannot even rebuild the tree it remembers from
        # the new server's tiles, and stops at start-up.
        bare = go_lookup(gosumdb, url, vkey, cfg, tmp_path / "cache-b", f"{M}@v0.1.0")
        assert bare.code == 1 and bare.lines == [], bare.err
        assert "checking tree#1: downloaded inconsistent tile" in bare.err
        # The forged hash never reaches either of them.
        assert h1(forged) not in got.err + bare.err


def test_go_refuses_a_head_signed_by_another_key(
    gosumdb: Path, key: tuple[str, str], tmp_path: Path
) -> None:
    from wgtpm.sumdb import note

    _, vkey = key
    other, _ = note.generate_key(NAME)  # same name, another key
    with registry(tmp_path / "a", other) as (url, token, _):
        _publish(url, token, M, "v0.1.0", FILES)
        got = go_lookup(gosumdb, url, vkey, tmp_path / "cfg", tmp_path / "cache", f"{M}@v0.1.0")
    assert got.code == 1 and got.lines == []
    assert "reading tree note: note has no verifiable signatures" in got.err, got.err


def test_go_follows_the_log_past_one_tile(
    gosumdb: Path, key: tuple[str, str], tmp_path: Path
) -> None:
    skey, vkey = key
    cfg, cache = tmp_path / "cfg", tmp_path / "cache"
    with registry(tmp_path / "a", skey) as (url, _, reg):
        reg.meta.commit_version(new_version(OTHER, "v0.0.1"))
        first = go_lookup(gosumdb, url, vkey, cfg, cache, f"{OTHER}@v0.0.1")
        assert first.lines == [f"{OTHER} v0.0.1 h1:Av0.0.1="], first.err
        for i in range(300):  # tree#1 -> tree#301: a full tile, and hashes of level 8
            reg.meta.commit_version(new_version(M, f"v0.{i}.0"))
        # the same client proves tree#301 extends the tree#1 it saw, through tiles
        later = go_lookup(gosumdb, url, vkey, cfg, cache, f"{M}@v0.299.0")
        assert later.code == 0 and later.lines == [f"{M} v0.299.0 h1:Av0.299.0="], later.err
        fresh = go_lookup(gosumdb, url, vkey, tmp_path / "c2", tmp_path / "k2", f"{M}@v0.7.0")
        assert fresh.lines == [f"{M} v0.7.0 h1:Av0.7.0="], fresh.err
    assert b"\n301\n" in (cfg / NAME / "latest").read_bytes()  # Go's own record of the head


def test_go_verifies_a_log_that_holds_tensor_tables_records(
    gosumdb: Path, key: tuple[str, str], tmp_path: Path
) -> None:
    """A version's second record (the tensor tables the registry computed, ``M
    V/wgt.tensors.json h1:``, registry/tensortables.py) is a leaf like any other: Go
    verifies lookups before and after it, and a tree that grew past it."""
    from registry.sumlog import tables_record_text

    skey, vkey = key
    cfg, cache = tmp_path / "cfg", tmp_path / "cache"
    with registry(tmp_path / "a", skey) as (url, token, reg):
        _publish(url, token, M, "v0.1.0", FILES)
        first = go_lookup(gosumdb, url, vkey, cfg, cache, f"{M}@v0.1.0")
        assert first.code == 0 and first.lines == [f"{M} v0.1.0 {h1(FILES)}"], first.err
        tables = h1({"wgt.tensors.json": b'{"files":{}}\n'})
        reg.meta.add_tensor_tables(M, "v0.1.0", "0" * 64, tables_record_text(M, "v0.1.0", tables))
        _publish(url, token, OTHER, "v1.0.0", {"wgt.mod": modtext(OTHER)})
        later = go_lookup(gosumdb, url, vkey, cfg, cache, f"{OTHER}@v1.0.0")
        assert later.code == 0 and later.lines == [
            f"{OTHER} v1.0.0 {h1({'wgt.mod': modtext(OTHER)})}"
        ], later.err
        again = go_lookup(gosumdb, url, vkey, cfg, tmp_path / "c2", f"{M}@v0.1.0")
        assert again.code == 0 and again.lines == first.lines, again.err
        # the tables record itself, read as Go's tile data holds it
        data = httpx.get(f"{url}/sumdb/{NAME}/tile/8/data/000.p/3").text
        assert f"{M} v0.1.0/wgt.tensors.json {tables}\n" in data
