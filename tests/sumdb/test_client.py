"""The checksum-database client end to end against an in-memory server.

The first tests are Go's client_test.go, with its keys, records and tile
height 2: the fork report must hold the very signatures and proof hash Go's
test expects. The rest use wgt.sum records and the default tile height 8.
"""

from __future__ import annotations

import pytest

from tests.sumdb.server import MemoryOps, TestServer
from wgtpm import InvalidVersionError, NotFoundError, SumdbSecurityError, SumdbVerifyError
from wgtpm.sumdb import note, tlog
from wgtpm.sumdb.client import Client
from wgtpm.sumdb.tlog import Tree

GO_NAME = "localhost.localdev/sumdb"
GO_VKEY = "localhost.localdev/sumdb+00000c67+AcTrnkbUA+TU4heY3hkjiSES/DSQniBqIeQ/YppAUtK6"
GO_SKEY = (
    "PRIVATE+KEY+localhost.localdev/sumdb+00000c67+AXu6+oaVaOYuQOFrf1V59JK1owcFlJcHwwXHDfDGxSPk"
)


class GoHarness:
    """Go's testClient: a log whose lookup answers are frozen when added, and one client."""

    def __init__(self, server: TestServer | None = None) -> None:
        self.server = server or TestServer(GO_SKEY, height=2)
        self.lookups = dict(self.server.snapshots)
        self.tamper = False
        self.ops = MemoryOps(self.remote)
        self.new_client()

    def remote(self, path: str) -> bytes:
        if path.startswith("/lookup/"):
            return self.lookups[path]
        data = self.server.handle(path)
        return bytes(b ^ 0x80 for b in data) if self.tamper else data

    def add(self, key: str, text: str) -> None:
        self.server.add("/lookup/" + key, text.encode())
        self.lookups["/lookup/" + key] = self.server.snapshots["/lookup/" + key]

    def new_client(self) -> None:
        self.client = Client(GO_VKEY, self.ops, tile_height=2)

    def latest_size(self) -> int:
        return int(self.ops.config[GO_NAME + "/latest"].split(b"\n")[1])

    def fork(self) -> GoHarness:
        h = GoHarness(self.server.fork())
        h.lookups = dict(self.lookups)
        h.ops.config = dict(self.ops.config)
        h.ops.cache = dict(self.ops.cache)
        return h


@pytest.fixture
def go() -> GoHarness:
    h = GoHarness()
    h.add(
        "rsc.io/quote@v1.5.2",
        "rsc.io/quote v1.5.2 h1:w5fcysjrx7yqtD/aO+QwRjYZOKnaM9Uh2b40tElTs3Y=\n"
        "rsc.io/quote v1.5.2/go.mod h1:LzX7hefJvL54yjefDEDHNONDjII0t9xZLPXsUe+TKr0=\n"
        "rsc.io/quote v1.5.2 h2:xyzzy\n",
    )
    h.add(
        "golang.org/x/text@v0.0.0-20170915032832-14c0d48ead0c",
        "golang.org/x/text v0.0.0-20170915032832-14c0d48ead0c h1:qgOY6WgZOaTkIIMiVjBQcw93ERBE4m30iBm00nkL0i8=\n"
        "golang.org/x/text v0.0.0-20170915032832-14c0d48ead0c/go.mod h1:NqM8EUOU14njkJ3fqMW+pc6Ldnwhi/IjpwHt7yyuwOQ=\n",
    )
    h.add(
        "rsc.io/sampler@v1.3.0",
        "rsc.io/sampler v1.3.0 h1:7uVkIFmeBqHfdjD+gZwtXXI+RODJ2Wc4O7MPEh/QiW4=\n"
        "rsc.io/sampler v1.3.0/go.mod h1:T1hPZKmBbMNahiBKFy5HrXp6adAjACjK9JXDnKaTXpA=\n",
    )
    h.ops.config[GO_NAME + "/latest"] = h.server.signed(1)
    h.add("rsc.io/!quote@v1.5.2", "rsc.io/Quote v1.5.2 h1:uppercase!=\n")
    return h


SAMPLER = "rsc.io/sampler v1.3.0 h1:7uVkIFmeBqHfdjD+gZwtXXI+RODJ2Wc4O7MPEh/QiW4="


def test_go_client_lookup(go: GoHarness) -> None:
    assert go.latest_size() == 1
    assert go.client.lookup("rsc.io/sampler", "v1.3.0") == [SAMPLER]
    assert go.latest_size() == 3

    go.ops.remote_ok = False  # everything needed is now in memory
    assert go.client.lookup("rsc.io/sampler", "v1.3.0") == [SAMPLER]
    assert go.latest_size() == 3
    go.ops.remote_ok, go.ops.tiles_ok = True, False  # the cache has the tiles needed

    assert go.client.lookup("rsc.io/quote", "v1.5.2") == [
        "rsc.io/quote v1.5.2 h1:w5fcysjrx7yqtD/aO+QwRjYZOKnaM9Uh2b40tElTs3Y=",
        "rsc.io/quote v1.5.2 h2:xyzzy",
    ]
    assert go.latest_size() == 3

    # rsc.io/Quote (escaped !quote) is the only record after rsc.io/sampler: it needs new tiles.
    go.ops.tiles_ok = True
    assert go.client.lookup("rsc.io/Quote", "v1.5.2") == ["rsc.io/Quote v1.5.2 h1:uppercase!="]
    assert go.latest_size() == 4


def test_go_client_bad_tiles(go: GoHarness) -> None:
    go.tamper = True
    with pytest.raises(SumdbVerifyError, match=r"checking tree#1: downloaded inconsistent tile"):
        go.client.lookup("rsc.io/sampler", "v1.3.0")
    go.tamper = False
    go.new_client()
    assert go.client.lookup("rsc.io/sampler", "v1.3.0") == [SAMPLER]

    go.tamper = True
    with pytest.raises(
        SumdbVerifyError, match=r"checking tree#3 against tree#4: downloaded inconsistent tile"
    ):
        go.client.lookup("rsc.io/Quote", "v1.5.2")
    go.tamper = False
    go.new_client()
    assert go.client.lookup("rsc.io/Quote", "v1.5.2") == ["rsc.io/Quote v1.5.2 h1:uppercase!="]

    # A bad starting tree hash looks like bad tiles.
    go.new_client()
    go.ops.config[GO_NAME + "/latest"] = note.sign(
        tlog.format_tree(Tree(1, bytes(32))).decode(), [go.server.signer]
    )
    with pytest.raises(SumdbVerifyError, match=r"checking tree#1: downloaded inconsistent tile"):
        go.client.lookup("rsc.io/sampler", "v1.3.0")


def test_go_client_fork(go: GoHarness) -> None:
    go2 = go.fork()
    go.add("rsc.io/pkg1@v1.5.2", "rsc.io/pkg1 v1.5.2 h1:hash!=\n")
    go.add("rsc.io/pkg1@v1.5.4", "rsc.io/pkg1 v1.5.4 h1:hash!=\n")
    assert go.client.lookup("rsc.io/pkg1", "v1.5.2") == ["rsc.io/pkg1 v1.5.2 h1:hash!="]

    go2.add("rsc.io/pkg1@v1.5.3", "rsc.io/pkg1 v1.5.3 h1:hash!=\n")
    go2.add("rsc.io/pkg1@v1.5.4", "rsc.io/pkg1 v1.5.4 h1:hash!=\n")
    assert go2.client.lookup("rsc.io/pkg1", "v1.5.4") == ["rsc.io/pkg1 v1.5.4 h1:hash!="]

    key = "/lookup/rsc.io/pkg1@v1.5.2"
    go2.lookups[key] = go.lookups[key]
    with pytest.raises(SumdbSecurityError) as e:
        go2.client.lookup("rsc.io/pkg1", "v1.5.2")
    [report] = go2.ops.security
    for want in [
        "SECURITY ERROR",
        "database server misbehavior detected!",
        "old database:\n\tgo.sum database tree\n\t5\n",
        "— localhost.localdev/sumdb AAAMZ5/2FVAd",
        "new database:\n\tgo.sum database tree\n\t6\n",
        "— localhost.localdev/sumdb AAAMZ6oRNswl",
        "proof of misbehavior:\n\tT7i+H/8ER4nXOiw4Bj0k",
    ]:
        assert want in report
    assert e.value.report == report
    assert e.value.old_note == go.lookups[key].split(b"\n\n", 1)[1]
    assert b"\n6\n" in e.value.new_note
    assert str(e.value).startswith("rsc.io/pkg1@v1.5.2: SECURITY ERROR")


# ---- wgtpm records, tile height 8 ---------------------------------------------------------

SKEY, VKEY = note.generate_key("sum.example.com")
NAME = "sum.example.com"


def _h(i: int, kind: str = "") -> str:
    return "h1:" + tlog.format_hash(tlog.record_hash(f"{kind}{i}".encode()))


def _server(n: int = 5) -> TestServer:
    server = TestServer(SKEY)
    for i in range(n):
        server.add_module(f"github.com/acme/m{i}", "v1.0.0", _h(i), _h(i, "mod"))
    return server


def test_lookup_verifies_and_remembers() -> None:
    server = _server()
    server.add_module("hf.co/Qwen/Qwen3", "v1.2.0-RC1", _h(99), _h(99, "mod"))
    ops = MemoryOps(server.handle)
    client = Client(VKEY, ops)
    assert client.lookup("github.com/acme/m3", "v1.0.0") == [f"github.com/acme/m3 v1.0.0 {_h(3)}"]
    assert client.lookup("github.com/acme/m3", "v1.0.0/wgt.mod") == [
        f"github.com/acme/m3 v1.0.0/wgt.mod {_h(3, 'mod')}"
    ]
    assert client.lookup("hf.co/Qwen/Qwen3", "v1.2.0-RC1") == [
        f"hf.co/Qwen/Qwen3 v1.2.0-RC1 {_h(99)}"
    ]
    assert "/lookup/hf.co/!qwen/!qwen3@v1.2.0-!r!c1" in ops.reads
    assert ops.config[NAME + "/latest"] == server.signed()
    assert client.latest == (server.tree(), server.signed())
    assert NAME + "/lookup/github.com/acme/m3@v1.0.0" in ops.cache
    assert NAME + "/tile/8/0/000.p/6" in ops.cache
    assert ops.security == []

    # A new process (a new client on the same config and cache) needs no server at all.
    ops.remote_ok = False
    again = Client(VKEY, ops)
    assert again.lookup("github.com/acme/m3", "v1.0.0") == [f"github.com/acme/m3 v1.0.0 {_h(3)}"]


def test_second_lookup_checks_consistency_with_the_remembered_tree() -> None:
    server = _server(3)
    ops = MemoryOps(server.handle)
    Client(VKEY, ops).lookup("github.com/acme/m1", "v1.0.0")
    assert ops.config[NAME + "/latest"] == server.signed(3)
    for i in range(3, 300):  # grow past one full tile of 256, into level 1
        server.add_module(f"github.com/acme/m{i}", "v1.0.0", _h(i), _h(i, "mod"))
    ops.reads.clear()
    client = Client(VKEY, ops)
    assert client.lookup("github.com/acme/m290", "v1.0.0") == [
        f"github.com/acme/m290 v1.0.0 {_h(290)}"
    ]
    assert ops.config[NAME + "/latest"] == server.signed(300)
    assert "/tile/8/1/000.p/1" in ops.reads and "/tile/8/0/000" in ops.reads
    assert client.lookup("github.com/acme/m7", "v1.0.0") == [f"github.com/acme/m7 v1.0.0 {_h(7)}"]


def test_forked_log_is_a_security_error_with_both_notes() -> None:
    server = _server()
    ops = MemoryOps(server.handle)
    Client(VKEY, ops).lookup("github.com/acme/m1", "v1.0.0")
    seen = server.signed()

    # The server rewrites history: record 4 now says something else.
    evil = TestServer(SKEY)
    for i in range(4):
        evil.add_module(f"github.com/acme/m{i}", "v1.0.0", _h(i), _h(i, "mod"))
    evil.add_module("github.com/acme/m4", "v1.0.0", _h(666), _h(666, "mod"))
    evil.add_module("github.com/acme/m5", "v1.0.0", _h(5), _h(5, "mod"))
    ops.remote = evil.handle
    with pytest.raises(SumdbSecurityError) as e:
        Client(VKEY, ops).lookup("github.com/acme/m5", "v1.0.0")
    assert e.value.old_note == seen
    assert e.value.new_note == evil.signed()
    [report] = ops.security
    assert report.startswith("SECURITY ERROR\n")
    assert "\t" + seen.decode().replace("\n", "\n\t") in report
    assert "\t" + evil.signed().decode().replace("\n", "\n\t") in report
    assert "github.com/acme/m5@v1.0.0: SECURITY ERROR" in str(e.value)
    assert ops.config[NAME + "/latest"] == seen  # the remembered tree is not replaced
    assert NAME + "/lookup/github.com/acme/m5@v1.0.0" not in ops.cache


def test_fork_of_an_older_tree_is_caught_too() -> None:
    server = _server(6)
    ops = MemoryOps(server.handle)
    Client(VKEY, ops).lookup("github.com/acme/m5", "v1.0.0")
    evil = server.fork()
    evil.records[2] = b"github.com/acme/m2 v1.0.0 h1:evil=\n"
    evil.hashes.clear()
    for i, text in enumerate(evil.records[:4]):
        evil.hashes.extend(tlog.stored_hashes(i, text, evil.hashes))
    evil.records = evil.records[:4]
    evil.ids = {k: v for k, v in evil.ids.items() if v < 4}
    ops.remote = evil.handle  # serves a smaller tree that disagrees with the one remembered
    with pytest.raises(SumdbSecurityError):
        Client(VKEY, ops).lookup("github.com/acme/m2", "v1.0.0")


def test_a_lying_record_fails_inclusion() -> None:
    server = _server()

    def lying(path: str) -> bytes:
        body = server.handle(path)
        if path.startswith("/lookup/"):
            body = body.replace(_h(2).encode(), _h(1234).encode())
        return body

    ops = MemoryOps(lying)
    with pytest.raises(SumdbVerifyError, match="cannot authenticate record data") as e:
        Client(VKEY, ops).lookup("github.com/acme/m2", "v1.0.0")
    assert (e.value.path, e.value.version) == ("github.com/acme/m2", "v1.0.0")
    assert not any("lookup" in k for k in ops.cache)
    assert ops.security == []


def test_a_record_id_beyond_the_tree_is_refused() -> None:
    server = _server()

    def beyond(path: str) -> bytes:
        body = server.handle(path)
        return b"7" + body[1:] if path.startswith("/lookup/") else body

    with pytest.raises(SumdbVerifyError, match="cannot validate record 7 in tree of size 5"):
        Client(VKEY, MemoryOps(beyond)).lookup("github.com/acme/m2", "v1.0.0")


def test_wrong_key() -> None:
    server = _server()
    _, other = note.generate_key(NAME)
    with pytest.raises(SumdbVerifyError, match="note has no verifiable signatures"):
        Client(other, MemoryOps(server.handle)).lookup("github.com/acme/m2", "v1.0.0")
    with pytest.raises(note.InvalidKeyError):
        Client(VKEY[:-2], MemoryOps(server.handle))


def test_forged_signature() -> None:
    server = _server()

    def forged(path: str) -> bytes:
        body = server.handle(path)
        if path.startswith("/lookup/"):
            body = body.replace(b"\n5\n", b"\n6\n")  # a bigger tree, same signature
        return body

    with pytest.raises(SumdbVerifyError, match="invalid signature for key"):
        Client(VKEY, MemoryOps(forged)).lookup("github.com/acme/m2", "v1.0.0")


def test_tampered_tile() -> None:
    server = _server()

    def tampered(path: str) -> bytes:
        body = server.handle(path)
        if path.startswith("/tile/"):
            body = body[:40] + bytes([body[40] ^ 1]) + body[41:]
        return body

    ops = MemoryOps(tampered)
    with pytest.raises(SumdbVerifyError, match="downloaded inconsistent tile"):
        Client(VKEY, ops).lookup("github.com/acme/m2", "v1.0.0")
    assert ops.cache == {}  # nothing unverified is kept
    assert ops.config == {}


def test_write_config_conflict_is_merged() -> None:
    server = _server(3)
    ops = MemoryOps(server.handle)
    for i in range(3, 8):
        server.add_module(f"github.com/acme/m{i}", "v1.0.0", _h(i), _h(i, "mod"))
    newer = server.signed()

    def other_process(file: str) -> None:
        ops.config[file] = newer  # another process remembered a newer tree meanwhile

    ops.before_write = other_process
    stale = dict(server.snapshots)  # lookups answered with the tree of their time
    ops.remote = lambda p: stale[p] if p.startswith("/lookup/") else server.handle(p)
    client = Client(VKEY, ops)
    assert client.lookup("github.com/acme/m4", "v1.0.0") == [f"github.com/acme/m4 v1.0.0 {_h(4)}"]
    assert ops.config[NAME + "/latest"] == newer
    assert client.latest == (server.tree(), newer)
    assert any("changed while being written" in m for m in ops.logs)


def test_write_config_conflict_with_a_fork_is_a_security_error() -> None:
    server = _server(3)
    ops = MemoryOps(server.handle)
    evil = server.fork()
    evil.add_module("github.com/acme/evil", "v1.0.0", _h(1), _h(2))
    server.add_module("github.com/acme/m3", "v1.0.0", _h(3), _h(3, "mod"))

    def other_process(file: str) -> None:
        ops.config[file] = evil.signed()

    ops.before_write = other_process
    with pytest.raises(SumdbSecurityError):
        Client(VKEY, ops).lookup("github.com/acme/m3", "v1.0.0")


def test_no_line_for_the_version() -> None:
    server = _server()
    server.add("/lookup/github.com/acme/x@v1.0.0", b"github.com/acme/y v1.0.0 h1:x=\n")
    with pytest.raises(SumdbVerifyError, match="has no line for it"):
        Client(VKEY, MemoryOps(server.handle)).lookup("github.com/acme/x", "v1.0.0")


def test_malformed_answers() -> None:
    for body in (b"", b"garbage", b"1\nrecord\n\nnot a note\n"):

        def answer(path: str, body: bytes = body) -> bytes:
            return body

        with pytest.raises(SumdbVerifyError):
            Client(VKEY, MemoryOps(answer)).lookup("github.com/acme/m1", "v1.0.0")
    with pytest.raises(InvalidVersionError):
        Client(VKEY, MemoryOps(_server().handle)).lookup("github.com/acme/m1", "1.0")


def test_the_test_server_answers_gos_paths() -> None:
    server = _server(300)
    assert server.handle("/latest") == server.signed()
    data = server.handle("/tile/8/data/001.p/44")
    for i in range(256, 300):
        rec_id, text, data = tlog.parse_record(data)
        assert rec_id == i and text.startswith(f"github.com/acme/m{i} v1.0.0 ".encode())
    assert data == b""
    assert len(server.handle("/tile/8/0/000")) == 256 * 32
    assert len(server.handle("/tile/8/1/000.p/1")) == 32
    for missing in ("/tile/8/0/001", "/tile/8/data/001.p/45", "/tile/4/0/000", "/nope"):
        with pytest.raises(NotFoundError):
            server.handle(missing)
